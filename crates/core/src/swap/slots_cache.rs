//! The per-CPU swap slots caches of `mm/swap_slots.c`, 4.11 .. 6.10 (kernel-algorithms.md
//! §2.2; read in 4.14's and 6.1's mm/swap_slots.c), in front of `scan_swap_map_slots`
//! (swap/scan_map.rs). The 4.14 profile and the 6.1 .. 6.10 profiles have them.
//!
//! * Allocation (`get_swap_page`): each CPU takes slots from a private cache of up to
//!   SWAP_SLOTS_CACHE_SIZE (64), refilled from the allocator when empty, so the pages one CPU
//!   reclaims land in its own run of slots. Cached slots are allocated as far as the swap
//!   area's free count is concerned (`nr_swap_pages` drops when the cache is refilled) but hold
//!   nothing.
//! * Freeing (`free_swap_slot`): a slot whose last reference went is not given back to the
//!   swap area at once. It waits in the freeing CPU's return cache (`slots_ret`) and stays
//!   allocated (swap map SWAP_HAS_CACHE: no scan takes it, the free count does not rise,
//!   zswap and zram keep its page); when a 65th slot is freed on that CPU, the 64 waiting go
//!   back together (`swapcache_free_entries`). The kernel does this so that freed slots
//!   coalesce in the global pool instead of being handed out again one by one.
//! * The caches are used once more than 5 x 64 slots per CPU are free and drained (both kinds
//!   given back) when fewer than 2 x 64 per CPU are (`check_cache_active`).
//!
//! Simplifications: the caches are per area (the kernel's hold entries of any area, in the
//! priority order of `get_swap_pages`: the same with one area); a refill takes slots one by
//! one through the allocator (the kernel's batch stops at the first used slot after the
//! first, which only shortens the batch).

use super::scan_map::AllocEra;
use super::SwapArea;
use std::collections::VecDeque;

/// SWAP_SLOTS_CACHE_SIZE (`include/linux/swap_slots.h`): SWAP_BATCH, 64.
pub const SWAP_SLOTS_CACHE_SIZE: usize = 64;
/// The slots caches are used while more than this many slots per CPU are free ...
const THRESHOLD_ACTIVATE_SWAP_SLOTS_CACHE: u64 = 5 * SWAP_SLOTS_CACHE_SIZE as u64;
/// ... and drained when fewer than this many are.
const THRESHOLD_DEACTIVATE_SWAP_SLOTS_CACHE: u64 = 2 * SWAP_SLOTS_CACHE_SIZE as u64;

/// Every CPU's two caches of one area.
#[derive(Clone, Debug)]
pub struct SlotsCaches {
    /// Slots ready for allocation (`cache->slots`).
    alloc: Vec<VecDeque<u32>>,
    /// Freed slots waiting to go back to the area (`cache->slots_ret`).
    ret: Vec<Vec<u32>>,
    /// `swap_slot_cache_active`.
    active: bool,
}

impl SlotsCaches {
    pub fn new(cpus: usize) -> SlotsCaches {
        SlotsCaches { alloc: vec![VecDeque::new(); cpus], ret: vec![Vec::new(); cpus], active: false }
    }
}

impl SwapArea {
    /// The era's slots caches are in use now (`check_cache_active`). Turning them off drains
    /// every CPU's caches: the allocation caches' slots are free again at once; the returned
    /// slots are handed back for the caller to free (`SwapSystem::free_returned`).
    pub fn slots_cache_active(&mut self, cpus: u64) -> (bool, Vec<u32>) {
        if self.era != AllocEra::SlotsCache {
            return (false, Vec::new());
        }
        let free = self.free_slots();
        let mut returned = Vec::new();
        if !self.scan.caches.active {
            self.scan.caches.active = free > cpus * THRESHOLD_ACTIVATE_SWAP_SLOTS_CACHE;
        } else if free < cpus * THRESHOLD_DEACTIVATE_SWAP_SLOTS_CACHE {
            self.scan.caches.active = false;
            returned = self.drain_slots_caches();
        }
        (self.scan.caches.active, returned)
    }

    /// Are freed slots held in return caches now (`use_swap_slot_cache && cache->slots_ret`)?
    pub fn slots_cache_in_use(&self) -> bool {
        self.era == AllocEra::SlotsCache && self.scan.caches.active
    }

    /// `__drain_swap_slots_cache(SLOTS_CACHE | SLOTS_CACHE_RET)`: the allocation caches'
    /// slots go back to the free pool; the returned slots are given to the caller.
    fn drain_slots_caches(&mut self) -> Vec<u32> {
        let cpus = self.scan.caches.alloc.len();
        let alloc = std::mem::replace(&mut self.scan.caches.alloc, vec![VecDeque::new(); cpus]);
        for s in alloc.into_iter().flatten() {
            self.unreserve(s);
            self.count_out(s);
        }
        let ret = std::mem::replace(&mut self.scan.caches.ret, vec![Vec::new(); cpus]);
        ret.into_iter().flatten().collect()
    }

    /// A slot from CPU `cpu`'s cache, if it has one: it becomes an allocated slot.
    pub fn from_slots_cache(&mut self, cpu: usize) -> Option<u32> {
        let c = cpu % self.scan.caches.alloc.len();
        let s = self.scan.caches.alloc[c].pop_front()?;
        self.unreserve(s);
        self.map[s as usize] = super::SWAP_HAS_CACHE;
        self.inuse += 1;
        Some(s)
    }

    /// Is CPU `cpu`'s cache empty (time to refill)?
    pub fn slots_cache_empty(&self, cpu: usize) -> bool {
        self.scan.caches.alloc[cpu % self.scan.caches.alloc.len()].is_empty()
    }

    /// Move slot `s`, just allocated by the scan for a refill, into CPU `cpu`'s cache.
    pub fn reserve_for_cache(&mut self, cpu: usize, s: u32) {
        debug_assert_eq!(self.map[s as usize], super::SWAP_HAS_CACHE);
        self.map[s as usize] = 0;
        self.inuse -= 1;
        self.reserve(s);
        let c = cpu % self.scan.caches.alloc.len();
        self.scan.caches.alloc[c].push_back(s);
    }

    /// `free_swap_slot`: slot `s` (no reference left, swap map 0) waits in CPU `cpu`'s return
    /// cache. When that cache already holds SWAP_SLOTS_CACHE_SIZE, those go back first: they
    /// are returned for the caller to free (`swapcache_free_entries`).
    pub fn hold_freed_slot(&mut self, cpu: usize, s: u32) -> Vec<u32> {
        debug_assert!(self.slots_cache_in_use());
        self.shadow[s as usize] = 0;
        self.inuse -= 1;
        self.reserve(s);
        let c = cpu % self.scan.caches.ret.len();
        let full = self.scan.caches.ret[c].len() >= SWAP_SLOTS_CACHE_SIZE;
        let batch = if full { std::mem::take(&mut self.scan.caches.ret[c]) } else { Vec::new() };
        self.scan.caches.ret[c].push(s);
        batch
    }

    /// A slot of a return cache on its way back to the free pool: allocated again for the
    /// moment, so that `release` frees it like any other.
    pub fn unhold(&mut self, s: u32) {
        self.unreserve(s);
        self.inuse += 1;
    }

    /// The freed slots waiting in every CPU's return cache.
    pub fn returning_slots(&self) -> impl Iterator<Item = u32> + '_ {
        self.scan.caches.ret.iter().flatten().copied()
    }

    /// Is slot `s` held by a slots cache (for allocation or on its way back)?
    pub fn held_by_slots_cache(&self, s: u32) -> bool {
        self.scan.reserved[s as usize]
    }

    fn reserve(&mut self, s: u32) {
        debug_assert!(!self.scan.reserved[s as usize]);
        self.scan.reserved[s as usize] = true;
        self.scan.reserved_count += 1;
    }

    fn unreserve(&mut self, s: u32) {
        debug_assert!(self.scan.reserved[s as usize]);
        self.scan.reserved[s as usize] = false;
        self.scan.reserved_count -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::swap::scan_map::tests::{area, take};

    /// `get_swap_page` through CPU `cpu`'s cache, refilled by SWAP_SLOTS_CACHE_SIZE scans.
    fn get(a: &mut SwapArea, cpu: usize) -> u32 {
        if a.slots_cache_empty(cpu) {
            for _ in 0..SWAP_SLOTS_CACHE_SIZE {
                let s = take(a, cpu);
                a.reserve_for_cache(cpu, s);
            }
        }
        a.from_slots_cache(cpu).unwrap()
    }

    /// The last reference to slot `s` went on CPU `cpu`: what `SwapSystem::free_slot` does
    /// with the area (a batch pushed out of the return cache is freed).
    fn put(a: &mut SwapArea, cpu: usize, s: u32) {
        a.map[s as usize] = 0;
        for r in a.hold_freed_slot(cpu, s) {
            a.unhold(r);
            a.release(r);
        }
    }

    #[test]
    fn slots_cache_hands_out_per_cpu_runs_and_reserves_them() {
        let mut a = area(8192, "hdd", 2, AllocEra::SlotsCache);
        assert!(a.slots_cache_active(2).0);
        assert_eq!(get(&mut a, 0), 1);
        assert_eq!(a.free_slots(), 8191 - 64, "a refill takes 64 slots from the free count");
        assert_eq!(get(&mut a, 1), 65, "the other CPU's run follows");
        assert_eq!(get(&mut a, 0), 2, "CPU 0 continues its own run");
        assert_eq!(a.inuse, 3);
        assert_eq!(a.map[3], 0, "a cached slot holds nothing");
        let run: Vec<u32> = (0..62).map(|_| get(&mut a, 0)).collect();
        assert_eq!(run, (3..=64).collect::<Vec<u32>>(), "64 slots per refill");
        assert_eq!(get(&mut a, 0), 129, "the 65th comes from the next refill, after CPU 1's run");
    }

    #[test]
    fn freed_slots_return_through_the_cache_in_batches_of_64() {
        let mut a = area(8192, "hdd", 2, AllocEra::SlotsCache);
        assert!(a.slots_cache_active(2).0);
        let slots: Vec<u32> = (0..128).map(|_| get(&mut a, 0)).collect();
        let free_before = a.free_slots();
        for &s in &slots[..64] {
            put(&mut a, 0, s);
        }
        assert_eq!(a.free_slots(), free_before, "64 freed slots wait in CPU 0's return cache");
        assert!(a.held_by_slots_cache(slots[0]) && a.scan.lowest_bit > slots[0], "not free to the scan");
        put(&mut a, 1, slots[64]);
        assert_eq!(a.free_slots(), free_before, "CPU 1 has its own return cache");
        put(&mut a, 0, slots[65]);
        assert_eq!(a.free_slots(), free_before + 64, "the 65th on CPU 0 sends the 64 back together");
        assert!(!a.held_by_slots_cache(slots[0]) && a.held_by_slots_cache(slots[65]));
        assert_eq!(a.scan.lowest_bit, 1, "the freed run is the lowest free space again");
    }

    #[test]
    fn slots_cache_drains_when_swap_runs_low() {
        let mut a = area(1024, "hdd", 1, AllocEra::SlotsCache);
        assert!(a.slots_cache_active(1).0, "1023 free > 5 x 64");
        let s = take(&mut a, 0);
        a.reserve_for_cache(0, s);
        let freed = get(&mut a, 0);
        assert_eq!(freed, s);
        let held = take(&mut a, 0);
        put(&mut a, 0, held);
        for _ in 0..(1023 - 2 - 200) {
            take(&mut a, 0);
        }
        assert_eq!(a.free_slots(), 200);
        assert!(a.slots_cache_active(1).0, "still on between the thresholds");
        let s = take(&mut a, 0);
        a.reserve_for_cache(0, s);
        for _ in 0..100 {
            take(&mut a, 0);
        }
        assert!(a.free_slots() < 2 * 64);
        let before = a.free_slots();
        let (active, returned) = a.slots_cache_active(1);
        assert!(!active, "fewer than 2 x 64 free: off");
        assert_eq!(a.free_slots(), before + 1, "the cached slot went back");
        assert_eq!(returned, [held], "the returned slot is handed back to be freed");
        assert!(!a.slots_cache_in_use());
    }

    #[test]
    fn only_the_slots_cache_era_holds_freed_slots() {
        for era in [AllocEra::ScanMap { after_2_6_28: false }, AllocEra::PerCpuCluster, AllocEra::Clusters] {
            let mut a = area(8192, "hdd", 1, era);
            assert!(!a.slots_cache_active(1).0 && !a.slots_cache_in_use(), "{era:?}");
        }
    }
}
