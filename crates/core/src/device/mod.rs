//! Storage devices: a queueing model per device.
//!
//! A device serves requests on `parallelism` channels. A started request first pays its fixed
//! per-request access time on its channel (these overlap across channels: the device's
//! internal parallelism), then transfers its bytes over the device's one link at the device's
//! bandwidth (transfers do not overlap: the bandwidth is the whole device's). Rotating disks add
//! a seek whose time grows with the square root of the distance and an average rotational delay
//! unless the request continues where the previous one ended; a short skip forward costs only
//! the rotation over the gap (`positioning_ns`).
//!
//! A flash device with media rates (`random_read_iops`, `random_write_iops`) also has one
//! media timeline that reads and writes share, in the order they start: each read request holds
//! it for its command time, each page of a scattered write for its steady-state program and
//! garbage-collection time. A request finishes no sooner than its media time does, so at low
//! load nothing changes (the access time covers it) while sustained small writes run at the
//! drive's random-write rate and the reads started behind them wait for them.
//!
//! Requests that find every channel busy wait in the I/O scheduler: "none" serves them in
//! arrival order, or, on a multi-queue device (`hw_queues` > 1, the NVMe preset), in the
//! submission queue of the submitting CPU's hardware queue, the controller taking the next
//! command from the non-empty queues in round robin (`Sqs`, below); "deadline" (device/deadline.rs) merges them with adjacent queued requests
//! and dispatches like mq-deadline: in sector order, in batches, reads ahead of writes, a
//! write batch after `writes_starved` read batches, the oldest request once its deadline
//! passed; "cfq" (device/cfq.rs, the 2.6.28 and 3.x profiles' default for disks) keeps one
//! queue per process for reads and a shared one for writes and serves them in time slices.
//! Contiguous pages submitted together are merged into one request by [`Plug`], as the block
//! layer's plug does, up to `max_request_pages`. The submitter pays the block layer's five
//! stages per request (`blk.rs`). Synchronous devices (zram, brd) have no queue: the caller does the copy or
//! (de)compression in its own context (kernel-algorithms.md §1.7, §6.3).
//!
//! The read request pool (`Device::read_pool`, the legacy request queue of 2.6.28–4.14): a
//! queue holds at most `nr_requests` read requests (`rl->count[READ]`, 2.6.28 block/blk-core.c
//! `get_request`); a read that merges into a queued request needs none, and one that finds
//! the pool empty sleeps in `get_request_wait` (an exclusive wait: `__freed_request` wakes one
//! sleeper per freed read request, in the order they slept) and enters the elevator when it
//! gets its request, stamped with that time (`rq->start_time`). Until then CFQ does not see it:
//! with a thousand processes swapping in at once CFQ serves at most `nr_requests` of their
//! queues, not all of them. The one exemption modelled is CFQ's `cfq_may_queue` returning
//! ELV_MQUEUE_MUST for the process it idles for (its read starts at once, below). Writes are
//! bounded before they get here (their submitters sleep in engine/congestion.rs). Not
//! modelled: the "batching" allowance (a woken sleeper may take up to BLK_BATCH_REQ more
//! requests within BLK_BATCH_TIME, to 3/2 x `nr_requests`: a swap-in takes one request per
//! fault), and the woken task's run to its retry (the request enters the elevator at the
//! wake-up).

pub mod blk;
pub mod cfq;
pub mod deadline;
pub mod params;
pub mod service;

pub use params::DeviceParams;
pub use service::{AccessQuantiles, DEVICE_STREAM};
use crate::rng::Rng;
use crate::stats::CpuCategory;
use cfq::{Cfq, CfqOwner, CfqTunables};
use deadline::{Deadline, DeadlineTunables, Queued};
pub use deadline::Insert;
use std::collections::VecDeque;

const PAGE_BYTES: u64 = crate::mm::PAGE_SIZE;

#[derive(Clone, Debug)]
pub struct Device {
    pub name: String,
    pub params: DeviceParams,
    capacity_pages: u64,
    busy_channels: u32,
    /// When the device's link finishes its last scheduled transfer.
    link_free_at: u64,
    /// When the flash media finishes the work of the requests started so far.
    media_free_at: u64,
    /// The page after the last write started (a write starting here continues a stream).
    next_write: u64,
    /// Rotational: the page just after the last request started (where the head goes).
    head: u64,
    /// "none": waiting requests in their hardware queue's submission queue, each in arrival
    /// order (one queue unless `hw_queues` > 1).
    sqs: Sqs,
    /// "deadline": waiting requests sorted, merged and batched (device/deadline.rs).
    deadline: Deadline,
    /// "cfq": per-process queues served in time slices (device/cfq.rs).
    cfq: Cfq,
    /// Requests the elevator dispatched to a driver deeper than the device
    /// (`DeviceParams::queue_depth`) that wait there, in dispatch order, for a channel.
    driver: VecDeque<Queued>,
    /// Writes started and not yet finished (reads starting now pay `read_access_writing`).
    writes_in_service: u32,
    /// Requests holding a slot (queued or in service), reads at 0 and writes at 1: the legacy
    /// block layer's `request_list.count[]` pools (engine/congestion.rs).
    allocated: [u64; 2],
    /// The most requests each pool ever held at once.
    allocated_max: [u64; 2],
    /// The page after the last read started (a read starting here is sequential).
    next_read: u64,
    /// The device's random stream: access times drawn from its measured tables.
    rng: Rng,
    pub requests: u64,
    pub pages_read: u64,
    pub pages_written: u64,
    pub busy_ns: u64,
    /// Read requests completed, and their summed time from submission (queueing included) to
    /// completion: /proc/diskstats' reads and "time spent reading", so a run's time per read
    /// can be set against the host's (the disk's state during the run against its calibration).
    pub reads: u64,
    pub read_ticks_ns: u64,
    /// The legacy request queue's bounded read pool (module doc): set by the engine for the
    /// 2.6.28–4.14 profiles on devices with an elevator ("deadline", "cfq").
    pub read_pool: bool,
    /// Reads asleep in `get_request_wait` for a read request, in the order they slept, with
    /// the process whose CFQ queue they go to.
    read_waiters: VecDeque<(Queued, CfqOwner)>,
    /// The most reads ever asleep there at once.
    pub read_waiters_max: u64,
}

/// What [`Device::submit`] did with a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Submitted {
    /// Started now; completes at this time.
    Started(u64),
    /// Waiting in the scheduler.
    Queued,
    /// Merged into the waiting request with this token.
    Merged(u32),
}

/// One request as the device sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    pub start: u64,
    pub pages: u32,
    pub write: bool,
}

impl Device {
    /// A device whose sampled access times (if its parameters have tables) come from `rng`.
    pub fn new(name: &str, params: DeviceParams, capacity_pages: u64, rng: Rng) -> Device {
        Device {
            name: name.to_string(),
            params,
            capacity_pages: capacity_pages.max(1),
            busy_channels: 0,
            link_free_at: 0,
            media_free_at: 0,
            next_write: u64::MAX,
            head: 0,
            sqs: Sqs::default(),
            deadline: Deadline::default(),
            cfq: Cfq::default(),
            driver: VecDeque::new(),
            writes_in_service: 0,
            allocated: [0; 2],
            allocated_max: [0; 2],
            next_read: u64::MAX,
            rng,
            requests: 0,
            pages_read: 0,
            pages_written: 0,
            busy_ns: 0,
            reads: 0,
            read_ticks_ns: 0,
            read_pool: false,
            read_waiters: VecDeque::new(),
            read_waiters_max: 0,
        }
    }

    /// (access time, transfer time) of `req` with the constant latencies: the access part
    /// overlaps across channels, the transfer part is serialised on the device's link.
    pub fn service_parts(&self, req: Request) -> (u64, u64) {
        let p = &self.params;
        self.parts(req, if req.write { p.write_latency_ns } else { p.read_latency_ns })
    }

    /// (access, transfer) of `req` when its command and media access take `lat`.
    fn parts(&self, req: Request, lat: u64) -> (u64, u64) {
        let p = &self.params;
        let bw = if req.write { p.write_bandwidth } else { p.read_bandwidth };
        let transfer = (req.pages as u128 * PAGE_BYTES as u128 * 1_000_000_000u128 / bw.max(1) as u128) as u64;
        let mut access = lat;
        if p.rotational && req.start != self.head {
            access += self.positioning_ns(req.start, bw);
        }
        (access, transfer)
    }

    /// Rotating disk: the time from the head's position to the first sector of a request
    /// starting at page `start`. In general a seek (growing with the square root of the
    /// distance) plus half a turn on average. But a sector a little ahead of the head on the
    /// track under it simply arrives as the platter turns: a short forward skip costs the
    /// rotation over the gap, which passes at the media rate (`bw`, the sustained transfer
    /// rate), and never more than a seek and half a turn. This is what makes writes sorted
    /// into ascending order by the elevator cheap although their slots have holes between
    /// them (a swap map fragmented by slots that swap-cache pages still hold).
    fn positioning_ns(&self, start: u64, bw: u64) -> u64 {
        let p = &self.params;
        let distance = start.abs_diff(self.head);
        let frac = (distance as f64 / self.capacity_pages as f64).min(1.0);
        let seek = p.seek_min_ns as f64 + (p.seek_full_ns.saturating_sub(p.seek_min_ns)) as f64 * frac.sqrt();
        let reposition = seek as u64 + p.rotational_latency_ns;
        if start < self.head {
            return reposition;
        }
        let gap_ns = (distance as u128 * PAGE_BYTES as u128 * 1_000_000_000u128 / bw.max(1) as u128) as u64;
        gap_ns.min(reposition)
    }

    /// Time `req` needs on an idle device.
    pub fn service_ns(&self, req: Request) -> u64 {
        let (a, t) = self.service_parts(req);
        a + t
    }

    /// The access time of a request starting now: drawn from the measured table for its kind
    /// (device/service.rs), else the constant latency. A read is sequential when it starts
    /// where the previous read ended, and "writing" when a write is in service; a missing table
    /// falls back to the one without that distinction.
    fn access_latency(&mut self, req: Request) -> u64 {
        let p = &self.params;
        let table = if req.write {
            &p.write_access
        } else {
            let seq = req.start == self.next_read;
            let writing = self.writes_in_service > 0;
            [
                (seq && writing, &p.read_access_sequential_writing),
                (seq, &p.read_access_sequential),
                (writing, &p.read_access_writing),
            ]
            .into_iter()
            .find(|(applies, t)| *applies && !t.is_empty())
            .map_or(&p.read_access, |(_, t)| t)
        };
        if table.is_empty() {
            return if req.write { p.write_latency_ns } else { p.read_latency_ns };
        }
        table.at(self.rng.unit())
    }

    /// The flash media's time for `req` (0 without media rates): a read request's command
    /// time; a write's program and garbage collection per page, unless it continues the
    /// previous write (a sequential stream, which the drive programs at its sequential rate:
    /// the link's `write_bandwidth` bounds it).
    pub fn media_ns(&self, req: Request) -> u64 {
        let p = &self.params;
        let (iops, units) = if req.write {
            if req.start == self.next_write {
                return 0;
            }
            (p.random_write_iops, req.pages as u128)
        } else {
            (p.random_read_iops, 1)
        };
        if iops == 0 {
            return 0;
        }
        (units * 1_000_000_000u128 / iops as u128) as u64
    }

    /// Start `req`, submitted at `submitted`, now.
    fn start(&mut self, now: u64, req: Request, submitted: u64) -> u64 {
        let lat = self.access_latency(req);
        let media = self.media_ns(req);
        if req.write {
            self.next_write = req.start + req.pages as u64;
        } else {
            self.next_read = req.start + req.pages as u64;
        }
        let (access, transfer) = self.parts(req, lat);
        let mut ready = now + access;
        if media > 0 {
            self.media_free_at = now.max(self.media_free_at) + media;
            ready = ready.max(self.media_free_at);
        }
        let transfer_start = ready.max(self.link_free_at);
        let done = transfer_start + transfer;
        self.link_free_at = done;
        self.busy_channels += 1;
        self.writes_in_service += req.write as u32;
        self.head = req.start + req.pages as u64;
        self.requests += 1;
        self.busy_ns += access + transfer;
        if req.write {
            self.pages_written += req.pages as u64;
        } else {
            self.pages_read += req.pages as u64;
            self.reads += 1;
            self.read_ticks_ns += done - submitted.min(done);
        }
        done
    }

    fn tunables(&self) -> DeadlineTunables {
        let p = &self.params;
        DeadlineTunables {
            read_expire_ns: p.read_expire_ns,
            write_expire_ns: p.write_expire_ns,
            fifo_batch: p.fifo_batch,
            writes_starved: p.writes_starved,
            max_request_pages: p.max_request_pages,
        }
    }

    fn queued(&self) -> usize {
        self.deadline.len() + self.cfq.len() + self.sqs.len()
    }

    fn cfq_tunables(&self) -> CfqTunables {
        let p = &self.params;
        let nonrot = p.queue_nonrot.unwrap_or(!p.rotational);
        let base = CfqTunables { max_request_pages: p.max_request_pages, quantum: p.cfq_quantum, low_latency: p.cfq_low_latency, nonrot, ..CfqTunables::DEFAULT };
        if self.driver_queue() {
            // CFQ estimates hw_tag from the driver's depth and checks it when it would idle.
            return CfqTunables { slice_idle_ns: p.cfq_slice_idle_ns, hw_tag: true, driver_queue: true, ..base };
        }
        // cfq_arm_slice_timer: a device without seek penalty that queues commands
        // (QUEUE_FLAG_NONROT and hw_tag) is not worth idling for.
        // hw_tag: more than one request in the driver at once.
        let hw_tag = p.parallelism > 1;
        let slice_idle_ns = if nonrot && hw_tag { 0 } else { p.cfq_slice_idle_ns };
        CfqTunables { slice_idle_ns, hw_tag, ..base }
    }

    /// Does the driver hold more requests than the device serves (blkfront's ring)?
    fn driver_queue(&self) -> bool {
        self.params.queue_depth.is_some_and(|d| d > self.params.parallelism)
    }

    /// The driver takes what the elevator dispatches while it has room (`do_blkif_request`
    /// until `RING_FULL`): requests dispatched and not completed stay below `queue_depth`.
    fn fill_driver(&mut self, now: u64) {
        let depth = self.params.queue_depth.unwrap_or(self.params.parallelism) as usize;
        while self.busy_channels as usize + self.driver.len() < depth {
            let Some(q) = self.elevator_dispatch(now) else { break };
            self.driver.push_back(q);
        }
    }

    /// The driver's oldest request starts if a channel is free: (token, completion time).
    fn start_from_driver(&mut self, now: u64) -> Option<(u32, u64)> {
        if self.busy_channels >= self.params.parallelism {
            return None;
        }
        let q = self.driver.pop_front()?;
        Some((q.token, self.start(now, q.req, q.at)))
    }

    /// `cfq_update_hw_tag`'s current estimate (CFQ devices with a driver queue), else whether
    /// the device has more than one channel.
    pub fn cfq_hw_tag(&self) -> bool {
        self.cfq.hw_tag(&self.cfq_tunables())
    }

    fn is_cfq(&self) -> bool {
        self.params.scheduler == "cfq"
    }

    /// Submit `req` (identified by `token`) at `now`: started at once if a channel is free
    /// (its completion time), else queued, or merged into a queued request (whose token then
    /// carries its pages); a queued request is started by [`Device::complete`].
    pub fn submit(&mut self, now: u64, req: Request, token: u32) -> Submitted {
        self.submit_for(now, req, token, None, 0)
    }

    /// [`Device::submit`] on behalf of task `owner` (a read's process, for CFQ's per-process
    /// queues; None: no process, or a write) from CPU `cpu` (whose hardware queue it enters).
    pub fn submit_for(&mut self, now: u64, req: Request, token: u32, owner: Option<u32>, cpu: u32) -> Submitted {
        let q = Queued { token, req, at: now };
        let cfq_owner = CfqOwner::Sync(owner.unwrap_or(u32::MAX));
        let free = self.busy_channels < self.params.parallelism;
        // CFQ idling for this process: its request goes ahead of every other queue's.
        let awaited = self.is_cfq() && self.cfq.idling() && self.cfq.may_start_now(req.write, cfq_owner);
        if free && (awaited || (self.queued() == 0 && (!self.is_cfq() || self.cfq.may_start_now(req.write, cfq_owner)))) {
            if self.is_cfq() {
                let t = self.cfq_tunables();
                self.cfq.started_now(&t, &q, cfq_owner);
            }
            self.allocate(req.write);
            return Submitted::Started(self.start(now, req, now));
        }
        if self.read_pool_full(req.write) {
            // __make_request: a bio that merges needs no request; else get_request_wait.
            if let Some(into) = self.merge_only(&q, cfq_owner) {
                return Submitted::Merged(into);
            }
            self.read_waiters.push_back((q, cfq_owner));
            self.read_waiters_max = self.read_waiters_max.max(self.read_waiters.len() as u64);
            return Submitted::Queued;
        }
        let inserted = match self.params.scheduler.as_str() {
            "deadline" => self.deadline.insert(&self.tunables(), q),
            "cfq" => self.cfq.insert(&self.cfq_tunables(), q, cfq_owner),
            _ => {
                self.sqs.push((cpu % self.params.hw_queues.max(1)) as usize, q);
                Insert::Queued
            }
        };
        match inserted {
            Insert::Queued => {
                self.allocate(req.write);
                if !free && self.driver_queue() {
                    self.fill_driver(now);
                }
                Submitted::Queued
            }
            Insert::Merged(into) => Submitted::Merged(into),
        }
    }

    /// A request (a write if `write`) finished at `now`: its channel takes the next waiting
    /// request. Returns (token, completion time) of the one started.
    pub fn complete(&mut self, now: u64, write: bool) -> Option<(u32, u64)> {
        self.busy_channels -= 1;
        self.writes_in_service -= write as u32;
        self.allocated[write as usize] -= 1;
        if self.is_cfq() {
            let t = self.cfq_tunables();
            self.cfq.completed(&t, now);
        }
        if !write {
            self.admit_read_waiters(now);
        }
        if self.driver_queue() {
            self.fill_driver(now);
            return self.start_from_driver(now);
        }
        self.elevator_dispatch(now).map(|q| (q.token, self.start(now, q.req, q.at)))
    }

    /// Is a new read's request pool (module doc) empty?
    fn read_pool_full(&self, write: bool) -> bool {
        self.read_pool && !write && self.allocated[0] >= self.params.nr_requests as u64
    }

    /// A merge into a queued request of the elevator, without queueing `q` otherwise
    /// (`elv_merge` before `get_request`): the token it merged into.
    fn merge_only(&mut self, q: &Queued, owner: CfqOwner) -> Option<u32> {
        match self.params.scheduler.as_str() {
            "deadline" => self.deadline.merge_only(&self.tunables(), q),
            "cfq" => self.cfq.merge_only(&self.cfq_tunables(), q, owner),
            _ => None,
        }
    }

    /// `__freed_request`: each read request freed below `nr_requests` wakes the longest
    /// sleeper in `get_request_wait`, whose read enters the elevator now as a request of its
    /// own (it does not try to merge again).
    fn admit_read_waiters(&mut self, now: u64) {
        while !self.read_pool_full(false) {
            let Some((mut q, owner)) = self.read_waiters.pop_front() else { return };
            q.at = now;
            self.allocate(false);
            match self.params.scheduler.as_str() {
                "deadline" => self.deadline.push_unmerged(q),
                _ => self.cfq.insert_unmerged(&self.cfq_tunables(), q, owner),
            }
        }
    }

    /// The next request the elevator gives the driver: deadline's or CFQ's choice, or with
    /// "none" the controller's next command among the submission queues.
    fn elevator_dispatch(&mut self, now: u64) -> Option<Queued> {
        match self.params.scheduler.as_str() {
            "deadline" => {
                let t = self.tunables();
                self.deadline.dispatch(&t, now)
            }
            "cfq" => {
                let t = self.cfq_tunables();
                self.cfq.dispatch(&t, now)
            }
            _ => self.sqs.arbitrate(self.params.arbitration_burst),
        }
    }

    /// A CFQ idle timer armed since the last call (its expiry time): the caller calls
    /// [`Device::idle_timer`] then.
    pub fn take_idle_timer(&mut self) -> Option<u64> {
        self.cfq.take_armed()
    }

    /// The CFQ idle timer armed for `until` fired at `now`: if it ended the wait, the next
    /// queue's request starts (token, completion time).
    pub fn idle_timer(&mut self, now: u64, until: u64) -> Option<(u32, u64)> {
        if !self.cfq.idle_expired(until) {
            return None;
        }
        if self.driver_queue() {
            self.fill_driver(now);
            return self.start_from_driver(now);
        }
        if self.busy_channels >= self.params.parallelism {
            return None;
        }
        let t = self.cfq_tunables();
        let q = self.cfq.dispatch(&t, now)?;
        Some((q.token, self.start(now, q.req, q.at)))
    }

    /// Requests started but not finished plus those waiting.
    pub fn in_flight(&self) -> u64 {
        self.busy_channels as u64 + self.driver.len() as u64 + self.queued() as u64 + self.read_waiters.len() as u64
    }

    /// Requests of one direction (`write`) holding a slot, queued or in service; a request
    /// merged into a waiting one holds none of its own.
    pub fn allocated(&self, write: bool) -> u64 {
        self.allocated[write as usize]
    }

    /// The most requests of direction `write` that ever held a slot at once.
    pub fn allocated_max(&self, write: bool) -> u64 {
        self.allocated_max[write as usize]
    }

    fn allocate(&mut self, write: bool) {
        let n = &mut self.allocated[write as usize];
        *n += 1;
        let max = &mut self.allocated_max[write as usize];
        *max = (*max).max(*n);
    }

    /// A synchronous transfer (zram, brd): accounted, no queue.
    pub fn sync_io(&mut self, req: Request) {
        self.requests += 1;
        if req.write {
            self.pages_written += req.pages as u64;
        } else {
            self.pages_read += req.pages as u64;
        }
    }

    /// The submitter's CPU for one request through the block layer, by stage (nothing for a
    /// device that bypasses it, like zram).
    pub fn block_layer_cost(&self) -> crate::stats::CpuCost {
        blk::request_cost(&self.params)
    }

    /// The same, all stages together.
    pub fn block_layer_cpu_ns(&self) -> u64 {
        self.block_layer_cost().total()
    }

    /// CPU the caller spends on a synchronous transfer of `pages` (zram, brd).
    pub fn sync_cpu_ns(&self, pages: u64, write: bool) -> u64 {
        let per = if write { self.params.sync_write_cpu_ns } else { self.params.sync_read_cpu_ns };
        per * pages
    }

    /// What a synchronous transfer's CPU is: a RAM device that bypasses the block layer (zram)
    /// compresses in the caller; one behind it (brd, pmem) copies inside `submit_bio`, in its
    /// `make_request`: the block layer's dispatch to the driver.
    pub fn sync_cpu_category(&self) -> CpuCategory {
        if self.params.block_layer {
            CpuCategory::BlkDispatch
        } else {
            CpuCategory::Compression
        }
    }
}

/// The submission queues of a multi-queue device (blk-mq "none" over NVMe) and the
/// controller's arbitration among them.
///
/// blk-mq maps each CPU to a hardware context and the NVMe driver gives each one an I/O
/// submission queue (4.x `nvme_setup_io_queues` asks for one per online CPU; `nvme_dev_add`
/// makes `nr_hw_queues` of them, `queue_depth` 1023 tags each): a request goes into the
/// queue of the CPU that submits it, in order. The controller fetches commands from its
/// queues by round-robin arbitration (NVM Express 1.2 §4.11: every submission queue is
/// treated with equal priority, and up to Arbitration Burst commands are taken from one queue
/// per turn). So a read submitted where no write is queued waits for at most one burst of
/// each other busy queue, not behind every write in the device, and the writes of one busy
/// reclaimer do not hold up the commands of the others.
///
/// With one queue this is the single FIFO of a single-queue device (every preset but nvme).
/// The model's channels stand for the commands the controller processes at once; a command
/// waiting for one is one fetched later, which is where the arbitration decides the order.
///
/// The controller's turn finds the next non-empty queue from a bitmask of non-empty queues and
/// the waiting commands are counted as they come and go, so neither a dispatch nor the device's
/// `queued()` (asked on every submission) walks the 32 queues of the nvme preset; the order is
/// exactly the walk's (`sqs_bitmask_arbitration_matches_the_round_robin_walk`).
#[derive(Clone, Debug, Default)]
struct Sqs {
    queues: Vec<VecDeque<Queued>>,
    /// Bit k of word k / 64 is set while queue k holds a command.
    nonempty: Vec<u64>,
    /// Commands waiting in all queues.
    len: usize,
    /// The queue the last command came from.
    turn: usize,
    /// Commands taken from `turn` in its current burst.
    burst: u32,
}

impl Sqs {
    fn push(&mut self, queue: usize, q: Queued) {
        if self.queues.len() <= queue {
            self.queues.resize_with(queue + 1, VecDeque::new);
            self.nonempty.resize(queue / 64 + 1, 0);
        }
        self.queues[queue].push_back(q);
        self.nonempty[queue / 64] |= 1 << (queue % 64);
        self.len += 1;
    }

    fn len(&self) -> usize {
        self.len
    }

    /// Take the oldest command of queue `k`, keeping the count and the bitmask.
    fn pop(&mut self, k: usize) -> Option<Queued> {
        let q = self.queues.get_mut(k)?.pop_front()?;
        if self.queues[k].is_empty() {
            self.nonempty[k / 64] &= !(1 << (k % 64));
        }
        self.len -= 1;
        Some(q)
    }

    /// The first non-empty queue numbered `from` or more.
    fn next_nonempty(&self, from: usize) -> Option<usize> {
        let mut w = from / 64;
        let mut bits = self.nonempty.get(w)? & (u64::MAX << (from % 64));
        loop {
            if bits != 0 {
                return Some(w * 64 + bits.trailing_zeros() as usize);
            }
            w += 1;
            bits = *self.nonempty.get(w)?;
        }
    }

    /// The next command the controller takes: more of the current queue's burst of at most
    /// `burst` commands, else the first non-empty queue after it in round-robin order (the
    /// current queue itself last).
    fn arbitrate(&mut self, burst: u32) -> Option<Queued> {
        if self.burst > 0 && self.burst < burst.max(1) {
            if let Some(q) = self.pop(self.turn) {
                self.burst += 1;
                return Some(q);
            }
        }
        let k = self.next_nonempty(self.turn + 1).or_else(|| self.next_nonempty(0))?;
        (self.turn, self.burst) = (k, 1);
        self.pop(k)
    }
}

/// The block layer's plug: pages submitted in one batch are merged into requests when they
/// are contiguous on the device and in the same direction (a back-merge), up to the device's
/// maximum request size. Pages keep their submission order; nothing is sorted, as a plug
/// flushed by one task in submission order does not reorder non-contiguous requests.
#[derive(Default, Debug)]
pub struct Plug {
    pub requests: Vec<(Request, Vec<u32>)>,
    /// The task whose reads these are (CFQ queues a process's reads apart); None: a kernel
    /// thread's or a reclaimer's writes.
    pub owner: Option<u32>,
    /// The CPU that submits them (a multi-queue device queues them in its hardware queue).
    pub cpu: u32,
}

impl Plug {
    /// Add one page at device offset `page` for frame/token `token`.
    pub fn add(&mut self, page: u64, write: bool, token: u32, max_pages: u32) {
        if self.would_merge(page, write, max_pages) {
            let (last, tokens) = self.requests.last_mut().expect("a request to merge into");
            last.pages += 1;
            tokens.push(token);
            return;
        }
        self.requests.push((Request { start: page, pages: 1, write }, vec![token]));
    }

    /// Would `page` extend the last plugged request (`blk_attempt_plug_merge`)? Such a bio
    /// needs no request of its own, so a full queue does not stop it.
    pub fn would_merge(&self, page: u64, write: bool, max_pages: u32) -> bool {
        self.requests.last().is_some_and(|(last, _)| last.write == write && last.start + last.pages as u64 == page && last.pages < max_pages)
    }

    pub fn is_empty(&self) -> bool {
        self.requests.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contiguous_pages_merge_and_holes_split() {
        let mut plug = Plug::default();
        for (i, p) in [10u64, 11, 12, 20, 21].iter().enumerate() {
            plug.add(*p, false, i as u32, 128);
        }
        assert_eq!(plug.requests.len(), 2);
        assert_eq!(plug.requests[0].0, Request { start: 10, pages: 3, write: false });
        assert_eq!(plug.requests[1].1, vec![3, 4]);
    }

    #[test]
    fn merge_respects_max_request_size() {
        let mut plug = Plug::default();
        for p in 0..10u64 {
            plug.add(p, true, p as u32, 4);
        }
        assert_eq!(plug.requests.len(), 3);
    }

    #[test]
    fn accesses_overlap_on_channels_and_transfers_share_the_link() {
        let mut ssd = Device::new("ssd", DeviceParams::preset("sata-ssd").unwrap(), 1 << 18, Rng::new(1));
        let r = |start| Request { start, pages: 1, write: false };
        let (access, transfer) = ssd.service_parts(r(5));
        let started = |s: Submitted| if let Submitted::Started(t) = s { t } else { panic!("{s:?}") };
        let done: Vec<u64> = (0..4).map(|i| started(ssd.submit(0, r(100 * i), i as u32))).collect();
        for (i, d) in done.iter().enumerate() {
            assert_eq!(*d, access + (i as u64 + 1) * transfer);
        }
        assert_eq!(ssd.submit(0, r(999), 9), Submitted::Queued, "all channels busy: it waits");
        assert_eq!(ssd.complete(done[0], false), Some((9, done[0] + access + transfer)));
    }

    /// 2.6.28's read pool: with `nr_requests` reads held, a new read from another process
    /// sleeps for a request outside CFQ; each completed read lets the longest sleeper in, as
    /// a request of its own stamped with that time; a read that merges needs no request.
    #[test]
    fn reads_past_nr_requests_wait_for_a_request_in_the_order_they_came() {
        let mut p = DeviceParams::preset("hdd").unwrap();
        p.scheduler = "cfq".into();
        p.nr_requests = 4;
        let mut hdd = Device::new("hdd", p, 1 << 20, Rng::new(1));
        hdd.read_pool = true;
        let r = |start| Request { start, pages: 1, write: false };
        // Process i reads page 1000 x i: one starts, three queue in CFQ, the rest sleep.
        let Submitted::Started(mut t) = hdd.submit_for(0, r(0), 0, Some(0), 0) else { panic!() };
        for i in 1..8u32 {
            assert_eq!(hdd.submit_for(10, r(1000 * i as u64), i, Some(i), 0), Submitted::Queued);
        }
        assert_eq!(hdd.allocated(false), 4, "the pool holds nr_requests reads");
        assert_eq!(hdd.read_waiters.len(), 4);
        assert_eq!(hdd.in_flight(), 8);
        // Process 5 reads the page after its first: merged, no request needed.
        assert_eq!(hdd.submit_for(20, r(5001), 50, Some(5), 0), Submitted::Queued, "process 5's first read has no request yet");
        assert_eq!(hdd.submit_for(20, r(1001), 51, Some(1), 0), Submitted::Merged(1), "merges into process 1's queued read");
        let mut order = Vec::new();
        loop {
            // A completion starts the next read, or CFQ idles for the process first.
            let mut next = hdd.complete(t, false);
            if let Some(until) = hdd.take_idle_timer() {
                assert!(next.is_none());
                next = hdd.idle_timer(until, until);
            }
            let Some((token, done)) = next else { break };
            order.push(token);
            assert!(hdd.allocated(false) <= 4);
            t = done;
        }
        assert_eq!(hdd.allocated(false), 0);
        let mut sorted = order.clone();
        sorted.sort();
        assert_eq!(sorted, vec![1, 2, 3, 4, 5, 6, 7, 50], "every read is served once");
        // The sleepers got their requests in the order they slept (4, 5, 6, 7, then 50) and
        // their queues their slices in that order; 50 is process 5's second read, which its
        // slice serves after its first.
        assert_eq!(order, vec![1, 2, 3, 4, 5, 50, 6, 7]);
    }

    #[test]
    fn deadline_merges_a_write_into_the_queued_one_before_it() {
        let mut hdd = Device::new("hdd", DeviceParams::preset("hdd").unwrap(), 1 << 20, Rng::new(1));
        let w = |start| Request { start, pages: 8, write: true };
        let Submitted::Started(t) = hdd.submit(0, w(0), 1) else { panic!() };
        assert_eq!(hdd.submit(1, w(100), 2), Submitted::Queued);
        assert_eq!(hdd.submit(2, w(108), 3), Submitted::Merged(2), "contiguous with the queued request");
        assert_eq!(hdd.submit(3, w(500), 4), Submitted::Queued);
        assert_eq!(hdd.in_flight(), 3, "a merged request takes no request of its own");
        let (tok, _) = hdd.complete(t, true).unwrap();
        assert_eq!(tok, 2);
        assert_eq!(hdd.requests, 2);
    }

    /// Guards the driver queue (`queue_depth`, blkfront's ring): requests the elevator
    /// dispatched to the driver wait there in order, out of its reach. With the depth at the
    /// device's parallelism a read submitted after two writes goes first (mq-deadline: reads
    /// first); with a ring of 32 the writes were in the driver already and the read waits.
    #[test]
    fn requests_in_a_deeper_driver_are_served_in_dispatch_order() {
        let w = |start| Request { start, pages: 8, write: true };
        let r = Request { start: 5_000, pages: 1, write: false };
        let order = |depth: Option<u32>| {
            let mut p = DeviceParams::preset("hdd").unwrap();
            p.queue_depth = depth;
            let mut d = Device::new("hdd", p, 1 << 20, Rng::new(1));
            let Submitted::Started(mut t) = d.submit(0, w(0), 1) else { panic!() };
            assert_eq!(d.submit(1, w(100_000), 2), Submitted::Queued);
            assert_eq!(d.submit(2, w(200_000), 3), Submitted::Queued);
            assert_eq!(d.submit(3, r, 4), Submitted::Queued);
            assert_eq!(d.in_flight(), 4);
            let mut tokens = Vec::new();
            let mut write = true;
            while let Some((tok, done)) = d.complete(t, write) {
                tokens.push(tok);
                (t, write) = (done, tok != 4);
            }
            assert_eq!(d.in_flight(), 0);
            tokens
        };
        assert_eq!(order(None), vec![4, 2, 3], "the read first");
        assert_eq!(order(Some(32)), vec![2, 3, 4], "the writes were in the ring before the read came");
    }

    #[test]
    fn none_scheduler_is_fifo() {
        let mut nvme = Device::new("nvme", DeviceParams::preset("nvme").unwrap(), 1 << 20, Rng::new(1));
        nvme.params.parallelism = 1;
        let w = Request { start: 0, pages: 1, write: true };
        let r = Request { start: 50, pages: 1, write: false };
        let Submitted::Started(t) = nvme.submit(0, w, 1) else { panic!() };
        nvme.submit(1, w, 2);
        nvme.submit(2, r, 3);
        assert_eq!(nvme.complete(t, true).map(|x| x.0), Some(2));
    }

    /// Guards the NVMe controller's round-robin arbitration among the hardware queues' submission
    /// queues: a read submitted on one CPU while another CPU's writes wait for the device is the
    /// next command taken, not the last; with one queue (the legacy single FIFO) it waits behind
    /// every write. Two CPUs' writes alternate.
    #[test]
    fn nvme_round_robin_serves_each_cpus_submission_queue_in_turn() {
        let order = |hw_queues: u32, burst: u32| {
            let mut nvme = Device::new("nvme", DeviceParams::preset("nvme").unwrap(), 1 << 20, Rng::new(1));
            (nvme.params.parallelism, nvme.params.hw_queues, nvme.params.arbitration_burst) = (1, hw_queues, burst);
            let w = |i: u64| Request { start: 1000 * i, pages: 8, write: true };
            let Submitted::Started(mut t) = nvme.submit_for(0, w(0), 0, None, 0) else { panic!() };
            for i in 1..=4u32 {
                assert_eq!(nvme.submit_for(1, w(i as u64), i, None, 0), Submitted::Queued);
                assert_eq!(nvme.submit_for(1, w(10 + i as u64), 10 + i, None, 2), Submitted::Queued);
            }
            let read = Request { start: 99_999, pages: 1, write: false };
            assert_eq!(nvme.submit_for(2, read, 99, Some(7), 1), Submitted::Queued);
            let mut served = vec![];
            while let Some((tok, done)) = nvme.complete(t, tok_is_write(&served)) {
                served.push(tok);
                t = done;
            }
            served
        };
        fn tok_is_write(served: &[u32]) -> bool {
            served.last() != Some(&99)
        }
        assert_eq!(order(32, 1), vec![99, 11, 1, 12, 2, 13, 3, 14, 4], "one command per queue per turn");
        assert_eq!(order(32, 2), vec![99, 11, 12, 1, 2, 13, 14, 3, 4], "bursts of two");
        assert_eq!(order(1, 1), vec![1, 11, 2, 12, 3, 13, 4, 14, 99], "one queue: arrival order");
    }

    /// Guards the bitmask arbitration: over random submissions into 70 queues (two bitmask
    /// words) with bursts of 1 to 3, every dispatch takes the command the plain round-robin
    /// walk over the queues takes, and the count of waiting commands stays that of the queues.
    #[test]
    fn sqs_bitmask_arbitration_matches_the_round_robin_walk() {
        let mut rng = Rng::new(7);
        for burst in 1..=3u32 {
            let (mut sqs, mut walk) = (Sqs::default(), vec![VecDeque::<u32>::new(); 70]);
            let (mut turn, mut taken) = (0usize, 0u32);
            for token in 0..20_000u32 {
                if rng.below(5) < 3 {
                    // Mostly a few busy queues, sometimes any of them.
                    let k = if rng.below(4) == 0 { rng.below(70) } else { 60 + rng.below(6) } as usize;
                    sqs.push(k, Queued { token, req: Request { start: token as u64, pages: 1, write: false }, at: 0 });
                    walk[k].push_back(token);
                    continue;
                }
                let expect = (|| {
                    if taken > 0 && taken < burst {
                        if let Some(t) = walk[turn].pop_front() {
                            taken += 1;
                            return Some(t);
                        }
                    }
                    let k = (1..=70).map(|i| (turn + i) % 70).find(|&k| !walk[k].is_empty())?;
                    (turn, taken) = (k, 1);
                    walk[k].pop_front()
                })();
                assert_eq!(sqs.arbitrate(burst).map(|q| q.token), expect);
                assert_eq!(sqs.len(), walk.iter().map(VecDeque::len).sum::<usize>());
            }
        }
    }

    /// Submit `reqs` at time 0 and serve them to the end, each channel taking the next waiting
    /// request as it frees: the completion time of each, in submission order.
    fn serve_all(dev: &mut Device, reqs: &[Request]) -> Vec<u64> {
        let mut done = vec![0; reqs.len()];
        let mut pending = std::collections::BinaryHeap::new();
        for (i, r) in reqs.iter().enumerate() {
            if let Submitted::Started(t) = dev.submit(0, *r, i as u32) {
                pending.push(std::cmp::Reverse((t, i)));
            }
        }
        while let Some(std::cmp::Reverse((t, i))) = pending.pop() {
            done[i] = t;
            if let Some((tok, t2)) = dev.complete(t, reqs[i].write) {
                pending.push(std::cmp::Reverse((t2, tok as usize)));
            }
        }
        done
    }

    /// Guards the flash media of the NVMe preset (Intel P3700 specification): scattered 4 KiB
    /// writes kept 32 deep run at its steady-state random-write rate (175K IOPS, not the ~465K
    /// its link and channels admit), a sequential write stream at the link's 1900 MB/s, and a
    /// read started behind the scattered writes waits for their media time.
    #[test]
    fn sustained_random_writes_are_served_at_the_write_rate_and_slow_concurrent_reads() {
        let nvme = || Device::new("nvme", DeviceParams::preset("nvme").unwrap(), 1 << 24, Rng::new(1));
        let p = DeviceParams::preset("nvme").unwrap();
        let n = 35_000u64;
        let scattered: Vec<Request> = (0..n).map(|i| Request { start: (i * 7_919) % (1 << 24), pages: 1, write: true }).collect();
        let end = *serve_all(&mut nvme(), &scattered).iter().max().unwrap();
        let iops = n as f64 * 1e9 / end as f64;
        assert!((iops / p.random_write_iops as f64 - 1.0).abs() < 0.01, "random writes at {iops:.0} IOPS");

        let stream: Vec<Request> = (0..1_000u64).map(|i| Request { start: i * 128, pages: 128, write: true }).collect();
        let end = *serve_all(&mut nvme(), &stream).iter().max().unwrap();
        let bw = 1_000.0 * 128.0 * PAGE_BYTES as f64 * 1e9 / end as f64;
        assert!((bw / p.write_bandwidth as f64 - 1.0).abs() < 0.01, "a sequential stream at {bw:.0} B/s");

        let read = Request { start: 1 << 23, pages: 1, write: false };
        let alone = serve_all(&mut nvme(), &[read])[0];
        let mut behind = scattered[..64].to_vec();
        behind.push(read);
        let with_writes = *serve_all(&mut nvme(), &behind).last().unwrap();
        let writes_media = 64 * 1_000_000_000 / p.random_write_iops;
        assert_eq!(alone, p.read_latency_ns + nvme().service_parts(read).1, "an idle device: the read's access and transfer");
        assert!(with_writes >= writes_media + nvme().media_ns(read), "the read waits for the writes' media: {with_writes} ns");
        let mut no_media = nvme();
        (no_media.params.random_read_iops, no_media.params.random_write_iops) = (0, 0);
        let unlimited = *serve_all(&mut no_media, &behind).last().unwrap();
        assert!(unlimited < writes_media, "without the media the link serves them sooner: {unlimited} ns");
    }

    #[test]
    fn hdd_pays_for_distance_but_not_for_continuing() {
        let mut hdd = Device::new("hdd", DeviceParams::preset("hdd").unwrap(), 1 << 20, Rng::new(1));
        let Submitted::Started(t1) = hdd.submit(0, Request { start: 0, pages: 8, write: false }, 0) else { panic!() };
        let cont = hdd.service_ns(Request { start: 8, pages: 8, write: false });
        let near = hdd.service_ns(Request { start: 1000, pages: 8, write: false });
        let far = hdd.service_ns(Request { start: 900_000, pages: 8, write: false });
        assert!(t1 > 0 && cont < near && near < far);
    }

    /// Guards the short forward skip: a request a few pages ahead of the head waits for the
    /// gap to rotate past (about 33 us per page at 125 MB/s), not for a seek and half a turn;
    /// the same gap behind the head, or a long skip ahead, pays the seek.
    #[test]
    fn hdd_short_forward_skip_costs_the_rotation_over_the_gap() {
        let mut hdd = Device::new("hdd", DeviceParams::preset("hdd").unwrap(), 1 << 20, Rng::new(1));
        let _ = hdd.submit(0, Request { start: 1000, pages: 8, write: true }, 0);
        let cont = hdd.service_ns(Request { start: 1008, pages: 8, write: true });
        let ahead = hdd.service_ns(Request { start: 1016, pages: 8, write: true });
        let behind = hdd.service_ns(Request { start: 992, pages: 8, write: true });
        let far_ahead = hdd.service_ns(Request { start: 9000, pages: 8, write: true });
        let p = DeviceParams::preset("hdd").unwrap();
        let gap = 8 * PAGE_BYTES * 1_000_000_000 / p.write_bandwidth;
        assert_eq!(ahead, cont + gap);
        assert!(behind >= cont + p.seek_min_ns + p.rotational_latency_ns);
        assert!(far_ahead > behind && far_ahead <= cont + p.seek_full_ns + p.rotational_latency_ns);
    }

    fn table(lo: u64, hi: u64) -> AccessQuantiles {
        AccessQuantiles { p: vec![0.0, 1.0], ns: vec![lo, hi] }
    }

    fn measured_ssd(seed: u64) -> Device {
        let mut p = DeviceParams::preset("sata-ssd").unwrap();
        p.parallelism = 1;
        p.read_access = table(10_000, 20_000);
        p.read_access_sequential = table(1_000, 2_000);
        p.read_access_writing = table(100_000, 200_000);
        p.write_access = table(50_000, 60_000);
        Device::new("ssd", p, 1 << 20, Rng::new(seed))
    }

    /// The access part of the next request started on an idle `dev` at `now`.
    fn access_of(dev: &mut Device, now: u64, req: Request) -> u64 {
        let (_, transfer) = dev.service_parts(req);
        let Submitted::Started(done) = dev.submit(now, req, 0) else { panic!("queued") };
        done - now - transfer
    }

    #[test]
    fn access_times_come_from_the_table_of_the_request_kind() {
        let mut d = measured_ssd(1);
        let read = |start| Request { start, pages: 1, write: false };
        let random = access_of(&mut d, 0, read(500));
        assert!((10_000..=20_000).contains(&random), "{random}");
        d.complete(1_000_000, false);
        let seq = access_of(&mut d, 1_000_000, read(501));
        assert!((1_000..=2_000).contains(&seq), "a read where the last read ended: {seq}");
        d.complete(2_000_000, false);
        let w = access_of(&mut d, 2_000_000, Request { start: 9_000, pages: 1, write: true });
        assert!((50_000..=60_000).contains(&w), "{w}");
        d.params.parallelism = 2;
        let beside = access_of(&mut d, 2_000_001, read(7_000));
        assert!((100_000..=200_000).contains(&beside), "a read while a write is in service: {beside}");
    }

    #[test]
    fn sampled_service_times_follow_the_seed() {
        let run = |seed| {
            let mut d = measured_ssd(seed);
            (0..64u64).map(|i| access_of_and_finish(&mut d, i)).collect::<Vec<_>>()
        };
        fn access_of_and_finish(d: &mut Device, i: u64) -> u64 {
            let now = i * 1_000_000;
            let a = access_of(d, now, Request { start: i * 1000, pages: 1, write: false });
            d.complete(now + 500_000, false);
            a
        }
        assert_eq!(run(7), run(7), "same seed, same service times");
        assert_ne!(run(7), run(8), "another seed, another draw");
        let lat = run(7);
        assert!(lat.iter().min() < lat.iter().max(), "a distribution, not one constant");
    }

    #[test]
    fn without_a_table_the_constant_latency_applies_and_nothing_is_drawn() {
        let mut d = Device::new("ssd", DeviceParams::preset("sata-ssd").unwrap(), 1 << 20, Rng::new(3));
        let before = d.rng.clone().next_u64();
        let a = access_of(&mut d, 0, Request { start: 5, pages: 1, write: false });
        assert_eq!(a, d.params.read_latency_ns);
        assert_eq!(d.rng.next_u64(), before, "the stream is untouched: presets stay bit-identical");
    }
}
