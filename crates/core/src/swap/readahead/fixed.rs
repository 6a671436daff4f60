//! Fixed page-cluster window, before the adaptive detector (kernel-algorithms.md §1.2.1).
//!
//! The window is the aligned block of `1 << page_cluster` slots around the faulting slot.
//! Two historical variants:
//! * `fixed-run` (2.6.x `valid_swaphandles`): only the contiguous run of in-use slots that
//!   contains the target is read;
//! * `fixed` (Rik van Riel's "skip over holes", ~3.4, the 3.6 "Vanilla" of seed 003): every
//!   in-use slot of the aligned block is read, free ones are skipped (the engine skips holes).

use super::{aligned_block, FaultCtx, SwapReadahead, Window};
use crate::swap::SWAP_MAP_BAD;

pub struct Fixed {
    contiguous_run: bool,
}

impl Fixed {
    pub fn skip_holes() -> Fixed {
        Fixed { contiguous_run: false }
    }
    pub fn contiguous_run() -> Fixed {
        Fixed { contiguous_run: true }
    }
}

impl SwapReadahead for Fixed {
    fn name(&self) -> &'static str {
        if self.contiguous_run {
            "fixed-run"
        } else {
            "fixed"
        }
    }

    fn window(&mut self, ctx: &FaultCtx, _info: &mut u64) -> Window {
        if ctx.page_cluster == 0 {
            return Window::TargetOnly;
        }
        let n = 1u64 << ctx.page_cluster.min(31);
        let (mut lo, mut hi) = aligned_block(ctx.offset, n, ctx.map.len());
        if self.contiguous_run {
            let used = |s: u32| {
                let m = ctx.map[s as usize];
                m != 0 && m != SWAP_MAP_BAD
            };
            let mut a = ctx.offset;
            while a > lo && used(a - 1) {
                a -= 1;
            }
            let mut b = ctx.offset;
            while b < hi && used(b + 1) {
                b += 1;
            }
            (lo, hi) = (a, b);
        }
        if lo == hi {
            Window::TargetOnly
        } else {
            Window::Slots { lo, hi }
        }
    }

    fn on_cache_hit(&mut self, _was_ra: bool, _shmem: bool, _info: &mut u64, _vpn: u64) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(map: &[u8], offset: u32, pc: u32) -> FaultCtx<'_> {
        FaultCtx { offset, map, page_cluster: pc, fault_vpn: 0, vma_start: 0, vma_end: 0, shmem: false }
    }

    #[test]
    fn run_variant_stops_at_holes_skip_variant_does_not() {
        // slots 8..15: used, used, free, used(target 11), used, free, used, used
        let mut map = vec![0u8; 32];
        for s in [8, 9, 11, 12, 14, 15] {
            map[s] = 1;
        }
        let mut run = Fixed::contiguous_run();
        assert_eq!(run.window(&ctx(&map, 11, 3), &mut 0), Window::Slots { lo: 11, hi: 12 });
        let mut skip = Fixed::skip_holes();
        assert_eq!(skip.window(&ctx(&map, 11, 3), &mut 0), Window::Slots { lo: 8, hi: 15 });
        assert_eq!(skip.window(&ctx(&map, 11, 0), &mut 0), Window::TargetOnly);
    }
}
