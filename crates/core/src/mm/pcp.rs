//! Per-CPU page lists (`struct per_cpu_pages`, mm/page_alloc.c): order-0 pages freed on a
//! CPU go to that CPU's list, not to the buddy allocator, and an allocation takes from its
//! CPU's list, refilling it with `batch` pages from the buddy lists when it is empty
//! (`rmqueue_bulk`). A list that reaches `high` gives its `batch` coldest pages back to the
//! buddy lists (`free_pcppages_bulk`).
//!
//! Why the model has them: the zone's free-page count that every watermark check reads
//! (`NR_FREE_PAGES`, `zone_watermark_ok`) counts buddy pages only. Pages direct reclaim has
//! just freed sit on the reclaiming CPU's list, invisible to the min-watermark check that
//! follows, until the list overflows. Before 2.6.36 (Mel Gorman's 9ee493c, "drain per-cpu
//! lists after direct reclaim allocation fails") nothing drained them for an order-0
//! allocation, so an allocation could fail right after a successful direct reclaim and the
//! allocator took its `congestion_wait(BLK_RW_ASYNC, HZ/50)` nap before reclaiming again
//! ("This leads to a process entering direct reclaim more often than it should", the
//! commit's changelog). That nap is the seed-002 guest's time in iowait (`experiments/
//! frontswap2010.toml`). The lists are modelled for the "2.6.32" profile only (see
//! `Memory::new`); later kernels drain them after a failed direct-reclaim allocation, which
//! the model's single free count already gives.
//!
//! Sizes as 2.6.32's `zone_batchsize` and `setup_pageset` set them: `batch` is about a
//! thousandth of the zone, at most 512 KiB, divided by four and rounded down to 2^n − 1 (31
//! pages for any zone of 512 MiB or more); `high` is six batches (186; Dave Hansen's
//! 2013 note "high: 186 (744kB), batch: 31 (124kB)"). The model's one zone is the machine's
//! RAM. Which CPU's list a free goes to: the CPU whose code the simulation is running
//! (`Memory::cpu`, set when a CPU runs a task); a completion frees on the CPU that ran last,
//! which is exact on the one-CPU guest the profile serves.
//!
//! One list per CPU, where 2.6.32 keeps three (one per migratetype: `free_hot_cold_page` files
//! a page under its pageblock's type, `buffered_rmqueue` takes only from the allocation's own
//! type and refills that list alone, all three counting toward one `high`). Every page the
//! model allocates or frees is a user page, `GFP_HIGHUSER_MOVABLE` in MOVABLE pageblocks, so
//! the other two lists would stay empty and the one list is what the kernel's MOVABLE list
//! holds (docs/evidence/frontswap2010.md, session 37). Nor is there a list for a ZONE_DMA:
//! the model has one zone, and 2.6.32 gives a 16 MiB DMA zone `high` 0 (`batch` 0 → pages
//! freed there go straight to its buddy lists).

/// The per-CPU lists of the one zone.
pub struct PerCpuPages {
    /// Per CPU, its free pages: the hot end (last freed, first allocated) is the vector's end.
    lists: Vec<Vec<u32>>,
    pub batch: usize,
    pub high: usize,
}

/// 2.6.32's `zone_batchsize` for a zone of `zone_pages` 4 KiB pages.
pub fn zone_batchsize(zone_pages: u64) -> usize {
    let mut batch = (zone_pages / 1024).min(512 * 1024 / super::PAGE_SIZE);
    batch = (batch / 4).max(1);
    let n = batch + batch / 2;
    // rounddown_pow_of_two(n) - 1
    let pow = 1u64 << (63 - n.leading_zeros());
    (pow - 1).max(1) as usize
}

impl PerCpuPages {
    pub fn new(cpus: usize, zone_pages: u64) -> PerCpuPages {
        let batch = zone_batchsize(zone_pages);
        PerCpuPages { lists: vec![Vec::new(); cpus], batch, high: 6 * batch }
    }

    /// Pages held on all lists.
    pub fn len(&self) -> usize {
        self.lists.iter().map(Vec::len).sum()
    }

    /// No page on any list.
    pub fn is_empty(&self) -> bool {
        self.lists.iter().all(Vec::is_empty)
    }

    /// Every page held on a list.
    pub fn frames(&self) -> impl Iterator<Item = u32> + '_ {
        self.lists.iter().flatten().copied()
    }

    /// Take a page for `cpu`, refilling its list with up to `batch` pages from `buddy` first
    /// if it is empty (`buffered_rmqueue` → `rmqueue_bulk`). None when both are empty.
    pub fn alloc(&mut self, cpu: usize, buddy: &mut Vec<u32>) -> Option<u32> {
        let list = &mut self.lists[cpu];
        if list.is_empty() {
            let n = self.batch.min(buddy.len());
            // rmqueue_bulk keeps the buddy lists' order: the page the buddy allocator would
            // have handed out first is the next allocated.
            list.extend(buddy.drain(buddy.len() - n..));
        }
        list.pop()
    }

    /// Free a page on `cpu` (`free_hot_cold_page`, hot). Returns how many pages went back to
    /// `buddy` (`free_pcppages_bulk` of the list's `batch` coldest once it reached `high`).
    pub fn free(&mut self, cpu: usize, f: u32, buddy: &mut Vec<u32>) -> usize {
        let list = &mut self.lists[cpu];
        list.push(f);
        if list.len() < self.high {
            return 0;
        }
        let n = self.batch.min(list.len());
        buddy.extend(list.drain(..n));
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2.6.32 sizes: 31/186 from 512 MiB up (the cap), smaller zones get 2^n − 1 batches.
    #[test]
    fn batch_and_high_match_zone_batchsize() {
        assert_eq!(zone_batchsize(196_608), 31, "768 MiB zone (seed 002's guest)");
        assert_eq!(zone_batchsize(32 << 20), 31, "128 GiB: capped at 512 KiB");
        assert_eq!(zone_batchsize(32_768), 7, "128 MiB: 32/4 = 8, 8+4 → 8 − 1");
        assert_eq!(zone_batchsize(100), 1);
        assert_eq!(PerCpuPages::new(1, 196_608).high, 186);
    }

    /// A free past `high` hands the `batch` coldest pages to the buddy lists; an allocation
    /// from an empty list takes a batch from them and returns the hottest page.
    #[test]
    fn frees_overflow_in_batches_and_allocations_refill() {
        let mut p = PerCpuPages::new(1, 196_608);
        let mut buddy: Vec<u32> = Vec::new();
        for f in 0..185 {
            assert_eq!(p.free(0, f, &mut buddy), 0);
        }
        assert_eq!(p.free(0, 185, &mut buddy), 31);
        assert_eq!(buddy, (0..31).collect::<Vec<_>>(), "the coldest (first freed) go back");
        assert_eq!(p.len(), 155);
        assert_eq!(p.alloc(0, &mut buddy), Some(185), "hot end first");
        let mut q = PerCpuPages::new(1, 196_608);
        let mut buddy: Vec<u32> = (0..40).collect();
        assert_eq!(q.alloc(0, &mut buddy), Some(39), "refilled with 31 of the buddy's 40, in the buddy's order");
        assert_eq!((buddy.len(), q.len()), (9, 30));
    }
}
