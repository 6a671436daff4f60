//! Scheduling: CPUs, one CFS-like run queue ordered by virtual runtime, time slices, sleeper
//! placement and wakeup preemption, sleeping and waking.
//!
//! Every task has nice 0, so its virtual runtime is the CPU time it has run. The run queue
//! is ordered by it (`__pick_first_entity`): a task preempted at the end of its slice goes
//! back at its own vruntime, so a thread that ran little (a flusher, kswapd) runs again
//! before tasks that ran more, however many sleepers keep waking around it. A waking sleeper
//! is placed no further behind `min_vruntime` than the sleeper credit (`place_entity`:
//! the scaled `sched_latency`, halved since 2.6.32's GENTLE_FAIR_SLEEPERS); a new task starts
//! one slice after it (START_DEBIT). A waking task preempts the running task furthest ahead
//! in vruntime when it is ahead by more than `sched_wakeup_granularity`
//! (`check_preempt_wakeup`). One queue serves every CPU (no per-CPU queues, no load
//! balancing); slices are the fixed `sched_slice`.

use super::{Ev, Sim, TState, TaskKind};
use crate::config::SimSettings;
use std::collections::BTreeSet;

/// The CPUs and the run queue.
pub(crate) struct Sched {
    /// The task on each CPU.
    pub cpus: Vec<Option<u32>>,
    /// Bumped whenever a CPU changes hands, invalidating its queued `Ev::Cpu` events.
    pub cpu_token: Vec<u64>,
    /// When each idle CPU's last task left it. A task's kernel work runs atomically at its
    /// own clock, so a CPU can be given up at a time later than the event being processed
    /// (a direct reclaim pass that spun on the lru_lock for 100 ms): it is not free before.
    pub idle_from: Vec<u64>,
    /// Runnable tasks by (vruntime, enqueue order, tid): the leftmost runs next; among equal
    /// vruntimes the one queued first (the rbtree puts an equal key to the right).
    pub runq: BTreeSet<(u64, u64, u32)>,
    /// Enqueue counter (the order part of the key).
    pub enqueued: u64,
    /// `cfs_rq->min_vruntime`: never decreases.
    pub min_vruntime: u64,
    /// How far one CPU may run ahead of the next event (`sim.sync_quantum`).
    pub quantum: u64,
    pub slice: u64,
    pub wakeup_granularity: u64,
    /// The most a waking sleeper's vruntime is credited below `min_vruntime`.
    pub sleeper_credit: u64,
}

impl Sched {
    /// `gentle_sleepers`: 2.6.32+ credits half the latency (GENTLE_FAIR_SLEEPERS), 2.6.28 all
    /// of it (NEW_FAIR_SLEEPERS).
    pub fn new(s: &SimSettings, ncpu: usize, gentle_sleepers: bool) -> Sched {
        // sched_init_granularity: SCHED_TUNABLESCALING_LOG, factor 1 + ilog2(min(cpus, 8)).
        let factor = 1 + (ncpu.clamp(1, 8) as u64).ilog2() as u64;
        let latency = s.sched_latency.0 * factor;
        Sched {
            cpus: vec![None; ncpu],
            cpu_token: vec![0; ncpu],
            idle_from: vec![0; ncpu],
            runq: BTreeSet::new(),
            enqueued: 0,
            min_vruntime: 0,
            quantum: s.sync_quantum.0,
            slice: s.sched_slice.0,
            wakeup_granularity: s.sched_wakeup_granularity.0,
            sleeper_credit: if gentle_sleepers { latency / 2 } else { latency },
        }
    }
}

impl Sim {
    /// A task becomes runnable at `at`, placed in the run queue as CFS places it.
    pub(crate) fn make_runnable(&mut self, tid: u32, at: u64) {
        let t = &mut self.tasks[tid as usize];
        if matches!(t.state, TState::Runnable | TState::Running(_) | TState::Done) {
            return;
        }
        let sleeper = t.state != TState::New;
        t.clock = t.clock.max(at);
        self.io_schedule_end(tid, at);
        self.update_min_vruntime(at);
        let (min_v, credit, slice) = (self.sched.min_vruntime, self.sched.sleeper_credit, self.sched.slice);
        let t = &mut self.tasks[tid as usize];
        t.state = TState::Runnable;
        t.timer_token += 1;
        t.runnable_since = t.clock;
        t.vruntime = if sleeper { t.vruntime.max(min_v.saturating_sub(credit)) } else { t.vruntime.max(min_v + slice) };
        // The first CPU idle at `at`; failing that, the idle CPU whose task left it first: one
        // given up in the future of `at` takes the task when it frees, not before (no CPU runs
        // two tasks at once).
        let idle_cpus = || (0..self.sched.cpus.len()).filter(|&c| self.sched.cpus[c].is_none());
        let idle = idle_cpus().find(|&c| self.sched.idle_from[c] <= at).or_else(|| idle_cpus().min_by_key(|&c| (self.sched.idle_from[c], c)));
        if let Some(cpu) = idle {
            let from = at.max(self.sched.idle_from[cpu]);
            self.dispatch(cpu, tid, from);
            return;
        }
        let v = self.tasks[tid as usize].vruntime;
        self.enqueue(tid);
        if sleeper {
            self.check_preempt_wakeup(v, at);
        }
    }

    /// `check_preempt_wakeup`: the running task furthest ahead in vruntime is asked to
    /// reschedule when the woken task (at vruntime `v`) is behind it by more than the
    /// wakeup granularity.
    fn check_preempt_wakeup(&mut self, v: u64, at: u64) {
        let victim = self.sched.cpus.iter().filter_map(|c| *c).max_by_key(|&r| (self.curr_vruntime(r, at), r));
        if let Some(r) = victim {
            if self.curr_vruntime(r, at) > v + self.sched.wakeup_granularity {
                let rt = &mut self.tasks[r as usize];
                rt.slice_end = rt.slice_end.min(at.max(rt.exec_start));
            }
        }
    }

    /// `update_min_vruntime`: the least vruntime of the running and the queued tasks, never
    /// moving back.
    fn update_min_vruntime(&mut self, at: u64) {
        let queued = self.sched.runq.first().map(|&(v, _, _)| v);
        let running = self.sched.cpus.iter().filter_map(|c| *c).map(|r| self.curr_vruntime(r, at)).min();
        if let Some(m) = queued.into_iter().chain(running).min() {
            self.sched.min_vruntime = self.sched.min_vruntime.max(m);
        }
    }

    /// The vruntime of running task `tid` at `at`, counting the CPU it has had since dispatch.
    fn curr_vruntime(&self, tid: u32, at: u64) -> u64 {
        let t = &self.tasks[tid as usize];
        t.vruntime + at.max(t.clock).saturating_sub(t.exec_start)
    }

    /// `update_curr` for the task leaving `cpu` at `at`: the stretch it ran is its CPU time
    /// and, at nice 0, its vruntime.
    fn account_exec(&mut self, tid: u32, at: u64) {
        let t = &mut self.tasks[tid as usize];
        let ran = at.saturating_sub(t.exec_start);
        t.vruntime += ran;
        t.cpu_ns += ran;
        t.exec_start = at;
    }

    /// Put runnable task `tid` on the run queue at its vruntime, behind equal ones.
    fn enqueue(&mut self, tid: u32) {
        self.sched.enqueued += 1;
        let t = &mut self.tasks[tid as usize];
        t.rq_seq = self.sched.enqueued;
        self.sched.runq.insert((t.vruntime, t.rq_seq, tid));
    }

    /// The leftmost runnable task, off the queue.
    fn pick_next(&mut self) -> Option<u32> {
        self.sched.runq.pop_first().map(|(_, _, tid)| tid)
    }

    /// Take a runnable task off the run queue (it was killed).
    pub(crate) fn dequeue(&mut self, tid: u32) {
        let t = &self.tasks[tid as usize];
        self.sched.runq.remove(&(t.vruntime, t.rq_seq, tid));
    }

    fn dispatch(&mut self, cpu: usize, tid: u32, at: u64) {
        if let Some(steal) = self.steal.as_mut() {
            // What dom0 took while the vCPU had nothing to run delayed nothing (steal.rs).
            steal.settle_idle(cpu, at);
        }
        let slice = self.sched.slice;
        let t = &mut self.tasks[tid as usize];
        t.clock = t.clock.max(at);
        t.runq_wait_ns += t.clock - t.runnable_since.min(t.clock);
        t.state = TState::Running(cpu as u32);
        t.exec_start = t.clock;
        t.last_cpu = cpu as u32;
        t.slice_end = t.clock + slice;
        let c = t.clock;
        self.iowait.cpu_busy(cpu, c);
        if t.kind == TaskKind::User {
            let mm = t.mm;
            self.reclaim.tlb.note_switch_to(mm, cpu, self.sched.cpus.len());
        }
        self.sched.cpus[cpu] = Some(tid);
        self.sched.cpu_token[cpu] += 1;
        self.push(c, Ev::Cpu(cpu as u32, self.sched.cpu_token[cpu]));
    }

    /// The task on `cpu` stops running (blocked, sleeping, done): hand the CPU on.
    pub(crate) fn release_cpu(&mut self, cpu: usize, at: u64) {
        let mut at = at;
        if let Some(prev) = self.sched.cpus[cpu] {
            at = self.charge_steal(cpu, prev, at);
            self.account_exec(prev, at);
        }
        self.sched.cpus[cpu] = None;
        self.sched.cpu_token[cpu] += 1;
        if let Some(next) = self.pick_next() {
            self.dispatch(cpu, next, at);
        } else {
            self.sched.idle_from[cpu] = at;
            self.iowait.cpu_idle(cpu, at);
        }
    }

    pub(super) fn run_cpu(&mut self, cpu: usize) {
        let Some(tid) = self.sched.cpus[cpu] else { return };
        self.mem.cpu = cpu;
        let now = self.now;
        let clock = {
            let t = &mut self.tasks[tid as usize];
            t.clock = t.clock.max(now);
            t.clock
        };
        // Xen PV: dom0 had the CPU in the meantime, or has it now (steal.rs): the task goes on
        // when the vCPU runs again, after the events before that.
        if self.charge_steal(cpu, tid, clock) > clock {
            let c = self.tasks[tid as usize].clock;
            self.push(c, Ev::Cpu(cpu as u32, self.sched.cpu_token[cpu]));
            return;
        }
        let slice_end = self.tasks[tid as usize].slice_end;
        // Preempt at the end of the slice when others wait for a CPU.
        if clock >= slice_end && !self.sched.runq.is_empty() {
            self.account_exec(tid, clock);
            let t = &mut self.tasks[tid as usize];
            t.state = TState::Runnable;
            t.runnable_since = clock;
            self.enqueue(tid);
            self.sched.cpus[cpu] = None;
            self.sched.cpu_token[cpu] += 1;
            let next = self.pick_next().expect("non-empty");
            self.dispatch(cpu, next, clock);
            return;
        }
        // A reclaimer that slept (or was preempted) holding a batch isolated is done with it.
        self.reclaim.isolation.release(tid, clock);
        let mut horizon = self.event_horizon();
        if !self.sched.runq.is_empty() {
            horizon = horizon.min(slice_end.max(clock + 1));
        }
        match self.tasks[tid as usize].kind {
            TaskKind::Kernel(k) => self.kthread_step(k, tid, cpu),
            TaskKind::User if self.tasks[tid as usize].memdie => self.memdie_exit(tid, cpu),
            TaskKind::User => {
                self.reclaim.lru_lock.running = Some((tid, cpu));
                self.run_user(tid, cpu, horizon);
                self.reclaim.lru_lock.running = None;
            }
        }
    }

    /// Xen PV steal (steal.rs): the stolen stretches since `cpu`'s time was last settled,
    /// charged to `tid`, which has run on it to `at`. Returns when its work really ended; the
    /// task's clock, and its exec start and slice end with it (2.6.32's `xen_sched_clock`
    /// counts running time only, so CFS does not charge the stolen time), move by as much.
    fn charge_steal(&mut self, cpu: usize, tid: u32, at: u64) -> u64 {
        let Some(steal) = self.steal.as_mut() else { return at };
        let end = steal.charge(cpu, at);
        let stolen = end - at;
        if stolen > 0 {
            let t = &mut self.tasks[tid as usize];
            t.clock = t.clock.max(end);
            t.exec_start += stolen;
            t.slice_end += stolen;
        }
        end
    }

    /// How far a running task may go before it must return to the event loop: the next
    /// event's time plus the sync quantum (engine/mod.rs).
    pub(super) fn event_horizon(&self) -> u64 {
        self.events.peek_time().max(self.now).saturating_add(self.sched.quantum)
    }

    /// Continue the task on `cpu` at its clock (after kernel work that did not block).
    pub(crate) fn continue_on_cpu(&mut self, tid: u32, cpu: usize) {
        let c = self.tasks[tid as usize].clock;
        self.push(c, Ev::Cpu(cpu as u32, self.sched.cpu_token[cpu]));
    }
    /// Block `tid` (off the run queue, in D state) until its timer at its own clock +
    /// `timeout`, or an earlier wake-up.
    pub(crate) fn block_for(&mut self, tid: u32, timeout: u64) {
        let t = &mut self.tasks[tid as usize];
        t.state = TState::Blocked;
        t.timer_token += 1;
        let (token, wake_at) = (t.timer_token, t.clock + timeout);
        self.push(wake_at, Ev::Timer(tid, token));
    }

    pub(crate) fn sleep_until(&mut self, tid: u32, at: u64) {
        let t = &mut self.tasks[tid as usize];
        t.state = TState::Sleeping;
        t.timer_token += 1;
        let token = t.timer_token;
        self.push(at, Ev::Timer(tid, token));
    }

    pub(super) fn timer(&mut self, tid: u32, token: u64) {
        let t = &self.tasks[tid as usize];
        if t.timer_token != token || !matches!(t.state, TState::Blocked | TState::Sleeping) {
            return;
        }
        if let TaskKind::Kernel(k) = self.tasks[tid as usize].kind {
            self.kthread_timer(k, tid);
            return;
        }
        self.io.writeback_waiters.retain(|&w| w != tid);
        self.io.congestion_waiters.retain(|&w| w != tid);
        self.io.noprogress_waiters.retain(|&w| w != tid);
        self.reclaim.isolation.waiters.retain(|&w| w != tid);
        let now = self.now;
        self.wake(tid, now);
    }

    pub(crate) fn wake(&mut self, tid: u32, at: u64) {
        let wake_cost = self.costs.wakeup_ns;
        let t = &mut self.tasks[tid as usize];
        if t.state == TState::Done {
            return;
        }
        t.clock = t.clock.max(at) + wake_cost;
        self.make_runnable(tid, at);
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::{Sim, TState};

    /// Guards the idle CPU's release time: a task whose kernel work ran ahead of the event
    /// loop (a direct reclaim pass is atomic at its clock) gives its CPU up at that clock; a
    /// task woken earlier in virtual time gets the CPU only from then. Handed over at the
    /// wake-up's time, the two ran on one CPU at once: a 2.6.28 hackbench of 5,600 processes
    /// on 4 CPUs (seed 001) ran 137 s of CPU in 19.9 s, 87 s of it spinning on the lru_lock
    /// against tasks that could not have been running.
    #[test]
    fn a_cpu_given_up_ahead_of_the_event_loop_runs_no_woken_task_before_it_is_free() {
        let text = "name = \"t\"\n[machine]\ncpus = 1\nram = \"64MiB\"\n[[task]]\nname = \"t\"\ninstances = 2\n[[task.mapping]]\nname = \"m\"\nkind = \"anon\"\nsize = \"1MiB\"\n[[task.phase]]\nmapping = \"m\"\npattern = \"sequential\"\n";
        let r = crate::config::load(text, "t.toml", &[]).expect("valid");
        let mut s = Sim::new(&r);
        let (a, b) = (0, 1);
        s.make_runnable(a, 0);
        assert_eq!(s.sched.cpus[0], Some(a));
        // `a` runs 100 ms of kernel work at once, then sleeps: its CPU is free at 100 ms.
        let ahead = 100_000_000;
        s.tasks[a as usize].clock = ahead;
        s.tasks[a as usize].state = TState::Blocked;
        s.release_cpu(0, ahead);
        assert_eq!(s.sched.cpus[0], None, "nothing else was runnable");
        // `b` wakes at time 0 (the event loop is still there).
        s.make_runnable(b, 0);
        assert_eq!(s.sched.cpus[0], Some(b));
        let t = &s.tasks[b as usize];
        assert!(t.exec_start >= ahead && t.clock >= ahead, "b runs from {} ns on a CPU busy until {ahead} ns", t.exec_start);
    }
}
