//! Large page-cache folios (`pagecache.large_folios`): a file system with
//! `mapping_large_folio_support` (XFS since 5.18, ext4 since 6.16) caches a file in folios of
//! 2^order pages, and reclaim works on folios, not pages. What changes, and why it matters:
//!
//! * **Readahead** (`page_cache_ra_order`) allocates, from each aligned index of the window,
//!   the largest naturally aligned folio that fits the window and the file, up to
//!   `ilog2(window)` pages (order 5 for a 128 KiB window: a 6.18 host traced 12,279 of its
//!   12,420 readahead folios at order 5 in `host-pagecache-scan.toml`). A folio whose range
//!   holds a cached page is made smaller until it does not (the kernel's `filemap_add_folio`
//!   fails with -EEXIST and falls back to base pages). PG_readahead marks the folio that
//!   holds the window's marker.
//! * **Fault-around** (6.18 `filemap_map_pages`) maps a large folio whole: one minor fault per
//!   32-page folio instead of one per 16-page fault-around block.
//! * **Reclaim** (`isolate_lru_folios`) takes whole folios from a list's tail and counts their
//!   pages: a request for 3 pages takes a 32-page folio. `folio_referenced` counts one
//!   reference per mapping that has any young PTE of the folio; the verdict, the flags, the
//!   move to another list and the freeing are the folio's. With 32-page folios a memcg
//!   reclaim call meets its 32-page goal with one file folio at DEF_PRIORITY, so the anon
//!   list is scanned only its `size >> 12` share per call: this is why a 6.18 host scanning a
//!   file beside an anonymous working set swaps nothing at swappiness 150 (the host traced
//!   `nr_requested` 201,318 file pages and `nr_taken` 448,320).
//!
//! The model keeps a frame per page: a folio is its pages, which carry the folio's order
//! (`Frame::folio_order`), share PG_referenced / PG_active / PG_workingset, and lie together
//! on their LRU list (they are added, isolated and moved together, `Lrus::folio_run`). The
//! model's dirty and writeback state is per page, so a large folio is split into base pages
//! when one of its pages is dirtied (`write()`, a write fault, a dirty PTE found at unmap);
//! the kernel would write the folio whole. Evicted pages leave a shadow each; a refaulting
//! folio is judged by its first page's, which holds the eviction clock as it was when the
//! folio was evicted, as the kernel's one multi-index shadow does.

use crate::engine::Sim;
use crate::mm::*;

/// `MAX_PAGECACHE_ORDER` on x86-64: a PMD (2 MiB), also the xarray's limit.
pub const MAX_PAGECACHE_ORDER: u32 = 9;

/// The order of the folio readahead starts at `index` of a window `[.., limit]` whose largest
/// folio is `max_order`: aligned to `index`, within the window (and so the file).
pub fn ra_folio_order(index: u64, limit: u64, max_order: u32) -> u32 {
    let mut order = max_order.min(index.trailing_zeros());
    while order > 0 && index + (1u64 << order) - 1 > limit {
        order -= 1;
    }
    order
}

/// The largest folio order of a readahead window of `nr` pages (`ilog2(ra->size)`).
pub fn window_max_order(nr: u64) -> u32 {
    if nr == 0 {
        0
    } else {
        (63 - nr.leading_zeros()).min(MAX_PAGECACHE_ORDER)
    }
}

impl Sim {
    /// The page-cache pages of the large folio holding page-cache frame `f`, in index order
    /// (`[f]` for a base page).
    pub(crate) fn folio_frames(&self, f: u32) -> Vec<u32> {
        let fr = self.mem.frames[f as usize];
        let order = fr.folio_order();
        if order == 0 {
            return vec![f];
        }
        let head = (fr.index as u64) & !((1u64 << order) - 1);
        let entries = &self.mem.objects[fr.owner as usize].entries;
        (head..head + (1 << order)).map(|i| pte_frame(entries[i as usize])).collect()
    }

    /// The first page of `f`'s folio: where the folio's PG_readahead is kept.
    pub(crate) fn folio_head(&self, f: u32) -> u32 {
        let fr = self.mem.frames[f as usize];
        let order = fr.folio_order();
        if order == 0 {
            return f;
        }
        let head = (fr.index as u64) & !((1u64 << order) - 1);
        pte_frame(self.mem.objects[fr.owner as usize].entries[head as usize])
    }

    /// Split `f`'s large folio into base pages (their flags and places on the LRU stay).
    pub(crate) fn split_folio(&mut self, f: u32) {
        for p in self.folio_frames(f) {
            let fr = &mut self.mem.frames[p as usize];
            fr.flags &= !FOLIO_ORDER_MASK;
        }
    }

    /// Readahead's next folio at `index` (not cached) of a window ending at `limit`: the order
    /// `ra_folio_order` gives, made smaller while its range holds a cached page.
    pub(crate) fn ra_folio_order_at(&self, obj: usize, index: u64, limit: u64, max_order: u32) -> u32 {
        let mut order = ra_folio_order(index, limit, max_order);
        let entries = &self.mem.objects[obj].entries;
        while order > 0 && (index..index + (1u64 << order)).any(|i| entries[i as usize] & PTE_PRESENT != 0) {
            order -= 1;
        }
        order
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readahead_folios_are_aligned_and_fit_the_window() {
        assert_eq!(window_max_order(32), 5);
        assert_eq!(window_max_order(48), 5);
        assert_eq!(window_max_order(1 << 12), MAX_PAGECACHE_ORDER);
        // A 32-page window at 0: one order-5 folio; at 16: aligned only to 16.
        assert_eq!(ra_folio_order(0, 31, 5), 5);
        assert_eq!(ra_folio_order(16, 47, 5), 4);
        // The end of the window (or file) shrinks the last folio.
        assert_eq!(ra_folio_order(32, 39, 5), 3);
        assert_eq!(ra_folio_order(33, 63, 5), 0);
    }
}
