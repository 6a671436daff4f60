//! The per-CPU LRU-add batch: a new folio reaches an LRU list only when its CPU's batch is
//! moved (kernel-algorithms.md §1.8's `lru_add`; mm/swap.c).
//!
//! `folio_add_lru` (6.x; `lru_cache_add` / `__lru_cache_add` in 2.6.28–5.x) does not put the
//! folio on a list: it takes a reference and appends it to the running CPU's batch
//! (`cpu_fbatches.lru_add` in 6.x, the `lru_add_pvec` pagevec in older kernels). The whole
//! batch is moved to the lists under `lru_lock` (`folio_batch_move_lru(fbatch, lru_add)`,
//! `__pagevec_lru_add`) when
//! * the batch is full: `PAGEVEC_SIZE` folios, 14 / 15 / 31 by era
//!   ([`crate::config::lru_batch_size`]);
//! * the folio is large: `folio_batch_add_and_move` moves at once when
//!   `!folio_may_be_lru_cached` (6.18; `folio_test_large` in earlier 6.x, `PageCompound` in
//!   4.x);
//! * the CPU drains it, `lru_add_drain()`: at the start of every `shrink_inactive_list` and
//!   `shrink_active_list` (every era), of MGLRU's `lru_gen_shrink_node`, and after a swap-in
//!   readahead window of more than one page (`swap_cluster_readahead` /
//!   `swap_vma_readahead`: "Push any new pages onto the LRU now"; a one-page window jumps to
//!   `skip:` past it). `lru_add_drain_all` (migration, compaction, mlock, swapoff) the model
//!   has no caller for.
//!
//! Before 3.11 each CPU had one batch per LRU list (`lru_add_pvecs[NR_LRU_LISTS]`, the list
//! chosen by the caller of `__lru_cache_add(page, lru)`), each moved when it alone was full;
//! Mel Gorman's "mm: pagevec: defer deciding which LRU to add a page to until pagevec drain
//! time" (3.11, 13f7f78981e4) made it one batch whose folios are placed when it moves. The
//! 2.6.28 profile has the per-list batches.
//!
//! Until then the folio is on no list and not `PG_lru`: reclaim cannot isolate it, the list
//! sizes that `get_scan_count` and the workingset size read do not count it, and
//! `folio_rotate_reclaimable` and `folio_activate` skip it. Which list it joins is decided when
//! it is moved (`lru_add` → `lruvec_add_folio` reads `PG_active`), from the flags set before
//! it was batched: a refault the workingset found recent is activated — `PG_active`,
//! `PG_workingset` and the `workingset_activate` count — in `workingset_refault` before
//! `folio_add_lru` (6.x `__read_swap_cache_async` / `swapin_folio`), so the count does not
//! wait for the batch, and the folio goes to the active list when the batch moves. MGLRU's
//! `folio_add_lru` sets `PG_active` in a fault (`lru_gen_in_fault`) before batching; the
//! model keeps, with each batched folio, whether it was added in a fault.
//!
//! `folio_mark_accessed` on a batched folio (3.11+, Mel Gorman's "mm: activate !PageLRU
//! pages on mark_page_accessed if page is on local pagevec"): a referenced, inactive folio is
//! marked `PG_active` if it is in the local CPU's batch (`__lru_cache_activate_folio`) and
//! joins the active list when the batch moves; `PG_referenced` is cleared and
//! `workingset_activation` ages the non-resident clock either way. 2.6.28's
//! `mark_page_accessed` activated only `PageLRU` pages and left a batched one referenced.
//!
//! Per CPU: the batch belongs to the CPU, not the task. A task that migrates leaves its folios
//! in the old CPU's batch, where the next task's folios follow them; two CPUs' folios reach
//! the list in runs of up to a batch each, which is the order reclaim takes them and so the
//! order of the swap slots it gives them.
//!
//! Simplifications: only a user task's adds are batched (`LruLock::running` names its CPU);
//! a kernel thread's (zswap's writeback re-adding a folio) go straight to the list. Draining
//! in reclaim happens once at the start of the model's `shrink_node` pass, before the pass's
//! `get_scan_count` (the kernel's first `shrink_*_list` drains after it; nothing adds to the
//! batch between the kernel's calls within one atomic pass of the model). A batched folio that
//! is freed (unmapped, its swap cache dropped) leaves the batch at once; the kernel's batch
//! keeps a reference and frees it when the batch moves.

use crate::config::Profile;
use crate::engine::Sim;
use crate::mm::{LruList, PG_ACTIVE, PG_LRU, PG_LRU_BATCH};
use crate::reclaim::ScanControl;

/// How many folios went through a batch and why batches were moved.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LruAddStats {
    /// Folios appended to a CPU's batch.
    pub batched: u64,
    /// Batches moved because they were full (or held a large folio).
    pub full: u64,
    /// `lru_add_drain` by reclaim.
    pub reclaim_drains: u64,
    /// `lru_add_drain` after a swap-in readahead window.
    pub readahead_drains: u64,
}

/// One batched folio: the folio, whether it was added outside a fault, and its batch (the
/// LRU list it was added for before 3.11, 0 since).
type Entry = (u32, bool, u8);

/// The CPUs' LRU-add batches.
#[derive(Debug, Default)]
pub struct LruAddBatches {
    /// Per CPU, in the order added.
    cpus: Vec<Vec<Entry>>,
    pub stats: LruAddStats,
}

impl LruAddBatches {
    /// Append folio `f` to CPU `cpu`'s batch `key` of capacity `size`: true when that batch
    /// is now full.
    pub fn push(&mut self, cpus: usize, cpu: usize, (f, outside_fault, key): Entry, size: u32) -> bool {
        if self.cpus.len() < cpus {
            self.cpus.resize_with(cpus, Vec::new);
        }
        self.cpus[cpu].push((f, outside_fault, key));
        self.stats.batched += 1;
        self.cpus[cpu].iter().filter(|e| e.2 == key).count() >= size as usize
    }

    /// Empty CPU `cpu`'s batch `key` (`Some`) or all its batches (`None`, in the order of
    /// the lists: `drain_cpu_pagevecs` walks `for_each_lru` before 3.11), each in the order
    /// its folios were added.
    pub fn take(&mut self, cpu: usize, key: Option<u8>) -> Vec<(u32, bool)> {
        let Some(b) = self.cpus.get_mut(cpu) else { return Vec::new() };
        let mut out: Vec<Entry> = match key {
            Some(k) => {
                let (taken, kept) = std::mem::take(b).into_iter().partition(|e| e.2 == k);
                *b = kept;
                taken
            }
            None => std::mem::take(b),
        };
        out.sort_by_key(|e| e.2); // stable: the order added within a batch
        out.into_iter().map(|(f, o, _)| (f, o)).collect()
    }

    /// Is `f` in CPU `cpu`'s batch (`__lru_cache_activate_folio` searches the local one)?
    pub fn in_local(&self, cpu: usize, f: u32) -> bool {
        self.cpus.get(cpu).is_some_and(|b| b.iter().any(|e| e.0 == f))
    }

    /// Take `f` out of whichever batch holds it (it is being freed).
    pub fn remove(&mut self, f: u32) {
        for b in &mut self.cpus {
            if let Some(i) = b.iter().position(|e| e.0 == f) {
                b.remove(i);
                return;
            }
        }
    }

    /// Folios waiting in all batches.
    pub fn len(&self) -> usize {
        self.cpus.iter().map(Vec::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every batched folio is marked, in one batch once, and on no list.
    pub fn check(&self, frames: &[crate::mm::Frame]) -> Vec<String> {
        let mut errs = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        for (cpu, b) in self.cpus.iter().enumerate() {
            for &(f, _, _) in b {
                let fr = &frames[f as usize];
                if !fr.has(PG_LRU_BATCH) || fr.has(PG_LRU) || !seen.insert(f) {
                    errs.push(format!("frame {f} in CPU {cpu}'s LRU-add batch has flags {:#x} (or is in two)", fr.flags));
                }
            }
        }
        let marked = frames.iter().filter(|fr| fr.has(PG_LRU_BATCH)).count();
        if marked != seen.len() {
            errs.push(format!("{marked} frames are marked PG_LRU_BATCH but {} are in batches", seen.len()));
        }
        errs
    }
}

impl Sim {
    /// `folio_add_lru`: into the running CPU's batch, moved when full or for a large folio;
    /// straight to the list outside a user task (a kernel thread's add, a unit test's).
    pub(crate) fn folio_add_lru(&mut self, f: u32, outside_fault: bool) {
        // The folio was charged and counted on this CPU (memcg_rstat_updated, rstat_flush.rs).
        self.rstat_updated();
        let Some((_, cpu)) = self.reclaim.lru_lock.running else {
            self.lru_add_now(f, outside_fault);
            return;
        };
        let fr = &mut self.mem.frames[f as usize];
        fr.flags |= PG_LRU_BATCH;
        // Before 3.11 one batch per LRU list, the list chosen by the caller (2.6.28's
        // `lru_cache_add_lru(page, lru)`, `lru_add_pvecs[NR_LRU_LISTS]`); Mel Gorman's "mm:
        // pagevec: defer deciding which LRU to add a page to until pagevec drain time" made it
        // one.
        let key = if self.profile == Profile::V2_6_28 { LruList::of(fr.is_anon_type(), fr.has(PG_ACTIVE)) as u8 } else { 0 };
        let large = fr.folio_order() > 0;
        let cpus = self.sched.cpus.len();
        let size = crate::config::lru_batch_size(&self.cfg.config.kernel.profile);
        if self.reclaim.lru_add.push(cpus, cpu, (f, outside_fault, key), size) || large {
            self.reclaim.lru_add.stats.full += 1;
            let n = self.lru_add_move(cpu, Some(key));
            self.lru_lock_in_access_path(n);
        }
    }

    /// `lru_add`: the policy places the folio by its flags.
    fn lru_add_now(&mut self, f: u32, outside_fault: bool) {
        if outside_fault {
            self.reclaim.policy().folio_add_outside_fault(&mut self.mem.frames, f);
        } else {
            self.reclaim.policy().folio_add(&mut self.mem.frames, f);
        }
    }

    /// `folio_batch_move_lru(lru_add)` of CPU `cpu`'s batch `key` (all of them: `None`):
    /// the folios moved.
    fn lru_add_move(&mut self, cpu: usize, key: Option<u8>) -> u64 {
        let batch = self.reclaim.lru_add.take(cpu, key);
        for &(f, outside_fault) in &batch {
            self.mem.frames[f as usize].flags &= !PG_LRU_BATCH;
            self.lru_add_now(f, outside_fault);
        }
        batch.len() as u64
    }

    /// `lru_add_drain()` by the running task after its swap-in readahead window, under
    /// `lru_lock` at its clock.
    pub(crate) fn lru_add_drain_running(&mut self) {
        let Some((_, cpu)) = self.reclaim.lru_lock.running else { return };
        let n = self.lru_add_move(cpu, None);
        if n > 0 {
            self.reclaim.lru_add.stats.readahead_drains += 1;
            self.lru_lock_in_access_path(n);
        }
    }

    /// `lru_add_drain()` at the start of a reclaim pass, on the reclaimer's CPU.
    pub(crate) fn lru_add_drain_reclaim(&mut self, sc: &mut ScanControl) {
        let n = self.lru_add_move(sc.cpu, None);
        if n > 0 {
            self.reclaim.lru_add.stats.reclaim_drains += 1;
            self.lru_lock_in_reclaim(sc, n);
        }
    }

    /// A folio being freed leaves its batch.
    pub(crate) fn lru_add_forget(&mut self, f: u32) {
        let fr = &mut self.mem.frames[f as usize];
        if fr.has(PG_LRU_BATCH) {
            fr.flags &= !PG_LRU_BATCH;
            self.reclaim.lru_add.remove(f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_reports_full_at_its_size_and_keeps_the_order_of_adds() {
        let mut b = LruAddBatches::default();
        for f in 0..14 {
            assert!(!b.push(2, 1, (f, false, 0), 15));
        }
        assert!(b.push(2, 1, (14, true, 0), 15));
        let got: Vec<u32> = b.take(1, None).into_iter().map(|(f, _)| f).collect();
        assert_eq!(got, (0..15).collect::<Vec<_>>());
        assert!(b.is_empty());
    }

    #[test]
    fn only_the_local_batch_is_searched_and_a_freed_folio_leaves_its_batch() {
        let mut b = LruAddBatches::default();
        b.push(2, 0, (7, false, 0), 31);
        b.push(2, 1, (9, false, 0), 31);
        assert!(b.in_local(0, 7) && !b.in_local(1, 7));
        b.remove(7);
        assert!(!b.in_local(0, 7));
        assert_eq!(b.len(), 1);
    }

    /// A two-CPU machine of `profile` with user task 0 running on CPU `cpu`.
    fn machine(profile: &str, cpu: usize) -> Sim {
        let text = "name = \"t\"\n[machine]\ncpus = 2\nram = \"64MiB\"\n[[swap]]\ndevice = \"hdd\"\nsize = \"64MiB\"\n[[task]]\nname = \"t\"\n[[task.mapping]]\nname = \"m\"\nkind = \"anon\"\nsize = \"1MiB\"\n[[task.phase]]\nmapping = \"m\"\npattern = \"sequential\"\n";
        let cfg = crate::config::load(text, "t.toml", &[format!("kernel.profile=\"{profile}\"")]).expect("valid");
        let mut sim = Sim::new(&cfg);
        sim.reclaim.lru_lock.running = Some((0, cpu));
        sim
    }

    /// A new anonymous page added by the running task; `extra` flags set before the add.
    fn add_anon(sim: &mut Sim, extra: u32) -> u32 {
        let f = sim.take_frame();
        sim.mem.frames[f as usize].flags |= crate::mm::PG_SWAPBACKED | extra;
        sim.lru_add(f);
        f
    }

    fn on_lists(sim: &Sim) -> u64 {
        sim.reclaim.lru_sizes().iter().sum()
    }

    #[test]
    fn new_pages_reach_the_lru_only_when_their_cpus_batch_is_full() {
        for (profile, size) in [("6.x", 31), ("6.1", 15), ("4.14", 14)] {
            let mut sim = machine(profile, 1);
            let first: Vec<u32> = (0..size - 1).map(|_| add_anon(&mut sim, 0)).collect();
            assert_eq!(on_lists(&sim), 0, "{profile}: {} pages wait in CPU 1's batch", size - 1);
            assert!(first.iter().all(|&f| sim.mem.frames[f as usize].has(PG_LRU_BATCH) && !sim.mem.frames[f as usize].has(PG_LRU)));
            add_anon(&mut sim, 0);
            assert_eq!(on_lists(&sim), size as u64, "{profile}: the {size}th page moves the whole batch");
            assert!(sim.reclaim.lru_add.is_empty());
            assert!(sim.check_invariants().is_empty(), "{:?}", sim.check_invariants());
        }
    }

    #[test]
    fn before_3_11_each_lru_list_has_its_own_batch() {
        use crate::mm::PG_ACTIVE;
        for (profile, moved) in [("2.6.28", 0), ("3.14", 14)] {
            let mut sim = machine(profile, 0);
            for _ in 0..13 {
                add_anon(&mut sim, 0);
            }
            add_anon(&mut sim, PG_ACTIVE);
            assert_eq!(on_lists(&sim), moved, "{profile}: 13 inactive pages and an active one");
        }
        let mut sim = machine("2.6.28", 0);
        for _ in 0..13 {
            add_anon(&mut sim, 0);
            add_anon(&mut sim, PG_ACTIVE);
        }
        add_anon(&mut sim, PG_ACTIVE);
        assert_eq!(on_lists(&sim), 14, "2.6.28: the 14th active page moves the active batch alone");
    }

    #[test]
    fn reclaim_drains_its_own_cpus_batch_and_not_another_cpus() {
        let mut sim = machine("6.x", 0);
        (0..5).for_each(|_| {
            add_anon(&mut sim, 0);
        });
        sim.reclaim.lru_lock.running = Some((0, 1));
        (0..7).for_each(|_| {
            add_anon(&mut sim, 0);
        });
        let mut sc = ScanControl::new(32, false, false, 1);
        sim.lru_add_drain_reclaim(&mut sc);
        assert_eq!(on_lists(&sim), 7, "CPU 1's batch moved");
        assert_eq!(sim.reclaim.lru_add.len(), 5, "CPU 0's batch stays");
    }

    #[test]
    fn a_refault_activated_before_it_was_batched_joins_the_active_list_when_the_batch_moves() {
        let mut sim = machine("6.x", 0);
        let f = add_anon(&mut sim, crate::mm::PG_ACTIVE | crate::mm::PG_WORKINGSET);
        assert_eq!(on_lists(&sim), 0);
        sim.lru_add_drain_running();
        let sizes = sim.reclaim.lru_sizes();
        assert_eq!(sizes[crate::mm::LruList::ActiveAnon as usize], 1, "moved to the active list: {sizes:?}");
        assert!(sim.mem.frames[f as usize].has(PG_LRU));
    }

    #[test]
    fn a_second_access_to_a_folio_in_the_local_batch_activates_it_from_3_11() {
        use crate::mm::{LruList, PG_ACTIVE, PG_REFERENCED};
        for (profile, local, active) in [("6.x", true, true), ("6.x", false, false), ("2.6.28", true, false)] {
            let mut sim = machine(profile, 0);
            let f = add_anon(&mut sim, 0);
            if !local {
                sim.reclaim.lru_lock.running = Some((0, 1));
            }
            sim.mark_page_accessed(f);
            sim.mark_page_accessed(f);
            let fr = sim.mem.frames[f as usize];
            assert_eq!(fr.has(PG_ACTIVE), active, "{profile}, local {local}");
            assert_eq!(fr.has(PG_REFERENCED), profile == "2.6.28", "{profile}: PG_referenced after the second access");
            sim.reclaim.lru_lock.running = Some((0, 0));
            sim.lru_add_drain_running();
            let sizes = sim.reclaim.lru_sizes();
            assert_eq!(sizes[LruList::ActiveAnon as usize], active as u64, "{profile}, local {local}: {sizes:?}");
        }
    }

    #[test]
    fn a_freed_folio_leaves_its_batch() {
        let mut sim = machine("6.x", 0);
        let f = add_anon(&mut sim, 0);
        add_anon(&mut sim, 0);
        sim.free_frame(f);
        assert_eq!(sim.reclaim.lru_add.len(), 1);
        assert!(sim.check_invariants().is_empty(), "{:?}", sim.check_invariants());
    }

    #[test]
    fn the_batch_size_follows_the_era() {
        use crate::config::lru_batch_size;
        assert_eq!(lru_batch_size("2.6.28"), 14);
        assert_eq!(lru_batch_size("4.14"), 14);
        assert_eq!(lru_batch_size("5.x"), 15);
        assert_eq!(lru_batch_size("5.17"), 15);
        assert_eq!(lru_batch_size("6.1"), 15);
        assert_eq!(lru_batch_size("6.8"), 15);
        assert_eq!(lru_batch_size("6.9"), 31);
        assert_eq!(lru_batch_size("6.x"), 31);
    }
}
