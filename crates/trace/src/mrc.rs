//! The exact LRU miss-ratio curve in one pass (Mattson's stack algorithm, with the stack
//! distance counted by a Fenwick tree).
//!
//! The LRU stack distance of an access is the number of distinct pages touched since the
//! previous access to its page, plus one; LRU with C pages misses exactly the accesses whose
//! distance exceeds C (and the first touches). A Fenwick tree over access positions holds one
//! marker per page, at its latest access: the distance is the number of markers after the
//! page's previous position. Positions are renumbered densely whenever they reach twice the
//! number of distinct pages (the live markers keep their order), so the tree has O(M) slots and
//! the pass costs O(N log M) time and O(M) memory for N accesses over M pages.

use crate::seq::{PageSeq, NEVER};

/// Stack-distance histogram: `hist[d - 1]` accesses at distance d, plus the cold misses.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Histogram {
    pub accesses: u64,
    pub cold: u64,
    pub hist: Vec<u64>,
}

impl Histogram {
    /// LRU misses with `capacity` pages: every cold miss and every access at distance > C.
    pub fn misses(&self, capacity: usize) -> u64 {
        self.cold + self.hist.iter().skip(capacity).sum::<u64>()
    }

    /// Misses at every size 0..=distinct (index = size in pages).
    pub fn curve(&self) -> Vec<u64> {
        let mut out = vec![0; self.hist.len() + 1];
        let mut m = self.cold + self.hist.iter().sum::<u64>();
        out[0] = m;
        for (c, h) in self.hist.iter().enumerate() {
            m -= h;
            out[c + 1] = m;
        }
        out
    }
}

struct Fenwick {
    t: Vec<i32>,
}

impl Fenwick {
    fn new(n: usize) -> Fenwick {
        Fenwick { t: vec![0; n + 1] }
    }
    #[inline]
    fn add(&mut self, pos: usize, v: i32) {
        let mut i = pos + 1;
        while i < self.t.len() {
            self.t[i] += v;
            i += i & i.wrapping_neg();
        }
    }
    /// Sum over positions 0..=pos.
    #[inline]
    fn prefix(&self, pos: usize) -> i32 {
        let mut i = pos + 1;
        let mut s = 0;
        while i > 0 {
            s += self.t[i];
            i &= i - 1;
        }
        s
    }
    /// Rebuild from 0/1 markers at positions 0..k in O(n).
    fn fill_ones(&mut self, k: usize) {
        self.t.iter_mut().for_each(|x| *x = 0);
        for i in 1..self.t.len() {
            if i <= k {
                self.t[i] += 1;
            }
            let j = i + (i & i.wrapping_neg());
            if j < self.t.len() {
                self.t[j] += self.t[i];
            }
        }
    }
}

/// Stack distances of a sequence of dense ids in `0..distinct`.
pub fn histogram_of(ids: impl Iterator<Item = u32>, distinct: usize) -> Histogram {
    let slots = (2 * distinct).max(1024);
    let mut tree = Fenwick::new(slots);
    let mut last = vec![NEVER; distinct];
    let mut order: Vec<u32> = Vec::new();
    let mut h = Histogram { hist: vec![0; distinct], ..Histogram::default() };
    let (mut t, mut live) = (0usize, 0i32);
    for id in ids {
        h.accesses += 1;
        if t == slots {
            // Renumber live markers 0..live in position order.
            order.clear();
            order.extend((0..distinct as u32).filter(|&p| last[p as usize] != NEVER));
            order.sort_unstable_by_key(|&p| last[p as usize]);
            for (k, &p) in order.iter().enumerate() {
                last[p as usize] = k as u32;
            }
            tree.fill_ones(order.len());
            t = order.len();
        }
        let l = last[id as usize];
        if l == NEVER {
            h.cold += 1;
            live += 1;
        } else {
            let after = live - tree.prefix(l as usize);
            h.hist[after as usize] += 1; // distance = after + 1
            tree.add(l as usize, -1);
        }
        tree.add(t, 1);
        last[id as usize] = t as u32;
        t += 1;
    }
    h
}

/// The exact LRU stack-distance histogram of a trace.
pub fn histogram(seq: &PageSeq) -> Histogram {
    histogram_of(seq.ids.iter().copied(), seq.distinct())
}
