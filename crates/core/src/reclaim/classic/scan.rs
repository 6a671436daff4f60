//! The classic reclaim pass: `shrink_node` with `prepare_scan_control` (§3.6),
//! `get_scan_count` (§3.7), `shrink_lruvec` with the era's bail-out (§3.8),
//! `shrink_active_list` (§3.9) and `shrink_inactive_list` (§3.10), which isolates a batch
//! and hands it to the shared page-out path.

use super::ClassicLru;
use crate::config::Profile;
use crate::engine::Sim;
use crate::mm::*;
use crate::stats::{CpuCategory, CpuCost};
use crate::reclaim::isolation::IsolatedWait;
use crate::reclaim::{Bailout, LruPolicy, PassLeft, ScanControl, DEF_PRIORITY, SWAP_CLUSTER_MAX};

const IA: usize = LruList::InactiveAnon as usize;
const AA: usize = LruList::ActiveAnon as usize;
const IF: usize = LruList::InactiveFile as usize;
const AF: usize = LruList::ActiveFile as usize;

/// How `get_scan_count` splits the pass between anon and file.
#[derive(PartialEq)]
enum ScanBalance {
    Equal,
    Fract,
    Anon,
    File,
}

impl ClassicLru {
    /// `prepare_scan_control` (§3.6): may the active lists be deactivated (6.x refault
    /// snapshot rule), cache-trim mode, and whether the file LRU is too small to matter.
    pub(super) fn prepare_scan_control(&mut self, sim: &Sim, sc: &mut ScanControl) {
        let v6 = self.profile >= Profile::V6;
        if v6 {
            self.catch_up_stats(sc.start_clock.max(sim.now), &sim.stats.vm);
            let act = self.stat_activations(&sim.stats.vm);
            if sc.force_deactivate {
                sc.may_deactivate = [true, true];
            } else {
                sc.may_deactivate[0] = act[0] != self.refault_snapshot[0] || self.inactive_is_low(true);
                sc.may_deactivate[1] = act[1] != self.refault_snapshot[1] || self.inactive_is_low(false);
            }
            sc.cache_trim_mode = (self.scan_stat_size(LruList::InactiveFile) >> sc.priority) > 0 && !sc.may_deactivate[1];
        } else {
            sc.may_deactivate = [true, true];
            sc.cache_trim_mode = false;
        }
        let file = self.size(LruList::InactiveFile) + self.size(LruList::ActiveFile);
        sc.file_is_tiny = !sc.memcg
            && file + sim.nr_free() <= sim.mem.wm.high
            && (!v6 || !sc.may_deactivate[0])
            && (self.size(LruList::InactiveAnon) >> sc.priority) > 0;
    }

    /// `get_scan_count` (§3.7): pages to scan per list at this priority.
    fn get_scan_count(&mut self, sim: &Sim, sc: &ScanControl) -> [u64; 4] {
        let sw = self.swappiness;
        let swap_possible = sim.swap.free_pages() > 0;
        let v6 = self.profile >= Profile::V6;
        let inactive_file = self.size(LruList::InactiveFile);
        let mode = if !swap_possible || (sc.memcg && sw == 0) {
            ScanBalance::File
        } else if sc.priority == 0 && sw > 0 {
            ScanBalance::Equal
        } else if sc.file_is_tiny {
            ScanBalance::Anon
        } else if (v6 && sc.cache_trim_mode) || (!v6 && self.profile > Profile::V2_6_28 && !self.inactive_is_low(false) && (inactive_file >> sc.priority) > 0) {
            ScanBalance::File
        } else {
            ScanBalance::Fract
        };
        if self.profile == Profile::V2_6_28 && !sc.memcg {
            return self.get_scan_count_2_6_28(sc, mode);
        }
        let (ap, fp, denom) = if mode == ScanBalance::Fract { self.scan_fractions() } else { (0, 0, 1) };
        let mut nr = [0u64; 4];
        for l in LruList::ALL {
            let mut scan = self.size(l) >> sc.priority;
            match mode {
                ScanBalance::Equal => {}
                ScanBalance::Fract => {
                    let frac = if l.is_anon() { ap } else { fp };
                    scan = (scan as u128 * frac as u128 / denom.max(1) as u128) as u64;
                }
                ScanBalance::Anon if !l.is_anon() => scan = 0,
                ScanBalance::File if l.is_anon() => scan = 0,
                ScanBalance::Anon | ScanBalance::File => {}
            }
            nr[l as usize] = scan;
        }
        nr
    }

    /// 2.6.28 `shrink_zone`'s targets: `size >> priority` scaled by `get_scan_ratio`'s percent
    /// (none at priority 0), added *plus one* to the list's `nr_scan` credit (2.6.32's
    /// `nr_scan_try_batch`: the scan alone, `scan_credit_plus_one`); a list is scanned
    /// only once its credit reaches SWAP_CLUSTER_MAX, and then all of it. Small lists and high
    /// priorities therefore scan nothing for several passes and then a batch of 32 or more;
    /// every pass, of every reclaimer, adds to the credit.
    fn get_scan_count_2_6_28(&mut self, sc: &ScanControl, mode: ScanBalance) -> [u64; 4] {
        let (ap, _, denom) = if mode == ScanBalance::Fract { self.scan_fractions() } else { (0, 0, 1) };
        let anon_pct = (100 * ap).checked_div(denom).unwrap_or(0);
        let mut nr = [0u64; 4];
        for l in LruList::ALL {
            let mut scan = self.size(l) >> sc.priority;
            if sc.priority > 0 {
                let pct = match mode {
                    ScanBalance::Fract => if l.is_anon() { anon_pct } else { 100 - anon_pct },
                    ScanBalance::Anon => if l.is_anon() { 100 } else { 0 },
                    ScanBalance::File => if l.is_anon() { 0 } else { 100 },
                    ScanBalance::Equal => 100,
                };
                scan = scan * pct / 100;
            }
            let li = l as usize;
            self.nr_scan[li] += scan + self.scan_credit_plus_one as u64;
            if self.nr_scan[li] >= SWAP_CLUSTER_MAX {
                nr[li] = std::mem::take(&mut self.nr_scan[li]);
            }
        }
        nr
    }

    /// The anon and file pressure and their denominator: the 5.8+ cost model, or the
    /// recent_scanned / recent_rotated ratios before (§3.7, §3.12).
    fn scan_fractions(&mut self) -> (u64, u64, u64) {
        let sw = self.swappiness;
        if self.profile >= Profile::V6 {
            let (ac, fc) = (self.anon_cost, self.file_cost);
            let total = ac + fc;
            let a = total + ac;
            let f = total + fc;
            let t = a + f;
            let ap = sw * (t + 1) / (a + 1);
            let fp = (200 - sw) * (t + 1) / (f + 1);
            return (ap, fp, ap + fp);
        }
        let anon_size = self.size(LruList::InactiveAnon) + self.size(LruList::ActiveAnon);
        let file_size = self.size(LruList::InactiveFile) + self.size(LruList::ActiveFile);
        if self.recent_scanned[0] > anon_size / 4 {
            self.recent_scanned[0] /= 2;
            self.recent_rotated[0] /= 2;
        }
        if self.recent_scanned[1] > file_size / 4 {
            self.recent_scanned[1] /= 2;
            self.recent_rotated[1] /= 2;
        }
        let ap = sw * (self.recent_scanned[0] + 1) / (self.recent_rotated[0] + 1);
        let fp = (200 - sw) * (self.recent_scanned[1] + 1) / (self.recent_rotated[1] + 1);
        (ap, fp, ap + fp + 1)
    }

    /// `shrink_lruvec` with the era's bail-out rule (§3.8).
    pub(super) fn shrink_lruvec(&mut self, sim: &mut Sim, sc: &mut ScanControl) {
        let (mut nr, targets, before, mut scan_adjusted) = match sc.pass_left.take() {
            Some(p) => (p.nr, p.targets, p.reclaimed, p.scan_adjusted),
            None => {
                let nr = self.get_scan_count(sim, sc);
                (nr, nr, 0, false)
            }
        };
        let proportional = !sc.kswapd && !sc.memcg && sc.priority == DEF_PRIORITY;
        // Reclaimed by this pass since it began or resumed (`before`: in earlier parts, which
        // the caller's `sc.nr_reclaimed` already holds).
        let mut reclaimed = 0u64;
        while nr[IA] > 0 || nr[AF] > 0 || nr[IF] > 0 {
            let mut last = None;
            for l in LruList::ALL {
                let li = l as usize;
                if nr[li] > 0 && !sc.pass_stalled() {
                    let k = nr[li].min(SWAP_CLUSTER_MAX);
                    nr[li] -= k;
                    last = Some((li, k));
                    reclaimed += self.shrink_list(sim, l, k, sc);
                }
            }
            if sc.pass_stalled() {
                // The reclaimer sleeps inside shrink_inactive_list (too_many_isolated, a full
                // request queue, a folio's writeback, 3.x/4.x's writeback stall): the pass
                // ends here and the caller resumes it at this priority when the task wakes,
                // with what is left of it (`PassLeft`). A sleep in too_many_isolated comes
                // before the call isolated anything: on waking it scans its batch after all.
                if sc.isolated_stall.is_some() {
                    if let Some((li, k)) = last {
                        nr[li] += k;
                    }
                }
                sc.pass_left = Some(PassLeft::of(nr, targets, before + reclaimed, scan_adjusted, sc));
                break;
            }
            let left = nr[IA] > 0 || nr[AF] > 0 || nr[IF] > 0;
            if left && sc.yield_at.is_some_and(|t| sc.start_clock + sc.cost.total() >= t) {
                // 2.6.32 kswapd reached a preemption point after the next event: the rest of
                // this pass waits for its next step.
                sc.pass_left = Some(PassLeft::of(nr, targets, before + reclaimed, scan_adjusted, sc));
                sc.yielded = true;
                break;
            }
            match self.bailout {
                Bailout::None => continue,
                Bailout::Rvr => {
                    // `sc->nr_reclaimed`: what this direct reclaim freed since it began, across
                    // priorities and the passes resumed after a sleep, not this pass alone (the
                    // rvr patch moved nr_reclaimed into scan_control for this test; seed 001's
                    // diff shows it as the context of KOSAKI's change).
                    if sc.nr_reclaimed + reclaimed > SWAP_CLUSTER_MAX && sc.priority < DEF_PRIORITY && !sc.kswapd {
                        break;
                    }
                    continue;
                }
                Bailout::Kosaki => {
                    if sc.nr_reclaimed + reclaimed > SWAP_CLUSTER_MAX && !sc.kswapd {
                        break;
                    }
                    continue;
                }
                Bailout::ProportionalFull | Bailout::Proportional => {}
            }
            if before + reclaimed < sc.nr_to_reclaim || proportional || scan_adjusted {
                continue;
            }
            if !self.adjust_scan_proportionally(&mut nr, &targets) {
                break;
            }
            if self.bailout == Bailout::ProportionalFull {
                scan_adjusted = true;
            }
        }
        sc.nr_reclaimed += reclaimed;
        if !sc.pass_stalled() && !sc.yielded && sim.swap.free_pages() > 0 && self.inactive_is_low(true) {
            self.shrink_active_list(sim, SWAP_CLUSTER_MAX, LruList::ActiveAnon, sc);
        }
    }

    /// The proportional rule on reaching the goal (§3.8): stop scanning the type with less
    /// left and scan of the other only what keeps the two in their original proportion.
    /// Returns false when one type is already done (the pass ends).
    fn adjust_scan_proportionally(&self, nr: &mut [u64; 4], targets: &[u64; 4]) -> bool {
        let left_file = nr[IF] + nr[AF];
        let left_anon = nr[IA] + nr[AA];
        if left_file == 0 || left_anon == 0 {
            return false;
        }
        let (small, big) = if left_file > left_anon { ([IA, AA], [IF, AF]) } else { ([IF, AF], [IA, AA]) };
        let left_small = nr[small[0]] + nr[small[1]];
        let pct = left_small * 100 / (targets[small[0]] + targets[small[1]] + 1);
        nr[small[0]] = 0;
        nr[small[1]] = 0;
        for &l in &big {
            let done = targets[l] - nr[l];
            nr[l] = (targets[l] * (100 - pct.min(100)) / 100).saturating_sub(done);
        }
        true
    }

    fn shrink_list(&mut self, sim: &mut Sim, l: LruList, n: u64, sc: &mut ScanControl) -> u64 {
        if l.is_active() {
            let gate = if self.profile >= Profile::V6 {
                sc.may_deactivate[!l.is_anon() as usize]
            } else if self.file_deactivate_always && !l.is_anon() {
                true
            } else {
                self.inactive_is_low(l.is_anon())
            };
            if gate {
                self.shrink_active_list(sim, n, l, sc);
            } else if self.active_quota_falls_through {
                // Before 2.6.33 an active list that needs no deactivation passes its quota to
                // `shrink_inactive_list` of its type, which reclaims from the inactive list.
                return self.shrink_inactive_list(sim, n, LruList::of(l.is_anon(), false), sc);
            } else {
                sc.skipped_deactivate = true;
            }
            return 0;
        }
        self.shrink_inactive_list(sim, n, l, sc)
    }

    /// `shrink_active_list` (§3.9): deactivate from the active tail; referenced pages lose
    /// their accessed bits but are deactivated anyway, except referenced executable file
    /// pages (2.6.31+), which go back to the active head.
    pub(super) fn shrink_active_list(&mut self, sim: &mut Sim, n: u64, l: LruList, sc: &mut ScanControl) {
        let anon = l.is_anon();
        let isolated_from = sc.clock();
        let mut taken = 0u64;
        let mut rotated = 0u64;
        let mut exec_kept = 0u64;
        let mut walks = 0u64;
        let mut young = 0u32;
        let mut lock_cost = CpuCost::default();
        let mut folio = Vec::new();
        while taken < n {
            folio.clear();
            let nr = self.take_tail_folio(&mut sim.mem.frames, l, &mut folio);
            if nr == 0 {
                break;
            }
            taken += nr;
            let fr = sim.mem.frames[folio[0] as usize];
            let r = sim.folio_referenced(folio[0]);
            // page_referenced_anon holds the anon_vma's lock for the whole walk (2.6.28); the
            // walks run one after another from the pass's clock, charged after the loop.
            let walk_ns = r.walks as u64 * sim.costs.rmap_walk_ns + sim.xen_clear_young_ns(r.young);
            let at = isolated_from + walks * sim.costs.rmap_walk_ns + lock_cost.total();
            sim.anon_vma_lock_walk(sc, fr.owner_kind(), fr.owner, at, walk_ns, &mut lock_cost);
            walks += r.walks as u64;
            young += r.young;
            if r.ptes > 0 {
                rotated += nr; // pre-5.8 recent_rotated counts every referenced page
                if r.exec && !anon && self.exec_stays_active {
                    exec_kept += nr;
                    for &f in &folio {
                        self.lists.add_head(&mut sim.mem.frames, f, l);
                    }
                    continue;
                }
            }
            for &f in &folio {
                let fr = &mut sim.mem.frames[f as usize];
                fr.flags &= !PG_ACTIVE;
                fr.flags |= PG_WORKINGSET;
                self.lists.add_head(&mut sim.mem.frames, f, LruList::of(anon, false));
            }
        }
        if self.profile == Profile::V2_6_28 && !sc.memcg {
            sim.reclaim.pages_scanned += taken;
        }
        sim.stats.vm.pgrefill += taken;
        sim.stats.vm.pgdeactivate += taken - exec_kept;
        self.recent_scanned[!anon as usize] += taken;
        if self.profile < Profile::V6 {
            self.recent_rotated[!anon as usize] += rotated;
        } else {
            // 5.8+: only the executable pages kept active count as rotations.
            self.lru_note_cost(anon, 0, exec_kept);
        }
        // Under lru_lock: isolate_lru_folios, then (after folio_referenced, outside it)
        // move_folios_to_lru of both lists (§3.9).
        sim.lru_lock_in_reclaim(sc, taken);
        sc.cost.charge(CpuCategory::LruOps, taken * sim.costs.scan_page_ns);
        sc.cost.charge(CpuCategory::RmapWalk, walks * sim.costs.rmap_walk_ns + sim.xen_clear_young_ns(young));
        sc.cost.add(&lock_cost);
        if taken > 0 {
            sim.lru_lock_in_reclaim(sc, taken);
        }
        if exec_kept > 0 && crate::config::active_list_notes_cost(&sim.cfg.config.kernel.profile) {
            // 6.2+: `if (nr_rotated) lru_note_cost(lruvec, file, 0, nr_rotated)`.
            sim.lru_note_cost_in_reclaim(sc, exec_kept);
        }
        // Off the LRU (NR_ISOLATED) while folio_referenced walked them; the deactivated ones
        // are back on the inactive list.
        let now = sim.now;
        sim.reclaim.isolation.hold(anon, taken, taken - exec_kept, isolated_from, sc.clock(), now);
    }

    /// `shrink_inactive_list` (§3.10): isolate up to `n` folios from the tail of `l`, let the
    /// shared page-out path decide their fate, put back what it returns.
    fn shrink_inactive_list(&mut self, sim: &mut Sim, n: u64, l: LruList, sc: &mut ScanControl) -> u64 {
        let anon = l.is_anon();
        if self.too_many_isolated_stops(sim, anon, sc) {
            return 0;
        }
        let isolated_from = sc.clock();
        let mut isolated = Vec::with_capacity(n as usize);
        while (isolated.len() as u64) < n {
            if self.take_tail_folio(&mut sim.mem.frames, l, &mut isolated) == 0 {
                break;
            }
        }
        let taken = isolated.len() as u64;
        // isolate_lru_folios runs under lru_lock (§3.10, §3.11), taken whether or not it
        // finds anything.
        sim.lru_lock_in_reclaim(sc, taken);
        if taken == 0 {
            return 0;
        }
        let queue_full_before = sc.queue_full.is_some();
        if self.profile == Profile::V2_6_28 && !sc.memcg {
            // Before the batch's frees, which reset it (free_pages_bulk).
            sim.reclaim.pages_scanned += taken;
        }
        let res = sim.shrink_folio_list(self, isolated, sc);
        // What waited with a submitter asleep for a request goes back to the tail, taken
        // again first when the pass resumes: scanned once, when it is judged.
        let deferred = res.deferred.len() as u64;
        for &f in res.deferred.iter().rev() {
            self.lists.add_tail(&mut sim.mem.frames, f, l);
        }
        let scanned = taken - deferred;
        sc.nr_taken += scanned;
        sc.nr_scanned += scanned;
        self.recent_scanned[!anon as usize] += scanned;
        sc.count_scan(&mut sim.stats.vm, anon, scanned);
        // move_folios_to_lru under lru_lock: the survivors and what waits go back.
        sim.lru_lock_in_reclaim(sc, res.keep.len() as u64 + res.activate.len() as u64 + deferred);
        // Isolated from here until shrink_folio_list is done with them (its pageout
        // submissions included); the kept ones go back to the inactive list.
        sim.hold_isolated_batch(anon, taken, res.keep.len() as u64 + deferred, isolated_from, sc, sc.queue_full.is_some() && !queue_full_before);
        for &f in &res.keep {
            self.lists.add_head(&mut sim.mem.frames, f, LruList::of(anon, false));
        }
        for &f in &res.activate {
            sim.mem.frames[f as usize].flags |= PG_ACTIVE;
            self.lists.add_head(&mut sim.mem.frames, f, LruList::of(anon, true));
        }
        let activated = res.activate.len() as u64;
        sim.stats.vm.pgactivate += activated;
        // move_folios_to_lru: `workingset_age_nonresident` per folio put back active.
        let ages = self.workingset_atomics();
        for _ in 0..activated {
            self.age_nonresident(1);
        }
        let mut cost = CpuCost::default();
        sim.workingset_lines_in_reclaim(self, ages, sc, &mut cost, CpuCategory::LruOps);
        sc.cost.add(&cost);
        sc.count_steal(&mut sim.stats.vm, anon, res.reclaimed);
        if self.profile >= Profile::V6 {
            self.lru_note_cost(anon, res.pageout, scanned - res.reclaimed);
            // After the put-back's unlock (to 6.16) or within it (6.17+): the locks the
            // note takes (reclaim/lru_lock.rs).
            sim.lru_note_cost_in_reclaim(sc, res.pageout * SWAP_CLUSTER_MAX + scanned - res.reclaimed);
        } else {
            self.recent_rotated[!anon as usize] += activated;
        }
        if !sc.batch_waits() {
            sim.batch_writeback_stall(&res.stat, sc);
        }
        res.reclaimed
    }
}

impl ClassicLru {
    /// `shrink_inactive_list`'s `while (too_many_isolated(..))` for a direct reclaimer
    /// (`reclaim/isolation.rs`): true when this call isolates nothing — it stalls the pass
    /// (`sc.isolated_stall`: the reclaimer sleeps, then resumes at the same priority), or, the
    /// check after a 4.14+ sleep still finding too many, it returns 0 as the kernel's does.
    fn too_many_isolated_stops(&self, sim: &mut Sim, anon: bool, sc: &mut ScanControl) -> bool {
        let Some(wait) = sim.isolated_wait(sc.kswapd, sc.memcg) else { return false };
        let woke = sc.isolated_recheck == Some(anon);
        if woke {
            sc.isolated_recheck = None;
        }
        if !sim.too_many_isolated(anon, self.size(LruList::of(anon, false)), sc.clock()) {
            return false;
        }
        let looping = wait == IsolatedWait::CongestionWaitLoop;
        if !sc.may_sleep || (woke && !looping) {
            // `stalled` (4.14+): one sleep per call, then give up on this list. A caller that
            // cannot sleep gives up at once (reclaim_throttle only reschedules a kthread).
            return true;
        }
        sc.isolated_stall = Some((anon, wait));
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lru_of(profile: &str) -> ClassicLru {
        let text = format!("name = \"t\"\n[machine]\nram = \"128MiB\"\n[kernel]\nprofile = \"{profile}\"\n[[task]]\nname = \"t\"\n[[task.mapping]]\nname = \"m\"\nkind = \"anon\"\nsize = \"1MiB\"\n[[task.phase]]\nmapping = \"m\"\npattern = \"sequential\"\n");
        let cfg = crate::config::load(&text, "t.toml", &[]).expect("valid");
        ClassicLru::new(&cfg)
    }

    fn lru_2_6_28() -> ClassicLru {
        lru_of("2.6.28")
    }

    /// `n` pages of one type entering the lists through `folio_add` (`lru_cache_add`), added
    /// active or not; frames from `first` on.
    fn add_pages(lru: &mut ClassicLru, frames: &mut Vec<Frame>, anon: bool, active: bool, n: usize) {
        for _ in 0..n {
            let mut fr = Frame::FREE;
            fr.flags = PG_INUSE | if anon { PG_SWAPBACKED } else { 0 } | if active { PG_ACTIVE } else { 0 };
            frames.push(fr);
            let f = frames.len() as u32 - 1;
            lru.folio_add(frames, f);
        }
    }

    /// The anon share of a pass's scan (`get_scan_ratio`'s percent[0] / the fractions).
    fn anon_share(lru: &mut ClassicLru) -> f64 {
        let (ap, fp, _) = lru.scan_fractions();
        ap as f64 / (ap + fp) as f64
    }

    /// Before 5.8 a page entering an LRU list counts in `recent_scanned` (and `recent_rotated`
    /// when added active, as new anonymous pages are), "vmscan: evict streaming IO first": a
    /// stream of new page-cache pages drives the scan toward the file lists. 6.x's cost model
    /// does not see additions.
    #[test]
    fn new_page_cache_pages_tip_the_pre_5_8_scan_balance_toward_file() {
        for profile in ["2.6.28", "3.14", "4.14"] {
            let mut lru = lru_of(profile);
            let mut frames = Vec::new();
            add_pages(&mut lru, &mut frames, true, true, 1000);
            add_pages(&mut lru, &mut frames, false, false, 1000);
            assert_eq!(lru.recent_scanned, [1000, 1000], "{profile}: every added page counts as scanned");
            assert_eq!(lru.recent_rotated, [1000, 0], "{profile}: pages added active count as rotated");
            let share = anon_share(&mut lru);
            assert!(share < 0.01, "{profile}: the anon share is {share:.3} after a stream of new file pages");
        }
        let mut lru = lru_of("6.x");
        let mut frames = Vec::new();
        add_pages(&mut lru, &mut frames, false, false, 1000);
        assert_eq!(lru.recent_scanned, [0, 0], "6.x: additions do not enter the balance");
        assert_eq!((lru.anon_cost, lru.file_cost), (0, 0));
    }

    /// The active anon list's quota of a pass when the inactive anon list is not low: before
    /// 2.6.33 `shrink_list` falls through to `shrink_inactive_list`, which reclaims from the
    /// inactive anon list; since then (3.14 here) that quota scans nothing.
    #[test]
    fn active_quota_reclaims_from_the_inactive_list_before_2_6_33() {
        for (profile, expect) in [("2.6.28", SWAP_CLUSTER_MAX), ("3.14", 0)] {
            let mut sim = crate::engine::test_machine(profile);
            let mut lru = lru_of(profile);
            for i in 0..110 {
                let f = sim.take_frame();
                let active = if i < 10 { PG_ACTIVE } else { 0 };
                sim.mem.frames[f as usize].flags |= PG_SWAPBACKED | active;
                lru.folio_add(&mut sim.mem.frames, f);
            }
            assert!(!lru.inactive_is_low(true), "100 inactive against 10 active is not low");
            let mut sc = ScanControl::new(SWAP_CLUSTER_MAX, false, false, 0);
            lru.shrink_list(&mut sim, LruList::ActiveAnon, SWAP_CLUSTER_MAX, &mut sc);
            assert_eq!(sc.nr_scanned, expect, "{profile}: inactive anon pages scanned with the active list's quota");
            assert_eq!(lru.size(LruList::ActiveAnon), 10, "{profile}: nothing deactivated");
        }
    }

    /// A 64 MiB machine with `kernel` as its [kernel] section and 2,000 anonymous pages on
    /// the classic LRU's lists.
    fn two_thousand_anon_pages(kernel: &str) -> (crate::engine::Sim, ClassicLru) {
        let text = format!("name = \"t\"\n[machine]\nram = \"64MiB\"\n[kernel]\n{kernel}\n[[swap]]\ndevice = \"zram\"\nsize = \"64MiB\"\n[[task]]\nname = \"t\"\n[[task.mapping]]\nname = \"m\"\nkind = \"anon\"\nsize = \"1MiB\"\n[[task.phase]]\nmapping = \"m\"\npattern = \"sequential\"\n");
        let cfg = crate::config::load(&text, "t.toml", &[]).expect("valid");
        let mut sim = crate::engine::Sim::new(&cfg);
        let mut lru = ClassicLru::new(&cfg);
        for _ in 0..2000 {
            let f = sim.take_frame();
            sim.mem.frames[f as usize].flags |= PG_SWAPBACKED;
            lru.folio_add(&mut sim.mem.frames, f);
        }
        (sim, lru)
    }

    /// Rik van Riel's bail-out tests `sc->nr_reclaimed`, everything this direct reclaim freed
    /// so far: a reclaimer that already freed 10 pages before a sleep stops after the first
    /// round of 32 that takes it past SWAP_CLUSTER_MAX, not after 32 more than that.
    #[test]
    fn rvr_bails_out_on_what_the_whole_direct_reclaim_freed() {
        let (mut sim, mut lru) = two_thousand_anon_pages("profile = \"2.6.28\"\nbailout = \"rvr\"");
        let mut sc = ScanControl::new(SWAP_CLUSTER_MAX, false, false, 0);
        sc.priority = 6;
        sc.nr_reclaimed = 10;
        lru.nr_scan[IA] = 1000;
        lru.shrink_lruvec(&mut sim, &mut sc);
        assert!(sc.nr_reclaimed > SWAP_CLUSTER_MAX, "the pass must reclaim (got {})", sc.nr_reclaimed);
        assert_eq!(sc.nr_scanned, SWAP_CLUSTER_MAX, "one round of 32 took the call past SWAP_CLUSTER_MAX");
    }

    /// 2.6.32's `shrink_zone` breaks out once `nr_reclaimed > swap_cluster_max` only below
    /// DEF_PRIORITY and `!current_is_kswapd()`, and at priority 0 takes each list's whole size
    /// without `get_scan_ratio`'s percentages: a kswapd pass at priority 0 goes through the
    /// whole inactive anon list, however far past its goal, where a direct reclaim stops after
    /// the round that passes SWAP_CLUSTER_MAX (mm/vmscan.c of a 2.6.32 tree,
    /// zybsyzlz/linux-2.6.32; docs/evidence/frontswap2010.md, session 29). This is where the
    /// seed 002 guest's kswapd frees thousands of pages while the program naps.
    #[test]
    fn a_2_6_32_kswapd_pass_at_priority_0_scans_the_whole_inactive_list_past_its_goal() {
        for (kswapd, scanned) in [(true, 2000), (false, 2 * SWAP_CLUSTER_MAX)] {
            let (mut sim, mut lru) = two_thousand_anon_pages("profile = \"2.6.32\"");
            let mut sc = ScanControl::new(SWAP_CLUSTER_MAX, kswapd, false, 0);
            sc.priority = 0;
            lru.shrink_lruvec(&mut sim, &mut sc);
            assert_eq!(sc.nr_scanned, scanned, "kswapd {kswapd}: pages scanned at priority 0");
            assert!(sc.nr_reclaimed >= scanned / 2, "kswapd {kswapd}: unreferenced pages are freed ({})", sc.nr_reclaimed);
        }
    }

    /// `activate_page` (mark_page_accessed's second access) counts the page as scanned and
    /// rotated before 5.8: a file page read twice weighs against scanning the file lists.
    #[test]
    fn activation_by_a_second_access_counts_as_a_rotation_before_5_8() {
        let mut lru = lru_2_6_28();
        let mut frames = Vec::new();
        add_pages(&mut lru, &mut frames, false, false, 10);
        let mut vm = crate::stats::VmStat::default();
        for f in 0..10 {
            lru.mark_accessed(&mut frames, f, &mut vm);
            lru.mark_accessed(&mut frames, f, &mut vm);
        }
        assert_eq!(vm.pgactivate, 10);
        assert_eq!(lru.recent_scanned, [0, 20], "10 added + 10 activated");
        assert_eq!(lru.recent_rotated, [0, 10], "the activations rotate");
    }

    /// 2.6.28 shrink_zone: each pass adds `(size >> priority) + 1` to a list's nr_scan credit,
    /// and the list is scanned only once the credit reaches SWAP_CLUSTER_MAX, then all of it.
    #[test]
    fn nr_scan_credit_2_6_28_scans_nothing_until_swap_cluster_max() {
        let mut lru = lru_2_6_28();
        let sc = ScanControl::new(SWAP_CLUSTER_MAX, false, false, 0);
        for pass in 1..SWAP_CLUSTER_MAX {
            assert_eq!(lru.get_scan_count_2_6_28(&sc, ScanBalance::Fract), [0; 4], "pass {pass} scanned before the credit reached 32");
        }
        assert_eq!(lru.get_scan_count_2_6_28(&sc, ScanBalance::Fract), [SWAP_CLUSTER_MAX; 4]);
        assert_eq!(lru.get_scan_count_2_6_28(&sc, ScanBalance::Fract), [0; 4], "the credit restarts from zero");
    }

    /// 2.6.32's `nr_scan_try_batch` adds `scan` alone: the "+ 1" that made every list's credit
    /// reach SWAP_CLUSTER_MAX after 32 passes, however small the list, went with Johannes
    /// Weiner's "mm: don't accumulate scan pressure on unrelated lists" (2.6.30's shrink_zone
    /// already has `nr_scan += scan`). An empty list is never scanned; a list whose
    /// `size >> priority` is 8 is scanned on every fourth pass, 32 pages.
    #[test]
    fn the_2_6_32_scan_credit_grows_by_the_scan_alone() {
        let mut lru = lru_of("2.6.32");
        let sc = ScanControl::new(SWAP_CLUSTER_MAX, false, false, 0);
        for pass in 1..=2 * SWAP_CLUSTER_MAX {
            assert_eq!(lru.get_scan_count_2_6_28(&sc, ScanBalance::Fract), [0; 4], "pass {pass}: empty lists gained credit");
        }
        let mut frames = Vec::new();
        add_pages(&mut lru, &mut frames, true, false, 8 << DEF_PRIORITY);
        let ia = LruList::InactiveAnon as usize;
        for pass in 1..4 {
            assert_eq!(lru.get_scan_count_2_6_28(&sc, ScanBalance::Anon)[ia], 0, "pass {pass}");
        }
        assert_eq!(lru.get_scan_count_2_6_28(&sc, ScanBalance::Anon)[ia], 32, "four passes of 8");
    }
}
