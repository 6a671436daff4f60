//! The generation lists and the generation/refs bits of a frame.
//!
//! A folio's *logical* generation is in the frame's gen bits (17..19: gen + 1, 0 = on no
//! generation list, e.g. isolated); its *physical* place is one of eight intrusive lists,
//! one per (gen, type), whose index is in the frame's list bits (`mm::LIST_MASK`). The two
//! differ after a promotion, which (as `folio_update_gen` in the kernel) rewrites the gen bits
//! only; `sort_folio` moves the folio to its list when eviction meets it. `nr_pages` follows
//! the logical generation, `list_empty` (which `try_to_inc_min_seq` tests) the physical one.

use crate::mm::{Frame, LIST_MASK, LIST_SHIFT, NONE, PG_LRU, PG_REFERENCED, PG_WORKINGSET};

pub const MAX_NR_GENS: usize = 4;
/// Generation bits: gen + 1 (`LRU_GEN_WIDTH` 3 bits, 0 = not on an MGLRU list).
const GEN_SHIFT: u32 = 17;
const GEN_MASK: u32 = 7 << GEN_SHIFT;
/// The fd-access counter (`LRU_REFS_WIDTH` 2 bits).
const REFS_SHIFT: u32 = 20;
pub const REFS_MASK: u32 = 3 << REFS_SHIFT;
/// `LRU_REFS_FLAGS`: what promotion and protection clear with the counter.
pub const REFS_FLAGS: u32 = PG_REFERENCED | PG_WORKINGSET;

/// `folio_lru_gen`: the logical generation, if the folio is on a generation list.
#[inline]
pub fn gen_of(fr: &Frame) -> Option<usize> {
    let g = (fr.flags & GEN_MASK) >> GEN_SHIFT;
    (g != 0).then(|| g as usize - 1)
}

#[inline]
pub fn set_gen(fr: &mut Frame, gen: Option<usize>) {
    let bits = gen.map_or(0, |g| (g as u32 + 1) << GEN_SHIFT);
    fr.flags = (fr.flags & !GEN_MASK) | bits;
}

/// The fd-access counter (0..=3).
#[inline]
pub fn refs_counter(fr: &Frame) -> u32 {
    (fr.flags & REFS_MASK) >> REFS_SHIFT
}

#[inline]
pub fn set_refs_counter(fr: &mut Frame, n: u32) {
    fr.flags = (fr.flags & !REFS_MASK) | ((n.min(3)) << REFS_SHIFT);
}

/// `LRU_GEN_ANON` 0 / `LRU_GEN_FILE` 1.
#[inline]
pub fn type_of(fr: &Frame) -> usize {
    (!fr.is_anon_type()) as usize
}

/// Eight lists, one per (gen, type), linked through the frames' `prev`/`next`; head = most
/// recently added, tail = next for eviction to look at.
#[derive(Clone, Debug)]
pub struct GenLists {
    head: [u32; 8],
    tail: [u32; 8],
    pub len: [u64; 8],
}

impl Default for GenLists {
    fn default() -> Self {
        GenLists { head: [NONE; 8], tail: [NONE; 8], len: [0; 8] }
    }
}

#[inline]
pub fn list_index(gen: usize, ty: usize) -> usize {
    gen * 2 + ty
}

impl GenLists {
    pub fn tail(&self, l: usize) -> u32 {
        self.tail[l]
    }
    pub fn head(&self, l: usize) -> u32 {
        self.head[l]
    }
    pub fn is_empty(&self, l: usize) -> bool {
        self.len[l] == 0
    }

    /// The list a frame is physically on.
    pub fn list_of(fr: &Frame) -> Option<usize> {
        fr.has(PG_LRU).then_some(((fr.flags & LIST_MASK) >> LIST_SHIFT) as usize)
    }

    fn link(&mut self, frames: &mut [Frame], f: u32, l: usize, at_tail: bool) {
        let fr = &mut frames[f as usize];
        debug_assert!(!fr.has(PG_LRU), "frame {f} already on a list");
        fr.flags = (fr.flags & !LIST_MASK) | ((l as u32) << LIST_SHIFT) | PG_LRU;
        if at_tail {
            let old = self.tail[l];
            fr.next = NONE;
            fr.prev = old;
            if old != NONE {
                frames[old as usize].next = f;
            } else {
                self.head[l] = f;
            }
            self.tail[l] = f;
        } else {
            let old = self.head[l];
            fr.prev = NONE;
            fr.next = old;
            if old != NONE {
                frames[old as usize].prev = f;
            } else {
                self.tail[l] = f;
            }
            self.head[l] = f;
        }
        self.len[l] += 1;
    }

    pub fn add_head(&mut self, frames: &mut [Frame], f: u32, l: usize) {
        self.link(frames, f, l, false);
    }

    pub fn add_tail(&mut self, frames: &mut [Frame], f: u32, l: usize) {
        self.link(frames, f, l, true);
    }

    pub fn remove(&mut self, frames: &mut [Frame], f: u32) {
        let l = Self::list_of(&frames[f as usize]).expect("remove: frame on no generation list");
        let (prev, next) = (frames[f as usize].prev, frames[f as usize].next);
        if prev != NONE {
            frames[prev as usize].next = next;
        } else {
            self.head[l] = next;
        }
        if next != NONE {
            frames[next as usize].prev = prev;
        } else {
            self.tail[l] = prev;
        }
        let fr = &mut frames[f as usize];
        fr.prev = NONE;
        fr.next = NONE;
        fr.flags &= !PG_LRU;
        self.len[l] -= 1;
    }

    /// `list_move`: to the head (or tail) of list `l`.
    pub fn move_to(&mut self, frames: &mut [Frame], f: u32, l: usize, at_tail: bool) {
        self.remove(frames, f);
        self.link(frames, f, l, at_tail);
    }

    /// Walk every list from its head: each frame met once, on the list its bits name, and
    /// the lengths right. Returns the inconsistencies.
    pub fn check_links(&self, frames: &[Frame]) -> Vec<String> {
        let mut errs = Vec::new();
        let mut seen = 0u64;
        for l in 0..8 {
            let (mut f, mut prev, mut n) = (self.head[l], NONE, 0u64);
            while f != NONE {
                let fr = &frames[f as usize];
                if Self::list_of(fr) != Some(l) || fr.prev != prev {
                    errs.push(format!("generation list {l}: frame {f} is linked here but its bits or links say otherwise"));
                    break;
                }
                n += 1;
                if n > self.len[l] {
                    errs.push(format!("generation list {l} is longer than its length {}", self.len[l]));
                    break;
                }
                prev = f;
                f = fr.next;
            }
            if n != self.len[l] {
                errs.push(format!("generation list {l}: {n} frames linked, length says {}", self.len[l]));
            }
            if self.tail[l] != prev && n == self.len[l] {
                errs.push(format!("generation list {l}: tail is not the last frame"));
            }
            seen += n;
        }
        let flagged = frames.iter().filter(|f| f.has(PG_LRU)).count() as u64;
        if seen != flagged {
            errs.push(format!("{seen} frames on generation lists but {flagged} have PG_lru"));
        }
        errs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_keep_order_counts_and_links() {
        let mut frames = vec![Frame::FREE; 5];
        let mut l = GenLists::default();
        for f in 0..4 {
            l.add_head(&mut frames, f, list_index(1, 0));
        }
        l.add_tail(&mut frames, 4, list_index(1, 0));
        assert_eq!(l.tail(list_index(1, 0)), 4);
        l.move_to(&mut frames, 4, list_index(2, 1), false);
        assert_eq!(l.tail(list_index(1, 0)), 0);
        assert_eq!(GenLists::list_of(&frames[4]), Some(list_index(2, 1)));
        assert!(l.check_links(&frames).is_empty());
        l.len[3] += 1;
        assert!(!l.check_links(&frames).is_empty());
    }

    #[test]
    fn gen_and_refs_bits_round_trip() {
        let mut fr = Frame::FREE;
        assert_eq!(gen_of(&fr), None);
        set_gen(&mut fr, Some(3));
        set_refs_counter(&mut fr, 2);
        assert_eq!(gen_of(&fr), Some(3));
        assert_eq!(refs_counter(&fr), 2);
        set_gen(&mut fr, None);
        assert_eq!((gen_of(&fr), refs_counter(&fr)), (None, 2));
    }
}
