//! The four evictable LRU lists of the classic two-list reclaim (kernel-algorithms.md §3):
//! doubly linked through the frames' `prev`/`next` indices. Head = most recently added, tail =
//! next to be scanned. Moving a page between lists is O(1) and allocation-free.

use super::{Frame, LIST_MASK, LIST_SHIFT, NONE, PG_LRU};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum LruList {
    InactiveAnon = 0,
    ActiveAnon = 1,
    InactiveFile = 2,
    ActiveFile = 3,
}

impl LruList {
    pub const ALL: [LruList; 4] = [LruList::InactiveAnon, LruList::ActiveAnon, LruList::InactiveFile, LruList::ActiveFile];
    pub fn of(anon: bool, active: bool) -> LruList {
        match (anon, active) {
            (true, false) => LruList::InactiveAnon,
            (true, true) => LruList::ActiveAnon,
            (false, false) => LruList::InactiveFile,
            (false, true) => LruList::ActiveFile,
        }
    }
    pub fn is_active(self) -> bool {
        matches!(self, LruList::ActiveAnon | LruList::ActiveFile)
    }
    pub fn is_anon(self) -> bool {
        matches!(self, LruList::InactiveAnon | LruList::ActiveAnon)
    }
}

#[derive(Clone, Debug)]
pub struct Lrus {
    head: [u32; 4],
    tail: [u32; 4],
    pub len: [u64; 4],
    /// Folios added to or removed from a list, ever: each is an `update_lru_size` of the
    /// lruvec's NR_LRU_BASE counters, a memory cgroup statistics update
    /// (reclaim/rstat_flush.rs).
    pub moves: u64,
}

impl Default for Lrus {
    fn default() -> Self {
        Lrus { head: [NONE; 4], tail: [NONE; 4], len: [0; 4], moves: 0 }
    }
}

impl Lrus {
    pub fn size(&self, l: LruList) -> u64 {
        self.len[l as usize]
    }

    pub fn tail(&self, l: LruList) -> u32 {
        self.tail[l as usize]
    }

    /// The list a frame is on, if any.
    pub fn list_of(frame: &Frame) -> Option<LruList> {
        if !frame.has(PG_LRU) {
            return None;
        }
        Some(match (frame.flags & LIST_MASK) >> LIST_SHIFT {
            0 => LruList::InactiveAnon,
            1 => LruList::ActiveAnon,
            2 => LruList::InactiveFile,
            _ => LruList::ActiveFile,
        })
    }

    /// The pages of the large folio `f` belongs to, as they lie together on its list (a folio's
    /// pages are added, moved and isolated together, so they are neighbours); `[f]` for a base
    /// page.
    pub fn folio_run(&self, frames: &[Frame], f: u32) -> Vec<u32> {
        let fr = &frames[f as usize];
        if fr.folio_order() == 0 {
            return vec![f];
        }
        let mut first = f;
        while frames[first as usize].prev != NONE && frames[frames[first as usize].prev as usize].same_large_folio(fr) {
            first = frames[first as usize].prev;
        }
        let mut run = vec![first];
        let mut x = first;
        while frames[x as usize].next != NONE && frames[frames[x as usize].next as usize].same_large_folio(fr) {
            x = frames[x as usize].next;
            run.push(x);
        }
        run
    }

    pub fn add_head(&mut self, frames: &mut [Frame], f: u32, l: LruList) {
        let li = l as usize;
        let old = self.head[li];
        {
            let fr = &mut frames[f as usize];
            debug_assert!(!fr.has(PG_LRU), "frame {f} already on an LRU");
            fr.prev = NONE;
            fr.next = old;
            fr.flags = (fr.flags & !LIST_MASK) | ((l as u32) << LIST_SHIFT) | PG_LRU;
        }
        if old != NONE {
            frames[old as usize].prev = f;
        } else {
            self.tail[li] = f;
        }
        self.head[li] = f;
        self.len[li] += 1;
        self.moves += 1;
    }

    pub fn add_tail(&mut self, frames: &mut [Frame], f: u32, l: LruList) {
        let li = l as usize;
        let old = self.tail[li];
        {
            let fr = &mut frames[f as usize];
            debug_assert!(!fr.has(PG_LRU));
            fr.next = NONE;
            fr.prev = old;
            fr.flags = (fr.flags & !LIST_MASK) | ((l as u32) << LIST_SHIFT) | PG_LRU;
        }
        if old != NONE {
            frames[old as usize].next = f;
        } else {
            self.head[li] = f;
        }
        self.tail[li] = f;
        self.len[li] += 1;
        self.moves += 1;
    }

    pub fn remove(&mut self, frames: &mut [Frame], f: u32) {
        let l = Self::list_of(&frames[f as usize]).expect("remove: frame not on an LRU");
        let li = l as usize;
        let (prev, next) = (frames[f as usize].prev, frames[f as usize].next);
        if prev != NONE {
            frames[prev as usize].next = next;
        } else {
            self.head[li] = next;
        }
        if next != NONE {
            frames[next as usize].prev = prev;
        } else {
            self.tail[li] = prev;
        }
        let fr = &mut frames[f as usize];
        fr.prev = NONE;
        fr.next = NONE;
        fr.flags &= !PG_LRU;
        self.len[li] -= 1;
        self.moves += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_remove_keeps_order_and_counts() {
        let mut frames = vec![Frame::FREE; 4];
        let mut l = Lrus::default();
        for f in 0..4 {
            l.add_head(&mut frames, f, LruList::InactiveAnon);
        }
        assert_eq!(l.tail(LruList::InactiveAnon), 0);
        l.remove(&mut frames, 0);
        assert_eq!(l.tail(LruList::InactiveAnon), 1);
        l.remove(&mut frames, 2);
        l.add_tail(&mut frames, 2, LruList::ActiveAnon);
        assert_eq!(l.size(LruList::InactiveAnon), 2);
        assert_eq!(l.size(LruList::ActiveAnon), 1);
        assert_eq!(Lrus::list_of(&frames[2]), Some(LruList::ActiveAnon));
    }
}
