//! Aging (kernel-algorithms.md §5.4, §5.8): `try_to_inc_max_seq` with the page-table walk
//! over every mm (`walk_mm`, `walk_pmd_range`, `walk_pte_range`, `suitable_to_scan`) and the
//! double-buffered Bloom filters of PTE tables worth walking, `inc_max_seq`, `inc_min_seq`,
//! `try_to_inc_min_seq`, the look-around of the rmap walk (`lru_gen_look_around`), and
//! kswapd's `lru_gen_age_node` with the `min_ttl_ms` OOM.

use super::lists::*;
use super::pid::MIN_LRU_BATCH;
use super::{Era, MgLru, CAP_MM_WALK, CAP_NONLEAF_YOUNG, MIN_NR_GENS};
use crate::config::{Costs, MappingKind};
use crate::engine::{Sim, TState, TaskKind};
use crate::mm::*;
use crate::reclaim::{LruGenRmap, ScanControl, DEF_PRIORITY};
use crate::stats::{CpuCategory, CpuCost};

/// Bloom filter size: `BLOOM_FILTER_SHIFT` 15, m = 2^15 bits, k = 2.
const BLOOM_FILTER_SHIFT: u32 = 15;
/// `suitable_to_scan`'s n: PTEs per cache line (64 / 8), clamped to 2..=8.
const PTES_PER_CACHELINE: u64 = 8;
/// `MIN_LRU_BATCH` PTEs around a young one are looked at (±32 pages).
const LOOK_AROUND_PTES: u64 = MIN_LRU_BATCH;

/// One Bloom filter of PTE tables (keyed by VMA and PMD index).
#[derive(Clone)]
pub struct Bloom(Box<[u64; 1 << (BLOOM_FILTER_SHIFT - 6)]>);

impl Bloom {
    fn new() -> Bloom {
        Bloom(Box::new([0; 1 << (BLOOM_FILTER_SHIFT - 6)]))
    }

    /// `get_item_key`: a 30-bit hash of the PTE table split into two 15-bit indices.
    fn keys(vma: u32, pmd: u64) -> [usize; 2] {
        let item = ((vma as u64) << 32) ^ pmd;
        let h = (item.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - 2 * BLOOM_FILTER_SHIFT)) as usize;
        let mask = (1 << BLOOM_FILTER_SHIFT) - 1;
        [h & mask, (h >> BLOOM_FILTER_SHIFT) & mask]
    }

    fn test(&self, vma: u32, pmd: u64) -> bool {
        Self::keys(vma, pmd).iter().all(|&k| self.0[k / 64] & (1 << (k % 64)) != 0)
    }

    fn add(&mut self, vma: u32, pmd: u64) {
        for k in Self::keys(vma, pmd) {
            self.0[k / 64] |= 1 << (k % 64);
        }
    }
}

/// `suitable_to_scan`: at least one young PTE per cache line on average.
fn suitable_to_scan(total: u64, young: u64) -> bool {
    young * PTES_PER_CACHELINE >= total
}

impl MgLru {
    /// `test_bloom_filter` for the walk of `seq`: a filter never made admits everything.
    fn bloom_test(&self, seq: u64, vma: u32, pmd: u64) -> bool {
        self.bloom[(seq % 2) as usize].as_ref().is_none_or(|b| b.test(vma, pmd))
    }

    fn bloom_add(&mut self, seq: u64, vma: u32, pmd: u64) {
        if let Some(b) = self.bloom[(seq % 2) as usize].as_mut() {
            b.add(vma, pmd);
            self.walk.bloom_added += 1;
        }
    }

    /// A young PTE seen by the walk or look-around: promote its folio (`folio_update_gen`);
    /// an isolated folio gets PG_referenced for `shrink_folio_list`.
    fn promote(&mut self, fr: &mut Frame) {
        if gen_of(fr).is_none() {
            fr.flags |= PG_REFERENCED;
            return;
        }
        let new_gen = (self.max_seq % 4) as usize;
        match self.era {
            // 6.1-6.13: any young PTE promotes to max_seq; ref bits cleared.
            Era::V6_1 => fr.flags &= !(REFS_MASK | REFS_FLAGS),
            // 6.14+: the first sighting only sets PG_referenced; a later one promotes and
            // marks the folio workingset (§5.2).
            Era::V6_14 => {
                if !fr.has(PG_REFERENCED) && !fr.has(PG_WORKINGSET) {
                    fr.flags |= PG_REFERENCED;
                    return;
                }
                fr.flags = (fr.flags & !(REFS_MASK | PG_REFERENCED)) | PG_WORKINGSET;
            }
        }
        if gen_of(fr) != Some(new_gen) {
            self.update_gen(fr, new_gen);
            self.walk.promoted += 1;
        }
    }

    /// `try_to_inc_max_seq`: walk the page tables (cap 0x2) and make a new generation.
    pub(super) fn try_to_inc_max_seq(&mut self, sim: &mut Sim, sc: &mut ScanControl, seq: u64, s: u64, force_scan: bool) -> bool {
        if seq != self.max_seq {
            return false; // someone else aged already
        }
        if self.caps & CAP_MM_WALK != 0 {
            self.walk_mms(sim, s, force_scan, &mut sc.cost);
        }
        let now = self.clock(sc);
        self.inc_max_seq(&mut sim.mem.frames, s, now);
        true
    }

    /// One iteration over the mm list: reset the filter for `max_seq + 1`, walk each mm.
    fn walk_mms(&mut self, sim: &mut Sim, s: u64, force_scan: bool, cost: &mut CpuCost) {
        let next = (self.max_seq + 1) % 2;
        self.bloom[next as usize] = Some(Bloom::new());
        self.walk.walks += 1;
        // A VMA the threads of a process share (config `shared`) is walked once: it is one
        // VMA of one mm in the kernel.
        let mut walked = vec![false; sim.mem.vmas.len()];
        let alive = sim.live_processes();
        for t in 0..sim.tasks.len() {
            let task = &sim.tasks[t];
            // A thread that exited leaves its mappings in the mm while the process lives.
            let gone = task.state == TState::Done && !alive.get(task.mm as usize).copied().unwrap_or(false);
            if task.kind != TaskKind::User || task.state == TState::New || gone {
                continue;
            }
            // should_skip_mm: too small to matter.
            let rss: u64 = task.vmas.iter().map(|&v| sim.mem.vmas[v as usize].rss).sum();
            if rss < MIN_LRU_BATCH && !force_scan {
                continue;
            }
            for i in 0..sim.tasks[t].vmas.len() {
                let v = sim.tasks[t].vmas[i];
                if !std::mem::replace(&mut walked[v as usize], true) {
                    self.walk_vma(&mut sim.mem, &sim.costs, v, s, force_scan, cost);
                }
            }
        }
    }

    /// `walk_pmd_range` over one VMA (skipped by `should_skip_vma`: anon and shmem when
    /// swappiness is 0).
    fn walk_vma(&mut self, mem: &mut Memory, costs: &Costs, v: u32, s: u64, force_scan: bool, cost: &mut CpuCost) {
        let kind = mem.vmas[v as usize].kind;
        if s == 0 && matches!(kind, MappingKind::Anon | MappingKind::Shmem) {
            return;
        }
        let seq = self.max_seq;
        let n = mem.vmas[v as usize].ptes.len() as u64;
        for pmd in 0..n.div_ceil(PTRS_PER_PMD) {
            let range = (pmd * PTRS_PER_PMD) as usize..((pmd + 1) * PTRS_PER_PMD).min(n) as usize;
            if self.caps & CAP_NONLEAF_YOUNG != 0 && !force_scan {
                let young_pmd = mem.vmas[v as usize].ptes[range.clone()].iter().any(|&p| p & PTE_PRESENT != 0 && p & PTE_ACCESSED != 0);
                if !young_pmd {
                    self.walk.pmds_skipped_nonleaf += 1;
                    continue;
                }
            }
            cost.charge(CpuCategory::BloomFilter, costs.bloom_test_ns);
            if !force_scan && !self.bloom_test(seq, v, pmd) {
                self.walk.pmds_skipped_bloom += 1;
                continue;
            }
            self.walk.pmds_walked += 1;
            let (total, young) = self.walk_pte_range(mem, v, range);
            cost.charge(CpuCategory::PageTableWalk, total * costs.pt_walk_pte_ns);
            if suitable_to_scan(total, young) {
                // Carry over to the next generation's walk.
                self.bloom_add(seq + 1, v, pmd);
                cost.charge(CpuCategory::BloomFilter, costs.bloom_test_ns);
            }
        }
    }

    /// `walk_pte_range`: clear young PTEs and promote their folios; returns (PTEs, young).
    fn walk_pte_range(&mut self, mem: &mut Memory, v: u32, range: std::ops::Range<usize>) -> (u64, u64) {
        let total = range.len() as u64;
        let mut young = 0;
        for i in range {
            let pte = mem.vmas[v as usize].ptes[i];
            if pte & PTE_PRESENT == 0 || pte & PTE_ZERO != 0 || pte & PTE_ACCESSED == 0 {
                continue;
            }
            mem.vmas[v as usize].ptes[i] = pte & !PTE_ACCESSED;
            young += 1;
            self.promote(&mut mem.frames[pte_frame(pte) as usize]);
        }
        self.walk.ptes_walked += total;
        self.walk.young_found += young;
        (total, young)
    }

    /// `inc_max_seq`: with all four generations in use, force the oldest forward first.
    fn inc_max_seq(&mut self, frames: &mut [Frame], s: u64, now: u64) {
        for ty in [1usize, 0] {
            if self.nr_gens(ty) == MAX_NR_GENS as u64 {
                self.inc_min_seq(frames, ty, s);
            }
        }
        self.timestamps[((self.max_seq + 1) % 4) as usize] = now;
        self.max_seq += 1;
    }

    /// `inc_min_seq`: move what is left in the oldest generation one up (to the tail), then
    /// advance `min_seq[ty]` with the controller's carry-over. Anon that cannot be swapped
    /// stays where it is (its generation becomes the youngest). The kernel moves
    /// `MAX_LRU_BATCH` folios per lock hold; here the whole list moves at once.
    fn inc_min_seq(&mut self, frames: &mut [Frame], ty: usize, s: u64) {
        if !(ty == 0 && s == 0) {
            let old_gen = (self.min_seq[ty] % 4) as usize;
            let l = list_index(old_gen, ty);
            loop {
                let f = self.lists.tail(l);
                if f == NONE {
                    break;
                }
                let fr = &mut frames[f as usize];
                // 6.14+: what is moved counts as protected in its tier, except lazily
                // promoted workingset folios.
                if self.era == Era::V6_14 && gen_of(fr) == Some(old_gen) {
                    let (refs, tier) = self.refs_and_tier(fr);
                    if !(refs == 4 && fr.has(PG_WORKINGSET)) {
                        self.pid.protected[ty][tier] += 1;
                    }
                }
                let new_gen = self.folio_inc_gen(fr, false);
                self.lists.move_to(frames, f, list_index(new_gen, ty), true);
            }
        }
        self.pid.carry_over(self.era, ty);
        self.min_seq[ty] += 1;
    }

    /// `try_to_inc_min_seq` after eviction: step `min_seq` past empty oldest lists. Returns
    /// whether any advanced.
    pub(super) fn try_to_inc_min_seq(&mut self, s: u64) -> bool {
        let mut min_seq = self.min_seq;
        for ty in Self::evictable_types(s) {
            while min_seq[ty] + MIN_NR_GENS <= self.max_seq && self.lists.is_empty(list_index((min_seq[ty] % 4) as usize, ty)) {
                min_seq[ty] += 1;
            }
        }
        if s > 0 {
            match self.era {
                // 6.1-6.13: anon never ahead of file, file never behind anon (one min_seq
                // for eviction order between the types).
                Era::V6_1 => {
                    min_seq[0] = min_seq[0].min(min_seq[1]);
                    min_seq[1] = min_seq[0].max(self.min_seq[1]);
                }
                // 6.14+: independent, but neither passes max_seq - 2 while the other is
                // behind it (no hot/cold inversion between the types).
                Era::V6_14 => {
                    let limit = self.max_seq - MIN_NR_GENS;
                    for ty in 0..2 {
                        if min_seq[ty] > limit && min_seq[1 - ty] < limit {
                            min_seq[ty] = limit.max(self.min_seq[ty]);
                        }
                    }
                }
            }
        }
        let mut advanced = false;
        for ty in Self::evictable_types(s) {
            if min_seq[ty] != self.min_seq[ty] {
                self.pid.carry_over(self.era, ty);
                self.min_seq[ty] = min_seq[ty];
                advanced = true;
            }
        }
        advanced
    }

    /// `lru_gen_age_node` (kswapd, each `balance_pgdat` iteration): 6.1-6.13 ages here
    /// (`age_lruvec`); both eras invoke the OOM killer when `min_ttl_ms` is set and the oldest
    /// generation is younger than it.
    pub(super) fn lru_gen_age_node(&mut self, sim: &mut Sim, sc: &mut ScanControl) {
        let s = self.swappiness_now(sim);
        let now = self.clock(sc);
        let oldest = match self.era {
            Era::V6_1 => self.min_seq[1],
            Era::V6_14 => self.evictable_min_seq(s),
        };
        let birth = self.timestamps[(oldest % 4) as usize];
        let young_working_set = self.min_ttl_ns > 0 && now < birth + self.min_ttl_ns;
        let reclaimable = match self.era {
            // 6.1-6.13 `age_lruvec`: too young, or (with min_ttl) too small to help, is not
            // reclaimable; otherwise age if `should_run_aging` says so.
            Era::V6_1 => {
                let (age, nr) = self.should_run_aging(s, sc.priority);
                let too_small = self.min_ttl_ns > 0 && nr == 0 && sc.priority != DEF_PRIORITY;
                let ok = !young_working_set && !too_small;
                if ok && age {
                    self.try_to_inc_max_seq(sim, sc, self.max_seq, s, false);
                }
                ok
            }
            // 6.14+: no aging here; reclaimable when sizable (`lruvec_is_sizable`) and old enough.
            Era::V6_14 => {
                let evictable: u64 = Self::evictable_types(s).map(|ty| (0..MAX_NR_GENS).map(|g| self.nr_pages[g][ty]).sum::<u64>()).sum();
                (evictable >> sc.priority) > 0 && !young_working_set
            }
        };
        if !reclaimable && self.min_ttl_ns > 0 {
            self.walk.min_ttl_ooms += 1;
            sc.oom = true;
        }
    }
}

impl LruGenRmap for MgLru {
    /// 6.1-6.13: "folio_update_gen() tried to promote this page?" — a mapped folio that
    /// look-around marked referenced is kept without another rmap walk.
    fn keep_before_rmap(&mut self, frame: &Frame, mapped: bool) -> bool {
        self.era == Era::V6_1 && mapped && frame.has(PG_REFERENCED)
    }

    /// `lru_gen_look_around`: up to 64 PTEs around the young one (clipped to its PMD and
    /// VMA), promoted like the walk does; a dense table goes into the Bloom filter of
    /// `max_seq` for the next walk.
    fn look_around(&mut self, mem: &mut Memory, costs: &Costs, v: u32, index: u32, cost: &mut CpuCost) {
        self.walk.look_arounds += 1;
        let n = mem.vmas[v as usize].ptes.len() as u64;
        let i = index as u64;
        let pmd = i / PTRS_PER_PMD;
        let (mut start, mut end) = (pmd * PTRS_PER_PMD, ((pmd + 1) * PTRS_PER_PMD).min(n));
        if end - start > LOOK_AROUND_PTES {
            let half = LOOK_AROUND_PTES / 2;
            if i - start < half {
                end = start + LOOK_AROUND_PTES;
            } else if end - i < half {
                start = end - LOOK_AROUND_PTES;
            } else {
                start = i - half;
                end = i + half;
            }
        }
        // The young PTE itself was cleared by the rmap walk; its folio is isolated.
        let mut young = 1;
        for j in start..end {
            let pte = mem.vmas[v as usize].ptes[j as usize];
            if j == i || pte & PTE_PRESENT == 0 || pte & PTE_ZERO != 0 || pte & PTE_ACCESSED == 0 {
                continue;
            }
            mem.vmas[v as usize].ptes[j as usize] = pte & !PTE_ACCESSED;
            young += 1;
            self.promote(&mut mem.frames[pte_frame(pte) as usize]);
        }
        let total = end - start;
        self.walk.young_found += young;
        cost.charge(CpuCategory::PageTableWalk, total * costs.pt_walk_pte_ns);
        if self.caps & CAP_MM_WALK != 0 && suitable_to_scan(total, young) {
            self.bloom_add(self.max_seq, v, pmd);
            cost.charge(CpuCategory::BloomFilter, costs.bloom_test_ns);
        }
    }

    /// `folio_check_references` under MGLRU: 6.1-6.13 activates a folio with a young PTE
    /// (look-around marked it referenced); 6.14+ `lru_gen_set_refs` keeps it the first time
    /// and activates it (workingset) the next. No young PTE: reclaim.
    fn referenced_verdict(&mut self, frame: &mut Frame, young: u32) -> Option<bool> {
        if young == 0 {
            return None;
        }
        match self.era {
            Era::V6_1 => {
                frame.flags |= PG_REFERENCED;
                Some(true)
            }
            Era::V6_14 => {
                if !frame.has(PG_REFERENCED) && !frame.has(PG_WORKINGSET) {
                    frame.flags |= PG_REFERENCED;
                    Some(false)
                } else {
                    frame.flags |= PG_WORKINGSET;
                    Some(true)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{self, MappingKind};
    use crate::reclaim::LruPolicy;

    const CFG: &str = "[machine]\nram = \"32MiB\"\nkernel_reserved = \"4MiB\"\n[kernel]\nprofile = \"6.1\"\nreclaim = \"mglru\"\nlru_gen_enabled = 3\n[[swap]]\ndevice = \"nvme\"\nsize = \"64MiB\"\n[[task]]\nname = \"t\"\n[[task.mapping]]\nname = \"m\"\nkind = \"anon\"\nsize = \"4MiB\"\n[[task.phase]]\nmapping = \"m\"\npattern = \"sequential\"\n";

    /// One anonymous VMA of four PTE tables, every page resident and on the generation lists.
    fn setup() -> (MgLru, Memory) {
        let r = config::load(CFG, "test.toml", &[]).expect("test config loads");
        let mut p = MgLru::new(&r);
        let mut mem = Memory::new(&r);
        let n = 4 * PTRS_PER_PMD as usize;
        let mut ptes = vec![0u64; n];
        for (i, pte) in ptes.iter_mut().enumerate() {
            let f = i as u32;
            let fr = &mut mem.frames[i];
            fr.flags |= PG_INUSE | PG_SWAPBACKED;
            fr.set_owner(Owner::Anon, 0, i as u32);
            p.folio_add_outside_fault(&mut mem.frames, f);
            *pte = PTE_PRESENT | f as u64;
        }
        mem.vmas.push(Vma { task: 0, kind: MappingKind::Anon, start_vpn: 0, ptes, object: NONE, ra_info: 0, rss: n as u64, swapents: 0, exec: false, content_key: 0, anon_vma: NONE, tree_pos: 0, forked: false });
        (p, mem)
    }

    fn touch(mem: &mut Memory, pages: std::ops::Range<usize>) {
        for i in pages {
            mem.vmas[0].ptes[i] |= PTE_ACCESSED;
        }
    }

    #[test]
    fn aging_skips_tables_the_bloom_filter_rejects_and_counts_them() {
        let (mut p, mut mem) = setup();
        let costs = Costs::default();
        // First walk: no filter yet, every table is walked; only table 0 is dense.
        touch(&mut mem, 0..PTRS_PER_PMD as usize);
        touch(&mut mem, 2 * PTRS_PER_PMD as usize..2 * PTRS_PER_PMD as usize + 3);
        p.bloom[((p.max_seq + 1) % 2) as usize] = Some(Bloom::new());
        let mut cost = CpuCost::default();
        p.walk_vma(&mut mem, &costs, 0, 60, false, &mut cost);
        assert_eq!((p.walk.pmds_walked, p.walk.pmds_skipped_bloom), (4, 0));
        // Four tests, one carry-over update (table 0); every PTE walked is page-table time.
        assert_eq!(cost.get(CpuCategory::BloomFilter), 5 * costs.bloom_test_ns);
        assert_eq!(cost.get(CpuCategory::PageTableWalk), p.walk.ptes_walked * costs.pt_walk_pte_ns);
        assert_eq!(cost.total(), cost.get(CpuCategory::BloomFilter) + cost.get(CpuCategory::PageTableWalk));
        p.inc_max_seq(&mut mem.frames, 60, 1);
        // Second walk: tables 0 and 2 have young PTEs, but only table 0 is in the filter.
        touch(&mut mem, 0..4);
        touch(&mut mem, 2 * PTRS_PER_PMD as usize..2 * PTRS_PER_PMD as usize + 3);
        p.bloom[((p.max_seq + 1) % 2) as usize] = Some(Bloom::new());
        p.walk_vma(&mut mem, &costs, 0, 60, false, &mut CpuCost::default());
        assert_eq!(p.walk.pmds_walked, 5, "table 0 walked again");
        assert_eq!(p.walk.pmds_skipped_bloom, 3, "tables 1, 2, 3 skipped by the filter");
        assert!(mem.vmas[0].ptes[2 * PTRS_PER_PMD as usize] & PTE_ACCESSED != 0, "a skipped table keeps its young bits");
        assert_eq!(mem.vmas[0].ptes[0] & PTE_ACCESSED, 0, "a walked table's young bits are cleared");
        // force_scan ignores the filter.
        p.walk_vma(&mut mem, &costs, 0, 60, true, &mut CpuCost::default());
        assert_eq!((p.walk.pmds_walked, p.walk.pmds_skipped_bloom), (9, 3));
        assert!(p.check(&mem.frames).is_empty(), "{:?}", p.check(&mem.frames));
    }

    #[test]
    fn walk_promotes_young_folios_by_their_generation_only() {
        let (mut p, mut mem) = setup();
        let oldest = p.lists.len;
        touch(&mut mem, 10..20);
        p.walk_vma(&mut mem, &Costs::default(), 0, 60, true, &mut CpuCost::default());
        let young_gen = (p.max_seq % 4) as usize;
        assert_eq!(p.nr_pages[young_gen][0], 10, "ten folios promoted to max_seq");
        assert_eq!(p.lists.len, oldest, "but no folio moved between lists");
        assert!(p.check(&mem.frames).is_empty(), "{:?}", p.check(&mem.frames));
    }
}
