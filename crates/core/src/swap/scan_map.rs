//! The swap slot allocator before the 6.11/6.12 cluster rework: `scan_swap_map` (2.6.28 ..
//! 3.11) and `scan_swap_map_slots` with its SSD per-CPU clusters (3.12 free-cluster list, 3.14
//! per-CPU cluster) and, from 4.11 to 6.10, the per-CPU swap slots cache of `mm/swap_slots.c`
//! (kernel-algorithms.md §2.2, §2.4; the rules below were read in 3.4's mm/swapfile.c and are
//! the same in later kernels of the family unless said).
//!
//! * One cursor per device: `cluster_next` and the countdown `cluster_nr`. Each allocation
//!   takes the slot at the cursor when free and moves the cursor past it. When `cluster_nr`
//!   runs out, the allocator looks for the first run of SWAPFILE_CLUSTER free slots (not
//!   aligned) from `lowest_bit` on a rotating disk (to keep the swap area short: seeks) or
//!   from the cursor on an SSD (2.6.29+: spread wear), wrapping to `lowest_bit` once, and
//!   continues sequentially there for 256 allocations; without such a run it continues from
//!   the cursor. A slot that is not free sends it on a linear scan to `highest_bit`, then
//!   from `lowest_bit` up to where it started.
//! * SSDs from 3.12/3.14: each CPU owns a cluster taken from the head of the free-cluster list
//!   and fills it in increasing order (slots already used are skipped); with no free cluster
//!   left, the linear scan from the cursor.
//! * Cache-only reuse: while swap is more than half full (`vm_swap_full`), a slot whose only
//!   reference is the swap cache is reclaimed (`__try_to_reclaim_swap`: the folio not locked,
//!   not under writeback, unmapped from swap) and handed out again, wherever the scan meets
//!   one. The area reports such a slot as [`Claim::CacheOnly`]; the engine frees it
//!   (swap/cache.rs) and takes it, or the scan goes on past it.
//! * The slots cache (4.11 .. 6.10): each CPU takes slots from a private cache of up to
//!   SWAP_SLOTS_CACHE_SIZE (64), refilled from the allocator when empty, so the pages one CPU
//!   reclaims land in its own run of slots. Cached slots are allocated as far as the swap
//!   area's free count is concerned (`nr_swap_pages` drops when the cache is refilled) but hold
//!   nothing. The caches are used once more than 5 x 64 slots per CPU are free and drained
//!   (slots given back) when fewer than 2 x 64 per CPU are.
//!
//! Simplifications: the slots cache is per area (the kernel's holds entries of any area, in
//! the priority order of `get_swap_pages`: the same with one area); a refill takes slots one
//! by one through the allocator (the kernel's batch stops at the first used slot after the
//! first, which only shortens the batch); freed slots go back at once (the 4.11 .. 6.9
//! per-CPU return cache `slots_ret` that batched frees is not modelled); 5.9+'s random start
//! of an SSD's per-CPU cursor (`cluster_next_cpu`) is not modelled; discard is not modelled.

use super::{ClusterState, SwapArea, SWAPFILE_CLUSTER, SWAP_HAS_CACHE};
use crate::config::Profile;
use std::collections::VecDeque;

/// SWAP_SLOTS_CACHE_SIZE (`include/linux/swap_slots.h`).
pub const SWAP_SLOTS_CACHE_SIZE: usize = 64;
/// The slots caches are used while more than this many slots per CPU are free ...
const THRESHOLD_ACTIVATE_SWAP_SLOTS_CACHE: u64 = 5 * SWAP_SLOTS_CACHE_SIZE as u64;
/// ... and drained when fewer than this many are.
const THRESHOLD_DEACTIVATE_SWAP_SLOTS_CACHE: u64 = 2 * SWAP_SLOTS_CACHE_SIZE as u64;
const NONE: u32 = u32::MAX;

/// Which allocator a profile's kernel has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllocEra {
    /// 2.6.28 .. 3.11: `scan_swap_map` only (2.6.28 searches for free runs from `lowest_bit`
    /// on any device; 2.6.29+ from the cursor on SSDs).
    ScanMap { ssd_from_cursor: bool },
    /// 3.14 .. 4.10: `scan_swap_map_slots` with per-CPU SSD clusters.
    PerCpuCluster,
    /// 4.11 .. 6.10: the same with the per-CPU swap slots cache in front.
    SlotsCache,
    /// 6.11+: the cluster allocator of swap/mod.rs (§2.3).
    Clusters,
}

impl AllocEra {
    /// From the profile and its `kernel.profile` string ("6.N" with N <= 10 is the old
    /// allocator; "6.x" the current one).
    pub fn of(profile: Profile, name: &str) -> AllocEra {
        match profile {
            Profile::V2_6_28 => AllocEra::ScanMap { ssd_from_cursor: name != "2.6.28" && name != "2.6" },
            Profile::V3_14 => AllocEra::PerCpuCluster,
            Profile::V4_14 => AllocEra::SlotsCache,
            Profile::V6 => match name.strip_prefix("6.").and_then(|m| m.parse::<u32>().ok()) {
                Some(m) if m <= 10 => AllocEra::SlotsCache,
                _ => AllocEra::Clusters,
            },
        }
    }
}

/// What the scan found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Claim {
    /// A free slot, now allocated (or reserved for a slots cache).
    Free(u32),
    /// A slot held only by the swap cache while swap is over half full: the caller may free
    /// it and [`SwapArea::take`] it, else [`SwapArea::scan_past`] it.
    CacheOnly(u32),
}

/// The classic allocator's state of one area.
#[derive(Clone, Debug)]
pub struct ScanState {
    cluster_next: u32,
    cluster_nr: u32,
    /// Hints: no free slot below `lowest_bit` or above `highest_bit` (0: the area is full).
    lowest_bit: u32,
    highest_bit: u32,
    /// Where the current scan started (the linear scan wraps up to here).
    scan_base: u32,
    /// SSD per-CPU clusters: the next slot to try in the CPU's cluster, or NONE.
    percpu_next: Vec<u32>,
    /// Per-CPU slots caches (4.11 .. 6.10) and whether they are in use.
    caches: Vec<VecDeque<u32>>,
    caches_active: bool,
    /// Slots held by the caches (allocated for the free count, 0 in the swap map).
    reserved: Vec<bool>,
    pub reserved_count: u64,
}

impl ScanState {
    pub fn new(slots: u32, cpus: usize) -> ScanState {
        ScanState {
            // swapon: the first allocation searches for a free run from `lowest_bit`.
            cluster_next: 1,
            cluster_nr: 0,
            lowest_bit: 1,
            highest_bit: slots.saturating_sub(1),
            scan_base: 1,
            percpu_next: vec![NONE; cpus.max(1)],
            caches: vec![VecDeque::new(); cpus.max(1)],
            caches_active: false,
            reserved: vec![false; slots as usize],
            reserved_count: 0,
        }
    }
}

impl SwapArea {
    fn slot_free(&self, s: u32) -> bool {
        self.map[s as usize] == 0 && !self.scan.reserved[s as usize]
    }

    fn cache_only(&self, s: u32) -> bool {
        self.map[s as usize] == SWAP_HAS_CACHE
    }

    fn ssd_clusters(&self) -> bool {
        !self.rotational() && matches!(self.era, AllocEra::PerCpuCluster | AllocEra::SlotsCache)
    }

    /// One slot for CPU `cpu` from its slots cache when the era has one and it is in use,
    /// else from the scan. `reserve` (a cache refill) keeps the slot out of the swap map.
    pub fn scan_alloc(&mut self, cpu: usize, swap_full: bool) -> Option<Claim> {
        let c = cpu % self.scan.percpu_next.len();
        if self.ssd_clusters() {
            if let Some(s) = self.ssd_cluster_slot(c) {
                return self.checks(s, swap_full);
            }
            self.scan.scan_base = self.scan.cluster_next;
            return self.scan_past(self.scan.cluster_next.saturating_sub(1), swap_full);
        }
        let offset = self.next_cluster_offset();
        self.checks(offset, swap_full)
    }

    /// The HDD (and pre-3.12 SSD) cursor: count down `cluster_nr`; at zero look for a free
    /// run of SWAPFILE_CLUSTER slots.
    fn next_cluster_offset(&mut self) -> u32 {
        let st = &mut self.scan;
        st.scan_base = st.cluster_next;
        if st.cluster_nr > 0 {
            st.cluster_nr -= 1;
            return st.cluster_next;
        }
        st.cluster_nr = SWAPFILE_CLUSTER - 1;
        if self.free_slots() < SWAPFILE_CLUSTER as u64 {
            return self.scan.cluster_next;
        }
        let from_cursor = matches!(self.era, AllocEra::ScanMap { ssd_from_cursor: true }) && !self.rotational();
        let start = if from_cursor { self.scan.cluster_next } else { self.scan.lowest_bit };
        self.scan.scan_base = start;
        let found = self.free_run(start, self.scan.highest_bit).or_else(|| self.free_run(self.scan.lowest_bit, start));
        match found {
            Some(first) => {
                self.scan.cluster_next = first;
                first
            }
            None => self.scan.cluster_next,
        }
    }

    /// The first slot of the first run of SWAPFILE_CLUSTER free slots within [from, to].
    fn free_run(&self, from: u32, to: u32) -> Option<u32> {
        let mut run = 0;
        for s in from..=to.min(self.slots - 1) {
            run = if self.slot_free(s) { run + 1 } else { 0 };
            if run == SWAPFILE_CLUSTER {
                return Some(s + 1 - SWAPFILE_CLUSTER);
            }
        }
        None
    }

    /// `scan_swap_map_try_ssd_cluster`: the next free slot of this CPU's cluster, taking the
    /// head of the free-cluster list when it has none or its cluster is used up.
    fn ssd_cluster_slot(&mut self, c: usize) -> Option<u32> {
        loop {
            if self.scan.percpu_next[c] == NONE {
                let cl = loop {
                    let cl = *self.free_clusters.front()?;
                    if self.cluster_state[cl as usize] == ClusterState::Free {
                        break cl;
                    }
                    self.free_clusters.pop_front();
                };
                self.scan.percpu_next[c] = cl * SWAPFILE_CLUSTER;
            }
            let start = self.scan.percpu_next[c];
            let end = ((start / SWAPFILE_CLUSTER + 1) * SWAPFILE_CLUSTER).min(self.slots);
            match (start..end).find(|&s| self.slot_free(s)) {
                Some(s) => {
                    self.scan.percpu_next[c] = s + 1;
                    self.scan.scan_base = s;
                    return Some(s);
                }
                None => self.scan.percpu_next[c] = NONE,
            }
        }
    }

    /// The `checks:` label: take `offset` if free, offer it if cache-only and swap is full,
    /// else scan on.
    fn checks(&mut self, mut offset: u32, swap_full: bool) -> Option<Claim> {
        if self.scan.highest_bit == 0 {
            return None;
        }
        if offset > self.scan.highest_bit {
            offset = self.scan.lowest_bit;
            self.scan.scan_base = offset;
        }
        if self.slot_free(offset) {
            self.take(offset);
            return Some(Claim::Free(offset));
        }
        if swap_full && self.cache_only(offset) {
            return Some(Claim::CacheOnly(offset));
        }
        self.scan_past(offset, swap_full)
    }

    /// The `scan:` label: linearly after `offset` up to `highest_bit`, then from `lowest_bit`
    /// up to where this allocation's scan began.
    pub fn scan_past(&mut self, offset: u32, swap_full: bool) -> Option<Claim> {
        let (lo, hi, base) = (self.scan.lowest_bit, self.scan.highest_bit, self.scan.scan_base);
        for s in (offset + 1..=hi).chain(lo..base.min(offset + 1)) {
            if self.slot_free(s) {
                self.take(s);
                return Some(Claim::Free(s));
            }
            if swap_full && self.cache_only(s) {
                return Some(Claim::CacheOnly(s));
            }
        }
        None
    }

    /// Allocate slot `s` (free): the swap map holds only SWAP_HAS_CACHE, the cursor moves past.
    pub fn take(&mut self, s: u32) {
        debug_assert!(self.slot_free(s));
        self.map[s as usize] = SWAP_HAS_CACHE;
        self.inuse += 1;
        self.count_in(s);
        self.scan.cluster_next = s + 1;
    }

    /// Slot `s` leaves the free pool (allocated or reserved): hints and cluster counts.
    fn count_in(&mut self, s: u32) {
        let st = &mut self.scan;
        if s == st.lowest_bit {
            st.lowest_bit += 1;
        }
        if s == st.highest_bit {
            st.highest_bit -= 1;
        }
        if self.inuse + st.reserved_count >= self.slots as u64 - 1 {
            st.lowest_bit = self.slots;
            st.highest_bit = 0;
        }
        let cl = (s / SWAPFILE_CLUSTER) as usize;
        self.cluster_count[cl] += 1;
        if self.cluster_state[cl] == ClusterState::Free {
            self.cluster_state[cl] = ClusterState::NonFull;
        }
    }

    /// Slot `s` is back in the free pool (`swap_entry_free` / a drained slots cache).
    pub(super) fn count_out(&mut self, s: u32) {
        let st = &mut self.scan;
        st.lowest_bit = st.lowest_bit.min(s);
        st.highest_bit = st.highest_bit.max(s);
        let cl = (s / SWAPFILE_CLUSTER) as usize;
        self.cluster_count[cl] -= 1;
        if self.cluster_count[cl] == (cl == 0) as u16 {
            self.cluster_state[cl] = ClusterState::Free;
            self.free_clusters.push_back(cl as u32);
        }
    }

    /// The era's slots cache is in use now (`check_cache_active`); turning it off drains
    /// every CPU's cache.
    pub fn slots_cache_active(&mut self, cpus: u64) -> bool {
        if self.era != AllocEra::SlotsCache {
            return false;
        }
        let free = self.free_slots();
        if !self.scan.caches_active {
            self.scan.caches_active = free > cpus * THRESHOLD_ACTIVATE_SWAP_SLOTS_CACHE;
        } else if free < cpus * THRESHOLD_DEACTIVATE_SWAP_SLOTS_CACHE {
            self.scan.caches_active = false;
            self.drain_slots_caches();
        }
        self.scan.caches_active
    }

    fn drain_slots_caches(&mut self) {
        let caches = std::mem::take(&mut self.scan.caches);
        for s in caches.iter().flatten().copied() {
            self.scan.reserved[s as usize] = false;
            self.scan.reserved_count -= 1;
            self.count_out(s);
        }
        self.scan.caches = vec![VecDeque::new(); caches.len()];
    }

    /// A slot from CPU `cpu`'s cache, if it has one: it becomes an allocated slot.
    pub fn from_slots_cache(&mut self, cpu: usize) -> Option<u32> {
        let c = cpu % self.scan.caches.len();
        let s = self.scan.caches[c].pop_front()?;
        self.scan.reserved[s as usize] = false;
        self.scan.reserved_count -= 1;
        self.map[s as usize] = SWAP_HAS_CACHE;
        self.inuse += 1;
        Some(s)
    }

    /// Is CPU `cpu`'s cache empty (time to refill)?
    pub fn slots_cache_empty(&self, cpu: usize) -> bool {
        self.scan.caches[cpu % self.scan.caches.len()].is_empty()
    }

    /// Move slot `s`, just allocated by the scan for a refill, into CPU `cpu`'s cache.
    pub fn reserve_for_cache(&mut self, cpu: usize, s: u32) {
        debug_assert_eq!(self.map[s as usize], SWAP_HAS_CACHE);
        self.map[s as usize] = 0;
        self.inuse -= 1;
        self.scan.reserved[s as usize] = true;
        self.scan.reserved_count += 1;
        let c = cpu % self.scan.caches.len();
        self.scan.caches[c].push_back(s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::{Device, DeviceParams};
    use crate::rng::Rng;

    fn area(slots: u32, dev: &str, cpus: usize, era: AllocEra) -> SwapArea {
        let mut a = SwapArea::new("t", -1, slots, Device::new(dev, DeviceParams::preset(dev).unwrap(), slots as u64, Rng::new(1)), cpus);
        a.era = era;
        a
    }

    fn take(a: &mut SwapArea, cpu: usize) -> u32 {
        match a.scan_alloc(cpu, false) {
            Some(Claim::Free(s)) => s,
            other => panic!("expected a free slot, got {other:?}"),
        }
    }

    fn free(a: &mut SwapArea, s: u32) {
        a.map[s as usize] = 0;
        a.release(s);
    }

    const HDD_2_6_28: AllocEra = AllocEra::ScanMap { ssd_from_cursor: false };

    #[test]
    fn profiles_pick_their_allocator() {
        assert_eq!(AllocEra::of(Profile::V2_6_28, "2.6.28"), HDD_2_6_28);
        assert_eq!(AllocEra::of(Profile::V2_6_28, "2.6.32"), AllocEra::ScanMap { ssd_from_cursor: true });
        assert_eq!(AllocEra::of(Profile::V3_14, "3.14"), AllocEra::PerCpuCluster);
        assert_eq!(AllocEra::of(Profile::V4_14, "4.14"), AllocEra::SlotsCache);
        assert_eq!(AllocEra::of(Profile::V6, "6.1"), AllocEra::SlotsCache);
        assert_eq!(AllocEra::of(Profile::V6, "6.10"), AllocEra::SlotsCache);
        assert_eq!(AllocEra::of(Profile::V6, "6.12"), AllocEra::Clusters);
        assert_eq!(AllocEra::of(Profile::V6, "6.x"), AllocEra::Clusters);
    }

    #[test]
    fn hdd_new_cluster_search_starts_at_lowest_bit() {
        let mut a = area(2048, "hdd", 1, HDD_2_6_28);
        let first: Vec<u32> = (0..1000).map(|_| take(&mut a, 0)).collect();
        assert_eq!(first[..3], [1, 2, 3], "one cursor, in order from slot 1");
        // A hole of 300 slots near the start, the cursor near 1000: once the 256 of the
        // current cluster are used up, the next cluster is the first free run from lowest_bit.
        for s in 10..310 {
            free(&mut a, s);
        }
        let next: Vec<u32> = (0..300).map(|_| take(&mut a, 0)).collect();
        assert!(next.contains(&10), "the hole was found: {:?}", &next[..8]);
        let at = next.iter().position(|&s| s == 10).unwrap();
        assert_eq!(next[at..at + 3], [10, 11, 12], "and filled in order");
        assert_eq!(next[0], 1001, "until then the cursor went on");
    }

    #[test]
    fn linear_scan_wraps_to_lowest_bit() {
        let mut a = area(512, "hdd", 1, HDD_2_6_28);
        let all: Vec<u32> = std::iter::from_fn(|| a.scan_alloc(0, false)).map(|c| if let Claim::Free(s) = c { s } else { 0 }).collect();
        assert_eq!(all.len(), 511);
        assert_eq!(a.free_slots(), 0);
        free(&mut a, 5);
        free(&mut a, 7);
        assert_eq!(take(&mut a, 0), 5, "past the end the scan wraps to lowest_bit");
        assert_eq!(take(&mut a, 0), 7);
        assert_eq!(a.scan_alloc(0, false), None);
    }

    #[test]
    fn ssd_cpus_fill_their_own_clusters() {
        let mut a = area(4096, "nvme", 2, AllocEra::PerCpuCluster);
        let c0: Vec<u32> = (0..3).map(|_| take(&mut a, 0)).collect();
        let c1: Vec<u32> = (0..3).map(|_| take(&mut a, 1)).collect();
        assert_eq!(c0, [1, 2, 3]);
        assert_eq!(c1, [256, 257, 258]);
    }

    #[test]
    fn cache_only_slots_are_offered_when_swap_is_full() {
        let mut a = area(512, "hdd", 1, HDD_2_6_28);
        for _ in 0..511 {
            let s = take(&mut a, 0);
            a.map[s as usize] = 1; // mapped from a PTE, no cache
        }
        // slot 100 held only by the swap cache, slot 200 free: with swap full the scan
        // offers 100 first; told it cannot be reclaimed, it goes on to 200.
        a.map[200] = 0;
        a.release(200);
        a.map[100] = SWAP_HAS_CACHE;
        a.scan.cluster_next = 50;
        a.scan.cluster_nr = 10;
        assert_eq!(a.scan_alloc(0, true), Some(Claim::CacheOnly(100)));
        assert_eq!(a.scan_past(100, true), Some(Claim::Free(200)));
        a.map[200] = 0;
        a.release(200);
        a.scan.cluster_next = 50;
        assert_eq!(a.scan_alloc(0, false), Some(Claim::Free(200)), "not full: cache-only slots are not touched");
    }

    #[test]
    fn slots_cache_hands_out_per_cpu_runs_and_reserves_them() {
        let mut a = area(8192, "hdd", 2, AllocEra::SlotsCache);
        assert!(a.slots_cache_active(2));
        let get = |a: &mut SwapArea, cpu: usize| {
            if a.slots_cache_empty(cpu) {
                for _ in 0..SWAP_SLOTS_CACHE_SIZE {
                    let s = take(a, cpu);
                    a.reserve_for_cache(cpu, s);
                }
            }
            a.from_slots_cache(cpu).unwrap()
        };
        assert_eq!(get(&mut a, 0), 1);
        assert_eq!(a.free_slots(), 8191 - 64, "a refill takes 64 slots from the free count");
        assert_eq!(get(&mut a, 1), 65, "the other CPU's run follows");
        assert_eq!(get(&mut a, 0), 2, "CPU 0 continues its own run");
        assert_eq!(a.inuse, 3);
        assert_eq!(a.map[3], 0, "a cached slot holds nothing");
    }

    #[test]
    fn slots_cache_drains_when_swap_runs_low() {
        let mut a = area(1024, "hdd", 1, AllocEra::SlotsCache);
        assert!(a.slots_cache_active(1), "1023 free > 5 x 64");
        let s = take(&mut a, 0);
        a.reserve_for_cache(0, s);
        for _ in 0..(1023 - 1 - 200) {
            take(&mut a, 0);
        }
        assert_eq!(a.free_slots(), 200);
        assert!(a.slots_cache_active(1), "still on between the thresholds");
        for _ in 0..100 {
            take(&mut a, 0);
        }
        assert!(a.free_slots() < 2 * 64);
        let before = a.free_slots();
        assert!(!a.slots_cache_active(1), "fewer than 2 x 64 free: off");
        assert_eq!(a.free_slots(), before + 1, "the cached slot went back");
    }
}
