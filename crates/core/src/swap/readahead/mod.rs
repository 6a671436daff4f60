//! Swap-in readahead policies (kernel-algorithms.md §1.2-§1.6), one file per policy behind
//! [`SwapReadahead`].
//!
//! Contract. On a swap-cache miss the engine asks [`SwapReadahead::window`] which pages to read
//! besides the target; the policy answers with slots on the target's device (offset-based
//! family) or a range of virtual pages of the faulting VMA (VMA family). The engine then reads
//! every page of the window that is swapped out and not cached, in ascending order inside one
//! block plug, marks the non-target pages PG_readahead and counts `swap_ra` (§1.2.2). On every
//! swap-cache hit the engine calls [`SwapReadahead::on_cache_hit`] with whether the page still
//! carried PG_readahead, after counting `swap_ra_hit` (§1.4). Policies only keep their own
//! state (the global window of §1.3, the per-VMA word of §1.5); they never touch memory.
//!
//! Adding a policy: one file here, one line in [`build`], one golden test in tests/golden.rs.

mod adaptive;
mod fixed;
mod none;
mod vma;

pub use adaptive::Adaptive;
pub use fixed::Fixed;
pub use none::NoReadahead;
pub use vma::VmaReadahead;

/// What the engine knows about a fault when it asks for a window.
#[derive(Clone, Copy, Debug)]
pub struct FaultCtx<'a> {
    /// Slot of the faulting page on its device.
    pub offset: u32,
    /// The device's swap map (to find holes / in-use runs).
    pub map: &'a [u8],
    pub page_cluster: u32,
    /// Faulting virtual page and the VMA's bounds [start, end) in virtual pages.
    pub fault_vpn: u64,
    pub vma_start: u64,
    pub vma_end: u64,
    /// shmem faults have no VMA readahead: they always use the offset-based path (§1.5/§1.6).
    pub shmem: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Window {
    /// Read only the faulting page.
    TargetOnly,
    /// Slots lo..=hi of the target's device (aligned block, §1.2).
    Slots { lo: u32, hi: u32 },
    /// Virtual pages [start, end) of the faulting VMA (§1.5).
    Virtual { start: u64, end: u64 },
}

pub trait SwapReadahead: Send {
    /// Registry name (`kernel.readahead`).
    fn name(&self) -> &'static str;
    /// Window for a swap-cache miss. `vma_ra_info` is the faulting VMA's packed state word.
    fn window(&mut self, ctx: &FaultCtx, vma_ra_info: &mut u64) -> Window;
    /// A swap-cache lookup found a page; `was_ra` = it had PG_readahead (now cleared).
    fn on_cache_hit(&mut self, was_ra: bool, shmem: bool, vma_ra_info: &mut u64, fault_vpn: u64);
    /// Does a fault of this kind use the one window every CPU shares (the adaptive
    /// `swapin_nr_pages` state of §1.3) rather than per-VMA or no state?
    fn global_window(&self, _shmem: bool) -> bool {
        false
    }
}

/// `__swapin_nr_pages` (§1.3): the window from the hit count, with the optional "don't shrink
/// too fast" floor of the 3.14 merge (`prev_win / 2`).
pub fn window_size(prev_off: u64, off: u64, hits: u64, max_pages: u64, prev_win: u64, floor: bool) -> u64 {
    let mut pages = hits + 2;
    if pages == 2 {
        if off != prev_off.wrapping_add(1) && off != prev_off.wrapping_sub(1) {
            pages = 1;
        }
    } else {
        let mut r = 4;
        while r < pages {
            r *= 2;
        }
        pages = r;
    }
    pages = pages.min(max_pages);
    if floor {
        pages = pages.max(prev_win / 2);
    }
    pages
}

/// Build the policy named by `kernel.readahead` after profile resolution.
pub fn build(name: &str) -> Box<dyn SwapReadahead> {
    match name {
        "none" => Box::new(NoReadahead),
        "fixed" => Box::new(Fixed::skip_holes()),
        "fixed-run" => Box::new(Fixed::contiguous_run()),
        "adaptive" => Box::new(Adaptive::new(true)),
        "adaptive-2012" => Box::new(Adaptive::new(false)),
        "vma" => Box::new(VmaReadahead::new()),
        other => panic!("readahead policy {other:?} passed validation but is not registered"),
    }
}

/// The aligned block of `n` slots containing `off`, skipping the header slot and clamped to
/// the device (§1.2.2).
pub fn aligned_block(off: u32, n: u64, slots: usize) -> (u32, u32) {
    let mask = (n - 1) as u32;
    let lo = (off & !mask).max(1);
    let hi = (off | mask).min(slots as u32 - 1);
    (lo, hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_size_table_of_1_3() {
        // hits -> pages before clamps: 0 -> 1 or 2; 1 -> 4; 2 -> 4; 3..6 -> 8; 7..14 -> 16.
        assert_eq!(window_size(10, 50, 0, 8, 0, false), 1);
        assert_eq!(window_size(49, 50, 0, 8, 0, false), 2);
        assert_eq!(window_size(51, 50, 0, 8, 0, false), 2);
        assert_eq!(window_size(0, 50, 1, 8, 0, false), 4);
        assert_eq!(window_size(0, 50, 2, 8, 0, false), 4);
        assert_eq!(window_size(0, 50, 3, 8, 0, false), 8);
        assert_eq!(window_size(0, 50, 7, 32, 0, false), 16);
        assert_eq!(window_size(0, 50, 7, 8, 0, false), 8, "clamped to max_pages");
    }

    #[test]
    fn dont_shrink_too_fast_halves_instead_of_collapsing() {
        assert_eq!(window_size(0, 50, 0, 8, 8, true), 4);
        assert_eq!(window_size(0, 50, 0, 8, 4, true), 2);
        assert_eq!(window_size(0, 50, 0, 8, 2, true), 1);
        assert_eq!(window_size(0, 50, 0, 8, 8, false), 1, "the 2012 original collapses at once");
    }

    #[test]
    fn aligned_block_skips_header_and_clamps() {
        assert_eq!(aligned_block(3, 8, 100), (1, 7));
        assert_eq!(aligned_block(13, 8, 100), (8, 15));
        assert_eq!(aligned_block(97, 8, 100), (96, 99));
    }
}
