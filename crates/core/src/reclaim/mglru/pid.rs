//! The refault feedback loop (kernel-algorithms.md §5.7; `read_ctrl_pos`, `reset_ctrl_pos`,
//! `positive_ctrl_err` in mm/vmscan.c): per type and tier, pages evicted, protected and
//! refaulted in the current generation (`NR_HIST_GENS` = 1, no `CONFIG_LRU_GEN_STATS`) plus
//! the running averages carried over each time `min_seq` advances. The P term is the current
//! refault rate, the I term the average with factor 1/2; there is no D term.

use super::Era;

pub const MAX_NR_TIERS: usize = 4;
/// `MIN_LRU_BATCH` (`BITS_PER_LONG`): fewer refaults than this are no evidence.
pub const MIN_LRU_BATCH: u64 = 64;

/// One side of a comparison: refaults, the pages they are a rate of, and the gain.
#[derive(Clone, Copy, Debug)]
pub struct CtrlPos {
    pub refaulted: u64,
    pub total: u64,
    pub gain: u64,
}

/// `positive_ctrl_err`: is `pv`'s refault rate (per unit gain) not worse than `sp`'s?
pub fn positive_ctrl_err(sp: CtrlPos, pv: CtrlPos) -> bool {
    pv.refaulted < MIN_LRU_BATCH
        || pv.refaulted as u128 * (sp.total + MIN_LRU_BATCH) as u128 * sp.gain as u128 <= (sp.refaulted + 1) as u128 * pv.total as u128 * pv.gain as u128
}

/// The controller's statistics of the one lruvec, `[type][tier]`.
#[derive(Clone, Debug, Default)]
pub struct Pid {
    pub avg_refaulted: [[u64; MAX_NR_TIERS]; 2],
    pub avg_total: [[u64; MAX_NR_TIERS]; 2],
    pub refaulted: [[u64; MAX_NR_TIERS]; 2],
    pub evicted: [[u64; MAX_NR_TIERS]; 2],
    /// Indexed by the slot each era records protection in: 6.1-6.13 `protected[tier - 1]`
    /// (tier 0 is never protected), 6.14+ `protected[tier]`.
    pub protected: [[u64; MAX_NR_TIERS]; 2],
}

impl Pid {
    /// The protected pages that count towards `tier`'s total.
    fn protected_of(&self, era: Era, ty: usize, tier: usize) -> u64 {
        match era {
            Era::V6_1 => {
                if tier > 0 {
                    self.protected[ty][tier - 1]
                } else {
                    0
                }
            }
            Era::V6_14 => self.protected[ty][tier],
        }
    }

    /// `read_ctrl_pos` for one tier, or for all tiers (`tier == None`, 6.14+ type selection).
    pub fn ctrl_pos(&self, era: Era, ty: usize, tier: Option<usize>, gain: u64) -> CtrlPos {
        let tiers = match tier {
            Some(t) => t..t + 1,
            None => 0..MAX_NR_TIERS,
        };
        let mut pos = CtrlPos { refaulted: 0, total: 0, gain };
        for t in tiers {
            pos.refaulted += self.avg_refaulted[ty][t] + self.refaulted[ty][t];
            pos.total += self.avg_total[ty][t] + self.evicted[ty][t] + self.protected_of(era, ty, t);
        }
        pos
    }

    /// `reset_ctrl_pos(type, carryover = true)` when `min_seq[type]` advances: halve into the
    /// averages, then clear the current generation's counts (`NR_HIST_GENS` == 1).
    pub fn carry_over(&mut self, era: Era, ty: usize) {
        for t in 0..MAX_NR_TIERS {
            self.avg_refaulted[ty][t] = (self.avg_refaulted[ty][t] + self.refaulted[ty][t]) / 2;
            self.avg_total[ty][t] = (self.avg_total[ty][t] + self.evicted[ty][t] + self.protected_of(era, ty, t)) / 2;
        }
        self.refaulted[ty] = [0; MAX_NR_TIERS];
        self.evicted[ty] = [0; MAX_NR_TIERS];
        self.protected[ty] = [0; MAX_NR_TIERS];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn few_refaults_are_no_evidence_and_rates_compare_with_gains() {
        let sp = CtrlPos { refaulted: 10, total: 1000, gain: 1 };
        assert!(positive_ctrl_err(sp, CtrlPos { refaulted: 63, total: 64, gain: 1 }));
        // pv refaults 50% against sp's 1%: worse.
        assert!(!positive_ctrl_err(sp, CtrlPos { refaulted: 500, total: 1000, gain: 1 }));
        // A lower rate is not worse; the same rate is, by the margin on sp.total.
        assert!(positive_ctrl_err(CtrlPos { refaulted: 100, total: 1000, gain: 1 }, CtrlPos { refaulted: 90, total: 1000, gain: 1 }));
    }

    #[test]
    fn carry_over_halves_into_the_averages() {
        let mut p = Pid::default();
        p.refaulted[1][2] = 100;
        p.evicted[1][2] = 300;
        p.protected[1][1] = 100;
        p.carry_over(Era::V6_1, 1);
        assert_eq!(p.avg_refaulted[1][2], 50);
        assert_eq!(p.avg_total[1][2], 200);
        assert_eq!(p.refaulted[1][2], 0);
    }
}
