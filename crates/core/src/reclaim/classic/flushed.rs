//! The lruvec statistics 6.x reclaim reads: as of the last rstat flush, not as they are.
//!
//! Since 5.13 a memory cgroup's lruvec counters (`lruvec_page_state`: NR_INACTIVE_ANON ..
//! NR_ACTIVE_FILE, WORKINGSET_ACTIVATE_*) are per-CPU deltas folded into the readable value
//! only when the cgroup's statistics are flushed (`cgroup_rstat_flush`); with memory cgroups
//! compiled in this holds for the root's lruvec too, so for global reclaim as well. Reclaim
//! does not flush them itself (6.x `prepare_scan_control` and `workingset_test_recent` call
//! `mem_cgroup_flush_stats_ratelimited`, which flushes only when the periodic flusher is a
//! whole cycle late; `prepare_scan_control` since 6.12 only: from 5.16 to 6.11 it flushed
//! whenever updates were pending, and its heuristics read exact counters,
//! `config::reclaim_stats_ratelimited`). They are flushed by the periodic worker every `FLUSH_TIME` (2 s,
//! mm/memcontrol.c `flush_memcg_stats_dwork`) and by every read of the cgroup's
//! `memory.stat` (`memcg_stat_format` / `memcg1_stat_format` call `mem_cgroup_flush_stats`).
//!
//! What reads the flushed view (6.x, mm/vmscan.c and mm/workingset.c): `prepare_scan_control`
//! (the refault test against the snapshot, `inactive_is_low`, cache-trim's inactive file
//! size), `snapshot_refaults`, the anon aging at the end of `shrink_lruvec` and kswapd's
//! `age_active_anon`, and the workingset size a refault distance is compared with.
//! `get_scan_count`'s list sizes are exact (`lruvec_lru_size` reads the per-zone LRU sizes).
//!
//! Why it matters: between two flushes the refault counter reclaim sees does not move, so
//! once one reclaim call has snapshotted it, the next calls find no new refaults and scan the
//! file list alone (cache-trim mode) even while a file's pages refault and activate, unless
//! the stale sizes say the inactive file list is low. A 6.18 host running
//! `host-pagecache-scan.toml` under the host runner (which reads `memory.stat` every 100 ms)
//! scanned file only for its first ~1,200 reclaim calls of the second scan, then anon and
//! file in proportion (vmscan tracepoints).

use crate::mm::LruList;
use crate::rng::Rng;

/// `FLUSH_TIME` (2 * HZ): the periodic rstat flush of every memory cgroup.
pub const FLUSH_TIME_NS: u64 = 2_000_000_000;

/// The random stream of the flush times (`Rng::for_stream(run seed, FLUSH_STREAM)`): its own
/// stream, so that drawing from it moves no other random choice of the run.
const FLUSH_STREAM: u64 = 0x7273_7461_7466_6c75;

/// A process reading `memory.stat` at fixed ticks, each read up to `jitter` late.
#[derive(Clone, Debug)]
pub struct StatReader {
    pub period: u64,
    /// How late a read can be after its tick (uniform in `[0, jitter)`): the host runner's
    /// sampling loop wakes every 10 ms and reads at its first wake-up after the tick.
    pub jitter: u64,
}

/// The counters as of the last flush, and when the next flush is due.
///
/// The flush times are part of the run's randomness, drawn from its seed: the periodic
/// worker has run every `FLUSH_TIME` since boot, so its phase relative to the workload's
/// start is arbitrary; a reader's reads land late by its jitter. Which side of a flush a
/// reclaim call falls decides whether it sees a list as low (see the module doc), so these
/// times are a source of run-to-run spread on a real machine, and here.
#[derive(Clone, Debug)]
pub struct FlushedStats {
    /// `WORKINGSET_ACTIVATE_ANON`, `WORKINGSET_ACTIVATE_FILE`.
    pub activate: [u64; 2],
    /// The LRU list sizes (`LruList` order).
    pub lru: [u64; 4],
    /// The periodic worker's first flush after time 0 (its phase).
    periodic_phase: u64,
    reader: Option<StatReader>,
    /// The tick of the reader's next read, and the time of that read (tick + lateness).
    reader_tick: u64,
    next_read: u64,
    /// The last time reclaim looked (a periodic flush after it and at or before the next
    /// look is due then).
    last_seen: u64,
    rng: Rng,
}

impl FlushedStats {
    /// The view as flushed at time 0, before the workload had a page: all zero.
    pub fn new(reader: Option<StatReader>, seed: u64) -> FlushedStats {
        let mut rng = Rng::for_stream(seed, FLUSH_STREAM);
        let periodic_phase = rng.below(FLUSH_TIME_NS);
        let mut s = FlushedStats { activate: [0; 2], lru: [0; 4], periodic_phase, reader, reader_tick: 0, next_read: u64::MAX, last_seen: 0, rng };
        s.schedule_read_after(0);
        s
    }

    /// The reader's first read after `now` (its first tick is at time 0, which the initial
    /// all-zero view stands for).
    fn schedule_read_after(&mut self, now: u64) {
        let Some(r) = &self.reader else { return };
        while self.next_read == u64::MAX || self.next_read <= now {
            self.reader_tick += 1;
            self.next_read = self.reader_tick * r.period + self.rng.below(r.jitter.max(1));
        }
    }

    /// The periodic worker's first flush after `now`.
    fn next_periodic_after(&self, now: u64) -> u64 {
        if now < self.periodic_phase {
            return self.periodic_phase;
        }
        self.periodic_phase + ((now - self.periodic_phase) / FLUSH_TIME_NS + 1) * FLUSH_TIME_NS
    }

    fn next_flush(&self) -> u64 {
        self.next_read.min(self.next_periodic_after(self.last_seen))
    }

    /// Flush if a flush fell due at or before `now`: the view becomes `activate` / `lru`
    /// (as they are at `now`: reclaim calls come often enough under pressure that the
    /// counters barely move between a flush and the next call).
    pub fn catch_up(&mut self, now: u64, activate: [u64; 2], lru: [u64; 4]) {
        let due = self.next_flush();
        self.last_seen = now;
        if now < due {
            return;
        }
        self.activate = activate;
        self.lru = lru;
        self.schedule_read_after(now);
    }

    /// A flush outside the periodic worker's and the reader's (5.15-5.17's refault,
    /// reclaim/rstat_flush.rs): the view becomes the counters as they are.
    pub fn flush_now(&mut self, activate: [u64; 2], lru: [u64; 4]) {
        self.activate = activate;
        self.lru = lru;
    }

    pub fn size(&self, l: LruList) -> u64 {
        self.lru[l as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Between flushes the view does not move; the periodic worker flushes once per
    /// `FLUSH_TIME`, at its phase.
    #[test]
    fn view_changes_only_at_the_periodic_flush() {
        let mut s = FlushedStats::new(None, 1);
        let phase = s.periodic_phase;
        assert!(phase < FLUSH_TIME_NS);
        s.catch_up(phase.saturating_sub(1), [1, 2], [3, 4, 5, 6]);
        assert_eq!((s.activate, s.lru), ([0; 2], [0; 4]), "flushed at time 0, when nothing was there");
        s.catch_up(phase, [9, 9], [9; 4]);
        assert_eq!((s.activate, s.size(LruList::ActiveFile)), ([9, 9], 9), "the periodic flush at its phase");
        s.catch_up(phase + FLUSH_TIME_NS - 1, [10, 10], [10; 4]);
        assert_eq!(s.activate, [9, 9], "no second flush within FLUSH_TIME");
        s.catch_up(phase + 5 * FLUSH_TIME_NS, [11, 11], [11; 4]);
        assert_eq!(s.activate, [11, 11], "a late look still sees the flush it missed");
    }

    /// The periodic worker's phase is drawn from the seed: the same seed gives the same
    /// phase, and the phases of many seeds spread over the whole period.
    #[test]
    fn the_periodic_flush_phase_comes_from_the_seed() {
        assert_eq!(FlushedStats::new(None, 7).periodic_phase, FlushedStats::new(None, 7).periodic_phase);
        let phases: Vec<u64> = (0..64).map(|seed| FlushedStats::new(None, seed).periodic_phase).collect();
        let quarters: std::collections::BTreeSet<u64> = phases.iter().map(|p| p * 4 / FLUSH_TIME_NS).collect();
        assert_eq!(quarters.len(), 4, "phases of 64 seeds cover every quarter of FLUSH_TIME: {phases:?}");
    }

    /// A reader's read flushes, at its tick plus at most its jitter; reads before a tick
    /// do not.
    #[test]
    fn a_reader_flushes_at_each_tick_within_its_jitter() {
        let period = 100_000_000;
        let jitter = 10_000_000;
        // A seed whose periodic flush stays clear of the first 300 ms, so that only the
        // reader flushes there.
        let seed = (0..).find(|&s| FlushedStats::new(None, s).periodic_phase > 400_000_000).unwrap();
        let mut r = FlushedStats::new(Some(StatReader { period, jitter }), seed);
        r.catch_up(period - 1, [2, 2], [2; 4]);
        assert_eq!(r.activate, [0, 0], "no read before the first tick");
        r.catch_up(period + jitter, [3, 3], [3; 4]);
        assert_eq!(r.activate, [3, 3], "the read of the first tick flushed");
        r.catch_up(2 * period - 1, [4, 4], [4; 4]);
        assert_eq!(r.activate, [3, 3]);
        r.catch_up(2 * period + jitter, [5, 5], [5; 4]);
        assert_eq!(r.activate, [5, 5]);
        let lateness: Vec<u64> = (0..32)
            .map(|s| {
                let f = FlushedStats::new(Some(StatReader { period, jitter }), s);
                f.next_read - period
            })
            .collect();
        assert!(lateness.iter().all(|&l| l < jitter), "{lateness:?}");
        assert!(lateness.iter().any(|&l| l > jitter / 2), "reads land late by up to the jitter: {lateness:?}");
    }
}
