//! Trace replay as a stream of touches: the accesses of a trace file, read as the program runs
//! (the trace is never held in memory), each turned into a touch of the mapping that the
//! resolver laid out for its page (config/trace.rs). A write access dirties its page; reads and
//! instruction fetches are loads.
//!
//! The first touch of each anonymous or shmem page is replayed as a store. A trace is a window
//! of a program whose anonymous memory already held data (written before the window, or by a
//! read() the trace does not show); replayed as a load, a never-written anonymous page would
//! map the shared zero page and never take memory, so a read-mostly trace (or one from a
//! format without operations, like oracleGeneral) would not use memory at all.
//!
//! Cloning a replay does not clone its position: a clone starts at the beginning of the trace,
//! which is what a [`super::Program`] wants from its phase templates (each pass starts over).
//! The resolver has read the whole trace already, so a read error here means the file changed
//! under a running simulation: the replay reports it on stderr once and ends the phase.

use super::Touch;
use std::sync::Arc;
use swaplab_trace::{open, Access, ReadOptions, TraceReader};

/// Accesses decoded at a time: large enough to amortise the reader, small enough to stay in L1.
const BATCH: usize = 1024;

/// Where a trace page lives: mapping `mi` of the task, starting at trace page `start`.
#[derive(Clone, Copy, Debug)]
pub struct Region {
    pub start: u64,
    pub pages: u64,
    pub mi: usize,
    /// Anonymous or shmem: the first touch of each page populates it (a store).
    pub populate: bool,
    /// Index of this region's first page in the replay's populated-page bitmap.
    pub first_bit: u64,
}

#[derive(Debug)]
struct Plan {
    path: String,
    columns: Option<String>,
    threads: Option<Vec<u32>>,
    /// Sorted by start page, disjoint.
    regions: Vec<Region>,
    /// Virtual nanoseconds per unit of the trace's clock (`speed`), if given.
    ns_per_unit: Option<f64>,
}

pub struct TraceReplay {
    plan: Arc<Plan>,
    reader: Option<TraceReader>,
    last_time: Option<u64>,
    last_region: usize,
    failed: bool,
    /// One bit per page of the populating regions: touched already.
    populated: Vec<u64>,
    batch: Vec<Access>,
    next_in_batch: usize,
}

impl Clone for TraceReplay {
    fn clone(&self) -> Self {
        TraceReplay { plan: self.plan.clone(), reader: None, last_time: None, last_region: 0, failed: false, populated: Vec::new(), batch: Vec::new(), next_in_batch: 0 }
    }
}

impl std::fmt::Debug for TraceReplay {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "TraceReplay({})", self.plan.path)
    }
}

impl TraceReplay {
    pub fn new(path: String, columns: Option<String>, threads: Option<Vec<u32>>, mut regions: Vec<Region>, speed: Option<f64>) -> TraceReplay {
        regions.sort_by_key(|r| r.start);
        let mut bit = 0;
        for r in regions.iter_mut() {
            r.first_bit = bit;
            bit += r.pages;
        }
        let plan = Plan { path, columns, threads, regions, ns_per_unit: speed.map(|s| 1e9 / s) };
        TraceReplay { plan: Arc::new(plan), reader: None, last_time: None, last_region: 0, failed: false, populated: Vec::new(), batch: Vec::new(), next_in_batch: 0 }
    }

    fn fail(&mut self, message: String) -> Option<(usize, Touch, Option<u64>)> {
        if !self.failed {
            eprintln!("swaplab: trace replay stopped: {message}");
        }
        self.failed = true;
        None
    }

    #[inline]
    fn region_of(&mut self, page: u64) -> Option<Region> {
        let regions = &self.plan.regions;
        let r = regions[self.last_region];
        if page.wrapping_sub(r.start) < r.pages {
            return Some(r);
        }
        // Regions starting at or below `page`: a branch-free count over a few regions (a
        // trace's layout has a handful), a binary search over many.
        let i = if regions.len() <= 32 { regions.iter().map(|r| (r.start <= page) as usize).sum() } else { regions.partition_point(|r| r.start <= page) };
        if i == 0 || page - regions[i - 1].start >= regions[i - 1].pages {
            return None;
        }
        self.last_region = i - 1;
        Some(regions[i - 1])
    }
}

impl Iterator for TraceReplay {
    type Item = (usize, Touch, Option<u64>);

    /// The next access: (mapping index, touch, compute ns when the phase has a `speed`).
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        if self.reader.is_none() {
            let opts = ReadOptions { format: None, columns: self.plan.columns.clone() };
            match open(&self.plan.path, &opts) {
                Ok(r) => {
                    self.reader = Some(r);
                    let bits = self.plan.regions.last().map_or(0, |r| r.first_bit + r.pages);
                    self.populated = vec![0; bits.div_ceil(64) as usize];
                }
                Err(e) => return self.fail(e.to_string()),
            }
        }
        loop {
            if self.next_in_batch == self.batch.len() {
                self.batch.clear();
                self.next_in_batch = 0;
                match self.reader.as_mut().expect("opened").read_accesses(&mut self.batch, BATCH) {
                    Ok(true) => {}
                    Ok(false) => return None,
                    Err(e) => return self.fail(e.to_string()),
                }
                if self.batch.is_empty() {
                    return None;
                }
            }
            let a = self.batch[self.next_in_batch];
            self.next_in_batch += 1;
            if let Some(t) = &self.plan.threads {
                if !t.contains(&a.thread) {
                    continue;
                }
            }
            let compute = self.plan.ns_per_unit.map(|k| {
                let dt = self.last_time.map_or(0, |l| a.time.saturating_sub(l));
                (dt as f64 * k) as u64
            });
            self.last_time = Some(a.time);
            let Some(r) = self.region_of(a.page) else {
                return self.fail(format!("{}: page {:#x} is outside the layout the resolver made (the file changed?)", self.plan.path, a.page));
            };
            let offset = a.page - r.start;
            let mut write = a.kind == swaplab_trace::Kind::Write;
            if r.populate {
                let b = r.first_bit + offset;
                let (w, m) = ((b / 64) as usize, 1u64 << (b % 64));
                write |= self.populated[w] & m == 0;
                self.populated[w] |= m;
            }
            let touch = Touch { page: offset as u32, write, check: false };
            return Some((r.mi, touch, compute));
        }
    }
}
