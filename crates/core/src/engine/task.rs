//! Tasks: user programs and kernel threads, with their per-task statistics.

use crate::stats::{Histogram, PhaseTimes};
use crate::workload::{Op, Program, Touch};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskKind {
    User,
    /// A kernel thread: the index of its `KernelThread` in `Sim::kthreads`.
    Kernel(u32),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TState {
    /// Not started yet, or waiting on the run queue.
    Runnable,
    Running(u32),
    /// Waiting for a page's read I/O or for writeback (uses no CPU).
    Blocked,
    /// A kernel thread asleep until woken, or a task on a timer.
    Sleeping,
    Done,
    New,
}

/// What `balance_dirty_pages` asks of a writer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DirtyWait {
    None,
    /// 3.2+: sleep this long (ns).
    Pause(u64),
    /// 2.6.28: `congestion_wait(WRITE, HZ/10)`, then round the loop again (writeback/legacy.rs).
    CongestionWait,
}

pub struct Task {
    pub name: String,
    pub instance: u32,
    pub pid: u32,
    /// The address space the task runs in (`task->mm`), named by its thread group's leader:
    /// its own pid, or the first instance's for the threads of one process (config
    /// `threads`). Kernel threads have none of their own (0: never a user pid).
    pub mm: u32,
    pub kind: TaskKind,
    pub state: TState,
    pub clock: u64,
    pub start: u64,
    pub end: u64,
    pub deadline: Option<u64>,
    pub slice_end: u64,
    pub timer_token: u64,
    pub program: Option<Program>,
    pub vmas: Vec<u32>,
    /// The touch that faulted and is retried after the task wakes.
    pub pending: Option<(usize, Touch)>,
    pub fault_start: Option<u64>,
    /// This fault issued the read it waits for (counted major, no cache-hit accounting).
    pub fault_was_major: bool,
    /// Allocation attempts without reclaim progress (should_reclaim_retry, §3.3).
    pub no_progress: u32,
    pub touches: u64,
    /// Elapsed and CPU time per phase of the program (stats/phase_times.rs).
    pub phase_times: PhaseTimes,
    /// CPU time run up to `exec_start` (the stretch since is added when it ends, `cpu_at`).
    pub cpu_ns: u64,
    pub minor_faults: u64,
    pub major_faults: u64,
    pub touch_hist: Histogram,
    pub fault_hist: Histogram,
    /// `touch_hist` by what each touch met (stats/touch_kinds.rs).
    pub touch_kinds: crate::stats::touch_kinds::TouchKinds,
    pub dr_calls: u64,
    pub dr_stall_ns: u64,
    pub dr_pages: u64,
    pub dr_stall_hist: Histogram,
    pub dr_pages_hist: Histogram,
    /// Direct-reclaim stall in progress (throttled waits count as stall).
    pub dr_throttle_since: Option<u64>,
    /// A 2.6.28 direct reclaim asleep in its `congestion_wait` nap, continued on wake-up.
    pub dr_cont: Option<crate::reclaim::DirectReclaimCont>,
    /// The allocation retries after reclaim progress (2.6.28–2.6.32's HZ/50 nap, 3.14's
    /// `wait_iff_congested`) at the era's `rebalance:`, not at the free lists of the fast
    /// path (engine/memory.rs `alloc_page`, `rebalance_tries_free_lists`).
    pub alloc_rebalance: bool,
    /// Woken on `pfmemalloc_wait` (reclaim/pfmemalloc.rs): the retried allocation goes
    /// straight into `do_try_to_free_pages`, as the kernel's `try_to_free_pages` does after
    /// its throttle.
    pub pfmemalloc_woken: bool,
    /// A swap-in whose readahead window slept in the allocator, continued on wake-up.
    pub ra_cont: Option<super::swapin_window::ReadaheadCont>,
    pub oom_killed: bool,
    /// TIF_MEMDIE: chosen by a 2.6.28 OOM kill and not yet exited. Its memory is freed when
    /// it next gets a CPU and exits (there is no OOM reaper before 4.6); meanwhile
    /// `select_bad_process` chooses no other victim (engine/memory.rs `oom_kill_2_6_28`).
    pub memdie: bool,
    /// Time spent runnable but waiting for a CPU.
    pub runq_wait_ns: u64,
    pub runnable_since: u64,
    /// CFS virtual runtime (ns; nice 0: the CPU time run, as placed at wake-up).
    pub vruntime: u64,
    /// When the task was last put on a CPU (`se->exec_start`).
    pub exec_start: u64,
    /// Its place among equal vruntimes while on the run queue.
    pub rq_seq: u64,
    /// The CPU the task last ran on (where its iowait is counted, engine/iowait.rs).
    pub last_cpu: u32,
    /// Sleeping in io_schedule, counted in this CPU's `nr_iowait`.
    pub iowait_cpu: Option<u32>,
    /// Reads of a verifying phase that found no data (a page never written or lost).
    pub verify_errors: u64,
    repeat: bool,
    /// An operation (message, buffered I/O) that blocked and is retried when the task wakes.
    pub pending_op: Option<Op>,
    /// Waiting on a channel since (engine/ipc.rs).
    pub ipc_wait_since: Option<u64>,
    pub ipc_wait_ns: u64,
    pub messages_sent: u64,
    pub messages_received: u64,
    pub file_reads: u64,
    pub file_writes: u64,
    /// The run does not wait for this task (config `background`).
    pub background: bool,
    /// Requests and their latency (engine/requests.rs); None until the first request.
    pub requests: Option<Box<super::requests::Requests>>,
    /// Requests completing this long after the start are not measured (`ramp_time`).
    pub ramp_ns: u64,
    /// Dirty throttling (writeback/): pages dirtied since the last `balance_dirty_pages`, the
    /// pages after which it runs again, when the last pause ended (jiffies), the pause it
    /// asked for and not yet slept (ns), and the pauses slept.
    pub nr_dirtied: u64,
    pub nr_dirtied_pause: u64,
    /// 2.6.28: pages this writer wrote back itself in the current balance_dirty_pages loop.
    pub legacy_written: u64,
    /// 2.6.28: inside the balance_dirty_pages loop (re-entered with the next dirtied page).
    pub legacy_loop: bool,
    pub dirty_paused_when: u64,
    /// The sleep `balance_dirty_pages` asked of the writer, taken when its touch ends.
    pub dirty_wait: DirtyWait,
    pub dirty_pauses: u64,
    pub dirty_throttled_ns: u64,
    /// The task this one is forked from when it starts (config `fork_of`, engine/fork.rs).
    pub fork_parent: Option<u32>,
}

/// `Task::cpu_at` from the fields it reads, for callers that hold other fields of the task
/// borrowed.
pub fn cpu_run(state: TState, cpu_ns: u64, exec_start: u64, clock: u64) -> u64 {
    match state {
        TState::Running(_) => cpu_ns + clock.saturating_sub(exec_start),
        _ => cpu_ns,
    }
}

impl Task {
    pub fn user(name: &str, instance: u32, pid: u32, program: Program, vmas: Vec<u32>, start: u64, deadline: Option<u64>) -> Task {
        let repeat = deadline.is_some();
        let phase_times = PhaseTimes::new(program.phase_count(), start, 0);
        Task { program: Some(program), phase_times, vmas, start, clock: start, deadline, repeat, ..Task::blank(name, instance, pid, TaskKind::User) }
    }

    /// The CPU time the task has run by `clock` (its own clock while it holds a CPU): the
    /// stretches it ran before, and the one since it was last put on a CPU if it is running.
    pub fn cpu_at(&self, clock: u64) -> u64 {
        cpu_run(self.state, self.cpu_ns, self.exec_start, clock)
    }

    /// A kernel thread, asleep until its wake condition holds.
    pub fn kernel(name: &str, pid: u32, index: u32) -> Task {
        let mut t = Task::blank(name, 0, pid, TaskKind::Kernel(index));
        t.state = TState::Sleeping;
        t
    }

    fn blank(name: &str, instance: u32, pid: u32, kind: TaskKind) -> Task {
        Task {
            name: name.to_string(),
            instance,
            pid,
            mm: if kind == TaskKind::User { pid } else { 0 },
            kind,
            state: TState::New,
            clock: 0,
            start: 0,
            end: 0,
            deadline: None,
            slice_end: 0,
            fork_parent: None,
            timer_token: 0,
            program: None,
            vmas: Vec::new(),
            pending: None,
            fault_start: None,
            fault_was_major: false,
            no_progress: 0,
            touches: 0,
            phase_times: PhaseTimes::default(),
            cpu_ns: 0,
            minor_faults: 0,
            major_faults: 0,
            touch_hist: Histogram::default(),
            fault_hist: Histogram::default(),
            touch_kinds: Default::default(),
            dr_calls: 0,
            dr_stall_ns: 0,
            dr_pages: 0,
            dr_stall_hist: Histogram::default(),
            dr_pages_hist: Histogram::default(),
            dr_throttle_since: None,
            dr_cont: None,
            alloc_rebalance: false,
            pfmemalloc_woken: false,
            ra_cont: None,
            oom_killed: false,
            memdie: false,
            runq_wait_ns: 0,
            runnable_since: 0,
            vruntime: 0,
            exec_start: 0,
            rq_seq: 0,
            last_cpu: 0,
            iowait_cpu: None,
            verify_errors: 0,
            repeat: false,
            pending_op: None,
            ipc_wait_since: None,
            ipc_wait_ns: 0,
            messages_sent: 0,
            messages_received: 0,
            file_reads: 0,
            file_writes: 0,
            background: false,
            requests: None,
            ramp_ns: 0,
            nr_dirtied: 0,
            legacy_written: 0,
            legacy_loop: false,
            nr_dirtied_pause: crate::writeback::throttle::INIT_NR_DIRTIED_PAUSE,
            dirty_paused_when: 0,
            dirty_wait: DirtyWait::None,
            dirty_pauses: 0,
            dirty_throttled_ns: 0,
        }
    }

    /// Has a time limit (the fraction done follows time rather than touches).
    pub fn repeat(&self) -> bool {
        self.repeat
    }

    pub fn label(&self) -> String {
        format!("{}#{}", self.name, self.instance)
    }
}
