//! zsmalloc, the allocator behind the zswap pool (`mm/zsmalloc.c`): how many whole pages a set
//! of compressed objects occupies, which is the pool size zswap limits and the memory it takes
//! from the workload.
//!
//! An object of `len` bytes gets `len + ZS_HANDLE_SIZE` bytes (the handle is kept in the chunk)
//! rounded up to a size class: classes are 32 bytes + k * 16 bytes up to PAGE_SIZE (255
//! classes for 4 KiB pages). Each class packs its objects into zspages of 1..=`max_pages`
//! pages (`CONFIG_ZSMALLOC_CHAIN_SIZE`), the count chosen by `get_pages_per_zspage` as the one
//! that wastes the smallest fraction of the zspage; neighbouring classes with the same pages
//! and objects per zspage are merged into the larger one, as `zs_create_pool` does. A size
//! that fills a page alone (one object per one-page zspage) is a "huge" class.
//!
//! A zspage is freed when its last object goes; objects are not moved (compaction is not
//! modelled), so a pool that shrinks keeps the fragmentation the kernel would have until it
//! compacts. Allocation takes the fullest zspage with room, as `find_get_zspage` does (6.3+):
//! each class keeps its zspages on fullness lists by used share in tenths
//! (`get_fullness_group`: ZS_INUSE_RATIO_10 .. _99, then _100 for a full one), a zspage that
//! changes group goes to the head of its new list (`insert_zspage`), and an allocation takes
//! the head of the fullest non-empty list below full. Filling the fullest zspages first leaves
//! the pool's holes in few zspages, which empty and are freed as objects go.

use crate::mm::PAGE_SIZE;

const ZS_MIN_ALLOC_SIZE: u32 = 32;
/// `PAGE_SIZE >> CLASS_BITS` (8).
const ZS_SIZE_CLASS_DELTA: u32 = (PAGE_SIZE >> 8) as u32;
/// The handle stored in each chunk of a non-huge class (64-bit: one `unsigned long`).
const ZS_HANDLE_SIZE: u32 = 8;
const ZS_SIZE_CLASSES: u32 = (PAGE_SIZE as u32 - ZS_MIN_ALLOC_SIZE).div_ceil(ZS_SIZE_CLASS_DELTA) + 1;

/// Where an object lives: its (merged) class and zspage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Handle {
    pub class: u16,
    pub zspage: u32,
}

/// `ZS_INUSE_RATIO_100`: the fullness group of a full zspage; groups 1..=10 are used shares
/// of (0, 10 %) .. [90 %, 100 %) (`ZS_INUSE_RATIO_10` .. `ZS_INUSE_RATIO_99`).
const FULL_GROUP: usize = 11;
/// No list (a free zspage id, or a full zspage: allocation never looks at those).
const NO_LIST: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
struct Zspage {
    inuse: u32,
    live: bool,
    /// Fullness list links (NO_LIST at the ends / when not on a list).
    prev: u32,
    next: u32,
}

#[derive(Clone, Debug)]
struct Class {
    size: u32,
    pages_per_zspage: u32,
    objs_per_zspage: u32,
    zspages: Vec<Zspage>,
    unused_ids: Vec<u32>,
    /// Heads of the fullness lists of zspages with room, by group (index 1..=10).
    fullness_head: [u32; FULL_GROUP],
}

impl Class {
    /// `get_fullness_group` of a live zspage with `inuse` objects.
    fn group(&self, inuse: u32) -> usize {
        if inuse == self.objs_per_zspage {
            FULL_GROUP
        } else {
            (100 * inuse / self.objs_per_zspage) as usize / 10 + 1
        }
    }

    fn unlink(&mut self, z: u32, group: usize) {
        let Zspage { prev, next, .. } = self.zspages[z as usize];
        if prev == NO_LIST { self.fullness_head[group] = next } else { self.zspages[prev as usize].next = next }
        if next != NO_LIST {
            self.zspages[next as usize].prev = prev;
        }
        self.zspages[z as usize].prev = NO_LIST;
        self.zspages[z as usize].next = NO_LIST;
    }

    /// `insert_zspage`: at the head of its group's list (a full zspage is on none here).
    fn link(&mut self, z: u32, group: usize) {
        if group == FULL_GROUP {
            return;
        }
        let old = self.fullness_head[group];
        self.zspages[z as usize].prev = NO_LIST;
        self.zspages[z as usize].next = old;
        if old != NO_LIST {
            self.zspages[old as usize].prev = z;
        }
        self.fullness_head[group] = z;
    }

    /// Move zspage `z` from the group of `before` objects to the group of its objects now.
    fn regroup(&mut self, z: u32, before: u32) {
        let (from, to) = (self.group(before), self.group(self.zspages[z as usize].inuse));
        if from != to {
            if from != FULL_GROUP {
                self.unlink(z, from);
            }
            self.link(z, to);
        }
    }

    /// `find_get_zspage`: the head of the fullest non-empty list below full.
    fn fullest_with_room(&self) -> Option<u32> {
        (1..FULL_GROUP).rev().map(|g| self.fullness_head[g]).find(|&z| z != NO_LIST)
    }
}

/// Why an allocation did not happen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllocError {
    /// A new zspage of this many pages was needed and `free_pages` could not provide it.
    NoPages(u32),
}

#[derive(Clone, Debug)]
pub struct ZsPool {
    classes: Vec<Class>,
    /// Size class index (by `get_size_class_index`) -> merged class.
    class_of_index: Vec<u16>,
    pages: u64,
    objects: u64,
}

/// `get_pages_per_zspage`: the zspage length in 1..=max_pages with the highest used share.
fn pages_per_zspage(size: u32, max_pages: u32) -> u32 {
    let mut best = (0u64, 1u32);
    for i in 1..=max_pages {
        let zspage = i as u64 * PAGE_SIZE;
        let waste = zspage % size as u64;
        let used_pct = (zspage - waste) * 100 / zspage;
        if used_pct > best.0 {
            best = (used_pct, i);
        }
    }
    best.1
}

impl ZsPool {
    pub fn new(max_pages: u32) -> ZsPool {
        let mut classes: Vec<Class> = Vec::new();
        let mut class_of_index = vec![0u16; ZS_SIZE_CLASSES as usize];
        // From the largest class down, merging into the previous (larger) one when it packs
        // the same way (zs_create_pool's can_merge).
        for i in (0..ZS_SIZE_CLASSES).rev() {
            let size = (ZS_MIN_ALLOC_SIZE + i * ZS_SIZE_CLASS_DELTA).min(PAGE_SIZE as u32);
            let pages = pages_per_zspage(size, max_pages);
            let objs = pages * PAGE_SIZE as u32 / size;
            if let Some(prev) = classes.last() {
                if prev.pages_per_zspage == pages && prev.objs_per_zspage == objs {
                    class_of_index[i as usize] = (classes.len() - 1) as u16;
                    continue;
                }
            }
            classes.push(Class { size, pages_per_zspage: pages, objs_per_zspage: objs, zspages: Vec::new(), unused_ids: Vec::new(), fullness_head: [NO_LIST; FULL_GROUP] });
            class_of_index[i as usize] = (classes.len() - 1) as u16;
        }
        ZsPool { classes, class_of_index, pages: 0, objects: 0 }
    }

    fn class_for(&self, len: u32) -> u16 {
        let size = len + ZS_HANDLE_SIZE;
        let idx = if size > ZS_MIN_ALLOC_SIZE { (size - ZS_MIN_ALLOC_SIZE).div_ceil(ZS_SIZE_CLASS_DELTA) } else { 0 };
        self.class_of_index[idx.min(ZS_SIZE_CLASSES - 1) as usize]
    }

    /// The chunk size an object of `len` bytes occupies.
    pub fn chunk_size(&self, len: u32) -> u32 {
        self.classes[self.class_for(len) as usize].size
    }

    /// `zs_malloc` of `len` compressed bytes; a new zspage takes pages only if `free_pages`
    /// has them (zswap allocates without direct reclaim).
    pub fn alloc(&mut self, len: u32, free_pages: u64) -> Result<Handle, AllocError> {
        let ci = self.class_for(len);
        let c = &mut self.classes[ci as usize];
        if let Some(z) = c.fullest_with_room() {
            c.zspages[z as usize].inuse += 1;
            c.regroup(z, c.zspages[z as usize].inuse - 1);
            self.objects += 1;
            return Ok(Handle { class: ci, zspage: z });
        }
        if free_pages < c.pages_per_zspage as u64 {
            return Err(AllocError::NoPages(c.pages_per_zspage));
        }
        let z = match c.unused_ids.pop() {
            Some(z) => z,
            None => {
                c.zspages.push(Zspage { inuse: 0, live: false, prev: NO_LIST, next: NO_LIST });
                (c.zspages.len() - 1) as u32
            }
        };
        c.zspages[z as usize] = Zspage { inuse: 1, live: true, prev: NO_LIST, next: NO_LIST };
        let group = c.group(1);
        c.link(z, group);
        self.pages += c.pages_per_zspage as u64;
        self.objects += 1;
        Ok(Handle { class: ci, zspage: z })
    }

    /// `zs_free`: an empty zspage gives its pages back.
    pub fn free(&mut self, h: Handle) {
        let c = &mut self.classes[h.class as usize];
        let zp = &mut c.zspages[h.zspage as usize];
        debug_assert!(zp.live && zp.inuse > 0);
        zp.inuse -= 1;
        let inuse = zp.inuse;
        self.objects -= 1;
        if inuse == 0 {
            let group = c.group(1);
            if group != FULL_GROUP {
                c.unlink(h.zspage, group);
            }
            c.zspages[h.zspage as usize].live = false;
            c.unused_ids.push(h.zspage);
            self.pages -= c.pages_per_zspage as u64;
        } else {
            c.regroup(h.zspage, inuse + 1);
        }
    }

    /// Pages the pool holds (`zs_get_total_pages`).
    pub fn total_pages(&self) -> u64 {
        self.pages
    }

    pub fn objects(&self) -> u64 {
        self.objects
    }

    /// Pages a new zspage for an object of `len` bytes would take.
    pub fn zspage_pages(&self, len: u32) -> u32 {
        self.classes[self.class_for(len) as usize].pages_per_zspage
    }

    /// Live objects and pages recounted from the zspages (for invariant checks).
    pub fn recount(&self) -> (u64, u64) {
        let mut objs = 0;
        let mut pages = 0;
        for c in &self.classes {
            for z in c.zspages.iter().filter(|z| z.live) {
                objs += z.inuse as u64;
                pages += c.pages_per_zspage as u64;
            }
        }
        (objs, pages)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_match_zsmalloc_arithmetic() {
        assert_eq!(ZS_SIZE_CLASSES, 255);
        assert_eq!(pages_per_zspage(32, 8), 1, "32 divides a page");
        // 720-byte class: 4096*i % 720 wastes least at i = 3 among 1..=4 (from the kernel list).
        assert_eq!(pages_per_zspage(720, 4), 3);
        let p = ZsPool::new(8);
        assert_eq!(p.chunk_size(4096 - ZS_HANDLE_SIZE), 4096);
        assert_eq!(p.chunk_size(1), 32);
        // Large sizes merge into huge classes: one object per page.
        let huge = p.class_for(4000) as usize;
        assert_eq!((p.classes[huge].objs_per_zspage, p.classes[huge].pages_per_zspage), (1, 1));
    }

    #[test]
    fn pool_pages_follow_objects_and_empty_zspages_are_freed() {
        let mut p = ZsPool::new(8);
        // 1024-byte chunks (1016 + handle): 4 per page.
        let hs: Vec<Handle> = (0..8).map(|_| p.alloc(1016, u64::MAX).unwrap()).collect();
        assert_eq!(p.chunk_size(1016), 1024);
        assert_eq!(p.total_pages(), 2);
        assert_eq!(p.alloc(1016, 0), Err(AllocError::NoPages(1)), "both zspages are full");
        for h in &hs[..4] {
            p.free(*h);
        }
        assert_eq!(p.total_pages(), 1);
        assert_eq!(p.recount(), (4, 1));
        p.free(hs[4]);
        assert_eq!(p.total_pages(), 1, "a partly used zspage stays");
        p.alloc(1016, 0).expect("the hole is reused without new pages");
        assert_eq!(p.recount(), (4, 1));
    }

    #[test]
    fn allocation_fills_the_fullest_zspage_first() {
        // find_get_zspage: two zspages of four 1024-byte chunks, one at 3/4 and one at 2/4
        // (freed last): the next objects go to the fuller one, whatever was freed last.
        let mut p = ZsPool::new(8);
        let hs: Vec<Handle> = (0..8).map(|_| p.alloc(1016, u64::MAX).unwrap()).collect();
        let (fuller, emptier) = (hs[0].zspage, hs[4].zspage);
        assert_ne!(fuller, emptier);
        p.free(hs[0]);
        p.free(hs[4]);
        p.free(hs[5]);
        assert_eq!(p.alloc(1016, 0).unwrap().zspage, fuller, "the 3/4-full zspage first");
        assert_eq!(p.alloc(1016, 0).unwrap().zspage, emptier, "then the other, the first being full");
        assert_eq!(p.recount(), (7, 2));
    }
}
