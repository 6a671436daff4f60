//! Requests: what a server or I/O benchmark counts — a kv request (workload/kv.rs) or one
//! buffered read() (writes are not requests) — with its latency, and the reads a job keeps outstanding.
//!
//! **Latency.** A request is open from its start until its work is done: a kv request from
//! its `Op::Request` until the next one begins (its item's touches, faults included, lie in
//! between), a read from its first attempt until the page is copied. With a client pipeline
//! of P requests (memtier `--pipeline`), request j was sent when the reply to request j - P
//! arrived, so its latency runs from that completion (the first P from the start of the
//! measurement) to its own: the server works through them one at a time.
//!
//! **I/O depth.** With `iodepth` Q > 1 a read that misses the page cache starts its
//! readahead and goes on in flight (io_uring's async buffered read: the page's unlock
//! completes the request through a wait-queue callback, and the copy and
//! `folio_mark_accessed` run in the submitter's context); the job submits the next read. When
//! Q reads are in flight the job sleeps on the oldest. Completed reads are reaped at the job's
//! next read, and a job whose program ends (or whose time is up) reaps all before it exits. A synchronous device (brd, zram) ends its bio inside submission, so there a read
//! never stays in flight and Q changes nothing — as on the real ramdisk.
//!
//! **Measurement.** Requests of phases with `measure = false` and those completing within
//! the task's `ramp_time` are not counted; the window runs from the later of the first
//! measured request's start and the end of the ramp, to the last counted completion.

use super::fault::Outcome;
use super::Sim;
use crate::mm::*;
use crate::stats::Histogram;
use std::collections::VecDeque;

/// A read in flight: its frame, inode and page, when it was submitted, and whether it counts.
#[derive(Clone, Copy, Debug)]
pub struct InFlight {
    frame: u32,
    obj: u32,
    index: u32,
    start: u64,
    measured: bool,
}

/// One task's requests.
#[derive(Clone, Debug, Default)]
pub struct Requests {
    /// Measured requests completed, and their bytes (a kv request's; a read's page).
    pub ops: u64,
    pub bytes: u64,
    pub latency: Histogram,
    /// Start of the measured window (before the ramp clamp) and the last counted completion.
    pub first_start: Option<u64>,
    pub last_done: u64,
    /// The request being served: its start, bytes, whether it counts, its client's pipeline.
    open: Option<(u64, u64, bool, u32)>,
    /// Completion times of the last `pipeline` requests of the current run of requests (a
    /// phase that is measured or not), and when that run began.
    recent: VecDeque<u64>,
    recent_from: Option<(u64, bool)>,
    pub inflight: VecDeque<InFlight>,
    /// The most reads ever in flight at once (bounded by the phase's iodepth).
    pub inflight_max: u64,
}

impl Requests {
    /// Count a request that completed at `done` after starting at `start`, with `depth`
    /// requests kept outstanding by its client, if it is measured and past the ramp.
    fn complete(&mut self, start: u64, done: u64, bytes: u64, measured: bool, depth: u32, ramp_end: u64) {
        // Pipelined: sent when the reply `depth` requests earlier arrived.
        let sent = if depth > 1 {
            if self.recent_from.is_none_or(|(_, m)| m != measured) {
                self.recent.clear();
                self.recent_from = Some((start, measured));
            }
            let first = self.recent_from.map_or(start, |(s, _)| s);
            let s = if self.recent.len() as u32 >= depth { self.recent.pop_front().unwrap_or(first) } else { first };
            self.recent.push_back(done);
            s.min(start)
        } else {
            start
        };
        if !measured || done < ramp_end {
            return;
        }
        self.first_start.get_or_insert(start);
        self.ops += 1;
        self.bytes += bytes;
        self.latency.record(done - sent);
        self.last_done = self.last_done.max(done);
    }

    /// The measured window in ns, given the end of the ramp.
    pub fn window_ns(&self, ramp_end: u64) -> u64 {
        self.first_start.map_or(0, |s| self.last_done.saturating_sub(s.max(ramp_end)))
    }
}

impl Sim {
    fn ramp_end(&self, tid: u32) -> u64 {
        let t = &self.tasks[tid as usize];
        t.start + t.ramp_ns
    }

    fn requests_mut(&mut self, tid: u32) -> &mut Requests {
        self.tasks[tid as usize].requests.get_or_insert_with(Default::default)
    }

    /// The program's (outstanding, measuring) for its current phase.
    fn request_mode(&self, tid: u32) -> (u32, bool) {
        let p = self.tasks[tid as usize].program.as_ref();
        p.map_or((1, false), |p| (p.outstanding(), p.measuring()))
    }

    /// Open a request at the task's clock unless one is open (a retried read); `pipeline`:
    /// the requests its client keeps outstanding.
    fn open_request(&mut self, tid: u32, bytes: u64, pipeline: u32) {
        let (_, measured) = self.request_mode(tid);
        let at = self.tasks[tid as usize].clock;
        let r = self.requests_mut(tid);
        if r.open.is_none() {
            r.open = Some((at, bytes, measured, pipeline));
        }
    }

    /// Close the open request at `at`.
    pub(crate) fn close_request(&mut self, tid: u32, at: u64) {
        let ramp_end = self.ramp_end(tid);
        if let Some(r) = self.tasks[tid as usize].requests.as_mut() {
            if let Some((start, bytes, measured, pipeline)) = r.open.take() {
                r.complete(start, at, bytes, measured, pipeline, ramp_end);
            }
        }
    }

    /// A kv request begins: the previous one is done; the server's CPU for this one. A
    /// worker driven by a client first needs the request on its connection (kv_conn.rs).
    pub(crate) fn kv_request(&mut self, tid: u32, bytes: u32) -> Outcome {
        self.close_request(tid, self.tasks[tid as usize].clock);
        if self.kv_driven(tid) {
            if let Outcome::Blocked = self.kv_server_next(tid) {
                return Outcome::Blocked;
            }
        }
        let (pipeline, _) = self.request_mode(tid);
        self.open_request(tid, bytes as u64, pipeline);
        self.tasks[tid as usize].clock += self.costs.kv_request_ns;
        Outcome::Done
    }

    /// A buffered read() of page `index` of inode `obj` as a request, with the phase's I/O
    /// depth. `Done` when the read was copied or is in flight.
    pub(crate) fn read_request(&mut self, tid: u32, cpu: usize, obj: usize, index: u64) -> Outcome {
        let (depth, _) = self.request_mode(tid);
        if depth <= 1 {
            self.open_request(tid, PAGE_SIZE, 1);
            let out = self.filemap_read(tid, cpu, obj, index);
            if let Outcome::Done = out {
                self.tasks[tid as usize].clock += self.costs.syscall_page_ns;
                self.close_request(tid, self.tasks[tid as usize].clock);
            }
            return out;
        }
        self.reap_reads(tid);
        let full = self.tasks[tid as usize].requests.as_ref().is_some_and(|r| r.inflight.len() as u32 >= depth);
        if full {
            let oldest = self.tasks[tid as usize].requests.as_ref().and_then(|r| r.inflight.front()).map(|f| f.frame).expect("full queue");
            self.wait_on_frame(tid, oldest);
            return Outcome::Blocked;
        }
        self.open_request(tid, PAGE_SIZE, 1);
        let f = match self.filemap_get_page(tid, cpu, obj, index) {
            Ok(f) => f,
            Err(out) => return out,
        };
        self.tasks[tid as usize].clock += self.costs.syscall_page_ns;
        if self.mem.frames[f as usize].has(PG_LOCKED) {
            let r = self.requests_mut(tid);
            let (start, _, measured, _) = r.open.take().expect("opened above");
            r.inflight.push_back(InFlight { frame: f, obj: obj as u32, index: index as u32, start, measured });
            r.inflight_max = r.inflight_max.max(r.inflight.len() as u64);
        } else {
            self.filemap_read_done(obj, index, f);
            self.close_request(tid, self.tasks[tid as usize].clock);
        }
        Outcome::Done
    }

    /// Reap the task's completed reads; the frame of the oldest still in flight, if any.
    pub(crate) fn drain_reads(&mut self, tid: u32) -> Option<u32> {
        if self.tasks[tid as usize].requests.as_ref().is_none_or(|r| r.inflight.is_empty()) {
            return None;
        }
        self.reap_reads(tid);
        self.tasks[tid as usize].requests.as_ref().and_then(|r| r.inflight.front()).map(|q| q.frame)
    }

    /// Complete the task's in-flight reads whose pages are up to date.
    fn reap_reads(&mut self, tid: u32) {
        let ramp_end = self.ramp_end(tid);
        let Some(mut r) = self.tasks[tid as usize].requests.take() else { return };
        let at = self.tasks[tid as usize].clock;
        let mut i = 0;
        while i < r.inflight.len() {
            let q = r.inflight[i];
            if self.mem.frames[q.frame as usize].has(PG_LOCKED) && self.still_cached(q) {
                i += 1;
                continue;
            }
            r.inflight.remove(i);
            if self.still_cached(q) {
                self.filemap_read_done(q.obj as usize, q.index as u64, q.frame);
            }
            r.complete(q.start, at, PAGE_SIZE, q.measured, 1, ramp_end);
        }
        self.tasks[tid as usize].requests = Some(r);
    }

    /// Is the in-flight read's frame still that page of its file?
    fn still_cached(&self, q: InFlight) -> bool {
        let ent = self.mem.objects[q.obj as usize].entries[q.index as usize];
        ent & PTE_PRESENT != 0 && pte_frame(ent) == q.frame
    }
}
