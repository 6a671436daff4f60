//! Belady's OPT (MIN) for demand paging: a missing page is always loaded (a program cannot use
//! a page that is not in memory), and when memory is full the page whose next use is farthest
//! in the future is evicted. Exact, in O(N log C): next uses are precomputed
//! ([`PageSeq::next_use`]) and the cached pages sit in a max-heap keyed by next use, with lazy
//! deletion (a heap entry is live only while it matches its page's current next use).
//!
//! libCacheSim's `Belady` makes the same choices (evict before insert, never bypass), so the
//! two give equal miss counts.

use crate::seq::{PageSeq, NEVER};
use std::collections::BinaryHeap;

/// The OPT cache state, shared with the oracle-readahead bound ([`crate::oracle_ra`]).
pub struct OptCache {
    capacity: usize,
    /// Next use of each cached page, or `NOT_CACHED`.
    pub next_of: Vec<u64>,
    heap: BinaryHeap<(u64, u32)>,
    pub size: usize,
}

/// Next-use key of a page never used again: larger than every index.
pub const NEVER_KEY: u64 = u64::MAX - 1;
const NOT_CACHED: u64 = u64::MAX;

pub fn key(next: u32) -> u64 {
    if next == NEVER {
        NEVER_KEY
    } else {
        next as u64
    }
}

impl OptCache {
    pub fn new(distinct: usize, capacity: usize) -> OptCache {
        OptCache { capacity, next_of: vec![NOT_CACHED; distinct], heap: BinaryHeap::with_capacity(capacity * 2 + 16), size: 0 }
    }

    #[inline]
    pub fn contains(&self, id: u32) -> bool {
        self.next_of[id as usize] != NOT_CACHED
    }

    pub fn is_full(&self) -> bool {
        self.size >= self.capacity
    }

    /// Record that cached page `id` is next used at `next_key`.
    #[inline]
    pub fn touch(&mut self, id: u32, next_key: u64) {
        self.next_of[id as usize] = next_key;
        self.heap.push((next_key, id));
        if self.heap.len() > 4 * self.capacity + 1024 {
            self.rebuild();
        }
    }

    fn rebuild(&mut self) {
        let live: Vec<(u64, u32)> = self.heap.drain().filter(|&(k, id)| self.next_of[id as usize] == k).collect();
        self.heap = BinaryHeap::from(live);
    }

    /// The farthest next use among cached pages (None when empty).
    pub fn farthest(&mut self) -> Option<(u64, u32)> {
        while let Some(&(k, id)) = self.heap.peek() {
            if self.next_of[id as usize] == k {
                return Some((k, id));
            }
            self.heap.pop();
        }
        None
    }

    /// Evict the page used farthest in the future.
    pub fn evict(&mut self) {
        let (_, id) = self.farthest().expect("evict from a non-empty cache");
        self.heap.pop();
        self.next_of[id as usize] = NOT_CACHED;
        self.size -= 1;
    }

    /// Load page `id` (not cached), evicting first when full.
    pub fn load(&mut self, id: u32, next_key: u64) {
        if self.size >= self.capacity {
            self.evict();
        }
        self.size += 1;
        self.touch(id, next_key);
    }
}

/// Misses of OPT with `capacity` pages; `next` from [`PageSeq::next_use`].
pub fn misses(seq: &PageSeq, next: &[u32], capacity: usize) -> u64 {
    if capacity == 0 {
        return seq.len() as u64;
    }
    let mut cache = OptCache::new(seq.distinct(), capacity);
    let mut misses = 0;
    for (i, &id) in seq.ids.iter().enumerate() {
        if !cache.contains(id) {
            misses += 1;
            cache.load(id, key(next[i]));
        } else {
            cache.touch(id, key(next[i]));
        }
    }
    misses
}
