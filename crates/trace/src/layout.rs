//! A trace's address space as mappings, for replay through the simulator.
//!
//! The simulator needs VMAs with a kind (anon, shmem, file); a trace has page numbers and, when
//! captured by swaplab, the mmap records that created them. Every touched page is classified:
//!
//! * inside the latest mmap that covered it: `MAP_SHARED|MAP_ANONYMOUS` is shmem; a shared file
//!   mapping is file; a private file mapping is file while the trace only reads or executes it,
//!   anon once it is written (copy-on-write turns its pages anonymous); a private anonymous
//!   mapping is anon;
//! * outside every mmap (the program image the loader mapped before the first record, the
//!   stack, the brk heap, or every page of a trace without meta records): file when the trace
//!   only executes it (program text), anon otherwise.
//!
//! Touched pages of the same class and origin that are at most `GAP_PAGES` apart form one
//! mapping from its first to its last touched page, so that neighbouring pages stay neighbours
//! (swap readahead and fault-around look at virtual neighbours) without allocating page tables
//! for the untouched gigabytes between libraries.

use crate::error::TraceError;
use crate::mman::{MAP_ANONYMOUS, MAP_SHARED};
use crate::seq::PageMap;
use crate::{Kind, Meta, Record};

/// Untouched pages that may separate two touched pages of one mapping.
pub const GAP_PAGES: u64 = 64;

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RegionKind {
    Anon,
    Shmem,
    File,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Region {
    pub start_page: u64,
    pub pages: u64,
    pub kind: RegionKind,
    /// The file of a file mapping ("" when unknown).
    pub file: String,
}

#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Layout {
    pub regions: Vec<Region>,
    /// Accesses of the selected threads.
    pub accesses: u64,
    /// First and last access time.
    pub time_span: (u64, u64),
}

struct MapRec {
    start: u64,
    end: u64,
    flags: u32,
    file: String,
}

/// Scan a trace once and lay out the pages the selected `threads` touch.
pub fn infer<I: Iterator<Item = Result<Record, TraceError>>>(records: I, threads: Option<&[u32]>, page_shift: u8) -> Result<Layout, TraceError> {
    let mut maps: Vec<MapRec> = Vec::new();
    // page -> (index of covering mmap at first touch or usize::MAX, written, non-exec touched)
    let mut pages: PageMap<(usize, bool, bool)> = PageMap::default();
    let mut layout = Layout::default();
    let mut first = None;
    let mask = (1u64 << page_shift) - 1;
    for r in records {
        match r? {
            Record::Meta { meta: Meta::Mmap { addr, len, flags, file, .. }, .. } => {
                maps.push(MapRec { start: addr >> page_shift, end: addr.saturating_add(len).saturating_add(mask) >> page_shift, flags, file });
            }
            Record::Access(a) => {
                if !threads.is_none_or(|t| t.contains(&a.thread)) {
                    continue;
                }
                layout.accesses += 1;
                first.get_or_insert(a.time);
                layout.time_span.1 = a.time;
                let e = pages.entry(a.page).or_insert_with(|| (maps.iter().rposition(|m| m.start <= a.page && a.page < m.end).unwrap_or(usize::MAX), false, false));
                e.1 |= a.kind == Kind::Write;
                e.2 |= a.kind != Kind::Exec;
            }
            Record::Meta { .. } => {}
        }
    }
    layout.time_span.0 = first.unwrap_or(0);
    let mut sorted: Vec<(u64, (usize, bool, bool))> = pages.into_iter().collect();
    sorted.sort_unstable_by_key(|&(p, _)| p);
    // Classify each page, then merge neighbours of the same class and origin.
    let classify = |m: usize, written: bool, data: bool| -> (RegionKind, String) {
        match maps.get(m) {
            None if !data => (RegionKind::File, String::new()),
            None => (RegionKind::Anon, String::new()),
            Some(mr) if mr.flags & MAP_ANONYMOUS != 0 => (if mr.flags & MAP_SHARED != 0 { RegionKind::Shmem } else { RegionKind::Anon }, String::new()),
            Some(mr) if mr.flags & MAP_SHARED != 0 || !written => (RegionKind::File, mr.file.clone()),
            Some(_) => (RegionKind::Anon, String::new()),
        }
    };
    let mut cur: Option<(Region, u64, usize)> = None;
    for (page, (m, written, data)) in sorted {
        let (kind, file) = classify(m, written, data);
        if let Some((r, last, origin)) = &mut cur {
            if r.kind == kind && *origin == m && page - *last <= GAP_PAGES + 1 {
                r.pages = page - r.start_page + 1;
                *last = page;
                continue;
            }
            layout.regions.push(r.clone());
        }
        cur = Some((Region { start_page: page, pages: 1, kind, file }, page, m));
    }
    if let Some((r, _, _)) = cur {
        layout.regions.push(r);
    }
    Ok(layout)
}

impl Layout {
    /// The region holding `page` (regions are sorted and disjoint).
    #[inline]
    pub fn find(&self, page: u64) -> Option<usize> {
        let i = self.regions.partition_point(|r| r.start_page <= page);
        (i > 0 && page < self.regions[i - 1].start_page + self.regions[i - 1].pages).then(|| i - 1)
    }
}
