//! CFQ, the Completely Fair Queueing scheduler (`block/cfq-iosched.c`), the default I/O
//! scheduler of the 2.6.28 and 3.x profiles' disks: each process's synchronous requests (reads:
//! a swap-in fault and its readahead) wait in that process's own queue, asynchronous ones
//! (reclaim's swap-out writes) in one shared queue; the disk serves one queue at a time for a
//! time slice (`slice_sync` 100 ms, `slice_async` 40 ms), then the next busy queue in
//! round-robin order. Within a queue requests go in sector order from the head position (one
//! way, then from the lowest sector), except that the oldest is served first when its FIFO
//! deadline (`fifo_expire_sync` 125 ms, `fifo_expire_async` 250 ms) has passed at the start of
//! a slice. A synchronous request arriving while the asynchronous queue holds the disk ends
//! that slice (`cfq_should_preempt`). Requests merge, back and front, with queued requests of
//! the same queue (`cfq_allow_merge`: never a read into a write's queue).
//!
//! Simplifications: no idling (`slice_idle`, 8 ms, during which CFQ keeps an emptied
//! synchronous queue active waiting for its process's next request: the model moves on at
//! once); one priority level (every task best-effort 4, so every slice has its base length);
//! no `quantum` limit on requests in flight per queue (the devices that take CFQ here serve one
//! or a few at a time); no back-seek penalty in the sector order.

use super::deadline::{Insert, Queued};
use std::collections::VecDeque;

/// Whose queue a request waits in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CfqOwner {
    /// A process's synchronous queue (its task id; `u32::MAX` for reads without one).
    Sync(u32),
    /// The shared asynchronous queue.
    Async,
}

/// The tunables (`/sys/block/*/queue/iosched/`, 2.6.28 defaults).
#[derive(Clone, Copy, Debug)]
pub struct CfqTunables {
    pub slice_sync_ns: u64,
    pub slice_async_ns: u64,
    pub fifo_expire_sync_ns: u64,
    pub fifo_expire_async_ns: u64,
    pub max_request_pages: u32,
}

impl CfqTunables {
    /// cfq_slice_sync = HZ/10, cfq_slice_async = HZ/25, cfq_fifo_expire = {HZ/4 async, HZ/8 sync}.
    pub const DEFAULT: CfqTunables = CfqTunables {
        slice_sync_ns: 100_000_000,
        slice_async_ns: 40_000_000,
        fifo_expire_sync_ns: 125_000_000,
        fifo_expire_async_ns: 250_000_000,
        max_request_pages: 128,
    };
}

#[derive(Clone, Debug)]
struct CfqQueue {
    owner: CfqOwner,
    /// Arrival order.
    fifo: Vec<Queued>,
}

#[derive(Clone, Debug, Default)]
pub struct Cfq {
    queues: Vec<CfqQueue>,
    /// Busy queues waiting for a slice, in round-robin order (indices into `queues`).
    rr: VecDeque<usize>,
    active: Option<usize>,
    slice_end: u64,
    /// The active queue has dispatched in this slice (the FIFO is checked at its start).
    dispatched_in_slice: bool,
    /// Where the last dispatched request ended.
    pos: u64,
}

impl Cfq {
    pub fn len(&self) -> usize {
        self.queues.iter().map(|q| q.fifo.len()).sum()
    }

    fn queue_of(&mut self, owner: CfqOwner) -> usize {
        if let Some(i) = self.queues.iter().position(|q| q.owner == owner) {
            return i;
        }
        self.queues.push(CfqQueue { owner, fifo: Vec::new() });
        self.queues.len() - 1
    }

    pub fn insert(&mut self, t: &CfqTunables, q: Queued, owner: CfqOwner) -> Insert {
        let owner = if q.req.write { CfqOwner::Async } else { owner };
        let i = self.queue_of(owner);
        if let Some(token) = super::deadline::try_merge(self.queues[i].fifo.iter_mut(), &q, t.max_request_pages) {
            return Insert::Merged(token);
        }
        self.queues[i].fifo.push(q);
        if self.active != Some(i) && !self.rr.contains(&i) {
            self.rr.push_back(i);
        }
        if let (CfqOwner::Sync(_), Some(a)) = (owner, self.active) {
            if self.queues[a].owner == CfqOwner::Async {
                self.slice_end = 0; // preempt the asynchronous slice
            }
        }
        Insert::Queued
    }

    /// The request to start now, if any.
    pub fn dispatch(&mut self, t: &CfqTunables, now: u64) -> Option<Queued> {
        loop {
            if let Some(a) = self.active {
                if now < self.slice_end && !self.queues[a].fifo.is_empty() {
                    return Some(self.take(t, a, now));
                }
                self.active = None;
                if !self.queues[a].fifo.is_empty() {
                    self.rr.push_back(a);
                }
            }
            let next = self.rr.pop_front()?;
            let slice = if self.queues[next].owner == CfqOwner::Async { t.slice_async_ns } else { t.slice_sync_ns };
            self.active = Some(next);
            self.slice_end = now + slice;
            self.dispatched_in_slice = false;
        }
    }

    fn take(&mut self, t: &CfqTunables, a: usize, now: u64) -> Queued {
        let q = &self.queues[a];
        let expire = if q.owner == CfqOwner::Async { t.fifo_expire_async_ns } else { t.fifo_expire_sync_ns };
        let expired = !self.dispatched_in_slice && now >= q.fifo[0].at + expire;
        let i = if expired {
            0
        } else {
            let ahead = q.fifo.iter().enumerate().filter(|(_, x)| x.req.start >= self.pos).min_by_key(|(_, x)| x.req.start);
            let lowest = || q.fifo.iter().enumerate().min_by_key(|(_, x)| x.req.start);
            ahead.or_else(lowest).map(|(i, _)| i).expect("a non-empty queue")
        };
        self.dispatched_in_slice = true;
        let r = self.queues[a].fifo.remove(i);
        self.pos = r.req.start + r.req.pages as u64;
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::Request;

    fn q(token: u32, start: u64, write: bool, at: u64) -> Queued {
        Queued { token, req: Request { start, pages: 1, write }, at }
    }

    #[test]
    fn each_process_gets_a_slice_of_its_own() {
        let t = CfqTunables::DEFAULT;
        let mut c = Cfq::default();
        for i in 0..3 {
            c.insert(&t, q(i, 1000 + i as u64 * 10, false, 0), CfqOwner::Sync(1));
            c.insert(&t, q(10 + i, 10 + i as u64 * 10, false, 0), CfqOwner::Sync(2));
        }
        let order: Vec<u32> = (0..6).map(|k| c.dispatch(&t, k).unwrap().token).collect();
        assert_eq!(order, vec![0, 1, 2, 10, 11, 12], "task 1's queue for its slice, then task 2's, not sector order across them");
    }

    #[test]
    fn a_slice_ends_after_its_time_and_the_next_queue_is_served() {
        let t = CfqTunables::DEFAULT;
        let mut c = Cfq::default();
        for i in 0..4 {
            c.insert(&t, q(i, i as u64 * 10, false, 0), CfqOwner::Sync(1));
        }
        c.insert(&t, q(9, 500, false, 0), CfqOwner::Sync(2));
        assert_eq!(c.dispatch(&t, 0).unwrap().token, 0);
        assert_eq!(c.dispatch(&t, 50_000_000).unwrap().token, 1);
        assert_eq!(c.dispatch(&t, 100_000_001).unwrap().token, 9, "task 1's 100 ms are over");
        assert_eq!(c.dispatch(&t, 100_000_002).unwrap().token, 2, "then task 1 again");
    }

    #[test]
    fn a_read_preempts_the_write_slice_and_writes_share_one_queue() {
        let t = CfqTunables::DEFAULT;
        let mut c = Cfq::default();
        c.insert(&t, q(1, 100, true, 0), CfqOwner::Sync(7));
        c.insert(&t, q(2, 300, true, 0), CfqOwner::Sync(8));
        assert_eq!(c.dispatch(&t, 0).unwrap().token, 1, "both writes in the async queue");
        c.insert(&t, q(3, 5000, false, 1), CfqOwner::Sync(7));
        assert_eq!(c.dispatch(&t, 2).unwrap().token, 3, "the read ends the write slice");
        assert_eq!(c.dispatch(&t, 3).unwrap().token, 2);
        assert_eq!(c.insert(&t, q(4, 6000, false, 4), CfqOwner::Sync(7)), Insert::Queued);
        assert_eq!(c.insert(&t, q(5, 6001, false, 4), CfqOwner::Sync(7)), Insert::Merged(4));
        assert_eq!(c.insert(&t, q(6, 6002, false, 4), CfqOwner::Sync(8)), Insert::Queued, "another process's queue");
    }
}
