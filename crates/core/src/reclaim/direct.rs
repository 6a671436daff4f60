//! Direct reclaim: `try_to_free_pages` (global) and `try_to_free_mem_cgroup_pages` (memcg
//! limit), the priority loop of `do_try_to_free_pages` (kernel-algorithms.md §3.5), run in the
//! allocating task's context.

use super::{ScanControl, DEF_PRIORITY, SWAP_CLUSTER_MAX};
use crate::config::Profile;
use crate::engine::Sim;

impl Sim {
    /// Reclaim at least `SWAP_CLUSTER_MAX` pages for task `tid` on `cpu`, lowering the priority
    /// until it does. Charges its CPU to the task, records the stall; returns pages reclaimed.
    pub(crate) fn direct_reclaim(&mut self, tid: u32, cpu: usize, memcg: bool) -> u64 {
        if !memcg {
            self.stats.vm.allocstall += 1;
            self.stats.vm.allocstall_normal += 1;
        }
        let mut sc = ScanControl::new(SWAP_CLUSTER_MAX, false, memcg, cpu);
        let start = self.tasks[tid as usize].clock;
        sc.start_clock = start;
        loop {
            sc.nr_scanned = 0;
            sc.nr_taken = 0;
            sc.nr_writeback = 0;
            // Writes that completed while we scanned have rotated their pages to the tail.
            self.complete_io_until(start + sc.elapsed());
            self.shrink_node(&mut sc);
            if sc.nr_reclaimed >= sc.nr_to_reclaim {
                break;
            }
            if self.direct_reclaim_should_stop(&mut sc) {
                break;
            }
            sc.priority -= 1;
            if sc.priority < 0 {
                break;
            }
        }
        self.reclaim_cycle_end();
        self.account_direct_reclaim(tid, &sc);
        if sc.nr_reclaimed > 0 {
            self.reclaim.kswapd_failures = 0;
        }
        sc.nr_reclaimed
    }

    /// What the era does after a pass that did not reach the goal: true to give up this call.
    fn direct_reclaim_should_stop(&mut self, sc: &mut ScanControl) -> bool {
        if self.profile == Profile::V2_6_28 {
            // 2.6.28 do_try_to_free_pages: "Take a nap, wait for some writeback to
            // complete": congestion_wait(WRITE, HZ/10) after every pass below
            // DEF_PRIORITY - 2 that scanned anything; it sleeps the whole timeout unless a
            // congested queue drains. No writeback-aware early exit existed yet.
            if sc.nr_scanned > 0 && sc.priority < DEF_PRIORITY - 2 {
                sc.slept_ns += self.hz_div_10_ns();
            }
            return false;
        }
        // Everything this pass took is under writeback (or its queue is congested): the
        // kernel sleeps here (wait_iff_congested / reclaim_throttle, HZ/10) instead of scanning
        // ever larger fractions; the caller throttles us until writes complete.
        sc.writeback_stall || (sc.nr_reclaimed == 0 && sc.nr_taken > 0 && (sc.nr_writeback + sc.nr_congested) * 2 >= sc.nr_taken)
    }

    /// Charge a direct-reclaim call to its task: CPU time, the stall (including a writeback
    /// throttle that preceded it) and the pages it got.
    fn account_direct_reclaim(&mut self, tid: u32, sc: &ScanControl) {
        self.stats.direct_cpu.add(&sc.cost);
        self.iowait_held_sleep(tid, sc.slept_ns);
        let t = &mut self.tasks[tid as usize];
        t.clock += sc.elapsed();
        let mut stall = sc.elapsed();
        if let Some(since) = t.dr_throttle_since.take() {
            stall = t.clock.saturating_sub(since);
        }
        t.dr_calls += 1;
        t.dr_stall_ns += stall;
        t.dr_pages += sc.nr_reclaimed;
        t.dr_stall_hist.record(stall);
        t.dr_pages_hist.record(sc.nr_reclaimed);
    }
}
