//! The lruvec's `lru_lock`: a spinlock that every CPU moving folios on or off the LRU lists
//! takes, and the time CPUs spin on it when many do so at once.
//!
//! In 5.17 (the posting of seed 004; `mm/vmscan.c`, `mm/swap.c`) one `lruvec->lru_lock`
//! serialises, for a node of a memory cgroup (§3.10, §3.11, §5.6); the eras before 4.8 have
//! the zone's `lru_lock` in the same places, which for the model's one zone is the same lock:
//! * reclaim's isolation and put-back: `shrink_inactive_list` and `shrink_active_list` take it
//!   around `isolate_lru_pages` and again around `move_pages_to_lru`; MGLRU's `evict_folios`
//!   around `isolate_folios` (which also sorts, i.e. moves, the folios it does not isolate)
//!   and around the put-back;
//! * the access path's per-CPU page vectors (`PAGEVEC_SIZE` 14 / 15 / 31 by era,
//!   [`crate::config::lru_batch_size`]): `folio_add_lru` (every new page-cache, anonymous
//!   or swapped-in folio, reclaim/lru_add.rs: moved when full, for a large folio, or by
//!   `lru_add_drain`, which reclaim takes in its own acquisition) and, for the classic LRU
//!   only, `folio_activate` from `folio_mark_accessed` (the second access through a file
//!   descriptor). A CPU takes the lock once per full vector (`pagevec_lru_move_fn`).
//!   MGLRU's `folio_mark_accessed` only bumps the tier bits in `folio->flags` and takes no
//!   lock (seed 004: "moving across tiers only involves operations on folio->flags");
//! * the classic LRU's refault of a folio that was in the workingset: `workingset_refault`
//!   → `lru_note_cost_refault` (5.8+, §3.12) takes the lock to update the lruvec's cost
//!   counters; MGLRU's `lru_gen_refault` does not.
//!
//! The kernel's lock is a queued spinlock: a CPU that finds it held spins, with interrupts off,
//! until the CPUs queued before it are through. A reclaim pass and a task's kernel work run
//! atomically in the model, each at its own clock, and the clocks of different CPUs are
//! processed out of order (a task runs ahead by up to the sync quantum, kswapd further). So
//! the lock is a timeline of busy intervals in virtual time: an acquisition at clock `t`
//! holding for `h` takes the earliest free interval of length `h` at or after `t`, and spins
//! until it starts. That is first-come-first-served by clock whatever order the model
//! processes the CPUs in, and deterministic. Intervals that ended before `sim.now` (no clock
//! is behind it) are dropped. The timeline and its search are reclaim/timeline.rs.
//!
//! Costs (named parameters in `Costs`):
//! * `lru_lock_folio_ns`: the time one folio keeps the lock (the list moves and LRU flag and
//!   counter updates on its `struct folio`). This is not extra CPU: it is the part of the work
//!   already charged (`scan_page_ns` in reclaim, the fault's or read's own cost in the access
//!   path) that is done under the lock; it only says how long others wait.
//! * `lru_lock_handoff_ns`: an acquisition by a CPU other than the last holder pulls the
//!   lock's cache line and the lruvec's list heads from the CPU that wrote them last. It is
//!   CPU time of the acquirer and also part of the hold.
//! * A machine of one CPU takes the lock but never finds it held (a holder is not preempted)
//!   and never moves its line: the model skips the lock there.
//! * The spin itself is CPU (the task keeps its CPU), charged to the reclaimer's
//!   `lru_lock` category in reclaim, and to the task's clock in the access path; both are
//!   counted in `LruLockStats`.
//!
//! The memory cgroup hierarchy's locks (`lru_note_cost`, mm/swap.c, 5.8+, §3.12). The classic
//! LRU notes the cost of reclaim and of refaults in `anon_cost` / `file_cost` of the group's
//! lruvec and of every ancestor's (`parent_lruvec` up to the root's), each under that
//! lruvec's own `lru_lock` since the per-memcg locks (5.11). Callers: `shrink_inactive_list`
//! after every batch it isolated (5.17: `lru_note_cost(lruvec, file, stat.nr_pageout)`, a
//! walk even for a cost of 0), `workingset_refault` for a folio that was in the workingset
//! (`lru_note_cost_folio`, 5.16; `lru_note_cost_refault` 6.2+), and from 6.2
//! `shrink_active_list` when it kept executable folios active. The era's locking is
//! [`crate::config::NoteCostLocking`]: to 6.16 every level is its own acquisition, the
//! group's included (after reclaim's put-back dropped that lock); from 6.17 the put-back's
//! hold goes on into the group's update and a zero cost stops there. The ancestors' lruvecs
//! hold no folios of a group below them, so their locks are taken by nothing else the model
//! runs: one timeline each ([`AncestorLocks`]), shared by every task and reclaimer of the
//! group, which is where 72 fio jobs in one `user.slice/test` group queue. The depth is
//! `machine.memcg_path`'s (the root is always one ancestor of a group with a limit; without
//! `memcg_limit` the tasks are the root's and there is none). MGLRU calls none of this:
//! `lru_gen_refault` returns before the note, and its eviction does not note costs. Each
//! level holds its lock for `lru_note_cost_ns` of work plus the hand-off.
//!
//! Not modelled: 2.6.28's `activate_page` taking the lock per page, the `i_pages` xarray lock
//! and the 3.9+ anon_vma / i_mmap rwsems (reader-shared in reclaim; 2.6.28's exclusive
//! anon_vma spinlock is reclaim/anon_vma_lock.rs, built on this lock's timeline), the ancestors' `nonresident_age`
//! atomics of `workingset_age_nonresident` (same cache line as their `lru_lock`, no lock),
//! the 6.17+ note's work inside the put-back's hold, and the cost a spinning CPU's
//! line-polling adds to the holder.

use crate::engine::Sim;
use crate::reclaim::ScanControl;
use crate::stats::CpuCategory;
use super::timeline::Timeline;

/// Who holds or asks for the lock, for the cache-line hand-off: the task id (a running task
/// stands for its CPU), `KSWAPD` for kswapd.
pub type Holder = u32;
pub(crate) const KSWAPD: Holder = u32::MAX;

/// How often the lock was taken, how often it was found busy, and the time spun.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LruLockStats {
    pub acquisitions: u64,
    pub contended: u64,
    /// Nanoseconds spun by reclaimers (kswapd and direct).
    pub reclaim_spin_ns: u64,
    /// Nanoseconds spun by tasks in the access path (page vector drains, refault cost notes).
    pub access_spin_ns: u64,
    /// Acquisitions by the classic LRU's `lru_note_cost_refault`.
    pub refault_notes: u64,
}

/// The lock's timeline and the CPUs' page vectors.
#[derive(Debug, Default)]
pub struct LruLock {
    /// Busy intervals, disjoint, back-to-back holds merged (a contended lock is one
    /// interval); indexed by free gap so a hold skips the gaps too short for it.
    busy: Timeline,
    last_holder: Option<Holder>,
    /// Folios waiting in each CPU's activate vector (`folio_activate`); the LRU-add batch,
    /// whose folios are not on a list until it moves, is reclaim/lru_add.rs.
    pagevec: Vec<u32>,
    /// The user task whose kernel work runs now and the CPU it runs on (set by the scheduler
    /// around a user task's run): whose page vector a `folio_add_lru` fills and whose clock
    /// pays the drain. None in kernel threads and I/O completions, which the model does not
    /// charge for the access path.
    pub running: Option<(u32, usize)>,
    pub stats: LruLockStats,
}

/// One acquisition's outcome: the spin before the lock was free, and the hand-off CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Acquired {
    pub spin_ns: u64,
    pub handoff_ns: u64,
}

impl Acquired {
    /// The acquirer's CPU time for taking the lock.
    pub fn cpu_ns(&self) -> u64 {
        self.spin_ns + self.handoff_ns
    }
}

impl LruLock {
    /// Take the lock at clock `at` for `work_ns` of work under it. `handoff_ns` is paid (and
    /// extends the hold) when the lock was last held by another CPU. `floor` is the event
    /// loop's time: no later acquisition comes before it.
    pub fn acquire(&mut self, holder: Holder, at: u64, work_ns: u64, handoff_ns: u64, floor: u64) -> Acquired {
        self.busy.drop_before(floor);
        let handoff_ns = if self.last_holder.is_some_and(|h| h != holder) { handoff_ns } else { 0 };
        self.last_holder = Some(holder);
        let hold = work_ns + handoff_ns;
        let start = self.busy.first_free(at, hold.max(1));
        if hold > 0 {
            self.busy.occupy(start, start + hold);
        }
        self.stats.acquisitions += 1;
        if start > at {
            self.stats.contended += 1;
        }
        Acquired { spin_ns: start - at, handoff_ns }
    }

    /// A folio went into CPU `cpu`'s page vector (`folio_add_lru`, `folio_activate`): true
    /// when the vector is now full and the CPU must take the lock to drain it.
    pub fn pagevec_add(&mut self, cpus: usize, cpu: usize, size: u32) -> bool {
        if self.pagevec.len() < cpus {
            self.pagevec.resize(cpus, 0);
        }
        self.pagevec[cpu] += 1;
        if self.pagevec[cpu] < size {
            return false;
        }
        self.pagevec[cpu] = 0;
        true
    }
}

/// What the ancestors' locks saw (`summary.lru_note_cost_*`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NoteCostStats {
    /// `lru_note_cost` calls that took at least one lock.
    pub walks: u64,
    /// Acquisitions of an ancestor's lock, those that found it held, and the time spun.
    pub ancestor_acquisitions: u64,
    pub ancestor_contended: u64,
    pub ancestor_spin_ns: u64,
}

/// The `lru_lock` of each memory cgroup above the group the tasks run in, the parent first
/// and the root's last: empty when the tasks are the root's.
#[derive(Debug, Default)]
pub struct AncestorLocks {
    locks: Vec<LruLock>,
    pub stats: NoteCostStats,
}

impl AncestorLocks {
    /// The ancestors of a group `depth` cgroups below the root (`machine.memcg_path`).
    pub fn new(depth: usize) -> AncestorLocks {
        AncestorLocks { locks: (0..depth).map(|_| LruLock::default()).collect(), stats: NoteCostStats::default() }
    }

    /// How many lruvecs above the group's own a walk updates.
    pub fn depth(&self) -> usize {
        self.locks.len()
    }

    /// Take each ancestor's lock in turn from clock `at`, each after the one below is
    /// dropped, for `work_ns` of work under it: the CPU the walk took (spins, hand-offs and
    /// work) and the part of it spun.
    fn walk(&mut self, holder: Holder, at: u64, work_ns: u64, handoff_ns: u64, floor: u64) -> (u64, u64) {
        let (mut t, mut spun) = (at, 0);
        for lock in &mut self.locks {
            let contended = lock.stats.contended;
            let got = lock.acquire(holder, t, work_ns, handoff_ns, floor);
            self.stats.ancestor_acquisitions += 1;
            self.stats.ancestor_contended += lock.stats.contended - contended;
            spun += got.spin_ns;
            t += got.cpu_ns() + work_ns;
        }
        self.stats.ancestor_spin_ns += spun;
        (t - at, spun)
    }
}

/// Who calls `lru_note_cost`, for what its era takes of the group's own lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoteCaller {
    /// `shrink_inactive_list` / `shrink_active_list` after their put-back; `cost` is what
    /// they note (a zero cost takes no lock from 6.17).
    Reclaim { cost: u64 },
    /// `workingset_refault` of a folio that was in the workingset: the group's lock is
    /// taken for the note in every era.
    Refault,
}

impl Sim {
    /// The `lru_note_cost` of `caller`'s era: how many locks the walk takes before the
    /// ancestors', the group's own (0 or 1), and whether it walks at all.
    fn note_cost_plan(&self, caller: NoteCaller) -> Option<bool> {
        use crate::config::NoteCostLocking::*;
        match (caller, crate::config::note_cost_locking(&self.cfg.config.kernel.profile)) {
            (NoteCaller::Refault, _) | (NoteCaller::Reclaim { .. }, EachLevel) => Some(true),
            (NoteCaller::Reclaim { cost }, UnderPutback) => (cost > 0).then_some(false),
        }
    }

    /// A reclaimer's `lru_note_cost` after its put-back (classic LRU, §3.12): the group's lock
    /// again where its era takes it, then each ancestor's; spins and hand-offs go to the
    /// `lru_lock` category, the work under each lock to `lru_ops`.
    pub(crate) fn lru_note_cost_in_reclaim(&mut self, sc: &mut ScanControl, cost: u64) {
        let Some(own) = self.note_cost_plan(NoteCaller::Reclaim { cost }) else { return };
        if !self.lru_lock_shared() {
            return;
        }
        let holder = if sc.kswapd { KSWAPD } else { self.reclaim.current.unwrap_or(KSWAPD) };
        let (work, handoff) = (self.costs.lru_note_cost_ns, self.costs.lru_lock_handoff_ns);
        if own {
            let got = self.reclaim.lru_lock.acquire(holder, sc.clock(), work, handoff, self.now);
            self.reclaim.lru_lock.stats.reclaim_spin_ns += got.spin_ns;
            sc.cost.charge(CpuCategory::LruLock, got.cpu_ns());
            sc.cost.charge(CpuCategory::LruOps, work);
        }
        let levels = self.reclaim.memcg_ancestors.depth() as u64;
        let (cpu, _) = self.reclaim.memcg_ancestors.walk(holder, sc.clock(), work, handoff, self.now);
        sc.cost.charge(CpuCategory::LruLock, cpu - levels * work);
        sc.cost.charge(CpuCategory::LruOps, levels * work);
        self.reclaim.memcg_ancestors.stats.walks += 1;
    }

    /// The classic refault's `lru_note_cost_folio` / `lru_note_cost_refault` for a folio that
    /// was in the workingset, on the running task's clock: the group's lock, then each
    /// ancestor's. False when no task runs or the machine has one CPU: nothing taken.
    pub(crate) fn lru_note_cost_in_access_path(&mut self) -> bool {
        let Some((tid, _)) = self.reclaim.lru_lock.running else { return false };
        if !self.lru_lock_shared() || self.note_cost_plan(NoteCaller::Refault).is_none() {
            return false;
        }
        let (work, handoff) = (self.costs.lru_note_cost_ns, self.costs.lru_lock_handoff_ns);
        let at = self.tasks[tid as usize].clock;
        let got = self.reclaim.lru_lock.acquire(tid, at, work, handoff, self.now);
        self.reclaim.lru_lock.stats.access_spin_ns += got.spin_ns;
        let own = got.cpu_ns() + work;
        let (cpu, _) = self.reclaim.memcg_ancestors.walk(tid, at + own, work, handoff, self.now);
        self.tasks[tid as usize].clock += own + cpu;
        self.reclaim.memcg_ancestors.stats.walks += 1;
        true
    }

    /// Can another CPU hold the lock? A spinlock holder is not preempted (`spin_lock_irq`), so
    /// on a machine of one CPU nobody ever finds it held, and its line never moves: the
    /// model skips the lock there (whatever the run-ahead of kswapd's clock suggests).
    pub(crate) fn lru_lock_shared(&self) -> bool {
        self.sched.cpus.len() > 1
    }

    /// A reclaimer takes `lru_lock` at its clock to move `folios` on or off the lists
    /// (isolation or put-back, §3.10, §5.6): its spin and hand-off go to the `lru_lock`
    /// category.
    pub(crate) fn lru_lock_in_reclaim(&mut self, sc: &mut ScanControl, folios: u64) {
        if !self.lru_lock_shared() {
            return;
        }
        let holder = if sc.kswapd { KSWAPD } else { self.reclaim.current.unwrap_or(KSWAPD) };
        let work = folios * self.costs.lru_lock_folio_ns;
        let handoff = self.costs.lru_lock_handoff_ns;
        let got = self.reclaim.lru_lock.acquire(holder, sc.clock(), work, handoff, self.now);
        self.reclaim.lru_lock.stats.reclaim_spin_ns += got.spin_ns;
        sc.cost.charge(CpuCategory::LruLock, got.cpu_ns());
    }

    /// A folio went into the running CPU's activate vector (the classic LRU's
    /// `folio_activate`); a full vector is drained under `lru_lock` at the task's clock, which
    /// pays the spin and the hand-off.
    pub(crate) fn lru_pagevec_add(&mut self) {
        // The activation was counted on this CPU (memcg_rstat_updated).
        self.rstat_updated();
        let Some((_, cpu)) = self.reclaim.lru_lock.running else { return };
        if !self.lru_lock_shared() {
            return;
        }
        let cpus = self.sched.cpus.len();
        let size = crate::config::lru_batch_size(&self.cfg.config.kernel.profile);
        if self.reclaim.lru_lock.pagevec_add(cpus, cpu, size) {
            self.lru_lock_in_access_path(size as u64);
        }
    }

    /// The running task takes `lru_lock` at its clock to move `folios` (0: to update the
    /// lruvec's counters only), paying the spin and the hand-off on its clock. False when no
    /// task runs (kernel threads, completions) or the machine has one CPU: nothing taken.
    pub(crate) fn lru_lock_in_access_path(&mut self, folios: u64) -> bool {
        let Some((tid, _)) = self.reclaim.lru_lock.running else { return false };
        if !self.lru_lock_shared() {
            return false;
        }
        let work = folios * self.costs.lru_lock_folio_ns;
        let handoff = self.costs.lru_lock_handoff_ns;
        let at = self.tasks[tid as usize].clock;
        let got = self.reclaim.lru_lock.acquire(tid, at, work, handoff, self.now);
        self.reclaim.lru_lock.stats.access_spin_ns += got.spin_ns;
        self.tasks[tid as usize].clock += got.cpu_ns();
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_free_lock_costs_no_spin_and_one_holder_pays_no_handoff() {
        let mut l = LruLock::default();
        assert_eq!(l.acquire(1, 100, 50, 80, 0), Acquired { spin_ns: 0, handoff_ns: 0 });
        assert_eq!(l.acquire(1, 1_000, 50, 80, 0), Acquired { spin_ns: 0, handoff_ns: 0 });
        assert_eq!(l.stats.contended, 0);
    }

    #[test]
    fn a_busy_lock_makes_the_next_cpu_spin_until_the_holder_is_done() {
        let mut l = LruLock::default();
        l.acquire(1, 100, 500, 80, 0);
        // CPU 2 arrives while CPU 1 holds [100, 600): spins 500, then pays the hand-off.
        assert_eq!(l.acquire(2, 100, 50, 80, 0), Acquired { spin_ns: 500, handoff_ns: 80 });
        // CPU 3, later, queues behind both: [600, 730) is CPU 2's.
        assert_eq!(l.acquire(3, 200, 10, 80, 0).spin_ns, 530);
        assert_eq!(l.stats.contended, 2);
    }

    #[test]
    fn an_earlier_clock_processed_later_uses_the_gap_before_a_later_hold() {
        let mut l = LruLock::default();
        l.acquire(1, 10_000, 100, 0, 0);
        // A CPU whose clock is earlier is processed afterwards: it is not queued behind.
        assert_eq!(l.acquire(2, 1_000, 100, 0, 0).spin_ns, 0);
        // One that would overlap the later hold waits for it.
        assert_eq!(l.acquire(3, 9_950, 100, 0, 0).spin_ns, 150);
    }

    #[test]
    fn an_ancestor_walk_takes_each_lock_after_the_one_below_and_queues_behind_other_walkers() {
        let mut a = AncestorLocks::new(2);
        // Alone: two levels of 20 ns work, no hand-off for a first holder.
        assert_eq!(a.walk(1, 1_000, 20, 100, 0), (40, 0));
        // CPU 2 at the same clock: the parent is CPU 1's until 1_020, then its hand-off
        // (100) and work (20); the root's hand-off and work follow.
        assert_eq!(a.walk(2, 1_000, 20, 100, 0), (20 + 120 + 120, 20));
        assert_eq!((a.stats.ancestor_acquisitions, a.stats.ancestor_contended), (4, 1));
        assert_eq!(AncestorLocks::new(0).walk(3, 0, 20, 100, 0), (0, 0), "the root's tasks have no ancestors");
    }

    #[test]
    fn a_cpu_takes_the_lock_once_per_full_page_vector() {
        let mut l = LruLock::default();
        let drains = (0..45).filter(|_| l.pagevec_add(4, 2, 15)).count();
        assert_eq!(drains, 3);
        assert!(!l.pagevec_add(4, 1, 15), "another CPU's vector is its own");
    }
}
