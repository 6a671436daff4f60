//! Workingset refault detection for the classic LRU (kernel-algorithms.md §4).
//!
//! One nonresident-age clock (one lruvec: one node, the workload's memcg) counts evictions
//! plus activations. An evicted page leaves a shadow with the clock's value; on refault the
//! distance (clock now - clock then) is compared with the pages competing for residence, and a
//! recent refault is activated at once.

use super::ClassicLru;
use crate::mm::*;
use crate::reclaim::RefaultCtx;

/// The eviction clock's bits kept in a shadow.
const AGE_MASK: u64 = (1 << 30) - 1;
/// Marks a shadow as valid (a zero entry is "no shadow").
const SHADOW_VALID: u32 = 1 << 31;

impl ClassicLru {
    /// `workingset_eviction`: the shadow for a folio leaving the page/swap cache.
    pub(super) fn workingset_eviction(&mut self, frames: &[Frame], f: u32) -> u32 {
        let ev = self.nonresident_age & AGE_MASK;
        self.age_nonresident(1);
        let ws = frames[f as usize].has(PG_WORKINGSET) as u32;
        SHADOW_VALID | ((ev as u32) << 1) | ws
    }

    /// `workingset_refault` for a folio being read back in (§4.3). Sets PG_active when the
    /// refault distance fits in the workingset, so `folio_add_lru` puts it on the active list.
    pub(super) fn workingset_refault(&mut self, ctx: RefaultCtx<'_>, f: u32, shadow: u32, anon: bool) {
        if shadow & SHADOW_VALID == 0 {
            return;
        }
        if (anon && !self.workingset_anon) || (!anon && !self.workingset_file) {
            return;
        }
        let vm = ctx.vm;
        if anon {
            vm.workingset_refault_anon += 1;
        } else {
            vm.workingset_refault_file += 1;
        }
        let ev = ((shadow & !SHADOW_VALID) >> 1) as u64;
        let was_ws = shadow & 1 != 0;
        let distance = (self.nonresident_age.wrapping_sub(ev)) & AGE_MASK;
        // lruvec_page_state: the sizes as of the last statistics flush on 6.x (flushed.rs).
        self.catch_up_stats(ctx.now, vm);
        let mut ws_size = self.stat_size(LruList::ActiveFile);
        if self.workingset_anon {
            // 5.9+: anon competes too while swap has room.
            if anon {
                ws_size += self.stat_size(LruList::InactiveFile);
            }
            if ctx.swap_free > 0 {
                ws_size += self.stat_size(LruList::ActiveAnon);
                if !anon {
                    ws_size += self.stat_size(LruList::InactiveAnon);
                }
            }
        }
        if distance > ws_size {
            return;
        }
        ctx.frames[f as usize].flags |= PG_ACTIVE;
        self.age_nonresident(1);
        if anon {
            vm.workingset_activate_anon += 1;
        } else {
            vm.workingset_activate_file += 1;
        }
        if was_ws {
            ctx.frames[f as usize].flags |= PG_WORKINGSET;
            self.lru_note_cost(anon, 1, 0);
            if anon {
                vm.workingset_restore_anon += 1;
            } else {
                vm.workingset_restore_file += 1;
            }
        }
    }
}
