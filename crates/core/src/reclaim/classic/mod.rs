//! The classic two-list LRU (kernel-algorithms.md §3, §4): active and inactive lists per type
//! (anon, file), `get_scan_count`'s anon/file balance of each era, `shrink_active_list`'s
//! deactivation, `shrink_inactive_list` feeding the shared page-out path, the direct-reclaim
//! bail-out variants of seed 001, and workingset refault distances (`workingset.rs`).
//!
//! Files: `mod.rs` the policy object and the `LruPolicy` glue; `scan.rs` the reclaim pass
//! (`shrink_node` / `shrink_lruvec` / `get_scan_count` / the two list shrinkers);
//! `workingset.rs` shadows and refaults; `flushed.rs` the statistics 6.x reclaim reads as of
//! their last flush.

mod flushed;
mod scan;
mod workingset;

use flushed::{FlushedStats, StatReader};

use super::{Bailout, LruPolicy, RefaultCtx, ScanControl, SWAP_CLUSTER_MAX};
use crate::config::{Profile, Resolved};
use crate::engine::Sim;
use crate::mm::*;
use crate::stats::VmStat;

/// The four lists and the balancing and refault state of the one lruvec.
pub struct ClassicLru {
    lists: Lrus,
    profile: Profile,
    swappiness: u64,
    bailout: Bailout,
    /// Shadows and refault activation for anon (5.9+) and file (3.15+) pages (§4).
    workingset_anon: bool,
    workingset_file: bool,
    /// `lruvec->nonresident_age` (§4.1).
    nonresident_age: u64,
    /// `workingset_age_nonresident` calls, each an atomic add on the group's lruvec and
    /// every ancestor's (workingset_lines.rs).
    age_walks: u64,
    /// 5.8+ cost model (§3.12).
    anon_cost: u64,
    file_cost: u64,
    /// Pre-5.8 balancing (§3.7 history): [anon, file].
    recent_scanned: [u64; 2],
    recent_rotated: [u64; 2],
    /// `workingset_activate_*` at the end of the last reclaim cycle (snapshot_refaults).
    refault_snapshot: [u64; 2],
    /// 2.6.28 `zone->lru[l].nr_scan`: scan credit carried between global reclaim passes.
    nr_scan: [u64; 4],
    /// 2.6.28–2.6.30 `shrink_list` deactivates active file pages at every pass
    /// (`inactive_file_is_low` arrived in 2.6.31, so not for the "2.6.32" profile).
    file_deactivate_always: bool,
    /// 2.6.28–2.6.32 `shrink_list`: an active list whose inactive partner is not low falls
    /// through to `shrink_inactive_list(nr_to_scan, .., file)`, so its scan quota reclaims
    /// from the inactive list of its type. Rik van Riel's "vmscan: do not evict inactive pages
    /// when skipping an active list scan" (2.6.33, reported by Larry Woodman from AIM7 runs
    /// that swapped too early) made such a quota scan nothing (§3.8).
    active_quota_falls_through: bool,
    /// 2.6.31+ `shrink_active_list` gives referenced executable file pages another trip
    /// around the active list ("vmscan: make mapped executable pages the first class
    /// citizen"), so not for the "2.6.28" profile.
    exec_stays_active: bool,
    /// 2.6.28's `shrink_zone` adds one page to every list's scan credit per pass ("just to
    /// make sure that the kernel will slowly sift through each list"); 2.6.32's
    /// `nr_scan_try_batch` adds only `scan` (`scan.rs`, `get_scan_count_2_6_28`).
    scan_credit_plus_one: bool,
    /// 6.x: the lruvec statistics as of their last rstat flush (`flushed.rs`); `None` before,
    /// where reclaim read exact counters.
    flushed: Option<FlushedStats>,
    /// 6.12+: the scan heuristics (`prepare_scan_control`'s deactivation and cache-trim
    /// tests, `inactive_is_low`, `snapshot_refaults`) read the flushed view too; 5.16-6.11
    /// flushed before reading it, so they read exact counters
    /// ([`crate::config::reclaim_stats_ratelimited`]). The refault distance reads the flushed
    /// view in every 6.x era.
    scan_reads_flushed: bool,
    /// 5.15-5.17: `workingset_refault` flushes the statistics first (reclaim/rstat_flush.rs).
    refault_flush: crate::config::RefaultFlush,
    /// 5.15-6.1: so does `shrink_node` (reclaim/rstat_flush.rs).
    reclaim_flush: crate::config::RefaultFlush,
}

impl ClassicLru {
    pub fn new(cfg: &Resolved) -> ClassicLru {
        let profile = cfg.profile;
        ClassicLru {
            lists: Lrus::default(),
            profile,
            swappiness: cfg.config.kernel.swappiness as u64,
            bailout: Bailout::resolve(&cfg.config.kernel.bailout, profile, crate::config::era_2_6_32(&cfg.config.kernel.profile)),
            workingset_anon: profile >= Profile::V6,
            workingset_file: profile >= Profile::V3_14,
            nonresident_age: 0,
            age_walks: 0,
            anon_cost: 0,
            file_cost: 0,
            recent_scanned: [0; 2],
            recent_rotated: [0; 2],
            refault_snapshot: [0; 2],
            nr_scan: [0; 4],
            file_deactivate_always: profile == Profile::V2_6_28 && !crate::config::era_2_6_32(&cfg.config.kernel.profile),
            active_quota_falls_through: profile == Profile::V2_6_28,
            exec_stays_active: profile > Profile::V2_6_28 || crate::config::era_2_6_32(&cfg.config.kernel.profile),
            scan_credit_plus_one: profile == Profile::V2_6_28 && !crate::config::era_2_6_32(&cfg.config.kernel.profile),
            flushed: (profile >= Profile::V6).then(|| {
                let m = &cfg.config.machine;
                let reader = m.memcg_limit.and(m.memory_stat_reader).map(|d| StatReader { period: d.0, jitter: m.memory_stat_reader_jitter.0 });
                FlushedStats::new(reader, cfg.config.seed)
            }),
            scan_reads_flushed: crate::config::reclaim_stats_ratelimited(&cfg.config.kernel.profile),
            refault_flush: if profile >= Profile::V6 { crate::config::refault_flush(&cfg.config.kernel.profile) } else { crate::config::RefaultFlush::Periodic },
            reclaim_flush: if profile >= Profile::V6 { crate::config::reclaim_flush(&cfg.config.kernel.profile) } else { crate::config::RefaultFlush::Periodic },
        }
    }

    /// The lruvec statistics reclaim sees at `now`: flushed ones on 6.x, caught up with any
    /// flush due by then.
    fn catch_up_stats(&mut self, now: u64, vm: &VmStat) {
        let lru = self.lists.len;
        if let Some(fl) = &mut self.flushed {
            fl.catch_up(now, [vm.workingset_activate_anon, vm.workingset_activate_file], lru);
        }
    }

    /// `lruvec_page_state` of a list's size: as of the last flush on 6.x.
    fn stat_size(&self, l: LruList) -> u64 {
        match &self.flushed {
            Some(fl) => fl.size(l),
            None => self.size(l),
        }
    }

    /// `lruvec_page_state` of a list's size as the scan heuristics read it: as of the last
    /// flush on 6.12+, exact before.
    fn scan_stat_size(&self, l: LruList) -> u64 {
        if self.scan_reads_flushed {
            self.stat_size(l)
        } else {
            self.size(l)
        }
    }

    /// `lruvec_page_state(WORKINGSET_ACTIVATE_ANON / _FILE)` as the scan heuristics read it:
    /// as of the last flush on 6.12+, exact before.
    fn stat_activations(&self, vm: &VmStat) -> [u64; 2] {
        match &self.flushed {
            Some(fl) if self.scan_reads_flushed => fl.activate,
            _ => [vm.workingset_activate_anon, vm.workingset_activate_file],
        }
    }

    fn size(&self, l: LruList) -> u64 {
        self.lists.size(l)
    }

    /// `inactive_is_low` (§3.9).
    fn inactive_is_low(&self, anon: bool) -> bool {
        let (i, a) = if anon { (LruList::InactiveAnon, LruList::ActiveAnon) } else { (LruList::InactiveFile, LruList::ActiveFile) };
        let (inactive, active) = (self.scan_stat_size(i), self.scan_stat_size(a));
        if self.profile < Profile::V4_14 && !anon {
            return active > inactive; // pre-4.10 file rule
        }
        // inactive_ratio = int_sqrt(10 * size in GiB), 1 below 1 GiB.
        let gb = (inactive + active) >> (30 - PAGE_SHIFT);
        let ratio = if gb > 0 { isqrt(10 * gb) } else { 1 };
        inactive * ratio < active
    }

    /// `lru_note_cost` (§3.12): cost = nr_io * SWAP_CLUSTER_MAX + nr_rotated, halved when the
    /// total passes a quarter of the LRU.
    fn lru_note_cost(&mut self, anon: bool, nr_io: u64, nr_rotated: u64) {
        let cost = nr_io * SWAP_CLUSTER_MAX + nr_rotated;
        if cost == 0 {
            return;
        }
        if anon {
            self.anon_cost += cost;
        } else {
            self.file_cost += cost;
        }
        let lrusize: u64 = self.lists.len.iter().sum();
        if self.anon_cost + self.file_cost > lrusize / 4 {
            self.anon_cost /= 2;
            self.file_cost /= 2;
        }
    }

    /// The pages of `f`'s folio on its list (`f` alone for a base page or a page off the LRU).
    fn folio_pages(&self, frames: &[Frame], f: u32) -> Vec<u32> {
        if frames[f as usize].has(PG_LRU) {
            self.lists.folio_run(frames, f)
        } else {
            vec![f]
        }
    }

    /// Take the folio at the tail of `l` off the list: its pages, all of them for a large
    /// folio (`isolate_lru_folios` takes folios whole and counts their pages).
    fn take_tail_folio(&mut self, frames: &mut [Frame], l: LruList, out: &mut Vec<u32>) -> u64 {
        let f = self.lists.tail(l);
        if f == NONE {
            return 0;
        }
        if frames[f as usize].folio_order() == 0 {
            self.lists.remove(frames, f);
            out.push(f);
            return 1;
        }
        let run = self.lists.folio_run(frames, f);
        for &p in &run {
            self.lists.remove(frames, p);
        }
        out.extend_from_slice(&run);
        run.len() as u64
    }

    /// Pre-5.8 `update_page_reclaim_stat` outside reclaim: a page entering an LRU list
    /// (`____pagevec_lru_add` / `__pagevec_lru_add_fn`) counts as scanned, and as rotated too
    /// when it enters an active list; `activate_page` counts both. Linus's "consider the act
    /// of adding a new page to the LRU to be a scan event" (9ff473b9a7 "vmscan: evict
    /// streaming IO first", Nov 2008, the "+stream" of seed 001's three kernels;
    /// `activate_page` counted since the 2.6.28 split LRU): a stream of new page cache
    /// pages tips `get_scan_ratio` toward the file lists, and new anonymous pages, added
    /// active, are neutral. 5.8's "mm: remove use-once cache bias from LRU balancing"
    /// (896b7290f99e) removed both with the cost model (§3.7 history, §3.12).
    fn note_lru_add(&mut self, anon: bool, active: bool, n: u64) {
        if self.profile >= Profile::V6 {
            return;
        }
        self.recent_scanned[!anon as usize] += n;
        if active {
            self.recent_rotated[!anon as usize] += n;
        }
    }

    /// `workingset_age_nonresident` for `n` pages of one folio.
    fn age_nonresident(&mut self, n: u64) {
        self.nonresident_age += n;
        self.age_walks += 1;
    }
}

fn isqrt(x: u64) -> u64 {
    (x as f64).sqrt() as u64
}

impl LruPolicy for ClassicLru {
    fn name(&self) -> &'static str {
        "classic"
    }

    /// Inactive head unless PG_active was set (refault activation, or a new anonymous page
    /// before 5.9, §1.8).
    fn folio_add(&mut self, frames: &mut [Frame], f: u32) {
        let fr = &frames[f as usize];
        let (anon, active) = (fr.is_anon_type(), fr.has(PG_ACTIVE));
        self.lists.add_head(frames, f, LruList::of(anon, active));
        self.note_lru_add(anon, active, 1);
    }

    fn folio_del(&mut self, frames: &mut [Frame], f: u32) {
        self.lists.remove(frames, f);
    }

    /// PG_referenced first, activation on the second access (§3.10). A large folio's pages
    /// share their flags and move together.
    fn mark_accessed(&mut self, frames: &mut [Frame], f: u32, vm: &mut VmStat) {
        let fr = frames[f as usize];
        let pages = if fr.folio_order() == 0 { None } else { Some(self.folio_pages(frames, f)) };
        let pages = pages.as_deref().unwrap_or(std::slice::from_ref(&f));
        if !fr.has(PG_REFERENCED) {
            for &p in pages {
                frames[p as usize].flags |= PG_REFERENCED;
            }
            return;
        }
        if fr.has(PG_ACTIVE) || !fr.has(PG_LRU) || fr.has(PG_LOCKED) {
            return;
        }
        let anon = fr.is_anon_type();
        for &p in pages {
            self.lists.remove(frames, p);
            let fr = &mut frames[p as usize];
            fr.flags = (fr.flags | PG_ACTIVE) & !PG_REFERENCED;
            self.lists.add_head(frames, p, LruList::of(anon, true));
        }
        vm.pgactivate += pages.len() as u64;
        self.note_lru_add(anon, true, pages.len() as u64); // activate_page
        self.age_nonresident(pages.len() as u64); // workingset_activation
    }

    /// A batched folio (lru_add.rs): the second access marks it `PG_active` if it is in the
    /// local batch, 3.11+ (`__lru_cache_activate_page`; it joins the active list when the
    /// batch moves, no PGACTIVATE), and clears `PG_referenced` and ages the non-resident
    /// clock (`workingset_activation`) either way; 2.6.28 leaves a batched folio referenced.
    fn mark_accessed_batched(&mut self, frames: &mut [Frame], f: u32, local: bool, _vm: &mut VmStat) {
        let fr = &mut frames[f as usize];
        if !fr.has(PG_REFERENCED) {
            fr.flags |= PG_REFERENCED;
            return;
        }
        if fr.has(PG_ACTIVE) || self.profile == Profile::V2_6_28 {
            return;
        }
        if local {
            fr.flags |= PG_ACTIVE;
        }
        fr.flags &= !PG_REFERENCED;
        self.age_nonresident(1);
    }

    fn activate(&mut self, frames: &mut [Frame], f: u32, vm: &mut VmStat) {
        let fr = frames[f as usize];
        if !fr.has(PG_LRU) || fr.has(PG_ACTIVE) {
            return;
        }
        let anon = fr.is_anon_type();
        let pages = self.folio_pages(frames, f);
        for &p in &pages {
            self.lists.remove(frames, p);
            frames[p as usize].flags |= PG_ACTIVE;
            self.lists.add_head(frames, p, LruList::of(anon, true));
        }
        vm.pgactivate += pages.len() as u64;
        self.note_lru_add(anon, true, pages.len() as u64); // update_page_reclaim_stat(.., 1)
    }

    /// `workingset_refault` → `lru_note_cost_refault` (§3.12) takes `lru_lock` for a folio
    /// that was in the workingset, since the cost model arrived (5.8; the 6.x profile).
    fn refault_notes_cost(&self) -> bool {
        self.profile >= Profile::V6
    }

    /// 5.9+: every `workingset_age_nonresident` adds on the group's lruvec line and each
    /// ancestor's (the model's V6 profiles, 5.15+).
    fn workingset_atomics(&self) -> [u64; 2] {
        [if self.profile >= Profile::V6 { self.age_walks } else { 0 }, 0]
    }

    fn workingset_atomics_walk_up(&self) -> bool {
        true
    }

    /// To the inactive tail (`lru_move_tail`).
    fn rotate_reclaimable(&mut self, frames: &mut [Frame], f: u32, vm: &mut VmStat) {
        let anon = frames[f as usize].is_anon_type();
        self.lists.remove(frames, f);
        self.lists.add_tail(frames, f, LruList::of(anon, false));
        vm.pgrotated += 1;
    }

    fn lru_sizes(&self) -> [u64; 4] {
        self.lists.len
    }

    fn shrink_node(&mut self, sim: &mut Sim, sc: &mut ScanControl) {
        // 5.15-6.1: `mem_cgroup_flush_stats()` first (reclaim/rstat_flush.rs); not again when
        // a pass resumes after a sleep inside it, or kswapd's after a preemption point.
        let resumed = sc.isolated_recheck.is_some() || sc.pass_left.is_some();
        if !resumed {
            let units = crate::reclaim::rstat_flush::memcg_stat_units(&sim.stats.vm, self.lists.moves);
            if sim.reclaim_flush_stats(sc, units) {
                self.stats_flushed(&sim.stats.vm);
            }
        }
        self.prepare_scan_control(sim, sc);
        if let Some(p) = &sc.pass_left {
            // A reclaimer back inside its pass: the decisions are the pass's own.
            (sc.may_deactivate, sc.cache_trim_mode, sc.file_is_tiny) = (p.may_deactivate, p.cache_trim_mode, p.file_is_tiny);
        }
        self.shrink_lruvec(sim, sc);
    }

    /// `kswapd_age_node` / `age_active_anon`: keep enough inactive anon while swap has room.
    fn kswapd_age(&mut self, sim: &mut Sim, sc: &mut ScanControl) {
        self.catch_up_stats(sc.start_clock.max(sim.now), &sim.stats.vm);
        if sim.swap.free_pages() > 0 && self.inactive_is_low(true) {
            self.shrink_active_list(sim, SWAP_CLUSTER_MAX, LruList::ActiveAnon, sc);
        }
    }

    fn reclaim_cycle_end(&mut self, vm: &VmStat) {
        self.refault_snapshot = self.stat_activations(vm);
    }

    fn eviction_shadow(&mut self, frames: &[Frame], f: u32, anon: bool) -> u32 {
        let tracked = if anon { self.workingset_anon } else { self.workingset_file };
        if tracked {
            self.workingset_eviction(frames, f)
        } else {
            0
        }
    }

    fn refault(&mut self, ctx: RefaultCtx<'_>, f: u32, shadow: u32, anon: bool) {
        self.workingset_refault(ctx, f, shadow, anon);
    }

    fn refault_flush(&self) -> crate::config::RefaultFlush {
        self.refault_flush
    }

    fn reclaim_flush(&self) -> crate::config::RefaultFlush {
        self.reclaim_flush
    }

    fn lru_moves(&self) -> u64 {
        self.lists.moves
    }

    fn stats_flushed(&mut self, vm: &VmStat) {
        let lru = self.lists.len;
        if let Some(fl) = &mut self.flushed {
            fl.flush_now([vm.workingset_activate_anon, vm.workingset_activate_file], lru);
        }
    }

    fn check(&self, frames: &[Frame]) -> Vec<String> {
        let mut errs = Vec::new();
        let mut per_list = [0u64; 4];
        for f in frames.iter() {
            if let Some(l) = Lrus::list_of(f) {
                per_list[l as usize] += 1;
                if !f.has(PG_INUSE) {
                    errs.push("a free frame is on an LRU list".to_string());
                }
                if l.is_anon() != f.has(PG_SWAPBACKED) {
                    errs.push("a frame is on the wrong LRU type".to_string());
                }
            }
        }
        for (i, f) in frames.iter().enumerate() {
            let order = f.folio_order();
            if order > 0 && f.has(PG_LRU) && f.index & ((1 << order) - 1) == 0 && self.lists.folio_run(frames, i as u32).len() != 1 << order {
                errs.push(format!("the pages of the large folio at frame {i} are not together on one list"));
            }
        }
        if per_list != self.lists.len {
            errs.push(format!("LRU lengths {:?} != frames flagged {:?}", self.lists.len, per_list));
        }
        errs
    }
}
