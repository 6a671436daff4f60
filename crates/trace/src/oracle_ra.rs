//! The oracle swap-in readahead bound: Belady replacement plus perfect prefetching. On every
//! miss (a major fault) the fault brings the missing page and up to `window - 1` more pages
//! that are not in memory, chosen as the next distinct missing pages the program will touch —
//! but only a page whose next use comes before the farthest next use in memory, which is
//! evicted for it; a prefetched page that OPT would have to evict before its use is not
//! fetched. This is the "aggressive" integrated prefetching-and-caching strategy of Cao, Felten,
//! Karlin and Li (SIGMETRICS 1995), with the fetch size bounded by the readahead window as the
//! kernel bounds its swap-in readahead (`page-cluster`: 2^3 = 8 pages by default). No
//! swap-in readahead policy that brings at most `window` pages per fault, however it guesses,
//! has fewer major faults with the same replacement.
//!
//! Like swap-in readahead, which can only bring pages that were swapped out, the oracle only
//! prefetches pages the program has touched before, and only on a miss of such a page (a swap-in):
//! a first touch stays a demand miss without readahead (the zero-fill fault of anonymous
//! memory), so `misses - distinct pages` compares with the kernel's major faults.
//!
//! The look-ahead for prefetch candidates stops at the farthest next use in memory (nothing
//! later qualifies) and at `LOOKAHEAD_PER_PAGE x capacity` accesses, which keeps the bound
//! O(N x window) in practice; the cap is stated in the result.

use crate::opt::{key, OptCache};
use crate::seq::PageSeq;

/// Accesses scanned for prefetch candidates per fault, per page of memory.
pub const LOOKAHEAD_PER_PAGE: usize = 16;

/// Demand misses (major faults) with oracle readahead of `window` pages per fault.
pub fn misses(seq: &PageSeq, next: &[u32], capacity: usize, window: usize) -> u64 {
    if capacity == 0 {
        return seq.len() as u64;
    }
    let window = window.max(1).min(capacity);
    let mut cache = OptCache::new(seq.distinct(), capacity);
    let lookahead = capacity.saturating_mul(LOOKAHEAD_PER_PAGE).max(4096);
    let mut misses = 0;
    let mut seen = vec![false; seq.distinct()];
    for (i, &id) in seq.ids.iter().enumerate() {
        if cache.contains(id) {
            cache.touch(id, key(next[i]));
            continue;
        }
        misses += 1;
        cache.load(id, key(next[i]));
        if !std::mem::replace(&mut seen[id as usize], true) {
            continue; // a first touch: a zero-fill fault, no swap-in to read ahead of
        }
        let mut fetched = 1;
        let end = seq.len().min(i + 1 + lookahead);
        let mut j = i + 1;
        while fetched < window && j < end {
            let q = seq.ids[j];
            if seen[q as usize] && !cache.contains(q) {
                if cache.is_full() {
                    let (far, _) = cache.farthest().expect("a full cache has pages");
                    if far <= j as u64 {
                        break;
                    }
                    cache.evict();
                }
                cache.size += 1;
                cache.touch(q, j as u64);
                fetched += 1;
            }
            j += 1;
        }
    }
    misses
}
