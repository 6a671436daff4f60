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

/// `FLUSH_TIME` (2 * HZ): the periodic rstat flush of every memory cgroup.
pub const FLUSH_TIME_NS: u64 = 2_000_000_000;

/// The counters as of the last flush, and when the next flush is due.
#[derive(Clone, Debug)]
pub struct FlushedStats {
    /// `WORKINGSET_ACTIVATE_ANON`, `WORKINGSET_ACTIVATE_FILE`.
    pub activate: [u64; 2],
    /// The LRU list sizes (`LruList` order).
    pub lru: [u64; 4],
    /// Time of the next flush.
    next_flush: u64,
    /// A reader of `memory.stat` (memcg runs only): its period.
    reader: Option<u64>,
}

impl FlushedStats {
    /// The view as flushed at time 0, before the workload had a page: all zero.
    pub fn new(reader: Option<u64>) -> FlushedStats {
        let next_flush = FLUSH_TIME_NS.min(reader.unwrap_or(u64::MAX));
        FlushedStats { activate: [0; 2], lru: [0; 4], next_flush, reader }
    }

    /// Flush if a flush fell due at or before `now`: the view becomes `activate` / `lru`, and
    /// the next flush is the earlier of the periodic worker's and the reader's next tick.
    pub fn catch_up(&mut self, now: u64, activate: [u64; 2], lru: [u64; 4]) {
        if now < self.next_flush {
            return;
        }
        self.activate = activate;
        self.lru = lru;
        let next_tick = |period: u64| (now / period + 1) * period;
        self.next_flush = next_tick(FLUSH_TIME_NS).min(self.reader.map_or(u64::MAX, next_tick));
    }

    pub fn size(&self, l: LruList) -> u64 {
        self.lru[l as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Between flushes the view does not move; a reader's period adds flushes.
    #[test]
    fn view_changes_only_at_flushes() {
        let mut s = FlushedStats::new(None);
        s.catch_up(5, [1, 2], [3, 4, 5, 6]);
        assert_eq!((s.activate, s.lru), ([0; 2], [0; 4]), "flushed at time 0, when nothing was there");
        s.catch_up(FLUSH_TIME_NS - 1, [9, 9], [9; 4]);
        assert_eq!(s.activate, [0, 0], "no flush before FLUSH_TIME");
        s.catch_up(FLUSH_TIME_NS, [9, 9], [9; 4]);
        assert_eq!((s.activate, s.size(LruList::ActiveFile)), ([9, 9], 9));
        s.catch_up(2 * FLUSH_TIME_NS - 1, [10, 10], [10; 4]);
        assert_eq!(s.activate, [9, 9]);
        let mut r = FlushedStats::new(Some(100_000_000));
        r.catch_up(99_999_999, [2, 2], [2; 4]);
        assert_eq!(r.activate, [0, 0]);
        r.catch_up(100_000_000, [3, 3], [3; 4]);
        assert_eq!(r.activate, [3, 3], "the reader's read flushed");
        r.catch_up(150_000_000, [4, 4], [4; 4]);
        assert_eq!(r.activate, [3, 3]);
    }
}
