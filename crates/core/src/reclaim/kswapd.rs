//! kswapd (kernel-algorithms.md §3.4): woken by the allocator below the low watermark, it runs
//! `balance_pgdat`'s priority loop until the node is above the high watermark, then naps
//! HZ/10 and sleeps until woken. It is a kernel thread: one step is one `shrink_node` pass
//! at the current priority, so other tasks run between passes.
//!
//! Two eras:
//! * 2.6.35+ (`step_modern`): the loop of §3.4; after it, `kswapd_try_to_sleep` naps HZ/10
//!   and re-checks the watermark when the nap ends: a node that fell below high again counts
//!   `kswapd_high_wmark_hit_quickly` and kswapd goes straight back to work (so it resumes
//!   between low and high, without waiting for an allocation to fail at low); an allocation
//!   that wakes it during the nap counts `kswapd_low_wmark_hit_quickly`.
//! * 2.6.28 (`step_2_6_28`, mm/vmscan.c `balance_pgdat` of that release): the run restarts at
//!   DEF_PRIORITY (`loop_again`) as soon as it has reclaimed SWAP_CLUSTER_MAX pages, so that
//!   kswapd "doesn't build up large priorities ... when it is freeing in parallel with
//!   allocators"; after a pass below DEF_PRIORITY − 2 that scanned anything it naps in
//!   `congestion_wait(WRITE, HZ/10)`; it never gives up on a node (no `kswapd_failures`) but
//!   marks it all-unreclaimable once it has scanned six times its LRU pages without a page
//!   being freed; it writes even to a congested queue (PF_SWAPWRITE, `may_write_to_queue`);
//!   there is no `reclaim_throttle`, and no nap before sleeping (kswapd sleeps on
//!   `kswapd_wait` as soon as every zone is above high).
//!
//! 2.6.32 (seed 002's guest, `era_2_6_32`): a zone pass is not one step. kswapd's
//! `cond_resched` in `shrink_page_list` lets a task whose sleep ended preempt it (CFS wake-up
//! preemption), and the end of its slice with another task waiting (`check_preempt_tick`), so
//! a pass stops after the SWAP_CLUSTER_MAX round in which kswapd's clock passes the next event
//! or that slice end (`kswapd_yield_at`), keeps what it had left to scan and finishes in the
//! next step. What depends on it: the swap token that the priority-0 round drops is taken back
//! by the program at its first swap-in after its nap, and the rest of the pass finds the
//! program's pages referenced again whenever the program is inside a fault (docs/model.md
//! "Seed 002 in the model"). The other eras keep one pass per step: the
//! preemption point is as old as kswapd, but their tables and goldens were made without it and
//! moving them is separate work.

use super::writeback_stall::WritebackWait;
use super::{PassLeft, ScanControl, DEF_PRIORITY, MAX_RECLAIM_RETRIES, SWAP_CLUSTER_MAX};
use crate::config::Profile;
use crate::engine::{KernelThread, KthreadStep, Sim, TState};

/// kswapd's progress through one `balance_pgdat` run, and its sleep.
#[derive(Clone, Debug, Default)]
pub struct KswapdState {
    /// Inside balance_pgdat (false: asleep or napping).
    pub active: bool,
    pub priority: i32,
    /// Pages reclaimed in this balance_pgdat run.
    pub reclaimed: u64,
    /// Sleeping in reclaim_throttle(WRITEBACK).
    pub throttled: bool,
    /// In the HZ/10 nap of `kswapd_try_to_sleep` (2.6.35+), on `kswapd_wait`.
    pub napping: bool,
    /// In `congestion_wait`: 2.6.28's `congestion_wait(WRITE, HZ/10)` inside balance_pgdat,
    /// 3.x/4.x's in shrink_inactive_list.
    pub congestion_wait: bool,
    /// Sleeps in the era's writeback stall (`writeback_stall.rs`).
    pub writeback_sleeps: u64,
    /// Asleep for a free request on this device's full queue.
    pub(crate) request_wait: Option<crate::engine::DevRef>,
    /// Pages scanned in this 2.6.28 balance_pgdat run (`total_scanned`).
    pub total_scanned: u64,
    /// What is left of the pass kswapd slept in (for a request, in 3.x/4.x's writeback stall)
    /// or yielded in: its next step goes on with it (`PassLeft`), and what the pass had
    /// scanned and reclaimed before (`kswapd_shrink_node`'s `sc->nr_scanned`, the priority
    /// loop's `nr_reclaimed` test).
    pub(crate) pass_left: Option<(PassLeft, u64, u64)>,
    /// Steps that went on with such a pass instead of beginning a new one.
    pub pass_resumes: u64,
    /// 2.6.32 diagnostics: passes that yielded; steps that resumed a pass with the swap token
    /// held again (its holder ran in between), and the pages those steps reclaimed.
    pub pass_yields: u64,
    pub resumed_with_token: u64,
    pub reclaimed_resumed_with_token: u64,
    /// 2.6.32: the longest step kswapd ran while another task waited for the CPU.
    pub longest_step_with_waiter_ns: u64,
    /// 2.6.28/2.6.32 diagnostics: `congestion_wait(HZ/10)` naps of `balance_pgdat` taken with
    /// the zone at or below its min watermark (see `step_2_6_28`).
    pub naps_below_min: u64,
    /// 2.6.28/2.6.32: all of `balance_pgdat`'s `congestion_wait(HZ/10)` naps between priorities.
    pub naps: u64,
    /// 2.6.28: asleep in `throttle_vm_writeout` at the end of a zone pass (`vm_writeout.rs`);
    /// the rest of the priority loop's iteration comes when the throttle lets go.
    pub vm_writeout: bool,
}

/// The kswapd kernel thread of the one node.
pub struct Kswapd;

impl KernelThread for Kswapd {
    fn name(&self) -> &'static str {
        "kswapd0"
    }

    /// One iteration of `balance_pgdat`'s priority loop.
    fn step(&mut self, sim: &mut Sim, tid: u32) -> KthreadStep {
        if sim.profile == Profile::V2_6_28 {
            step_2_6_28(sim, tid)
        } else {
            step_modern(sim, tid)
        }
    }

    /// A timer of kswapd fired while it slept: the end of the writeback throttle, of 2.6.28's
    /// congestion_wait, or of the nap before sleeping (which re-checks the watermark).
    fn timer(&mut self, sim: &mut Sim, tid: u32) -> bool {
        let ks = &mut sim.reclaim.kswapd;
        if std::mem::take(&mut ks.throttled) || std::mem::take(&mut ks.congestion_wait) {
            return true;
        }
        if std::mem::take(&mut ks.napping) {
            if !sim.pgdat_balanced() && sim.reclaim.kswapd_failures < MAX_RECLAIM_RETRIES {
                sim.stats.vm.kswapd_high_wmark_hit_quickly += 1;
                return true;
            }
            // The node stayed balanced through the nap: sleep until the next wakeup_kswapd.
            sim.tasks[tid as usize].state = TState::Sleeping;
        }
        false
    }
}

fn running_cpu(sim: &Sim, tid: u32) -> usize {
    match sim.tasks[tid as usize].state {
        TState::Running(c) => c as usize,
        _ => unreachable!("kswapd steps only on a CPU"),
    }
}

/// The start of a `balance_pgdat` run (both eras): counted in pageoutrun, from DEF_PRIORITY.
fn begin_balance_pgdat(sim: &mut Sim) {
    let ks = &mut sim.reclaim.kswapd;
    if !ks.active {
        sim.stats.vm.pageoutrun += 1;
        ks.active = true;
        ks.priority = DEF_PRIORITY;
        ks.reclaimed = 0;
        ks.total_scanned = 0;
    }
}

/// One pass of the 2.6.35+ `balance_pgdat`.
fn step_modern(sim: &mut Sim, tid: u32) -> KthreadStep {
    begin_balance_pgdat(sim);
    // A pass kswapd slept in goes on: the balance check comes before a pass, not inside it.
    let resume = sim.reclaim.kswapd.pass_left.take();
    sim.reclaim.kswapd.pass_resumes += resume.is_some() as u64;
    if resume.is_none() && (sim.pgdat_balanced() || sim.reclaim.kswapd_failures >= MAX_RECLAIM_RETRIES) {
        // prepare_kswapd_sleep: nap HZ/10 on kswapd_wait, re-check, then sleep until woken
        // (clear_pgdat_congested clears PGDAT_DIRTY).
        sim.clear_pgdat_congested();
        sim.reclaim_cycle_end();
        let at = sim.tasks[tid as usize].clock;
        sim.wake_pfmemalloc_waiters(at);
        let nap = sim.hz_div_10_ns();
        let ks = &mut sim.reclaim.kswapd;
        ks.active = false;
        ks.napping = true;
        return KthreadStep::SleepUntil(at + nap);
    }
    let cpu = running_cpu(sim, tid);
    let mut sc = ScanControl::new(sim.mem.wm.high.max(SWAP_CLUSTER_MAX), true, false, cpu);
    sc.priority = sim.reclaim.kswapd.priority;
    sc.start_clock = sim.tasks[tid as usize].clock;
    let (before_scanned, before_reclaimed) = match resume {
        Some((left, scanned, reclaimed)) => {
            sc.pass_left = Some(left);
            (scanned, reclaimed)
        }
        None => {
            sim.kswapd_age(&mut sc);
            (0, 0)
        }
    };
    // lru_gen_age_node's out_of_memory(): a kill frees memory and the next step rechecks;
    // with no task to kill, kswapd reclaims as usual.
    if sc.oom && sim.oom_kill().is_some() {
        sim.stats.kswapd_cpu.add(&sc.cost);
        sim.tasks[tid as usize].clock += sc.cost.total().max(1);
        return KthreadStep::Continue;
    }
    sim.shrink_node(&mut sc);
    let ks = &mut sim.reclaim.kswapd;
    ks.reclaimed += sc.nr_reclaimed;
    let (scanned, got) = (before_scanned + sc.nr_scanned, before_reclaimed + sc.nr_reclaimed);
    if let Some(left) = sc.pass_left.take() {
        ks.pass_left = Some((left, scanned, got));
    }
    let scanned_enough = scanned.max(got) >= sc.nr_to_reclaim;
    let stalled = sc.pass_stalled();
    if (!scanned_enough || got == 0) && !stalled {
        ks.priority -= 1;
    }
    // A step always takes some time, so that kswapd cannot loop at one instant.
    sim.stats.kswapd_cpu.add(&sc.cost);
    sim.tasks[tid as usize].clock += sc.cost.total().max(1);
    // balance_pgdat: "If the low watermark is met there is no need for processes to be
    // throttled on pfmemalloc_wait as they should not be able to safely make forward
    // progress. Wake them" (pfmemalloc.rs).
    let at = sim.tasks[tid as usize].clock;
    sim.wake_pfmemalloc_waiters(at);
    let ks = &mut sim.reclaim.kswapd;
    if ks.priority < 1 {
        // End of one balance_pgdat run.
        if ks.reclaimed == 0 {
            sim.reclaim.kswapd_failures += 1;
        }
        sim.reclaim.kswapd.active = false;
    }
    kswapd_stall(sim, tid, &sc)
}

/// kswapd's sleep at the end of a step, if the pass ended in one (`writeback_stall.rs`): for
/// a free request on a full queue (until one of that device's requests completes), 3.x/4.x's
/// `congestion_wait(BLK_RW_ASYNC, HZ/10)` on `nr_immediate`, 6.x's
/// `reclaim_throttle(WRITEBACK)`; the pass goes on at the same priority after the first two.
fn kswapd_stall(sim: &mut Sim, tid: u32, sc: &ScanControl) -> KthreadStep {
    if let Some(dev) = sc.queue_full {
        sim.reclaim.kswapd.request_wait = Some(dev);
        sim.io.request_sleeps += 1;
        return KthreadStep::Block;
    }
    let Some(wait) = sc.writeback_wait else { return KthreadStep::Continue };
    sim.reclaim.kswapd.writeback_sleeps += 1;
    let timeout = sim.hz_div_10_ns();
    match wait {
        WritebackWait::ThrottleWriteback => {
            sim.note_writeback_throttle();
            sim.reclaim.kswapd.throttled = true;
        }
        WritebackWait::CongestionWait => sim.reclaim.kswapd.congestion_wait = true,
        _ => unreachable!("kswapd is exempt from wait_iff_congested and the CONGESTED/NOPROGRESS throttles"),
    }
    KthreadStep::SleepUntil(sim.tasks[tid as usize].clock + timeout)
}

/// One zone pass of 2.6.28's `balance_pgdat` (see the module doc).
fn step_2_6_28(sim: &mut Sim, tid: u32) -> KthreadStep {
    begin_balance_pgdat(sim);
    if std::mem::take(&mut sim.reclaim.kswapd.vm_writeout) {
        // Woken in throttle_vm_writeout: the zone pass is done; check again, then go on.
        return after_zone_pass_2_6_28(sim, tid);
    }
    // A pass that yielded goes on where it stopped: the watermark and unreclaimable checks
    // come before a zone pass, not inside it.
    let resume = sim.reclaim.kswapd.pass_left.take();
    sim.reclaim.kswapd.pass_resumes += resume.is_some() as u64;
    let resumed = resume.is_some();
    if !resumed && sim.pgdat_balanced() {
        // all_zones_ok: balance_pgdat returns and kswapd sleeps on kswapd_wait.
        sim.reclaim_cycle_end();
        sim.reclaim.kswapd.active = false;
        return KthreadStep::Sleep;
    }
    let cpu = running_cpu(sim, tid);
    let mut sc = ScanControl::new(sim.mem.wm.high.max(SWAP_CLUSTER_MAX), true, false, cpu);
    sc.priority = sim.reclaim.kswapd.priority;
    sc.start_clock = sim.tasks[tid as usize].clock;
    if crate::config::era_2_6_32(&sim.cfg.config.kernel.profile) {
        sc.yield_at = Some(kswapd_yield_at(sim, tid));
    }
    sc.pass_left = resume.map(|(left, _, _)| left);
    if sc.priority == 0 && !resumed {
        // "The swap token gets in the way of swapout...": once, where the priority-0 round
        // begins; a holder that ran in between has taken it back at its next swap-in.
        sim.disable_swap_token();
    }
    let waiter = !sim.sched.runq.is_empty();
    let token_back = resumed && sim.swap.token.as_ref().is_some_and(|t| t.holder().is_some());
    let unreclaimable = !resumed && sim.reclaim.all_unreclaimable && sc.priority != DEF_PRIORITY;
    if !unreclaimable {
        if !resumed {
            sim.kswapd_age(&mut sc);
        }
        sim.shrink_node(&mut sc);
        let lru: u64 = sim.reclaim.lru_sizes().iter().sum();
        if sim.reclaim.pages_scanned >= lru * 6 {
            sim.reclaim.all_unreclaimable = true;
        }
    }
    sim.stats.kswapd_cpu.add(&sc.cost);
    sim.tasks[tid as usize].clock += sc.cost.total().max(1);
    let ks = &mut sim.reclaim.kswapd;
    if waiter {
        ks.longest_step_with_waiter_ns = ks.longest_step_with_waiter_ns.max(sc.cost.total());
    }
    ks.reclaimed += sc.nr_reclaimed;
    ks.total_scanned += sc.nr_scanned;
    if let Some(left) = sc.pass_left.take() {
        // 2.6.28 counts a run's scanning in `total_scanned`, which already has it.
        ks.pass_left = Some((left, 0, 0));
    }
    if token_back {
        ks.resumed_with_token += 1;
        ks.reclaimed_resumed_with_token += sc.nr_reclaimed;
    }
    if let Some(dev) = sc.queue_full {
        // Asleep in get_request_wait inside this zone pass: the pass goes on at the same
        // priority once a write request of that queue is freed.
        ks.request_wait = Some(dev);
        sim.io.request_sleeps += 1;
        return KthreadStep::Block;
    }
    if sc.yielded {
        // Preempted inside the zone pass: the rest of it (`pass_left`) is the next step's.
        ks.pass_yields += 1;
        return KthreadStep::Continue;
    }
    if unreclaimable {
        // shrink_zone did not run on the skipped zone, nor its throttle_vm_writeout.
        return end_of_priority_2_6_28(sim, tid);
    }
    after_zone_pass_2_6_28(sim, tid)
}

/// The end of 2.6.28's `shrink_zone` for kswapd: `throttle_vm_writeout` naps while too much
/// is under writeback (`vm_writeout.rs`, with GFP_KERNEL it loops), then the iteration ends.
fn after_zone_pass_2_6_28(sim: &mut Sim, tid: u32) -> KthreadStep {
    if sim.vm_writeout_throttled() {
        sim.reclaim.kswapd_vm_writeout_naps += 1;
        let ks = &mut sim.reclaim.kswapd;
        ks.vm_writeout = true;
        ks.congestion_wait = true;
        let now = sim.tasks[tid as usize].clock;
        return KthreadStep::SleepUntil(now + sim.nap_ns(now, sim.hz_div_10_ns()));
    }
    end_of_priority_2_6_28(sim, tid)
}

/// The rest of one iteration of 2.6.28's `balance_pgdat` priority loop: restart at
/// DEF_PRIORITY after SWAP_CLUSTER_MAX pages, else the next priority, napping below
/// DEF_PRIORITY − 2.
fn end_of_priority_2_6_28(sim: &mut Sim, tid: u32) -> KthreadStep {
    let ks = &mut sim.reclaim.kswapd;
    let nap = ks.total_scanned > 0 && ks.priority < DEF_PRIORITY - 2;
    if ks.reclaimed >= SWAP_CLUSTER_MAX || ks.priority == 0 {
        // Break out of the priority loop; not all zones are ok: loop_again at DEF_PRIORITY.
        ks.active = false;
    } else {
        ks.priority -= 1;
    }
    if nap {
        // No exception below the min watermark: 2.6.32 naps even then. The skip
        // (`has_under_min_watermark_zone`, KSWAPD_SKIP_CONGESTION_WAIT) is KOSAKI Motohiro's
        // bb3ab596832b "vmscan: stop kswapd waiting on congestion when the min watermark is
        // not being met", committed 2009-12-14, after 2.6.32's release (2009-12-03): 2.6.33.
        // Seed 002's guest sits at the min watermark whenever kswapd checks, so these naps
        // are most of kswapd's time there (docs/model.md "Seed 002 in the model").
        if sim.nr_free() <= sim.mem.wm.min {
            sim.reclaim.kswapd.naps_below_min += 1;
        }
        let ks = &mut sim.reclaim.kswapd;
        ks.naps += 1;
        ks.congestion_wait = true;
        let now = sim.tasks[tid as usize].clock;
        return KthreadStep::SleepUntil(now + sim.nap_ns(now, sim.hz_div_10_ns()));
    }
    KthreadStep::Continue
}

/// Where a 2.6.32 kswapd pass gives up the CPU (§3.4; kswapd is not preemptible inside
/// reclaim, it switches at the `cond_resched` of every page in `shrink_page_list` and
/// `shrink_active_list`): at the next event (a sleeper waking preempts it, CFS wake-up
/// preemption) or, while another task waits for the CPU, at the end of kswapd's slice
/// (`check_preempt_tick` sets need_resched once it has run its share). Without the second, a
/// priority-0 pass ran for hundreds of milliseconds while the program it had preempted at
/// its return to user mode waited, outside any fault, its pages unprotected by the swap token.
fn kswapd_yield_at(sim: &Sim, tid: u32) -> u64 {
    let next_event = sim.events.peek_time();
    if sim.sched.runq.is_empty() {
        next_event
    } else {
        next_event.min(sim.tasks[tid as usize].slice_end)
    }
}

impl Sim {
    /// `wakeup_kswapd` (§3.4), from the allocator's slow path.
    pub(crate) fn wakeup_kswapd(&mut self) {
        let k = self.kswapd;
        if self.reclaim.kswapd_failures >= MAX_RECLAIM_RETRIES || self.pgdat_balanced() {
            return;
        }
        // Only a kswapd on kswapd_wait is woken: asleep, or in the nap before sleeping.
        let ks = &mut self.reclaim.kswapd;
        if ks.napping {
            ks.napping = false;
            self.stats.vm.kswapd_low_wmark_hit_quickly += 1;
        } else if self.tasks[k as usize].state != TState::Sleeping {
            return;
        }
        let now = self.now;
        self.wake(k, now);
    }

    /// A congested queue cleared: a kswapd in 2.6.28's congestion_wait runs again.
    pub(crate) fn kswapd_congestion_cleared(&mut self) {
        if std::mem::take(&mut self.reclaim.kswapd.congestion_wait) {
            let k = self.kswapd;
            let now = self.now;
            self.wake(k, now);
        }
    }

    /// A request on `dev` completed: a kswapd asleep for one of its requests runs again.
    pub(crate) fn kswapd_request_freed(&mut self, dev: crate::engine::DevRef) {
        if self.reclaim.kswapd.request_wait == Some(dev) {
            self.reclaim.kswapd.request_wait = None;
            let k = self.kswapd;
            let now = self.now;
            self.wake(k, now);
        }
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
