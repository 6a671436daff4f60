//! iowait accounting as the kernel does it (`kernel/sched/cputime.c`, `account_idle_time`):
//! a tick that finds a CPU idle is iowait when that CPU's run queue has `nr_iowait > 0`, and a
//! task adds to `nr_iowait` of the CPU it last ran on while it sleeps in `io_schedule`
//! (`current->in_iowait`). So iowait is a property of an idle CPU, not of a task: a CPU that
//! has other work is busy, however many tasks wait for I/O; a task waiting for I/O on a
//! machine with spare CPUs makes only its own CPU's idle time iowait.
//!
//! The model integrates exactly rather than sampling at ticks: per CPU, the time during which
//! it is idle and has an iowait sleeper is summed. The sleeps that count are those the kernel
//! takes with `io_schedule`: waiting for a page's read (`folio_wait_locked` / `lock_page`),
//! and, before 5.16, the reclaim naps of `congestion_wait` (`io_schedule_timeout`; 5.16+
//! `reclaim_throttle` uses plain `schedule_timeout`, which is not iowait). Callers mark such
//! sleeps with [`Sim::io_schedule`]; waking (or dying) ends them (2.6.28's reclaim naps are
//! real sleeps, `engine/congestion.rs`).

use super::{Sim, TState};

/// Per-CPU iowait state and totals.
pub(crate) struct IowaitAcct {
    /// Tasks sleeping in io_schedule that last ran on this CPU (`rq->nr_iowait`).
    nr: Vec<u32>,
    /// Since when the CPU has been idle, if it is.
    idle_since: Vec<Option<u64>>,
    /// Iowait time summed per CPU.
    total_ns: Vec<u64>,
}

impl IowaitAcct {
    pub fn new(cpus: usize) -> IowaitAcct {
        // Every CPU starts idle at time 0 (nothing has been dispatched yet).
        IowaitAcct { nr: vec![0; cpus], idle_since: vec![Some(0); cpus], total_ns: vec![0; cpus] }
    }

    /// Close the CPU's current idle stretch at `at`, counting it as iowait if it was.
    fn settle(&mut self, cpu: usize, at: u64) {
        if let Some(since) = self.idle_since[cpu] {
            if self.nr[cpu] > 0 {
                self.total_ns[cpu] += at.saturating_sub(since);
            }
            self.idle_since[cpu] = Some(at.max(since));
        }
    }

    pub fn cpu_idle(&mut self, cpu: usize, at: u64) {
        if self.idle_since[cpu].is_none() {
            self.idle_since[cpu] = Some(at);
        }
    }

    pub fn cpu_busy(&mut self, cpu: usize, at: u64) {
        self.settle(cpu, at);
        self.idle_since[cpu] = None;
    }

    /// Iowait summed over CPUs up to `end` (open idle stretches counted to `end`).
    pub fn total_ns(&self, end: u64) -> u64 {
        let open: u64 = (0..self.nr.len())
            .filter(|&c| self.nr[c] > 0)
            .filter_map(|c| self.idle_since[c].map(|s| end.saturating_sub(s)))
            .sum();
        self.total_ns.iter().sum::<u64>() + open
    }
}

impl Sim {
    /// Task `tid` is about to sleep in `io_schedule` (before it gives its CPU up).
    pub(crate) fn io_schedule(&mut self, tid: u32) {
        let t = &mut self.tasks[tid as usize];
        if t.iowait_cpu.is_some() {
            return;
        }
        let cpu = match t.state {
            TState::Running(c) => c,
            _ => t.last_cpu,
        } as usize;
        t.iowait_cpu = Some(cpu as u32);
        let at = t.clock;
        self.iowait.settle(cpu, at);
        self.iowait.nr[cpu] += 1;
    }

    /// Task `tid`'s io_schedule sleep ends at `at` (woken, timed out or killed).
    pub(crate) fn io_schedule_end(&mut self, tid: u32, at: u64) {
        let Some(cpu) = self.tasks[tid as usize].iowait_cpu.take() else { return };
        let cpu = cpu as usize;
        self.iowait.settle(cpu, at);
        self.iowait.nr[cpu] -= 1;
    }
}
