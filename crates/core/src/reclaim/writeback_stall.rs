//! Where reclaim sleeps because of writeback, per era (kernel-algorithms.md §3.10, §3.13, §3.3).
//!
//! Reclaim that meets folios under writeback cannot free them until their writes complete; each
//! era decides differently whether, where and how long a reclaimer waits for that:
//!
//! | Era | Direct reclaim | kswapd | Allocator retry |
//! |---|---|---|---|
//! | 2.6.28 | `congestion_wait(WRITE, HZ/10)` between priorities (`direct.rs`) | the same nap in `balance_pgdat` (`kswapd.rs`) | `congestion_wait(WRITE, HZ/50)` (`engine/memory.rs`) |
//! | 3.14 | per batch: `congestion_wait(BLK_RW_ASYNC, HZ/10)` when the batch was all unqueued dirty file folios or had `nr_immediate`; else `wait_iff_congested(zone, HZ/10)` | per batch: the same `congestion_wait` | `wait_iff_congested(zone, HZ/50)` |
//! | 4.14 | per batch: `wait_iff_congested(pgdat, HZ/10)` | per batch: `congestion_wait(BLK_RW_ASYNC, HZ/10)` on `nr_immediate` | `should_reclaim_retry`: no progress and `2 × write_pending > reclaimable` → `congestion_wait(BLK_RW_ASYNC, HZ/10)` |
//! | 6.x | per node pass: `reclaim_throttle(CONGESTED)` (1 jiffy) when the node is flagged congested; `reclaim_throttle(NOPROGRESS)` (1 jiffy) at priority 1 with nothing reclaimed | per node pass: `reclaim_throttle(WRITEBACK)` (HZ/10, woken by written pages) on `nr_immediate` | none (5.16, 132b0d21d21f) |
//!
//! The kernel sources of each row: 3.14 `shrink_inactive_list` (Mel Gorman's 3.11 series moved
//! the do_try_to_free_pages nap there; the `nr_unqueued_dirty == nr_taken` stall for every
//! reclaimer was cut to `nr_immediate` in 3.16), 4.14 `shrink_inactive_list` and
//! `should_reclaim_retry` (4.7–5.15), `wait_iff_congested` (2.6.36–5.15, mm/backing-dev.c:
//! it sleeps only while some queue is write-congested *and* the zone/node is flagged
//! congested, else it is a `cond_resched`), 6.x `shrink_node`, `consider_reclaim_throttle`,
//! `reclaim_throttle` and `skip_throttle_noprogress`.
//!
//! The flags these read: PGDAT_WRITEBACK (a batch — 6.x: kswapd's node pass — had every folio
//! it took under writeback; then kswapd counts the PG_reclaim folios it meets under writeback
//! again as `nr_immediate`) and PGDAT_CONGESTED (every dirty page-cache folio met was
//! congested: 3.14 its queue congested or it came round again under writeback with
//! PG_reclaim; 4.14 the same for dirty/writeback folios; 6.x only the latter). Both cover
//! page-cache folios alone: anonymous folios "are not handled by flushers"
//! (`folio_check_dirty_writeback`), so a swap-only workload never flags congestion and its
//! direct reclaimers never sleep here in 3.14–6.x. Flags are cleared when the node is
//! balanced (`clear_pgdat_congested`).
//!
//! Memory-cgroup reclaim without dirty throttling of its own (every memcg in 3.11–4.1, a
//! cgroup v1 memcg since 4.2: `!sane_reclaim` / `!writeback_throttling_sane`) has one more
//! wait, in `shrink_folio_list` itself: a folio it meets again under writeback with PG_reclaim
//! set is waited for (`folio_wait_writeback`, §3.10 step 3(c)) and looked at again
//! (`pageout.rs`, `folio_wait`; the rest of the batch waits with the reclaimer).
//!
//! The model: a stall inside `shrink_inactive_list` (3.14, 4.14) ends the pass, the reclaimer
//! sleeps and resumes at the same priority, as after `too_many_isolated`; a stall after the
//! node pass (6.x) is slept before the priority loop goes on. MGLRU's root reclaim returns
//! from `shrink_node` before these checks (6.1 `shrink_node`), so it has none of them. Not
//! modelled: LRUVEC_CGROUP_CONGESTED (a memory cgroup flagging itself under cgroup v2), and
//! a second sleep in the same 3.14 batch (`congestion_wait` and then `wait_iff_congested`).

use super::ScanControl;
use crate::config::Profile;
use crate::engine::{DevRef, Sim};
use crate::mm::*;

/// How many kinds of [`WritebackWait`] there are (the sleeps are counted per kind).
pub const WAIT_KINDS: usize = 5;

/// The sleep a reclaim pass ends in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WritebackWait {
    /// 3.14/4.14 `congestion_wait(BLK_RW_ASYNC, HZ/10)` in `shrink_inactive_list`.
    CongestionWait,
    /// 3.14/4.14 `wait_iff_congested(.., BLK_RW_ASYNC, HZ/10)` of a direct reclaimer, when it
    /// sleeps (made only then): the same wait as `congestion_wait`.
    WaitIffCongested,
    /// 6.x `reclaim_throttle(WRITEBACK)`: HZ/10, woken once enough pages were written.
    ThrottleWriteback,
    /// 6.x `reclaim_throttle(CONGESTED)`: one jiffy.
    ThrottleCongested,
    /// 6.x `reclaim_throttle(NOPROGRESS)`: one jiffy, woken by a reclaimer that makes progress.
    ThrottleNoProgress,
}

impl WritebackWait {
    /// Slept inside `shrink_inactive_list`, so the pass resumes at the same priority; the 6.x
    /// throttles come after the node pass, and the priority loop goes on after them.
    pub fn mid_pass(self) -> bool {
        matches!(self, WritebackWait::CongestionWait | WritebackWait::WaitIffCongested)
    }
}

/// One `shrink_inactive_list` batch's `struct reclaim_stat` counts.
#[derive(Clone, Copy, Debug, Default)]
pub struct BatchStat {
    pub taken: u64,
    pub dirty: u64,
    pub unqueued_dirty: u64,
    pub congested: u64,
    pub writeback: u64,
    pub immediate: u64,
}

impl Sim {
    /// `folio_check_dirty_writeback` and the era's congested test over a batch as it is
    /// isolated: page-cache folios only (not anonymous or shmem ones). Adds to `sc` and
    /// returns the batch's unqueued dirty folios.
    pub(crate) fn count_dirty_writeback(&self, folios: &[u32], sc: &mut ScanControl) -> u64 {
        let file_congested = self.bdi_write_congested(DevRef::File);
        let mut unqueued = 0;
        for &f in folios {
            let fr = &self.mem.frames[f as usize];
            if fr.owner_kind() != Owner::File || fr.has(PG_SWAPBACKED) {
                continue;
            }
            sc.nr_file_taken += 1;
            let (dirty, writeback) = (fr.has(PG_DIRTY), fr.has(PG_WRITEBACK));
            sc.nr_dirty += (dirty || writeback) as u64;
            unqueued += (dirty && !writeback) as u64;
            let cycled = writeback && fr.has(PG_RECLAIM);
            sc.nr_congested += match self.profile {
                Profile::V2_6_28 => false,
                Profile::V3_14 => file_congested || cycled,
                Profile::V4_14 => ((dirty || writeback) && file_congested) || cycled,
                Profile::V6 => cycled,
            } as u64;
        }
        sc.nr_unqueued_dirty += unqueued;
        unqueued
    }

    /// 3.14 / 4.14 `shrink_inactive_list` after a batch: flag the node, and end the pass in
    /// the era's sleep when it has one.
    pub(crate) fn batch_writeback_stall(&mut self, b: &BatchStat, sc: &mut ScanControl) {
        if !matches!(self.profile, Profile::V3_14 | Profile::V4_14) {
            return;
        }
        if b.writeback > 0 && b.writeback == b.taken {
            self.reclaim.pgdat_writeback = true;
        }
        if !sc.memcg {
            if b.dirty > 0 && b.dirty == b.congested {
                self.reclaim.pgdat_congested = true;
            }
            // "pages are cycling through the LRU faster than they are written"; 3.14 also
            // stalled every reclaimer on a batch of nothing but unqueued dirty file folios.
            let all_unqueued = self.profile == Profile::V3_14 && b.unqueued_dirty == b.taken;
            if b.immediate > 0 || all_unqueued {
                sc.writeback_wait = Some(WritebackWait::CongestionWait);
                return;
            }
        }
        if !sc.kswapd && self.wait_iff_congested_sleeps() {
            sc.writeback_wait = Some(WritebackWait::WaitIffCongested);
        }
    }

    /// `wait_iff_congested` (2.6.36–5.15) sleeps only while some queue is write-congested and
    /// the zone / node is flagged congested; otherwise it is a `cond_resched`.
    pub(crate) fn wait_iff_congested_sleeps(&self) -> bool {
        !self.io.congested.is_empty() && self.reclaim.pgdat_congested
    }

    /// 6.x `shrink_node` after the classic node pass: kswapd flags PGDAT_WRITEBACK and
    /// throttles on `nr_immediate`; it flags the node congested; a direct reclaimer of a
    /// congested node throttles (`reclaim_throttle(CONGESTED)`).
    pub(crate) fn node_writeback_throttle(&mut self, sc: &mut ScanControl) {
        if self.profile < Profile::V6 || self.reclaim.policy().lru_gen_rmap().is_some() {
            return;
        }
        if sc.kswapd {
            if sc.nr_writeback > 0 && sc.nr_writeback == sc.nr_taken {
                self.reclaim.pgdat_writeback = true;
            }
            if sc.nr_dirty > 0 && sc.nr_dirty == sc.nr_congested {
                self.reclaim.pgdat_congested = true;
            }
            if sc.nr_immediate > 0 {
                sc.writeback_wait = Some(WritebackWait::ThrottleWriteback);
            }
        } else if !sc.memcg && self.reclaim.pgdat_congested && !self.skip_throttle_noprogress() {
            sc.writeback_wait = Some(WritebackWait::ThrottleCongested);
        }
    }

    /// 6.x `consider_reclaim_throttle`, after each `shrink_zones` of a global direct reclaim:
    /// progress above 1/8 of what was scanned wakes the NOPROGRESS sleepers; none at
    /// priority 1 throttles this reclaimer.
    pub(crate) fn consider_reclaim_throttle(&mut self, sc: &mut ScanControl) {
        if self.profile < Profile::V6 || sc.memcg {
            return;
        }
        if sc.nr_reclaimed > sc.nr_scanned / 8 {
            let now = self.now;
            for w in std::mem::take(&mut self.io.noprogress_waiters) {
                self.wake(w, now);
            }
            return;
        }
        if sc.priority == 1 && sc.nr_reclaimed == 0 && sc.writeback_wait.is_none() && !self.skip_throttle_noprogress() {
            sc.writeback_wait = Some(WritebackWait::ThrottleNoProgress);
        }
    }

    /// `skip_throttle_noprogress`: no CONGESTED/NOPROGRESS sleep on a node kswapd gave up on,
    /// or where at most half of what is reclaimable is waiting to be written.
    fn skip_throttle_noprogress(&self) -> bool {
        self.reclaim.kswapd_failures >= super::MAX_RECLAIM_RETRIES || 2 * self.write_pending() <= self.reclaimable_pages()
    }

    /// `NR_ZONE_WRITE_PENDING`: dirty page-cache pages plus every page under writeback.
    pub(crate) fn write_pending(&self) -> u64 {
        self.wb.nr_dirty + self.io.nr_writeback
    }

    /// Put user task `tid`, in direct reclaim, to sleep in `wait`.
    pub(crate) fn writeback_sleep(&mut self, tid: u32, wait: WritebackWait) {
        self.reclaim.writeback_sleeps[wait as usize] += 1;
        let timeout = self.hz_div_10_ns();
        match wait {
            WritebackWait::CongestionWait | WritebackWait::WaitIffCongested => self.congestion_wait(tid, timeout),
            WritebackWait::ThrottleWriteback => self.throttle_on_writeback(tid, timeout),
            WritebackWait::ThrottleCongested => self.block_for(tid, self.jiffy_ns),
            WritebackWait::ThrottleNoProgress => {
                self.io.noprogress_waiters.push(tid);
                self.block_for(tid, self.jiffy_ns);
            }
        }
    }

    /// A reclaimer whose pageout met `dev`'s full request queue sleeps until one of that
    /// device's requests completes and frees its slot (`get_request`'s io_schedule; no timeout).
    pub(crate) fn wait_for_request(&mut self, tid: u32, dev: DevRef) {
        self.io.request_sleeps += 1;
        self.io_schedule(tid);
        self.io.request_waiters.push((tid, dev));
        self.tasks[tid as usize].state = crate::engine::TState::Blocked;
    }

    /// How many times a reclaimer (direct or kswapd) slept in `get_request` for a request.
    pub fn request_sleeps(&self) -> u64 {
        self.io.request_sleeps
    }

    /// A request on `dev` completed: it is free for the reclaimers waiting for one.
    pub(crate) fn wake_request_waiters(&mut self, dev: DevRef) {
        let now = self.now;
        let mut i = 0;
        while i < self.io.request_waiters.len() {
            if self.io.request_waiters[i].1 == dev {
                let (w, _) = self.io.request_waiters.remove(i);
                self.wake(w, now);
            } else {
                i += 1;
            }
        }
        self.kswapd_request_freed(dev);
    }
}

#[cfg(test)]
mod tests {
    use super::{BatchStat, WritebackWait};
    use crate::engine::{DevRef, Sim};
    use crate::reclaim::{ScanControl, SWAP_CLUSTER_MAX};

    fn sim(profile: &str) -> Sim {
        crate::engine::test_machine(profile)
    }

    /// What a direct reclaimer (or kswapd) does after one batch of `b` in `profile`.
    fn after_batch(s: &mut Sim, b: BatchStat, kswapd: bool) -> Option<WritebackWait> {
        let mut sc = ScanControl::new(SWAP_CLUSTER_MAX, kswapd, false, 0);
        s.batch_writeback_stall(&b, &mut sc);
        sc.writeback_wait
    }

    const ALL_UNDER_WRITEBACK: BatchStat = BatchStat { taken: 32, dirty: 0, unqueued_dirty: 0, congested: 0, writeback: 32, immediate: 0 };
    const ALL_UNQUEUED_DIRTY_FILE: BatchStat = BatchStat { taken: 32, dirty: 32, unqueued_dirty: 32, congested: 0, writeback: 0, immediate: 0 };

    #[test]
    fn a_3x_4x_batch_all_under_writeback_flags_the_node_but_sleeps_nobody_without_congestion() {
        for profile in ["3.14", "4.14"] {
            let mut s = sim(profile);
            assert_eq!(after_batch(&mut s, ALL_UNDER_WRITEBACK, false), None, "{profile}: wait_iff_congested is a cond_resched without congestion");
            assert!(s.reclaim.pgdat_writeback, "{profile}: nr_writeback == nr_taken flags PGDAT_WRITEBACK");
        }
    }

    #[test]
    fn only_3_14_stalls_every_reclaimer_on_a_batch_of_unqueued_dirty_file_folios() {
        assert_eq!(after_batch(&mut sim("3.14"), ALL_UNQUEUED_DIRTY_FILE, false), Some(WritebackWait::CongestionWait));
        assert_eq!(after_batch(&mut sim("4.14"), ALL_UNQUEUED_DIRTY_FILE, false), None, "3.16 cut it to nr_immediate");
    }

    #[test]
    fn kswapd_meeting_immediate_folios_sleeps_in_congestion_wait_in_3x_4x() {
        let immediate = BatchStat { immediate: 4, ..ALL_UNDER_WRITEBACK };
        for profile in ["3.14", "4.14"] {
            assert_eq!(after_batch(&mut sim(profile), immediate, true), Some(WritebackWait::CongestionWait), "{profile}");
        }
    }

    #[test]
    fn wait_iff_congested_sleeps_a_direct_reclaimer_only_while_a_queue_is_congested_and_the_node_flagged() {
        let congested = BatchStat { dirty: 8, congested: 8, writeback: 8, ..ALL_UNDER_WRITEBACK };
        let mut s = sim("4.14");
        assert_eq!(after_batch(&mut s, congested, false), None, "no queue congested");
        assert!(s.reclaim.pgdat_congested, "every dirty folio was congested");
        s.io.congested.push(DevRef::File);
        assert_eq!(after_batch(&mut s, ALL_UNDER_WRITEBACK, false), Some(WritebackWait::WaitIffCongested));
        assert_eq!(after_batch(&mut s, ALL_UNDER_WRITEBACK, true), None, "kswapd does not wait_iff_congested");
        s.clear_pgdat_congested();
        assert_eq!(after_batch(&mut s, ALL_UNDER_WRITEBACK, false), None, "a balanced node is no longer congested");
    }

    /// 6.x `shrink_node` after a node pass with these counts.
    fn after_node_pass(s: &mut Sim, kswapd: bool, taken: u64, writeback: u64, immediate: u64) -> Option<WritebackWait> {
        let mut sc = ScanControl::new(SWAP_CLUSTER_MAX, kswapd, false, 0);
        (sc.nr_taken, sc.nr_writeback, sc.nr_immediate) = (taken, writeback, immediate);
        s.node_writeback_throttle(&mut sc);
        sc.writeback_wait
    }

    #[test]
    fn in_6x_a_reclaimer_finding_writeback_but_nothing_flagged_immediate_does_not_sleep() {
        let mut s = sim("6.x");
        assert_eq!(after_node_pass(&mut s, false, 32, 32, 0), None, "direct reclaim: no WRITEBACK throttle");
        assert_eq!(after_node_pass(&mut s, true, 32, 32, 0), None, "kswapd: flags the node, no throttle yet");
        assert!(s.reclaim.pgdat_writeback);
        assert_eq!(after_node_pass(&mut s, true, 32, 28, 4), Some(WritebackWait::ThrottleWriteback), "kswapd meets its marked folios again");
        assert_eq!(after_node_pass(&mut s, false, 32, 28, 4), None, "nr_immediate throttles kswapd only");
    }

    #[test]
    fn in_6x_the_congested_throttle_is_skipped_while_little_is_waiting_to_be_written() {
        let mut s = sim("6.x");
        s.reclaim.pgdat_congested = true;
        assert_eq!(s.write_pending(), 0);
        assert_eq!(after_node_pass(&mut s, false, 32, 0, 0), None, "skip_throttle_noprogress: 2 x write_pending <= reclaimable");
        s.wb.nr_dirty = 1;
        assert_eq!(after_node_pass(&mut s, false, 32, 0, 0), Some(WritebackWait::ThrottleCongested), "an empty LRU: pending writes are all there is");
    }
}
