//! Block I/O as the engine sees it: requests in flight and where their pages go when they
//! complete, tasks sleeping on a folio's read or on writeback progress, and the writeback
//! throttle's wake-up rule (§3.13). The devices' own timing is in `crate::device`.

use super::{Ev, Sim, TState};
use crate::config::Resolved;
use crate::device::{Device, Plug, Submitted, DEVICE_STREAM};
use crate::rng::Rng;
use crate::swap::io::SwapPlugs;
use crate::stats::{CpuCategory, CpuCost};
use crate::mm::*;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Where an I/O request's pages go when it completes.
#[derive(Clone, Debug)]
pub(crate) struct IoReq {
    pub frames: Vec<u32>,
    pub write: bool,
    pub dev: DevRef,
}

/// Which device a request targets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DevRef {
    Swap(usize),
    File,
}

/// Requests in flight and the tasks waiting for I/O.
pub(crate) struct IoState {
    pub reqs: Vec<Option<IoReq>>,
    pub free_ids: Vec<u32>,
    /// Tasks sleeping on a locked folio (read in flight), in the order they began to wait.
    pub frame_waiters: HashMap<u32, Vec<u32>, BuildHasherDefault<FrameHasher>>,
    /// Emptied waiter lists kept for the next wait, so that a wait allocates nothing.
    pub spare_waiter_lists: Vec<Vec<u32>>,
    /// A swap-in window's plugs, kept between windows (engine/swapin_window.rs) so that a
    /// window allocates nothing: one window is read at a time.
    pub spare_read_plugs: Option<SwapPlugs>,
    /// Tasks throttled until writeback makes progress (reclaim_throttle WRITEBACK).
    pub writeback_waiters: Vec<u32>,
    /// Tasks in `congestion_wait` (engine/congestion.rs).
    pub congestion_waiters: Vec<u32>,
    /// Reclaimers asleep for a free request on a full queue (`reclaim/writeback_stall.rs`).
    pub request_waiters: Vec<(u32, DevRef)>,
    /// How many times a reclaimer (direct or kswapd) slept in `get_request` for a request.
    pub request_sleeps: u64,
    /// Direct reclaimers in 6.x `reclaim_throttle(NOPROGRESS)`.
    pub noprogress_waiters: Vec<u32>,
    /// Queues marked write-congested (`bdi_write_congested`), in the order they became so.
    pub congested: Vec<DevRef>,
    /// 2.6.28 and 2.6.32: every async (write) request freed below the off threshold wakes
    /// `congestion_wait` (engine/congestion.rs), not only the one that ends a congestion.
    pub wake_on_freed_request: bool,
    /// Folios under writeback (`nr_writeback`).
    pub nr_writeback: u64,
    /// Pages whose writeback completed, and the count when the first throttled sleeper began.
    pub wb_completed: u64,
    pub wb_throttle_start: u64,
    /// The device behind file mappings (`machine.file_device`).
    pub file_dev: Device,
}

/// The frame-waiter map's hash: frame numbers are dense small integers, so one multiply by the
/// 64-bit golden ratio (Fibonacci hashing) spreads them over the table's buckets (a bijection
/// on the low bits) and its control bytes (the high bits). Every I/O completion looks its frame
/// up; SipHash cost ~110 instructions a lookup there (3% of a major fault). It has no
/// per-process key either, so the map's iteration order is the same in every run.
#[derive(Default, Clone, Copy)]
pub(crate) struct FrameHasher(u64);

impl Hasher for FrameHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(GOLDEN_RATIO_64);
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.0 = (self.0 ^ n as u64).wrapping_mul(GOLDEN_RATIO_64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// 2^64 / φ, odd (the kernel's `GOLDEN_RATIO_64`, include/linux/hash.h).
const GOLDEN_RATIO_64: u64 = 0x61C8_8646_80B5_83EB;

/// Capacity of the file device in pages: large enough for any file the model maps.
const FILE_DEVICE_PAGES: u64 = 1 << 40;

impl IoState {
    pub fn new(cfg: &Resolved) -> IoState {
        IoState {
            reqs: Vec::new(),
            free_ids: Vec::new(),
            frame_waiters: HashMap::default(),
            spare_waiter_lists: Vec::new(),
            spare_read_plugs: None,
            writeback_waiters: Vec::new(),
            congestion_waiters: Vec::new(),
            request_waiters: Vec::new(),
            request_sleeps: 0,
            noprogress_waiters: Vec::new(),
            congested: Vec::new(),
            wake_on_freed_request: cfg.profile == crate::config::Profile::V2_6_28,
            nr_writeback: 0,
            wb_completed: 0,
            wb_throttle_start: 0,
            file_dev: Device::new("file", cfg.file_device_params.clone(), FILE_DEVICE_PAGES, Rng::for_stream(cfg.config.seed, DEVICE_STREAM - 1)),
        }
    }
}

impl Sim {
    /// Complete the I/O that finishes by `t` while a task is inside long kernel work (a
    /// reclaim priority loop): in the kernel, writes complete and pages rotate while the
    /// reclaimer scans, so later priorities find them clean. Only I/O completions are applied
    /// (including those that completions due by `t` start); other events keep their place.
    pub(crate) fn complete_io_until(&mut self, t: u64) {
        let saved_now = self.now;
        let mut deferred = Vec::new();
        while let Some((et, seq, ev)) = self.events.pop_due(t) {
            match ev {
                Ev::IoDone(r) => {
                    self.now = et.max(saved_now);
                    self.io_done(r);
                }
                Ev::IoIdle(dev, until) => {
                    self.now = et.max(saved_now);
                    self.io_idle(dev, until);
                }
                other => deferred.push((et, seq, other)),
            }
        }
        for (et, seq, ev) in deferred {
            self.events.repost(et, seq, ev);
        }
        self.now = saved_now;
    }

    /// Block the current task until `frame`'s read or writeback completes.
    pub(crate) fn wait_on_frame(&mut self, tid: u32, frame: u32) {
        let spare = &mut self.io.spare_waiter_lists;
        self.io.frame_waiters.entry(frame).or_insert_with(|| spare.pop().unwrap_or_default()).push(tid);
        self.io_schedule(tid);
        self.tasks[tid as usize].state = TState::Blocked;
    }

    /// Wake the tasks waiting on `frame` (its read ended, or its writeback).
    fn wake_frame_waiters(&mut self, frame: u32) {
        // Most completions have no waiter (writeback, readahead): skip the lookup, as the
        // kernel's `folio_unlock` tests PG_waiters before it hashes into the wait table.
        if self.io.frame_waiters.is_empty() {
            return;
        }
        if let Some(mut ws) = self.io.frame_waiters.remove(&frame) {
            let now = self.now;
            for &w in &ws {
                self.wake(w, now);
            }
            ws.clear();
            self.io.spare_waiter_lists.push(ws);
        }
    }

    /// `folio_wait_writeback`: sleep the task (in io_schedule, counted as iowait) until frame
    /// `frame`'s writeback ends.
    pub(crate) fn wait_on_writeback(&mut self, tid: u32, frame: u32) {
        debug_assert!(self.mem.frames[frame as usize].has(PG_WRITEBACK));
        self.wait_on_frame(tid, frame);
    }

    /// Sleep the task until writeback progresses or `timeout` passes (reclaim_throttle).
    pub(crate) fn throttle_on_writeback(&mut self, tid: u32, timeout: u64) {
        // Before 5.16 this sleep was congestion_wait: io_schedule_timeout, counted as iowait.
        if self.profile < crate::config::Profile::V6 {
            self.io_schedule(tid);
        }
        self.note_writeback_throttle();
        self.io.writeback_waiters.push(tid);
        self.block_for(tid, timeout);
    }

    /// Tasks (and kswapd) sleeping in reclaim_throttle(WRITEBACK).
    pub(crate) fn nr_writeback_throttled(&self) -> u64 {
        self.io.writeback_waiters.len() as u64 + self.reclaim.kswapd.throttled as u64
    }

    /// The first sleeper records how much writeback had completed (`nr_reclaim_start`).
    pub(crate) fn note_writeback_throttle(&mut self) {
        if self.nr_writeback_throttled() == 0 {
            self.io.wb_throttle_start = self.io.wb_completed;
        }
    }

    fn device_mut(&mut self, dev: DevRef) -> &mut Device {
        match dev {
            DevRef::Swap(i) => &mut self.swap.areas[i].device,
            DevRef::File => &mut self.io.file_dev,
        }
    }

    /// Submit a plug's requests to a device at `at`; returns the CPU the submitter spent.
    pub(crate) fn submit_plug(&mut self, dev: DevRef, plug: Plug, at: u64) -> u64 {
        self.submit_plug_by_category(dev, plug, at).total()
    }

    /// `submit_plug` with the submitter's CPU by category (the block layer's stages, brd's
    /// copy, zram's compression).
    pub(crate) fn submit_plug_by_category(&mut self, dev: DevRef, plug: Plug, at: u64) -> CpuCost {
        if self.device_mut(dev).params.synchronous {
            return self.submit_plug_sync(dev, plug);
        }
        let mut cost = CpuCost::default();
        let (owner, cpu) = (plug.owner, plug.cpu);
        for (req, frames) in plug.requests {
            let id = match self.io.free_ids.pop() {
                Some(id) => {
                    self.io.reqs[id as usize] = Some(IoReq { frames, write: req.write, dev });
                    id
                }
                None => {
                    self.io.reqs.push(Some(IoReq { frames, write: req.write, dev }));
                    (self.io.reqs.len() - 1) as u32
                }
            };
            if req.write {
                self.stats.vm.pgpgout += req.pages as u64 * PAGE_KB;
            } else {
                self.stats.vm.pgpgin += req.pages as u64 * PAGE_KB;
            }
            let device = self.device_mut(dev);
            cost.add(&device.block_layer_cost());
            match device.submit_for(at + cost.total(), req, id, owner, cpu) {
                Submitted::Started(done) => self.push(done, Ev::IoDone(id)),
                Submitted::Queued => {}
                Submitted::Merged(into) => {
                    // The scheduler merged it into a waiting request: its pages complete with it.
                    let merged = self.io.reqs[id as usize].take().expect("just queued");
                    self.io.reqs[into as usize].as_mut().expect("a waiting request").frames.extend(merged.frames);
                    self.io.free_ids.push(id);
                }
            }
            self.note_submit_congestion(dev);
            self.schedule_idle_timer(dev);
        }
        cost
    }

    /// A synchronous device (brd, zram) serves a bio inside `submit_bio`: the driver copies
    /// (or decompresses) in the submitter's context and ends the bio before returning, in
    /// every era (brd's make_request did so long before SWP_SYNCHRONOUS_IO existed). So a
    /// swap-cache read from it is up to date when submission returns and nobody sleeps on it.
    /// Returns the submitter's CPU time.
    fn submit_plug_sync(&mut self, dev: DevRef, plug: Plug) -> CpuCost {
        let mut cpu = CpuCost::default();
        for (req, frames) in plug.requests {
            let pages = req.pages as u64;
            match dev {
                DevRef::Swap(d) if self.swap.areas[d].zram.is_some() => {
                    for i in 0..pages {
                        // A write that finds no memory for its pool fails as an I/O error:
                        // the folio is redirtied (below it is then kept, not freed).
                        match self.zram_io(d, (req.start + i) as u32, req.write) {
                            Ok(ns) => cpu.charge(CpuCategory::Compression, ns),
                            Err(ns) => {
                                cpu.charge(CpuCategory::Compression, ns);
                                self.mem.frames[frames[i as usize] as usize].flags |= PG_DIRTY;
                            }
                        }
                    }
                }
                _ => {
                    let device = self.device_mut(dev);
                    cpu.add(&device.block_layer_cost());
                    cpu.charge(device.sync_cpu_category(), device.sync_cpu_ns(pages, req.write));
                    device.sync_io(req);
                }
            }
            if req.write {
                self.stats.vm.pgpgout += pages * PAGE_KB;
                self.io.wb_completed += frames.len() as u64;
                for &f in &frames {
                    self.end_writeback(f);
                }
            } else {
                self.stats.vm.pgpgin += pages * PAGE_KB;
                for &f in &frames {
                    self.mem.frames[f as usize].flags &= !PG_LOCKED;
                }
            }
        }
        cpu
    }

    pub(crate) fn io_done(&mut self, id: u32) {
        let req = self.io.reqs[id as usize].take().expect("live request");
        self.io.free_ids.push(id);
        let now = self.now;
        if let Some((next, done)) = self.device_mut(req.dev).complete(now, req.write) {
            self.push(done, Ev::IoDone(next));
        }
        self.schedule_idle_timer(req.dev);
        self.note_complete_congestion(req.dev, req.write);
        if req.dev == DevRef::File {
            self.wb_io_done(if req.write { req.frames.len() as u64 } else { 0 });
        }
        // The request is free: a reclaimer asleep for one of its pool runs again.
        if self.freed_request_wakes_writers(req.write) {
            self.wake_request_waiters(req.dev);
        }
        if req.write {
            for &f in &req.frames {
                self.end_writeback(f);
            }
            // acct_reclaim_writeback: the throttled are woken together once more than
            // SWAP_CLUSTER_MAX pages per sleeper have been written since the first slept (§3.13).
            self.io.wb_completed += req.frames.len() as u64;
            let sleepers = self.nr_writeback_throttled();
            if sleepers > 0 && self.io.wb_completed - self.io.wb_throttle_start > crate::reclaim::SWAP_CLUSTER_MAX * sleepers {
                let waiters = std::mem::take(&mut self.io.writeback_waiters);
                for w in waiters {
                    self.wake(w, now);
                }
                self.kswapd_writeback_progress();
            }
        } else {
            for &f in &req.frames {
                self.mem.frames[f as usize].flags &= !PG_LOCKED;
                self.wake_frame_waiters(f);
            }
        }
    }

    /// A CFQ idle timer `dev` armed (at a completion) or re-armed for now (a preemption of its
    /// idle wait at a submission) goes on the event queue.
    fn schedule_idle_timer(&mut self, dev: DevRef) {
        if let Some(until) = self.device_mut(dev).take_idle_timer() {
            let code = match dev {
                DevRef::Swap(i) => i as u32,
                DevRef::File => u32::MAX,
            };
            self.push(until, Ev::IoIdle(code, until));
        }
    }

    /// The CFQ idle timer of device `code` armed for `until` fired: when it ends the wait for
    /// the idling process, the next queue's request starts.
    pub(crate) fn io_idle(&mut self, code: u32, until: u64) {
        let dev = if code == u32::MAX { DevRef::File } else { DevRef::Swap(code as usize) };
        let now = self.now;
        if let Some((next, done)) = self.device_mut(dev).idle_timer(now, until) {
            self.push(done, Ev::IoDone(next));
        }
    }

    /// `folio_end_writeback`: a PG_reclaim folio is rotated by the LRU policy so that reclaim
    /// finds it next (`folio_rotate_reclaimable`, §2.6).
    fn end_writeback(&mut self, f: u32) {
        let fr = &mut self.mem.frames[f as usize];
        debug_assert!(fr.has(PG_WRITEBACK));
        fr.flags &= !PG_WRITEBACK;
        self.io.nr_writeback -= 1;
        if fr.has(PG_RECLAIM) {
            fr.flags &= !(PG_RECLAIM | PG_ACTIVE);
            if fr.has(PG_LRU) {
                self.reclaim.policy().rotate_reclaimable(&mut self.mem.frames, f, &mut self.stats.vm);
            }
        }
        // folio_end_writeback wakes whoever waits on it (a legacy memcg reclaimer, §3.10 3(c)).
        self.wake_frame_waiters(f);
    }
}
