//! Steal time: a Xen PV guest's vCPU is not always on its physical CPU.
//!
//! The guest's vCPUs are scheduled by Xen's credit scheduler on a machine it shares with
//! dom0 (and Xen's own per-CPU work: its timer softirqs, the credit scheduler's 10 ms tick
//! and 30 ms accounting). Whenever dom0 wakes on the guest's physical CPU with BOOST
//! priority (`csched_vcpu_wake`: a vCPU waking from a block is boosted and preempts an UNDER
//! one), the guest's vCPU waits until dom0 blocks again; the guest sees wall time pass with
//! none of it running (Xen's runstate `runnable`, which the guest accounts as steal,
//! `xen_steal_clock`). What the guest was doing just takes longer: a reclaim pass, a page
//! fault, the program's loop. A timer of the guest that comes due meanwhile is taken when
//! the vCPU runs again (the tick interrupt is a virtual IRQ delivered to a running vCPU),
//! and `jiffies` jumps over the ticks it missed (2.6.32 `xen_timer_interrupt` → the clock
//! event reads Xen's system time, not a count of interrupts), so the tick grid itself does
//! not move (`tick.rs`).
//!
//! The model: per vCPU, an alternating sequence of running stretches and stolen stretches,
//! both exponential (dom0's wake-ups arrive independently of the guest's work: a Poisson
//! process, `machine.xen_dom0_interval` apart on average; its work per wake-up memoryless,
//! `machine.xen_dom0_burst` on average), drawn from the run's seed (its own stream per
//! vCPU, so the same seed is the same run). A stolen stretch lasts at most one credit
//! scheduler tick (`CSCHED_TICK_NS`): at the tick dom0 loses its BOOST (`csched_vcpu_acct`
//! demotes it), and the guest's vCPU, UNDER with its credit, runs again. Longer dom0 work
//! (sharing the CPU by 30 ms time slices) would need dom0 to be busy, which the postings
//! this models rule out ("no other activity is running on the physical machine").
//!
//! Applied where a vCPU's time is spent (engine/sched.rs): when a task is about to run or
//! gives its CPU up, every stolen stretch that began since the CPU's time was last settled
//! is added to the task's clock (a task's kernel work runs atomically ahead of the event
//! loop, so a stretch that fell inside it is charged when it ends), and a task due to run
//! inside a stolen stretch runs at its end. The stolen time is not the task's CPU time
//! (2.6.32's `xen_sched_clock` counts the vCPU's running time only, so CFS does not charge
//! it) and not iowait (the vCPU was runnable). A vCPU that is idle loses nothing to dom0
//! (there is nothing to delay), except that a wake-up inside a stolen stretch waits for its
//! end.
//!
//! Why it matters: seed 002's runs were otherwise decided once, by the tick's phase, and took
//! one of two paths each (docs/evidence/frontswap2010.md, session 37); the host's small,
//! irregular interruptions shift every later decision a little, as on the real machine.

use crate::rng::Rng;

/// The random streams of the stolen stretches (`Rng::for_stream(seed, STEAL_STREAM + cpu)`).
pub const STEAL_STREAM: u64 = 0x7374_6561_6c00_0000;

/// Xen's credit scheduler tick (`CSCHED_MSECS_PER_TICK` 10, xen/common/sched_credit.c,
/// Xen 3.x–4.x): the longest a boosted dom0 keeps the guest's physical CPU.
pub const CSCHED_TICK_NS: u64 = 10_000_000;

/// The stolen stretches of every vCPU, generated as far as asked, and what has been charged.
pub(crate) struct Steal {
    mean_gap_ns: f64,
    mean_burst_ns: f64,
    rng: Vec<Rng>,
    /// Per vCPU: the stolen stretches `[start, end)`, in order, generated up to a start past
    /// the latest time asked about.
    stretches: Vec<Vec<(u64, u64)>>,
    /// Per vCPU: stolen time before this has been charged (or fell while the vCPU was idle).
    settled: Vec<u64>,
    /// Stolen time charged to the guest's tasks, and in how many stretches.
    pub total_ns: u64,
    pub hits: u64,
}

impl Steal {
    /// The steal of a run of `cpus` vCPUs, or None when either mean is zero (no steal).
    pub fn new(seed: u64, cpus: usize, mean_gap_ns: u64, mean_burst_ns: u64) -> Option<Steal> {
        if mean_gap_ns == 0 || mean_burst_ns == 0 {
            return None;
        }
        let rng = (0..cpus).map(|c| Rng::for_stream(seed, STEAL_STREAM + c as u64)).collect();
        Some(Steal { mean_gap_ns: mean_gap_ns as f64, mean_burst_ns: mean_burst_ns as f64, rng, stretches: vec![Vec::new(); cpus], settled: vec![0; cpus], total_ns: 0, hits: 0 })
    }

    /// An exponential variate of mean `mean` (inverse transform; `unit` < 1, so finite).
    fn exp(rng: &mut Rng, mean: f64) -> u64 {
        (-(1.0 - rng.unit()).ln() * mean) as u64
    }

    /// Generate `cpu`'s stretches until one starts after `t`.
    fn extend_past(&mut self, cpu: usize, t: u64) {
        let list = &mut self.stretches[cpu];
        while list.last().is_none_or(|&(s, _)| s <= t) {
            let from = list.last().map_or(0, |&(_, e)| e);
            let rng = &mut self.rng[cpu];
            let start = from + Self::exp(rng, self.mean_gap_ns).max(1);
            let len = Self::exp(rng, self.mean_burst_ns).clamp(1, CSCHED_TICK_NS);
            list.push((start, start + len));
        }
    }

    /// The CPU was idle until `at`: the stretches before it delayed nothing.
    pub fn settle_idle(&mut self, cpu: usize, at: u64) {
        self.settled[cpu] = self.settled[cpu].max(at);
    }

    /// Work on `cpu` that ran, as the guest counts its time, up to `to` since the vCPU's time
    /// was last settled: when it really ends, every stolen stretch that began in it (or was
    /// going on at its start) added. A zero-length span inside a stretch ends at the
    /// stretch's end (a task due to run there waits for the vCPU).
    pub fn charge(&mut self, cpu: usize, to: u64) -> u64 {
        let from = self.settled[cpu].min(to);
        let mut end = to;
        // Generated past `to` before the search, so the first stretch not over by `from` is
        // in the list.
        self.extend_past(cpu, to);
        let mut i = self.stretches[cpu].partition_point(|&(_, e)| e <= from);
        loop {
            self.extend_past(cpu, end);
            let (s, e) = self.stretches[cpu][i];
            if s > end || (s == end && end > from) {
                break;
            }
            let stolen = e - s.max(from);
            end += stolen;
            self.total_ns += stolen;
            self.hits += 1;
            i += 1;
        }
        self.settled[cpu] = end;
        end
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(stretches: Vec<(u64, u64)>) -> Steal {
        let mut s = Steal::new(1, 1, 1_000_000, 1_000).expect("on");
        // A far stretch ends the list so nothing is generated before it.
        let mut list = stretches;
        list.push((u64::MAX / 2, u64::MAX / 2 + 1));
        s.stretches[0] = list;
        s
    }

    /// Work that a stolen stretch interrupts ends that much later; a stretch after it, or
    /// one that fell while the vCPU was idle, costs nothing.
    #[test]
    fn a_stolen_stretch_delays_the_work_it_interrupts_and_nothing_else() {
        let mut s = with(vec![(100, 150), (1_000, 1_010), (2_000, 2_500)]);
        s.settle_idle(0, 50);
        assert_eq!(s.charge(0, 120), 170, "50 ns stolen inside [50, 120)");
        assert_eq!(s.charge(0, 990), 990, "nothing stolen in [170, 990)");
        s.settle_idle(0, 1_900);
        assert_eq!(s.charge(0, 1_950), 1_950, "the stretch at 1,000 fell while the vCPU was idle");
        assert_eq!(s.charge(0, 2_000), 2_000, "work ending as a stretch begins is not delayed");
        assert_eq!((s.total_ns, s.hits), (50, 1));
    }

    /// A task due to run inside a stolen stretch runs at its end; work pushed into a later
    /// stretch by an earlier one is delayed by both.
    #[test]
    fn a_task_due_inside_a_stolen_stretch_runs_at_its_end_and_delays_chain() {
        let mut s = with(vec![(100, 200), (250, 300)]);
        s.settle_idle(0, 150);
        assert_eq!(s.charge(0, 150), 200, "woken at 150 inside [100, 200): runs at 200");
        let mut s = with(vec![(100, 200), (250, 300)]);
        s.settle_idle(0, 0);
        assert_eq!(s.charge(0, 180), 330, "100 ns stolen, then the work reaches the next stretch: 50 more");
    }

    /// The stretches are the seed's, dom0's share of the CPU is about burst / (gap + burst),
    /// and none outlasts a credit scheduler tick.
    #[test]
    fn the_stretches_are_drawn_from_the_seed_with_the_stated_means() {
        let mut a = Steal::new(7, 1, 10_000_000, 20_000).expect("on");
        let mut b = Steal::new(7, 1, 10_000_000, 20_000).expect("on");
        let mut c = Steal::new(8, 1, 10_000_000, 20_000).expect("on");
        let horizon = 100_000_000_000; // 100 s
        for s in [&mut a, &mut b, &mut c] {
            s.extend_past(0, horizon);
        }
        assert_eq!(a.stretches[0], b.stretches[0]);
        assert_ne!(a.stretches[0][..10], c.stretches[0][..10]);
        let n = a.stretches[0].len() as f64;
        assert!((n - 10_000.0).abs() < 400.0, "{n} stretches in 100 s at one per 10 ms");
        let stolen: u64 = a.stretches[0].iter().map(|&(s, e)| e - s).sum();
        let share = stolen as f64 / horizon as f64;
        assert!((share - 0.002).abs() < 0.0002, "{share}");
        let mut long = Steal::new(7, 1, 10_000_000, 50_000_000).expect("on");
        long.extend_past(0, horizon);
        assert!(long.stretches[0].iter().all(|&(s, e)| e - s <= CSCHED_TICK_NS));
        assert!(Steal::new(7, 1, 0, 20_000).is_none());
    }
}

#[cfg(test)]
mod charge_tests {
    use super::*;

    /// Guards the lazy generation: a vCPU charged far past the stretches generated so far
    /// (a long idle stretch, then work) is charged only what began in its own span, never a
    /// stretch from before it (once a negative "stolen" time wrapped the total to 2^64 ns).
    #[test]
    fn charges_far_past_the_generated_stretches_take_only_what_fell_in_their_span() {
        let mut s = Steal::new(1, 1, 10_000_000, 20_000).expect("on");
        let mut r = Rng::new(5);
        let mut t = 0u64;
        for _ in 0..200_000 {
            t += r.below(3_000_000);
            let at = t.saturating_sub(r.below(100_000));
            let before = s.total_ns;
            if r.below(3) == 0 {
                s.settle_idle(0, at);
            } else {
                let end = s.charge(0, at);
                assert!(end >= at && end - at == s.total_ns - before, "{at} -> {end}");
                assert!(end - at < 10 * CSCHED_TICK_NS);
            }
        }
        assert!(s.hits > 1_000);
    }
}
