//! Page allocation (watermarks, kswapd wake-up, direct reclaim, throttling, OOM), freeing,
//! the LRU hooks of the fault paths, and process teardown.

use super::{Sim, TState};
use crate::mm::*;
use crate::config::Profile;
use crate::reclaim::{DirectReclaim, RefaultCtx, MAX_RECLAIM_RETRIES};

/// An allocation that keeps making reclaim progress which other tasks keep eating yields a
/// jiffy after this many attempts rather than spin (the kernel's `cond_resched` /
/// `should_reclaim_retry` back-off, which the model has no finer picture of).
const ALLOC_LOOPS_BEFORE_YIELD: u32 = 64;

pub(crate) enum Alloc {
    Frame(u32),
    /// The task sleeps (throttled); retry the fault when it wakes.
    Blocked,
    /// The task was OOM-killed.
    Killed,
}

impl Sim {
    pub fn nr_free(&self) -> u64 {
        self.mem.nr_free()
    }

    #[inline]
    pub(crate) fn take_frame(&mut self) -> u32 {
        let f = self.mem.pop_free().expect("caller checked free pages");
        self.mem.frames[f as usize] = Frame { flags: PG_INUSE, ..Frame::FREE };
        self.mem.charged += 1;
        self.stats.vm.pgalloc_normal += 1;
        f
    }

    pub(super) fn memcg_over(&self) -> bool {
        matches!(self.mem.memcg_limit, Some(l) if self.mem.charged >= l)
    }

    /// Allocate a page for task `tid` (running on `cpu`), reclaiming as the kernel's slow path
    /// does (§3.3): fast path above low; wake kswapd; above min; direct reclaim; retry; OOM.
    /// In memcg mode the charge is checked against the limit first (try_charge). A 2.6.28
    /// direct reclaim that napped continues where it slept, without the fast path; an
    /// allocation retried after reclaim progress goes back to the era's `rebalance:`
    /// (`alloc_rebalance`, see [`Sim::rebalance_tries_free_lists`]).
    pub(crate) fn alloc_page(&mut self, tid: u32, cpu: usize) -> Alloc {
        let mut loops = 0;
        loop {
            loops += 1;
            let rebalance = std::mem::take(&mut self.tasks[tid as usize].alloc_rebalance);
            let resume = self.tasks[tid as usize].dr_cont.as_ref().map(|c| c.memcg);
            if resume == Some(true) || (resume.is_none() && self.memcg_over()) {
                let DirectReclaim::Done(got) = self.direct_reclaim(tid, cpu, true, true) else { return Alloc::Blocked };
                if !self.memcg_over() && self.nr_free() > self.mem.wm.min {
                    self.tasks[tid as usize].no_progress = 0;
                    return Alloc::Frame(self.take_frame());
                }
                match self.after_reclaim(tid, got, loops, true) {
                    Some(a) => return a,
                    None => continue,
                }
            }
            // Woken on pfmemalloc_wait: inside try_to_free_pages, past its throttle.
            let throttled = self.tasks[tid as usize].pfmemalloc_woken;
            if resume.is_none() && !throttled {
                let free = self.nr_free();
                if !rebalance {
                    if free > self.mem.wm.low {
                        return Alloc::Frame(self.take_frame());
                    }
                    self.wakeup_kswapd();
                }
                if (!rebalance || self.rebalance_tries_free_lists()) && free > self.mem.wm.min {
                    return Alloc::Frame(self.take_frame());
                }
            }
            if resume.is_none() && self.throttle_direct_reclaim(tid) {
                return Alloc::Blocked;
            }
            let DirectReclaim::Done(got) = self.direct_reclaim(tid, cpu, false, true) else { return Alloc::Blocked };
            if self.nr_free() > self.mem.wm.min {
                self.tasks[tid as usize].no_progress = 0;
                return Alloc::Frame(self.take_frame());
            }
            let next = if self.profile == Profile::V2_6_28 { self.after_reclaim_2_6_28(tid, got) } else { self.after_reclaim(tid, got, loops, false) };
            match next {
                Some(a) => return a,
                None => continue,
            }
        }
    }

    /// 2.6.28 `__alloc_pages_internal` after `try_to_free_pages` left no page at the min
    /// watermark: with progress, `congestion_wait(WRITE, HZ/50)` and rebalance (retry); without
    /// (every zone all-unreclaimable), one try at the high watermark to catch a parallel OOM
    /// kill, then `out_of_memory` and restart. No retry counter existed yet.
    ///
    /// The retry after the nap is `goto rebalance`, in 2.6.28's `__alloc_pages_internal` and
    /// 2.6.32's `__alloc_pages_slowpath` alike: straight into `__alloc_pages_direct_reclaim`
    /// (kernel-algorithms.md §3.3), whose `get_page_from_freelist` at the min watermark comes
    /// only after `try_to_free_pages`. The free lists are not looked at first, so whatever
    /// kswapd or an overflowing per-CPU list put back during the nap does not spare the task
    /// another reclaim (`restart:`, which wakes kswapd and tries the free lists, is only taken
    /// after an OOM kill). The task keeps that in `alloc_rebalance` for its retried fault.
    fn after_reclaim_2_6_28(&mut self, tid: u32, got: u64) -> Option<Alloc> {
        if got > 0 {
            let timeout = self.jiffy_ns * (self.cfg.config.kernel.hz as u64 / 50).max(1);
            self.tasks[tid as usize].alloc_rebalance = true;
            return Some(self.alloc_retry_sleep(tid, timeout));
        }
        if self.nr_free() > self.mem.wm.high {
            return Some(Alloc::Frame(self.take_frame()));
        }
        match self.oom_kill_2_6_28(tid) {
            OomKill::Current | OomKill::Nothing => Some(Alloc::Killed),
            OomKill::Victim | OomKill::Wait => {
                // out_of_memory ends in schedule_timeout_uninterruptible(1) for a task that is
                // not the victim, then `goto restart` (the free lists first, kswapd woken).
                let t = &mut self.tasks[tid as usize];
                let at = t.clock + self.jiffy_ns;
                t.dr_throttle_since = Some(t.clock);
                self.sleep_until(tid, at);
                Some(Alloc::Blocked)
            }
        }
    }

    /// 2.6.28 `out_of_memory` (mm/oom_kill.c, kernel-algorithms.md §3.14 for the later form):
    /// `select_bad_process` returns ERR_PTR(-1) while any task has TIF_MEMDIE ("wait for it to
    /// finish before killing some other task by mistake"), so no second victim is chosen until
    /// the first has exited. The victim gets TIF_MEMDIE and SIGKILL; its memory comes back only
    /// when it runs and exits (there is no OOM reaper before 4.6): SIGKILL ends an
    /// interruptible sleep such as a socket wait at once, a task in an uninterruptible one
    /// (congestion_wait, I/O) exits when that ends, a runnable one when it gets a CPU
    /// (engine/sched.rs `run_cpu`). The current task chosen as victim exits at once.
    fn oom_kill_2_6_28(&mut self, tid: u32) -> OomKill {
        if self.tasks.iter().any(|t| t.memdie && t.state != TState::Done) {
            return OomKill::Wait;
        }
        let Some(victim) = self.oom_victim() else { return OomKill::Nothing };
        if victim == tid {
            self.oom_kill_now(victim);
            return OomKill::Current;
        }
        self.count_oom_kill(victim);
        // oom_kill_task: SIGKILL to the victim (its whole thread group) and to every other
        // process sharing its mm. Only the victim gets TIF_MEMDIE in 2.6.28; the others exit
        // (PF_EXITING) as they run, and select_bad_process waits for an exiting task as for a
        // TIF_MEMDIE one, so the model marks them all and chooses again when all are gone.
        let at = self.tasks[tid as usize].clock;
        for t in self.tasks_sharing_mm(victim) {
            self.tasks[t as usize].memdie = true;
            if self.tasks[t as usize].ipc_wait_since.is_some() {
                self.ipc_wake(t, at);
            }
        }
        OomKill::Victim
    }

    /// The live user tasks running in `victim`'s address space, `victim` among them.
    fn tasks_sharing_mm(&self, victim: u32) -> Vec<u32> {
        let mm = self.tasks[victim as usize].mm;
        (0..self.tasks.len() as u32)
            .filter(|&t| {
                let t = &self.tasks[t as usize];
                t.kind == super::TaskKind::User && t.mm == mm && t.state != TState::Done && !matches!(t.state, TState::New)
            })
            .collect()
    }

    /// Where `rebalance:` begins, for an allocation retried after reclaim progress
    /// (`alloc_rebalance`; kernel-algorithms.md §3.3). 2.6.28's `__alloc_pages_internal` and
    /// 2.6.32's `__alloc_pages_slowpath` put the label after the slow path's "last chance"
    /// `get_page_from_freelist`, so the retry is direct reclaim first. Andrew Barry's
    /// "Prevent unending loop in __alloc_pages_slowpath" (linux-mm, May 2011, for 3.0: an
    /// order-0 `GFP_NOFS` allocation looped through `wait_iff_congested` without ever looking
    /// at the free lists again) moved `rebalance:` above that check: 3.14's retry after
    /// `wait_iff_congested(HZ/50)` takes a page at the min watermark first, without waking
    /// kswapd (only `restart:` wakes it). Later eras retry at `retry:`, which wakes kswapd
    /// and is the fast path's order; they never set `alloc_rebalance`.
    fn rebalance_tries_free_lists(&self) -> bool {
        self.profile == Profile::V3_14
    }

    /// `should_reclaim_retry` and friends after a direct reclaim that did not free enough,
    /// with each era's sleep before the retry (`reclaim/writeback_stall.rs`): 3.14's
    /// `wait_iff_congested(preferred_zone, BLK_RW_ASYNC, HZ/50)` after progress, 4.x's
    /// write-pending `congestion_wait(BLK_RW_ASYNC, HZ/10)` after none; 6.x does not sleep.
    /// A memory cgroup's charge (`memcg`) retries without them. 3.14's retry after progress,
    /// slept or not, is `goto rebalance` (`alloc_rebalance`). When the allocator gives up
    /// it goes to [`Sim::alloc_may_oom`].
    fn after_reclaim(&mut self, tid: u32, got: u64, loops: u32, memcg: bool) -> Option<Alloc> {
        let reclaimable = self.reclaimable_pages();
        if got > 0 {
            self.tasks[tid as usize].no_progress = 0;
            if !memcg && self.has_zone_retry_test() && !self.min_reachable_by_reclaim(reclaimable) {
                return self.alloc_may_oom(tid);
            }
            if !memcg && self.profile == Profile::V3_14 {
                self.tasks[tid as usize].alloc_rebalance = true;
            }
            if !memcg && self.profile == Profile::V3_14 && self.wait_iff_congested_sleeps() {
                let timeout = self.jiffy_ns * (self.cfg.config.kernel.hz as u64 / 50).max(1);
                return Some(self.alloc_retry_sleep(tid, timeout));
            }
            if loops > ALLOC_LOOPS_BEFORE_YIELD {
                // Progress that others keep eating: yield a jiffy rather than spin.
                let t = &mut self.tasks[tid as usize];
                let at = t.clock + self.jiffy_ns;
                t.dr_throttle_since = Some(t.clock);
                self.sleep_until(tid, at);
                return Some(Alloc::Blocked);
            }
            return None;
        }
        let t = &mut self.tasks[tid as usize];
        t.no_progress += 1;
        let retry = if memcg || !self.has_zone_retry_test() { reclaimable > 0 } else { self.min_reachable_by_reclaim(reclaimable) };
        if self.tasks[tid as usize].no_progress <= MAX_RECLAIM_RETRIES && retry {
            // 4.7–5.15: "a lot of dirty + writeback pages": wait for an I/O to complete
            // rather than retry at once (removed in 5.16, 132b0d21d21f).
            if !memcg && self.profile == Profile::V4_14 && 2 * self.write_pending() > reclaimable {
                let timeout = self.hz_div_10_ns();
                return Some(self.alloc_retry_sleep(tid, timeout));
            }
            return None;
        }
        if memcg {
            return self.alloc_oom_kill(tid);
        }
        self.alloc_may_oom(tid)
    }

    /// Does the era's allocator ask `should_reclaim_retry` (4.7+, Michal Hocko's OOM
    /// detection rework)? 3.14's `should_alloc_retry` retries an order-0 allocation after any
    /// progress and has no zone test; the model keeps its no-progress count and "anything
    /// reclaimable" for it (2.6.28 has its own path, [`Sim::after_reclaim_2_6_28`]).
    fn has_zone_retry_test(&self) -> bool {
        matches!(self.profile, Profile::V4_14 | Profile::V6)
    }

    /// `should_reclaim_retry`'s zone test (kernel-algorithms.md §3.3; mm/page_alloc.c as in
    /// 4.14 and 5.17): keep reclaiming only while some zone would pass the min watermark if
    /// every reclaimable page were freed, `free + zone_reclaimable_pages > min`
    /// (`__zone_watermark_ok` with `available` as the free count), whether or not this
    /// reclaim made progress. The model has one zone and no lowmem reserve.
    fn min_reachable_by_reclaim(&self, reclaimable: u64) -> bool {
        self.nr_free() + reclaimable > self.mem.wm.min
    }

    /// `__alloc_pages_may_oom` (kernel-algorithms.md §3.14; 3.x–6.x alike): one more try at
    /// the free lists at the **high** watermark, "only to catch a parallel oom killing" (or
    /// anything freed since reclaim gave up), and only then `out_of_memory`. The `oom_lock`
    /// try-lock is always won here: the model's OOM kill is one step with no other killer
    /// in between.
    fn alloc_may_oom(&mut self, tid: u32) -> Option<Alloc> {
        if self.nr_free() > self.mem.wm.high {
            self.tasks[tid as usize].no_progress = 0;
            return Some(Alloc::Frame(self.take_frame()));
        }
        self.alloc_oom_kill(tid)
    }

    /// `out_of_memory` for an allocation (global or a memory cgroup's charge); after a kill
    /// the allocation retries with its no-progress count reset.
    fn alloc_oom_kill(&mut self, tid: u32) -> Option<Alloc> {
        self.tasks[tid as usize].no_progress = 0;
        let victim = self.oom_kill();
        // The victim's process dies whole (every thread of its mm, §3.14): when the allocating
        // task is one of those threads it is dead too and must not go on with its fault.
        if victim.is_none() || self.tasks[tid as usize].state == TState::Done {
            return Some(Alloc::Killed);
        }
        None
    }

    /// The allocator's `congestion_wait` / `wait_iff_congested` before it retries.
    fn alloc_retry_sleep(&mut self, tid: u32, timeout: u64) -> Alloc {
        let t = &mut self.tasks[tid as usize];
        t.dr_throttle_since = Some(t.clock);
        self.reclaim.alloc_naps += 1;
        self.congestion_wait(tid, timeout);
        Alloc::Blocked
    }

    /// Pages reclaim could still free: file LRU, plus anon LRU while swap has room (§3.3).
    pub fn reclaimable_pages(&self) -> u64 {
        let l = self.reclaim.lru_sizes();
        let file = l[LruList::InactiveFile as usize] + l[LruList::ActiveFile as usize];
        let anon = l[LruList::InactiveAnon as usize] + l[LruList::ActiveAnon as usize];
        file + if self.swap.free_pages() > 0 { anon } else { 0 }
    }

    /// A page without blocking: used for the page cache's readahead pages (`__GFP_NORETRY`),
    /// which are skipped when memory is short rather than waited for. Swap-in readahead
    /// allocates with the fault's mask instead (`alloc_page`, engine/swapin_window.rs).
    pub(crate) fn try_alloc_nowait(&mut self, tid: u32, cpu: usize) -> Option<u32> {
        if self.memcg_over() {
            self.direct_reclaim(tid, cpu, true, false);
            if self.memcg_over() {
                return None;
            }
        }
        if self.nr_free() > self.mem.wm.min {
            if self.nr_free() <= self.mem.wm.low {
                self.wakeup_kswapd();
            }
            return Some(self.take_frame());
        }
        None
    }

    pub(crate) fn free_frame(&mut self, f: u32) {
        self.lru_add_forget(f);
        debug_assert!(!self.mem.frames[f as usize].has(PG_LRU));
        self.mem.frames[f as usize] = Frame::FREE;
        if self.mem.push_free(f) {
            // free_pages_bulk: pages reaching the buddy lists end the zone's unreclaimable
            // streak (2.6.28).
            self.reclaim.pages_scanned = 0;
            self.reclaim.all_unreclaimable = false;
        }
        self.mem.charged -= 1;
        self.stats.vm.pgfree += 1;
    }

    /// `folio_add_lru` (§1.8, §3.10): through the CPU's LRU-add batch (reclaim/lru_add.rs);
    /// the policy places the folio by its flags when the batch moves.
    pub(crate) fn lru_add(&mut self, f: u32) {
        self.folio_add_lru(f, false);
    }

    /// `folio_add_lru` from `read()`/`write()`, outside a page fault.
    pub(crate) fn lru_add_outside_fault(&mut self, f: u32) {
        self.folio_add_lru(f, true);
    }

    /// `folio_mark_accessed` (§3.10): an access through a file descriptor.
    pub(crate) fn mark_page_accessed(&mut self, f: u32) {
        if self.mem.frames[f as usize].has(PG_LRU_BATCH) {
            // Still in a CPU's LRU-add batch: `__lru_cache_activate_folio` (lru_add.rs).
            let local = self.reclaim.lru_lock.running.is_some_and(|(_, cpu)| self.reclaim.lru_add.in_local(cpu, f));
            let ages = self.reclaim.policy_ref().workingset_atomics();
            self.reclaim.policy().mark_accessed_batched(&mut self.mem.frames, f, local, &mut self.stats.vm);
            self.workingset_lines_in_access_path(ages); // workingset_activation
            return;
        }
        let activated = self.stats.vm.pgactivate;
        let ages = self.reclaim.policy_ref().workingset_atomics();
        self.reclaim.policy().mark_accessed(&mut self.mem.frames, f, &mut self.stats.vm);
        self.workingset_lines_in_access_path(ages); // workingset_activation
        if self.stats.vm.pgactivate != activated {
            // The classic LRU's `folio_activate` goes through the CPU's activate vector (MGLRU
            // only bumps the tier bits and activates nothing here).
            self.lru_pagevec_add();
        }
    }

    /// `activate_page` of a swapped-in anonymous page as `do_swap_page` maps it, 4.8–5.8 (the
    /// 4.14 profile): Minchan Kim's "mm: move swap-in anonymous page into active list" (4.8)
    /// gave a swapped-in page the active start a new anonymous page had, and 5.9's "mm/vmscan:
    /// protect the workingset on anonymous LRU" took it out with new pages going inactive.
    /// Through the CPU's activate vector, as `mark_page_accessed`'s activation.
    pub(crate) fn activate_swapped_in(&mut self, f: u32) {
        if self.profile != Profile::V4_14 {
            return;
        }
        let activated = self.stats.vm.pgactivate;
        self.reclaim.policy().activate(&mut self.mem.frames, f, &mut self.stats.vm);
        if self.stats.vm.pgactivate != activated {
            self.lru_pagevec_add();
        }
    }

    /// `workingset_refault` (§4.3): folio `f` is read back in over `shadow`; the policy sets
    /// the flags that place it before `lru_add`.
    pub(crate) fn refault(&mut self, f: u32, shadow: u32, anon: bool) {
        self.refault_in(f, shadow, anon, true);
    }

    /// `workingset_refault` with whether it happens inside a page fault (`read()` is not).
    pub(crate) fn refault_in(&mut self, f: u32, shadow: u32, anon: bool, in_fault: bool) {
        if self.refault_flush_stats() {
            self.reclaim.policy().stats_flushed(&self.stats.vm);
        }
        let swap_free = self.swap.free_pages();
        let restored = self.stats.vm.workingset_restore_anon + self.stats.vm.workingset_restore_file;
        let ctx = RefaultCtx { frames: &mut self.mem.frames, vm: &mut self.stats.vm, swap_free, in_fault, now: self.now };
        let policy = self.reclaim.policy();
        let ages = policy.workingset_atomics();
        policy.refault(ctx, f, shadow, anon);
        let notes_cost = policy.refault_notes_cost();
        // The activation's (classic) or the refault's (MGLRU) atomic adds (reclaim/workingset_lines.rs).
        self.workingset_lines_in_access_path(ages);
        if notes_cost && self.stats.vm.workingset_restore_anon + self.stats.vm.workingset_restore_file != restored {
            // lru_note_cost_folio / lru_note_cost_refault: the group's lock and each
            // ancestor's for a few counters (no folio moves; reclaim/lru_lock.rs).
            if self.lru_note_cost_in_access_path() {
                self.reclaim.lru_lock.stats.refault_notes += 1;
            }
        }
    }

    /// Unmap and free everything a VMA holds (exit_mmap / OOM reaper).
    pub(crate) fn zap_vma(&mut self, v: u32) {
        let kind = self.mem.vmas[v as usize].kind;
        let n = self.mem.vmas[v as usize].ptes.len();
        for i in 0..n {
            let pte = self.mem.vmas[v as usize].ptes[i];
            if pte == 0 {
                continue;
            }
            self.mem.vmas[v as usize].ptes[i] = 0;
            if pte & PTE_ZERO != 0 {
                continue;
            }
            if pte & PTE_PRESENT != 0 {
                let f = pte_frame(pte);
                let fr = self.mem.frames[f as usize];
                if kind == crate::config::MappingKind::File && pte & PTE_ACCESSED != 0 && self.mem.objects[fr.owner as usize].vmas.len() > 1 {
                    // zap_present_pte: a young PTE's reference goes to the folio, which
                    // stays in the page cache for the file's other mappers.
                    self.mark_page_accessed(f);
                }
                // An anonymous folio other processes of its fork family still map stays.
                if kind == crate::config::MappingKind::Anon && self.mem.anon_mappings(f, fr.owner, fr.index).mapcount == 0 {
                    self.mem.frames[f as usize].set_owner(Owner::None, NONE, 0);
                    self.release_unmapped(f);
                }
            } else if pte & PTE_SWAP != 0 {
                self.put_swap_ref(swp_dev(pte), swp_slot(pte));
            }
        }
        self.mem.unlink_anon_vmas(v);
        let vma = &mut self.mem.vmas[v as usize];
        vma.rss = 0;
        vma.swapents = 0;
        let obj = vma.object;
        if obj != NONE && self.mem.unlink_file_vma(v) {
            // Other processes still map the file (config/shared_file.rs): its pages stay.
            return;
        }
        if obj != NONE {
            // The last mapping of a shmem object or file goes away: drop its pages (a file's
            // dirty pages are cancelled, as truncation does).
            self.wb_cancel_inode(obj as usize);
            let entries = std::mem::take(&mut self.mem.objects[obj as usize].entries);
            let shmem = self.mem.objects[obj as usize].kind == crate::config::MappingKind::Shmem;
            for e in entries.iter().copied() {
                if e & PTE_PRESENT != 0 {
                    let f = pte_frame(e);
                    if !shmem {
                        // folio_cancel_dirty: an orphan still under I/O is never written again.
                        self.mem.frames[f as usize].flags &= !PG_DIRTY;
                    }
                    self.mem.frames[f as usize].set_owner(Owner::None, NONE, 0);
                    self.release_unmapped(f);
                } else if shmem && e & PTE_SWAP != 0 {
                    self.put_swap_ref(swp_dev(e), swp_slot(e));
                }
            }
            self.mem.objects[obj as usize].entries = vec![0; entries.len()];
        }
    }

    /// Free an unmapped folio now if nothing holds it; busy ones (I/O in flight) stay on the
    /// LRU as orphans and are reclaimed later.
    pub(super) fn release_unmapped(&mut self, f: u32) {
        let fr = self.mem.frames[f as usize];
        if fr.has(PG_WRITEBACK) || fr.has(PG_LOCKED) {
            return;
        }
        if fr.has(PG_SWAPCACHE) {
            let (dev, slot) = (fr.swap_dev(), fr.slot);
            if self.swap.areas[dev].count(slot) > 0 {
                return; // still referenced by a swap entry elsewhere: keep it cached
            }
            self.delete_from_swap_cache(f, 0);
        }
        if self.mem.frames[f as usize].has(PG_LRU) {
            self.reclaim.policy().folio_del(&mut self.mem.frames, f);
        }
        self.free_frame(f);
    }

    /// OOM killer (§3.14): the process with the highest rss + swap entries dies, every thread
    /// of it (`__oom_kill_process` kills all tasks sharing the victim's mm; `oom_badness`
    /// scores the mm); its memory is freed at once (the OOM reaper). Returns the victim.
    pub(crate) fn oom_kill(&mut self) -> Option<u32> {
        let victim = self.oom_victim()?;
        self.oom_kill_now(victim);
        Some(victim)
    }

    /// Every process's rss and swap entries, indexed by its address space (`Task::mm`): all its
    /// threads' mappings, one shared by the threads (config `shared`) counted once. One pass
    /// over the tasks, so that scoring a 5,600-process hackbench is not quadratic.
    fn mm_footprints(&self) -> Vec<(u64, u64)> {
        let users = || self.tasks.iter().filter(|t| t.kind == super::TaskKind::User);
        let mut by_mm = vec![(0, 0); users().map(|t| t.mm as usize + 1).max().unwrap_or(0)];
        let mut counted = vec![false; self.mem.vmas.len()];
        for t in users() {
            for &v in &t.vmas {
                if !std::mem::replace(&mut counted[v as usize], true) {
                    let (vma, fp) = (&self.mem.vmas[v as usize], &mut by_mm[t.mm as usize]);
                    *fp = (fp.0 + vma.rss, fp.1 + vma.swapents);
                }
            }
        }
        by_mm
    }

    /// `select_bad_process`: a task of the process with the highest rss + swap entries.
    fn oom_victim(&self) -> Option<u32> {
        let footprints = self.mm_footprints();
        let mut best: Option<(u64, u32)> = None;
        for (i, t) in self.tasks.iter().enumerate() {
            if t.kind != super::TaskKind::User || t.state == TState::Done || matches!(t.state, TState::New) {
                continue;
            }
            let (rss, swap) = footprints[t.mm as usize];
            if best.is_none_or(|(s, _)| rss + swap > s) {
                best = Some((rss + swap, i as u32));
            }
        }
        best.map(|(_, victim)| victim)
    }

    fn count_oom_kill(&mut self, victim: u32) {
        let (rss, swap) = self.mm_footprints()[self.tasks[victim as usize].mm as usize];
        self.stats.vm.oom_kill += 1;
        let label = self.tasks[victim as usize].label();
        self.record_event("oom_kill", label, rss, swap);
    }

    /// Kill `victim`'s process, every thread of it, and free its memory at once (the OOM
    /// reaper, 4.6+; and a victim that is the allocating task itself).
    fn oom_kill_now(&mut self, victim: u32) {
        self.count_oom_kill(victim);
        for t in self.tasks_sharing_mm(victim) {
            self.kill_task(t);
        }
    }

    /// SIGKILL: take the task off whatever it waits on and end it.
    fn kill_task(&mut self, victim: u32) {
        if self.tasks[victim as usize].state == TState::Runnable {
            self.dequeue(victim);
        }
        self.io.writeback_waiters.retain(|&t| t != victim);
        self.io.congestion_waiters.retain(|&t| t != victim);
        self.io.noprogress_waiters.retain(|&t| t != victim);
        self.io.request_waiters.retain(|&(t, _)| t != victim);
        self.reclaim.isolation.waiters.retain(|&t| t != victim);
        self.reclaim.pfmemalloc.waiters.retain(|&t| t != victim);
        for ws in self.io.frame_waiters.values_mut() {
            ws.retain(|&t| t != victim);
        }
        let cpu = match self.tasks[victim as usize].state {
            TState::Running(c) => c as usize,
            _ => usize::MAX,
        };
        self.finish_task(victim, cpu, true);
    }

    /// A TIF_MEMDIE task given a CPU exits there (2.6.28 `oom_kill_2_6_28`).
    pub(super) fn memdie_exit(&mut self, tid: u32, cpu: usize) {
        self.tasks[tid as usize].memdie = false;
        self.finish_task(tid, cpu, true);
    }
}

/// What 2.6.28's `out_of_memory` did for the allocating task.
enum OomKill {
    /// The allocating task itself was chosen: it exits.
    Current,
    /// Another task got TIF_MEMDIE and SIGKILL; its memory is freed when it exits.
    Victim,
    /// A victim chosen earlier has not exited yet: nothing was killed.
    Wait,
    /// No task to kill (the kernel panics; the model ends the allocating task).
    Nothing,
}

#[cfg(test)]
mod tests {
    //! The allocator's sleep before it retries, per era (`reclaim/writeback_stall.rs`).
    use super::super::{Ev, Sim, TState};
    use super::Alloc;

    /// A fresh machine with 64 anonymous pages on the LRU, so that reclaim could retry.
    fn sim(profile: &str) -> Sim {
        let mut s = super::super::test_machine(profile);
        for _ in 0..64 {
            let f = s.take_frame();
            s.mem.frames[f as usize].flags |= crate::mm::PG_SWAPBACKED;
            s.lru_add(f);
        }
        assert!(s.reclaimable_pages() > 0);
        s
    }

    /// When the sleeping task's timer fires, relative to its clock; None if it does not sleep.
    fn sleep_after(sim: &mut Sim, next: Option<Alloc>) -> Option<u64> {
        if !matches!(next, Some(Alloc::Blocked)) {
            return None;
        }
        assert_eq!(sim.tasks[0].state, TState::Blocked);
        let clock = sim.tasks[0].clock;
        while let Some((at, ev)) = sim.events.pop() {
            if let Ev::Timer(0, _) = ev {
                return Some(at - clock);
            }
        }
        panic!("a blocked task without a timer");
    }

    #[test]
    fn the_2_6_28_allocator_naps_hz_50_after_reclaim_progress() {
        let mut s = sim("2.6.28");
        let next = s.after_reclaim_2_6_28(0, 5);
        let hz_50 = s.jiffy_ns * (s.cfg.config.kernel.hz as u64 / 50);
        assert_eq!(sleep_after(&mut s, next), Some(hz_50));
        assert!(s.io.congestion_waiters.contains(&0), "a congestion_wait, woken when a queue decongests");
        assert!(s.tasks[0].alloc_rebalance, "the retry goes back to rebalance:");
    }

    /// 2.6.28–2.6.32 retry an allocation after the HZ/50 nap at `rebalance:`, which is direct
    /// reclaim: pages kswapd freed during the nap do not let the task skip it. The free lists
    /// are tried first again only by a fresh allocation (`restart:` / the fast path).
    #[test]
    fn a_2_6_32_allocation_retried_after_its_nap_reclaims_before_it_looks_at_the_free_lists() {
        for profile in ["2.6.32", "2.6.28"] {
            let mut s = sim(profile);
            assert!(s.nr_free() > s.mem.wm.low, "{profile}: the fast path alone would take a page");
            s.tasks[0].alloc_rebalance = true;
            let stalls = s.stats.vm.allocstall;
            let _ = s.alloc_page(0, 0);
            assert_eq!(s.stats.vm.allocstall, stalls + 1, "{profile}: the retried allocation reclaims first");
            assert!(!s.tasks[0].alloc_rebalance, "{profile}: the retry is taken once");
            // The same machine without a nap behind the allocation: the free lists first.
            let mut s = sim(profile);
            assert!(matches!(s.alloc_page(0, 0), Alloc::Frame(_)));
            assert_eq!(s.stats.vm.allocstall, 0, "{profile}: a fresh allocation takes the fast path");
        }
        // Later eras retry at the free lists (4.x's `retry:` calls get_page_from_freelist
        // first); their allocator never sets the flag.
        let mut s = sim("6.x");
        let _ = s.after_reclaim(0, 5, 1, false);
        assert!(!s.tasks[0].alloc_rebalance);
    }

    /// 3.14's retry after reclaim progress is `goto rebalance` too, but since 3.0 the label
    /// comes before the slow path's last free-list check (at the min watermark), and only
    /// `restart:` wakes kswapd: between min and low the retry takes a page and leaves a
    /// sleeping kswapd asleep, where a fresh allocation's fast path wakes it.
    #[test]
    fn a_3_14_allocation_retried_after_progress_takes_a_page_above_min_without_waking_kswapd() {
        let mut s = sim("3.14");
        let _ = s.after_reclaim(0, 5, 1, false);
        assert!(s.tasks[0].alloc_rebalance, "should_alloc_retry -> wait_iff_congested -> goto rebalance");
        for rebalance in [true, false] {
            let mut s = sim("3.14");
            while s.nr_free() > s.mem.wm.min + 1 {
                s.take_frame();
            }
            assert!(s.nr_free() <= s.mem.wm.low, "between min and low");
            let k = s.kswapd as usize;
            assert_eq!(s.tasks[k].state, TState::Sleeping);
            s.tasks[0].alloc_rebalance = rebalance;
            assert!(matches!(s.alloc_page(0, 0), Alloc::Frame(_)), "a page above min, no reclaim");
            assert_eq!(s.stats.vm.allocstall, 0);
            assert!(!s.tasks[0].alloc_rebalance, "the retry is taken once");
            let woken = s.tasks[k].state != TState::Sleeping;
            assert_eq!(woken, !rebalance, "rebalance: {rebalance}: kswapd woken {woken}");
        }
        // At the min watermark the retry reclaims, as 2.6.32's does.
        let mut s = sim("3.14");
        while s.nr_free() > s.mem.wm.min {
            s.take_frame();
        }
        s.tasks[0].alloc_rebalance = true;
        let _ = s.alloc_page(0, 0);
        assert!(s.stats.vm.allocstall > 0, "at min the retry reclaims");
    }

    #[test]
    fn the_4_14_allocator_waits_hz_10_without_progress_only_when_writes_pend_for_half_of_what_is_reclaimable() {
        let mut s = sim("4.14");
        let next = s.after_reclaim(0, 0, 1, false);
        assert_eq!(sleep_after(&mut s, next), None, "nothing pending: retry at once");
        s.wb.nr_dirty = 2 * s.reclaimable_pages() + 1;
        let next = s.after_reclaim(0, 0, 1, false);
        assert_eq!(sleep_after(&mut s, next), Some(s.hz_div_10_ns()));
    }

    /// `sim(profile)` with task 0 running and holding memory (an OOM victim) and the free
    /// lists emptied: 64 reclaimable pages, fewer than the min watermark.
    fn exhausted(profile: &str) -> Sim {
        let mut s = sim(profile);
        s.tasks[0].state = TState::Running(0);
        let v = s.tasks[0].vmas[0] as usize;
        s.mem.vmas[v].rss = 64;
        while s.nr_free() > 0 {
            s.take_frame();
        }
        assert!(s.reclaimable_pages() < s.mem.wm.min);
        s
    }

    /// Guards `should_reclaim_retry`'s zone test (4.7+): an allocation stops retrying, even
    /// after a reclaim that freed something, once free + reclaimable pages cannot reach the
    /// min watermark; 3.14's `should_alloc_retry` retries an order-0 allocation after any
    /// progress. With enough reclaimable pages the 6.x allocator retries too.
    #[test]
    fn an_allocation_stops_retrying_when_free_plus_reclaimable_cannot_reach_min_since_4_7() {
        for profile in ["4.14", "6.1", "6.x"] {
            let mut s = exhausted(profile);
            let next = s.after_reclaim(0, 5, 1, false);
            assert_eq!(s.stats.vm.oom_kill, 1, "{profile}: progress, but min is out of reach");
            assert!(matches!(next, Some(Alloc::Killed)));
        }
        let mut s = exhausted("3.14");
        assert!(s.after_reclaim(0, 5, 1, false).is_none() || s.tasks[0].state == TState::Blocked);
        assert_eq!(s.stats.vm.oom_kill, 0, "3.14 retries after progress");
        // The same empty free lists with more than min pages on the anon LRU.
        let mut s = sim("6.x");
        while s.nr_free() > 0 {
            let f = s.take_frame();
            if s.reclaimable_pages() <= s.mem.wm.min {
                s.mem.frames[f as usize].flags |= crate::mm::PG_SWAPBACKED;
                s.lru_add(f);
            }
        }
        assert!(s.nr_free() + s.reclaimable_pages() > s.mem.wm.min);
        assert!(s.after_reclaim(0, 0, 1, false).is_none(), "no progress yet, but min is reachable: retry");
        assert_eq!(s.stats.vm.oom_kill, 0);
    }

    /// Guards `__alloc_pages_may_oom`'s last try at the high watermark: an allocation whose
    /// reclaim retries are spent takes a page instead of killing when something freed enough
    /// since (a parallel kill, kswapd), and kills only at or below high.
    #[test]
    fn an_allocation_out_of_retries_takes_a_page_above_high_before_it_oom_kills() {
        for profile in ["3.14", "4.14", "6.x"] {
            let mut s = sim(profile);
            s.tasks[0].state = TState::Running(0);
            let v = s.tasks[0].vmas[0] as usize;
            s.mem.vmas[v].rss = 64;
            assert!(s.nr_free() > s.mem.wm.high);
            s.tasks[0].no_progress = crate::reclaim::MAX_RECLAIM_RETRIES;
            assert!(matches!(s.after_reclaim(0, 0, 1, false), Some(Alloc::Frame(_))), "{profile}");
            assert_eq!((s.stats.vm.oom_kill, s.tasks[0].no_progress), (0, 0));
            while s.nr_free() > s.mem.wm.high {
                s.take_frame();
            }
            s.tasks[0].no_progress = crate::reclaim::MAX_RECLAIM_RETRIES;
            let _ = s.after_reclaim(0, 0, 1, false);
            assert_eq!(s.stats.vm.oom_kill, 1, "{profile}: at high, out_of_memory");
        }
    }

    /// Guards the allocating thread of an OOM-killed process: the killer names the process by
    /// its first thread, but every thread dies, so a second thread whose allocation chose that
    /// process stops its fault (it went on serving requests as a dead task, and a 1/36
    /// memcached run hung with a worker that was neither running nor waiting on anything).
    #[test]
    fn an_allocation_that_oom_kills_its_own_process_ends_the_allocating_thread() {
        let text = "name = \"t\"\n[machine]\nram = \"64MiB\"\n[[task]]\nname = \"p\"\ninstances = 2\nthreads = true\n[[task.mapping]]\nname = \"m\"\nkind = \"anon\"\nsize = \"1MiB\"\n[[task.phase]]\nmapping = \"m\"\npattern = \"sequential\"\n";
        let mut s = Sim::new(&crate::config::load(text, "t.toml", &[]).expect("valid"));
        let (a, b) = (0u32, 1u32);
        s.tasks[a as usize].state = TState::Sleeping;
        s.tasks[b as usize].state = TState::Running(0);
        let v = s.tasks[b as usize].vmas[0] as usize;
        s.mem.vmas[v].rss = 10;
        s.tasks[b as usize].no_progress = crate::reclaim::MAX_RECLAIM_RETRIES;
        while s.nr_free() > s.mem.wm.high {
            s.take_frame();
        }
        let next = s.after_reclaim(b, 0, 1, false);
        assert_eq!(s.stats.vm.oom_kill, 1);
        assert_eq!((s.tasks[a as usize].state, s.tasks[b as usize].state), (TState::Done, TState::Done));
        assert!(matches!(next, Some(Alloc::Killed)), "the allocating thread died with its process");
    }

    /// Three started tasks of a 2.6.28 machine, task `big` holding the most memory.
    fn three_tasks(big: u32) -> Sim {
        let text = "name = \"t\"\n[machine]\ncpus = 1\nram = \"64MiB\"\n[kernel]\nprofile = \"2.6.28\"\n[[task]]\nname = \"t\"\ninstances = 3\n[[task.mapping]]\nname = \"m\"\nkind = \"anon\"\nsize = \"1MiB\"\n[[task.phase]]\nmapping = \"m\"\npattern = \"sequential\"\n";
        let r = crate::config::load(text, "t.toml", &[]).expect("valid");
        let mut s = Sim::new(&r);
        for tid in 0..3u32 {
            s.tasks[tid as usize].state = TState::Sleeping;
            let v = s.tasks[tid as usize].vmas[0] as usize;
            s.mem.vmas[v].rss = if tid == big { 200 } else { 100 + tid as u64 };
        }
        s
    }

    /// Guards 2.6.28's one victim at a time: `select_bad_process` returns ERR_PTR(-1) while a
    /// TIF_MEMDIE task has not exited, so a second failing allocation kills nobody; the victim
    /// exits (and frees its memory) when it gets a CPU. Killed and freed at once, as the
    /// model's 4.6+ reaper does, every failing allocation of a 5,600-process hackbench killed
    /// another process (seed 001: all 5,601 in 6.6 s).
    #[test]
    fn a_2_6_28_oom_kill_waits_for_its_victim_to_exit_before_choosing_another() {
        let mut s = three_tasks(2);
        assert!(matches!(s.oom_kill_2_6_28(0), super::OomKill::Victim));
        assert!(s.tasks[2].memdie && s.tasks[2].state == TState::Sleeping, "SIGKILL does not end an uninterruptible sleep");
        let v = s.tasks[2].vmas[0] as usize;
        assert_eq!(s.mem.vmas[v].rss, 200, "no reaper: the victim's memory is still mapped");
        assert!(matches!(s.oom_kill_2_6_28(1), super::OomKill::Wait));
        assert_eq!(s.stats.vm.oom_kill, 1);
        assert!(s.tasks.iter().all(|t| t.state != TState::Done), "nobody else was killed");
        // The victim gets the CPU and exits there.
        s.tasks[2].state = TState::Running(0);
        s.sched.cpus[0] = Some(2);
        s.run_cpu(0);
        assert_eq!(s.tasks[2].state, TState::Done);
        assert!(s.tasks[2].oom_killed && !s.tasks[2].memdie);
        assert_eq!(s.mem.vmas[v].rss, 0, "exit_mmap freed it");
        // Only now is another victim chosen.
        assert!(matches!(s.oom_kill_2_6_28(0), super::OomKill::Victim));
        assert!(s.tasks[1].memdie);
        assert_eq!(s.stats.vm.oom_kill, 2);
    }

    /// Guards SIGKILL's wake-up of an interruptible sleep: a victim waiting on a socket is
    /// woken to exit; and the allocating task naps one jiffy and restarts at the free lists.
    #[test]
    fn a_2_6_28_oom_victim_waiting_on_a_socket_is_woken_and_the_killer_naps_a_jiffy() {
        let mut s = three_tasks(2);
        s.tasks[2].state = TState::Blocked;
        s.tasks[2].ipc_wait_since = Some(0);
        s.tasks[0].state = TState::Running(0);
        s.sched.cpus[0] = Some(0);
        while s.nr_free() > 0 {
            s.take_frame();
        }
        let next = s.after_reclaim_2_6_28(0, 0);
        assert!(matches!(s.tasks[2].state, TState::Runnable | TState::Running(_)), "woken to exit: {:?}", s.tasks[2].state);
        assert!(matches!(next, Some(Alloc::Blocked)));
        assert_eq!(s.tasks[0].state, TState::Sleeping);
        assert!(!s.tasks[0].alloc_rebalance, "`goto restart`, not rebalance");
        let clock = s.tasks[0].clock;
        let mut timer = None;
        while let Some((at, ev)) = s.events.pop() {
            if let Ev::Timer(0, _) = ev {
                timer = Some(at - clock);
            }
        }
        assert_eq!(timer, Some(s.jiffy_ns), "schedule_timeout_uninterruptible(1)");
    }

    /// Guards 2.6.28's `oom_kill_task`: every task sharing the victim's mm is killed, not the
    /// victim alone; a thread waiting on a socket is woken to exit, and no other victim is
    /// chosen until all of them have exited.
    #[test]
    fn a_2_6_28_oom_kill_ends_every_thread_of_the_victims_process() {
        let text = "name = \"t\"\n[machine]\ncpus = 1\nram = \"64MiB\"\n[kernel]\nprofile = \"2.6.28\"\n[[task]]\nname = \"small\"\n[[task.mapping]]\nname = \"m\"\nkind = \"anon\"\nsize = \"1MiB\"\n[[task.phase]]\nmapping = \"m\"\npattern = \"sequential\"\n[[task]]\nname = \"big\"\ninstances = 3\nthreads = true\n[[task.mapping]]\nname = \"m\"\nkind = \"anon\"\nsize = \"1MiB\"\n[[task.phase]]\nmapping = \"m\"\npattern = \"sequential\"\n";
        let r = crate::config::load(text, "t.toml", &[]).expect("valid");
        let mut s = Sim::new(&r);
        for tid in 0..4u32 {
            s.tasks[tid as usize].state = TState::Sleeping;
            let v = s.tasks[tid as usize].vmas[0] as usize;
            s.mem.vmas[v].rss = if tid == 0 { 100 } else { 60 };
        }
        s.tasks[3].state = TState::Blocked;
        s.tasks[3].ipc_wait_since = Some(0);
        assert!(matches!(s.oom_kill_2_6_28(0), super::OomKill::Victim));
        assert_eq!(s.stats.vm.oom_kill, 1, "one kill");
        assert!(!s.tasks[0].memdie);
        assert!((1..4).all(|t| s.tasks[t].memdie), "every thread of the process is killed");
        assert!(matches!(s.tasks[3].state, TState::Runnable | TState::Running(_)), "the socket wait ends: {:?}", s.tasks[3].state);
        for t in [1, 3] {
            s.tasks[t].state = TState::Running(0);
            s.sched.cpus[0] = Some(t as u32);
            s.run_cpu(0);
        }
        assert!(matches!(s.oom_kill_2_6_28(0), super::OomKill::Wait), "a thread of the victim has not exited yet");
    }

    #[test]
    fn the_6x_allocator_never_sleeps_on_pending_writes() {
        let mut s = sim("6.x");
        (s.wb.nr_dirty, s.io.nr_writeback) = (s.reclaimable_pages(), s.reclaimable_pages());
        let next = s.after_reclaim(0, 0, 1, false);
        assert_eq!(sleep_after(&mut s, next), None, "5.16 removed the write-pending congestion_wait");
    }
}
