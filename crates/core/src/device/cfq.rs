//! CFQ, the Completely Fair Queueing scheduler (`block/cfq-iosched.c`), the default I/O
//! scheduler of the 2.6.28 and 3.x profiles' disks: each process's synchronous requests (reads:
//! a swap-in fault and its readahead) wait in that process's own queue, asynchronous ones
//! (reclaim's swap-out writes) in one shared queue; the disk serves one queue at a time for a
//! time slice (`slice_sync` 100 ms, `slice_async` 40 ms), then the next busy queue in
//! round-robin order. Within a queue requests go in sector order from the head position (one
//! way, then from the lowest sector), except that the oldest is served first when its FIFO
//! deadline (`fifo_expire_sync` 125 ms, `fifo_expire_async` 250 ms) has passed at the start of
//! a slice. A new request of another queue preempts the active one (`cfq_should_preempt`,
//! 2.6.28) when the active slice is used up, when it is synchronous and the asynchronous queue
//! holds the disk, or when CFQ idles for the active process and the request lies within that
//! process's mean seek distance of the head (`cfq_rq_close`); the preempting queue is put at
//! the front of the service tree (`cfq_preempt_queue`: key 0) and so is served next, and an
//! idle wait it ends ends at once. Requests merge, back and front, with queued requests of
//! the same queue (`cfq_allow_merge`: never a read into a write's queue).
//!
//! Idling (`cfq_arm_slice_timer`): when the last request of the active synchronous queue
//! completes with its slice not used up and nothing else in the driver, CFQ keeps the disk for
//! that process `slice_idle` (HZ/125: 8 ms) waiting for its next request, which it dispatches
//! at once, instead of moving the head to another queue's requests; only when the timer
//! expires with other queues busy does the slice end. A queue idles while its process's mean
//! think time (`cfq_update_io_thinktime`: the time from its last completion to its next
//! request, capped at 2 x `slice_idle`, a decaying mean over samples weighted 256 that decay by
//! 7/8, valid past 80) is at most `slice_idle`, and not when that mean exceeds what is left of
//! the slice. A device without seek penalty that queues commands (`QUEUE_FLAG_NONROT` and
//! `hw_tag`: here non-rotational with more than one channel) never idles.
//!
//! Seekiness (`cfq_update_io_seektime`, `CIC_SEEKY`): each process's mean seek distance (the
//! distance in sectors from where its previous request ended, capped against outliers, a
//! decaying mean like the think time's) makes it "seeky" past 8192 sectors (4 MiB); CFQ then
//! idles for it only `CFQ_MIN_TT` (2 ms) instead of `slice_idle` ("we don't want to idle for
//! seeks, but we do want to allow fair distribution of slice time for a process doing
//! back-to-back seeks"), and not at all on a device that queues commands (`hw_tag`). A swap-in
//! reader is seeky: its pages are scattered over the swap area. A process's think-time and seek
//! statistics start when its queue is made (`cfq_alloc_io_context` stamps `last_end_request`),
//! so its first request is a think-time sample of 0.
//!
//! Sector order (`cfq_choose_req`): the next request is the nearest to the head, a backward seek
//! of at most `back_seek_max` (16 MiB) counting `back_seek_penalty` (2) times its distance; past
//! that a request "wraps" and is taken only when every request does (then the lowest first).
//!
//! Slices: a queue's slice starts when its first request completes (`cfq_slice_new`,
//! `cfq_set_prio_slice` in `cfq_completed_request`), not when it is selected.
//!
//! A driver deeper than the device (`CfqTunables::driver_queue`: a Xen guest's blkfront ring
//! of 32) takes requests whenever it has room, so CFQ's dispatch limits bind there
//! (`cfq_may_dispatch`: `quantum`, no write dispatched while a read is in the driver, reads of
//! an idling process wait for the writes in the driver to drain, 2.6.32's `low_latency`
//! write ramp) and `hw_tag` is CFQ's own estimate (`cfq_update_hw_tag`: 1 at start, then
//! whether the driver held 5 or more requests during the last 51 loaded completions); a
//! non-rotational queue is idled for only while it is 0. Every other device takes one request
//! per free channel, where these rules never bind, and keeps `hw_tag` = more than one channel.
//!
//! Simplifications: one priority level (every task best-effort 4, so every slice has its base
//! length); CFQ hands the driver one request at a time as it has room instead of moving up to
//! `quantum` into the dispatch list at once (the same requests, the same order); an
//! asynchronous slice is not cut after `cfq_prio_to_maxrq` (16) dispatches; the next request is the best by
//! `cfq_choose_req` among all of the queue's, not the kernel's incrementally kept `next_rq`;
//! think time in nanoseconds, not jiffies (`CFQ_MIN_TT` is 2 ms, where `msecs_to_jiffies(2)`
//! is one tick at HZ 250); a request arriving for the idling queue is dispatched at once (the
//! kernel does when other queues are busy or it is larger than a page); a write's process is
//! not known here, so only reads feed a process's think-time and seek statistics (the kernel
//! counts its writes too); a queue does not idle when its mean think time exceeds what is left
//! of its slice (a later kernel's rule, kept for the 3.x profiles).

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
    /// `slice_idle` (0: no idling, the device has no seek penalty and queues commands).
    pub slice_idle_ns: u64,
    /// `CFQ_MIN_TT`: how long CFQ idles for a seeky process.
    pub min_tt_ns: u64,
    /// `back_seek_max` in pages (16 x 1024 KiB) and `back_seek_penalty`.
    pub back_max_pages: u64,
    pub back_penalty: u64,
    /// `cfqd->hw_tag`: the device queues commands (more than one request in the driver); a
    /// seeky process then gets no idle window at all. With `driver_queue` it is CFQ's own
    /// estimate instead (starting at 1, [`Cfq::hw_tag`]).
    pub hw_tag: bool,
    /// The driver holds more requests than the device serves (`DeviceParams::queue_depth`):
    /// CFQ then limits what it dispatches (`cfq_may_dispatch`, `quantum`, `low_latency`), keeps
    /// the active queue while its dispatched requests have not completed, estimates `hw_tag`
    /// from the driver's depth (`cfq_update_hw_tag`) and never idles on a non-rotational queue
    /// while `hw_tag` is 1 (`cfq_arm_slice_timer`). Without it the driver takes one request
    /// per free channel and these rules cannot bind (the driver is empty at every dispatch).
    pub driver_queue: bool,
    /// `QUEUE_FLAG_NONROT` (only read with `driver_queue`).
    pub nonrot: bool,
    /// `cfq_quantum` (4 in 2.6.2x).
    pub quantum: u32,
    /// `cfqd->cfq_latency` (2.6.32's `low_latency`).
    pub low_latency: bool,
}

impl CfqTunables {
    /// cfq_slice_sync = HZ/10, cfq_slice_async = HZ/25, cfq_fifo_expire = {HZ/4 async, HZ/8 sync},
    /// cfq_slice_idle = HZ/125 (8 ms at HZ 250 and 1000); CFQ_MIN_TT = 2 ms; cfq_back_max =
    /// 16 x 1024 KiB, cfq_back_penalty = 2 (block/cfq-iosched.c, 2.6.2x).
    pub const DEFAULT: CfqTunables = CfqTunables {
        slice_sync_ns: 100_000_000,
        slice_async_ns: 40_000_000,
        fifo_expire_sync_ns: 125_000_000,
        fifo_expire_async_ns: 250_000_000,
        max_request_pages: 128,
        slice_idle_ns: 8_000_000,
        min_tt_ns: 2_000_000,
        back_max_pages: 16 * 1024 / 4,
        back_penalty: 2,
        hw_tag: false,
        driver_queue: false,
        nonrot: false,
        quantum: 4,
        low_latency: false,
    };
}

/// `sample_valid`: a think-time mean counts once its decayed sample weight passes 80.
const SAMPLE_VALID: u64 = 80;
/// `CIC_SEEKY`: a mean seek distance past 8 x 1024 sectors (4 MiB) makes a process seeky.
const SEEKY_SECTORS: u64 = 8 * 1024;
/// 512-byte sectors per 4 KiB page (the seek statistics count sectors).
const SECTORS_PER_PAGE: u64 = 8;
/// `CFQ_HW_QUEUE_MIN`: a completion is an `hw_tag` sample when more than this many requests
/// are queued or in the driver, and `hw_tag` is 1 when the driver held at least this many.
const HW_QUEUE_MIN: usize = 5;
/// `cfq_update_hw_tag` decides after this many samples (`hw_tag_samples++ < 50`: the 51st).
const HW_TAG_SAMPLES: u32 = 50;

#[derive(Clone, Debug)]
struct CfqQueue {
    owner: CfqOwner,
    /// Arrival order.
    fifo: Vec<Queued>,
    /// `cic->ttime_samples`, `ttime_total` (ns), `ttime_mean` (ns): the process's think time.
    ttime_samples: u64,
    ttime_total: u64,
    ttime_mean: u64,
    /// `cic->last_end_request`: when its last synchronous request completed.
    last_end: Option<u64>,
    /// `cfq_cfqq_idle_window`: set for a new synchronous queue, cleared while the think time
    /// is longer than `slice_idle`.
    idle_window: bool,
    /// `cic->seek_samples`, `seek_total`, `seek_mean` (sectors), `last_request_pos` (the
    /// sector after its last request).
    seek_samples: u64,
    seek_total: u64,
    seek_mean: u64,
    last_request_pos: u64,
}

impl CfqQueue {
    /// `sample_valid(cic->seek_samples) && CIC_SEEKY(cic)`.
    fn seeky(&self) -> bool {
        self.seek_samples > SAMPLE_VALID && self.seek_mean > SEEKY_SECTORS
    }
}

#[derive(Clone, Debug, Default)]
pub struct Cfq {
    queues: Vec<CfqQueue>,
    /// Busy queues waiting for a slice, in round-robin order (indices into `queues`).
    rr: VecDeque<usize>,
    active: Option<usize>,
    /// When the active queue's slice ends; `u64::MAX` until its first request completes
    /// (`cfq_cfqq_slice_new`).
    slice_end: u64,
    /// The active queue has had no request complete in this slice.
    slice_new: bool,
    /// The active queue has dispatched in this slice (the FIFO is checked at its start).
    dispatched_in_slice: bool,
    /// The active slice was preempted and the preempting queue waits at the front of `rr`
    /// (the kernel has no active queue until it is selected, so nothing else preempts).
    preempted: bool,
    /// Where the last dispatched request ended.
    pos: u64,
    /// The active queue is empty and CFQ waits for its process's next request until this time
    /// (`wait_request`, the idle slice timer); None: not idling.
    idle_until: Option<u64>,
    /// A newly armed idle timer the device's owner has not yet been told about.
    armed: Option<u64>,
    /// The queue of each request in the driver, in start order (a device with one link
    /// completes them in that order): `rq_in_driver` and which process a completion was for.
    in_driver: VecDeque<usize>,
    /// `hw_tag` estimated 0 (`cfq_init_queue` starts it at 1 in 2.6.28-2.6.32); only with
    /// `driver_queue`.
    hw_tag_off: bool,
    /// `hw_tag_samples`, `rq_in_driver_peak`.
    hw_tag_samples: u32,
    in_driver_peak: usize,
    /// `cfqd->last_end_sync_rq`: the last synchronous completion (0 at `cfq_init_queue`).
    last_end_sync: u64,
}

impl Cfq {
    pub fn len(&self) -> usize {
        self.queues.iter().map(|q| q.fifo.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.queues.iter().all(|q| q.fifo.is_empty())
    }

    /// The queue of `owner`, made at `now` if it has none yet (`cfq_alloc_io_context` stamps
    /// `last_end_request` with the time it is made).
    fn queue_of(&mut self, owner: CfqOwner, now: u64) -> usize {
        if let Some(i) = self.queues.iter().position(|q| q.owner == owner) {
            return i;
        }
        let sync = matches!(owner, CfqOwner::Sync(_));
        self.queues.push(CfqQueue {
            owner,
            fifo: Vec::new(),
            ttime_samples: 0,
            ttime_total: 0,
            ttime_mean: 0,
            last_end: sync.then_some(now),
            idle_window: sync,
            seek_samples: 0,
            seek_total: 0,
            seek_mean: 0,
            last_request_pos: 0,
        });
        self.queues.len() - 1
    }

    /// A new active queue; its slice is timed from its first completion.
    fn activate(&mut self, i: usize) {
        self.preempted = false;
        self.active = Some(i);
        self.slice_end = u64::MAX;
        self.slice_new = true;
        self.dispatched_in_slice = false;
    }

    pub fn insert(&mut self, t: &CfqTunables, q: Queued, owner: CfqOwner) -> Insert {
        self.insert_as(t, q, owner, true)
    }

    /// [`Cfq::insert`] of a request that got its own request after sleeping for one: it is
    /// not merged again.
    pub fn insert_unmerged(&mut self, t: &CfqTunables, q: Queued, owner: CfqOwner) {
        self.insert_as(t, q, owner, false);
    }

    /// A merge of `q` into a queued request of its process's queue (`cfq_allow_merge`), if
    /// it has one; nothing else changes.
    pub fn merge_only(&mut self, t: &CfqTunables, q: &Queued, owner: CfqOwner) -> Option<u32> {
        let owner = if q.req.write { CfqOwner::Async } else { owner };
        let c = self.queues.iter_mut().find(|c| c.owner == owner)?;
        super::deadline::try_merge(c.fifo.iter_mut(), q, t.max_request_pages)
    }

    fn insert_as(&mut self, t: &CfqTunables, q: Queued, owner: CfqOwner, merge: bool) -> Insert {
        let owner = if q.req.write { CfqOwner::Async } else { owner };
        let i = self.queue_of(owner, q.at);
        self.enqueued(t, i, &q);
        if merge {
            if let Some(token) = super::deadline::try_merge(self.queues[i].fifo.iter_mut(), &q, t.max_request_pages) {
                return Insert::Merged(token);
            }
        }
        let (start, now) = (q.req.start, q.at);
        self.queues[i].fifo.push(q);
        if self.active != Some(i) && !self.rr.contains(&i) {
            self.rr.push_back(i);
        }
        if self.should_preempt(i, start, now) {
            self.preempt(i);
        }
        Insert::Queued
    }

    /// `cfq_should_preempt` (2.6.28) for a new request at page `start` of queue `i`, which is
    /// not the active one: the active queue has used up its slice; or the request is
    /// synchronous and the active queue is the asynchronous one; or CFQ idles for the active
    /// process and the request is within that process's mean seek distance of where the head
    /// is (`cfq_rq_close`, once its seek mean is valid). No active queue, or one already
    /// preempted, is never preempted (the kernel has no active queue then).
    fn should_preempt(&self, i: usize, start: u64, now: u64) -> bool {
        let Some(a) = self.active else { return false };
        if a == i || self.preempted {
            return false;
        }
        if !self.slice_new && now >= self.slice_end {
            return true;
        }
        let active = &self.queues[a];
        if matches!(self.queues[i].owner, CfqOwner::Sync(_)) && active.owner == CfqOwner::Async {
            return true;
        }
        self.idle_until.is_some() && active.seek_samples > SAMPLE_VALID && (start * SECTORS_PER_PAGE).abs_diff(self.pos * SECTORS_PER_PAGE) <= active.seek_mean
    }

    /// `cfq_preempt_queue`: the active slice ends and queue `i` goes to the front of the
    /// service tree (`cfq_service_tree_add(.., 1)`: key 0), so it is served next. An idle wait
    /// it ends is ended at once (the kernel's `blk_start_queueing` after the preemption): the
    /// idle timer is re-armed for now.
    fn preempt(&mut self, i: usize) {
        self.slice_end = 0;
        self.slice_new = false;
        self.preempted = true;
        self.rr.retain(|&x| x != i);
        self.rr.push_front(i);
        if let Some(u) = self.idle_until {
            let now = self.queues[i].fifo.last().map_or(u, |x| x.at);
            self.idle_until = Some(now);
            self.armed = Some(now);
        }
    }

    /// The request to start now, if any.
    pub fn dispatch(&mut self, t: &CfqTunables, now: u64) -> Option<Queued> {
        loop {
            if let Some(a) = self.active {
                if now < self.slice_end && !self.queues[a].fifo.is_empty() {
                    if t.driver_queue && !self.may_dispatch(t, a, now) {
                        return None;
                    }
                    return Some(self.take(t, a, now));
                }
                if now < self.slice_end && self.idle_until.is_some_and(|u| now < u) {
                    return None; // waiting for the process's next request
                }
                // cfq_select_queue: an emptied queue that idles keeps the disk while its
                // dispatched requests are in flight.
                if t.driver_queue && now < self.slice_end && self.queues[a].idle_window && self.dispatched(a) > 0 {
                    return None;
                }
                self.idle_until = None;
                self.active = None;
                if !self.queues[a].fifo.is_empty() {
                    self.rr.push_back(a);
                }
            }
            let next = self.rr.pop_front()?;
            self.activate(next);
        }
    }

    fn take(&mut self, t: &CfqTunables, a: usize, now: u64) -> Queued {
        let q = &self.queues[a];
        let expire = if q.owner == CfqOwner::Async { t.fifo_expire_async_ns } else { t.fifo_expire_sync_ns };
        let expired = !self.dispatched_in_slice && now >= q.fifo[0].at + expire;
        let i = if expired { 0 } else { self.nearest(t, a) };
        self.dispatched_in_slice = true;
        let r = self.queues[a].fifo.remove(i);
        self.pos = r.req.start + r.req.pages as u64;
        self.in_driver.push_back(a);
        r
    }

    /// `cfq_choose_req` over queue `a`'s requests from the head position: the nearest ahead
    /// or (at `back_penalty` times the distance) at most `back_max` behind; when every one is
    /// further behind, the lowest (one backward seek). Ties go to the higher sector.
    fn nearest(&self, t: &CfqTunables, a: usize) -> usize {
        let pos = self.pos;
        let cost = |start: u64| -> Option<u64> {
            if start >= pos {
                Some(start - pos)
            } else if start + t.back_max_pages >= pos {
                Some((pos - start) * t.back_penalty)
            } else {
                None
            }
        };
        let fifo = &self.queues[a].fifo;
        let reachable = fifo.iter().enumerate().filter_map(|(i, x)| cost(x.req.start).map(|d| (d, std::cmp::Reverse(x.req.start), i))).min();
        let wrapped = || fifo.iter().enumerate().min_by_key(|(_, x)| x.req.start).map(|(i, _)| i);
        reachable.map(|(_, _, i)| i).or_else(wrapped).expect("a non-empty queue")
    }

    /// `cfq_rq_enqueued` for queue `i`'s request `q`: a synchronous queue's process updates its
    /// think time (`cfq_update_io_thinktime`), seek distance (`cfq_update_io_seektime`) and
    /// idle window (`cfq_update_idle_window`).
    fn enqueued(&mut self, t: &CfqTunables, i: usize, q: &Queued) {
        let hw_tag = self.hw_tag(t);
        let c = &mut self.queues[i];
        let (CfqOwner::Sync(_), Some(end)) = (c.owner, c.last_end) else { return };
        let ttime = q.at.saturating_sub(end).min(2 * t.slice_idle_ns);
        c.ttime_samples = (7 * c.ttime_samples + 256) / 8;
        c.ttime_total = (7 * c.ttime_total + 256 * ttime) / 8;
        c.ttime_mean = (c.ttime_total + 128) / c.ttime_samples;
        // The seek distance, capped against the odd far request: looser for the first samples.
        let sector = q.req.start * SECTORS_PER_PAGE;
        let cap = if c.seek_samples <= 60 { 2 * 1024 * 1024 } else { 2 * 1024 * 64 };
        let sdist = sector.abs_diff(c.last_request_pos).min(4 * c.seek_mean + cap);
        c.seek_samples = (7 * c.seek_samples + 256) / 8;
        c.seek_total = (7 * c.seek_total + 256 * sdist) / 8;
        c.seek_mean = (c.seek_total + c.seek_samples / 2) / c.seek_samples;
        c.last_request_pos = sector + q.req.pages as u64 * SECTORS_PER_PAGE;
        if t.slice_idle_ns == 0 || (hw_tag && c.seek_mean > SEEKY_SECTORS) {
            c.idle_window = false;
        } else if c.ttime_samples > SAMPLE_VALID {
            c.idle_window = c.ttime_mean <= t.slice_idle_ns;
        }
    }

    /// May a request of `owner` (a write: the async queue) start at once on a free device with
    /// nothing queued? Not while CFQ idles for another queue's process.
    pub fn may_start_now(&self, write: bool, owner: CfqOwner) -> bool {
        match (self.idle_until, self.active) {
            (Some(_), Some(a)) => !write && self.queues[a].owner == owner,
            _ => true,
        }
    }

    /// A request started at once on a free device: its queue is the active one (a new slice
    /// unless it already was, as `cfq_select_queue` would make it), the idling it ends stops.
    pub fn started_now(&mut self, t: &CfqTunables, q: &Queued, owner: CfqOwner) {
        let owner = if q.req.write { CfqOwner::Async } else { owner };
        let i = self.queue_of(owner, q.at);
        self.enqueued(t, i, q);
        if self.active != Some(i) {
            self.activate(i);
            self.rr.retain(|&x| x != i);
        }
        self.dispatched_in_slice = true;
        self.idle_until = None;
        self.pos = q.req.start + q.req.pages as u64;
        self.in_driver.push_back(i);
    }

    /// The oldest request in the driver completed at `now` (`cfq_completed_request`): a
    /// synchronous one stamps its process's last completion; the active queue's first
    /// completion starts its slice; the slice ends if used up, or, emptied with nothing left
    /// in the driver, idles (`cfq_arm_slice_timer`): `slice_idle`, or `CFQ_MIN_TT` for a seeky
    /// process.
    pub fn completed(&mut self, t: &CfqTunables, now: u64) {
        if t.driver_queue {
            self.update_hw_tag();
        }
        let Some(i) = self.in_driver.pop_front() else { return };
        let sync = matches!(self.queues[i].owner, CfqOwner::Sync(_));
        if sync {
            self.queues[i].last_end = Some(now);
            self.last_end_sync = now;
        }
        if self.active == Some(i) && self.slice_new {
            self.slice_new = false;
            self.slice_end = now + if sync { t.slice_sync_ns } else { t.slice_async_ns };
        }
        if self.active != Some(i) || !sync || !self.queues[i].fifo.is_empty() || !self.in_driver.is_empty() || t.slice_idle_ns == 0 {
            return;
        }
        // cfq_arm_slice_timer: no idling on a non-rotational queue that queues commands.
        if t.driver_queue && t.nonrot && self.hw_tag(t) {
            return;
        }
        let q = &self.queues[i];
        let left = self.slice_end.saturating_sub(now);
        if left == 0 || !q.idle_window || (q.ttime_samples > SAMPLE_VALID && left < q.ttime_mean) {
            return;
        }
        let idle = if q.seeky() { t.slice_idle_ns.min(t.min_tt_ns) } else { t.slice_idle_ns };
        let until = now + idle;
        self.idle_until = Some(until);
        self.armed = Some(until);
    }

    /// `cfqd->hw_tag` as CFQ sees it now.
    pub fn hw_tag(&self, t: &CfqTunables) -> bool {
        if t.driver_queue {
            !self.hw_tag_off
        } else {
            t.hw_tag
        }
    }

    /// Requests of queue `a` dispatched and not completed (`cfqq->dispatched`).
    fn dispatched(&self, a: usize) -> u32 {
        self.in_driver.iter().filter(|&&x| x == a).count() as u32
    }

    /// `cfq_update_hw_tag` (2.6.28-2.6.32), at each completion before it is counted: the
    /// deepest the driver was, and after 51 completions that found more than
    /// `CFQ_HW_QUEUE_MIN` requests queued or in the driver, `hw_tag` = that depth reached 5.
    fn update_hw_tag(&mut self) {
        let in_driver = self.in_driver.len();
        self.in_driver_peak = self.in_driver_peak.max(in_driver);
        if self.len() <= HW_QUEUE_MIN && in_driver <= HW_QUEUE_MIN {
            return;
        }
        self.hw_tag_samples += 1;
        if self.hw_tag_samples <= HW_TAG_SAMPLES {
            return;
        }
        self.hw_tag_off = self.in_driver_peak < HW_QUEUE_MIN;
        self.hw_tag_samples = 0;
        self.in_driver_peak = 0;
    }

    /// `cfq_may_dispatch` (2.6.32) for the active queue `a`: a synchronous queue with an idle
    /// window waits until no write is in the driver ("drain async requests before we start
    /// sync IO"); the asynchronous queue waits while a read is (`sync_flight`); a queue has at
    /// most `quantum` dispatched while others are busy (4 x `quantum` alone); with
    /// `low_latency` the asynchronous queue at most (now − last synchronous completion) /
    /// `slice_sync`, or one if that is 0 and it has none.
    fn may_dispatch(&self, t: &CfqTunables, a: usize, now: u64) -> bool {
        let q = &self.queues[a];
        let sync = matches!(q.owner, CfqOwner::Sync(_));
        let sync_flight = self.in_driver.iter().filter(|&&x| matches!(self.queues[x].owner, CfqOwner::Sync(_))).count();
        let async_flight = self.in_driver.len() - sync_flight;
        if (sync && q.idle_window && async_flight > 0) || (!sync && sync_flight > 0) {
            return false;
        }
        let dispatched = self.dispatched(a);
        let mut max = t.quantum;
        if dispatched >= max {
            let busy = self.queues.iter().filter(|x| !x.fifo.is_empty()).count();
            if busy > 1 {
                return false;
            }
            max *= 4;
        }
        if !sync && t.low_latency {
            let mut depth = (now.saturating_sub(self.last_end_sync) / t.slice_sync_ns.max(1)) as u32;
            if depth == 0 && dispatched == 0 {
                depth = 1;
            }
            max = max.min(depth);
        }
        dispatched < max
    }

    /// The idle timer armed since the last call, if any (the caller schedules it).
    pub fn take_armed(&mut self) -> Option<u64> {
        self.armed.take()
    }

    /// The idle timer set for `until` fired (`cfq_idle_slice_timer`): if CFQ still waits, it
    /// stops; the slice ends when other queues have requests (else the queue stays active).
    /// Returns whether anything may now be dispatched.
    pub fn idle_expired(&mut self, until: u64) -> bool {
        if self.idle_until != Some(until) {
            return false;
        }
        self.idle_until = None;
        if self.is_empty() {
            return false;
        }
        if let Some(a) = self.active.take() {
            if !self.queues[a].fifo.is_empty() {
                self.rr.push_back(a);
            }
        }
        true
    }

    /// Is CFQ waiting for the active queue's process?
    pub fn idling(&self) -> bool {
        self.idle_until.is_some()
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
            c.insert(&t, q(i, 100_000 + i as u64 * 10, false, 0), CfqOwner::Sync(1));
            c.insert(&t, q(10 + i, 10 + i as u64 * 10, false, 0), CfqOwner::Sync(2));
        }
        let order: Vec<u32> = (0..6).map(|k| c.dispatch(&t, k).unwrap().token).collect();
        assert_eq!(order, vec![0, 1, 2, 10, 11, 12], "task 1's queue for its slice, then task 2's, not sector order across them");
    }

    /// Guards the slice's start (`cfq_cfqq_slice_new`): the 100 ms run from the active queue's
    /// first completion, not from when it was selected.
    #[test]
    fn a_slice_ends_after_its_time_counted_from_its_first_completion() {
        let t = CfqTunables::DEFAULT;
        let mut c = Cfq::default();
        for i in 0..4 {
            c.insert(&t, q(i, i as u64 * 10, false, 0), CfqOwner::Sync(1));
        }
        c.insert(&t, q(9, 500, false, 0), CfqOwner::Sync(2));
        assert_eq!(c.dispatch(&t, 0).unwrap().token, 0);
        c.completed(&t, 20_000_000);
        assert_eq!(c.dispatch(&t, 20_000_000).unwrap().token, 1);
        c.completed(&t, 110_000_000);
        assert_eq!(c.dispatch(&t, 110_000_000).unwrap().token, 2, "110 ms after selection, 90 ms into the slice");
        c.completed(&t, 120_000_001);
        assert_eq!(c.dispatch(&t, 120_000_001).unwrap().token, 9, "task 1's 100 ms from its first completion are over");
        c.completed(&t, 121_000_000);
        let until = c.take_armed().expect("task 2 idles for its next read");
        assert!(c.idle_expired(until));
        assert_eq!(c.dispatch(&t, until).unwrap().token, 3, "then task 1 again");
    }

    /// Guards CFQ's idling (`cfq_arm_slice_timer`): the reader's queue, emptied by a completion
    /// with its slice not used up, keeps the disk for `slice_idle` while writes wait; its next
    /// read is taken at once; the timer ends the wait and the writes go.
    #[test]
    fn an_emptied_sync_queue_idles_for_its_process_before_the_writes_are_served() {
        let t = CfqTunables::DEFAULT;
        let mut c = Cfq::default();
        let read = q(1, 100, false, 0);
        assert!(c.may_start_now(false, CfqOwner::Sync(7)));
        c.started_now(&t, &read, CfqOwner::Sync(7));
        c.insert(&t, q(2, 5000, true, 10), CfqOwner::Async);
        c.completed(&t, 1_000_000);
        let until = c.take_armed().expect("the reader's queue idles");
        assert_eq!(until, 1_000_000 + t.slice_idle_ns);
        assert!(c.dispatch(&t, 1_000_000).is_none(), "the write waits while CFQ idles");
        assert!(!c.may_start_now(true, CfqOwner::Async));
        assert!(c.may_start_now(false, CfqOwner::Sync(7)), "the reader's next read goes at once");
        assert!(!c.may_start_now(false, CfqOwner::Sync(8)), "another process's read waits");
        c.started_now(&t, &q(3, 101, false, 1_500_000), CfqOwner::Sync(7));
        assert!(!c.idling());
        c.completed(&t, 2_000_000);
        let until = c.take_armed().expect("idles again");
        assert!(!c.idle_expired(until - 1), "a stale timer does nothing");
        assert!(c.idle_expired(until), "the timer ends the wait: other queues are busy");
        assert_eq!(c.dispatch(&t, until).map(|x| x.token), Some(2));
    }

    /// Guards the think-time rule (`cfq_update_io_thinktime`, `cfq_update_idle_window`): a
    /// process that comes back later than `slice_idle` on average loses its idle window.
    #[test]
    fn a_process_that_thinks_longer_than_slice_idle_is_not_idled_for() {
        let t = CfqTunables::DEFAULT;
        let mut c = Cfq::default();
        let mut now = 0;
        for k in 0..8 {
            c.started_now(&t, &q(k, 100 + k as u64, false, now), CfqOwner::Sync(7));
            now += 1_000_000;
            c.completed(&t, now);
            c.take_armed();
            now += 50_000_000; // 50 ms of thinking before the next read
        }
        c.insert(&t, q(99, 9000, true, now), CfqOwner::Async);
        c.started_now(&t, &q(50, 200, false, now), CfqOwner::Sync(7));
        c.completed(&t, now + 1_000_000);
        assert_eq!(c.take_armed(), None, "think time 16 ms (capped at 2 x slice_idle) > 8 ms: no idling");
        assert_eq!(c.dispatch(&t, now + 1_000_000).map(|x| x.token), Some(99));
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

    /// Guards `cfq_preempt_queue`'s `cfq_service_tree_add(cfqd, cfqq, 1)`: a read that ends
    /// the write slice is served next, ahead of the readers already waiting their turn; one
    /// preemption at a time (the next read waits in line).
    #[test]
    fn a_read_that_preempts_the_write_slice_is_served_before_the_waiting_readers() {
        let t = CfqTunables::DEFAULT;
        let mut c = Cfq::default();
        c.insert(&t, q(1, 100, true, 0), CfqOwner::Async);
        c.insert(&t, q(2, 300, true, 0), CfqOwner::Async);
        c.insert(&t, q(10, 100_000, false, 0), CfqOwner::Sync(10));
        c.insert(&t, q(11, 110_000, false, 0), CfqOwner::Sync(11));
        assert_eq!(c.dispatch(&t, 1).unwrap().token, 1, "the async queue's turn came first");
        c.insert(&t, q(12, 120_000, false, 2), CfqOwner::Sync(12));
        c.insert(&t, q(13, 130_000, false, 2), CfqOwner::Sync(13));
        let order: Vec<u32> = (3..8).map(|k| c.dispatch(&t, k).unwrap().token).collect();
        assert_eq!(order, vec![12, 10, 11, 13, 2], "process 12's read preempted the write slice and went first; 13 waits its turn");
    }

    /// Guards `cfq_should_preempt`'s first test: once the active slice is used up, a new
    /// queue's request goes first even though other queues waited longer.
    #[test]
    fn a_request_arriving_after_the_active_slice_ran_out_goes_first() {
        let t = CfqTunables::DEFAULT;
        let mut c = Cfq::default();
        for k in 0..40u32 {
            c.insert(&t, q(k, 1000 + 2 * k as u64, false, 0), CfqOwner::Sync(1));
        }
        c.insert(&t, q(100, 500_000, false, 0), CfqOwner::Sync(2));
        assert_eq!(c.dispatch(&t, 0).unwrap().token, 0);
        c.completed(&t, 1_000_000); // slice 1 ms .. 101 ms
        assert_eq!(c.dispatch(&t, 1_000_000).unwrap().token, 1);
        c.insert(&t, q(200, 700_000, false, 102_000_000), CfqOwner::Sync(3));
        c.completed(&t, 102_000_000);
        assert_eq!(c.dispatch(&t, 102_000_000).unwrap().token, 200, "process 3 preempted the used-up slice");
        assert_eq!(c.dispatch(&t, 103_000_000).unwrap().token, 100, "then process 2, which was waiting");
    }

    /// A reader whose requests land far apart (swap-in faults over the swap area).
    fn seeky_reader(c: &mut Cfq, t: &CfqTunables, owner: u32) -> u64 {
        let mut now = 0;
        for k in 0..4u64 {
            c.started_now(t, &q(k as u32, (k % 2) * 400_000 + k, false, now), CfqOwner::Sync(owner));
            now += 10_000_000;
            c.completed(t, now);
            c.take_armed();
            now += 100_000; // comes back at once: think time far below slice_idle
        }
        now
    }

    /// Guards the seeky process's short idle (`CIC_SEEKY`, `CFQ_MIN_TT` in
    /// `cfq_arm_slice_timer`): once its seek statistics are valid (three requests, the first
    /// counted from when its queue was made) and its mean seek passes 4 MiB, CFQ waits 2 ms for
    /// it, not 8; a reader that stays close keeps the full `slice_idle`.
    #[test]
    fn a_seeky_process_is_idled_for_only_cfq_min_tt() {
        let t = CfqTunables::DEFAULT;
        let mut c = Cfq::default();
        let now = seeky_reader(&mut c, &t, 7);
        c.insert(&t, q(99, 5, true, now), CfqOwner::Async);
        c.started_now(&t, &q(50, 200_000, false, now), CfqOwner::Sync(7));
        c.completed(&t, now + 10_000_000);
        assert_eq!(c.take_armed(), Some(now + 10_000_000 + t.min_tt_ns), "seeky: idles CFQ_MIN_TT");

        let mut c = Cfq::default();
        let mut now = 0;
        for k in 0..5u64 {
            c.started_now(&t, &q(k as u32, 1000 + 2 * k, false, now), CfqOwner::Sync(8));
            now += 1_000_000;
            c.completed(&t, now);
            if k == 4 {
                assert_eq!(c.take_armed(), Some(now + t.slice_idle_ns), "sequential: the full slice_idle");
            }
            c.take_armed();
            now += 100_000;
        }
    }

    /// Guards `cfq_rq_close` in `cfq_should_preempt`: while CFQ idles for a process whose seek
    /// mean is valid, another process's read within that mean of the head ends the wait at
    /// once and is served next; one further away waits for the timer.
    #[test]
    fn a_read_close_to_the_head_ends_the_idle_wait_of_a_seeky_process() {
        let t = CfqTunables::DEFAULT;
        let mut c = Cfq::default();
        let now = seeky_reader(&mut c, &t, 7);
        c.started_now(&t, &q(50, 200_000, false, now), CfqOwner::Sync(7));
        c.completed(&t, now + 10_000_000);
        let until = c.take_armed().expect("idles for process 7");
        let seek_mean_pages = c.queues[c.active.unwrap()].seek_mean / SECTORS_PER_PAGE;
        assert!(seek_mean_pages > 1024, "a seeky mean ({seek_mean_pages} pages)");
        // Far beyond the mean: no preemption, the wait goes on.
        c.insert(&t, q(60, 200_001 + 4 * seek_mean_pages, false, now + 10_500_000), CfqOwner::Sync(8));
        assert_eq!(c.take_armed(), None);
        assert!(c.dispatch(&t, now + 10_500_000).is_none(), "still idling");
        // Close to the head: the idle ends now and this read goes first.
        let at = now + 11_000_000;
        c.insert(&t, q(70, 200_001 + seek_mean_pages / 2, false, at), CfqOwner::Sync(9));
        assert_eq!(c.take_armed(), Some(at), "the idle timer is re-armed for now");
        assert!(c.idle_expired(at));
        assert!(!c.idle_expired(until), "the old timer is stale");
        assert_eq!(c.dispatch(&t, at).unwrap().token, 70);
        assert_eq!(c.dispatch(&t, at).unwrap().token, 60);
    }

    /// Guards `cfq_update_idle_window`'s `hw_tag && CIC_SEEKY`: on a device that queues
    /// commands a seeky process loses its idle window altogether.
    #[test]
    fn a_seeky_process_on_a_queueing_device_gets_no_idle_window() {
        let t = CfqTunables { hw_tag: true, ..CfqTunables::DEFAULT };
        let mut c = Cfq::default();
        let now = seeky_reader(&mut c, &t, 7);
        c.insert(&t, q(99, 5, true, now), CfqOwner::Async);
        c.started_now(&t, &q(50, 200_000, false, now), CfqOwner::Sync(7));
        c.completed(&t, now + 10_000_000);
        assert_eq!(c.take_armed(), None);
        assert_eq!(c.dispatch(&t, now + 10_000_000).map(|x| x.token), Some(99), "the write goes at once");
    }

    /// Guards `cfq_choose_req`'s backward seek: a request at most `back_seek_max` (16 MiB)
    /// behind the head is taken when twice its distance is less than the nearest one ahead;
    /// one further behind waits until nothing is ahead, then the lowest goes first.
    #[test]
    fn a_short_backward_seek_is_taken_at_twice_its_distance() {
        let t = CfqTunables::DEFAULT;
        let mut c = Cfq::default();
        c.started_now(&t, &q(1, 10_000, true, 0), CfqOwner::Async);
        // The head is at 10_001.
        for (token, start) in [(2, 10_101), (3, 9_960), (4, 1_000), (5, 500)] {
            c.insert(&t, q(token, start, true, 0), CfqOwner::Async);
        }
        c.completed(&t, 1_000_000);
        let order: Vec<u32> = (0..4).map(|k| {
            let x = c.dispatch(&t, 1_000_000 + k).unwrap();
            c.completed(&t, 1_000_000 + k);
            x.token
        }).collect();
        assert_eq!(order, vec![3, 2, 5, 4], "41 back x 2 = 82 < 100 ahead; then 10_101; then the wrapped ones, lowest first");
    }

    /// A blkfront-like driver queue on a non-rotational queue (a Xen guest's disk).
    fn ring() -> CfqTunables {
        CfqTunables { driver_queue: true, nonrot: true, hw_tag: true, ..CfqTunables::DEFAULT }
    }

    /// Dispatch what CFQ lets into a driver of `depth` at `now`: the tokens.
    fn fill(c: &mut Cfq, t: &CfqTunables, depth: usize, now: u64) -> Vec<u32> {
        let mut out = Vec::new();
        while c.in_driver.len() < depth {
            let Some(x) = c.dispatch(t, now) else { break };
            out.push(x.token);
        }
        out
    }

    /// Guards `cfq_update_hw_tag` (2.6.28-2.6.32): `hw_tag` starts at 1, so CFQ does not idle
    /// for a reader on a non-rotational queue; 51 completions that find more than 5 requests
    /// queued while the driver never held 5 set it to 0, and the reader is idled for again.
    #[test]
    fn hw_tag_starts_at_one_and_a_shallow_driver_under_load_turns_it_off() {
        let t = ring();
        let mut c = Cfq::default();
        assert!(c.hw_tag(&t), "cfq_init_queue: hw_tag = 1");
        let mut now = 0;
        let idles = |c: &mut Cfq, now: &mut u64| {
            c.started_now(&t, &q(900, 1, false, *now), CfqOwner::Sync(7));
            *now += 1_000_000;
            c.completed(&t, *now);
            let armed = c.take_armed().is_some();
            if let Some(u) = c.idle_until {
                c.idle_expired(u);
            }
            armed
        };
        for k in 0..8u64 {
            c.insert(&t, q(k as u32, 10_000 + 100 * k, true, now), CfqOwner::Async);
        }
        assert!(!idles(&mut c, &mut now), "hw_tag 1 on a non-rotational queue: no idling");
        // Writes one at a time (the driver never holds more than one), 8 queued behind.
        for k in 0..60u64 {
            c.insert(&t, q(100 + k as u32, 20_000 + 100 * k, true, now), CfqOwner::Async);
            assert_eq!(fill(&mut c, &t, 1, now).len(), 1);
            now += 1_000_000;
            c.completed(&t, now);
        }
        assert!(!c.hw_tag(&t), "51 loaded completions with at most one request in the driver");
        assert!(idles(&mut c, &mut now), "hw_tag 0: CFQ idles for the reader again");
    }

    /// Guards the other side: while the driver holds 5 or more (the only busy queue may have 4 x
    /// `quantum` = 16 dispatched), `hw_tag` stays 1.
    #[test]
    fn hw_tag_stays_on_while_the_driver_holds_five_requests() {
        let t = ring();
        let mut c = Cfq::default();
        let mut now = 1_000_000_000; // long after the last read: low_latency would not bind
        for k in 0..200u64 {
            c.insert(&t, q(k as u32, 100 * k, true, 0), CfqOwner::Async);
        }
        assert_eq!(fill(&mut c, &t, 32, now).len(), 16, "the sole busy queue: 4 x quantum in the driver");
        for _ in 0..60 {
            now += 1_000_000;
            c.completed(&t, now);
            fill(&mut c, &t, 32, now);
        }
        assert!(c.hw_tag(&t));
    }

    /// Guards `cfq_may_dispatch`'s in-flight rules: no write goes to the driver while a read is
    /// there (`sync_flight`), a reader with an idle window waits for the writes in the driver
    /// to drain, and with another queue busy a queue stops at `quantum` dispatched.
    #[test]
    fn reads_and_writes_do_not_share_the_driver_and_quantum_caps_a_queue_among_others() {
        let t = ring();
        let mut c = Cfq::default();
        let now = 1_000_000_000;
        for k in 0..3u64 {
            c.insert(&t, q(k as u32, 100 * k, false, now), CfqOwner::Sync(7));
        }
        for k in 0..3u64 {
            c.insert(&t, q(10 + k as u32, 50_000 + 100 * k, true, now), CfqOwner::Async);
        }
        assert_eq!(fill(&mut c, &t, 32, now), vec![0, 1, 2], "the reader's requests; then nothing while they are in the driver");
        for k in 0..3 {
            c.completed(&t, now + 1 + k);
        }
        assert_eq!(fill(&mut c, &t, 32, now + 10), vec![10, 11, 12], "the emptied reader's slice ends (hw_tag 1: no idle), the writes go");
        c.insert(&t, q(20, 300, false, now + 11), CfqOwner::Sync(7));
        assert!(fill(&mut c, &t, 32, now + 11).is_empty(), "the reader waits until the writes in the driver drain");
        for k in 0..3 {
            c.completed(&t, now + 12 + k);
        }
        assert_eq!(fill(&mut c, &t, 32, now + 20), vec![20]);

        let mut c = Cfq::default();
        for k in 0..8u64 {
            c.insert(&t, q(k as u32, 100 * k, false, now), CfqOwner::Sync(7));
        }
        c.insert(&t, q(99, 9_000, false, now), CfqOwner::Sync(8));
        assert_eq!(fill(&mut c, &t, 32, now).len(), 4, "another queue is busy: quantum (4)");
    }

    /// Guards 2.6.32's `low_latency` write ramp: within `slice_sync` (100 ms) of the last read
    /// completion the asynchronous queue has one request in the driver at most; the depth grows
    /// by one per 100 ms since (capped by quantum); without `low_latency` it is quantum alone.
    #[test]
    fn low_latency_lets_writes_into_the_driver_one_at_a_time_after_a_read() {
        let t = CfqTunables { low_latency: true, ..ring() };
        let read_then_writes = |t: &CfqTunables, after: u64| {
            let mut c = Cfq::default();
            c.started_now(t, &q(1, 5, false, 0), CfqOwner::Sync(7));
            c.completed(t, 1_000_000);
            for k in 0..20u64 {
                c.insert(t, q(10 + k as u32, 50_000 + 100 * k, true, 1_000_000), CfqOwner::Async);
            }
            c.insert(t, q(99, 90_000, false, 1_000_000), CfqOwner::Sync(8)); // another busy queue
            c.active = None;
            c.rr.retain(|&x| c.queues[x].owner == CfqOwner::Async);
            fill(&mut c, t, 32, 1_000_000 + after).len()
        };
        assert_eq!(read_then_writes(&t, 50_000_000), 1, "50 ms after a read: one write");
        assert_eq!(read_then_writes(&t, 250_000_000), 2, "250 ms: two");
        assert_eq!(read_then_writes(&ring(), 50_000_000), 4, "no low_latency: quantum");
    }
}
