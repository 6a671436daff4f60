//! The swap cache and swap-map references (`mm/swap_state.c`, `mm/swapfile.c`;
//! kernel-algorithms.md §2): adding a folio for write-out or read-in, dropping references,
//! removing a folio with its shadow, giving swap back.

use crate::engine::Sim;
use crate::mm::*;
use crate::swap::scan_map::{AllocEra, Claim};
use crate::swap::slots_cache::SWAP_SLOTS_CACHE_SIZE;
use crate::swap::SWAP_HAS_CACHE;

impl Sim {
    /// `folio_alloc_swap`: a slot for a folio being swapped out, on the highest-priority area
    /// with room; the folio enters the swap cache, dirty.
    pub(crate) fn add_to_swap(&mut self, f: u32, cpu: usize) -> bool {
        for k in 0..self.swap.order.len() {
            let d = self.swap.order[k];
            if let Some(slot) = self.alloc_slot(d, cpu) {
                self.swap.areas[d].cache[slot as usize] = f;
                self.swap.areas[d].shadow[slot as usize] = 0;
                if !self.swap.areas[d].page_key.is_empty() {
                    self.swap.areas[d].page_key[slot as usize] = self.content_page_key(f);
                }
                self.mem.frames[f as usize].set_swap(d, slot);
                self.mem.frames[f as usize].flags |= PG_DIRTY;
                return true;
            }
        }
        false
    }

    /// A slot on area `d` for CPU `cpu` by the era's allocator: 6.11+'s clusters, or (before)
    /// the CPU's slots cache refilled from `scan_swap_map_slots`, or the scan itself
    /// (swap/scan_map.rs).
    fn alloc_slot(&mut self, d: usize, cpu: usize) -> Option<u32> {
        if self.swap.areas[d].era == AllocEra::Clusters {
            return self.swap.areas[d].alloc(cpu);
        }
        let cpus = self.cfg.config.machine.cpus as u64;
        let (cache_active, returned) = self.swap.areas[d].slots_cache_active(cpus);
        if !returned.is_empty() {
            self.swap.free_returned(d, returned);
            self.sync_pool_frames();
        }
        if cache_active {
            if self.swap.areas[d].slots_cache_empty(cpu) {
                for _ in 0..SWAP_SLOTS_CACHE_SIZE {
                    let Some(s) = self.scan_slot(d, cpu) else { break };
                    self.swap.areas[d].reserve_for_cache(cpu, s);
                }
            }
            return self.swap.areas[d].from_slots_cache(cpu);
        }
        self.scan_slot(d, cpu)
    }

    /// `scan_swap_map_slots` for one slot, reusing a cache-only slot the scan meets while
    /// swap is over half full when its folio can be freed from swap now
    /// (`__try_to_reclaim_swap`: trylock, not under writeback, no swap references).
    fn scan_slot(&mut self, d: usize, cpu: usize) -> Option<u32> {
        let full = self.vm_swap_full();
        let mut claim = self.swap.areas[d].scan_alloc(cpu, full);
        loop {
            match claim? {
                Claim::Free(s) => return Some(s),
                Claim::CacheOnly(s) => {
                    let f = self.swap.areas[d].cache[s as usize];
                    // `goto checks` after `__try_to_reclaim_swap`: the slot is taken only if it
                    // is free now. Freed through the per-CPU slots cache it is not: the kernel
                    // keeps SWAP_HAS_CACHE in its swap_map until the cache returns it
                    // (`__swap_entry_free_locked`), and the model holds it reserved.
                    if !self.mem.frames[f as usize].has(PG_LOCKED) && self.try_free_swap(f) && self.swap.areas[d].slot_free(s) {
                        self.swap.areas[d].take(s);
                        return Some(s);
                    }
                    claim = self.swap.areas[d].scan_past(s, full);
                }
            }
        }
    }

    /// The identity of the page folio `f` holds (swap/store/zswap/content.rs), while it is
    /// still mapped or in its inode: its mapping's key and its index there.
    fn content_page_key(&self, f: u32) -> u64 {
        let fr = &self.mem.frames[f as usize];
        let vma = match fr.owner_kind() {
            Owner::Anon => fr.owner,
            Owner::Shmem => self.mem.objects[fr.owner as usize].vmas[0],
            Owner::None | Owner::File => return 0,
        };
        crate::swap::store::zswap::content::page_key(self.mem.vmas[vma as usize].content_key, fr.index as u64)
    }

    /// A freshly allocated frame enters the swap cache for a read: locked, swap-backed,
    /// refault-checked against the slot's shadow, then on the LRU (§1.2.2).
    pub(crate) fn add_to_swap_cache_for_read(&mut self, f: u32, dev: usize, slot: u32, readahead: bool) {
        let fr = &mut self.mem.frames[f as usize];
        fr.flags |= PG_SWAPBACKED | PG_LOCKED | if readahead { PG_READAHEAD } else { 0 };
        fr.set_swap(dev, slot);
        let area = &mut self.swap.areas[dev];
        // A read is of a slot something still refers to; never of one in a slots cache.
        debug_assert!(area.count(slot) > 0 && !area.held_by_slots_cache(slot), "read of unused slot {slot}");
        area.cache[slot as usize] = f;
        area.map[slot as usize] |= SWAP_HAS_CACHE;
        let shadow = std::mem::take(&mut area.shadow[slot as usize]);
        if shadow != 0 {
            self.refault(f, shadow, true);
        }
        self.lru_add(f);
    }

    /// Drop one swap-map reference of (dev, slot) held by a PTE or shmem entry
    /// (`free_swap_and_cache`, §2.5): at zero, a cache-only slot's folio is dropped when it is
    /// not busy, and the slot is freed once no cache holds it.
    pub(crate) fn put_swap_ref(&mut self, dev: usize, slot: u32) {
        let area = &mut self.swap.areas[dev];
        if area.swap_count_put(slot) != 0 {
            return;
        }
        if area.map[slot as usize] & SWAP_HAS_CACHE != 0 {
            let f = area.cache[slot as usize];
            let fr = &self.mem.frames[f as usize];
            if !fr.has(PG_WRITEBACK) && !fr.has(PG_LOCKED) && fr.owner_kind() == Owner::None {
                // Unmapped cache-only folio: reclaim it now (__try_to_reclaim_swap).
                self.delete_from_swap_cache(f, 0);
                if self.mem.frames[f as usize].has(PG_LRU) {
                    self.reclaim.policy().folio_del(&mut self.mem.frames, f);
                }
                self.free_frame(f);
            }
            return;
        }
        area.cache[slot as usize] = NONE;
        self.swap.free_slot(dev, slot, self.mem.cpu);
        self.sync_pool_frames();
    }

    /// Remove a folio from the swap cache, leaving `shadow` (the LRU policy's workingset
    /// shadow at eviction, 0 for none) in the slot, and free the slot if nothing references it
    /// any more.
    pub(crate) fn delete_from_swap_cache(&mut self, f: u32, shadow: u32) {
        let fr = self.mem.frames[f as usize];
        debug_assert!(fr.has(PG_SWAPCACHE));
        let (dev, slot) = (fr.swap_dev(), fr.slot);
        let area = &mut self.swap.areas[dev];
        area.cache[slot as usize] = NONE;
        area.map[slot as usize] &= !SWAP_HAS_CACHE;
        self.mem.frames[f as usize].clear_swap();
        if area.map[slot as usize] == 0 {
            self.swap.free_slot(dev, slot, self.mem.cpu);
            self.sync_pool_frames();
        } else {
            area.shadow[slot as usize] = shadow;
        }
    }

    /// `folio_free_swap`: drop the swap copy of a folio nobody else references; the folio
    /// becomes dirty (its only copy is in memory now).
    pub(crate) fn try_free_swap(&mut self, f: u32) -> bool {
        let fr = self.mem.frames[f as usize];
        if !fr.has(PG_SWAPCACHE) || fr.has(PG_WRITEBACK) {
            return false;
        }
        let count = self.swap.areas[fr.swap_dev()].count(fr.slot);
        if count != 0 {
            return false;
        }
        self.delete_from_swap_cache(f, 0);
        self.mem.frames[f as usize].flags |= PG_DIRTY;
        true
    }

    /// `vm_swap_full()`: more than half of all swap in use (§2.1).
    pub fn vm_swap_full(&self) -> bool {
        self.swap.free_pages() * 2 < self.swap.total_pages()
    }
}
