//! pfmemalloc throttling of direct reclaim (`throttle_direct_reclaim`, `allow_direct_reclaim`;
//! kernel-algorithms.md §3.13), 3.6+: a global direct reclaimer whose node has fewer free
//! pages than half the min watermarks of its zones up to ZONE_NORMAL sleeps on
//! `pgdat->pfmemalloc_wait` until kswapd has brought it back above that, and only then
//! reclaims.
//!
//! Why it exists (Mel Gorman, 5515061d22f0, 3.6, "mm: throttle direct reclaimers if PF_MEMALLOC
//! reserves are low and swap is backed by network storage"): the reserves below the min
//! watermark are what reclaim itself allocates from (PF_MEMALLOC: `ALLOC_NO_WATERMARKS`, e.g.
//! zram's and zswap's pools while they store the page being swapped out). Many direct
//! reclaimers eating them at once leave reclaim nothing to make progress with, so once half of
//! them is gone the reclaimers wait for kswapd instead.
//!
//! The rule, as 5.17 and 6.x have it (mm/vmscan.c):
//! * `throttle_direct_reclaim` runs first in `try_to_free_pages` (global reclaim only; memory
//!   cgroup limit reclaim has no such wait). Kernel threads are never throttled
//!   (`PF_KTHREAD`). It looks at the first node of the zonelist with a zone up to NORMAL: the
//!   model's one node.
//! * `allow_direct_reclaim(pgdat)`: true when kswapd has given up on the node
//!   (`kswapd_failures >= MAX_RECLAIM_RETRIES`; Shakeel Butt's 2017 "fix condition for
//!   throttle_direct_reclaim", after 4.11's `kswapd_failures`); else it sums
//!   `min_wmark_pages` and `NR_FREE_PAGES` over the managed zones up to NORMAL that have
//!   reclaimable pages (`zone_reclaimable_pages`, 4.2: Nishanth Aravamudan, "do not throttle
//!   based on pfmemalloc reserves if node has no reclaimable pages"); no reserve means no
//!   throttle; otherwise `free > reserve / 2`. When that fails it wakes kswapd (capping its
//!   zone index at NORMAL). 3.14 (`pfmemalloc_watermark_ok`) has neither exception.
//! * Not allowed: `count_vm_event(PGSCAN_DIRECT_THROTTLE)` and, for a caller with `__GFP_FS`
//!   (every allocation the model makes is a user page, `GFP_HIGHUSER_MOVABLE`),
//!   `wait_event_killable(pfmemalloc_wait, allow_direct_reclaim(pgdat))`: no timeout. Then
//!   `do_try_to_free_pages` as usual; the wait counts in the caller's direct-reclaim stall.
//! * kswapd wakes the waiters: in `balance_pgdat`, after each priority's `kswapd_shrink_node`,
//!   `if (waitqueue_active(&pgdat->pfmemalloc_wait) && allow_direct_reclaim(pgdat))
//!   wake_up_all(...)`, and in `prepare_kswapd_sleep` before it sleeps. The model wakes them
//!   at both points only when the condition holds (a waiter woken without it re-checks and
//!   sleeps again in `wait_event`; kswapd sleeps only with the node above its high watermark or
//!   given up on, where it holds).
//!
//! In the model, free pages go below the min watermark only through allocations that skip the
//! watermarks: the pools of zram and of a fronting store (`swap/io.rs` `sync_pool_frames`),
//! as reclaim's PF_MEMALLOC allocations do in the kernel. The 2.6.28 family has no throttle.

use super::MAX_RECLAIM_RETRIES;
use crate::config::Profile;
use crate::engine::{Sim, TState, TaskKind};

/// The direct reclaimers asleep on `pgdat->pfmemalloc_wait`, and what their waits cost.
#[derive(Clone, Debug, Default)]
pub struct PfmemallocWait {
    /// Asleep until kswapd finds the reserves restored.
    pub waiters: Vec<u32>,
    /// The sleeps' total length (`pgscan_direct_throttle` counts them).
    pub wait_ns: u64,
}

impl Sim {
    /// `allow_direct_reclaim` (`pfmemalloc_watermark_ok` on 3.14) of the one node; when it is
    /// false, kswapd is woken.
    pub(crate) fn allow_direct_reclaim(&mut self) -> bool {
        if self.profile < Profile::V3_14 {
            return true;
        }
        // 3.14's kswapd never gives up on a node, the model's does (kswapd.rs): a throttle
        // that outlived it would never be woken, so the exception applies to every era.
        if self.reclaim.kswapd_failures >= MAX_RECLAIM_RETRIES || (self.profile >= Profile::V4_14 && self.reclaimable_pages() == 0) {
            return true;
        }
        let reserve = self.mem.wm.min;
        if reserve == 0 {
            return true;
        }
        let ok = self.nr_free() > reserve / 2;
        if !ok {
            // "kswapd must be awake if processes are being throttled".
            self.wakeup_kswapd();
        }
        ok
    }

    /// `throttle_direct_reclaim` at the start of a global `try_to_free_pages` for user task
    /// `tid`: true when the task now sleeps on `pfmemalloc_wait` (its allocation is retried,
    /// straight into reclaim, when kswapd wakes it).
    pub(crate) fn throttle_direct_reclaim(&mut self, tid: u32) -> bool {
        let t = &mut self.tasks[tid as usize];
        if std::mem::take(&mut t.pfmemalloc_woken) || t.kind != TaskKind::User {
            return false;
        }
        if self.allow_direct_reclaim() {
            return false;
        }
        self.stats.vm.pgscan_direct_throttle += 1;
        let t = &mut self.tasks[tid as usize];
        t.dr_throttle_since.get_or_insert(t.clock);
        t.state = TState::Blocked;
        // No timeout: any timer the task had armed is void.
        t.timer_token += 1;
        self.reclaim.pfmemalloc.waiters.push(tid);
        true
    }

    /// kswapd's `wake_up_all(&pgdat->pfmemalloc_wait)` once `allow_direct_reclaim` holds
    /// (in `balance_pgdat` after each priority, and in `prepare_kswapd_sleep`), at time `at`.
    pub(crate) fn wake_pfmemalloc_waiters(&mut self, at: u64) {
        if self.reclaim.pfmemalloc.waiters.is_empty() || !self.allow_direct_reclaim() {
            return;
        }
        for w in std::mem::take(&mut self.reclaim.pfmemalloc.waiters) {
            let t = &mut self.tasks[w as usize];
            if t.state == TState::Done {
                continue;
            }
            self.reclaim.pfmemalloc.wait_ns += at.saturating_sub(t.clock);
            t.pfmemalloc_woken = true;
            self.wake(w, at);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::memory::Alloc;
    use crate::engine::{test_machine, Sim, TState};

    /// A fresh machine with 64 anonymous pages on the LRU (reclaimable) and `free` free pages.
    fn machine(profile: &str, free: u64) -> Sim {
        let mut s = test_machine(profile);
        for _ in 0..64 {
            let f = s.take_frame();
            s.mem.frames[f as usize].flags |= crate::mm::PG_SWAPBACKED;
            s.lru_add(f);
        }
        while s.nr_free() > free {
            s.take_frame();
        }
        s
    }

    /// Give frames back until `free` are free.
    fn free_up_to(s: &mut Sim, free: u64) {
        let mut f = 0;
        while s.nr_free() < free {
            while s.mem.frames[f as usize].flags & crate::mm::PG_LRU != 0 || s.mem.frames[f as usize].flags & crate::mm::PG_INUSE == 0 {
                f += 1;
            }
            s.free_frame(f);
        }
    }

    /// Guards `throttle_direct_reclaim` (3.6+): at half the min watermark a global direct
    /// reclaimer counts `pgscan_direct_throttle`, wakes kswapd and sleeps without reclaiming;
    /// kswapd's check wakes it only once more than half is free, and the woken allocation goes
    /// straight into reclaim even where the free lists alone would now serve it.
    #[test]
    fn a_direct_reclaimer_at_half_the_min_watermark_sleeps_until_kswapd_restores_it() {
        let mut s = machine("6.x", 0);
        let half = s.mem.wm.min / 2;
        free_up_to(&mut s, half);
        assert!(matches!(s.alloc_page(0, 0), Alloc::Blocked), "free {} of min {}: throttled", s.nr_free(), s.mem.wm.min);
        assert_eq!((s.stats.vm.pgscan_direct_throttle, s.stats.vm.allocstall), (1, 0), "throttled before try_to_free_pages reclaims");
        assert_eq!(s.reclaim.pfmemalloc.waiters, vec![0]);
        assert_eq!(s.tasks[0].state, TState::Blocked);
        assert_ne!(s.tasks[s.kswapd as usize].state, TState::Sleeping, "allow_direct_reclaim wakes kswapd");
        let clock = s.tasks[0].clock;
        s.wake_pfmemalloc_waiters(clock + 1_000);
        assert_eq!(s.reclaim.pfmemalloc.waiters, vec![0], "still min/2 free: the waiter sleeps on");
        free_up_to(&mut s, half + 1);
        s.wake_pfmemalloc_waiters(clock + 5_000);
        assert!(s.reclaim.pfmemalloc.waiters.is_empty() && s.tasks[0].state != TState::Blocked, "kswapd's wake_up_all");
        assert_eq!(s.reclaim.pfmemalloc.wait_ns, 5_000);
        let high = s.mem.wm.high;
        free_up_to(&mut s, high + 1);
        assert!(matches!(s.alloc_page(0, 0), Alloc::Frame(_)));
        assert_eq!(s.stats.vm.allocstall, 1, "the woken allocation reclaims first");
        assert_eq!(s.stats.vm.pgscan_direct_throttle, 1, "and is not throttled twice");
    }

    /// No throttle before 3.6 (the 2.6.28 family), nor once kswapd has given up on the node
    /// (4.12+; the model's every era, see `allow_direct_reclaim`), nor above half the min
    /// watermark.
    #[test]
    fn no_throttle_on_2_6_28_above_min_half_or_after_kswapd_gave_up() {
        for profile in ["2.6.28", "2.6.32"] {
            let mut s = machine(profile, 0);
            let _ = s.alloc_page(0, 0);
            assert_eq!(s.stats.vm.pgscan_direct_throttle, 0, "{profile}");
            assert!(s.stats.vm.allocstall > 0, "{profile}: reclaims at once");
        }
        let mut s = machine("6.x", 0);
        s.reclaim.kswapd_failures = super::MAX_RECLAIM_RETRIES;
        let _ = s.alloc_page(0, 0);
        assert_eq!(s.stats.vm.pgscan_direct_throttle, 0, "kswapd_failures >= MAX_RECLAIM_RETRIES");
        for profile in ["3.14", "4.14", "6.x"] {
            let mut s = machine(profile, 0);
            let just_above = s.mem.wm.min / 2 + 1;
            free_up_to(&mut s, just_above);
            let _ = s.alloc_page(0, 0);
            assert_eq!(s.stats.vm.pgscan_direct_throttle, 0, "{profile}: more than min/2 free");
            let mut s = machine(profile, 0);
            let _ = s.alloc_page(0, 0);
            assert_eq!(s.stats.vm.pgscan_direct_throttle, 1, "{profile}: nothing free");
        }
    }
}
