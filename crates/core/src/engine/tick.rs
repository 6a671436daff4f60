//! The guest's timer tick: where a `schedule_timeout` nap really ends (kernel/timer.c).
//!
//! A kernel sleep of `n` jiffies (`congestion_wait(BLK_RW_ASYNC, HZ/50)`, kswapd's
//! `congestion_wait(BLK_RW_ASYNC, HZ/10)`) arms a timer-wheel timer for `jiffies + n`, and the
//! timer runs in the softirq of the tick that makes `jiffies` reach that value. So the nap
//! does not last `n / HZ` seconds from the call: it ends on the `n`-th tick boundary after it,
//! between `n - 1` and `n` jiffies later, depending on where inside the current jiffy the
//! call came.
//!
//! Where the ticks fall against the workload is the run's: the guest booted, the benchmark
//! was started by hand, and nothing aligns the program's first instruction with the tick. The
//! model draws that phase (a uniform offset within one jiffy) from the run's seed, so a
//! different seed is a different but reproducible alignment, and the same seed the same run.
//! This is the run-to-run spread source for seed 002, whose fill-and-verify program
//! otherwise makes the same decisions under every seed (docs/model.md "Spread").
//!
//! Applied to the "2.6.32" profile only (`era_2_6_32`): the rule holds for every era's
//! timers, but the other profiles' tables and goldens were made with naps of exactly `n`
//! jiffies, and moving them is separate work.

use crate::rng::Rng;

/// The random stream of the tick phase (`Rng::for_stream(seed, TICK_STREAM)`).
pub const TICK_STREAM: u64 = 0x7469_636b_0000_0000;

/// The tick boundaries of one run: at `phase + k × jiffy`.
#[derive(Clone, Copy, Debug)]
pub struct Tick {
    pub jiffy_ns: u64,
    pub phase_ns: u64,
}

impl Tick {
    /// The run's ticks: `jiffy_ns` apart, the first `phase` (drawn from `seed`) after time 0.
    pub fn for_run(seed: u64, jiffy_ns: u64) -> Tick {
        let phase_ns = Rng::for_stream(seed, TICK_STREAM).next_u64() % jiffy_ns;
        Tick { jiffy_ns, phase_ns }
    }

    /// When a `schedule_timeout` of `timeout_ns` (a whole number of jiffies) called at `now`
    /// ends: on the tick at which `jiffies` reaches its value at the call plus the timeout.
    pub fn expiry(&self, now: u64, timeout_ns: u64) -> u64 {
        let j = self.jiffy_ns as i128;
        let jiffies_now = (now as i128 - self.phase_ns as i128).div_euclid(j);
        let expires = jiffies_now + (timeout_ns as i128 / j).max(1);
        (self.phase_ns as i128 + expires * j) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A nap of n jiffies ends on a tick, more than n - 1 and at most n jiffies after the call.
    #[test]
    fn a_nap_ends_on_the_nth_tick_after_the_call() {
        let t = Tick { jiffy_ns: 4_000_000, phase_ns: 1_000_000 };
        assert_eq!(t.expiry(1_000_000, 20_000_000), 21_000_000, "called on a tick: exactly n jiffies");
        assert_eq!(t.expiry(4_999_999, 20_000_000), 21_000_000, "called just before a tick: a hair over n - 1");
        assert_eq!(t.expiry(0, 20_000_000), 17_000_000, "before the first tick of the run");
        for now in [3u64, 7_654_321, 123_456_789] {
            let d = t.expiry(now, 20_000_000) - now;
            assert!(d > 16_000_000 && d <= 20_000_000, "{d}");
            assert_eq!((t.expiry(now, 20_000_000) - 1_000_000) % 4_000_000, 0);
        }
    }

    /// The phase is the seed's: the same seed, the same ticks; another seed, others.
    #[test]
    fn the_tick_phase_is_drawn_from_the_run_seed() {
        assert_eq!(Tick::for_run(7, 4_000_000).phase_ns, Tick::for_run(7, 4_000_000).phase_ns);
        let phases: std::collections::BTreeSet<u64> = (1..20).map(|s| Tick::for_run(s, 4_000_000).phase_ns).collect();
        assert!(phases.len() > 15, "{phases:?}");
        assert!(phases.iter().all(|&p| p < 4_000_000));
    }
}
