//! 5.15-5.17: the memory cgroup statistics flush in the classic LRU's refault path, and
//! 5.15-6.1's at the start of the classic LRU's `shrink_node`.
//!
//! The kernel (mm/workingset.c `workingset_refault`, mm/memcontrol.c): before it compares a
//! refault distance with the workingset size (kernel-algorithms.md §4.3), a refault of 5.15 to
//! 5.18-rc3 calls `mem_cgroup_flush_stats()` (1f828223b799, "memcg: flush lruvec stats in the
//! refault", 5.15-rc3), so that `lruvec_page_state` reads exact sizes. 9b3016154c91 ("memcg:
//! sync flush only if periodic flush is delayed", 5.18-rc4) made it
//! `mem_cgroup_flush_stats_delayed()` after Daniel Dao (Cloudflare) reported refault-heavy
//! workloads slowed by it. MGLRU's `lru_gen_refault` returns before the call (the posting's
//! patches and 6.1 alike), so only the classic LRU pays it.
//!
//! What a flush is (5.17):
//! * Every memcg statistics update (`__mod_memcg_lruvec_state`, `__mod_memcg_state`,
//!   `__count_memcg_events`) calls `memcg_rstat_updated(memcg, val)`: the cgroup goes on this
//!   CPU's rstat updated list, and a per-CPU `stats_updates` grows by `abs(val)`; once above
//!   `MEMCG_CHARGE_BATCH` (32 until 6.1) it adds `x / 32` to the global
//!   `stats_flush_threshold` and restarts from 0 (5b3be698a872, "memcg: better bounds on the
//!   memcg stats updates", 5.17-rc1; 5.16 counted calls, not values).
//! * `mem_cgroup_flush_stats()` flushes only while `stats_flush_threshold >
//!   num_online_cpus()` (11192d9c124d, 5.16; 5.15 flushed at every call): under
//!   `spin_trylock_irqsave(&stats_flush_lock)`, so a CPU that finds another flushing skips
//!   the flush and reads what is there; the flusher runs `cgroup_rstat_flush_irqsafe(root)`
//!   with interrupts off, which for every possible CPU takes that CPU's
//!   `cgroup_rstat_cpu_lock` and folds the per-CPU counters of each cgroup on its updated list
//!   (`mem_cgroup_css_rstat_flush`), then sets the threshold back to 0.
//!
//! The model: the updates are counted where the model makes them (`memcg_stat_units`: LRU
//! list moves, charges and uncharges with their page-state counters, and the vmstat events a
//! memory cgroup counts too), one threshold step per 33 units (a CPU's count is folded once
//! it passes 32 and its remainder dropped: 33 single-page updates per step). A flush costs the
//! refaulting task `memcg_rstat_flush_cpu_ns` per CPU with updates pending (CPUs a task ran
//! kernel work on since the last flush) and `memcg_rstat_flush_idle_cpu_ns` per other online
//! CPU, and holds `stats_flush_lock` that long: refaults in the meantime skip. After a flush
//! the classic LRU's view of its lruvec statistics is exact (classic/flushed.rs).
//!
//! The flusher holds each CPU's `cgroup_rstat_cpu_lock` in turn (CPUs with updates in CPU
//! order, `memcg_rstat_flush_cpu_ns` each; a CPU with none is skipped without its lock by the
//! speculative `updated_next` test). Popping a cgroup off a CPU's updated list clears its
//! `updated_next`, so the next statistics update on that CPU misses `cgroup_rstat_updated`'s
//! already-on-list fast path and takes the same lock: a task that updates a statistic while the
//! flusher holds its CPU's lock spins until the flusher lets go (Waiman Long's series was
//! written to shorten exactly this wait). The model charges that spin to the task at its
//! first update on that CPU after the flush began (`note_cpu`), when its clock falls inside the
//! CPU's hold.
//!
//! The same call in reclaim ([`crate::config::reclaim_flush`]): 5.13+'s `shrink_node` begins
//! every pass with `mem_cgroup_flush_stats()` so that its heuristics read exact lruvec sizes
//! (the model's scan heuristics read exact counters there in any case,
//! `config::reclaim_stats_ratelimited`). The classic LRU only: MGLRU's reclaim never gets to
//! the call. Its threshold and trylock are the refault's, the flusher the reclaimer (a direct
//! reclaimer's CPU is skipped by the walk as the refaulting task's is; kswapd's is not among
//! the workload's), its CPU the reclaimer's `memcg_flush` category. The refault distance reads
//! the view a reclaim flush leaves as it reads a refault's. 6.1 counts a threshold step per 64
//! updates (`memcg_charge_batch`).
//!
//! Not modelled: 6.2-6.11's reclaim flush (6.8 changed its rules), the periodic worker's
//! flushes (every 2 s, not in a task), updates by kswapd and by I/O
//! completions (no task of the model's runs them), a task whose clock had already passed its
//! CPU's hold when the flush was processed (the model processes CPUs out of clock order), and
//! the flush's cost growing with the number of cgroups (the source's per-CPU hold is of a
//! machine with its usual few).

use crate::config::RefaultFlush;
use crate::engine::Sim;
use crate::reclaim::ScanControl;
use crate::stats::{CpuCategory, VmStat};

/// Flushes done, flushes skipped because another was in progress, and their CPU time, of one
/// caller (the refault's or reclaim's); the updaters' spins are counted with the refault's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RstatFlushStats {
    /// `mem_cgroup_flush_stats` calls from the caller's path.
    pub calls: u64,
    pub flushes: u64,
    /// Calls over the threshold that found `stats_flush_lock` held.
    pub skipped_busy: u64,
    pub flush_ns: u64,
    /// Tasks' spins on their CPU's `cgroup_rstat_cpu_lock` while a flush held it.
    pub updater_spins: u64,
    pub updater_spin_ns: u64,
}

/// The flush's state: units counted at the last flush, the lock's holder until when, and the
/// CPUs with updates pending.
#[derive(Debug)]
pub struct RstatFlush {
    /// The refault's call (classic, 5.15-5.17).
    pub mode: RefaultFlush,
    /// `shrink_node`'s call (classic, 5.15-6.1).
    pub reclaim_mode: RefaultFlush,
    /// `MEMCG_CHARGE_BATCH` of the era (`config::memcg_charge_batch`).
    batch: u64,
    /// `num_online_cpus()`.
    online_cpus: u64,
    /// `memcg_stat_units` at the last flush.
    base_units: u64,
    /// `stats_flush_lock` is held until this time.
    busy_until: u64,
    /// CPUs whose rstat updated list is not empty.
    updated: Vec<bool>,
    /// The last flush's hold of each CPU's `cgroup_rstat_cpu_lock`, `[start, end)` (empty for
    /// CPUs it skipped and for the flusher's own).
    holds: Vec<(u64, u64)>,
    pub stats: RstatFlushStats,
    pub reclaim_stats: RstatFlushStats,
}

impl RstatFlush {
    pub fn new(mode: RefaultFlush, reclaim_mode: RefaultFlush, batch: u64, cpus: u32, online_cpus: Option<u32>) -> RstatFlush {
        let n = cpus as usize;
        RstatFlush {
            mode,
            reclaim_mode,
            batch,
            online_cpus: online_cpus.unwrap_or(cpus) as u64,
            base_units: 0,
            busy_until: 0,
            updated: vec![false; n],
            holds: vec![(0, 0); n],
            stats: RstatFlushStats::default(),
            reclaim_stats: RstatFlushStats::default(),
        }
    }

    /// Does anything flush synchronously (so the updates and the rstat locks matter)?
    pub fn tracked(&self) -> bool {
        self.mode != RefaultFlush::Periodic || self.reclaim_mode != RefaultFlush::Periodic
    }

    /// A task's kernel work on `cpu` at clock `at` updated memory cgroup statistics
    /// (`cgroup_rstat_updated`): the time it spins on the CPU's `cgroup_rstat_cpu_lock`, which
    /// only its first update after a flush popped the CPU's list takes, and which is held while
    /// the flush walks that CPU.
    #[inline]
    pub fn note_cpu(&mut self, cpu: usize, at: u64) -> u64 {
        let Some(u) = self.updated.get_mut(cpu) else { return 0 };
        if *u {
            return 0;
        }
        let (start, end) = self.holds[cpu];
        if at < start {
            // The walk has not reached this CPU: its cgroup is still on the list (the fast
            // path), and this update is flushed with the rest.
            return 0;
        }
        *u = true;
        self.holds[cpu] = (0, 0);
        if at >= end {
            return 0;
        }
        self.stats.updater_spins += 1;
        self.stats.updater_spin_ns += end - at;
        end - at
    }

    /// Would `mem_cgroup_flush_stats` called as `mode` flush with `units` counted so far?
    /// `stats_flush_threshold > num_online_cpus()`, a step per `MEMCG_CHARGE_BATCH + 1` units.
    fn over_threshold(&self, mode: RefaultFlush, units: u64) -> bool {
        match mode {
            RefaultFlush::Always => true,
            RefaultFlush::Threshold => (units - self.base_units) / (self.batch + 1) > self.online_cpus,
            RefaultFlush::Periodic => false,
        }
    }

    /// The refault's `mem_cgroup_flush_stats()` at clock `at` with `units` counted: the CPU
    /// time the caller spends flushing (`Some`), or `None` when it does not flush (below the
    /// threshold, or another CPU holds `stats_flush_lock`).
    pub fn refault_flush(&mut self, me: usize, at: u64, units: u64, cpu_ns: u64, idle_cpu_ns: u64) -> Option<u64> {
        self.flush(false, me, at, units, cpu_ns, idle_cpu_ns)
    }

    /// `shrink_node`'s `mem_cgroup_flush_stats()`, the same way; `me` is the reclaimer's CPU
    /// (`usize::MAX` for kswapd, which runs on none of the workload's).
    pub fn reclaim_flush(&mut self, me: usize, at: u64, units: u64, cpu_ns: u64, idle_cpu_ns: u64) -> Option<u64> {
        self.flush(true, me, at, units, cpu_ns, idle_cpu_ns)
    }

    fn flush(&mut self, reclaim: bool, me: usize, at: u64, units: u64, cpu_ns: u64, idle_cpu_ns: u64) -> Option<u64> {
        let mode = if reclaim { self.reclaim_mode } else { self.mode };
        if mode == RefaultFlush::Periodic {
            return None;
        }
        let over = self.over_threshold(mode, units);
        let busy = at < self.busy_until;
        let stats = if reclaim { &mut self.reclaim_stats } else { &mut self.stats };
        stats.calls += 1;
        if !over {
            return None;
        }
        if busy {
            stats.skipped_busy += 1;
            return None;
        }
        // The walk: each CPU with updates held in CPU order (its list popped as the hold
        // begins), then the skipped ones. The flusher's own updates come after the flush.
        let mut t = at;
        for (cpu, hold) in self.holds.iter_mut().enumerate() {
            *hold = (0, 0);
            if self.updated[cpu] {
                if cpu != me {
                    *hold = (t, t + cpu_ns);
                }
                t += cpu_ns;
            }
        }
        let pending = self.updated.iter().filter(|&&u| u).count() as u64;
        let idle = self.online_cpus - pending;
        let ns = pending * cpu_ns + idle * idle_cpu_ns;
        self.updated.iter_mut().for_each(|u| *u = false);
        self.base_units = units;
        self.busy_until = at + ns;
        let stats = if reclaim { &mut self.reclaim_stats } else { &mut self.stats };
        stats.flushes += 1;
        stats.flush_ns += ns;
        Some(ns)
    }
}

/// Memory cgroup statistics updates the model has made, in `abs(val)` units as
/// `memcg_rstat_updated` counts them (5.17): `lru_moves` folios added to or taken off an LRU
/// list (`update_lru_size`); each page charged and uncharged, twice (its page-state counter,
/// NR_FILE_PAGES / NR_ANON_MAPPED / NR_SHMEM, and the PGPGIN / PGPGOUT event of
/// `mem_cgroup_charge_statistics` and `uncharge_batch`); and the events `memcg_vm_event_stat`
/// counts per memory cgroup as well as in /proc/vmstat (faults, scans, steals, refills,
/// (de)activations, and the WORKINGSET_* lruvec states). `pgscan_anon`/`_file` and
/// `pgrotated` are node counters only.
pub fn memcg_stat_units(vm: &VmStat, lru_moves: u64) -> u64 {
    lru_moves
        + 2 * (vm.pgalloc_normal + vm.pgfree)
        + vm.pgfault
        + vm.pgmajfault
        + vm.pgscan_kswapd
        + vm.pgscan_direct
        + vm.pgsteal_kswapd
        + vm.pgsteal_direct
        + vm.pgrefill
        + vm.pgactivate
        + vm.pgdeactivate
        + vm.workingset_refault_anon
        + vm.workingset_refault_file
        + vm.workingset_activate_anon
        + vm.workingset_activate_file
        + vm.workingset_restore_anon
        + vm.workingset_restore_file
}

impl Sim {
    /// `workingset_refault`'s `mem_cgroup_flush_stats()` (5.15-5.17, classic LRU): the running
    /// task flushes at its clock when the updates pass the threshold and no other CPU is
    /// flushing; the flush's CPU goes on its clock. True when it flushed (the policy's view
    /// of the lruvec statistics is then exact).
    pub(crate) fn refault_flush_stats(&mut self) -> bool {
        if self.reclaim.rstat.mode == RefaultFlush::Periodic {
            return false;
        }
        let Some((tid, cpu)) = self.reclaim.lru_lock.running else { return false };
        self.rstat_updated();
        let units = memcg_stat_units(&self.stats.vm, self.reclaim.policy_ref().lru_moves());
        let at = self.tasks[tid as usize].clock;
        let (cpu_ns, idle_ns) = (self.costs.memcg_rstat_flush_cpu_ns, self.costs.memcg_rstat_flush_idle_cpu_ns);
        match self.reclaim.rstat.refault_flush(cpu, at, units, cpu_ns, idle_ns) {
            Some(ns) => {
                self.tasks[tid as usize].clock += ns;
                true
            }
            None => false,
        }
    }
}

impl Sim {
    /// `shrink_node`'s `mem_cgroup_flush_stats()` (classic LRU, 5.15-6.1) by the reclaimer of
    /// `sc`, with `units` of updates counted: its CPU goes to the reclaimer's `memcg_flush`
    /// category. True when it flushed.
    pub(crate) fn reclaim_flush_stats(&mut self, sc: &mut ScanControl, units: u64) -> bool {
        if self.reclaim.rstat.reclaim_mode == RefaultFlush::Periodic {
            return false;
        }
        let me = match self.reclaim.lru_lock.running {
            Some((_, cpu)) if !sc.kswapd => cpu,
            _ => usize::MAX,
        };
        let (cpu_ns, idle_ns) = (self.costs.memcg_rstat_flush_cpu_ns, self.costs.memcg_rstat_flush_idle_cpu_ns);
        match self.reclaim.rstat.reclaim_flush(me, sc.clock(), units, cpu_ns, idle_ns) {
            Some(ns) => {
                sc.cost.charge(CpuCategory::MemcgFlush, ns);
                true
            }
            None => false,
        }
    }
}

impl Sim {
    /// The running task updated memory cgroup statistics (`cgroup_rstat_updated` on its CPU):
    /// it spins at its clock while a flush holds the CPU's rstat lock.
    pub(crate) fn rstat_updated(&mut self) {
        if !self.reclaim.rstat.tracked() {
            return;
        }
        let Some((tid, cpu)) = self.reclaim.lru_lock.running else { return };
        let at = self.tasks[tid as usize].clock;
        self.tasks[tid as usize].clock += self.reclaim.rstat.note_cpu(cpu, at);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 5.17's `MEMCG_CHARGE_BATCH` (32), from the one place the model keeps it.
    fn batch_5_17() -> u64 {
        crate::config::memcg_charge_batch("5.17")
    }

    fn flush(r: &mut RstatFlush, at: u64, units: u64) -> Option<u64> {
        r.refault_flush(0, at, units, 4_500, 200)
    }

    /// 5.16-5.17: no flush until the updates pass num_online_cpus() steps of 33 units; then
    /// one, and the count starts again from there.
    #[test]
    fn a_refault_flushes_only_past_the_threshold_of_online_cpus_batches() {
        let mut r = RstatFlush::new(RefaultFlush::Threshold, RefaultFlush::Periodic, batch_5_17(), 2, Some(4));
        r.note_cpu(0, 0);
        assert_eq!(flush(&mut r, 0, 5 * 33 - 1), None, "4 steps are not above 4 online CPUs");
        assert_eq!(flush(&mut r, 0, 5 * 33), Some(4_500 + 3 * 200), "one CPU with updates, three without");
        assert_eq!(flush(&mut r, 10_000, 5 * 33 + 100), None, "the count restarted at the flush");
        assert_eq!((r.stats.calls, r.stats.flushes), (3, 1));
    }

    /// `spin_trylock_irqsave(&stats_flush_lock)`: a refault while another CPU flushes skips.
    #[test]
    fn a_refault_during_another_flush_skips_it() {
        let mut r = RstatFlush::new(RefaultFlush::Always, RefaultFlush::Periodic, batch_5_17(), 2, None);
        r.note_cpu(0, 0);
        r.note_cpu(1, 0);
        assert_eq!(flush(&mut r, 1_000, 0), Some(9_000));
        assert_eq!(flush(&mut r, 9_999, 0), None, "the first flush holds the lock until 10,000");
        assert_eq!(r.stats.skipped_busy, 1);
        assert_eq!(flush(&mut r, 10_000, 0), Some(400), "no CPU has updates pending now");
    }

    /// `shrink_node`'s call and the refault's count the same updates and take the same
    /// trylock: a reclaim flush restarts the refault's count, and a refault during it skips.
    #[test]
    fn a_reclaim_flush_shares_the_threshold_and_the_lock_with_the_refault() {
        let mut r = RstatFlush::new(RefaultFlush::Threshold, RefaultFlush::Threshold, batch_5_17(), 2, Some(4));
        r.note_cpu(0, 0);
        assert_eq!(r.reclaim_flush(usize::MAX, 0, 5 * 33 - 1, 4_500, 200), None, "below the threshold");
        assert_eq!(r.reclaim_flush(usize::MAX, 0, 5 * 33, 4_500, 200), Some(4_500 + 3 * 200), "kswapd walks CPU 0's updates");
        assert_eq!(flush(&mut r, 1_000, 10 * 33), None, "the reclaim flush holds the lock until 5,100");
        assert_eq!(flush(&mut r, 6_000, 10 * 33 - 1), None, "4 steps since the reclaim flush");
        assert_eq!((r.reclaim_stats.flushes, r.stats.flushes, r.stats.skipped_busy), (1, 0, 1));
        // 6.1's batch of 64: the same updates are half the steps.
        let mut r = RstatFlush::new(RefaultFlush::Periodic, RefaultFlush::Threshold, 64, 2, Some(4));
        assert_eq!(r.reclaim_flush(usize::MAX, 0, 5 * 33, 4_500, 200), None);
        assert!(r.reclaim_flush(usize::MAX, 0, 5 * 65, 4_500, 200).is_some());
        assert_eq!(flush(&mut r, 1_000_000, u64::MAX / 2), None, "6.1's refault does not flush");
    }

    /// 5.18+ and every other era: the refault does not flush.
    #[test]
    fn the_periodic_era_never_flushes_in_the_refault() {
        let mut r = RstatFlush::new(RefaultFlush::Periodic, RefaultFlush::Periodic, batch_5_17(), 2, None);
        r.note_cpu(0, 0);
        assert_eq!(flush(&mut r, 0, u64::MAX / 2), None);
        assert_eq!(r.stats, RstatFlushStats::default());
    }

    /// The flusher walks the CPUs with updates in order, holding each one's lock 4.5 us; a
    /// task on such a CPU whose first update comes inside that hold spins to its end; a later
    /// update on the same CPU (its cgroup back on the list) or one outside the hold does not.
    #[test]
    fn a_task_updating_while_the_flush_holds_its_cpu_lock_spins_until_released() {
        let mut r = RstatFlush::new(RefaultFlush::Always, RefaultFlush::Periodic, batch_5_17(), 3, None);
        for cpu in 0..3 {
            r.note_cpu(cpu, 0);
        }
        assert_eq!(flush(&mut r, 1_000, 0), Some(13_500), "CPU 0 flushes; holds: CPU 1 [5,500, 10,000), CPU 2 [10,000, 14,500)");
        assert_eq!(r.note_cpu(0, 2_000), 0, "the flusher's own CPU");
        assert_eq!(r.note_cpu(1, 5_000), 0, "before the walk reaches CPU 1: still on its list");
        assert_eq!(r.note_cpu(1, 6_000), 4_000, "the first update after the pop takes the held lock");
        assert_eq!(r.note_cpu(1, 7_000), 0, "back on the list: the fast path");
        assert_eq!(r.note_cpu(2, 14_500), 0, "after the hold");
        assert_eq!((r.stats.updater_spins, r.stats.updater_spin_ns), (1, 4_000));
    }
}
