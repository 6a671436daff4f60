//! Swap devices: the swap map, the swap cache index, workingset shadows and the cluster slot
//! allocator (kernel-algorithms.md §2).
//!
//! Allocation follows the profile's era: before 6.11 `scan_swap_map(_slots)` (swap/scan_map.rs,
//! §2.4) and, 4.11 .. 6.10, the per-CPU swap slots caches (swap/slots_cache.rs); from 6.11 the modern allocator (§2.3, this file): 256-slot clusters; each CPU fills its own
//! cluster through a per-CPU cursor on non-rotational devices, rotating devices share one
//! cursor; a cursor never wraps; free clusters are taken in order, partly freed ones go back to
//! a non-full list and are rescanned from their first slot. So slot order follows reclaim
//! order per CPU, which is what makes offset-based readahead work at all.

mod cache;
pub mod io;
pub mod readahead;
pub mod scan_map;
pub mod slots_cache;
pub mod store;
pub mod token;
pub mod zram;

use crate::config::{Profile, Resolved};
use crate::device::{Device, DEVICE_STREAM};
use crate::rng::Rng;
use crate::mm::NONE;
use readahead::SwapReadahead;
use scan_map::{AllocEra, ScanState};
use std::cmp::Reverse;
use std::collections::VecDeque;

/// Everything swap: the areas (`swapon`ed devices), the order the allocator tries them in,
/// swap-in readahead, the fronting store in front of the devices, and the era's
/// synchronous-device bypass.
pub struct SwapSystem {
    pub areas: Vec<SwapArea>,
    /// Areas in allocation order (priority, then file order).
    pub order: Vec<usize>,
    pub ra: Box<dyn SwapReadahead>,
    /// The readahead policy in effect (`kernel.readahead` resolved for the era and devices).
    pub ra_name: String,
    /// SWP_SYNCHRONOUS_IO swap-in skips the swap cache (4.15+, §1.7).
    pub cache_bypass: bool,
    /// The fronting store (frontswap, zswap) every swap-out is offered to first.
    pub store: Box<dyn store::FrontingStore>,
    /// The frames the store's pool occupies (`store.pool_pages()` of them, see swap/io.rs).
    pub pool_frames: Vec<u32>,
    /// The store's writeback worker (zswap's shrink worker), if it has one.
    pub writeback_worker: Option<u32>,
    /// When the writeback worker was queued (`queue_work` by refused stores), in time order,
    /// not yet taken by a run of it (`zswap/shrinker.rs`).
    pub writeback_queued_at: std::collections::VecDeque<u64>,
    /// The worker sleeps until the request queued at this time (its timer is armed for it);
    /// None while it runs or sleeps with nothing queued.
    pub writeback_worker_waits: Option<u64>,
    /// The most frames the pool held at once.
    pub pool_frames_max: u64,
    /// The frames zram devices' pools hold (charged to no memory cgroup).
    pub zram_frames: Vec<u32>,
    /// The zswap shrinker's deferred scan count (`shrinker->nr_deferred`).
    pub shrinker_deferred: u64,
    /// 2.6.32's swap token (`token.rs`); None in the eras the model runs without it.
    pub token: Option<token::SwapToken>,
}

impl SwapSystem {
    pub fn new(cfg: &Resolved) -> SwapSystem {
        let c = &cfg.config;
        let profile = cfg.profile;
        let ncpu = c.machine.cpus as usize;
        let areas: Vec<SwapArea> = cfg
            .swap_devices
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let slots = s.size.pages() as u32;
                let rng = Rng::for_stream(c.seed, DEVICE_STREAM + i as u64);
                let mut area = SwapArea::new(&s.name, s.priority, slots, Device::new(&s.name, s.params.clone(), slots as u64, rng), ncpu);
                area.prefer_nonfull = profile >= Profile::V6;
                area.era = AllocEra::of(profile, &c.kernel.profile);
                if c.content.is_some() {
                    area.page_key = vec![0; slots as usize];
                }
                if s.params.compressed {
                    area.zram = Some(zram::Zram::new(cfg, slots));
                }
                area
            })
            .collect();
        let mut order: Vec<usize> = (0..areas.len()).collect();
        order.sort_by_key(|&i| (Reverse(areas[i].priority), i));
        let any_rotational = areas.iter().any(|s| s.rotational());
        let ra_name = crate::engine::resolve_readahead(&c.kernel.readahead, profile, c.kernel.vma_ra_enabled, any_rotational);
        SwapSystem { areas, order, ra: readahead::build(&ra_name), ra_name, cache_bypass: profile >= Profile::V4_14, store: store::build(cfg), pool_frames: Vec::new(), writeback_worker: None, writeback_queued_at: Default::default(), writeback_worker_waits: None, pool_frames_max: 0, zram_frames: Vec::new(), shrinker_deferred: 0, token: crate::config::era_2_6_32(&c.kernel.profile).then(token::SwapToken::default) }
    }

    /// Free swap slots on all areas (`get_nr_swap_pages`).
    pub fn free_pages(&self) -> u64 {
        self.areas.iter().map(|s| s.free_slots()).sum()
    }

    /// Usable slots on all areas (`total_swap_pages`; slot 0 of each holds the header).
    pub fn total_pages(&self) -> u64 {
        self.areas.iter().map(|s| s.slots as u64 - 1).sum()
    }

    /// Slots in use on all areas.
    /// Pages all zram devices' pools occupy.
    pub fn zram_pool_pages(&self) -> u64 {
        self.areas.iter().filter_map(|a| a.zram.as_ref()).map(|z| z.pool_pages()).sum()
    }

    pub fn used_pages(&self) -> u64 {
        self.areas.iter().map(|s| s.inuse).sum()
    }

    /// A slot's last reference went, freed on CPU `cpu`. While the era's slots caches are in
    /// use it waits in that CPU's return cache (`free_swap_slot`, swap/slots_cache.rs) and
    /// goes back with the next full batch; otherwise it is freed now.
    pub fn free_slot(&mut self, dev: usize, slot: u32, cpu: usize) {
        if self.areas[dev].slots_cache_in_use() {
            let batch = self.areas[dev].hold_freed_slot(cpu, slot);
            self.free_returned(dev, batch);
            return;
        }
        self.release_slot(dev, slot);
    }

    /// Slots of a return cache go back to area `dev` (`swapcache_free_entries`).
    pub fn free_returned(&mut self, dev: usize, slots: Vec<u32>) {
        for s in slots {
            self.areas[dev].unhold(s);
            self.release_slot(dev, s);
        }
    }

    /// `swap_range_free`: the fronting store forgets the page (`invalidate_page`), a zram
    /// device frees it (`swap_slot_free_notify`), the area takes the slot back.
    fn release_slot(&mut self, dev: usize, slot: u32) {
        self.store.invalidate_page(dev, slot);
        if let Some(z) = self.areas[dev].zram.as_mut() {
            z.free(slot);
        }
        self.areas[dev].release(slot);
    }
}

pub const SWAPFILE_CLUSTER: u32 = 256;
/// The swap cache holds a folio for this slot (§2.1).
pub const SWAP_HAS_CACHE: u8 = 0x40;
pub const SWAP_MAP_BAD: u8 = 0x3f;
pub const SWAP_COUNT_MASK: u8 = 0x3f;
/// The largest count the map byte holds itself; beyond it the byte keeps `SWAP_MAP_MAX` with
/// `COUNT_CONTINUED` set and the rest of the count lives in a continuation (mm/swapfile.c
/// `add_swap_count_continuation`, 2.6.34+; 2.6.28's map was an `unsigned short` whose
/// SWAP_MAP_MAX was 0x7fff). Either way a slot's count is practically unbounded: hackbench's
/// 5,600 children of one parent share its swapped pages.
pub const SWAP_MAP_MAX: u8 = 0x3e;
pub const COUNT_CONTINUED: u8 = 0x80;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ClusterState {
    Free,
    /// Owned by a CPU cursor (or the shared cursor of a rotating device).
    Current,
    NonFull,
    Full,
}

#[derive(Clone, Debug)]
pub struct SwapArea {
    pub name: String,
    pub priority: i32,
    /// `swap_map[]`: reference count | SWAP_HAS_CACHE | COUNT_CONTINUED; 0 = free.
    pub map: Vec<u8>,
    /// The count above `SWAP_MAP_MAX` of each slot whose map byte has `COUNT_CONTINUED` (the
    /// kernel's continuation pages); looked up, never iterated in run order.
    continued: std::collections::BTreeMap<u32, u32>,
    /// Swap cache index: the frame caching each slot, or NONE.
    pub cache: Vec<u32>,
    /// Workingset shadow left by the last eviction from this slot (§4.2); 0 = none.
    pub shadow: Vec<u32>,
    /// With a content model: the identity of the page each slot was allocated for
    /// (`content::page_key`), which decides how it compresses; empty without one.
    pub page_key: Vec<u64>,
    pub slots: u32,
    /// Allocated slots (map != 0), excluding the header.
    pub inuse: u64,
    cluster_count: Vec<u16>,
    cluster_state: Vec<ClusterState>,
    free_clusters: VecDeque<u32>,
    nonfull: VecDeque<u32>,
    cursor: Vec<u32>,
    /// Take partly used clusters before free ones (Kairui Song, "mm, swap: prefer nonfull over
    /// free clusters", 2025: free clusters first only for devices that discard). Earlier
    /// cluster allocators (4.x-6.1x, §2.3-§2.4) took free clusters first.
    pub prefer_nonfull: bool,
    /// Which allocator hands out slots (the profile's era).
    pub era: AllocEra,
    /// The pre-6.11 allocator's cursor, hints, per-CPU clusters and slots caches.
    scan: ScanState,
    pub device: Device,
    /// A zram device's compressed store (swap/zram.rs); None for every other device.
    pub zram: Option<zram::Zram>,
}

impl SwapArea {
    pub fn new(name: &str, priority: i32, slots: u32, device: Device, cpus: usize) -> SwapArea {
        let nclusters = slots.div_ceil(SWAPFILE_CLUSTER);
        let mut map = vec![0u8; slots as usize];
        map[0] = SWAP_MAP_BAD; // slot 0 holds the header
        let mut cluster_count = vec![0u16; nclusters as usize];
        cluster_count[0] = 1;
        // A trailing partial cluster: its missing slots count as used.
        let tail = slots % SWAPFILE_CLUSTER;
        if tail != 0 {
            cluster_count[nclusters as usize - 1] += (SWAPFILE_CLUSTER - tail) as u16;
        }
        let rotational = !device.params.queue_nonrot.unwrap_or(!device.params.rotational);
        let cursors = if rotational { 1 } else { cpus.max(1) };
        SwapArea {
            name: name.to_string(),
            priority,
            map,
            continued: std::collections::BTreeMap::new(),
            cache: vec![NONE; slots as usize],
            shadow: vec![0; slots as usize],
            page_key: Vec::new(),
            slots,
            inuse: 0,
            cluster_count,
            cluster_state: vec![ClusterState::Free; nclusters as usize],
            free_clusters: (0..nclusters).collect(),
            nonfull: VecDeque::new(),
            cursor: vec![0; cursors],
            prefer_nonfull: false,
            era: AllocEra::Clusters,
            scan: ScanState::new(slots, cpus),
            device,
            zram: None,
        }
    }

    /// Free slots as `nr_swap_pages` counts them (slots held by a slots cache are not free).
    pub fn free_slots(&self) -> u64 {
        self.slots as u64 - 1 - self.inuse - self.scan.reserved_count
    }

    /// Rotational as swap sees it: without SWP_SOLIDSTATE (the queue's QUEUE_FLAG_NONROT,
    /// `queue_nonrot`, else the device's nature).
    pub fn rotational(&self) -> bool {
        !self.device.params.queue_nonrot.unwrap_or(!self.device.params.rotational)
    }

    /// The slot's reference count (PTEs and shmem entries; the swap cache is a flag).
    #[inline]
    pub fn count(&self, slot: u32) -> u32 {
        let m = self.map[slot as usize];
        let own = (m & SWAP_COUNT_MASK) as u32;
        if m & COUNT_CONTINUED == 0 {
            own
        } else {
            own + self.continued[&slot]
        }
    }

    /// `swap_duplicate`: one more reference (a PTE copied at fork, an unmapped PTE or shmem
    /// entry at swap-out) to an allocated slot.
    pub(crate) fn swap_duplicate(&mut self, slot: u32) {
        let m = &mut self.map[slot as usize];
        debug_assert!(*m != 0 && *m != SWAP_MAP_BAD, "duplicate of unused slot {slot}");
        if *m & SWAP_COUNT_MASK < SWAP_MAP_MAX {
            *m += 1;
        } else {
            *m |= COUNT_CONTINUED;
            *self.continued.entry(slot).or_insert(0) += 1;
        }
    }

    /// Slots whose count continues beyond the map byte (for the invariant checks).
    pub fn continued_slots(&self) -> impl Iterator<Item = u32> + '_ {
        self.continued.keys().copied()
    }

    /// Drop one reference (`swap_entry_put`'s count part; the continuation goes first, as
    /// `swap_count_continued` takes it); returns the count left.
    pub(crate) fn swap_count_put(&mut self, slot: u32) -> u32 {
        let m = self.map[slot as usize];
        if m & COUNT_CONTINUED != 0 {
            let rest = self.continued.get_mut(&slot).expect("COUNT_CONTINUED without a continuation");
            *rest -= 1;
            if *rest == 0 {
                self.continued.remove(&slot);
                self.map[slot as usize] &= !COUNT_CONTINUED;
            }
        } else {
            debug_assert!(m & SWAP_COUNT_MASK > 0, "put on slot {slot} with count 0");
            self.map[slot as usize] = m - 1;
        }
        self.count(slot)
    }

    #[inline]
    pub fn in_use(&self, slot: u32) -> bool {
        let m = self.map[slot as usize];
        m != 0 && m != SWAP_MAP_BAD
    }

    /// Allocate one slot for a folio entering the swap cache with the 6.11+ allocator
    /// (`folio_alloc_swap`, order 0); the slot starts with only SWAP_HAS_CACHE set. `cpu`
    /// picks the cursor on SSDs. The older eras go through `Sim::alloc_slot` (swap/cache.rs).
    pub fn alloc(&mut self, cpu: usize) -> Option<u32> {
        debug_assert_eq!(self.era, AllocEra::Clusters);
        let c = if self.rotational() { 0 } else { cpu % self.cursor.len() };
        let cur = self.cursor[c];
        if cur != 0 {
            if let Some(s) = self.scan_cluster(cur / SWAPFILE_CLUSTER, cur, c) {
                return Some(s);
            }
        }
        if self.prefer_nonfull {
            self.alloc_from_nonfull(c).or_else(|| self.alloc_from_free(c))
        } else {
            self.alloc_from_free(c).or_else(|| self.alloc_from_nonfull(c))
        }
    }

    fn alloc_from_free(&mut self, c: usize) -> Option<u32> {
        while let Some(cl) = self.free_clusters.pop_front() {
            if self.cluster_state[cl as usize] != ClusterState::Free {
                continue;
            }
            if let Some(s) = self.scan_cluster(cl, cl * SWAPFILE_CLUSTER, c) {
                return Some(s);
            }
        }
        None
    }

    fn alloc_from_nonfull(&mut self, c: usize) -> Option<u32> {
        while let Some(cl) = self.nonfull.pop_front() {
            if self.cluster_state[cl as usize] != ClusterState::NonFull {
                continue;
            }
            if let Some(s) = self.scan_cluster(cl, cl * SWAPFILE_CLUSTER, c) {
                return Some(s);
            }
        }
        None
    }

    /// `alloc_swap_scan_cluster`: first free slot at or after `start` within the cluster.
    fn scan_cluster(&mut self, cl: u32, start: u32, c: usize) -> Option<u32> {
        let end = ((cl + 1) * SWAPFILE_CLUSTER).min(self.slots);
        let mut off = start.max(cl * SWAPFILE_CLUSTER);
        while off < end {
            if self.map[off as usize] == 0 {
                self.map[off as usize] = SWAP_HAS_CACHE;
                self.inuse += 1;
                self.cluster_count[cl as usize] += 1;
                let full = self.cluster_count[cl as usize] as u32 >= SWAPFILE_CLUSTER;
                let next = off + 1;
                if full {
                    self.cluster_state[cl as usize] = ClusterState::Full;
                    self.cursor[c] = 0;
                } else if next < end {
                    self.cluster_state[cl as usize] = ClusterState::Current;
                    self.cursor[c] = next;
                } else {
                    // The cursor ran off the end of a cluster with holes: hand it back.
                    self.cluster_state[cl as usize] = ClusterState::NonFull;
                    self.nonfull.push_back(cl);
                    self.cursor[c] = 0;
                }
                return Some(off);
            }
            off += 1;
        }
        // Nothing free from `start` on: the cursor leaves this cluster.
        let st = &mut self.cluster_state[cl as usize];
        if *st == ClusterState::Current || *st == ClusterState::Free {
            if self.cluster_count[cl as usize] as u32 >= SWAPFILE_CLUSTER {
                *st = ClusterState::Full;
            } else {
                *st = ClusterState::NonFull;
                self.nonfull.push_back(cl);
            }
        }
        self.cursor[c] = 0;
        None
    }

    /// The slot's byte dropped to 0 (`swap_range_free`): clear its shadow, return it to its
    /// cluster. The caller has already cleared the swap-cache index.
    pub fn release(&mut self, slot: u32) {
        debug_assert_eq!(self.map[slot as usize], 0);
        debug_assert_eq!(self.cache[slot as usize], NONE);
        self.shadow[slot as usize] = 0;
        self.inuse -= 1;
        if self.era != AllocEra::Clusters {
            self.count_out(slot);
            return;
        }
        let cl = (slot / SWAPFILE_CLUSTER) as usize;
        self.cluster_count[cl] -= 1;
        match self.cluster_state[cl] {
            ClusterState::Full => {
                self.cluster_state[cl] = ClusterState::NonFull;
                self.nonfull.push_back(cl as u32);
            }
            ClusterState::NonFull if self.cluster_count[cl] == (cl == 0) as u16 => {
                self.cluster_state[cl] = ClusterState::Free;
                self.free_clusters.push_back(cl as u32);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::DeviceParams;

    fn area(slots: u32, dev: &str, cpus: usize) -> SwapArea {
        SwapArea::new("t", -1, slots, Device::new(dev, DeviceParams::preset(dev).unwrap(), slots as u64, Rng::new(1)), cpus)
    }

    #[test]
    fn slots_follow_allocation_order_per_cpu() {
        let mut a = area(4096, "nvme", 2);
        let s0: Vec<u32> = (0..4).map(|_| a.alloc(0).unwrap()).collect();
        let s1: Vec<u32> = (0..4).map(|_| a.alloc(1).unwrap()).collect();
        assert_eq!(s0, vec![1, 2, 3, 4], "slot 0 is the header");
        assert_eq!(s1, vec![256, 257, 258, 259], "another CPU takes its own cluster");
    }

    #[test]
    fn rotating_device_shares_one_cursor() {
        let mut a = area(4096, "hdd", 2);
        assert_eq!(a.alloc(0), Some(1));
        assert_eq!(a.alloc(1), Some(2));
    }

    #[test]
    fn a_count_beyond_the_map_byte_continues_and_comes_back_down() {
        let mut a = area(512, "nvme", 1);
        let s = a.alloc(0).expect("a free slot");
        let sharers = 3 * SWAP_MAP_MAX as u32;
        for _ in 0..sharers {
            a.swap_duplicate(s);
        }
        assert_eq!(a.count(s), sharers);
        assert_ne!(a.map[s as usize] & COUNT_CONTINUED, 0);
        assert_ne!(a.map[s as usize] & SWAP_HAS_CACHE, 0, "the cache flag survives the continuation");
        for left in (0..sharers).rev() {
            assert_eq!(a.swap_count_put(s), left);
        }
        assert_eq!(a.map[s as usize], SWAP_HAS_CACHE, "back to a cache-only slot, no continuation left");
        assert_eq!(a.continued_slots().count(), 0);
    }

    #[test]
    fn freed_cluster_is_reused_after_exhaustion() {
        let mut a = area(512, "nvme", 1);
        let all: Vec<u32> = std::iter::from_fn(|| a.alloc(0)).collect();
        assert_eq!(all.len(), 511);
        assert_eq!(a.free_slots(), 0);
        for &s in &all[300..310] {
            a.map[s as usize] = 0;
            a.release(s);
        }
        let again: Vec<u32> = std::iter::from_fn(|| a.alloc(0)).collect();
        assert_eq!(again.len(), 10);
        assert_eq!(again[0], all[300]);
    }
}
