//! kswapd (kernel-algorithms.md §3.4): woken by the allocator below the low watermark, it runs
//! `balance_pgdat`'s priority loop until the node is above the high watermark, then naps
//! HZ/10 and sleeps until woken. It is a kernel thread: one step is one `shrink_node` pass
//! at the current priority, so other tasks run between passes.

use super::{ScanControl, DEF_PRIORITY, MAX_RECLAIM_RETRIES, SWAP_CLUSTER_MAX};
use crate::engine::{KernelThread, KthreadStep, Sim, TState};

/// kswapd's progress through one `balance_pgdat` run, and its sleep.
#[derive(Clone, Debug, Default)]
pub struct KswapdState {
    /// Inside balance_pgdat (false: asleep or napping).
    pub active: bool,
    pub priority: i32,
    /// Pages reclaimed in this balance_pgdat run.
    pub reclaimed: u64,
    /// When the HZ/10 nap of `kswapd_try_to_sleep` ends (a wake-up before it counts
    /// `kswapd_low_wmark_hit_quickly`).
    pub nap_until: Option<u64>,
    /// Sleeping in reclaim_throttle(WRITEBACK).
    pub throttled: bool,
}

/// The kswapd kernel thread of the one node.
pub struct Kswapd;

impl KernelThread for Kswapd {
    fn name(&self) -> &'static str {
        "kswapd0"
    }

    /// One iteration of `balance_pgdat`'s priority loop.
    fn step(&mut self, sim: &mut Sim, tid: u32) -> KthreadStep {
        let ks = &mut sim.reclaim.kswapd;
        if !ks.active {
            sim.stats.vm.pageoutrun += 1;
            ks.active = true;
            ks.priority = DEF_PRIORITY;
            ks.reclaimed = 0;
        }
        if sim.pgdat_balanced() || sim.reclaim.kswapd_failures >= MAX_RECLAIM_RETRIES {
            // prepare_kswapd_sleep: nap HZ/10, then sleep until woken.
            sim.reclaim_cycle_end();
            let at = sim.tasks[tid as usize].clock;
            let nap = sim.hz_div_10_ns();
            let ks = &mut sim.reclaim.kswapd;
            ks.active = false;
            ks.nap_until = Some(at + nap);
            return KthreadStep::Sleep;
        }
        let cpu = match sim.tasks[tid as usize].state {
            TState::Running(c) => c as usize,
            _ => unreachable!("kswapd steps only on a CPU"),
        };
        let mut sc = ScanControl::new(sim.mem.wm.high.max(SWAP_CLUSTER_MAX), true, false, cpu);
        sc.priority = sim.reclaim.kswapd.priority;
        sc.start_clock = sim.tasks[tid as usize].clock;
        sim.kswapd_age(&mut sc);
        // lru_gen_age_node's out_of_memory(): a kill frees memory and the next step rechecks;
        // with no task to kill, kswapd reclaims as usual.
        if sc.oom && sim.oom_kill().is_some() {
            sim.stats.kswapd_cpu.add(&sc.cost);
            sim.tasks[tid as usize].clock += sc.cost.total().max(1);
            return KthreadStep::Continue;
        }
        sim.shrink_node(&mut sc);
        let got = sc.nr_reclaimed;
        let ks = &mut sim.reclaim.kswapd;
        ks.reclaimed += got;
        let scanned_enough = sc.nr_scanned.max(sc.nr_reclaimed) >= sc.nr_to_reclaim;
        if (!scanned_enough || got == 0) && !sc.writeback_stall {
            ks.priority -= 1;
        }
        // A step always takes some time, so that kswapd cannot loop at one instant.
        sim.stats.kswapd_cpu.add(&sc.cost);
        sim.tasks[tid as usize].clock += sc.cost.total().max(1);
        if ks.priority < 1 {
            // End of one balance_pgdat run.
            if ks.reclaimed == 0 {
                sim.reclaim.kswapd_failures += 1;
            }
            sim.reclaim.kswapd.active = false;
        }
        if (sc.writeback_stall || got == 0) && (sc.nr_immediate > 0 || sc.nr_congested > 0 || sim.io.nr_writeback > 0) && !sim.pgdat_balanced() {
            // reclaim_throttle(WRITEBACK): wait for writeback completions (HZ/10 at most).
            sim.note_writeback_throttle();
            sim.reclaim.kswapd.throttled = true;
            let timeout = sim.hz_div_10_ns();
            return KthreadStep::SleepUntil(sim.tasks[tid as usize].clock + timeout);
        }
        KthreadStep::Continue
    }

    /// The writeback throttle's timeout: run again.
    fn timer(&mut self, sim: &mut Sim, _tid: u32) -> bool {
        std::mem::take(&mut sim.reclaim.kswapd.throttled)
    }
}

impl Sim {
    /// `wakeup_kswapd` (§3.4), from the allocator's slow path.
    pub(crate) fn wakeup_kswapd(&mut self) {
        let k = self.kswapd;
        if self.reclaim.kswapd_failures >= MAX_RECLAIM_RETRIES || self.pgdat_balanced() {
            return;
        }
        if self.tasks[k as usize].state != TState::Sleeping {
            return;
        }
        if let Some(until) = self.reclaim.kswapd.nap_until.take() {
            if self.now < until {
                self.stats.vm.kswapd_low_wmark_hit_quickly += 1;
            }
        }
        self.reclaim.kswapd.throttled = false;
        let now = self.now;
        self.wake(k, now);
    }

    /// A write completed: a kswapd throttled on writeback runs again.
    pub(crate) fn kswapd_writeback_progress(&mut self) {
        if std::mem::take(&mut self.reclaim.kswapd.throttled) {
            let k = self.kswapd;
            let now = self.now;
            self.wake(k, now);
        }
    }

    /// kswapd's per-node aging before a pass (the policy's `kswapd_age_node`).
    fn kswapd_age(&mut self, sc: &mut ScanControl) {
        self.with_policy(|p, sim| p.kswapd_age(sim, sc));
    }
}
