//! Eviction (kernel-algorithms.md §5.5, §5.6): `try_to_shrink_lruvec` with `get_nr_to_scan`
//! and `should_run_aging` per era, `evict_folios`, `isolate_folios` with the type and tier the
//! PID controller picks (`get_type_to_scan`, `get_tier_idx`), `scan_folios`, `sort_folio`,
//! `isolate_folio`, and the putback of what the shared page-out path returns.

use super::lists::*;
use super::pid::{positive_ctrl_err, MAX_NR_TIERS, MIN_LRU_BATCH};
use super::{AbortRule, Era, MgLru, MAX_LRU_BATCH, MIN_NR_GENS};
use crate::config::Watermarks;
use crate::engine::Sim;
use crate::mm::*;
use crate::stats::CpuCategory;
use crate::reclaim::{ScanControl, DEF_PRIORITY};

const ANON: usize = 0;
const FILE: usize = 1;

/// What `sort_folio` did with a folio instead of letting it be isolated.
#[derive(PartialEq)]
enum Sorted {
    No,
    Yes,
}

impl MgLru {
    /// The types eviction may take from at swappiness `s` (6.1: `!can_swap` skips anon).
    pub(super) fn evictable_types(s: u64) -> std::ops::Range<usize> {
        if s == 0 {
            FILE..2
        } else {
            ANON..2
        }
    }

    pub(super) fn evictable_min_seq(&self, s: u64) -> u64 {
        Self::evictable_types(s).map(|t| self.min_seq[t]).min().expect("a type is evictable")
    }

    /// `try_to_shrink_lruvec` (6.14+) / `lru_gen_shrink_lruvec` (6.1): evict in batches until
    /// `get_nr_to_scan`'s share is scanned or the era's `should_abort_scan` stops it.
    pub(super) fn try_to_shrink_lruvec(&mut self, sim: &mut Sim, sc: &mut ScanControl) {
        let s = self.swappiness_now(sim);
        let seq = self.max_seq;
        let mut scanned = 0u64;
        let mut need_swapping = false;
        loop {
            let n = self.get_nr_to_scan(sim, sc, s);
            if n <= 0 {
                break;
            }
            let (delta, anon_taken) = self.evict_folios(sim, sc, s, n as u64);
            if delta == 0 {
                break;
            }
            need_swapping |= anon_taken;
            scanned += delta;
            if scanned >= n as u64 || sc.batch_waits() || self.should_abort_scan(sc, seq, need_swapping, sim.nr_free(), &sim.mem.wm) {
                break;
            }
        }
    }

    /// `should_abort_scan` / `get_nr_to_reclaim` of the kernel (`AbortRule`), after a batch
    /// that left some of the pass's share unscanned. `seq`: `max_seq` when the pass began;
    /// `need_swapping`: the pass has evicted anon; `free`: the node's free pages. A kswapd
    /// step is one `balance_pgdat` iteration with its own count, so `sc->last_reclaimed` is 0.
    fn should_abort_scan(&self, sc: &mut ScanControl, seq: u64, need_swapping: bool, free: u64, wm: &Watermarks) -> bool {
        let goal_met = sc.nr_reclaimed >= sc.nr_to_reclaim;
        match self.abort {
            AbortRule::Fairness => {
                if !sc.kswapd {
                    // Age each lruvec at most once; over-swapping adds allocation latency.
                    if self.max_seq - seq > 1 || (goal_met && need_swapping) {
                        return true;
                    }
                    if sc.memcg {
                        return false;
                    }
                } else if !goal_met {
                    return false;
                }
                // Keep scanning at priorities 12 and 11, for fairness among memcgs.
                if sc.priority > DEF_PRIORITY - 2 {
                    return false;
                }
                let wmark = if sc.kswapd { wm.high } else { wm.low };
                if wmark > free {
                    return false;
                }
                // Enough was done; report the progress so the caller stops too.
                sc.nr_reclaimed += MIN_LRU_BATCH;
                true
            }
            AbortRule::Goal => !sc.memcg && goal_met,
            AbortRule::HighWmark => {
                // kswapd also stops once every zone is above high + MIN_LRU_BATCH
                // (zone_watermark_ok: free pages above the mark).
                !sc.memcg && (goal_met || (sc.kswapd && free > wm.high + MIN_LRU_BATCH))
            }
        }
    }

    /// `should_run_aging`: (must age, pages the pass may scan before the priority shift).
    pub(super) fn should_run_aging(&self, s: u64, priority: i32) -> (bool, u64) {
        let min_seq = self.evictable_min_seq(s);
        match self.era {
            // 6.1: nr_to_scan = total >> priority; age with < 3 gens, never with 4; with
            // exactly 3 when the youngest holds over 1/2 or the oldest under 1/4 (§5.11).
            Era::V6_1 => {
                let (mut total, mut young, mut old) = (0u64, 0u64, 0u64);
                for ty in Self::evictable_types(s) {
                    for seq in self.min_seq[ty]..=self.max_seq {
                        let size = self.nr_pages[(seq % 4) as usize][ty];
                        total += size;
                        if seq == self.max_seq {
                            young += size;
                        } else if seq + MIN_NR_GENS == self.max_seq {
                            old += size;
                        }
                    }
                }
                let nr = total >> priority;
                let age = if min_seq + MIN_NR_GENS > self.max_seq {
                    true
                } else if min_seq + MIN_NR_GENS < self.max_seq {
                    false
                } else {
                    young * MIN_NR_GENS > total || old * (MIN_NR_GENS + 2) < total
                };
                (age, nr)
            }
            // 6.14+: must age with 2 gens (nothing evictable); "better" with 3.
            Era::V6_14 => {
                if min_seq + MIN_NR_GENS > self.max_seq {
                    return (true, 0);
                }
                let mut nr = 0;
                for ty in Self::evictable_types(s) {
                    for seq in self.min_seq[ty]..=self.max_seq {
                        nr += self.nr_pages[(seq % 4) as usize][ty];
                    }
                }
                (min_seq + MIN_NR_GENS == self.max_seq, nr >> priority)
            }
        }
    }

    /// `get_nr_to_scan`: pages to scan, 0 to stop, -1 "aged, rotate this lruvec" (6.14+).
    fn get_nr_to_scan(&mut self, sim: &mut Sim, sc: &mut ScanControl, s: u64) -> i64 {
        let (age, nr) = self.should_run_aging(s, sc.priority);
        if !age {
            return nr as i64;
        }
        match self.era {
            Era::V6_1 => {
                if sc.priority != DEF_PRIORITY {
                    // kswapd leaves aging to lru_gen_age_node.
                    if sc.kswapd {
                        return 0;
                    }
                    if self.try_to_inc_max_seq(sim, sc, self.max_seq, s, false) {
                        return nr as i64;
                    }
                }
                if self.evictable_min_seq(s) + MIN_NR_GENS <= self.max_seq {
                    nr as i64
                } else {
                    0
                }
            }
            Era::V6_14 => {
                if sc.priority == DEF_PRIORITY {
                    return nr as i64;
                }
                if self.try_to_inc_max_seq(sim, sc, self.max_seq, s, false) {
                    -1
                } else {
                    0
                }
            }
        }
    }

    /// `evict_folios`: isolate a batch from the oldest generation, drop empty oldest
    /// generations, reclaim through the shared page-out path, put the survivors back.
    /// Returns the pages scanned, and whether anon folios were taken (6.1's `need_swapping`).
    fn evict_folios(&mut self, sim: &mut Sim, sc: &mut ScanControl, s: u64, n: u64) -> (u64, bool) {
        let (mut scanned, ty, list) = self.isolate_folios(sim, sc, s, n);
        // isolate_folios sorts and isolates under lru_lock (§5.6): every folio it scanned
        // moved on or off a list.
        sim.lru_lock_in_reclaim(sc, scanned);
        if self.try_to_inc_min_seq(s) {
            scanned += 1;
        }
        if self.evictable_min_seq(s) + MIN_NR_GENS > self.max_seq {
            scanned = 0;
        }
        if list.is_empty() {
            return (scanned, false);
        }
        let taken = list.len() as u64;
        sc.nr_taken += taken;
        sc.nr_scanned += taken;
        let res = sim.shrink_folio_list(self, list, sc);
        let mut reclaimed = res.reclaimed;
        sim.stats.vm.pgactivate += res.activate.len() as u64;
        // What waits with a submitter asleep for a request: back to the oldest generation's
        // tail, taken first when the reclaimer resumes.
        for &f in &res.deferred {
            self.add_folio(&mut sim.mem.frames, f, true, false);
        }
        // The put-back (move_folios_to_lru) under lru_lock, deferred folios included.
        sim.lru_lock_in_reclaim(sc, (res.keep.len() + res.activate.len() + res.deferred.len()) as u64);
        let retry = self.put_back(sim, &res.keep, &res.activate, true);
        if sc.batch_waits() {
            // The batch ended asleep: not activated by a retry that would not run either.
            for f in retry {
                self.add_folio(&mut sim.mem.frames, f, true, false);
            }
        } else if !retry.is_empty() {
            // Folios that may have missed folio_rotate_reclaimable: one more try.
            let again = sim.shrink_folio_list(self, retry, sc);
            reclaimed += again.reclaimed;
            sim.stats.vm.pgactivate += again.activate.len() as u64;
            sim.lru_lock_in_reclaim(sc, (again.keep.len() + again.activate.len()) as u64);
            self.put_back(sim, &again.keep, &again.activate, false);
        }
        sc.nr_reclaimed += reclaimed;
        sc.count_steal(&mut sim.stats.vm, ty == ANON, reclaimed);
        (scanned, ty == ANON)
    }

    /// The survivors of `shrink_folio_list` back on the lists: activated ones with PG_active;
    /// rejected ones never into the oldest generation; clean unmapped idle ones returned for
    /// one retry (when `first`). The two eras differ in what they retry and activate.
    fn put_back(&mut self, sim: &mut Sim, keep: &[u32], activate: &[u32], first: bool) -> Vec<u32> {
        let mut retry = Vec::new();
        for &f in activate {
            sim.mem.frames[f as usize].flags |= PG_ACTIVE;
        }
        let survivors: Vec<u32> = keep.iter().chain(activate.iter()).copied().collect();
        for f in survivors {
            let fr = sim.mem.frames[f as usize];
            let mapped = fr.owner_kind() != Owner::None && self.folio_mapped_frames(&sim.mem, f);
            let reclaim_io = fr.has(PG_RECLAIM) && (fr.has(PG_DIRTY) || fr.has(PG_WRITEBACK));
            let busy = fr.has(PG_ACTIVE) || fr.has(PG_REFERENCED) || mapped || fr.has(PG_LOCKED) || fr.has(PG_DIRTY) || fr.has(PG_WRITEBACK);
            if self.era == Era::V6_14 {
                // 6.14+: retry what may have missed the rotation; activate only what would
                // otherwise land in the oldest generation.
                if first && !fr.has(PG_ACTIVE) && !mapped && !fr.has(PG_DIRTY) && !fr.has(PG_WRITEBACK) {
                    retry.push(f);
                    continue;
                }
                let ty = type_of(&fr);
                let fr = &mut sim.mem.frames[f as usize];
                if self.entry_seq(fr, false) == self.min_seq[ty] {
                    fr.flags = (fr.flags & !(REFS_MASK | PG_REFERENCED)) | PG_ACTIVE;
                }
                self.add_folio(&mut sim.mem.frames, f, false, false);
                continue;
            }
            // 6.1-6.13:
            let fr = &mut sim.mem.frames[f as usize];
            if reclaim_io {
                // Waiting for its writeback to rotate it: min_seq + 1 (6.1) / max_seq - 1.
                if self.era == Era::V6_1 && fr.has(PG_WORKINGSET) {
                    fr.flags |= PG_REFERENCED; // restore what isolate_folio cleared
                }
            } else if !first || busy {
                // "don't add rejected folios to the oldest generation"
                fr.flags = (fr.flags & !(REFS_MASK | REFS_FLAGS)) | PG_ACTIVE;
            } else {
                retry.push(f);
                continue;
            }
            self.add_folio(&mut sim.mem.frames, f, false, false);
        }
        retry
    }

    /// Is the folio mapped by any PTE (`folio_mapped`)?
    fn folio_mapped_frames(&self, mem: &Memory, f: u32) -> bool {
        let fr = &mem.frames[f as usize];
        match fr.owner_kind() {
            Owner::None => false,
            Owner::Anon => true,
            Owner::Shmem | Owner::File => mem.objects[fr.owner as usize].vmas.iter().any(|&v| {
                let p = mem.vmas[v as usize].ptes[fr.index as usize];
                p & PTE_PRESENT != 0 && pte_frame(p) == f
            }),
        }
    }

    /// `isolate_folios`: the type to scan first, then the other if it yields nothing.
    fn isolate_folios(&mut self, sim: &mut Sim, sc: &mut ScanControl, s: u64, n: u64) -> (u64, usize, Vec<u32>) {
        let (mut ty, mut tier) = self.type_to_scan(s);
        let mut list = Vec::new();
        for _ in Self::evictable_types(s) {
            let t = tier.take().unwrap_or_else(|| self.get_tier_idx(ty));
            let scanned = self.scan_folios(sim, sc, ty, t, n, &mut list);
            if scanned > 0 {
                return (scanned, ty, list);
            }
            ty = 1 - ty;
        }
        (0, ty, list)
    }

    /// The type to evict first, and (6.1) the tier cut-off found with it.
    fn type_to_scan(&self, s: u64) -> (usize, Option<usize>) {
        let gain = [s, 200 - s];
        match self.era {
            // 6.1-6.13: the obvious choices first, then tier 0 of anon against tier 0 of file;
            // the cut-off compares the other type's tier 0 with this type's tiers 1..3.
            Era::V6_1 => {
                if s == 0 {
                    return (FILE, None);
                }
                if self.min_seq[ANON] < self.min_seq[FILE] {
                    return (ANON, None);
                }
                if s == 1 {
                    return (FILE, None);
                }
                if s == 200 {
                    return (ANON, None);
                }
                let sp = self.pid.ctrl_pos(self.era, ANON, Some(0), gain[ANON]);
                let pv = self.pid.ctrl_pos(self.era, FILE, Some(0), gain[FILE]);
                let ty = positive_ctrl_err(sp, pv) as usize;
                let sp = self.pid.ctrl_pos(self.era, 1 - ty, Some(0), gain[1 - ty]);
                (ty, Some(self.tier_cutoff(ty, sp, gain[ty])))
            }
            // 6.14+: total refaults of all tiers, anon (gain s) against file (gain 200 - s).
            Era::V6_14 => {
                if s <= 1 {
                    return (FILE, None);
                }
                if s >= 200 {
                    return (ANON, None);
                }
                let sp = self.pid.ctrl_pos(self.era, ANON, None, gain[ANON]);
                let pv = self.pid.ctrl_pos(self.era, FILE, None, gain[FILE]);
                (positive_ctrl_err(sp, pv) as usize, None)
            }
        }
    }

    /// The highest tier of `ty` whose refault rate is not worse than `sp`'s: tiers above it
    /// are protected.
    fn tier_cutoff(&self, ty: usize, sp: super::pid::CtrlPos, gain: u64) -> usize {
        for tier in 1..MAX_NR_TIERS {
            let pv = self.pid.ctrl_pos(self.era, ty, Some(tier), gain);
            if !positive_ctrl_err(sp, pv) {
                return tier - 1;
            }
        }
        MAX_NR_TIERS - 1
    }

    /// `get_tier_idx`: tier 0 against tiers 1..3 of the same type, gains 1:2 (6.1) or 2:3
    /// (6.14+) as a margin for fluctuations.
    pub(super) fn get_tier_idx(&self, ty: usize) -> usize {
        let (g0, g1) = match self.era {
            Era::V6_1 => (1, 2),
            Era::V6_14 => (2, 3),
        };
        let sp = self.pid.ctrl_pos(self.era, ty, Some(0), g0);
        self.tier_cutoff(ty, sp, g1)
    }

    /// `scan_folios`: from the tail of the oldest generation of `ty`, sort or isolate up to
    /// `MAX_LRU_BATCH` folios (6.14+: at most `n`), stopping at `MIN_LRU_BATCH` isolated.
    fn scan_folios(&mut self, sim: &mut Sim, sc: &mut ScanControl, ty: usize, tier_idx: usize, n: u64, list: &mut Vec<u32>) -> u64 {
        if self.nr_gens(ty) <= MIN_NR_GENS {
            return 0;
        }
        let gen = (self.min_seq[ty] % 4) as usize;
        let l = list_index(gen, ty);
        let mut remaining = match self.era {
            Era::V6_1 => MAX_LRU_BATCH,
            Era::V6_14 => n.min(MAX_LRU_BATCH),
        };
        let (mut scanned, mut sorted, mut isolated) = (0u64, 0u64, 0u64);
        loop {
            let f = self.lists.tail(l);
            if f == NONE {
                break;
            }
            scanned += 1;
            if self.sort_folio(&mut sim.mem.frames, f, tier_idx, &mut sim.stats.vm) == Sorted::Yes {
                sorted += 1;
            } else {
                // isolate_folio cannot fail here: every reclaimer may do I/O, and no other
                // CPU races for the LRU flag inside this atomic pass (so nothing is skipped).
                self.isolate_folio(&mut sim.mem.frames, f);
                list.push(f);
                isolated += 1;
            }
            remaining -= 1;
            if remaining == 0 || isolated >= MIN_LRU_BATCH {
                break;
            }
        }
        sc.cost.charge(CpuCategory::LruOps, (scanned - isolated) * sim.costs.scan_page_ns);
        sim.stats.vm.pgrefill += sorted;
        sc.count_scan(&mut sim.stats.vm, ty == ANON, isolated);
        if isolated > 0 || remaining == 0 {
            scanned
        } else {
            0
        }
    }

    /// `sort_folio`: move a folio that should not be evicted now — promoted meanwhile,
    /// in a protected tier, or waiting for I/O — instead of isolating it.
    fn sort_folio(&mut self, frames: &mut [Frame], f: u32, tier_idx: usize, vm: &mut crate::stats::VmStat) -> Sorted {
        let fr = frames[f as usize];
        let ty = type_of(&fr);
        let gen = gen_of(&fr).expect("sort_folio: folio in no generation");
        let min_gen = (self.min_seq[ty] % 4) as usize;
        if gen != min_gen {
            // Promoted by the walk or look-around: to the head of its generation.
            self.lists.move_to(frames, f, list_index(gen, ty), false);
            return Sorted::Yes;
        }
        let (refs, tier) = self.refs_and_tier(&fr);
        let lazily_promoted = self.era == Era::V6_14 && refs == 4 && fr.has(PG_WORKINGSET);
        if tier > tier_idx || lazily_promoted {
            let new_gen = self.folio_inc_gen(&mut frames[f as usize], false);
            match self.era {
                // 6.1: tail of min_seq + 1, protected[tier - 1], counted as an activation.
                Era::V6_1 => {
                    self.lists.move_to(frames, f, list_index(new_gen, ty), true);
                    self.pid.protected[ty][tier - 1] += 1;
                    if ty == ANON {
                        vm.workingset_activate_anon += 1;
                    } else {
                        vm.workingset_activate_file += 1;
                    }
                }
                Era::V6_14 => {
                    self.lists.move_to(frames, f, list_index(new_gen, ty), false);
                    if !lazily_promoted {
                        self.pid.protected[ty][tier] += 1;
                    }
                }
            }
            return Sorted::Yes;
        }
        if fr.has(PG_LOCKED) || fr.has(PG_WRITEBACK) {
            let new_gen = self.folio_inc_gen(&mut frames[f as usize], true);
            self.lists.move_to(frames, f, list_index(new_gen, ty), false);
            return Sorted::Yes;
        }
        Sorted::No
    }

    /// `folio_inc_gen`: one generation up from the oldest, ref bits cleared (6.14+ keeps
    /// PG_workingset); `reclaiming` sets PG_reclaim for `folio_end_writeback`.
    pub(super) fn folio_inc_gen(&mut self, fr: &mut Frame, reclaiming: bool) -> usize {
        let ty = type_of(fr);
        let old_gen = (self.min_seq[ty] % 4) as usize;
        let cur = gen_of(fr).expect("folio_inc_gen: folio in no generation");
        if cur != old_gen {
            return cur; // promoted meanwhile
        }
        let new_gen = (old_gen + 1) % MAX_NR_GENS;
        let clear = match self.era {
            Era::V6_1 => REFS_MASK | REFS_FLAGS,
            Era::V6_14 => REFS_MASK | PG_REFERENCED,
        };
        fr.flags &= !clear;
        if reclaiming {
            fr.flags |= PG_RECLAIM;
        }
        self.update_gen(fr, new_gen);
        new_gen
    }

    /// `isolate_folio`: off the lists for `shrink_folio_list`; the refs counter survives only
    /// with PG_referenced; PG_reclaim cleared (6.1 clears PG_referenced too).
    fn isolate_folio(&mut self, frames: &mut [Frame], f: u32) {
        let fr = &mut frames[f as usize];
        if !fr.has(PG_REFERENCED) {
            fr.flags &= !REFS_MASK;
        }
        fr.flags &= !PG_RECLAIM;
        if self.era == Era::V6_1 {
            fr.flags &= !PG_REFERENCED;
        }
        self.del_folio(frames, f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config;
    use crate::reclaim::LruPolicy;

    fn policy(profile: &str) -> MgLru {
        let text = format!("[machine]\nram = \"32MiB\"\nkernel_reserved = \"4MiB\"\n[kernel]\nprofile = \"{profile}\"\nreclaim = \"mglru\"\n[[task]]\nname = \"t\"\n[[task.mapping]]\nname = \"m\"\nkind = \"file\"\nsize = \"4MiB\"\n[[task.phase]]\nmapping = \"m\"\npattern = \"sequential\"\n");
        MgLru::new(&config::load(&text, "test.toml", &[]).expect("test config loads"))
    }

    /// After a batch, does the eviction loop stop? Each kernel's rule (`AbortRule`) on the
    /// same situations: (kswapd, memcg, priority, pages reclaimed, anon evicted, free pages).
    fn aborts(p: &MgLru, seq: u64, case: (bool, bool, i32, u64, bool, u64)) -> (bool, u64) {
        let (kswapd, memcg, priority, reclaimed, anon, free) = case;
        let wm = Watermarks { min: 1000, low: 1250, high: 1500 };
        let mut sc = ScanControl::new(32, kswapd, memcg, 0);
        sc.priority = priority;
        sc.nr_reclaimed = reclaimed;
        let stop = p.should_abort_scan(&mut sc, seq, anon, free, &wm);
        (stop, sc.nr_reclaimed)
    }

    #[test]
    fn each_kernel_stops_mglru_eviction_by_its_own_should_abort_scan() {
        let (v61, v63, v68) = (policy("6.1"), policy("6.3"), policy("6.8"));
        let seq = v61.max_seq;
        // 6.1: a direct reclaimer that evicted anon stops at its goal, at any priority...
        assert_eq!(aborts(&v61, seq, (false, false, 12, 32, true, 0)), (true, 32));
        // ...one that took only page cache keeps scanning its share at priorities 12 and 11,
        assert_eq!(aborts(&v61, seq, (false, false, 12, 32, false, 5000)), (false, 32));
        // and below, stops once the zone is above low, reporting MIN_LRU_BATCH more.
        assert_eq!(aborts(&v61, seq, (false, false, 9, 32, false, 1200)), (false, 32));
        assert_eq!(aborts(&v61, seq, (false, false, 9, 32, false, 1250)), (true, 32 + MIN_LRU_BATCH));
        // memcg reclaim of page cache never stops early; one that aged twice always does.
        assert_eq!(aborts(&v61, seq, (false, true, 9, 32, false, 5000)), (false, 32));
        assert_eq!(aborts(&v61, seq - 2, (false, true, 12, 0, false, 0)), (true, 0));
        // kswapd: not before its goal, not at 12 or 11, then once above high.
        assert_eq!(aborts(&v61, seq, (true, false, 9, 31, true, 9999)), (false, 31));
        assert_eq!(aborts(&v61, seq, (true, false, 11, 32, true, 9999)), (false, 32));
        assert_eq!(aborts(&v61, seq, (true, false, 9, 32, true, 1499)), (false, 32));
        assert_eq!(aborts(&v61, seq, (true, false, 9, 32, true, 1500)), (true, 32 + MIN_LRU_BATCH));
        // 6.3-6.7: global reclaim stops at its goal, memcg reclaim never.
        assert_eq!(aborts(&v63, seq, (false, false, 12, 32, false, 0)), (true, 32));
        assert_eq!(aborts(&v63, seq, (true, false, 12, 31, true, 9999)), (false, 31));
        assert_eq!(aborts(&v63, seq, (false, true, 12, 32, true, 0)), (false, 32));
        // 6.8+: the same, and kswapd also once free pages pass high + MIN_LRU_BATCH.
        assert_eq!(aborts(&v68, seq, (true, false, 12, 0, true, 1500 + MIN_LRU_BATCH)), (false, 0));
        assert_eq!(aborts(&v68, seq, (true, false, 12, 0, true, 1501 + MIN_LRU_BATCH)), (true, 0));
        assert_eq!(aborts(&v68, seq, (false, false, 12, 0, true, 9999)), (false, 0));
        assert_eq!(aborts(&v68, seq, (false, true, 12, 32, true, 9999)), (false, 32));
    }

    /// Two page-cache folios in the oldest generation: one read once (tier 0), one read four
    /// times (a higher tier). Returns whether sort_folio protected each, and the cut-off.
    fn sort_pair(profile: &str, hot_refaulted: u64) -> (bool, bool, usize) {
        let mut p = policy(profile);
        let mut frames = vec![Frame::FREE; 2];
        let mut vm = crate::stats::VmStat::default();
        for f in 0..2u32 {
            frames[f as usize].flags |= PG_INUSE;
            p.folio_add_outside_fault(&mut frames, f);
            p.mark_accessed(&mut frames, f, &mut vm);
        }
        for _ in 0..3 {
            p.mark_accessed(&mut frames, 1, &mut vm);
        }
        let (_, hot_tier) = p.refs_and_tier(&frames[1]);
        assert!(hot_tier > 0 && p.refs_and_tier(&frames[0]).1 == 0);
        // Tier 0 refaults 1% of what it evicts; the hot tier `hot_refaulted` of 200.
        p.pid.evicted[FILE][0] = 1000;
        p.pid.refaulted[FILE][0] = 10;
        p.pid.evicted[FILE][hot_tier] = 200;
        p.pid.refaulted[FILE][hot_tier] = hot_refaulted;
        let cut = p.get_tier_idx(FILE);
        let cold = p.sort_folio(&mut frames, 0, cut, &mut vm) == Sorted::Yes;
        let hot = p.sort_folio(&mut frames, 1, cut, &mut vm) == Sorted::Yes;
        assert!(p.check(&frames).is_empty(), "{:?}", p.check(&frames));
        (cold, hot, cut)
    }

    #[test]
    fn the_pid_controller_protects_the_tier_that_refaults_more() {
        for profile in ["6.1", "6.14"] {
            // 75% refaults in the hot tier against 1% in tier 0: protected, tier 0 is not.
            let (cold, hot, cut) = sort_pair(profile, 150);
            assert_eq!((cold, hot), (false, true), "{profile}: cut-off {cut}");
            // The same rate as tier 0: nothing is protected.
            let (cold, hot, cut) = sort_pair(profile, 2);
            assert_eq!((cold, hot, cut), (false, false, 3), "{profile}");
        }
    }
}
