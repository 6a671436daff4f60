//! VMA-based swap readahead (kernel-algorithms.md §1.5), 4.14+.
//!
//! The window is computed around the faulting *virtual* page from a per-VMA state word packed
//! as the kernel packs `swap_readahead_info`: last fault address (page aligned), last window
//! (bits 6..11) and hits (bits 0..5, max 63); a zero word reads as 4 hits. The hit heuristic is
//! the adaptive one (§1.3, with the floor). The direction follows the last fault: forward,
//! backward or centred; the window is clipped to the VMA and to the 2 MiB PMD of the fault.
//! The maximum window is `1 << min(page_cluster, SWAP_RA_ORDER_CEILING = 5)`.
//!
//! shmem faults use the offset-based adaptive path ([`FaultCtx::shmem`]). While a rotating
//! swap device is on (`nr_rotate_swap`, §1.5 "don't use VMA readahead if HDD") this policy is
//! not selected at all: `engine::resolve_readahead` picks the adaptive one instead.

use super::{window_size, Adaptive, FaultCtx, SwapReadahead, Window};

pub const SWAP_RA_ORDER_CEILING: u32 = 5;
const SWAP_RA_WIN_SHIFT: u32 = 6;
const SWAP_RA_HITS_MASK: u64 = 63;
const PMD_PAGES: u64 = crate::mm::PTRS_PER_PMD;

pub struct VmaReadahead {
    cluster: Adaptive,
}

/// (last fault vpn, win, hits) from the packed word.
pub fn unpack(info: u64) -> (u64, u64, u64) {
    let info = if info == 0 { 4 } else { info };
    (info >> 12, (info >> SWAP_RA_WIN_SHIFT) & 63, info & SWAP_RA_HITS_MASK)
}

pub fn pack(vpn: u64, win: u64, hits: u64) -> u64 {
    (vpn << 12) | ((win & 63) << SWAP_RA_WIN_SHIFT) | (hits & SWAP_RA_HITS_MASK)
}

/// `swap_vma_ra_win` and the window placement: returns (win, [start, end)).
pub fn vma_window(info: &mut u64, fault_vpn: u64, vma_start: u64, vma_end: u64, page_cluster: u32) -> (u64, u64, u64) {
    let max_win = 1u64 << page_cluster.min(SWAP_RA_ORDER_CEILING);
    if max_win == 1 {
        return (1, fault_vpn, fault_vpn + 1);
    }
    let (ppfn, prev_win, hits) = unpack(*info);
    let win = window_size(ppfn, fault_vpn, hits, max_win, prev_win, true);
    *info = pack(fault_vpn, win, 0);
    if win == 1 {
        return (1, fault_vpn, fault_vpn + 1);
    }
    let (left, right) = if fault_vpn == ppfn + 1 {
        (fault_vpn, fault_vpn + win)
    } else if ppfn == fault_vpn + 1 {
        ((fault_vpn + 1).saturating_sub(win), fault_vpn + 1)
    } else {
        let h = (win - 1) / 2;
        (fault_vpn.saturating_sub(h), fault_vpn + win - h)
    };
    let pmd_lo = fault_vpn & !(PMD_PAGES - 1);
    let pmd_hi = pmd_lo + PMD_PAGES;
    let start = left.max(vma_start).max(pmd_lo);
    let end = right.min(vma_end).min(pmd_hi);
    (win, start, end)
}

impl VmaReadahead {
    pub fn new() -> VmaReadahead {
        VmaReadahead { cluster: Adaptive::new(true) }
    }
}

impl Default for VmaReadahead {
    fn default() -> Self {
        Self::new()
    }
}

impl SwapReadahead for VmaReadahead {
    fn name(&self) -> &'static str {
        "vma"
    }

    fn window(&mut self, ctx: &FaultCtx, info: &mut u64) -> Window {
        if ctx.shmem {
            return self.cluster.cluster_window(ctx);
        }
        let (win, start, end) = vma_window(info, ctx.fault_vpn, ctx.vma_start, ctx.vma_end, ctx.page_cluster);
        if win == 1 || end <= start + 1 {
            Window::TargetOnly
        } else {
            Window::Virtual { start, end }
        }
    }

    fn global_window(&self, shmem: bool) -> bool {
        shmem
    }
    fn on_cache_hit(&mut self, was_ra: bool, shmem: bool, info: &mut u64, fault_vpn: u64) {
        if shmem {
            if was_ra {
                self.cluster.note_hit();
            }
            return;
        }
        let (_, win, mut hits) = unpack(*info);
        if was_ra {
            hits = (hits + 1).min(SWAP_RA_HITS_MASK);
        }
        *info = pack(fault_vpn, win, hits);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_vma_reads_as_four_hits_and_centres_the_window() {
        let mut info = 0;
        // fresh: hits 4 -> 8 pages; prev addr 0 is not adjacent -> centred: h = 3
        let (win, s, e) = vma_window(&mut info, 1000, 512, 4096, 3);
        assert_eq!((win, s, e), (8, 997, 1005));
        assert_eq!(unpack(info), (1000, 8, 0));
    }

    #[test]
    fn forward_and_backward_directions() {
        let mut info = pack(1000, 8, 3);
        let (_, s, e) = vma_window(&mut info, 1001, 0, 1 << 20, 3);
        assert_eq!((s, e), (1001, 1009), "forward: starts at the fault");
        let mut info = pack(1000, 8, 3);
        let (_, s, e) = vma_window(&mut info, 999, 0, 1 << 20, 3);
        assert_eq!((s, e), (992, 1000), "backward: ends at the fault");
    }

    #[test]
    fn clipped_to_vma_and_pmd() {
        let mut info = pack(1000, 8, 3);
        let (_, s, e) = vma_window(&mut info, 1001, 0, 1004, 3);
        assert_eq!((s, e), (1001, 1004), "VMA end");
        let mut info = pack(1022, 8, 3);
        let (_, s, e) = vma_window(&mut info, 1023, 0, 1 << 20, 3);
        assert_eq!((s, e), (1023, 1024), "PMD boundary at 1024");
        let mut info = pack(1025, 8, 3);
        let (_, s, e) = vma_window(&mut info, 1024, 0, 1 << 20, 3);
        assert_eq!((s, e), (1024, 1025), "backward stops at the PMD start");
        let mut info = 0;
        let (_, s, _) = vma_window(&mut info, 3, 2, 100, 3);
        assert_eq!(s, 2, "VMA start");
    }

    #[test]
    fn page_cluster_is_capped_at_the_order_ceiling() {
        let mut info = pack(1000, 8, 40);
        let (win, _, _) = vma_window(&mut info, 1001, 0, 1 << 20, 10);
        assert_eq!(win, 32);
    }

    #[test]
    fn hits_saturate_and_address_updates_on_every_hit() {
        let mut ra = VmaReadahead::new();
        let mut info = pack(10, 8, 63);
        ra.on_cache_hit(true, false, &mut info, 11);
        assert_eq!(unpack(info), (11, 8, 63));
        ra.on_cache_hit(false, false, &mut info, 12);
        assert_eq!(unpack(info), (12, 8, 63));
    }
}
