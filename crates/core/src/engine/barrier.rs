//! Barriers between phases (config `barrier`, [`crate::workload::Op::Barrier`]): the instances
//! of a task begin the phase together.
//!
//! An instance that reaches the barrier sleeps (off the CPU, as in `futex_wait`) until every
//! instance of its task has reached it or has exited; the last to arrive wakes the others at
//! its clock and goes on. Seed 004's memcached benchmark needs it: the fill and the gets are
//! two memtier runs one after the other, so the gets begin when the whole store is written,
//! not when each server thread's own part is (the model's server threads carry both runs as
//! two phases; kv_conn.rs).
//!
//! A kv worker arriving at the barrier first ends the request it served and sends the
//! replies it built, as memcached transmits before it waits for more (kv_conn.rs): the
//! client of the first run has every reply before the second run begins.

use super::{Sim, TState};
use crate::config::Resolved;

/// One task's barriers: for each phase with one, which instances have arrived, and those
/// waiting at it.
#[derive(Clone, Debug, Default)]
struct TaskBarriers {
    first_tid: u32,
    instances: u32,
    /// (phase, arrived per instance, waiting tids)
    at: Vec<(u32, Vec<bool>, Vec<u32>)>,
}

/// Every task's barriers, and which task a tid is an instance of.
#[derive(Clone, Debug, Default)]
pub struct Barriers {
    tasks: Vec<TaskBarriers>,
    of_tid: Vec<Option<u32>>,
}

impl Barriers {
    /// The barriers of the configuration's tasks (`first_tid[ti]`: task ti's first instance).
    pub fn new(cfg: &Resolved, first_tid: &[u32], ntasks: usize) -> Barriers {
        let mut out = Barriers { tasks: Vec::new(), of_tid: vec![None; ntasks] };
        for (ti, t) in cfg.config.tasks.iter().enumerate() {
            let at: Vec<_> = t.phases.iter().enumerate().filter(|(_, p)| p.barrier).map(|(pi, _)| (pi as u32, vec![false; t.instances as usize], Vec::new())).collect();
            if at.is_empty() {
                continue;
            }
            let id = out.tasks.len() as u32;
            for inst in 0..t.instances {
                out.of_tid[(first_tid[ti] + inst) as usize] = Some(id);
            }
            out.tasks.push(TaskBarriers { first_tid: first_tid[ti], instances: t.instances, at });
        }
        out
    }
}

impl Sim {
    /// Task `tid` arrives at the barrier before `phase`: `true` when it may go on (it is the
    /// last, and has woken the others), `false` when it sleeps.
    pub(crate) fn barrier_arrive(&mut self, tid: u32, phase: u32) -> bool {
        let at = self.tasks[tid as usize].clock;
        // The last request before the barrier is complete, and its reply goes out.
        self.close_request(tid, at);
        self.kv_server_idle(tid);
        let id = self.barriers.of_tid[tid as usize].expect("a task with a barrier phase") as usize;
        let tb = &mut self.barriers.tasks[id];
        let b = tb.at.iter_mut().find(|b| b.0 == phase).expect("the phase has a barrier");
        b.1[(tid - tb.first_tid) as usize] = true;
        if self.barrier_release(id, phase, tid) {
            return true;
        }
        let tb = &mut self.barriers.tasks[id];
        tb.at.iter_mut().find(|b| b.0 == phase).expect("the phase has a barrier").2.push(tid);
        self.ipc_block(tid);
        false
    }

    /// Wake the waiters of task `id`'s barrier before `phase` if every instance has arrived or
    /// exited (`by`: the instance whose arrival or exit completed it; the wake-up is at its
    /// clock). Returns whether it opened.
    fn barrier_release(&mut self, id: usize, phase: u32, by: u32) -> bool {
        let tb = &self.barriers.tasks[id];
        let b = tb.at.iter().find(|b| b.0 == phase).expect("the phase has a barrier");
        let open = (0..tb.instances).all(|i| b.1[i as usize] || self.tasks[(tb.first_tid + i) as usize].state == TState::Done);
        if !open {
            return false;
        }
        let at = self.tasks[by as usize].clock;
        let tb = &mut self.barriers.tasks[id];
        let waiters = std::mem::take(&mut tb.at.iter_mut().find(|b| b.0 == phase).expect("the phase has a barrier").2);
        for w in waiters {
            // The barrier is passed: the op that blocked is not retried.
            self.tasks[w as usize].pending_op = None;
            self.ipc_wake(w, at);
        }
        true
    }

    /// Task `tid` exited: a barrier its task's other instances wait at may now be complete.
    pub(crate) fn barrier_task_done(&mut self, tid: u32) {
        let Some(id) = self.barriers.of_tid.get(tid as usize).copied().flatten() else { return };
        let phases: Vec<u32> = self.barriers.tasks[id as usize].at.iter().filter(|b| !b.2.is_empty()).map(|b| b.0).collect();
        for phase in phases {
            self.barrier_release(id as usize, phase, tid);
        }
    }

}

#[cfg(test)]
mod tests {
    use super::super::{Sim, TState, TaskKind};

    /// Three instances of a program of two phases, the second behind a barrier.
    fn three() -> (Sim, Vec<u32>) {
        let text = "name = \"t\"\n[machine]\nram = \"64MiB\"\ncpus = 4\n[[task]]\nname = \"p\"\ninstances = 3\n[[task.mapping]]\nname = \"m\"\nkind = \"anon\"\nsize = \"64KiB\"\n[[task.phase]]\nmapping = \"m\"\npattern = \"sequential\"\n[[task.phase]]\nmapping = \"m\"\npattern = \"sequential\"\nbarrier = true\n";
        let s = Sim::new(&crate::config::load(text, "t.toml", &[]).expect("valid"));
        let users = (0..s.tasks.len() as u32).filter(|&t| s.tasks[t as usize].kind == TaskKind::User).collect();
        (s, users)
    }

    #[test]
    fn the_last_instance_to_arrive_wakes_the_others() {
        let (mut s, u) = three();
        for &t in &u {
            s.tasks[t as usize].state = TState::Running(0);
        }
        s.tasks[u[2] as usize].clock = 5_000;
        assert!(!s.barrier_arrive(u[0], 1), "two instances have not arrived");
        assert!(!s.barrier_arrive(u[1], 1));
        assert_eq!(s.tasks[u[0] as usize].state, TState::Blocked, "waiting at the barrier");
        assert!(s.barrier_arrive(u[2], 1), "the last one goes on");
        for &t in &u[..2] {
            assert_ne!(s.tasks[t as usize].state, TState::Blocked, "woken by the last arrival");
            assert_eq!(s.tasks[t as usize].ipc_wait_ns, 5_000, "asleep until the last arrival's clock");
        }
    }

    #[test]
    fn an_instance_that_exits_before_the_barrier_does_not_hold_the_others() {
        let (mut s, u) = three();
        for &t in &u {
            s.tasks[t as usize].state = TState::Running(0);
        }
        assert!(!s.barrier_arrive(u[0], 1));
        assert!(!s.barrier_arrive(u[1], 1));
        // The third is killed (or runs out of time) before it reaches the barrier.
        s.tasks[u[2] as usize].state = TState::Sleeping;
        s.finish_task(u[2], usize::MAX, true);
        for &t in &u[..2] {
            assert_ne!(s.tasks[t as usize].state, TState::Blocked, "the exit opened the barrier");
        }
    }
}
