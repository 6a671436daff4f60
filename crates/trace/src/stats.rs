//! `swaplab trace stats`: what a trace holds — records, accesses by kind, distinct pages,
//! footprint, threads, meta records, and the LRU reuse (stack) distance histogram in powers
//! of two.

use crate::error::TraceError;
use crate::mrc;
use crate::seq::PageSeq;
use crate::{Meta, Record};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// Read `records` once and summarise them.
pub fn stats<I: Iterator<Item = Result<Record, TraceError>>>(records: I, file: &str) -> Result<Value, TraceError> {
    let mut metas: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut threads: BTreeMap<u32, u64> = BTreeMap::new();
    let (mut first, mut last) = (None, 0u64);
    let collected = records.inspect(|r| match r {
        Ok(Record::Access(a)) => {
            *threads.entry(a.thread).or_default() += 1;
            first.get_or_insert(a.time);
            last = a.time;
        }
        Ok(Record::Meta { meta, .. }) => {
            *metas.entry(meta_name(meta)).or_default() += 1;
        }
        Err(_) => {}
    });
    let seq = PageSeq::load(collected, None, file)?;
    let h = mrc::histogram(&seq);
    let mut buckets: Vec<Value> = Vec::new();
    let mut lo = 1usize;
    while lo <= h.hist.len() {
        let hi = (lo * 2 - 1).min(h.hist.len());
        let n: u64 = h.hist[lo - 1..hi].iter().sum();
        buckets.push(json!({"from": lo, "to": hi, "accesses": n}));
        lo *= 2;
    }
    let (lo_page, hi_page) = (seq.pages.iter().min().copied(), seq.pages.iter().max().copied());
    Ok(json!({
        "accesses": seq.len(),
        "meta_records": metas,
        "reads": seq.kinds[0], "writes": seq.kinds[1], "execs": seq.kinds[2],
        "distinct_pages": seq.distinct(),
        "footprint_bytes": seq.distinct() as u64 * 4096,
        "lowest_page": lo_page, "highest_page": hi_page,
        "threads": threads,
        "time_first": first, "time_last": last,
        "cold_misses": h.cold,
        "reuse_distance_log2": buckets,
    }))
}

fn meta_name(m: &Meta) -> &'static str {
    match m {
        Meta::Mmap { .. } => "mmap",
        Meta::Munmap { .. } => "munmap",
        Meta::Brk { .. } => "brk",
        Meta::Mremap { .. } => "mremap",
        Meta::Madvise { .. } => "madvise",
        Meta::FileIo { write: false, .. } => "read",
        Meta::FileIo { write: true, .. } => "write",
    }
}
