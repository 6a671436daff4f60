//! The LRU policy interface: what a page-replacement policy (the classic active/inactive
//! lists, the multi-generational LRU) must do, and the registry that selects one by name
//! (`kernel.reclaim`).
//!
//! A policy owns its lists and its refault state. Everything policies share lives outside
//! it: the reclaim drivers (direct reclaim's priority loop, kswapd; `reclaim/direct.rs`,
//! `reclaim/kswapd.rs`), the page-out path (`shrink_folio_list`, `reclaim/pageout.rs`) and the
//! swap I/O layer (`swap/io.rs`). The frame's `PG_LRU` bit and list bits (`mm::LIST_MASK`)
//! belong to the policy; all other page flags are the kernel's.
//!
//! # Contract
//! The caller (the engine) guarantees:
//! - `folio_add` is called once for a folio that is not on any list (`PG_LRU` clear), after
//!   its owner and flags are set; placement hints are the flags the kernel itself reads in
//!   `lruvec_add_folio` / `lru_gen_folio_seq`: `PG_active` (a refault the policy activated,
//!   or a new anonymous page before 5.9), `PG_workingset`, `PG_readahead`, `PG_swapbacked`.
//! - `folio_del` is called only for a folio on a list (`PG_LRU` set), outside reclaim.
//! - `shrink_node` and `kswapd_age` are called with the policy taken out of `Sim` (so the
//!   policy may use all of `sim`); during them no other method of the policy is called
//!   except through the `&mut self` it was given.
//! - `rotate_reclaimable` is called for a folio on a list whose writeback just ended with
//!   `PG_reclaim` set (the engine has cleared `PG_reclaim` and `PG_active`).
//!
//! The implementer guarantees:
//! - list membership is reflected in `PG_LRU`: a folio it isolates has `PG_LRU` clear until it
//!   is put back or freed; `lru_sizes` counts exactly the folios with `PG_LRU` set, by type.
//! - `shrink_node` frees pages only through the shared page-out path, adds the pages it
//!   scanned and reclaimed to `sc`, and charges its CPU time to `sc.cost` by category (`stats::cpu`).
//! - `check` returns every inconsistency of its own state (empty when consistent).

use super::ScanControl;
use crate::config::Resolved;
use crate::engine::Sim;
use crate::mm::Frame;
use crate::stats::VmStat;

/// What a refault decision may read and change.
pub struct RefaultCtx<'a> {
    pub frames: &'a mut [Frame],
    pub vm: &'a mut VmStat,
    /// Free swap slots on all devices (anon competes for residence only while swap has room).
    pub swap_free: u64,
    /// The refault happens inside a page fault (`lru_gen_in_fault`); a `read()` is not one.
    pub in_fault: bool,
    /// The time (statistics flushed by then are visible, classic/flushed.rs).
    pub now: u64,
}

/// MGLRU's part of the page-out path (`lru_gen_enabled()` in `shrink_folio_list` and
/// `folio_referenced_one`): its own reference rule and the look-around of a young PTE.
pub trait LruGenRmap {
    /// Before the rmap walk: keep a mapped folio that look-around already marked referenced
    /// (6.1-6.13 `folio_update_gen() tried to promote this page?`).
    fn keep_before_rmap(&mut self, frame: &Frame, mapped: bool) -> bool;
    /// `lru_gen_look_around` for the young PTE `index` of VMA `vma` met by the rmap walk
    /// (already cleared); charges its CPU to `cost`.
    fn look_around(&mut self, mem: &mut crate::mm::Memory, costs: &crate::config::Costs, vma: u32, index: u32, cost: &mut crate::stats::CpuCost);
    /// `folio_check_references` under MGLRU after the walk found `young` PTEs: true to
    /// activate, false to keep; `None` to reclaim.
    fn referenced_verdict(&mut self, frame: &mut Frame, young: u32) -> Option<bool>;
}

pub trait LruPolicy {
    /// The name `kernel.reclaim` selects it by.
    fn name(&self) -> &'static str;

    /// `folio_add_lru`: a new, refaulted or read-ahead folio enters the lists, inside a page
    /// fault (swap-in, file or anonymous fault).
    fn folio_add(&mut self, frames: &mut [Frame], f: u32);
    /// `folio_add_lru` outside a page fault (a `read()`/`write()` through the page cache);
    /// only MGLRU places these differently (`lru_gen_in_fault`).
    fn folio_add_outside_fault(&mut self, frames: &mut [Frame], f: u32) {
        self.folio_add(frames, f)
    }
    /// `lruvec_del_folio`: a folio leaves the lists outside reclaim (freed while unmapped).
    fn folio_del(&mut self, frames: &mut [Frame], f: u32);
    /// `folio_mark_accessed`: an access through a file descriptor (read()/write()).
    fn mark_accessed(&mut self, frames: &mut [Frame], f: u32, vm: &mut VmStat);
    /// `folio_mark_accessed` of a folio still in a CPU's LRU-add batch (not `PG_LRU`);
    /// `local`: in the running CPU's batch (reclaim/lru_add.rs). By default as any access.
    fn mark_accessed_batched(&mut self, frames: &mut [Frame], f: u32, _local: bool, vm: &mut VmStat) {
        self.mark_accessed(frames, f, vm)
    }
    /// `activate_page` (`__activate_page`): an inactive folio on the lists moves to its active
    /// list, counted in `pgactivate` and as a rotation in the balance statistics; its
    /// PG_referenced is left as it was. Only the classic LRU's eras call it (4.8–5.8
    /// `do_swap_page`, before MGLRU existed).
    fn activate(&mut self, _frames: &mut [Frame], _f: u32, _vm: &mut VmStat) {}
    /// Does `refault` of a folio that was in the workingset note its cost under `lru_lock`
    /// (the classic LRU's `lru_note_cost_refault`, 5.8+)? MGLRU's `lru_gen_refault` does not.
    fn refault_notes_cost(&self) -> bool {
        false
    }
    /// Atomic adds the policy has made so far to its group's workingset counters, by line
    /// (`workingset_lines.rs`: the eviction/ageing counter, MGLRU's refault counter).
    fn workingset_atomics(&self) -> [u64; super::workingset_lines::LINES] {
        [0; super::workingset_lines::LINES]
    }
    /// Is each of those adds repeated on every ancestor's lruvec (the classic LRU's
    /// `workingset_age_nonresident`)?
    fn workingset_atomics_walk_up(&self) -> bool {
        false
    }
    /// What `refault` does with the memory cgroup statistics first (5.15-5.17's classic
    /// `mem_cgroup_flush_stats()`, reclaim/rstat_flush.rs); MGLRU's `lru_gen_refault` returns
    /// before that call.
    fn refault_flush(&self) -> crate::config::RefaultFlush {
        crate::config::RefaultFlush::Periodic
    }
    /// What `shrink_node` does with the memory cgroup statistics first (the classic LRU's
    /// `mem_cgroup_flush_stats()`, 5.15-6.1, reclaim/rstat_flush.rs); MGLRU's reclaim never
    /// calls it.
    fn reclaim_flush(&self) -> crate::config::RefaultFlush {
        crate::config::RefaultFlush::Periodic
    }
    /// Folios ever added to or taken off the policy's lists (memory cgroup statistics
    /// updates, reclaim/rstat_flush.rs); 0 for a policy whose refault does not flush.
    fn lru_moves(&self) -> u64 {
        0
    }
    /// The memory cgroup statistics were just flushed: what the policy reads of them
    /// is exact until the next updates.
    fn stats_flushed(&mut self, _vm: &VmStat) {}
    /// `folio_rotate_reclaimable`: writeback of a folio marked for reclaim ended; put it where
    /// reclaim finds it next.
    fn rotate_reclaimable(&mut self, frames: &mut [Frame], f: u32, vm: &mut VmStat);
    /// Pages on the lists as `/proc/vmstat` reports them: `[nr_inactive_anon,
    /// nr_active_anon, nr_inactive_file, nr_active_file]` (indexed by `mm::LruList`).
    fn lru_sizes(&self) -> [u64; 4];

    /// One reclaim pass over the node's lruvec at `sc.priority` (`shrink_node` /
    /// `shrink_lruvec`, or MGLRU's `lru_gen_shrink_node`).
    fn shrink_node(&mut self, sim: &mut Sim, sc: &mut ScanControl);
    /// kswapd's aging of the node before it shrinks it (`kswapd_age_node`).
    fn kswapd_age(&mut self, sim: &mut Sim, sc: &mut ScanControl);
    /// A reclaim cycle ended (direct reclaim returned, kswapd went to sleep):
    /// `snapshot_refaults`.
    fn reclaim_cycle_end(&mut self, vm: &VmStat);

    /// `workingset_eviction`: the shadow to leave in the page or swap cache for a folio being
    /// evicted (`anon`: swap-backed); 0 when this policy (in this era) keeps none.
    fn eviction_shadow(&mut self, frames: &[Frame], f: u32, anon: bool) -> u32;
    /// `workingset_refault`: a folio is being read back in over `shadow`; set the flags that
    /// place it (`folio_add` follows) and count the refault.
    fn refault(&mut self, ctx: RefaultCtx<'_>, f: u32, shadow: u32, anon: bool);

    /// Every inconsistency of the policy's state against the frames (empty when consistent).
    fn check(&self, frames: &[Frame]) -> Vec<String>;

    /// The policy's hooks into the page-out path's rmap walk; `None` for the classic rules.
    fn lru_gen_rmap(&mut self) -> Option<&mut dyn LruGenRmap> {
        None
    }
    /// The policy's own counters (MGLRU's walk statistics), by name; empty when it has none.
    fn policy_stats(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
    /// The generations as `/sys/kernel/debug/lru_gen` lists them at virtual time `now`, oldest
    /// first: `[seq, age in ms, anon pages, file pages]`; `None` for a policy without them.
    fn lru_gen_rows(&self, _now: u64) -> Option<Vec<[u64; 4]>> {
        None
    }
}

/// The policies `kernel.reclaim` may name.
pub const RECLAIM_POLICIES: &[&str] = &["classic", "mglru"];

/// The registry: a policy by name. The name has been validated against [`RECLAIM_POLICIES`].
pub fn build(name: &str, cfg: &Resolved) -> Box<dyn LruPolicy> {
    match name {
        "classic" => Box::new(super::classic::ClassicLru::new(cfg)),
        "mglru" => Box::new(super::mglru::MgLru::new(cfg)),
        other => unreachable!("kernel.reclaim {other:?} passed validation but has no policy"),
    }
}
