//! CPU time of reclaim and aging by category: the ledger every reclaim path charges.
//!
//! A kernel engineer profiling kswapd (`perf record -g -p $(pgrep kswapd0)`) sees its time
//! split among a few call chains: the reverse-map walk (`folio_referenced` →
//! `page_vma_mapped_walk`), MGLRU's page-table walk (`walk_mm`) and Bloom filters, LRU list
//! work under `lru_lock`, unmapping with its TLB flush, compression (zram / zswap) and the
//! block layer (`submit_bio`). The simulator charges every nanosecond of reclaim CPU to one of
//! these categories at the place it is spent, through `CpuCost::charge`, whatever the policy
//! (classic or MGLRU) or the store (none, frontswap, zswap): the sum over the categories is
//! exactly the time added to the reclaimer's clock, so the table is a profile and not an
//! estimate made afterwards.
//!
//! Decisions:
//! * The categories are an enum, not strings, so a new charging site cannot invent a
//!   category by a typo; the JSON and table names come from `CpuCategory::name`.
//! * MGLRU's look-around (`lru_gen_look_around`, run from inside the rmap walk) scans PTEs:
//!   its PTEs are page-table-walk time and its filter update Bloom-filter time, as they use
//!   the same cost parameters as the aging walk. The rmap walk itself is `rmap_walk_ns` per
//!   VMA it visits, in `folio_referenced` and in `try_to_unmap` alike (both run
//!   `page_vma_mapped_walk` per VMA; a folio shared by fork is looked for in every VMA of its
//!   anon_vma tree until all its mappings are found, mm/anon_vma.rs).
//! * Three costs are not in the list but are CPU that reclaim spends: swap slot
//!   allocation (`folio_alloc_swap`), freeing (`__remove_mapping`, shadow store, free) and the
//!   copy of a synchronous RAM device that does not compress (brd copies inside
//!   `submit_bio`, in its `make_request`: the block layer's dispatch stage). They are named
//!   categories too, so that the categories add up to the whole.
//! * The block layer is five categories, one per stage a request goes through
//!   (device/blk.rs): bio allocation, plug and merge, request allocation and tag, dispatch,
//!   completion interrupt and softirq — each the device's named per-request cost.
//! * Waiting for `lru_lock` is spinning, so it is CPU: its own category (`lru_lock`, with the
//!   cache-line hand-off), apart from the work done under the lock (`lru_ops`); so is waiting
//!   for 2.6.28's `anon_vma->lock` (`anon_vma_lock`), apart from the walk under it (`rmap_walk`).
//! * The shootdown of other CPUs' TLB entries after unmapping is its own category
//!   (`tlb_shootdown`: sending the IPIs and waiting for the acks), apart from clearing the
//!   PTEs (`unmap_tlb_flush`); what the IPIs cost the CPUs they interrupt is charged to the
//!   tasks running there, not to the reclaimer.
//! * Sleeping (congestion_wait, writeback throttling) is not CPU and is never charged here.

use serde::ser::{Serialize, SerializeMap, Serializer};

/// Where a reclaimer's CPU time went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuCategory {
    /// `page_vma_mapped_walk` from `folio_referenced` and `try_to_unmap`: one visit per VMA.
    RmapWalk,
    /// MGLRU aging's `walk_mm` / `walk_pte_range`, and the look-around's PTEs.
    PageTableWalk,
    /// MGLRU's Bloom-filter tests and updates.
    BloomFilter,
    /// Isolating, sorting and putting back folios on the LRU lists under `lru_lock`.
    LruOps,
    /// Taking the lruvec's `lru_lock`: spinning while other CPUs hold it, and pulling its
    /// cache line from the last holder (reclaim/lru_lock.rs).
    LruLock,
    /// `try_to_unmap`: clearing the PTEs and the local TLB entry.
    Unmap,
    /// Flushing other CPUs' TLBs after unmapping: the IPIs sent and the wait for their acks
    /// (reclaim/tlb_flush.rs). The interrupted CPUs' cost is theirs, not the reclaimer's.
    TlbShootdown,
    /// Swap slot allocation (`folio_alloc_swap`).
    SwapAlloc,
    /// `__remove_mapping` and freeing the page.
    FreePage,
    /// Compressing a page: zram's write, zswap's store.
    Compression,
    /// Block layer, stage 1: `bio_alloc` and filling the bio (`get_swap_bio`).
    BlkBioAlloc,
    /// Stage 2: `submit_bio` into the task's plug and the merge attempts there.
    BlkPlugMerge,
    /// Stage 3: request allocation and its tag (`blk_mq_get_request` / `get_request`).
    BlkRequestAlloc,
    /// Stage 4: dispatch through the I/O scheduler to the driver (`queue_rq`); brd's copy.
    BlkDispatch,
    /// Stage 5: the completion interrupt and block softirq (`blk_mq_complete_request`,
    /// `bio_endio`, `end_swap_bio_*`).
    BlkCompletion,
    /// The classic `shrink_node`'s `mem_cgroup_flush_stats()` (5.15-6.1,
    /// reclaim/rstat_flush.rs): the walk of every CPU's rstat updates.
    MemcgFlush,
    /// Spinning on 2.6.28's `anon_vma->lock`, held by another reclaimer's rmap walk of the
    /// same anon_vma (reclaim/anon_vma_lock.rs). The walk under it is `rmap_walk`.
    AnonVmaLock,
}

impl CpuCategory {
    pub const ALL: [CpuCategory; 17] = [
        CpuCategory::RmapWalk,
        CpuCategory::PageTableWalk,
        CpuCategory::BloomFilter,
        CpuCategory::LruOps,
        CpuCategory::LruLock,
        CpuCategory::Unmap,
        CpuCategory::TlbShootdown,
        CpuCategory::SwapAlloc,
        CpuCategory::FreePage,
        CpuCategory::Compression,
        CpuCategory::BlkBioAlloc,
        CpuCategory::BlkPlugMerge,
        CpuCategory::BlkRequestAlloc,
        CpuCategory::BlkDispatch,
        CpuCategory::BlkCompletion,
        CpuCategory::MemcgFlush,
        CpuCategory::AnonVmaLock,
    ];

    /// The block layer's stages, in the order a request goes through them.
    pub const BLOCK_STAGES: [CpuCategory; 5] =
        [CpuCategory::BlkBioAlloc, CpuCategory::BlkPlugMerge, CpuCategory::BlkRequestAlloc, CpuCategory::BlkDispatch, CpuCategory::BlkCompletion];

    /// The key in the result JSON and the row in the table.
    pub fn name(self) -> &'static str {
        match self {
            CpuCategory::RmapWalk => "rmap_walk",
            CpuCategory::PageTableWalk => "page_table_walk",
            CpuCategory::BloomFilter => "bloom_filter",
            CpuCategory::LruOps => "lru_ops",
            CpuCategory::LruLock => "lru_lock",
            CpuCategory::Unmap => "unmap_tlb_flush",
            CpuCategory::TlbShootdown => "tlb_shootdown",
            CpuCategory::SwapAlloc => "swap_alloc",
            CpuCategory::FreePage => "free_page",
            CpuCategory::Compression => "compression",
            CpuCategory::BlkBioAlloc => "blk_bio_alloc",
            CpuCategory::BlkPlugMerge => "blk_plug_merge",
            CpuCategory::BlkRequestAlloc => "blk_request_alloc",
            CpuCategory::BlkDispatch => "blk_dispatch",
            CpuCategory::BlkCompletion => "blk_completion",
            CpuCategory::MemcgFlush => "memcg_flush",
            CpuCategory::AnonVmaLock => "anon_vma_lock",
        }
    }
}

/// Nanoseconds of CPU per category.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuCost {
    ns: [u64; CpuCategory::ALL.len()],
}

impl CpuCost {
    /// Charge `ns` nanoseconds to `cat`.
    #[inline]
    pub fn charge(&mut self, cat: CpuCategory, ns: u64) {
        self.ns[cat as usize] += ns;
    }

    /// A ledger holding `ns` in `cat` only.
    pub fn of(cat: CpuCategory, ns: u64) -> CpuCost {
        let mut c = CpuCost::default();
        c.charge(cat, ns);
        c
    }

    pub fn get(&self, cat: CpuCategory) -> u64 {
        self.ns[cat as usize]
    }

    /// The block layer's stages together.
    pub fn block_layer(&self) -> u64 {
        CpuCategory::BLOCK_STAGES.iter().map(|&c| self.get(c)).sum()
    }

    /// All categories together: the time the reclaimer's clock advances by.
    pub fn total(&self) -> u64 {
        self.ns.iter().sum()
    }

    /// Add another ledger into this one.
    pub fn add(&mut self, other: &CpuCost) {
        for (a, b) in self.ns.iter_mut().zip(other.ns.iter()) {
            *a += b;
        }
    }
}

/// A JSON object `{category: ns}` with every category, in `CpuCategory::ALL` order.
impl Serialize for CpuCost {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.ns.len()))?;
        for cat in CpuCategory::ALL {
            m.serialize_entry(cat.name(), &self.get(cat))?;
        }
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn categories_add_up_and_serialize_by_name() {
        let mut a = CpuCost::of(CpuCategory::RmapWalk, 150);
        a.charge(CpuCategory::Compression, 5_000);
        let mut b = CpuCost::of(CpuCategory::RmapWalk, 50);
        b.add(&a);
        assert_eq!(b.get(CpuCategory::RmapWalk), 200);
        assert_eq!(b.total(), 5_200);
        let json = serde_json::to_value(b).unwrap();
        assert_eq!(json["rmap_walk"], 200);
        assert_eq!(json["compression"], 5_000);
        assert_eq!(json.as_object().unwrap().len(), CpuCategory::ALL.len());
    }

    #[test]
    fn all_lists_each_category_at_its_own_index() {
        for (i, cat) in CpuCategory::ALL.iter().enumerate() {
            assert_eq!(*cat as usize, i);
        }
    }
}
