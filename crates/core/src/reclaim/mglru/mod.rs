//! The multi-generational LRU (seed 004; kernel-algorithms.md §5; `CONFIG_LRU_GEN` in
//! mm/vmscan.c, `lru_gen_*` in include/linux/mm_inline.h, mm/workingset.c, mm/swap.c).
//!
//! Folios are grouped by *generation* per type (anon, file): `max_seq` (shared) is the
//! youngest, `min_seq[type]` the oldest, 2..=4 generations exist per type (`MIN_NR_GENS`,
//! `MAX_NR_GENS`). *Aging* (`age.rs`) makes a new generation: it walks the page tables of
//! every mm (skipping PTE tables the double-buffered Bloom filters say have no young PTEs)
//! and promotes folios with young PTEs to `max_seq` by rewriting their gen bits only.
//! *Eviction* (`evict.rs`) takes folios from the oldest generation of the type the refault
//! PID controller (`pid.rs`) picks, protects the tiers that refault more (tiers are
//! `order_base_2` of fd accesses), and hands the rest to the shared page-out path, whose rmap
//! walk looks around every young PTE it meets (`lru_gen_look_around`). Shadows carry the
//! generation and tier (`workingset.rs`); `lists.rs` holds the eight (gen, type) lists.
//!
//! # Eras
//! The kernel profile selects the era: "6.1" .. "6.13" is the 2022 design as merged
//! (`Era::V6_1`), "6.x" / "6.14"+ the Dec 2024 rework (`Era::V6_14`, §5.11 lists the
//! differences). Every rule that differs says which era it belongs to.
//!
//! # Model decisions
//! - One node, one zone, one lruvec (no memcg LRU of lruvecs: `shrink_many` reduces to
//!   `shrink_one`); `NR_HIST_GENS` = 1 (no `CONFIG_LRU_GEN_STATS`).
//! - "In a fault" (`lru_gen_in_fault`) is told by the engine: `folio_add` is called from
//!   faults, `folio_add_outside_fault` from `read()`/`write()`.
//! - Dirty file folios are isolated and the page-out path treats them as for the classic LRU
//!   (marked for immediate reclaim and the flusher woken when a batch is all unqueued dirty:
//!   reclaim/pageout.rs), standing in for `sort_folio` moving them on and the flusher
//!   wake-up of `try_to_shrink_lruvec`; only folios under writeback are sorted to wait.
//! - The accessed bit of a non-leaf PMD (cap 0x4) is the OR of its PTEs' bits: the hardware
//!   sets it on every walk through it, which every touch that sets a PTE's bit implies.
//! - `set_initial_priority` is not modelled: the reclaim drivers own the priority.

mod age;
mod evict;
pub mod lists;
pub mod pid;
mod workingset;

use super::{LruGenRmap, LruPolicy, RefaultCtx, ScanControl};
use crate::config::Resolved;
use crate::engine::Sim;
use crate::mm::*;
use crate::stats::VmStat;
use lists::*;
use pid::Pid;

/// `MIN_NR_GENS`: eviction needs at least this many generations.
pub const MIN_NR_GENS: u64 = 2;
/// `MAX_LRU_BATCH` (`MIN_LRU_BATCH` x 64): the most folios one `scan_folios` looks at.
pub const MAX_LRU_BATCH: u64 = pid::MIN_LRU_BATCH * 64;
/// Capability bits of `/sys/kernel/mm/lru_gen/enabled`.
pub const CAP_MM_WALK: u32 = 0x2;
pub const CAP_NONLEAF_YOUNG: u32 = 0x4;

/// Which kernel's MGLRU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Era {
    /// 6.1-6.13: the design as merged in 2022.
    V6_1,
    /// 6.14+: the Dec 2024 rework (tiers, promotion, type selection, `lru_gen_folio_seq`).
    V6_14,
}

impl Era {
    /// From `kernel.profile`: "6.N" with N <= 13 is the first era, anything else 6.x the rework.
    pub fn of_profile(profile: &str) -> Era {
        match profile.strip_prefix("6.").and_then(|m| m.parse::<u32>().ok()) {
            Some(m) if m <= 13 => Era::V6_1,
            _ => Era::V6_14,
        }
    }
}

/// What ends `lru_gen_shrink_lruvec`'s eviction loop before the pass's share
/// (`total >> priority`) is scanned (kernel-algorithms.md §5.5). It changed twice after the
/// merge, inside the 6.1-6.13 era; the kernel profile's minor version picks it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AbortRule {
    /// 6.1-6.2 `should_abort_scan` (f76c83378851 "mm: multi-gen LRU: optimize multiple
    /// memcgs"): a direct reclaimer stops once its goal is met only if it evicted anon
    /// ("over-swapping can increase allocation latency") or aged the lruvec twice; kswapd not
    /// before its goal; nobody at priorities 12 and 11; below, once the zones are above the
    /// reclaimer's watermark (kswapd: high, direct: low).
    Fairness,
    /// 6.3-6.7 `get_nr_to_reclaim` (a579086c99ed "remove eviction fairness safeguard"):
    /// global reclaim stops at its goal, memcg reclaim never.
    Goal,
    /// 6.8+ `should_abort_scan` (5095a2b23987 "mm/mglru: try to stop at high watermarks"):
    /// global reclaim stops at its goal, kswapd also once the zones are above high + 64;
    /// memcg reclaim never.
    HighWmark,
}

impl AbortRule {
    pub fn of_profile(profile: &str) -> AbortRule {
        match profile.strip_prefix("6.").and_then(|m| m.parse::<u32>().ok()) {
            Some(1..=2) => AbortRule::Fairness,
            Some(3..=7) => AbortRule::Goal,
            _ => AbortRule::HighWmark,
        }
    }
}

/// What the aging walk and look-around did (debugfs `lru_gen_full`'s mm stats and more).
#[derive(Clone, Debug, Default)]
pub struct WalkStats {
    pub walks: u64,
    pub pmds_walked: u64,
    /// PTE tables the Bloom filter rejected (`MM_NONLEAF_FOUND` not reached).
    pub pmds_skipped_bloom: u64,
    /// PTE tables whose non-leaf PMD was old (cap 0x4).
    pub pmds_skipped_nonleaf: u64,
    pub ptes_walked: u64,
    pub young_found: u64,
    pub promoted: u64,
    pub bloom_added: u64,
    pub look_arounds: u64,
    pub min_ttl_ooms: u64,
}

/// The generations, their lists and the controller of the one lruvec (`struct lru_gen_folio`).
pub struct MgLru {
    era: Era,
    abort: AbortRule,
    caps: u32,
    swappiness: u64,
    min_ttl_ns: u64,
    lists: GenLists,
    /// `nr_pages[gen][type]` by logical generation.
    nr_pages: [[u64; 2]; MAX_NR_GENS],
    max_seq: u64,
    min_seq: [u64; 2],
    /// When each generation was made (ns of simulated time).
    timestamps: [u64; MAX_NR_GENS],
    pid: Pid,
    /// The two Bloom filters, `filters[seq % 2]`; `None` (never allocated) admits everything.
    bloom: [Option<age::Bloom>; 2],
    /// The newest time reclaim told us (for timestamps made without a clock at hand).
    now: u64,
    pub walk: WalkStats,
    /// Atomic adds to `lrugen->evicted[]` and `lrugen->refaulted[]` (workingset_lines.rs).
    ws_atomics: [u64; 2],
}

impl MgLru {
    pub fn new(cfg: &Resolved) -> MgLru {
        let k = &cfg.config.kernel;
        MgLru {
            era: Era::of_profile(&k.profile),
            abort: AbortRule::of_profile(&k.profile),
            caps: k.lru_gen_enabled,
            swappiness: k.swappiness as u64,
            min_ttl_ns: k.lru_gen_min_ttl_ms * 1_000_000,
            lists: GenLists::default(),
            nr_pages: [[0; 2]; MAX_NR_GENS],
            // Initial state: max_seq = MIN_NR_GENS + 1, min_seq = 0 (lru_gen_init_lruvec).
            max_seq: MIN_NR_GENS + 1,
            min_seq: [0; 2],
            timestamps: [0; MAX_NR_GENS],
            pid: Pid::default(),
            bloom: [None, None],
            now: 0,
            walk: WalkStats::default(),
            ws_atomics: [0; 2],
        }
    }

    fn nr_gens(&self, ty: usize) -> u64 {
        self.max_seq - self.min_seq[ty] + 1
    }

    /// The entry sequence of a folio being added (`lru_gen_add_folio`).
    fn entry_seq(&self, fr: &Frame, reclaiming: bool) -> u64 {
        let ty = type_of(fr);
        let anon_new = ty == 0 && !fr.has(PG_SWAPCACHE);
        let reclaim_io = fr.has(PG_RECLAIM) && (fr.has(PG_DIRTY) || fr.has(PG_WRITEBACK));
        match self.era {
            // 6.1-6.13: active -> max_seq; new anon or reclaim I/O -> min_seq + 1; else min_seq.
            Era::V6_1 => {
                if fr.has(PG_ACTIVE) {
                    self.max_seq
                } else if anon_new || reclaim_io {
                    self.min_seq[ty] + 1
                } else {
                    self.min_seq[ty]
                }
            }
            // 6.14+ `lru_gen_folio_seq` (§5.3), clamped to min_seq.
            Era::V6_14 => {
                let ws = fr.has(PG_WORKINGSET) as u64;
                let g = if fr.has(PG_ACTIVE) {
                    MIN_NR_GENS - ws
                } else if reclaiming {
                    MAX_NR_GENS as u64
                } else if anon_new || reclaim_io {
                    MIN_NR_GENS
                } else {
                    MAX_NR_GENS as u64 - ws
                };
                (self.max_seq + 1 - g).max(self.min_seq[ty])
            }
        }
    }

    /// `lru_gen_add_folio`: place by flags (PG_active is consumed), head or tail when
    /// `reclaiming`. `in_fault`: `folio_add_lru` sets PG_active for folios added in a fault.
    fn add_folio(&mut self, frames: &mut [Frame], f: u32, reclaiming: bool, in_fault: bool) {
        let fr = &mut frames[f as usize];
        if in_fault {
            fr.flags |= PG_ACTIVE;
        }
        let ty = type_of(fr);
        let seq = self.entry_seq(fr, reclaiming);
        let gen = (seq % MAX_NR_GENS as u64) as usize;
        fr.flags &= !PG_ACTIVE;
        set_gen(fr, Some(gen));
        self.nr_pages[gen][ty] += 1;
        let l = list_index(gen, ty);
        if reclaiming {
            self.lists.add_tail(frames, f, l);
        } else {
            self.lists.add_head(frames, f, l);
        }
    }

    /// `lru_gen_del_folio`: off its list, out of its generation's count.
    fn del_folio(&mut self, frames: &mut [Frame], f: u32) {
        let fr = &mut frames[f as usize];
        let gen = gen_of(fr).expect("del_folio: folio in no generation");
        let ty = type_of(fr);
        set_gen(fr, None);
        self.nr_pages[gen][ty] -= 1;
        self.lists.remove(frames, f);
    }

    /// Move a folio's logical generation (`lru_gen_update_size` with the gen bits rewritten).
    fn update_gen(&mut self, fr: &mut Frame, new_gen: usize) {
        let old = gen_of(fr).expect("update_gen: folio in no generation");
        let ty = type_of(fr);
        self.nr_pages[old][ty] -= 1;
        self.nr_pages[new_gen][ty] += 1;
        set_gen(fr, Some(new_gen));
    }

    /// `folio_lru_refs` and the tier (`lru_tier_from_refs`) of a folio, per era.
    fn refs_and_tier(&self, fr: &Frame) -> (u32, usize) {
        let ws = fr.has(PG_WORKINGSET);
        match self.era {
            // counter + PG_workingset; tier = order_base_2(refs + 1).
            Era::V6_1 => {
                let refs = refs_counter(fr) + ws as u32;
                (refs, order_base_2(refs + 1))
            }
            // PG_referenced ? counter + 1 : 0; tier = PG_workingset ? 3 : order_base_2(refs).
            Era::V6_14 => {
                let refs = if fr.has(PG_REFERENCED) { refs_counter(fr) + 1 } else { 0 };
                (refs, if ws { pid::MAX_NR_TIERS - 1 } else { order_base_2(refs) })
            }
        }
    }

    /// The time reclaim runs at: the reclaimer's clock (kswapd's or the direct reclaimer's,
    /// which may be ahead of the event loop's `sim.now`) plus what this call has spent.
    fn clock(&mut self, sc: &ScanControl) -> u64 {
        self.now = self.now.max(sc.start_clock + sc.elapsed());
        self.now
    }

    /// `get_swappiness`: 0 (file only) while free swap is below `MIN_LRU_BATCH`.
    fn swappiness_now(&self, sim: &Sim) -> u64 {
        if sim.swap.free_pages() < pid::MIN_LRU_BATCH {
            0
        } else {
            self.swappiness
        }
    }
}

/// `order_base_2`: ceil(log2(n)), 0 for n <= 1.
pub fn order_base_2(n: u32) -> usize {
    if n <= 1 {
        0
    } else {
        (32 - (n - 1).leading_zeros()) as usize
    }
}

impl LruPolicy for MgLru {
    fn name(&self) -> &'static str {
        "mglru"
    }

    fn folio_add(&mut self, frames: &mut [Frame], f: u32) {
        self.add_folio(frames, f, false, true);
    }

    fn folio_add_outside_fault(&mut self, frames: &mut [Frame], f: u32) {
        self.add_folio(frames, f, false, false);
    }

    fn folio_del(&mut self, frames: &mut [Frame], f: u32) {
        self.del_folio(frames, f);
    }

    /// `lru_gen_inc_refs` (6.1-6.13 `folio_inc_refs`): the folio stays in its generation.
    fn mark_accessed(&mut self, frames: &mut [Frame], f: u32, _vm: &mut VmStat) {
        let fr = &mut frames[f as usize];
        if !fr.has(PG_REFERENCED) {
            fr.flags |= PG_REFERENCED;
            return;
        }
        let n = refs_counter(fr);
        match self.era {
            // 2nd access sets PG_workingset, later ones count up to 3.
            Era::V6_1 => {
                if !fr.has(PG_WORKINGSET) {
                    fr.flags |= PG_WORKINGSET;
                } else if n < 3 {
                    set_refs_counter(fr, n + 1);
                }
            }
            // Later accesses count up to 3; once saturated, PG_workingset.
            Era::V6_14 => {
                if n < 3 {
                    set_refs_counter(fr, n + 1);
                } else {
                    fr.flags |= PG_WORKINGSET;
                }
            }
        }
    }

    /// `lru_move_tail`: the oldest generation's tail (`reclaiming`).
    fn rotate_reclaimable(&mut self, frames: &mut [Frame], f: u32, vm: &mut VmStat) {
        self.del_folio(frames, f);
        self.add_folio(frames, f, true, false);
        vm.pgrotated += 1;
    }

    /// As vmstat reports MGLRU: the two youngest generations are "active" (`lru_gen_is_active`).
    fn lru_sizes(&self) -> [u64; 4] {
        let mut out = [0u64; 4];
        let young = [(self.max_seq % 4) as usize, ((self.max_seq - 1) % 4) as usize];
        for gen in 0..MAX_NR_GENS {
            for ty in 0..2 {
                let active = young.contains(&gen);
                out[LruList::of(ty == 0, active) as usize] += self.nr_pages[gen][ty];
            }
        }
        out
    }

    /// `lru_gen_shrink_node` (§5.10): one lruvec, so `shrink_one` is `try_to_shrink_lruvec`.
    fn shrink_node(&mut self, sim: &mut Sim, sc: &mut ScanControl) {
        self.try_to_shrink_lruvec(sim, sc);
    }

    fn kswapd_age(&mut self, sim: &mut Sim, sc: &mut ScanControl) {
        self.lru_gen_age_node(sim, sc);
    }

    fn reclaim_cycle_end(&mut self, _vm: &VmStat) {}

    fn eviction_shadow(&mut self, frames: &[Frame], f: u32, anon: bool) -> u32 {
        self.lru_gen_eviction(&frames[f as usize], anon)
    }

    fn refault(&mut self, ctx: RefaultCtx<'_>, f: u32, shadow: u32, anon: bool) {
        self.lru_gen_refault(ctx, f, shadow, anon);
    }

    fn workingset_atomics(&self) -> [u64; 2] {
        self.ws_atomics
    }

    fn check(&self, frames: &[Frame]) -> Vec<String> {
        let mut errs = self.lists.check_links(frames);
        let mut per_gen = [[0u64; 2]; MAX_NR_GENS];
        for (i, fr) in frames.iter().enumerate() {
            match (GenLists::list_of(fr), gen_of(fr)) {
                (Some(l), Some(g)) => {
                    let ty = type_of(fr);
                    per_gen[g][ty] += 1;
                    if !fr.has(PG_INUSE) {
                        errs.push(format!("free frame {i} is on a generation list"));
                    }
                    if l % 2 != ty {
                        errs.push(format!("frame {i} is on a list of the wrong type"));
                    }
                    let seq_ok = (self.min_seq[ty]..=self.max_seq).any(|s| (s % 4) as usize == g);
                    if !seq_ok {
                        errs.push(format!("frame {i} is in generation {g}, outside min_seq {}..=max_seq {}", self.min_seq[ty], self.max_seq));
                    }
                }
                (None, None) => {}
                (l, g) => errs.push(format!("frame {i}: on list {l:?} but in generation {g:?}")),
            }
        }
        if per_gen != self.nr_pages {
            errs.push(format!("nr_pages {:?} != frames per generation {:?}", self.nr_pages, per_gen));
        }
        for ty in 0..2 {
            if self.min_seq[ty] + 1 > self.max_seq || self.nr_gens(ty) > MAX_NR_GENS as u64 {
                errs.push(format!("type {ty}: min_seq {} and max_seq {} give {} generations", self.min_seq[ty], self.max_seq, self.nr_gens(ty)));
            }
        }
        errs
    }

    fn lru_gen_rmap(&mut self) -> Option<&mut dyn LruGenRmap> {
        Some(self)
    }

    /// `lru_gen_seq_show` without `full`: from the oldest generation debugfs lists (6.1-6.13:
    /// anon's `min_seq`; 6.14+: `evictable_min_seq` at swappiness 100, the older of the two
    /// types) to `max_seq`, each with its age (`jiffies - timestamps[gen]`) and size per type.
    fn lru_gen_rows(&self, now: u64) -> Option<Vec<[u64; 4]>> {
        let first = match self.era {
            Era::V6_1 => self.min_seq[0],
            Era::V6_14 => self.min_seq[0].min(self.min_seq[1]),
        };
        let rows = (first..=self.max_seq)
            .map(|seq| {
                let gen = (seq % MAX_NR_GENS as u64) as usize;
                let age_ms = now.saturating_sub(self.timestamps[gen]) / 1_000_000;
                [seq, age_ms, self.nr_pages[gen][0], self.nr_pages[gen][1]]
            })
            .collect();
        Some(rows)
    }

    fn policy_stats(&self) -> Vec<(&'static str, u64)> {
        let w = &self.walk;
        vec![
            ("max_seq", self.max_seq),
            ("min_seq_anon", self.min_seq[0]),
            ("min_seq_file", self.min_seq[1]),
            ("walks", w.walks),
            ("pmds_walked", w.pmds_walked),
            ("pmds_skipped_bloom", w.pmds_skipped_bloom),
            ("pmds_skipped_nonleaf", w.pmds_skipped_nonleaf),
            ("ptes_walked", w.ptes_walked),
            ("young_found", w.young_found),
            ("promoted", w.promoted),
            ("bloom_added", w.bloom_added),
            ("look_arounds", w.look_arounds),
            ("min_ttl_ooms", w.min_ttl_ooms),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_base_2_is_ceil_log2() {
        let got: Vec<usize> = (0..=5).map(order_base_2).collect();
        assert_eq!(got, vec![0, 0, 1, 2, 2, 3]);
    }

    #[test]
    fn era_follows_the_profile_minor_version() {
        assert_eq!(Era::of_profile("6.1"), Era::V6_1);
        assert_eq!(Era::of_profile("6.13"), Era::V6_1);
        assert_eq!(Era::of_profile("6.14"), Era::V6_14);
        assert_eq!(Era::of_profile("6.x"), Era::V6_14);
    }

    #[test]
    fn abort_rule_follows_the_profile_minor_version() {
        assert_eq!(AbortRule::of_profile("6.1"), AbortRule::Fairness);
        assert_eq!(AbortRule::of_profile("6.2"), AbortRule::Fairness);
        assert_eq!(AbortRule::of_profile("6.3"), AbortRule::Goal);
        assert_eq!(AbortRule::of_profile("6.7"), AbortRule::Goal);
        assert_eq!(AbortRule::of_profile("6.8"), AbortRule::HighWmark);
        assert_eq!(AbortRule::of_profile("6.x"), AbortRule::HighWmark);
    }
}
