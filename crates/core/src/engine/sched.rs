//! Scheduling: CPUs, the run queue and time slices, CFS-like sleeper placement and wakeup
//! preemption, sleeping and waking.

use super::{Ev, Sim, TState, TaskKind};
use crate::config::SimSettings;
use std::collections::VecDeque;

/// The CPUs and the run queue.
pub(crate) struct Sched {
    /// The task on each CPU.
    pub cpus: Vec<Option<u32>>,
    /// Bumped whenever a CPU changes hands, invalidating its queued `Ev::Cpu` events.
    pub cpu_token: Vec<u64>,
    pub runq: VecDeque<u32>,
    /// How far one CPU may run ahead of the next event (`sim.sync_quantum`).
    pub quantum: u64,
    pub slice: u64,
    pub wakeup_granularity: u64,
}

impl Sched {
    pub fn new(s: &SimSettings, ncpu: usize) -> Sched {
        Sched {
            cpus: vec![None; ncpu],
            cpu_token: vec![0; ncpu],
            runq: VecDeque::new(),
            quantum: s.sync_quantum.0,
            slice: s.sched_slice.0,
            wakeup_granularity: s.sched_wakeup_granularity.0,
        }
    }
}

impl Sim {
    /// A task becomes runnable at `at`. A task waking from sleep is placed like CFS places a
    /// sleeper: ahead of tasks that used their slices, and the CPU whose task has run longest
    /// is asked to reschedule once that task has run `wakeup_granularity` (CFS's
    /// sched_wakeup_granularity, 1 ms).
    pub(crate) fn make_runnable(&mut self, tid: u32, at: u64) {
        let t = &mut self.tasks[tid as usize];
        if matches!(t.state, TState::Runnable | TState::Running(_) | TState::Done) {
            return;
        }
        let sleeper = t.state != TState::New;
        t.clock = t.clock.max(at);
        self.io_schedule_end(tid, at);
        let t = &mut self.tasks[tid as usize];
        t.state = TState::Runnable;
        t.timer_token += 1;
        t.runnable_since = t.clock;
        if let Some(cpu) = self.sched.cpus.iter().position(|c| c.is_none()) {
            self.dispatch(cpu, tid, at);
            return;
        }
        if !sleeper {
            self.sched.runq.push_back(tid);
            return;
        }
        // Behind earlier sleepers, ahead of preempted tasks.
        let pos = self.sched.runq.iter().position(|&q| !self.tasks[q as usize].woken).unwrap_or(self.sched.runq.len());
        self.sched.runq.insert(pos, tid);
        self.tasks[tid as usize].woken = true;
        let gran = self.sched.wakeup_granularity;
        let victim = self
            .sched
            .cpus
            .iter()
            .filter_map(|c| *c)
            .min_by_key(|&r| (self.tasks[r as usize].slice_end, r));
        if let Some(r) = victim {
            let rt = &mut self.tasks[r as usize];
            let started = rt.slice_end.saturating_sub(self.sched.slice);
            rt.slice_end = rt.slice_end.min(started.max(at) + gran).max(started + gran);
        }
    }

    fn dispatch(&mut self, cpu: usize, tid: u32, at: u64) {
        let slice = self.sched.slice;
        let t = &mut self.tasks[tid as usize];
        t.clock = t.clock.max(at);
        t.runq_wait_ns += t.clock - t.runnable_since.min(t.clock);
        t.woken = false;
        t.state = TState::Running(cpu as u32);
        t.last_cpu = cpu as u32;
        t.slice_end = t.clock + slice;
        let c = t.clock;
        self.iowait.cpu_busy(cpu, c);
        self.sched.cpus[cpu] = Some(tid);
        self.sched.cpu_token[cpu] += 1;
        self.push(c, Ev::Cpu(cpu as u32, self.sched.cpu_token[cpu]));
    }

    /// The task on `cpu` stops running (blocked, sleeping, done): hand the CPU on.
    pub(crate) fn release_cpu(&mut self, cpu: usize, at: u64) {
        self.sched.cpus[cpu] = None;
        self.sched.cpu_token[cpu] += 1;
        if let Some(next) = self.sched.runq.pop_front() {
            self.dispatch(cpu, next, at);
        } else {
            self.iowait.cpu_idle(cpu, at);
        }
    }

    pub(super) fn run_cpu(&mut self, cpu: usize) {
        let Some(tid) = self.sched.cpus[cpu] else { return };
        let now = self.now;
        let (clock, slice_end) = {
            let t = &mut self.tasks[tid as usize];
            t.clock = t.clock.max(now);
            (t.clock, t.slice_end)
        };
        // Preempt at the end of the slice when others wait for a CPU.
        if clock >= slice_end && !self.sched.runq.is_empty() {
            let t = &mut self.tasks[tid as usize];
            t.state = TState::Runnable;
            t.runnable_since = clock;
            self.sched.runq.push_back(tid);
            self.sched.cpus[cpu] = None;
            self.sched.cpu_token[cpu] += 1;
            let next = self.sched.runq.pop_front().expect("non-empty");
            self.dispatch(cpu, next, clock);
            return;
        }
        let mut horizon = self.events.peek_time().max(now).saturating_add(self.sched.quantum);
        if !self.sched.runq.is_empty() {
            horizon = horizon.min(slice_end.max(clock + 1));
        }
        match self.tasks[tid as usize].kind {
            TaskKind::Kernel(k) => self.kthread_step(k, tid, cpu),
            TaskKind::User => self.run_user(tid, cpu, horizon),
        }
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
