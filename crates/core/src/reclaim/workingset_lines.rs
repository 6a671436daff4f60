//! The cache lines of the workingset counters: every CPU that evicts or activates a folio
//! adds to a counter of its group's lruvec with an atomic instruction, and a line written by
//! one CPU moves to the next writer (kernel-algorithms.md §4, §5.9).
//!
//! What each policy writes (mm/workingset.c, mm/vmscan.c, 5.9+; the 6.1 MGLRU):
//! * the classic LRU, `workingset_age_nonresident(lruvec, nr)`: `do {
//!   atomic_long_add(nr_pages, &lruvec->nonresident_age); } while ((lruvec =
//!   parent_lruvec(lruvec)))` - the group's lruvec and every ancestor's up to the root's
//!   (Johannes Weiner, "mm: workingset: age nonresident information alongside anonymous
//!   pages", 5.9). It is called per evicted folio (`workingset_eviction`, from
//!   `__remove_mapping` for every page-cache or swap-cache folio that leaves a shadow), per
//!   folio reclaim puts back active (`move_pages_to_lru`), per refault it activates
//!   (`workingset_refault`) and per folio a second access activates (`workingset_activation`
//!   from `folio_mark_accessed`). In 5.17's `struct lruvec` (include/linux/mmzone.h)
//!   `nonresident_age` follows `lru_lock`, `anon_cost` and `file_cost`: the lock's line;
//! * MGLRU, `lru_gen_eviction`: `atomic_long_add(delta,
//!   &lrugen->evicted[hist][type][tier])` per evicted folio, and `lru_gen_refault`:
//!   `atomic_long_add(delta, &lrugen->refaulted[hist][type][tier])` per recent refault - the
//!   group's own lruvec only, on two lines of its `lru_gen_folio`, and no ageing clock.
//!
//! Each line is a timeline of transfers in virtual time ([`Line`]): an add at clock `t` finds
//! the line where the last transfer before `t` left it; if another CPU wrote it last, the
//! adder pulls it (`lru_lock_handoff_ns`, the same core-to-core transfer), after any
//! transfer in progress and before the next one that leaves it no room. Tasks stand for their
//! CPUs, as for `lru_lock`. The classic LRU's lines are its lruvecs' `lru_lock` lines too, but
//! are modelled apart from the locks: a lock holder losing the line to an add, or an add
//! waiting for a holder's write, is not modelled (an underestimate). The adds go to the
//! reclaimer's `free_page` (eviction) or `lru_ops` (put-back) category, or to the task's
//! clock in the access path. Profiles before 5.15 (whose 3.15-5.8 `inactive_age` walked less)
//! and a machine of one CPU (a line never moves) take none.

use super::lru_lock::{Holder, KSWAPD};
use super::policy::LruPolicy;
use super::ScanControl;
use super::timeline::Timeline;
use crate::engine::Sim;
use crate::stats::{CpuCategory, CpuCost};
use std::collections::BTreeMap;

/// Lines of a policy's group lruvec: the eviction and ageing counter, and MGLRU's refault
/// counter.
pub const LINES: usize = 2;

/// What the adds cost (`summary.workingset_line_*`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LineStats {
    /// Atomic adds, one per line written (an ancestor's included).
    pub adds: u64,
    /// Adds that found the line moving to another writer, and the time they waited.
    pub waited: u64,
    pub wait_ns: u64,
    /// All the CPU the adds took: waits and transfers.
    pub cpu_ns: u64,
}

/// One cache line in virtual time: who wrote it when (`writes`: every add, at the time it
/// wrote), and when it was moving between CPUs (`transfers`, disjoint busy intervals, merged
/// when back to back). An add processed after others at later clocks finds the writer its
/// clock comes after, so CPUs that write in turn each pull the line, whatever order the model
/// processes them in.
#[derive(Debug, Default)]
pub struct Line {
    writes: BTreeMap<u64, Holder>,
    transfers: Timeline,
    /// The last writer of the history dropped as past.
    settled: Option<Holder>,
}

impl Line {
    /// An atomic add by `h` at clock `at`, a transfer taking `transfer`: the time waited for
    /// transfers in progress, and whether the line moved to `h`. `floor` is the event loop's
    /// time: no later add comes before it.
    pub fn add(&mut self, h: Holder, at: u64, transfer: u64, floor: u64) -> (u64, bool) {
        self.forget_before(floor);
        // A transfer in progress at `at` ends first; then the line is its last writer's.
        let mut t = self.transfers.busy_until(at);
        let owner = self.writes.range(..=t).next_back().map(|(_, &w)| w).or(self.settled);
        let moved = owner != Some(h) && transfer > 0;
        if moved {
            t = self.transfers.first_free(t, transfer);
            self.transfers.occupy(t, t + transfer);
        }
        self.writes.insert(t, h);
        (t - at, moved)
    }

    /// Drop what ended before `floor` (no add comes before it), keeping the last writer.
    fn forget_before(&mut self, floor: u64) {
        self.transfers.drop_before(floor);
        while self.writes.len() > 1 {
            let Some((&t, &w)) = self.writes.first_key_value() else { break };
            if t >= floor {
                break;
            }
            self.settled = Some(w);
            self.writes.remove(&t);
        }
    }

}

/// The workingset lines: the group lruvec's (eviction/ageing, MGLRU's refaults) and, for the
/// classic LRU's walk, each ancestor's `nonresident_age` line, the parent first.
#[derive(Debug, Default)]
pub struct WorkingsetLines {
    own: [Line; LINES],
    ancestors: Vec<Line>,
    pub stats: LineStats,
}

impl WorkingsetLines {
    /// The lines of a group `depth` cgroups below the root (`machine.memcg_path`).
    pub fn new(depth: usize) -> WorkingsetLines {
        WorkingsetLines { own: Default::default(), ancestors: (0..depth).map(|_| Line::default()).collect(), stats: LineStats::default() }
    }

    /// `adds[line]` atomic adds by `holder` from clock `at`, each followed, when `walk_up`,
    /// by one on every ancestor's line: the CPU they took.
    fn adds(&mut self, holder: Holder, at: u64, adds: [u64; LINES], walk_up: bool, transfer: u64, floor: u64) -> u64 {
        let mut t = at;
        for (line, &n) in adds.iter().enumerate() {
            for _ in 0..n {
                let ups = if walk_up { self.ancestors.len() } else { 0 };
                for l in std::iter::once(&mut self.own[line]).chain(self.ancestors.iter_mut().take(ups)) {
                    let (wait, moved) = l.add(holder, t, transfer, floor);
                    let cpu = wait + if moved { transfer } else { 0 };
                    self.stats.adds += 1;
                    self.stats.waited += (wait > 0) as u64;
                    self.stats.wait_ns += wait;
                    self.stats.cpu_ns += cpu;
                    t += cpu;
                }
            }
        }
        t - at
    }
}

impl Sim {
    /// The adds `policy` made since its counts were `before`, by a reclaimer whose work so far
    /// is `sc`'s plus `pending` (a batch not yet added to it), charged to `cat` of `pending`.
    pub(crate) fn workingset_lines_in_reclaim(&mut self, policy: &dyn LruPolicy, before: [u64; LINES], sc: &ScanControl, pending: &mut CpuCost, cat: CpuCategory) {
        let now = policy.workingset_atomics();
        let adds = [now[0] - before[0], now[1] - before[1]];
        if adds == [0; LINES] || !self.lru_lock_shared() {
            return;
        }
        let holder = if sc.kswapd { KSWAPD } else { self.reclaim.current.unwrap_or(KSWAPD) };
        let at = sc.clock() + pending.total();
        let cpu = self.reclaim.ws_lines.adds(holder, at, adds, policy.workingset_atomics_walk_up(), self.costs.lru_lock_handoff_ns, self.now);
        pending.charge(cat, cpu);
    }

    /// The same in the access path, on the running task's clock (nothing without a task).
    pub(crate) fn workingset_lines_in_access_path(&mut self, before: [u64; LINES]) {
        let policy = self.reclaim.policy_ref();
        let (now, walk_up) = (policy.workingset_atomics(), policy.workingset_atomics_walk_up());
        let adds = [now[0] - before[0], now[1] - before[1]];
        let Some((tid, _)) = self.reclaim.lru_lock.running else { return };
        if adds == [0; LINES] || !self.lru_lock_shared() {
            return;
        }
        let at = self.tasks[tid as usize].clock;
        let cpu = self.reclaim.ws_lines.adds(tid, at, adds, walk_up, self.costs.lru_lock_handoff_ns, self.now);
        self.tasks[tid as usize].clock += cpu;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds_by_one_cpu_keep_the_line_and_another_cpus_add_pulls_it() {
        let mut l = Line::default();
        // The first writer pulls the line once; its next adds find it there.
        assert_eq!(l.add(1, 100, 100, 0), (0, true));
        assert_eq!(l.add(1, 250, 100, 0), (0, false));
        // Another CPU pulls it; a third at the same time waits for that transfer, then pulls.
        assert_eq!(l.add(2, 300, 100, 0), (0, true));
        assert_eq!(l.add(3, 300, 100, 0), (100, true));
    }

    #[test]
    fn an_add_finds_the_line_where_the_last_write_before_its_clock_left_it() {
        let mut l = Line::default();
        l.add(1, 1_000, 100, 0);
        l.add(2, 5_000, 100, 0);
        // CPU 1 again, at a clock between the two: the line is still CPU 1's.
        assert_eq!(l.add(1, 3_000, 100, 0), (0, false));
        // After CPU 2's pull, CPU 1 must pull it back.
        assert_eq!(l.add(1, 6_000, 100, 0), (0, true));
        // CPU 2, processed later at a clock before CPU 1's 6_000 but after its own 5_000 pull:
        // it still has the line then.
        assert_eq!(l.add(2, 5_500, 100, 0), (0, false));
        // CPU 1 processed late at 5_600: CPU 2 wrote at 5_500, so CPU 1 pulls it.
        assert_eq!(l.add(1, 5_600, 100, 0), (0, true));
    }

    #[test]
    fn a_walk_up_writes_every_ancestors_line_in_turn() {
        let mut w = WorkingsetLines::new(2);
        // Three lines pulled one after the other by CPU 1: 300 ns.
        assert_eq!(w.adds(1, 0, [1, 0], true, 100, 0), 300);
        // MGLRU's adds stay on the group's lines: its refault line is another line.
        assert_eq!(w.adds(1, 1_000, [0, 1], false, 100, 0), 100);
        assert_eq!(w.stats.adds, 4);
    }
}
