//! CLOCK (second chance): the cache is a ring of `capacity` frames with one reference bit per
//! page. A hit sets the bit; a miss advances the hand, clearing set bits, until it finds a page
//! whose bit is clear and replaces it. A newly loaded page starts with its bit clear, the
//! convention of libCacheSim's Clock (the faulting access is the load, not a re-reference).

use crate::seq::{PageSeq, NEVER};

pub fn misses(seq: &PageSeq, capacity: usize) -> u64 {
    if capacity == 0 {
        return seq.len() as u64;
    }
    let mut frame_of = vec![NEVER; seq.distinct()];
    let mut referenced = vec![false; seq.distinct()];
    let mut ring: Vec<u32> = Vec::with_capacity(capacity);
    let (mut hand, mut misses) = (0usize, 0u64);
    for &id in &seq.ids {
        let i = id as usize;
        if frame_of[i] != NEVER {
            referenced[i] = true;
            continue;
        }
        misses += 1;
        if ring.len() < capacity {
            frame_of[i] = ring.len() as u32;
            ring.push(id);
            continue;
        }
        loop {
            let v = ring[hand] as usize;
            if referenced[v] {
                referenced[v] = false;
                hand = (hand + 1) % capacity;
            } else {
                frame_of[v] = NEVER;
                ring[hand] = id;
                frame_of[i] = hand as u32;
                hand = (hand + 1) % capacity;
                break;
            }
        }
    }
    misses
}
