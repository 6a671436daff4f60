//! `throttle_vm_writeout` (mm/page-writeback.c): the last thing every `shrink_zone` does
//! (2.6.28 mm/vmscan.c; `shrink_lruvec` in 3.x), for direct reclaimers and kswapd alike.
//!
//! ```text
//! for (;;) {
//!         get_dirty_limits(&background_thresh, &dirty_thresh, NULL, NULL);
//!         dirty_thresh += dirty_thresh / 10;      /* wheeee... */
//!         if (NR_UNSTABLE_NFS + NR_WRITEBACK <= dirty_thresh)
//!                 break;
//!         congestion_wait(WRITE, HZ/10);
//!         if ((gfp_mask & (__GFP_FS|__GFP_IO)) != (__GFP_FS|__GFP_IO))
//!                 break;
//! }
//! ```
//!
//! NR_WRITEBACK counts every page under writeback, swap-out writes included, and the threshold
//! is the era's dirty threshold (2.6.28: `vm_dirty_ratio` 10 % of free + all LRU pages,
//! `writeback/throttle.rs`) plus a tenth, "so they don't get DoS'ed by heavy writers". So while
//! more swap-out pages sit in the request queue than that, every reclaimer sleeps 100 ms at
//! the end of each zone pass — before it even checks whether the pass reclaimed enough — and
//! looks again; it is woken early when a congested queue clears. The allocations that reclaim
//! here (page faults: GFP_HIGHUSER_MOVABLE; socket buffers and kernel memory: GFP_KERNEL;
//! kswapd: GFP_KERNEL) all carry __GFP_FS|__GFP_IO, so they loop until the writeback has
//! drained below the threshold.
//!
//! Andrew Morton's "vm: pageout throttling" (2.6.9-rc1-mm3, 2004) added it; Michal Hocko's "mm,
//! vmscan: get rid of throttle_vm_writeout" (Aug 2016, 4.9) removed it. Modelled for the
//! 2.6.28 profile. The 3.14 profile's kernel has it too (with 3.14's dirtyable memory: free
//! above the reserve + file LRU); not yet modelled there.

use crate::config::Profile;
use crate::engine::Sim;

impl Sim {
    /// Does `throttle_vm_writeout` make the reclaimer at the end of a zone pass sleep now?
    pub(crate) fn vm_writeout_throttled(&self) -> bool {
        if self.profile != Profile::V2_6_28 || crate::config::era_2_6_32(&self.cfg.config.kernel.profile) {
            return false;
        }
        let (g, _) = self.dirty_domains();
        let limit = g.thresh + g.thresh / 10;
        self.io.nr_writeback > limit
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::test_machine;

    /// Guards the rule's threshold: pages under writeback (swap-out writes count) above the
    /// 2.6.28 dirty threshold plus a tenth, and only in the era that has it.
    #[test]
    fn writeback_above_a_tenth_over_the_dirty_threshold_throttles_2_6_28_reclaim() {
        let mut s = test_machine("2.6.28");
        let (g, _) = s.dirty_domains();
        assert!(g.thresh > 0);
        let limit = g.thresh + g.thresh / 10;
        s.io.nr_writeback = limit;
        assert!(!s.vm_writeout_throttled(), "at the boosted threshold: no nap");
        s.io.nr_writeback = limit + 1;
        assert!(s.vm_writeout_throttled(), "above it: congestion_wait");
        for profile in ["4.14", "6.x"] {
            let mut s = test_machine(profile);
            s.io.nr_writeback = s.dirty_domains().0.thresh * 4;
            assert!(!s.vm_writeout_throttled(), "{profile}: removed in 4.9");
        }
    }
}
