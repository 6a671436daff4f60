//! The swap slot allocator before the 6.11/6.12 cluster rework: `scan_swap_map` (2.6.28 ..
//! 3.11) and `scan_swap_map_slots` with its SSD per-CPU clusters (3.12 free-cluster list, 3.14
//! per-CPU cluster) up to 6.10 (kernel-algorithms.md §2.4). The rules below were read in
//! 2.6.28's, ~3.4's and ~5.10's mm/swapfile.c; where 2.6.28 differs it is said. The
//! per-CPU swap slots cache in front of it (4.11 .. 6.10) is swap/slots_cache.rs.
//!
//! * One cursor per device: `cluster_next` and the countdown `cluster_nr`. Each allocation
//!   takes the slot at the cursor when free and moves the cursor past it. When `cluster_nr`
//!   runs out, the allocator looks for the first run of SWAPFILE_CLUSTER free slots (not
//!   aligned) from `lowest_bit` on a rotating disk (to keep the swap area short: seeks) or
//!   from the cursor on an SSD (2.6.29+: spread wear, wrapping to `lowest_bit` once), and
//!   continues sequentially there for 256 allocations. Without such a run it goes on from
//!   where the search began (`offset = scan_base`): `lowest_bit` on a disk, the cursor on an
//!   SSD. With fewer than SWAPFILE_CLUSTER slots free it does not search: 2.6.29+ stays at
//!   the cursor, 2.6.28 goes to `lowest_bit` (`goto lowest`). A slot that is not free sends
//!   it on a linear scan to `highest_bit`, then from `lowest_bit` up to where it started.
//! * 2.6.28 searches from `lowest_bit` on every device (no SWP_SOLIDSTATE yet).
//! * SSDs from 3.12/3.14: each CPU owns a cluster taken from the head of the free-cluster list
//!   and fills it in increasing order (slots already used are skipped); with no free cluster
//!   left, the linear scan from the cursor.
//! * Cache-only reuse (2.6.32+, not in 2.6.28, whose swap map has no SWAP_HAS_CACHE): while
//!   swap is more than half full (`vm_swap_full`), a slot whose only reference is the swap
//!   cache is reclaimed (`__try_to_reclaim_swap`: the folio not locked, not under writeback,
//!   unmapped from swap) and handed out again, wherever the scan meets one. The area reports
//!   such a slot as [`Claim::CacheOnly`]; the engine frees it (swap/cache.rs) and takes it, or
//!   the scan goes on past it.
//!
//! Simplifications: 5.9+'s random start of an SSD's per-CPU cursor (`cluster_next_cpu`) is not
//! modelled; discard is not modelled; profiles named 2.6.29 .. 2.6.31 would get 2.6.32's
//! cache-only reuse.

use super::{ClusterState, SwapArea, SWAPFILE_CLUSTER, SWAP_HAS_CACHE};
use crate::config::Profile;
use super::slots_cache::SlotsCaches;

const NONE: u32 = u32::MAX;

/// Which allocator a profile's kernel has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllocEra {
    /// 2.6.28 .. 3.11: `scan_swap_map` only. `after_2_6_28`: Hugh Dickins' 2.6.29 rework
    /// (an SSD's free-run search from the cursor; the cursor kept when fewer than a run of
    /// slots is free) and 2.6.32's cache-only reuse; false is 2.6.28 itself.
    ScanMap { after_2_6_28: bool },
    /// 3.14 .. 4.10: `scan_swap_map_slots` with per-CPU SSD clusters.
    PerCpuCluster,
    /// 4.11 .. 6.10: the same with the per-CPU swap slots cache in front.
    SlotsCache,
    /// 6.11+: the cluster allocator of swap/mod.rs (§2.3).
    Clusters,
}

impl AllocEra {
    /// From the profile and its `kernel.profile` string ("5.N" and "6.N" with N <= 10 are the
    /// old allocator; "6.x" the current one).
    pub fn of(profile: Profile, name: &str) -> AllocEra {
        match profile {
            Profile::V2_6_28 => AllocEra::ScanMap { after_2_6_28: name != "2.6.28" && name != "2.6" },
            Profile::V3_14 => AllocEra::PerCpuCluster,
            Profile::V4_14 => AllocEra::SlotsCache,
            Profile::V6 => match crate::config::version(name) {
                Some(v) if v <= (6, 10) => AllocEra::SlotsCache,
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
    pub(super) lowest_bit: u32,
    highest_bit: u32,
    /// Where the current scan started (the linear scan wraps up to here).
    scan_base: u32,
    /// SSD per-CPU clusters: the next slot to try in the CPU's cluster, or NONE.
    percpu_next: Vec<u32>,
    /// Per-CPU slots caches (4.11 .. 6.10, swap/slots_cache.rs).
    pub(super) caches: SlotsCaches,
    /// Slots held by a slots cache, for allocation or on their way back to the free pool
    /// (allocated for the free count, 0 in the swap map).
    pub(super) reserved: Vec<bool>,
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
            caches: SlotsCaches::new(cpus.max(1)),
            reserved: vec![false; slots as usize],
            reserved_count: 0,
        }
    }
}

impl SwapArea {
    pub(crate) fn slot_free(&self, s: u32) -> bool {
        self.map[s as usize] == 0 && !self.scan.reserved[s as usize]
    }

    fn cache_only(&self, s: u32) -> bool {
        self.map[s as usize] == SWAP_HAS_CACHE
    }

    /// Cache-only slots are reused while swap is full (2.6.32+; 2.6.28 had no SWAP_HAS_CACHE).
    fn reuses_cache_only(&self, swap_full: bool) -> bool {
        swap_full && self.era != AllocEra::ScanMap { after_2_6_28: false }
    }

    fn ssd_clusters(&self) -> bool {
        !self.rotational() && matches!(self.era, AllocEra::PerCpuCluster | AllocEra::SlotsCache)
    }

    /// One slot for CPU `cpu` by the scan (`scan_swap_map(_slots)`); a slots cache refill
    /// takes its slots through here (swap/slots_cache.rs).
    pub fn scan_alloc(&mut self, cpu: usize, swap_full: bool) -> Option<Claim> {
        let swap_full = self.reuses_cache_only(swap_full);
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
    /// run of SWAPFILE_CLUSTER slots. Without one the allocation goes on from where the search
    /// began (`scan_base`; 2.6.28: `lowest_bit`).
    fn next_cluster_offset(&mut self) -> u32 {
        let era_2_6_28 = self.era == AllocEra::ScanMap { after_2_6_28: false };
        let st = &mut self.scan;
        st.scan_base = st.cluster_next;
        if st.cluster_nr > 0 {
            st.cluster_nr -= 1;
            return st.cluster_next;
        }
        st.cluster_nr = SWAPFILE_CLUSTER - 1;
        if self.free_slots() < SWAPFILE_CLUSTER as u64 {
            // 2.6.28 `goto lowest`; 2.6.29+ `goto checks` at the cursor.
            return if era_2_6_28 { self.scan.lowest_bit } else { self.scan.cluster_next };
        }
        let from_cursor = self.era == AllocEra::ScanMap { after_2_6_28: true } && !self.rotational();
        let start = if from_cursor { self.scan.cluster_next } else { self.scan.lowest_bit };
        self.scan.scan_base = start;
        let found = self.free_run(start, self.scan.highest_bit).or_else(|| self.free_run(self.scan.lowest_bit, start));
        if let Some(first) = found {
            self.scan.cluster_next = first;
        }
        found.unwrap_or(start)
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
        let swap_full = self.reuses_cache_only(swap_full);
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
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::device::{Device, DeviceParams};
    use crate::rng::Rng;

    pub(crate) fn area(slots: u32, dev: &str, cpus: usize, era: AllocEra) -> SwapArea {
        let mut a = SwapArea::new("t", -1, slots, Device::new(dev, DeviceParams::preset(dev).unwrap(), slots as u64, Rng::new(1)), cpus);
        a.era = era;
        a
    }

    pub(crate) fn take(a: &mut SwapArea, cpu: usize) -> u32 {
        match a.scan_alloc(cpu, false) {
            Some(Claim::Free(s)) => s,
            other => panic!("expected a free slot, got {other:?}"),
        }
    }

    pub(crate) fn free(a: &mut SwapArea, s: u32) {
        a.map[s as usize] = 0;
        a.release(s);
    }

    const HDD_2_6_28: AllocEra = AllocEra::ScanMap { after_2_6_28: false };

    #[test]
    fn profiles_pick_their_allocator() {
        assert_eq!(AllocEra::of(Profile::V2_6_28, "2.6.28"), HDD_2_6_28);
        assert_eq!(AllocEra::of(Profile::V2_6_28, "2.6.32"), AllocEra::ScanMap { after_2_6_28: true });
        assert_eq!(AllocEra::of(Profile::V3_14, "3.14"), AllocEra::PerCpuCluster);
        assert_eq!(AllocEra::of(Profile::V4_14, "4.14"), AllocEra::SlotsCache);
        assert_eq!(AllocEra::of(Profile::V6, "5.17"), AllocEra::SlotsCache);
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

    const HDD_2_6_32: AllocEra = AllocEra::ScanMap { after_2_6_28: true };

    #[test]
    fn cache_only_slots_are_offered_when_swap_is_full() {
        let mut a = area(512, "hdd", 1, HDD_2_6_32);
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

    /// Swap full but for one slot held only by the swap cache and one free slot beyond it.
    fn full_but_cache_only_100_and_free_200(era: AllocEra) -> SwapArea {
        let mut a = area(512, "hdd", 1, era);
        for _ in 0..511 {
            let s = take(&mut a, 0);
            a.map[s as usize] = 1;
        }
        a.map[200] = 0;
        a.release(200);
        a.map[100] = SWAP_HAS_CACHE;
        a.scan.cluster_next = 50;
        a.scan.cluster_nr = 10;
        a
    }

    #[test]
    fn scan_swap_map_of_2_6_28_never_reuses_cache_only_slots() {
        let mut a = full_but_cache_only_100_and_free_200(HDD_2_6_28);
        assert_eq!(a.scan_alloc(0, true), Some(Claim::Free(200)), "2.6.28 has no SWAP_HAS_CACHE reuse");
        let mut a = full_but_cache_only_100_and_free_200(HDD_2_6_32);
        assert_eq!(a.scan_alloc(0, true), Some(Claim::CacheOnly(100)));
    }

    /// Slots 1..=1000 allocated, then 10..=200 freed (a hole shorter than SWAPFILE_CLUSTER)
    /// and the cursor's run used up: the next allocation searches for a free run.
    fn hole_shorter_than_a_cluster(era: AllocEra, slots: u32) -> SwapArea {
        let mut a = area(slots, "hdd", 1, era);
        for _ in 0..1000 {
            take(&mut a, 0);
        }
        for s in 10..=200 {
            free(&mut a, s);
        }
        a.scan.cluster_nr = 0;
        a
    }

    #[test]
    fn hdd_without_a_free_run_goes_on_from_lowest_bit() {
        // 1100 slots: 99 free at the end, 191 in the hole, no run of 256. The search began at
        // lowest_bit, so the allocation goes on from there, not from the cursor (1001).
        for era in [HDD_2_6_28, HDD_2_6_32, AllocEra::PerCpuCluster, AllocEra::SlotsCache] {
            let mut a = hole_shorter_than_a_cluster(era, 1100);
            let next: Vec<u32> = (0..3).map(|_| take(&mut a, 0)).collect();
            assert_eq!(next, [10, 11, 12], "{era:?}");
        }
    }

    #[test]
    fn hdd_short_of_a_cluster_stays_at_the_cursor_after_2_6_28_and_goes_lowest_in_2_6_28() {
        // 1010 slots: 9 free at the end + 191 in the hole = 200 < SWAPFILE_CLUSTER: no search.
        let mut a = hole_shorter_than_a_cluster(HDD_2_6_32, 1010);
        assert_eq!(take(&mut a, 0), 1001, "2.6.29+: goto checks at cluster_next");
        let mut a = hole_shorter_than_a_cluster(HDD_2_6_28, 1010);
        assert_eq!(take(&mut a, 0), 10, "2.6.28: goto lowest");
    }

    #[test]
    fn hdd_sequential_swap_out_gets_ascending_contiguous_slots_from_lowest_bit() {
        for era in [HDD_2_6_28, HDD_2_6_32, AllocEra::PerCpuCluster] {
            let mut a = area(4096, "hdd", 2, era);
            // Two CPUs alternate: on a disk they share the one cursor.
            let got: Vec<u32> = (0..600).map(|i| take(&mut a, i % 2)).collect();
            assert_eq!(got, (1..=600).collect::<Vec<u32>>(), "{era:?}");
        }
    }
}
