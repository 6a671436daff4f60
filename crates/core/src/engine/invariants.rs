//! Invariants of the memory model, checked after test runs (and on demand):
//! frames are conserved, every swap slot's count equals the references to it, no page is both
//! mapped and free, the swap cache index and the frames agree, counters are consistent.

use super::Sim;
use crate::config::MappingKind;
use crate::mm::*;
use crate::swap::{COUNT_CONTINUED, SWAP_HAS_CACHE, SWAP_MAP_BAD};

impl Sim {
    /// Every violated invariant, described (at most 20); empty when the state is consistent.
    pub fn check_invariants(&self) -> Vec<String> {
        let mut errs = Vec::new();
        let mut e = |s: String| {
            if errs.len() < 20 {
                errs.push(s)
            }
        };
        let inuse = self.check_frames(&mut e);
        self.check_dirty(&mut e);
        // The LRU policy's own state (list lengths match the flags, ...).
        for err in self.reclaim.policy_ref().check(&self.mem.frames) {
            e(err);
        }
        for err in self.reclaim.lru_add.check(&self.mem.frames) {
            e(err);
        }
        let refs = self.check_mappings(&mut e);
        self.check_swap_slots(&refs, &mut e);
        self.check_store(&mut e);
        let wb = self.mem.frames.iter().filter(|f| f.has(PG_WRITEBACK)).count() as u64;
        if wb != self.io.nr_writeback {
            e(format!("nr_writeback {} != frames under writeback {wb}", self.io.nr_writeback));
        }
        self.check_counters(inuse, &mut e);
        errs
    }

    /// Frames are conserved: free (buddy and per-CPU lists) + in use = all, free frames carry
    /// no state, the memcg charge is the pages in use. Returns the number in use.
    fn check_frames(&self, e: &mut dyn FnMut(String)) -> usize {
        let inuse = self.mem.frames.iter().filter(|f| f.has(PG_INUSE)).count();
        let free = self.mem.nr_free_total() as usize;
        if inuse + free != self.mem.frames.len() {
            e(format!("frames not conserved: {inuse} in use + {free} free != {}", self.mem.frames.len()));
        }
        let pcp = self.mem.pcp.iter().flat_map(|p| p.frames());
        for f in self.mem.free_list.iter().copied().chain(pcp) {
            if self.mem.frames[f as usize].flags != 0 {
                e(format!("free frame {f} has flags {:#x}", self.mem.frames[f as usize].flags));
            }
        }
        let uncharged_pool = if self.mem.pool_charged { 0 } else { self.swap.pool_frames.len() } + self.swap.zram_frames.len();
        if self.mem.memcg_limit.is_some() && self.mem.charged != (inuse - uncharged_pool) as u64 {
            e(format!("memcg charge {} != pages in use {inuse} less {uncharged_pool} uncharged pool pages", self.mem.charged));
        }
        // A reader's folio reference lasts only its readahead call (pagecache/held.rs).
        if !self.mem.held.is_empty() {
            e(format!("folio references still held between events: {:?}", self.mem.held));
        }
        inuse
    }

    /// Dirty accounting: NR_FILE_DIRTY and the inodes' dirty counts match the page-cache
    /// folios with PG_dirty; a writable file PTE maps a dirty folio (write notification).
    fn check_dirty(&self, e: &mut dyn FnMut(String)) {
        let file_dirty = |f: &Frame| f.has(PG_INUSE) && f.owner_kind() == Owner::File && !f.has(PG_SWAPBACKED) && f.has(PG_DIRTY);
        let nr_dirty = self.mem.frames.iter().filter(|f| file_dirty(f)).count() as u64;
        if nr_dirty != self.wb.nr_dirty {
            e(format!("nr_dirty {} != dirty page-cache folios {nr_dirty}", self.wb.nr_dirty));
        }
        let per_inode: u64 = self.wb.inodes.iter().map(|i| i.nr_dirty).sum();
        if per_inode != nr_dirty || self.wb.dirty_list.len() != self.wb.inodes.iter().filter(|i| i.nr_dirty > 0).count() {
            e(format!("inode dirty counts {per_inode} / dirty list {} disagree with {nr_dirty} dirty folios", self.wb.dirty_list.len()));
        }
        for v in self.mem.vmas.iter().filter(|v| v.kind == MappingKind::File) {
            for &pte in &v.ptes {
                if pte & PTE_PRESENT != 0 && pte & PTE_WRITE != 0 && !self.mem.frames[pte_frame(pte) as usize].has(PG_DIRTY) {
                    e(format!("writable file PTE maps clean frame {}", pte_frame(pte)));
                }
            }
        }
    }

    /// Every PTE and shmem inode entry points at a frame in use that maps back to it (rmap),
    /// or at a swap entry. Returns the references to each swap slot, counted.
    fn check_mappings(&self, e: &mut dyn FnMut(String)) -> Vec<Vec<u32>> {
        let mut refs: Vec<Vec<u32>> = self.swap.areas.iter().map(|s| vec![0; s.slots as usize]).collect();
        for (vi, v) in self.mem.vmas.iter().enumerate() {
            for (i, &pte) in v.ptes.iter().enumerate() {
                if pte & PTE_ZERO != 0 {
                    if v.kind != MappingKind::Anon || pte & PTE_WRITE != 0 {
                        e(format!("vma {vi} page {i}: zero page mapped writable or in a shared mapping"));
                    }
                } else if pte & PTE_PRESENT != 0 {
                    let f = pte_frame(pte) as usize;
                    if f >= self.mem.frames.len() || !self.mem.frames[f].has(PG_INUSE) {
                        e(format!("vma {vi} page {i} maps frame {f} which is free"));
                        continue;
                    }
                    if v.kind == MappingKind::Anon {
                        let fr = &self.mem.frames[f];
                        // Owned by this VMA, or by one whose anon_vma tree links it (fork).
                        let owner_tree_has_vi = fr.owner_kind() == Owner::Anon && (0..self.mem.anon_tree_len(fr.owner)).any(|k| self.mem.anon_tree_vma(fr.owner, k) == vi as u32);
                        if !owner_tree_has_vi || fr.index != i as u32 {
                            e(format!("rmap mismatch: vma {vi} page {i} -> frame {f} owned by {:?} {} {}", fr.owner_kind(), fr.owner, fr.index));
                        }
                    }
                    if v.kind == MappingKind::File {
                        // The reverse map of a file page: its inode's entry is this frame and
                        // the inode's i_mmap tree lists the VMA (mm/i_mmap.rs).
                        let o = &self.mem.objects[v.object as usize];
                        if o.entries[i] != PTE_PRESENT | f as u64 || !o.vmas.contains(&(vi as u32)) {
                            e(format!("rmap mismatch: file vma {vi} page {i} -> frame {f} not reached through inode {}", v.object));
                        }
                    }
                } else if pte & PTE_SWAP != 0 {
                    if v.kind != MappingKind::Anon {
                        e(format!("shared vma {vi} holds a swap PTE"));
                    }
                    refs[swp_dev(pte)][swp_slot(pte) as usize] += 1;
                }
            }
        }
        for o in &self.mem.objects {
            for &ent in &o.entries {
                if ent & PTE_SWAP != 0 {
                    refs[swp_dev(ent)][swp_slot(ent) as usize] += 1;
                } else if ent & PTE_PRESENT != 0 && !self.mem.frames[pte_frame(ent) as usize].has(PG_INUSE) {
                    e("an inode entry points at a free frame".into());
                }
            }
        }
        refs
    }

    /// Each swap slot's count equals the references to it, the swap cache index and the
    /// frames point at each other, a free slot keeps no shadow, `inuse` is the slots in use.
    fn check_swap_slots(&self, refs: &[Vec<u32>], e: &mut dyn FnMut(String)) {
        for (d, s) in self.swap.areas.iter().enumerate() {
            let mut used = 0u64;
            for (slot, &m) in s.map.iter().enumerate().take(s.slots as usize).skip(1) {
                if m == SWAP_MAP_BAD {
                    continue;
                }
                if m != 0 {
                    used += 1;
                }
                let count = s.count(slot as u32);
                if count != refs[d][slot] {
                    e(format!("swap {d} slot {slot}: count {count} but {} references", refs[d][slot]));
                }
                let has_cache = m & SWAP_HAS_CACHE != 0;
                let f = s.cache[slot];
                if has_cache != (f != NONE) {
                    e(format!("swap {d} slot {slot}: HAS_CACHE={has_cache} but cache index {f}"));
                } else if f != NONE {
                    let fr = &self.mem.frames[f as usize];
                    if !fr.has(PG_SWAPCACHE) || fr.slot != slot as u32 || fr.swap_dev() != d {
                        e(format!("swap {d} slot {slot}: cached frame {f} does not point back"));
                    }
                }
                if m == 0 && s.shadow[slot] != 0 {
                    e(format!("swap {d} slot {slot}: free slot keeps a shadow"));
                }
            }
            for slot in s.continued_slots() {
                if s.map[slot as usize] & COUNT_CONTINUED == 0 {
                    e(format!("swap {d} slot {slot}: a count continuation without COUNT_CONTINUED"));
                }
            }
            if used != s.inuse {
                e(format!("swap {d}: {used} slots in use but inuse = {}", s.inuse));
            }
        }
        for (fi, fr) in self.mem.frames.iter().enumerate() {
            if fr.has(PG_SWAPCACHE) {
                let s = &self.swap.areas[fr.swap_dev()];
                if s.cache[fr.slot as usize] != fi as u32 {
                    e(format!("frame {fi} claims swap slot {} which caches {}", fr.slot, s.cache[fr.slot as usize]));
                }
            }
        }
    }

    /// The vmstat counters agree with each other and with the frames in use.
    fn check_counters(&self, inuse: usize, e: &mut dyn FnMut(String)) {
        // Counters consistent with each other.
        let v = &self.stats.vm;
        if v.pgmajfault > v.pgfault {
            e("pgmajfault > pgfault".into());
        }
        if v.pgsteal_kswapd > v.pgscan_kswapd || v.pgsteal_direct > v.pgscan_direct {
            e("pgsteal exceeds pgscan".into());
        }
        // Global reclaim is counted both by reclaimer and by type; memcg limit reclaim by type only.
        let exact = self.mem.memcg_limit.is_none();
        if (v.pgsteal_anon + v.pgsteal_file < v.pgsteal_kswapd + v.pgsteal_direct) || (exact && v.pgsteal_anon + v.pgsteal_file != v.pgsteal_kswapd + v.pgsteal_direct) {
            e("pgsteal by type != pgsteal by reclaimer".into());
        }
        if (v.pgscan_anon + v.pgscan_file < v.pgscan_kswapd + v.pgscan_direct) || (exact && v.pgscan_anon + v.pgscan_file != v.pgscan_kswapd + v.pgscan_direct) {
            e("pgscan by type != pgscan by reclaimer".into());
        }
        if self.profile >= crate::config::Profile::V6 && v.swap_ra_hit > v.swap_ra {
            e(format!("swap_ra_hit {} > swap_ra {}", v.swap_ra_hit, v.swap_ra));
        }
        if v.pgalloc_normal - v.pgfree != inuse as u64 {
            e(format!("pgalloc - pgfree = {} but {inuse} pages in use", v.pgalloc_normal - v.pgfree));
        }
    }
}

impl Sim {
    /// The fronting store: its pool is exactly the frames held for it (in use, on no LRU,
    /// counted in memory), its own state is consistent, and it holds pages only for slots in
    /// use (a freed slot was invalidated).
    fn check_store(&self, e: &mut dyn FnMut(String)) {
        let store = &self.swap.store;
        if self.swap.pool_frames.len() as u64 != store.pool_pages() {
            e(format!("store pool has {} pages but {} frames are held for it", store.pool_pages(), self.swap.pool_frames.len()));
        }
        for &f in &self.swap.pool_frames {
            let fr = &self.mem.frames[f as usize];
            if !fr.has(PG_INUSE) || fr.has(PG_LRU) || fr.has(PG_SWAPCACHE) {
                e(format!("pool frame {f} has flags {:#x}", fr.flags));
            }
        }
        for err in store.check() {
            e(err);
        }
        // zram: its pools are exactly the frames held for them; its slots, pool and counters agree.
        if self.swap.zram_frames.len() as u64 != self.swap.zram_pool_pages() {
            e(format!("zram pools have {} pages but {} frames are held for them", self.swap.zram_pool_pages(), self.swap.zram_frames.len()));
        }
        for err in self.swap.areas.iter().filter_map(|a| a.zram.as_ref()).flat_map(|z| z.check()) {
            e(err);
        }
        if store.name() == "none" {
            return;
        }
        for (d, s) in self.swap.areas.iter().enumerate() {
            for slot in 1..s.slots {
                // A slot in a return cache (4.11 .. 6.10) is not freed yet: the store keeps its page.
                if store.held(d, slot) != crate::swap::store::Held::No && !s.in_use(slot) && !s.held_by_slots_cache(slot) {
                    e(format!("swap {d} slot {slot}: free, but the store still holds a page for it"));
                }
            }
        }
    }
}
