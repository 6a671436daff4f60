//! The adaptive offset-based window `swapin_nr_pages` (kernel-algorithms.md §1.3), 3.14+.
//!
//! One global state shared by every process and device: the readahead hits since the last
//! decision (initially 4), the offset of the last fault that had no hits, and the last window.
//! `floor = true` is the merged 3.14 version with Shaohua Li's "don't shrink readahead too
//! fast" (`max(pages, prev_win / 2)`); `floor = false` is Hugh Dickins' Nov 2012 original.

use super::{aligned_block, window_size, FaultCtx, SwapReadahead, Window};

pub struct Adaptive {
    floor: bool,
    hits: u64,
    prev_offset: u64,
    last_readahead_pages: u64,
}

impl Adaptive {
    pub fn new(floor: bool) -> Adaptive {
        Adaptive { floor, hits: 4, prev_offset: 0, last_readahead_pages: 0 }
    }

    /// `swapin_nr_pages(offset)`.
    pub fn nr_pages(&mut self, offset: u32, page_cluster: u32) -> u64 {
        let max_pages = 1u64 << page_cluster.min(31);
        if max_pages <= 1 {
            return 1;
        }
        let hits = std::mem::take(&mut self.hits);
        let pages = window_size(self.prev_offset, offset as u64, hits, max_pages, self.last_readahead_pages, self.floor);
        if hits == 0 {
            self.prev_offset = offset as u64;
        }
        self.last_readahead_pages = pages;
        pages
    }

    pub fn cluster_window(&mut self, ctx: &FaultCtx) -> Window {
        let n = self.nr_pages(ctx.offset, ctx.page_cluster);
        if n <= 1 {
            return Window::TargetOnly;
        }
        let (lo, hi) = aligned_block(ctx.offset, n, ctx.map.len());
        if lo >= hi {
            Window::TargetOnly
        } else {
            Window::Slots { lo, hi }
        }
    }

    pub fn note_hit(&mut self) {
        self.hits += 1;
    }
}

impl SwapReadahead for Adaptive {
    fn name(&self) -> &'static str {
        if self.floor {
            "adaptive"
        } else {
            "adaptive-2012"
        }
    }
    fn window(&mut self, ctx: &FaultCtx, _info: &mut u64) -> Window {
        self.cluster_window(ctx)
    }
    fn on_cache_hit(&mut self, was_ra: bool, _shmem: bool, _info: &mut u64, _vpn: u64) {
        if was_ra {
            self.note_hit();
        }
    }
    fn global_window(&self, _shmem: bool) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(map: &[u8], offset: u32) -> FaultCtx<'_> {
        FaultCtx { offset, map, page_cluster: 3, fault_vpn: 0, vma_start: 0, vma_end: 0, shmem: false }
    }

    #[test]
    fn starts_wide_then_collapses_on_random_misses() {
        let map = vec![1u8; 1024];
        let mut a = Adaptive::new(false);
        // initial hits = 4 -> 8 pages
        assert_eq!(a.window(&ctx(&map, 100), &mut 0), Window::Slots { lo: 96, hi: 103 });
        // no hits, far away -> 1 page
        assert_eq!(a.window(&ctx(&map, 500), &mut 0), Window::TargetOnly);
        // no hits, next to the previous -> 2 pages
        assert_eq!(a.window(&ctx(&map, 501), &mut 0), Window::Slots { lo: 500, hi: 501 });
    }

    #[test]
    fn floor_decays_by_halves() {
        let map = vec![1u8; 1024];
        let mut a = Adaptive::new(true);
        let sizes: Vec<u64> = [100u32, 500, 900, 300].iter().map(|&o| a.nr_pages(o, 3)).collect();
        assert_eq!(sizes, vec![8, 4, 2, 1]);
        let _ = map;
    }
}
