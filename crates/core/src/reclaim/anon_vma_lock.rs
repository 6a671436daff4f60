//! 2.6.28's `anon_vma->lock`: the spinlock every reverse-map walk of an anonymous page holds
//! for the whole walk, and the time reclaimers spin on it when several walk one anon_vma at
//! once (kernel-algorithms.md §3.10 for the walks, mm/anon_vma.rs for what they visit).
//!
//! In 2.6.28 (mm/rmap.c) `page_referenced_anon` and `try_to_unmap_anon` start with
//! `page_lock_anon_vma`: `rcu_read_lock()` and `spin_lock(&anon_vma->lock)` (only for a page
//! that is still mapped: an unmapped page is not walked and takes no lock), then
//! `list_for_each_entry(vma, &anon_vma->head, anon_vma_node)` runs `page_referenced_one` /
//! `try_to_unmap_one` (a page-table descent, the PTE lock, for the unmap the PTE clear and its
//! TLB flush) in each VMA until the page's mapcount is found, and only then
//! `page_unlock_anon_vma`. The same lock is taken by `anon_vma_prepare` (a VMA's first
//! anonymous fault, for a new anon_vma nobody else uses yet), `anon_vma_link` (fork's
//! `dup_mmap`, one `list_add_tail`) and `anon_vma_unlink` (exit's `free_pgtables`, one
//! `list_del`); `page_add_anon_rmap` and the fault path do not take it. Before 2.6.34's chains
//! every process forked from one parent shares the parent's anon_vma, so with hackbench's
//! 5,600 forked workers every reclaimer that looks at a worker's page holds the one anon_vma
//! of that mapping for k + 1 VMA visits (~0.4 ms at 150 ns a visit for an average worker),
//! and all the others that look at a worker page of the same mapping spin behind it.
//!
//! Eras. 2.6.28–2.6.33 (the model's 2.6.28 profile, and 2.6.32 which shares it): a spinlock,
//! exclusive, as above. 2.6.34–3.7 lock the root anon_vma (a spinlock, a mutex from 2.6.39),
//! eras the model has no profile for. From 3.8 the lock is an rwsem and from 3.9 the rmap walk
//! takes it for reading (`page_lock_anon_vma_read`, `rmap_walk_anon_lock`): reclaimers walking
//! one anon_vma no longer exclude each other, so the 3.14, 4.14 and 6.x profiles take nothing
//! here (fork and exit write-lock it, but their list operations are tiny and they wait behind
//! walks only; see below).
//!
//! Decisions:
//! * One busy timeline per anon_vma (`mm::AnonVma`), kept with the lruvec lock's machinery
//!   (reclaim/lru_lock.rs `LruLock::acquire`, reclaim/timeline.rs): an acquisition at the
//!   walker's clock takes the earliest free room of its hold at or after it and spins until
//!   then, first-come-first-served by clock whatever order the model processes CPUs in.
//! * The hold is what the walk is charged: `rmap_walk_ns` per VMA visited, plus `unmap_ns` per
//!   mapping removed for `try_to_unmap`. The TLB flush of other CPUs (`flush_tlb_page` in
//!   `try_to_unmap_one`) is charged by reclaim/tlb_flush.rs after the walk and is not in the
//!   hold. No hand-off cost is charged for the lock's cache line (one line against walks of
//!   thousands of VMAs; there is no figure for it apart from the lruvec's).
//! * The spin is CPU (the reclaimer keeps its CPU, preemption off): it goes to the reclaimer's
//!   `anon_vma_lock` category and `summary.anon_vma_lock_*`.
//! * A VMA that never forked has no anon_vma in the model (`NONE`): its pages are walked by one
//!   visit, and two reclaimers at the same page of one process are rare and brief: no lock.
//! * Exit: a process that exits unlinks its VMAs (`anon_vma_unlink`), so it waits until the
//!   walks holding its anon_vma are through; the wait is CPU of the exiting task and delays its
//!   end (the parent's `wait()` returns after `exit_mm`). The unlink's own hold (one list
//!   deletion) is not a figure the model has and is taken as zero: it delays no walker.
//! * Fork's `anon_vma_link` is not modelled: the model charges fork no CPU at all
//!   (engine/fork.rs), and the forks of the workloads that share an anon_vma (hackbench's) run
//!   at the start, before anything reclaims.
//! * A machine of one CPU never finds a spinlock held (a holder is not preempted): skipped.

use super::lru_lock::{Holder, LruLock, KSWAPD};
use super::ScanControl;
use crate::config::Profile;
use crate::engine::Sim;
use crate::mm::{Owner, NONE};
use crate::stats::{CpuCategory, CpuCost};

/// What the anon_vma locks saw (`summary.anon_vma_lock_*`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AnonVmaLockStats {
    /// Acquisitions by reclaim's walks and by exits, and those that found the lock held.
    pub acquisitions: u64,
    pub contended: u64,
    /// Nanoseconds spun by reclaimers (kswapd and direct), and by exiting tasks.
    pub reclaim_spin_ns: u64,
    pub exit_spin_ns: u64,
}

/// One lock per anon_vma, indexed by its id in `Memory::anon_vmas` (grown on first use).
#[derive(Debug, Default)]
pub struct AnonVmaLocks {
    locks: Vec<LruLock>,
    pub stats: AnonVmaLockStats,
}

impl AnonVmaLocks {
    /// Take anon_vma `av`'s lock at clock `at` for `hold_ns`; `floor` is the event loop's
    /// time. Returns the spin.
    pub fn acquire(&mut self, av: u32, holder: Holder, at: u64, hold_ns: u64, floor: u64) -> u64 {
        let i = av as usize;
        if self.locks.len() <= i {
            self.locks.resize_with(i + 1, LruLock::default);
        }
        let spin = self.locks[i].acquire(holder, at, hold_ns, 0, floor).spin_ns;
        self.stats.acquisitions += 1;
        self.stats.contended += (spin > 0) as u64;
        spin
    }
}

impl Sim {
    /// Does this era hold an exclusive lock per anon_vma across the rmap walk, and can anyone
    /// find it held?
    fn anon_vma_lock_exclusive(&self) -> bool {
        self.profile == Profile::V2_6_28 && self.sched.cpus.len() > 1
    }

    /// The anon_vma whose lock a walk of the anonymous folio owned by VMA `owner` takes, if
    /// the era serialises on it.
    fn anon_vma_to_lock(&self, kind: Owner, owner: u32) -> Option<u32> {
        if kind != Owner::Anon || !self.anon_vma_lock_exclusive() {
            return None;
        }
        Some(self.mem.vmas[owner as usize].anon_vma).filter(|&av| av != NONE)
    }

    /// A reclaimer's rmap walk of a folio (`kind`, `owner` as the frame had them before the
    /// walk) at clock `at`, holding the lock for `hold_ns`: its spin, charged to `cost`'s
    /// `anon_vma_lock` category (and returned). Nothing for a walk that visited no VMA.
    pub(crate) fn anon_vma_lock_walk(&mut self, sc: &ScanControl, kind: Owner, owner: u32, at: u64, hold_ns: u64, cost: &mut CpuCost) -> u64 {
        let Some(av) = self.anon_vma_to_lock(kind, owner) else { return 0 };
        if hold_ns == 0 {
            return 0;
        }
        let holder = if sc.kswapd { KSWAPD } else { self.reclaim.current.unwrap_or(KSWAPD) };
        let spin = self.reclaim.anon_vma_locks.acquire(av, holder, at, hold_ns, self.now);
        self.reclaim.anon_vma_locks.stats.reclaim_spin_ns += spin;
        cost.charge(CpuCategory::AnonVmaLock, spin);
        spin
    }

    /// `anon_vma_unlink` of every shared anon_vma task `tid`'s exiting process is linked into,
    /// at clock `at`, one after the other: the time it spins behind the walks holding them.
    pub(crate) fn anon_vma_unlink_wait(&mut self, tid: u32, at: u64) -> u64 {
        if !self.anon_vma_lock_exclusive() {
            return 0;
        }
        let mm = self.tasks[tid as usize].mm;
        let others = self.tasks.iter().enumerate().any(|(i, t)| i != tid as usize && t.kind == crate::engine::TaskKind::User && t.mm == mm && t.state != crate::engine::TState::Done);
        if others {
            return 0; // exit_mmap runs when the mm's last thread exits
        }
        let avs: Vec<u32> = self.mm_vmas(mm).into_iter().map(|v| self.mem.vmas[v as usize].anon_vma).filter(|&av| av != NONE).collect();
        let mut t = at;
        for av in avs {
            t += self.reclaim.anon_vma_locks.acquire(av, tid, t, 0, self.now);
        }
        self.reclaim.anon_vma_locks.stats.exit_spin_ns += t - at;
        t - at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walkers_of_one_anon_vma_queue_and_walkers_of_two_do_not() {
        let mut l = AnonVmaLocks::default();
        assert_eq!(l.acquire(0, 1, 1_000, 400_000, 0), 0);
        // A second reclaimer at the same page's anon_vma 100 us later spins to the end.
        assert_eq!(l.acquire(0, 2, 101_000, 400_000, 0), 300_000);
        // Another anon_vma is another lock.
        assert_eq!(l.acquire(3, 2, 101_000, 400_000, 0), 0);
        // An exit's zero-length unlink waits for both walks of anon_vma 0.
        assert_eq!(l.acquire(0, 7, 2_000, 0, 0), 799_000);
        assert_eq!((l.stats.acquisitions, l.stats.contended), (4, 2));
    }
}
