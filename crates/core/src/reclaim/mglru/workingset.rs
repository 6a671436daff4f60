//! MGLRU shadows and refaults (kernel-algorithms.md §5.9; `lru_gen_eviction`,
//! `lru_gen_refault` in mm/workingset.c). A shadow holds the token `(min_seq << 2) |
//! max(refs - 1, 0)` and the workingset bit; a refault is "recent" while its generation is
//! still the oldest (6.1-6.13) or within `MAX_NR_GENS` of `max_seq` (6.14+), and feeds the PID
//! controller's refaulted count of its tier. No refault distance and no nonresident age.

use super::lists::*;
use super::{order_base_2, Era, MgLru};
use crate::mm::*;
use crate::reclaim::RefaultCtx;

/// Marks a shadow as valid (a zero entry is "no shadow").
const SHADOW_VALID: u32 = 1 << 31;
/// The token's bits kept in a shadow (`EVICTION_MASK`): 2 refs bits and 28 of the sequence.
const TOKEN_BITS: u32 = 30;
const TOKEN_MASK: u64 = (1 << TOKEN_BITS) - 1;
const SEQ_MASK: u64 = TOKEN_MASK >> 2;

impl MgLru {
    /// `lru_gen_eviction`: count the eviction in the folio's tier, return its shadow.
    pub(super) fn lru_gen_eviction(&mut self, fr: &Frame, anon: bool) -> u32 {
        let ty = (!anon) as usize;
        let (refs, tier) = self.refs_and_tier(fr);
        let token = ((self.min_seq[ty] << 2) | refs.saturating_sub(1) as u64) & TOKEN_MASK;
        self.pid.evicted[ty][tier] += 1;
        self.ws_atomics[0] += 1; // atomic_long_add(delta, &lrugen->evicted[hist][type][tier])
        let ws = match self.era {
            // 6.1-6.13 packs `refs` as the workingset flag: any fd or workingset reference.
            Era::V6_1 => refs > 0,
            Era::V6_14 => fr.has(PG_WORKINGSET),
        };
        SHADOW_VALID | ((token as u32) << 1) | ws as u32
    }

    /// `lru_gen_refault`: a recent refault counts in its tier; in a fault (6.1) or with the
    /// workingset bit (6.14+) the folio comes back as workingset.
    pub(super) fn lru_gen_refault(&mut self, ctx: RefaultCtx<'_>, f: u32, shadow: u32, anon: bool) {
        if shadow & SHADOW_VALID == 0 {
            return;
        }
        let ty = (!anon) as usize;
        let token = ((shadow & !SHADOW_VALID) >> 1) as u64;
        let ws = shadow & 1 != 0;
        let seq = token >> 2;
        let vm = ctx.vm;
        let fr = &mut ctx.frames[f as usize];
        match self.era {
            Era::V6_1 => {
                if seq != self.min_seq[ty] & SEQ_MASK {
                    return;
                }
                let refs = (token & 3) as u32 + ws as u32;
                self.pid.refaulted[ty][order_base_2(refs + 1)] += 1;
                self.ws_atomics[1] += 1; // atomic_long_add(delta, &lrugen->refaulted[..])
                count(vm, anon, Counter::Refault);
                // Hot pages pushed out by hotter ones, or fd references out of range: stalls.
                if ctx.in_fault || refs == 4 {
                    fr.flags |= PG_WORKINGSET;
                    count(vm, anon, Counter::Restore);
                }
            }
            Era::V6_14 => {
                count(vm, anon, Counter::Refault);
                let max_seq = self.max_seq & SEQ_MASK;
                let distance = max_seq.wrapping_sub(seq) & SEQ_MASK;
                if distance >= MAX_NR_GENS as u64 {
                    return;
                }
                let refs = (token & 3) as u32 + 1;
                let tier = if ws { super::pid::MAX_NR_TIERS - 1 } else { order_base_2(refs) };
                self.pid.refaulted[ty][tier] += 1;
                self.ws_atomics[1] += 1;
                if ctx.in_fault {
                    count(vm, anon, Counter::Activate);
                }
                if ws {
                    fr.flags |= PG_WORKINGSET;
                    count(vm, anon, Counter::Restore);
                } else {
                    fr.flags |= PG_REFERENCED;
                    set_refs_counter(fr, refs - 1);
                }
            }
        }
    }
}

enum Counter {
    Refault,
    Activate,
    Restore,
}

fn count(vm: &mut crate::stats::VmStat, anon: bool, c: Counter) {
    let x = match (c, anon) {
        (Counter::Refault, true) => &mut vm.workingset_refault_anon,
        (Counter::Refault, false) => &mut vm.workingset_refault_file,
        (Counter::Activate, true) => &mut vm.workingset_activate_anon,
        (Counter::Activate, false) => &mut vm.workingset_activate_file,
        (Counter::Restore, true) => &mut vm.workingset_restore_anon,
        (Counter::Restore, false) => &mut vm.workingset_restore_file,
    };
    *x += 1;
}
