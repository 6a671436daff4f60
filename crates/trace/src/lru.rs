//! Plain LRU replacement with demand paging: every access to a page not in the cache of
//! `capacity` pages is a miss that loads it, evicting the least recently used page. Misses at
//! every size at once come from the stack distances in [`crate::mrc`]; this one-size
//! simulation is the reference both are tested against (and what libCacheSim's LRU computes).

use crate::seq::{PageSeq, NEVER};

/// Misses of LRU with `capacity` pages (capacity 0: every access misses).
pub fn misses(seq: &PageSeq, capacity: usize) -> u64 {
    if capacity == 0 {
        return seq.len() as u64;
    }
    let n = seq.distinct();
    // Doubly linked list through arrays, head = most recent.
    let mut prev = vec![NEVER; n];
    let mut next = vec![NEVER; n];
    let mut cached = vec![false; n];
    let (mut head, mut tail, mut size, mut misses) = (NEVER, NEVER, 0usize, 0u64);
    for &id in &seq.ids {
        let i = id as usize;
        if cached[i] {
            if head == id {
                continue;
            }
            // unlink
            let (p, nx) = (prev[i], next[i]);
            next[p as usize] = nx;
            if nx != NEVER {
                prev[nx as usize] = p;
            } else {
                tail = p;
            }
        } else {
            misses += 1;
            if size == capacity {
                let victim = tail;
                tail = prev[victim as usize];
                if tail != NEVER {
                    next[tail as usize] = NEVER;
                } else {
                    head = NEVER;
                }
                cached[victim as usize] = false;
            } else {
                size += 1;
            }
            cached[i] = true;
        }
        prev[i] = NEVER;
        next[i] = head;
        if head != NEVER {
            prev[head as usize] = id;
        } else {
            tail = id;
        }
        head = id;
    }
    misses
}
