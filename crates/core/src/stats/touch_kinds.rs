//! A task's touch latencies split by what the touch met (result field `touch_kinds`).
//!
//! A touch's latency (`touch_latency_ns`) mixes touches that cost 10 ns with faults that wait
//! milliseconds; which kind fills which percentile is what a comparison with a published
//! distribution needs (docs/results/readahead-reproduce.md, Session 39). The fault path marks
//! what it did while the touch is in progress (`mark`, several marks per touch are normal: a
//! retried fault, a reclaim inside an allocation) and the touch is filed under the most
//! expensive kind it marked when it completes (`record`), in this order:
//!
//! | kind | the touch ... |
//! |---|---|
//! | `direct_reclaim` | entered direct reclaim (its allocation or a readahead page's) |
//! | `major` | missed the swap cache or page cache and read its page |
//! | `cache_hit_waited` | found its page in the swap cache still locked by its read and slept on it (`folio_lock_or_retry`) |
//! | `cache_hit` | found its page in the swap cache, up to date |
//! | `new_page` | allocated a new anonymous page (first write) |
//! | `other` | any other fault: write-protect, zero page, a page-cache hit, shmem |
//! | `resident` | took no fault |
//!
//! Memory: a task keeps a coarse histogram (4 KiB, 1/8 resolution) per kind it has met, made
//! on first use, so a workload of thousands of tasks that fault one way pays one per task.

use super::hist::Histogram;
use super::Percentiles;
use serde::Serialize;
use std::collections::BTreeMap;

/// What a touch met, most expensive first (the order `record` files a touch by).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TouchKind {
    DirectReclaim,
    Major,
    CacheHitWaited,
    CacheHit,
    NewPage,
    Other,
    Resident,
}

const KINDS: [TouchKind; 7] = [TouchKind::DirectReclaim, TouchKind::Major, TouchKind::CacheHitWaited, TouchKind::CacheHit, TouchKind::NewPage, TouchKind::Other, TouchKind::Resident];

impl TouchKind {
    pub fn name(self) -> &'static str {
        match self {
            TouchKind::DirectReclaim => "direct_reclaim",
            TouchKind::Major => "major",
            TouchKind::CacheHitWaited => "cache_hit_waited",
            TouchKind::CacheHit => "cache_hit",
            TouchKind::NewPage => "new_page",
            TouchKind::Other => "other",
            TouchKind::Resident => "resident",
        }
    }
}

/// One kind's share of a task's touches.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct TouchKindStats {
    pub touches: u64,
    pub latency_ns: Percentiles,
}

/// The marks of the touch in progress and a histogram per kind met so far.
#[derive(Clone, Debug, Default)]
pub struct TouchKinds {
    marks: u8,
    hists: [Option<Box<Histogram>>; 7],
}

impl TouchKinds {
    /// The touch in progress did this (a fault may mark several kinds).
    #[inline]
    pub fn mark(&mut self, kind: TouchKind) {
        self.marks |= 1 << kind as u8;
    }

    /// The touch in progress completed after `lat` ns: file it under its most expensive mark
    /// (`Other` when the fault marked nothing) and clear the marks.
    #[inline]
    pub fn record(&mut self, lat: u64) {
        let kind = if self.marks == 0 { TouchKind::Other } else { KINDS[self.marks.trailing_zeros() as usize] };
        self.marks = 0;
        self.hist(kind).record(lat);
    }

    /// Forget the marks: the kernel work they came from was not a touch's (a buffered read(),
    /// a message: engine/ipc.rs).
    #[inline]
    pub fn clear(&mut self) {
        self.marks = 0;
    }

    /// `n` resident touches of `lat` ns each.
    #[inline]
    pub fn record_resident(&mut self, lat: u64, n: u64) {
        if n > 0 {
            self.hist(TouchKind::Resident).record_n(lat, n);
        }
    }

    fn hist(&mut self, kind: TouchKind) -> &mut Histogram {
        self.hists[kind as usize].get_or_insert_with(|| Box::new(Histogram::coarse()))
    }

    /// The kinds met, by name.
    pub fn report(&self) -> BTreeMap<String, TouchKindStats> {
        KINDS
            .iter()
            .filter_map(|&k| {
                let h = self.hists[k as usize].as_ref()?;
                Some((k.name().to_string(), TouchKindStats { touches: h.count(), latency_ns: h.percentiles() }))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_touch_is_filed_under_its_most_expensive_mark() {
        let mut k = TouchKinds::default();
        k.mark(TouchKind::CacheHit);
        k.mark(TouchKind::Major);
        k.record(200_000);
        k.mark(TouchKind::NewPage);
        k.mark(TouchKind::DirectReclaim);
        k.record(2_000_000);
        k.record(900); // a fault that marked nothing (a write-protect fault)
        k.record_resident(10, 5);
        let r = k.report();
        assert_eq!(r.keys().cloned().collect::<Vec<_>>(), ["direct_reclaim", "major", "other", "resident"]);
        assert_eq!(r["major"].touches, 1);
        assert!(r["major"].latency_ns.p50 <= 200_000 && r["major"].latency_ns.p50 >= 175_000);
        assert_eq!(r["resident"].touches, 5);
        assert_eq!(r["other"].latency_ns.max, 900);
    }
}
