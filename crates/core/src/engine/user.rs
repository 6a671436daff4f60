//! Running a user program: the resident-touch fast path (set the accessed bit, nothing else),
//! faults and operations on the slow path, and the end of a task.

use super::fault::Outcome;
use super::{DirtyWait, Sim, TState, TaskKind};
use crate::mm::*;
use crate::config::MappingKind;
use crate::workload::{Step, Touch};

impl Sim {
    pub(super) fn fraction_done(&self) -> f64 {
        let mut f: f64 = 1.0;
        // A kv client lasts as long as its server, whose progress stands for both.
        let counted = |t: &&super::Task| t.kind == TaskKind::User && t.state != TState::Done && !t.background && !t.program.as_ref().is_some_and(|p| p.is_kv_client());
        for t in self.tasks.iter().filter(counted) {
            let by_time = t.deadline.map(|d| (t.clock.saturating_sub(t.start) as f64 / (d - t.start).max(1) as f64).min(1.0));
            let by_touches = t.program.as_ref().map(|p| {
                let total = p.touches_per_pass().max(1) as f64;
                1.0 - (p.remaining_in_pass() as f64 / total).min(1.0)
            });
            let g = match (by_time, by_touches, t.deadline.is_some() && t.repeat()) {
                (Some(a), _, true) => a,
                (Some(a), Some(b), false) => a.max(b),
                (None, Some(b), _) => b,
                (Some(a), None, _) => a,
                (None, None, _) => 0.0,
            };
            f = f.min(g);
        }
        f
    }



    /// The fast path: run the task's program while its touches hit resident pages, which only
    /// set the accessed (and dirty) bit (DESIGN.md performance contract; the kernel does not
    /// move pages on access either), until `horizon`, its deadline, the end of its program, or
    /// a step that needs the kernel. Returns that step (None: time or program ran out) and
    /// whether the task is finished.
    #[inline]
    fn run_resident(&mut self, tid: u32, horizon: u64) -> (Option<Step>, bool) {
        let touch_ns = self.costs.resident_touch_ns;
        let Sim { tasks, mem, .. } = self;
        let t = &mut tasks[tid as usize];
        if let Some(op) = t.pending_op.take() {
            return (Some(Step::Op(op)), false);
        }
        if let Some((mi, touch)) = t.pending.take() {
            return (Some(Step::Touch(mi, touch)), false);
        }
        let deadline = t.deadline.unwrap_or(u64::MAX);
        let limit = horizon.min(deadline);
        let mut resident = 0u64;
        let out;
        let program = t.program.as_mut().expect("user task has a program");
        let mut clock = t.clock;
        loop {
            if clock >= limit {
                out = (None, clock >= deadline);
                break;
            }
            let step = program.next_step();
            if program.phase() != t.phase_times.current() {
                let cpu = super::task::cpu_run(t.state, t.cpu_ns, t.exec_start, clock);
                t.phase_times.enter(program.phase(), clock, cpu);
            }
            match step {
                None => {
                    out = (None, true);
                    break;
                }
                Some(Step::Op(op)) => {
                    out = (Some(Step::Op(op)), false);
                    break;
                }
                Some(Step::Touch(mi, touch)) => {
                    let vma = &mut mem.vmas[t.vmas[mi] as usize];
                    let pte = &mut vma.ptes[touch.page as usize];
                    let ok = *pte & PTE_PRESENT != 0 && (!touch.write || *pte & PTE_WRITE != 0);
                    if !ok {
                        out = (Some(Step::Touch(mi, touch)), false);
                        break;
                    }
                    if *pte & PTE_ZERO != 0 && !touch.write && program.verifying() {
                        // The shared zero page: this page was never written (or lost).
                        t.verify_errors += 1;
                    }
                    *pte |= PTE_ACCESSED | if touch.write { PTE_DIRTY } else { 0 };
                    // The compute that follows this touch (a trace or hpl phase sets it per
                    // touch, so read it after `next_step`).
                    clock += touch_ns + program.compute_ns();
                    resident += 1;
                }
            }
        }
        t.clock = clock;
        t.touches += resident;
        t.touch_hist.record_n(touch_ns, resident);
        t.touch_kinds.record_resident(touch_ns, resident);
        out
    }

    /// Must this touch's fault wait until the simulation's time reaches the task's clock? A
    /// running task's clock is up to `sync_quantum` (20 us) ahead of the simulation's time
    /// (engine/mod.rs). That is harmless for resident touches, which change only the task's own
    /// PTE bits, but a fault that allocates a page or feeds the global readahead window changes
    /// state every CPU shares, in an order the kernel's CPUs fix in real time:
    /// * A new page (do_anonymous_page, a shmem page, a page-cache or swap-cache miss) is
    ///   charged (memcg, watermarks: who enters reclaim) and goes onto the LRU
    ///   (`folio_add_lru`, §1.8), whose order is the order reclaim takes pages and so the order
    ///   of the swap slots it allocates (§2). A task that ran 20 us ahead put ~10 pages at a time
    ///   on the shared list: two processes writing at once got runs of slots each, which swap-in
    ///   readahead then read back together (host-procs-mixed: 3.5 pages per read request, 1.2
    ///   in time order; docs/evidence/host-procs.md, Session 31).
    /// * The global adaptive readahead window (`swapin_nr_pages` on a swap-cache miss,
    ///   `swapin_readahead_hits` on a hit that clears PG_readahead; §1.3, §1.4): a task running
    ///   ahead took a sequential reader's hits and its next miss in one go (7 hits and a miss
    ///   take ~10 us), so they always opened its own next window and never that of a random
    ///   faulter whose miss fell between them in time (4.14's Base of seed 000).
    ///
    /// A task's own retry after its read (or its window's allocation) changes nothing shared;
    /// a write-protect fault or a cache hit maps a page that exists. Nor need a fault wait when
    /// no event is due before the task's clock: the queue would hand the CPU straight back
    /// (one task faulting alone keeps its speed).
    fn fault_ahead_of_shared_state(&self, tid: u32, mi: usize, touch: Touch) -> bool {
        let t = &self.tasks[tid as usize];
        if t.clock <= self.now || self.events.peek_time() >= t.clock || t.fault_was_major || t.ra_cont.is_some() {
            return false;
        }
        let vma = &self.mem.vmas[t.vmas[mi] as usize];
        let pte = vma.ptes[touch.page as usize];
        if vma.kind == MappingKind::Anon {
            if pte & PTE_SWAP != 0 && pte & PTE_PRESENT == 0 {
                return self.swap_fault_allocates_or_feeds_window(pte, false);
            }
            // None or the zero page: a store allocates, a load maps the zero page.
            return (pte == 0 || pte & PTE_ZERO != 0) && touch.write;
        }
        if pte & PTE_PRESENT != 0 {
            return false;
        }
        let ent = self.mem.objects[vma.object as usize].entries[touch.page as usize];
        if ent & PTE_PRESENT != 0 {
            return false;
        }
        if vma.kind == MappingKind::Shmem && ent & PTE_SWAP != 0 {
            return self.swap_fault_allocates_or_feeds_window(ent, true);
        }
        true
    }

    /// A fault on swap entry `entry`: a swap-cache miss allocates (and reads the window); a
    /// hit feeds the global window when it finds PG_readahead set.
    fn swap_fault_allocates_or_feeds_window(&self, entry: u64, shmem: bool) -> bool {
        let cached = self.swap.areas[swp_dev(entry)].cache[swp_slot(entry) as usize];
        if cached == NONE {
            return true;
        }
        if !self.swap.ra.global_window(shmem) {
            return false;
        }
        self.mem.frames[cached as usize].flags & self.readahead_bits() != 0
    }

    pub(super) fn run_user(&mut self, tid: u32, cpu: usize, mut horizon: u64) {
        loop {
            let (slow, stop) = self.run_resident(tid, horizon);
            if stop {
                self.finish_after_reads(tid, cpu);
                return;
            }
            let Some(step) = slow else {
                // Horizon reached: come back at our clock.
                if self.tasks[tid as usize].clock >= self.tasks[tid as usize].deadline.unwrap_or(u64::MAX) {
                    self.finish_after_reads(tid, cpu);
                } else {
                    self.continue_on_cpu(tid, cpu);
                }
                return;
            };
            if self.tasks[tid as usize].clock >= self.tasks[tid as usize].deadline.unwrap_or(u64::MAX) {
                self.finish_after_reads(tid, cpu);
                return;
            }
            let (mi, touch) = match step {
                Step::Touch(mi, touch) => (mi, touch),
                // A message or buffered I/O (engine/ipc.rs).
                Step::Op(op) => match self.run_op(tid, cpu, op) {
                    Outcome::Done => {
                        self.tasks[tid as usize].touch_kinds.clear();
                        if self.dirty_pause(tid, cpu) {
                            return;
                        }
                        // The kernel work may have woken a task or queued an event.
                        horizon = horizon.min(self.event_horizon());
                        if self.tasks[tid as usize].clock >= horizon {
                            self.continue_on_cpu(tid, cpu);
                            return;
                        }
                        continue;
                    }
                    Outcome::Blocked => {
                        let c = self.tasks[tid as usize].clock;
                        self.release_cpu(cpu, c);
                        return;
                    }
                    Outcome::Killed => return,
                },
            };
            let t = &mut self.tasks[tid as usize];
            if t.fault_start.is_none() {
                t.fault_start = Some(t.clock);
            }
            if self.fault_ahead_of_shared_state(tid, mi, touch) {
                // Come back at our clock, after every event before it (see the function).
                self.tasks[tid as usize].pending = Some((mi, touch));
                self.continue_on_cpu(tid, cpu);
                return;
            }
            match self.fault(tid, cpu, mi, touch) {
                Outcome::Done => {
                    let touch_ns = self.costs.resident_touch_ns;
                    let t = &mut self.tasks[tid as usize];
                    let compute = t.program.as_ref().map_or(0, |p| p.compute_ns());
                    let start = t.fault_start.take().expect("fault start");
                    let lat = t.clock - start;
                    t.fault_hist.record(lat);
                    t.touch_hist.record(lat + touch_ns);
                    t.touch_kinds.record(lat + touch_ns);
                    t.touches += 1;
                    t.clock += touch_ns + compute;
                    t.fault_was_major = false;
                    // A retried fault that found its page without allocating ends the
                    // allocation that napped (memory.rs `alloc_rebalance`).
                    t.alloc_rebalance = false;
                    if self.dirty_pause(tid, cpu) {
                        return;
                    }
                    horizon = horizon.min(self.event_horizon());
                    let t = &self.tasks[tid as usize];
                    if t.clock >= horizon {
                        self.continue_on_cpu(tid, cpu);
                        return;
                    }
                }
                Outcome::Blocked => {
                    let t = &mut self.tasks[tid as usize];
                    t.pending = Some((mi, touch));
                    let c = t.clock;
                    self.release_cpu(cpu, c);
                    return;
                }
                Outcome::Killed => return,
            }
        }
    }

    /// A pause `balance_dirty_pages` asked for: the task sleeps off the CPU
    /// (`io_schedule_timeout`) and goes on with its program when it ends. True when it sleeps.
    fn dirty_pause(&mut self, tid: u32, cpu: usize) -> bool {
        let t = &mut self.tasks[tid as usize];
        let at = t.clock;
        match std::mem::replace(&mut t.dirty_wait, DirtyWait::None) {
            DirtyWait::None | DirtyWait::Pause(0) => return false,
            DirtyWait::Pause(pause) => {
                t.dirty_pauses += 1;
                t.dirty_throttled_ns += pause;
                self.sleep_until(tid, at + pause);
            }
            DirtyWait::CongestionWait => {
                t.dirty_pauses += 1;
                let timeout = self.jiffy_ns * (self.cfg.config.kernel.hz as u64 / 10).max(1);
                self.congestion_wait(tid, timeout);
            }
        }
        self.release_cpu(cpu, at);
        true
    }

    /// The program ended (or its time is up): finish the task once the reads it keeps in
    /// flight have completed, as fio reaps its outstanding I/O before it exits; until then it
    /// sleeps on the oldest.
    fn finish_after_reads(&mut self, tid: u32, cpu: usize) {
        if let Some(frame) = self.drain_reads(tid) {
            self.wait_on_frame(tid, frame);
            let c = self.tasks[tid as usize].clock;
            self.release_cpu(cpu, c);
            return;
        }
        self.finish_task(tid, cpu, false);
    }

    pub(crate) fn finish_task(&mut self, tid: u32, cpu: usize, oom: bool) {
        if self.tasks[tid as usize].state == TState::Done {
            return;
        }
        // A kv server's last replies go out (a killed one sends nothing); its client ends.
        self.kv_task_done(tid, !oom);
        let t = &self.tasks[tid as usize];
        let end = match t.deadline {
            Some(d) if !oom => t.clock.min(d),
            _ => t.clock,
        };
        // exit_mmap's anon_vma_unlink waits for reclaim's walks of a shared anon_vma (2.6.28,
        // reclaim/anon_vma_lock.rs) before the parent's wait() can see the exit.
        let end = end + self.anon_vma_unlink_wait(tid, end);
        let t = &mut self.tasks[tid as usize];
        t.end = end;
        if !oom {
            // The request being served when the program ended is complete.
            self.close_request(tid, end);
        }
        let t = &mut self.tasks[tid as usize];
        t.state = TState::Done;
        t.oom_killed = oom;
        t.pending = None;
        t.pending_op = None;
        self.io_schedule_end(tid, end);
        self.reclaim.isolation.release(tid, end);
        let t = &mut self.tasks[tid as usize];
        if !t.background {
            self.user_tasks_left -= 1;
            if self.user_tasks_left == 0 && self.swap.store.name() != "none" {
                self.store_at_work_end = Some(self.swap.store.counters().debugfs.into_iter().collect());
            }
        }
        // mmput: the swap token goes with the task; exit_mmap runs when the mm's last user
        // exits (`mm_users`), so a thread of a process (config `threads`) leaves its mappings
        // to the last thread of the process to exit (and a mapping the threads share, config
        // `shared`, is torn down once).
        if let Some(token) = &mut self.swap.token {
            token.put(tid);
        }
        for v in self.vmas_to_unmap_at_exit(tid) {
            self.zap_vma(v);
        }
        self.barrier_task_done(tid);
        self.ipc_reader_exit(tid);
        if self.sched.cpus.get(cpu).copied().flatten() == Some(tid) {
            self.release_cpu(cpu, end);
        }
    }

    /// Is a thread of the process whose address space is `mm` (`Task::mm`) still running its
    /// program (the mm still has users)?
    pub(crate) fn process_alive(&self, mm: u32) -> bool {
        self.tasks.iter().any(|t| t.kind == TaskKind::User && t.mm == mm && t.state != TState::Done)
    }

    /// `process_alive` for every address space at once, indexed by `Task::mm` (one pass).
    pub(crate) fn live_processes(&self) -> Vec<bool> {
        let users = || self.tasks.iter().filter(|t| t.kind == TaskKind::User);
        let mut alive = vec![false; users().map(|t| t.mm as usize + 1).max().unwrap_or(0)];
        for t in users().filter(|t| t.state != TState::Done) {
            alive[t.mm as usize] = true;
        }
        alive
    }

    /// The VMAs `exit_mmap` tears down when task `tid` exits: none while another thread of its
    /// process (same mm) is alive, else those of every thread of the process.
    fn vmas_to_unmap_at_exit(&self, tid: u32) -> Vec<u32> {
        let mm = self.tasks[tid as usize].mm;
        if self.process_alive(mm) {
            return Vec::new();
        }
        self.mm_vmas(mm)
    }

    /// The VMAs of the process whose address space is `mm`: every thread's, a mapping the
    /// threads share (config `shared`) once.
    pub(crate) fn mm_vmas(&self, mm: u32) -> Vec<u32> {
        let mut vmas: Vec<u32> = self.tasks.iter().filter(|t| t.kind == TaskKind::User && t.mm == mm).flat_map(|t| t.vmas.iter().copied()).collect();
        vmas.sort_unstable();
        vmas.dedup();
        vmas
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Sim, TState, TaskKind};

    /// One process of two threads (config `threads`), each with its own 1 MiB arena, or two
    /// processes.
    fn two(threads: bool) -> (Sim, u32, u32) {
        let text = format!("name = \"t\"\n[machine]\nram = \"64MiB\"\n[[task]]\nname = \"p\"\ninstances = 2\nthreads = {threads}\n[[task.mapping]]\nname = \"m\"\nkind = \"anon\"\nsize = \"1MiB\"\n[[task.phase]]\nmapping = \"m\"\npattern = \"sequential\"\n");
        let s = Sim::new(&crate::config::load(&text, "t.toml", &[]).expect("valid"));
        let users: Vec<u32> = (0..s.tasks.len() as u32).filter(|&t| s.tasks[t as usize].kind == TaskKind::User).collect();
        (s, users[0], users[1])
    }

    #[test]
    fn threads_leave_their_mappings_to_the_last_thread_of_the_process() {
        let (mut s, a, b) = two(true);
        s.tasks[a as usize].state = TState::Done;
        assert!(s.vmas_to_unmap_at_exit(a).is_empty(), "the other thread still uses the mm");
        s.tasks[b as usize].state = TState::Done;
        let mut got = s.vmas_to_unmap_at_exit(b);
        let mut all: Vec<u32> = s.tasks[a as usize].vmas.iter().chain(&s.tasks[b as usize].vmas).copied().collect();
        got.sort();
        all.sort();
        assert_eq!(got, all, "the last thread's exit tears down every thread's mappings");
        // Two processes: each one's mappings go with it.
        let (mut s, a, _) = two(false);
        s.tasks[a as usize].state = TState::Done;
        assert_eq!(s.vmas_to_unmap_at_exit(a), s.tasks[a as usize].vmas);
    }

    #[test]
    fn the_oom_killer_kills_every_thread_of_the_victim_process() {
        for threads in [true, false] {
            let (mut s, a, b) = two(threads);
            for t in [a, b] {
                s.tasks[t as usize].state = TState::Sleeping;
            }
            let v = s.tasks[b as usize].vmas[0];
            s.mem.vmas[v as usize].rss = 10;
            assert_eq!(s.oom_kill(), Some(if threads { a } else { b }));
            assert_eq!(s.stats.vm.oom_kill, 1, "one victim process");
            let killed: Vec<bool> = [a, b].iter().map(|&t| s.tasks[t as usize].oom_killed).collect();
            assert_eq!(killed, if threads { vec![true, true] } else { vec![false, true] }, "threads {threads}");
        }
    }
}
