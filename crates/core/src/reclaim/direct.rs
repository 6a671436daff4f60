//! Direct reclaim: `try_to_free_pages` (global) and `try_to_free_mem_cgroup_pages` (memcg
//! limit), the priority loop of `do_try_to_free_pages` (kernel-algorithms.md §3.5), run in the
//! allocating task's context.
//!
//! 2.6.28's loop sleeps: after a pass below DEF_PRIORITY − 2 that scanned anything it "takes a
//! nap, waits for some writeback to complete" in `congestion_wait(WRITE, HZ/10)` (2.6.28
//! mm/vmscan.c `do_try_to_free_pages`). The task gives its CPU up for the nap; the loop's state
//! (priority, pages reclaimed so far) is kept in the task (`DirectReclaimCont`) and the loop
//! continues at the next priority when the task wakes and retries its allocation. Other tasks
//! reclaim meanwhile: this is how thousands of processes end up reclaiming at the same time
//! (seed 001, "if 10000 thread call reclaim at that time, system reclaim 32*10000 pages").
//!
//! A sleep *inside* a pass (for a request, in too_many_isolated, on a folio's writeback, in
//! 3.x/4.x's writeback stall) keeps what is left of the pass as well ([`PassLeft`]): the
//! kernel's sleeper returns into the same `shrink_zone` / `shrink_lruvec` loop (§3.8), so
//! the woken task goes on with that pass's `nr[]` rather than a new `get_scan_count`.

use super::writeback_stall::WritebackWait;
use super::{PassLeft, ScanControl, DEF_PRIORITY, SWAP_CLUSTER_MAX};
use crate::config::Profile;
use crate::engine::{DevRef, Sim};

/// A 2.6.28 direct reclaim asleep in `congestion_wait`: where its priority loop resumes.
#[derive(Clone, Debug)]
pub struct DirectReclaimCont {
    /// Limit reclaim of the memory cgroup (else global).
    pub memcg: bool,
    /// The next priority to scan at (−1: the loop is over, only its end remains).
    priority: i32,
    nr_reclaimed: u64,
    /// `sc->all_unreclaimable` of the last pass (2.6.28 `shrink_zones`).
    all_unreclaimable: bool,
    /// Asleep in too_many_isolated for this list type (anon: true): the check on waking.
    isolated_recheck: Option<bool>,
    /// 6.x: the loop was in its `force_deactivate` retry.
    force_deactivate: bool,
    /// Asleep in `throttle_vm_writeout` after a zone pass that scanned this many pages: on
    /// waking the throttle is checked again, and the pass is not run again (`vm_writeout.rs`).
    vm_writeout: Option<u64>,
    /// Asleep inside a pass: what is left of it, and what it had scanned (`sc->nr_scanned`,
    /// which the nap after the pass reads). The pass goes on from there on waking.
    pass_left: Option<(PassLeft, u64)>,
}

/// Why a direct reclaim sleeps in the middle of a pass.
enum MidPassStall {
    /// For a free request on this device's full queue.
    Request(DevRef),
    /// 3.x / 4.x `shrink_inactive_list`'s writeback stall.
    Writeback(WritebackWait),
    /// Legacy memcg `shrink_folio_list`: `folio_wait_writeback` on this folio (§3.10 3(c)).
    FolioWriteback(u32),
}

/// One call's priority loop: its scan control and what the passes found.
struct DirectRun {
    sc: ScanControl,
    /// `sc->all_unreclaimable` of the last pass (2.6.28 `shrink_zones`).
    all_unreclaimable: bool,
    /// Woken in `throttle_vm_writeout` after a pass that scanned this many pages.
    vm_writeout: Option<u64>,
    /// The task's clock when the call began (the stall is measured from it).
    start: u64,
}

/// How one priority's zone pass of a direct reclaimer ended.
enum Pass {
    /// Asleep inside the pass (the task is parked).
    Asleep,
    /// A caller that cannot sleep met a full request queue.
    GaveUp,
    /// The pass ended; false when shrink_zones skipped the zone.
    Ran(bool),
}

/// What a direct-reclaim call did.
pub(crate) enum DirectReclaim {
    /// The loop ended: pages reclaimed (2.6.28: its `did_some_progress`, see `direct_reclaim`).
    Done(u64),
    /// The task sleeps (2.6.28's `congestion_wait` between passes, in too_many_isolated, for
    /// a request, or in the era's writeback stall);
    /// its allocation is retried, and the loop resumed, when it wakes.
    Napping,
}

impl Sim {
    /// Reclaim at least `SWAP_CLUSTER_MAX` pages for task `tid` on `cpu`, lowering the priority
    /// until it does. Charges its CPU to the task, records the stall. `may_nap`: the caller
    /// can sleep (not a page-cache readahead page or a readahead page's memory-cgroup charge,
    /// which are dropped rather than waited for).
    pub(crate) fn direct_reclaim(&mut self, tid: u32, cpu: usize, memcg: bool, may_nap: bool) -> DirectReclaim {
        self.tasks[tid as usize].touch_kinds.mark(crate::stats::touch_kinds::TouchKind::DirectReclaim);
        let mut run = self.resume_direct_reclaim(tid, cpu, memcg, may_nap);
        // A batch this task held isolated across a full request queue is finished with.
        self.reclaim.isolation.release(tid, run.start);
        loop {
            if self.direct_priorities(tid, &mut run, may_nap) {
                return DirectReclaim::Napping;
            }
            self.reclaim.current = None;
            self.reclaim_cycle_end();
            if !self.retry_forcing_deactivation(&mut run.sc, memcg) {
                break;
            }
        }
        self.finish_direct_reclaim(tid, &run, memcg)
    }

    /// The loop's state: fresh (an allocstall), or as a nap left it in the task.
    fn resume_direct_reclaim(&mut self, tid: u32, cpu: usize, memcg: bool, may_nap: bool) -> DirectRun {
        let cont = self.tasks[tid as usize].dr_cont.take();
        if cont.is_none() && !memcg {
            self.stats.vm.allocstall += 1;
            self.stats.vm.allocstall_normal += 1;
        }
        let start = self.tasks[tid as usize].clock;
        let mut run = DirectRun { sc: ScanControl::new(SWAP_CLUSTER_MAX, false, memcg, cpu), all_unreclaimable: false, vm_writeout: None, start };
        run.sc.may_sleep = may_nap;
        run.sc.start_clock = start;
        if let Some(c) = cont {
            run.sc.priority = c.priority;
            run.sc.nr_reclaimed = c.nr_reclaimed;
            run.sc.isolated_recheck = c.isolated_recheck;
            run.sc.force_deactivate = c.force_deactivate;
            run.all_unreclaimable = c.all_unreclaimable;
            run.vm_writeout = c.vm_writeout;
            if let Some((left, scanned)) = c.pass_left {
                run.sc.pass_left = Some(left);
                run.sc.nr_scanned = scanned;
            }
        }
        run
    }

    /// Priorities from the current one down to 0 (§3.5), until enough is reclaimed or a
    /// caller that cannot sleep gives up. True when the task fell asleep (it is parked).
    fn direct_priorities(&mut self, tid: u32, run: &mut DirectRun, may_nap: bool) -> bool {
        self.reclaim.current = Some(tid);
        while run.sc.priority >= 0 {
            let passed = match run.vm_writeout.take() {
                // Woken in throttle_vm_writeout: this priority's zone pass is done.
                Some(scanned) => {
                    run.sc.nr_scanned = scanned;
                    true
                }
                None => match self.direct_pass(tid, &mut run.sc, &mut run.all_unreclaimable, run.start) {
                    Pass::Asleep => return true,
                    Pass::GaveUp => return false,
                    Pass::Ran(ran) => ran,
                },
            };
            if passed && may_nap && self.vm_writeout_throttled() {
                self.vm_writeout_nap(tid, &run.sc, run.all_unreclaimable);
                return true;
            }
            self.consider_reclaim_throttle(&mut run.sc);
            let done = run.sc.nr_reclaimed >= run.sc.nr_to_reclaim;
            if let Some(wait) = run.sc.writeback_wait.take().filter(|_| may_nap) {
                // 6.x: throttled after the node pass; the loop goes on (or ends) when it wakes.
                run.sc.priority = if done { -1 } else { run.sc.priority - 1 };
                self.reclaim.current = None;
                self.park_direct_reclaim(tid, &run.sc, run.all_unreclaimable, None);
                self.writeback_sleep(tid, wait);
                return true;
            }
            if done {
                return false;
            }
            let nap = self.profile == Profile::V2_6_28 && run.sc.nr_scanned > 0 && run.sc.priority < DEF_PRIORITY - 2;
            run.sc.priority -= 1;
            if nap && may_nap {
                // 2.6.28: congestion_wait(WRITE, HZ/10) between priorities.
                self.reclaim.current = None;
                self.park_direct_reclaim(tid, &run.sc, run.all_unreclaimable, None);
                let timeout = self.hz_div_10_ns();
                self.reclaim.direct_reclaim_naps += 1;
                self.congestion_wait(tid, timeout);
                return true;
            }
        }
        false
    }

    /// 6.x (`do_try_to_free_pages`' `skipped_deactivate` retry): the stale inactive:active
    /// estimates kept the active lists; nothing was freed, so go again deactivating them
    /// regardless (`force_deactivate`). Older kernels had no such retry. True to go again.
    fn retry_forcing_deactivation(&mut self, sc: &mut ScanControl, memcg: bool) -> bool {
        let retry = self.profile >= Profile::V6 && sc.nr_reclaimed == 0 && sc.skipped_deactivate && !sc.force_deactivate && sc.priority < 0;
        if !retry {
            return false;
        }
        sc.priority = DEF_PRIORITY;
        sc.force_deactivate = true;
        sc.skipped_deactivate = false;
        if !memcg {
            self.stats.vm.allocstall += 1;
            self.stats.vm.allocstall_normal += 1;
        }
        true
    }

    /// The loop is over: account the stall and say what the allocator sees.
    fn finish_direct_reclaim(&mut self, tid: u32, run: &DirectRun, memcg: bool) -> DirectReclaim {
        let sc = &run.sc;
        self.account_direct_reclaim(tid, sc);
        if sc.nr_reclaimed > 0 {
            self.reclaim.kswapd_failures = 0;
        }
        let exhausted = sc.nr_reclaimed < sc.nr_to_reclaim && !memcg;
        if self.profile == Profile::V2_6_28 && exhausted && crate::config::era_2_6_32(&self.cfg.config.kernel.profile) {
            // 2.6.32 `do_try_to_free_pages` after priority 0 without SWAP_CLUSTER_MAX pages:
            // `ret` is 0 unless `!sc->all_unreclaimable`, and then `ret = sc->nr_reclaimed`
            // (mm/vmscan.c of a 2.6.32 tree, zybsyzlz/linux-2.6.32; kernel-algorithms.md §3.5).
            // A loop that freed nothing is no progress: the allocator goes to
            // `__alloc_pages_may_oom`, not to its HZ/50 nap and another reclaim.
            return DirectReclaim::Done(if run.all_unreclaimable { 0 } else { sc.nr_reclaimed });
        }
        if self.profile == Profile::V2_6_28 && exhausted && !run.all_unreclaimable {
            // 2.6.28: "top priority shrink_zones still had more to do? don't OOM, then":
            // `ret = 1`, progress whatever was freed.
            return DirectReclaim::Done(sc.nr_reclaimed.max(1));
        }
        DirectReclaim::Done(sc.nr_reclaimed)
    }

    /// One priority's `shrink_zones` for a direct reclaimer, and the sleeps inside it
    /// (too_many_isolated, a full request queue, 3.x/4.x's writeback stalls): the task is then
    /// parked and put to sleep, and this priority goes on when it wakes.
    fn direct_pass(&mut self, tid: u32, sc: &mut ScanControl, all_unreclaimable: &mut bool, start: u64) -> Pass {
        if sc.priority == 0 {
            self.disable_swap_token();
        }
        if sc.pass_left.is_none() {
            sc.nr_scanned = 0;
        }
        // Writes that completed while we scanned have rotated their pages to the tail.
        self.complete_io_until(start + sc.cost.total());
        *all_unreclaimable = self.shrink_zones(sc);
        if let Some((anon, wait)) = sc.isolated_stall {
            self.reclaim.current = None;
            self.park_direct_reclaim(tid, sc, *all_unreclaimable, Some(anon));
            self.isolated_sleep(tid, wait);
            return Pass::Asleep;
        }
        if let Some(stall) = self.mid_pass_stall(sc) {
            self.reclaim.current = None;
            self.park_direct_reclaim(tid, sc, *all_unreclaimable, None);
            match stall {
                MidPassStall::Request(dev) => self.wait_for_request(tid, dev),
                MidPassStall::Writeback(wait) => self.writeback_sleep(tid, wait),
                MidPassStall::FolioWriteback(f) => {
                    self.reclaim.folio_writeback_waits += 1;
                    self.wait_on_writeback(tid, f);
                }
            }
            return Pass::Asleep;
        }
        if sc.queue_full.is_some() {
            return Pass::GaveUp;
        }
        // A zone shrink_zones skipped (all-unreclaimable) ran no shrink_zone.
        Pass::Ran(!*all_unreclaimable)
    }

    /// 2.6.28's `throttle_vm_writeout` at the end of `shrink_zone`, before the loop looks at
    /// what the pass reclaimed: `congestion_wait(WRITE, HZ/10)`, then the check again
    /// (`vm_writeout.rs`); the pass is not run again.
    fn vm_writeout_nap(&mut self, tid: u32, sc: &ScanControl, all_unreclaimable: bool) {
        self.reclaim.current = None;
        self.park_direct_reclaim(tid, sc, all_unreclaimable, None);
        if let Some(c) = self.tasks[tid as usize].dr_cont.as_mut() {
            c.vm_writeout = Some(sc.nr_scanned);
        }
        self.reclaim.vm_writeout_naps += 1;
        let timeout = self.hz_div_10_ns();
        self.congestion_wait(tid, timeout);
    }

    /// `disable_swap_token`: reclaim at priority 0 takes the token from its holder.
    pub(crate) fn disable_swap_token(&mut self) {
        if let Some(token) = &mut self.swap.token {
            token.disable();
        }
    }

    /// 2.6.28 `shrink_zones`: a zone kswapd marked all-unreclaimable is skipped below
    /// DEF_PRIORITY ("let kswapd poll it"); returns `sc->all_unreclaimable`.
    /// A pass resumed after a sleep inside it was past that test already.
    fn shrink_zones(&mut self, sc: &mut ScanControl) -> bool {
        let resumed = sc.pass_left.is_some();
        if self.profile == Profile::V2_6_28 && self.reclaim.all_unreclaimable && sc.priority != DEF_PRIORITY && !sc.memcg && !resumed {
            return true;
        }
        self.shrink_node(sc);
        false
    }

    /// A direct reclaim about to sleep inside its priority loop: charge the CPU spent so far
    /// and keep the loop's state in the task; the caller puts it to sleep.
    fn park_direct_reclaim(&mut self, tid: u32, sc: &ScanControl, all_unreclaimable: bool, isolated_recheck: Option<bool>) {
        self.stats.direct_cpu.add(&sc.cost);
        let cpu = sc.cost.total();
        let t = &mut self.tasks[tid as usize];
        t.clock += cpu;
        let since = t.clock - cpu;
        t.dr_throttle_since.get_or_insert(since);
        let pass_left = sc.pass_left.map(|left| (left, sc.nr_scanned));
        t.dr_cont = Some(DirectReclaimCont { memcg: sc.memcg, priority: sc.priority, nr_reclaimed: sc.nr_reclaimed, all_unreclaimable, isolated_recheck, force_deactivate: sc.force_deactivate, vm_writeout: None, pass_left });
    }

    /// A pass that ended in a sleep inside `shrink_inactive_list` the caller can take (not a
    /// readahead page's allocation): for a free request, or 3.x/4.x's writeback stall.
    fn mid_pass_stall(&mut self, sc: &mut ScanControl) -> Option<MidPassStall> {
        if !sc.may_sleep {
            sc.writeback_wait = None;
            return None;
        }
        if let Some(dev) = sc.queue_full {
            sc.writeback_wait = None;
            return Some(MidPassStall::Request(dev));
        }
        if let Some(f) = sc.folio_wait.take() {
            sc.writeback_wait = None;
            return Some(MidPassStall::FolioWriteback(f));
        }
        let wait = sc.writeback_wait.filter(|w| w.mid_pass())?;
        sc.writeback_wait = None;
        Some(MidPassStall::Writeback(wait))
    }

    /// Charge a direct-reclaim call to its task: CPU time, the stall (including naps and a
    /// writeback throttle that preceded it) and the pages it got.
    fn account_direct_reclaim(&mut self, tid: u32, sc: &ScanControl) {
        self.stats.direct_cpu.add(&sc.cost);
        let t = &mut self.tasks[tid as usize];
        t.clock += sc.cost.total();
        let mut stall = sc.cost.total();
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

#[cfg(test)]
mod tests {
    use super::DirectReclaim;
    use crate::engine::test_machine;

    /// What a direct reclaim on a fresh machine with `pages` anonymous pages on the LRU reports
    /// (so few that no priority's scan credit, 2.6.28's "+ 1" included, reaches a batch of
    /// SWAP_CLUSTER_MAX: the loop runs to priority 0 and scans nothing).
    fn exhausted_reclaim(profile: &str, pages: usize) -> u64 {
        let mut s = test_machine(profile);
        for _ in 0..pages {
            let f = s.take_frame();
            s.mem.frames[f as usize].flags |= crate::mm::PG_SWAPBACKED;
            s.lru_add(f);
        }
        match s.direct_reclaim(0, 0, false, true) {
            DirectReclaim::Done(got) => got,
            DirectReclaim::Napping => panic!("{profile}: a loop that scans nothing takes no HZ/10 nap"),
        }
    }

    /// `do_try_to_free_pages` after priority 0 without SWAP_CLUSTER_MAX pages: 2.6.28 returns
    /// 1 ("don't OOM, then"), so its allocator naps and reclaims again; 2.6.32 returns
    /// `sc->nr_reclaimed`, so a loop that freed nothing sends the allocator to its OOM path.
    #[test]
    fn a_2_6_32_direct_reclaim_that_frees_nothing_reports_no_progress() {
        assert_eq!(exhausted_reclaim("2.6.32", 4), 0, "2.6.32: ret = sc->nr_reclaimed");
        assert_eq!(exhausted_reclaim("2.6.28", 4), 1, "2.6.28: ret = 1");
    }
}
