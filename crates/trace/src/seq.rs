//! A trace's accesses as a dense page sequence: page `ids[i]` (0..distinct) was touched by
//! access `i`. Every bound and curve works on this form: dense ids let the algorithms use
//! arrays instead of hash maps, which is most of their speed. Loading keeps 4 bytes per access
//! plus 8 per distinct page; OPT needs the whole future anyway.

use crate::error::{At, TraceError};
use crate::{Kind, Record};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A multiplicative hash for page numbers: SipHash's DoS resistance buys nothing here and costs
/// a third of the load time.
#[derive(Default)]
pub struct PageHasher(u64);

impl Hasher for PageHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ b as u64).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (v ^ (v >> 29)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

pub type PageMap<V> = HashMap<u64, V, BuildHasherDefault<PageHasher>>;

/// "No next use" in next-use arrays.
pub const NEVER: u32 = u32::MAX;

#[derive(Clone, Debug, Default)]
pub struct PageSeq {
    /// Dense page id of every access, in order.
    pub ids: Vec<u32>,
    /// The virtual page number of each dense id (first-touch order).
    pub pages: Vec<u64>,
    /// Accesses by kind: read, write, exec.
    pub kinds: [u64; 3],
}

impl PageSeq {
    pub fn distinct(&self) -> usize {
        self.pages.len()
    }
    pub fn len(&self) -> usize {
        self.ids.len()
    }
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    pub fn from_pages(pages: &[u64]) -> PageSeq {
        let mut b = Builder::default();
        for &p in pages {
            b.push(p, Kind::Read);
        }
        b.seq
    }

    /// The accesses of a record stream (meta records skipped), optionally of some threads only.
    pub fn load<I: Iterator<Item = Result<Record, TraceError>>>(records: I, threads: Option<&[u32]>, file: &str) -> Result<PageSeq, TraceError> {
        let mut b = Builder::default();
        for r in records {
            if let Record::Access(a) = r? {
                if threads.is_none_or(|t| t.contains(&a.thread)) {
                    if b.seq.ids.len() == NEVER as usize - 1 {
                        return Err(TraceError::new(file, At::Record(b.seq.ids.len() as u64 + 1), "more than 2^32 - 2 accesses: split the trace"));
                    }
                    b.push(a.page, a.kind);
                }
            }
        }
        Ok(b.seq)
    }

    /// The accesses of a trace file, read in batches (the fast path of [`PageSeq::load`]).
    pub fn load_reader(mut reader: crate::TraceReader, threads: Option<&[u32]>, file: &str) -> Result<PageSeq, TraceError> {
        let mut b = Builder::default();
        let mut batch = Vec::with_capacity(4096);
        loop {
            batch.clear();
            let more = reader.read_accesses(&mut batch, 4096)?;
            for a in &batch {
                if threads.is_none_or(|t| t.contains(&a.thread)) {
                    if b.seq.ids.len() == NEVER as usize - 1 {
                        return Err(TraceError::new(file, At::Record(b.seq.ids.len() as u64 + 1), "more than 2^32 - 2 accesses: split the trace"));
                    }
                    b.push(a.page, a.kind);
                }
            }
            if !more {
                return Ok(b.seq);
            }
        }
    }

    /// For every access, the index of the next access to the same page, or [`NEVER`].
    pub fn next_use(&self) -> Vec<u32> {
        let mut last = vec![NEVER; self.distinct()];
        let mut next = vec![NEVER; self.len()];
        for i in (0..self.len()).rev() {
            let id = self.ids[i] as usize;
            next[i] = last[id];
            last[id] = i as u32;
        }
        next
    }
}

#[derive(Default)]
struct Builder {
    seq: PageSeq,
    index: PageMap<u32>,
}

impl Builder {
    fn push(&mut self, page: u64, kind: Kind) {
        let n = self.seq.pages.len() as u32;
        let id = *self.index.entry(page).or_insert(n);
        if id == n {
            self.seq.pages.push(page);
        }
        self.seq.ids.push(id);
        self.seq.kinds[kind.code() as usize] += 1;
    }
}
