//! The deadline I/O scheduler (mq-deadline; `block/deadline-iosched.c` before blk-mq, the same
//! rules): requests wait per direction in sector order and in arrival order, merge with
//! queued requests of the same direction, and are dispatched in batches.
//!
//! * Merge on insert: a new request that starts where a queued one ends is appended to it (a
//!   back merge), one that ends where a queued one starts is put in front of it (a front
//!   merge, `front_merges` = 1), as long as the result stays within the queue's largest
//!   request. The queued request keeps its place in the FIFO (its deadline).
//! * Dispatch (`__dd_dispatch_request`): a batch continues in the same direction with the next
//!   request in sector order after the last one dispatched, up to `fifo_batch` requests.
//!   Otherwise a direction is chosen: reads, unless writes are waiting and reads have been
//!   chosen `writes_starved` times in a row over them; then within it the next request in
//!   sector order, or the oldest one when its deadline (`read_expire` 500 ms, `write_expire`
//!   5 s) has passed or nothing lies ahead in sector order (the sweep starts again).
//!
//! Simplifications: two queued requests that a merge makes adjacent are not merged with each
//! other (`attempt_back_merge` after a bio merge); no priority classes (mq-deadline's
//! per-priority queues, 5.14+: every swap request has the same priority); merging is within
//! the scheduler's queue only (requests already at the device are not grown).

use super::Request;

/// A request waiting in the scheduler: its token, the request, when it was queued.
#[derive(Clone, Copy, Debug)]
pub struct Queued {
    pub token: u32,
    pub req: Request,
    pub at: u64,
}

/// `elv_merge`: a back merge (the new request starts where a queued one of the same direction
/// ends) or a front merge (it ends where one starts), within `max` pages. Returns the token of
/// the queued request that took its pages.
pub(crate) fn try_merge<'a>(queued: impl Iterator<Item = &'a mut Queued>, q: &Queued, max: u32) -> Option<u32> {
    let (start, end) = (q.req.start, q.req.start + q.req.pages as u64);
    for x in queued.filter(|x| x.req.write == q.req.write) {
        if x.req.pages + q.req.pages > max {
            continue;
        }
        if x.req.start + x.req.pages as u64 == start {
            x.req.pages += q.req.pages;
            return Some(x.token);
        }
        if x.req.start == end {
            x.req.start = start;
            x.req.pages += q.req.pages;
            return Some(x.token);
        }
    }
    None
}

/// What happened to a request given to the scheduler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Insert {
    /// Queued as a request of its own.
    Queued,
    /// Merged into the queued request with this token (which now carries its pages).
    Merged(u32),
}

/// The tunables (`/sys/block/*/queue/iosched/`).
#[derive(Clone, Copy, Debug)]
pub struct DeadlineTunables {
    pub read_expire_ns: u64,
    pub write_expire_ns: u64,
    pub fifo_batch: u32,
    pub writes_starved: u32,
    /// The largest request a merge may build (max_sectors_kb / 4).
    pub max_request_pages: u32,
}

#[derive(Clone, Debug, Default)]
pub struct Deadline {
    /// Per direction (0 read, 1 write), in arrival order.
    fifo: [Vec<Queued>; 2],
    /// Where the last request dispatched in each direction ended (`latest_pos`).
    pos: [u64; 2],
    last_write: bool,
    batching: u32,
    starved: u32,
}

impl Deadline {
    pub fn len(&self) -> usize {
        self.fifo[0].len() + self.fifo[1].len()
    }

    pub fn is_empty(&self) -> bool {
        self.fifo.iter().all(|f| f.is_empty())
    }

    pub fn insert(&mut self, t: &DeadlineTunables, q: Queued) -> Insert {
        let list = &mut self.fifo[q.req.write as usize];
        if let Some(token) = try_merge(list.iter_mut(), &q, t.max_request_pages) {
            return Insert::Merged(token);
        }
        list.push(q);
        Insert::Queued
    }

    /// Merge `q` into a queued request of its direction if it can, else leave it out.
    pub fn merge_only(&mut self, t: &DeadlineTunables, q: &Queued) -> Option<u32> {
        try_merge(self.fifo[q.req.write as usize].iter_mut(), q, t.max_request_pages)
    }

    /// Queue `q` as a request of its own (it got a request after sleeping for one).
    pub fn push_unmerged(&mut self, q: Queued) {
        self.fifo[q.req.write as usize].push(q);
    }

    /// The next request in sector order at or after the last dispatched one's end.
    fn next_in_sort(&self, write: bool) -> Option<usize> {
        let pos = self.pos[write as usize];
        self.fifo[write as usize].iter().enumerate().filter(|(_, x)| x.req.start >= pos).min_by_key(|(_, x)| x.req.start).map(|(i, _)| i)
    }

    fn expired(&self, t: &DeadlineTunables, write: bool, now: u64) -> bool {
        let expire = if write { t.write_expire_ns } else { t.read_expire_ns };
        self.fifo[write as usize].first().is_some_and(|x| now >= x.at + expire)
    }

    /// The request to start now, if any.
    pub fn dispatch(&mut self, t: &DeadlineTunables, now: u64) -> Option<Queued> {
        if self.batching < t.fifo_batch.max(1) {
            if let Some(i) = self.next_in_sort(self.last_write) {
                return Some(self.take(self.last_write, i));
            }
        }
        let (reads, writes) = (!self.fifo[0].is_empty(), !self.fifo[1].is_empty());
        let write = if reads && writes {
            let starved = self.starved >= t.writes_starved;
            self.starved = if starved { 0 } else { self.starved + 1 };
            starved
        } else if writes {
            self.starved = 0;
            true
        } else if reads {
            false
        } else {
            return None;
        };
        let i = match self.next_in_sort(write) {
            Some(i) if !self.expired(t, write, now) => i,
            _ => 0,
        };
        self.last_write = write;
        self.batching = 0;
        Some(self.take(write, i))
    }

    fn take(&mut self, write: bool, i: usize) -> Queued {
        self.batching += 1;
        let q = self.fifo[write as usize].remove(i);
        self.pos[write as usize] = q.req.start + q.req.pages as u64;
        q
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: DeadlineTunables =
        DeadlineTunables { read_expire_ns: 500_000_000, write_expire_ns: 5_000_000_000, fifo_batch: 16, writes_starved: 2, max_request_pages: 128 };

    fn q(token: u32, start: u64, pages: u32, write: bool, at: u64) -> Queued {
        Queued { token, req: Request { start, pages, write }, at }
    }

    #[test]
    fn adjacent_requests_merge_back_and_front_within_the_size_limit() {
        let mut d = Deadline::default();
        assert_eq!(d.insert(&T, q(1, 100, 8, true, 0)), Insert::Queued);
        assert_eq!(d.insert(&T, q(2, 108, 8, true, 1)), Insert::Merged(1), "back merge");
        assert_eq!(d.insert(&T, q(3, 92, 8, true, 2)), Insert::Merged(1), "front merge");
        assert_eq!(d.insert(&T, q(4, 116, 8, false, 3)), Insert::Queued, "a read never merges with a write");
        assert_eq!(d.insert(&T, q(5, 124, 120, true, 4)), Insert::Queued, "24 + 120 pages exceed 128");
        let first = d.dispatch(&T, 10).unwrap();
        assert_eq!((first.token, first.req), (4, Request { start: 116, pages: 8, write: false }), "reads first");
        let w = d.dispatch(&T, 10).unwrap();
        assert_eq!((w.token, w.req.start, w.req.pages), (1, 92, 24));
    }

    #[test]
    fn a_batch_sweeps_in_sector_order_and_an_expired_request_restarts_it() {
        let mut d = Deadline::default();
        for (tok, start) in [(1, 500u64), (2, 100), (3, 900), (4, 300)] {
            d.insert(&T, q(tok, start, 1, false, 0));
        }
        let order: Vec<u32> = (0..4).map(|_| d.dispatch(&T, 1).unwrap().token).collect();
        assert_eq!(order, vec![2, 4, 1, 3], "sector order, not arrival");
        // Behind the head: 50 arrives first and expires; a batch starting later takes it first.
        d.insert(&T, q(5, 50, 1, false, 0));
        d.insert(&T, q(6, 2000, 1, false, 10));
        d.batching = T.fifo_batch;
        assert_eq!(d.dispatch(&T, 600_000_000).unwrap().token, 5, "expired: the FIFO head");
        assert_eq!(d.dispatch(&T, 600_000_000).unwrap().token, 6);
    }

    #[test]
    fn writes_get_a_batch_after_writes_starved_read_batches() {
        let mut d = Deadline::default();
        let t = DeadlineTunables { fifo_batch: 1, ..T };
        for i in 0..3 {
            d.insert(&t, q(100 + i, 10_000 + 10 * i as u64, 1, true, 0));
        }
        for i in 0..6 {
            d.insert(&t, q(i, 10 * i as u64, 1, false, 0));
        }
        let order: Vec<u32> = std::iter::from_fn(|| d.dispatch(&t, 1).map(|x| x.token)).collect();
        assert_eq!(order, vec![0, 1, 2, 100, 3, 4, 101, 5, 102]);
    }
}
