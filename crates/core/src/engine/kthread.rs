//! Kernel threads as a kind of task (kswapd today; a flusher, a zswap writeback worker or
//! MGLRU's aging are the same machinery).
//!
//! A kernel thread is a task with no program: when it has a CPU the engine calls its
//! [`KernelThread::step`], which does one bounded unit of work at the thread's clock (charging
//! its CPU time by advancing that clock) and says what the thread does next. A step must be
//! short enough that other tasks run in between as on a real CPU: kswapd's step is one
//! `shrink_node` pass of `balance_pgdat`, not a whole run at every priority. Its wake
//! condition lives with whoever wakes it (`wakeup_kswapd` in the allocator's slow path calls
//! [`Sim::wake`] on the thread's task).
//!
//! How to add one: implement the trait in the folder of the mechanism it serves (e.g.
//! `reclaim/kswapd.rs`), spawn it in `Sim::new` with [`Sim::spawn_kthread`], and wake it from
//! the code path that creates its work.

use super::{Ev, Sim, TState, Task};

/// What a kernel thread does after a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KthreadStep {
    /// More work: run the next step at the thread's clock (the scheduler may run others first).
    Continue,
    /// Sleep until something wakes the task ([`Sim::wake`]).
    Sleep,
    /// Wait, not on `kswapd_wait` (an allocation does not wake it), until the event it waits
    /// for wakes it ([`Sim::wake`]).
    Block,
    /// Sleep until woken or until the timer at this virtual time fires; the timer calls
    /// [`KernelThread::timer`].
    SleepUntil(u64),
}

/// A kernel thread's work. The caller (the engine) guarantees: `step` is called only while the
/// thread's task holds a CPU, with `sim.tasks[tid].clock` at or after the current event's time;
/// the thread's `Box` is taken out of `Sim::kthreads` during the call, so the implementer may
/// use all of `sim` but must not expect to find itself there. The implementer guarantees: a
/// step is bounded (one unit of reclaim or writeback work), its CPU cost is added to the
/// task's clock, and it never blocks on anything but the returned [`KthreadStep`].
pub trait KernelThread {
    /// The thread's name as `ps` shows it (`kswapd0`).
    fn name(&self) -> &'static str;
    /// One bounded unit of work.
    fn step(&mut self, sim: &mut Sim, tid: u32) -> KthreadStep;
    /// The timer of a [`KthreadStep::SleepUntil`] fired while the thread still slept; return
    /// true to run again.
    fn timer(&mut self, sim: &mut Sim, tid: u32) -> bool;
}

impl Sim {
    /// Create a kernel thread's task and return its task id. It sleeps until woken, or first
    /// runs at `first_run` (a periodic thread such as a flusher).
    pub fn spawn_kthread(&mut self, kt: Box<dyn KernelThread>, first_run: Option<u64>) -> u32 {
        let tid = self.tasks.len() as u32;
        let pid = tid + 1;
        let index = self.kthreads.len() as u32;
        self.tasks.push(Task::kernel(kt.name(), pid, index));
        self.kthreads.push(Some(kt));
        if let Some(t) = first_run {
            self.push(t, Ev::Start(tid));
        }
        tid
    }

    fn take_kthread(&mut self, k: u32) -> Box<dyn KernelThread> {
        self.kthreads[k as usize].take().expect("a kernel thread's step re-entered itself")
    }

    /// Run one step of kernel thread `k` (task `tid`) on `cpu`, then do what it asks.
    pub(super) fn kthread_step(&mut self, k: u32, tid: u32, cpu: usize) {
        let mut kt = self.take_kthread(k);
        let next = kt.step(self, tid);
        self.kthreads[k as usize] = Some(kt);
        let at = self.tasks[tid as usize].clock;
        match next {
            KthreadStep::Continue => self.continue_on_cpu(tid, cpu),
            KthreadStep::Sleep => {
                self.tasks[tid as usize].state = TState::Sleeping;
                self.release_cpu(cpu, at);
            }
            KthreadStep::Block => {
                self.tasks[tid as usize].state = TState::Blocked;
                self.release_cpu(cpu, at);
            }
            KthreadStep::SleepUntil(until) => {
                let t = &mut self.tasks[tid as usize];
                t.state = TState::Blocked;
                t.timer_token += 1;
                let token = t.timer_token;
                self.push(until, Ev::Timer(tid, token));
                self.release_cpu(cpu, at);
            }
        }
    }

    /// A kernel thread's timer fired.
    pub(super) fn kthread_timer(&mut self, k: u32, tid: u32) {
        let mut kt = self.take_kthread(k);
        let run = kt.timer(self, tid);
        self.kthreads[k as usize] = Some(kt);
        if run {
            let now = self.now;
            self.wake(tid, now);
        }
    }
}
