//! Classic two-list reclaim (kernel-algorithms.md §3): kswapd's `balance_pgdat`, direct
//! reclaim's priority loop, `shrink_node` / `shrink_lruvec` with `get_scan_count`, the
//! direct-reclaim bail-out variants of seed 001, `shrink_active_list`, `shrink_inactive_list`
//! with `shrink_folio_list`'s verdicts, and the anon/file balancing of each era.
//!
//! Reclaim runs atomically at the reclaiming task's clock; its CPU cost (pages scanned, rmap
//! walks, unmaps, frees, block-layer submissions) is returned and charged to that task.

mod workingset;

use crate::config::Profile;
use crate::device::Plug;
use crate::engine::{DevRef, Sim, TState};
use crate::mm::*;

pub const SWAP_CLUSTER_MAX: u64 = 32;
pub const DEF_PRIORITY: i32 = 12;
/// kswapd gives up on a node after this many balance_pgdat runs without progress (§3.4).
pub const MAX_RECLAIM_RETRIES: u32 = 16;

/// Direct-reclaim bail-out rule inside `shrink_lruvec` / `shrink_zone` (§3.8, seed 001).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bailout {
    /// 2.6.28-rc6: scan the full `size >> priority` targets.
    None,
    /// Rik van Riel (Nov 2008): stop once more than SWAP_CLUSTER_MAX pages were reclaimed, only
    /// below DEF_PRIORITY and not in kswapd.
    Rvr,
    /// KOSAKI Motohiro: at any priority, and across zones as well (not in kswapd).
    Kosaki,
    /// 3.x-5.x proportional rule: on reaching the goal, stop the smaller type and scan the
    /// adjusted remainder of the larger one in full (`scan_adjusted`).
    ProportionalFull,
    /// 6.x (Johannes Weiner 2022): the same adjustment, then a single nudge and stop.
    Proportional,
}

impl Bailout {
    pub fn resolve(knob: &str, profile: Profile) -> Bailout {
        match knob {
            "none" => Bailout::None,
            "rvr" => Bailout::Rvr,
            "kosaki" => Bailout::Kosaki,
            "proportional" if profile < Profile::V6 => Bailout::ProportionalFull,
            "proportional" => Bailout::Proportional,
            _ => match profile {
                Profile::V2_6_28 => Bailout::None,
                Profile::V3_14 | Profile::V4_14 => Bailout::ProportionalFull,
                Profile::V6 => Bailout::Proportional,
            },
        }
    }
}

/// Reclaim state of the single lruvec and node.
#[derive(Clone, Debug, Default)]
pub struct ReclaimState {
    pub nonresident_age: u64,
    /// 5.8+ cost model (§3.12).
    pub anon_cost: u64,
    pub file_cost: u64,
    /// Pre-5.8 balancing (§3.7 history): [anon, file].
    pub recent_scanned: [u64; 2],
    pub recent_rotated: [u64; 2],
    /// `workingset_activate_*` at the end of the last reclaim cycle (snapshot_refaults).
    pub refault_snapshot: [u64; 2],
    pub kswapd_failures: u32,
    pub kswapd: KswapdState,
}

#[derive(Clone, Debug, Default)]
pub struct KswapdState {
    /// Inside balance_pgdat (false: asleep or napping).
    pub active: bool,
    pub priority: i32,
    pub reclaimed: u64,
    /// When the current nap started (for kswapd_low_wmark_hit_quickly).
    pub nap_until: Option<u64>,
    /// Waiting for writeback to progress.
    pub throttled: bool,
}

/// `struct scan_control`, the parts this model uses.
#[derive(Clone, Debug)]
pub struct ScanControl {
    pub nr_to_reclaim: u64,
    pub priority: i32,
    pub kswapd: bool,
    pub memcg: bool,
    pub cpu: usize,
    pub may_swap: bool,
    pub nr_scanned: u64,
    pub nr_reclaimed: u64,
    /// Folios met under writeback that were already marked for immediate reclaim.
    pub nr_immediate: u64,
    /// Dirty folios kept because the device's request queue was full.
    pub nr_congested: u64,
    /// Folios isolated, and of those, met under writeback or sent to writeback in this pass
    /// (the `nr_writeback == nr_taken` test of shrink_inactive_list).
    pub nr_taken: u64,
    pub nr_writeback: u64,
    /// This pass stopped early because what it took was all under writeback: the reclaimer
    /// sleeps until writes complete and then continues at the same priority.
    pub writeback_stall: bool,
    pub may_deactivate: [bool; 2],
    pub cache_trim_mode: bool,
    pub file_is_tiny: bool,
    /// CPU time spent so far.
    pub cost: u64,
}

impl ScanControl {
    fn new(nr_to_reclaim: u64, kswapd: bool, memcg: bool, cpu: usize) -> ScanControl {
        ScanControl {
            nr_to_reclaim,
            priority: DEF_PRIORITY,
            kswapd,
            memcg,
            cpu,
            may_swap: true,
            nr_scanned: 0,
            nr_reclaimed: 0,
            nr_immediate: 0,
            nr_congested: 0,
            nr_taken: 0,
            nr_writeback: 0,
            writeback_stall: false,
            may_deactivate: [true; 2],
            cache_trim_mode: false,
            file_is_tiny: false,
            cost: 0,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Verdict {
    Activate,
    Keep,
    Reclaim,
    ReclaimClean,
}

fn isqrt(x: u64) -> u64 {
    (x as f64).sqrt() as u64
}

impl Sim {
    fn swap_free_pages(&self) -> u64 {
        self.swaps.iter().map(|s| s.free_slots()).sum()
    }

    /// `inactive_is_low` (§3.9).
    pub(crate) fn inactive_is_low(&self, anon: bool) -> bool {
        let (i, a) = if anon { (LruList::InactiveAnon, LruList::ActiveAnon) } else { (LruList::InactiveFile, LruList::ActiveFile) };
        let (inactive, active) = (self.lru.size(i), self.lru.size(a));
        if self.profile < Profile::V4_14 && !anon {
            return active > inactive; // pre-4.10 file rule
        }
        let gb = (inactive + active) >> 18;
        let ratio = if gb > 0 { isqrt(10 * gb) } else { 1 };
        inactive * ratio < active
    }

    /// `lru_note_cost` (§3.12): cost = nr_io * 32 + nr_rotated, with decay.
    pub(crate) fn lru_note_cost(&mut self, anon: bool, nr_io: u64, nr_rotated: u64) {
        let cost = nr_io * SWAP_CLUSTER_MAX + nr_rotated;
        if cost == 0 {
            return;
        }
        if anon {
            self.rs.anon_cost += cost;
        } else {
            self.rs.file_cost += cost;
        }
        let lrusize: u64 = self.lru.len.iter().sum();
        if self.rs.anon_cost + self.rs.file_cost > lrusize / 4 {
            self.rs.anon_cost /= 2;
            self.rs.file_cost /= 2;
        }
    }

    /// `folio_referenced`: test-and-clear the accessed bit of every PTE mapping the folio;
    /// returns how many were set and the number of mappings walked.
    fn folio_referenced(&mut self, f: u32) -> (u32, u32) {
        let fr = self.frames[f as usize];
        match fr.owner_kind() {
            Owner::None => (0, 0),
            Owner::Anon => {
                let pte = &mut self.vmas[fr.owner as usize].ptes[fr.index as usize];
                let young = *pte & PTE_ACCESSED != 0;
                *pte &= !PTE_ACCESSED;
                (young as u32, 1)
            }
            Owner::Shmem | Owner::File => {
                let mut refs = 0;
                let n = self.objects[fr.owner as usize].vmas.len();
                for k in 0..n {
                    let v = self.objects[fr.owner as usize].vmas[k];
                    let pte = &mut self.vmas[v as usize].ptes[fr.index as usize];
                    if *pte & PTE_PRESENT != 0 && pte_frame(*pte) == f {
                        refs += (*pte & PTE_ACCESSED != 0) as u32;
                        *pte &= !PTE_ACCESSED;
                    }
                }
                (refs, n as u32)
            }
        }
    }

    /// `try_to_unmap`: every PTE of the folio becomes a swap entry (anon) or none (shared);
    /// dirty bits move to the folio. For shmem the inode entry becomes the swap entry.
    fn try_to_unmap(&mut self, f: u32) {
        let fr = self.frames[f as usize];
        match fr.owner_kind() {
            Owner::None => {}
            Owner::Anon => {
                let (dev, slot) = (fr.swap_dev(), fr.slot);
                let vma = &mut self.vmas[fr.owner as usize];
                let pte = vma.ptes[fr.index as usize];
                vma.ptes[fr.index as usize] = swp_entry(dev, slot);
                vma.rss -= 1;
                vma.swapents += 1;
                if pte & PTE_DIRTY != 0 {
                    self.frames[f as usize].flags |= PG_DIRTY;
                }
                self.swaps[dev].map[slot as usize] += 1;
                self.frames[f as usize].set_owner(Owner::None, NONE, 0);
            }
            Owner::Shmem | Owner::File => {
                let obj = fr.owner as usize;
                let n = self.objects[obj].vmas.len();
                for k in 0..n {
                    let v = self.objects[obj].vmas[k] as usize;
                    let pte = self.vmas[v].ptes[fr.index as usize];
                    if pte & PTE_PRESENT != 0 && pte_frame(pte) == f {
                        self.vmas[v].ptes[fr.index as usize] = 0;
                        self.vmas[v].rss -= 1;
                        if pte & PTE_DIRTY != 0 {
                            self.frames[f as usize].flags |= PG_DIRTY;
                        }
                    }
                }
            }
        }
    }

    /// Is the folio mapped by any PTE?
    fn folio_mapped(&self, f: u32) -> bool {
        let fr = &self.frames[f as usize];
        match fr.owner_kind() {
            Owner::None => false,
            Owner::Anon => true,
            Owner::Shmem | Owner::File => self.objects[fr.owner as usize]
                .vmas
                .iter()
                .any(|&v| {
                    let p = self.vmas[v as usize].ptes[fr.index as usize];
                    p & PTE_PRESENT != 0 && pte_frame(p) == f
                }),
        }
    }

    /// Allocate a swap slot for a folio (`folio_alloc_swap`) on the highest-priority device
    /// with room; the folio enters the swap cache.
    fn add_to_swap(&mut self, f: u32, cpu: usize) -> bool {
        for k in 0..self.swap_order.len() {
            let d = self.swap_order[k];
            if let Some(slot) = self.swaps[d].alloc(cpu) {
                self.swaps[d].cache[slot as usize] = f;
                self.swaps[d].shadow[slot as usize] = 0;
                self.frames[f as usize].set_swap(d, slot);
                self.frames[f as usize].flags |= PG_DIRTY;
                return true;
            }
        }
        false
    }

    // ------------------------------------------------------------------ entry points

    /// `try_to_free_pages` (global) or `try_to_free_mem_cgroup_pages` (memcg): the direct
    /// reclaim priority loop (§3.5). Charges its CPU to the task and records the stall.
    pub(crate) fn direct_reclaim(&mut self, tid: u32, cpu: usize, memcg: bool) -> u64 {
        if !memcg {
            self.vm.allocstall += 1;
            self.vm.allocstall_normal += 1;
        }
        let mut sc = ScanControl::new(SWAP_CLUSTER_MAX, false, memcg, cpu);
        let start = self.tasks[tid as usize].clock;
        loop {
            sc.nr_scanned = 0;
            sc.nr_taken = 0;
            sc.nr_writeback = 0;
            // Writes that completed while we scanned have rotated their pages to the tail.
            self.complete_io_until(start + sc.cost);
            self.shrink_node(&mut sc);
            if sc.nr_reclaimed >= sc.nr_to_reclaim {
                break;
            }
            // Everything this pass took is under writeback (or its queue is congested): the
            // kernel sleeps here (wait_iff_congested / reclaim_throttle, HZ/10) instead of
            // scanning ever larger fractions; the caller throttles us until writes complete.
            if self.profile == Profile::V2_6_28 {
                // 2.6.28 do_try_to_free_pages: "Take a nap, wait for some writeback to
                // complete": congestion_wait(WRITE, HZ/10) after every pass below
                // DEF_PRIORITY - 2 that scanned anything; it sleeps the whole timeout unless a
                // congested queue drains. No writeback-aware early exit existed yet.
                if sc.nr_scanned > 0 && sc.priority < DEF_PRIORITY - 2 {
                    let nap = (self.jiffy_ns * self.cfg.config.kernel.hz as u64) / 10;
                    sc.cost += nap;
                }
            } else if sc.writeback_stall || (sc.nr_reclaimed == 0 && sc.nr_taken > 0 && (sc.nr_writeback + sc.nr_congested) * 2 >= sc.nr_taken) {
                break;
            }
            sc.priority -= 1;
            if sc.priority < 0 {
                break;
            }
        }
        self.snapshot_refaults();
        let t = &mut self.tasks[tid as usize];
        t.clock += sc.cost;
        let mut stall = sc.cost;
        if let Some(since) = t.dr_throttle_since.take() {
            stall = t.clock.saturating_sub(since);
        }
        t.dr_calls += 1;
        t.dr_stall_ns += stall;
        t.dr_pages += sc.nr_reclaimed;
        t.dr_stall_hist.record(stall);
        t.dr_pages_hist.record(sc.nr_reclaimed);
        if sc.nr_reclaimed > 0 {
            self.rs.kswapd_failures = 0;
        }
        sc.nr_reclaimed
    }

    fn snapshot_refaults(&mut self) {
        self.rs.refault_snapshot = [self.vm.workingset_activate_anon, self.vm.workingset_activate_file];
    }

    /// `pgdat_balanced`: free pages above the high watermark (§3.4).
    pub(crate) fn pgdat_balanced(&self) -> bool {
        self.nr_free() > self.wm.high
    }

    /// `wakeup_kswapd` (§3.4).
    pub(crate) fn wakeup_kswapd(&mut self) {
        let k = self.kswapd;
        if self.rs.kswapd_failures >= MAX_RECLAIM_RETRIES || self.pgdat_balanced() {
            return;
        }
        let state = self.tasks[k as usize].state;
        if state != TState::Sleeping {
            return;
        }
        if let Some(until) = self.rs.kswapd.nap_until.take() {
            if self.now < until {
                self.vm.kswapd_low_wmark_hit_quickly += 1;
            }
        }
        self.rs.kswapd.throttled = false;
        let now = self.now;
        self.wake(k, now);
    }

    /// One iteration of `balance_pgdat`'s priority loop, run when kswapd has a CPU.
    pub(crate) fn kswapd_run(&mut self, cpu: usize) {
        let k = self.kswapd;
        if !self.rs.kswapd.active {
            self.vm.pageoutrun += 1;
            self.rs.kswapd.active = true;
            self.rs.kswapd.priority = DEF_PRIORITY;
            self.rs.kswapd.reclaimed = 0;
        }
        if self.pgdat_balanced() || self.rs.kswapd_failures >= MAX_RECLAIM_RETRIES {
            // prepare_kswapd_sleep: nap HZ/10, then sleep until woken.
            self.snapshot_refaults();
            self.rs.kswapd.active = false;
            let at = self.tasks[k as usize].clock;
            let nap = (self.jiffy_ns * self.cfg.config.kernel.hz as u64) / 10;
            self.rs.kswapd.nap_until = Some(at + nap);
            self.tasks[k as usize].state = TState::Sleeping;
            self.release_cpu(cpu, at);
            return;
        }
        let high = self.wm.high;
        let mut sc = ScanControl::new(high.max(SWAP_CLUSTER_MAX), true, false, cpu);
        sc.priority = self.rs.kswapd.priority;
        // kswapd_age_node: keep enough inactive anon.
        if self.swap_free_pages() > 0 && self.inactive_is_low(true) {
            self.shrink_active_list(SWAP_CLUSTER_MAX, LruList::ActiveAnon, &mut sc);
        }
        self.shrink_node(&mut sc);
        let got = sc.nr_reclaimed;
        self.rs.kswapd.reclaimed += got;
        let scanned_enough = sc.nr_scanned.max(sc.nr_reclaimed) >= sc.nr_to_reclaim;
        if (!scanned_enough || got == 0) && !sc.writeback_stall {
            self.rs.kswapd.priority -= 1;
        }
        let cost = sc.cost.max(1);
        self.tasks[k as usize].clock += cost;
        if self.rs.kswapd.priority < 1 {
            // End of one balance_pgdat run.
            if self.rs.kswapd.reclaimed == 0 {
                self.rs.kswapd_failures += 1;
            }
            self.rs.kswapd.active = false;
        }
        if (sc.writeback_stall || got == 0) && (sc.nr_immediate > 0 || sc.nr_congested > 0 || self.nr_writeback > 0) && !self.pgdat_balanced() {
            // reclaim_throttle(WRITEBACK): wait for writeback completions (HZ/10 at most).
            self.note_writeback_throttle();
            self.rs.kswapd.throttled = true;
            let timeout = (self.jiffy_ns * self.cfg.config.kernel.hz as u64) / 10;
            let at = self.tasks[k as usize].clock;
            self.tasks[k as usize].state = TState::Blocked;
            self.tasks[k as usize].timer_token += 1;
            let token = self.tasks[k as usize].timer_token;
            self.push(at + timeout, crate::engine::Ev::Timer(k, token));
            self.release_cpu(cpu, at);
            return;
        }
        self.continue_on_cpu(k, cpu);
    }

    /// kswapd's timer: a nap or a writeback throttle ended.
    pub(crate) fn kswapd_timer(&mut self) {
        let k = self.kswapd;
        if self.rs.kswapd.throttled {
            self.rs.kswapd.throttled = false;
            let now = self.now;
            self.wake(k, now);
        }
    }

    /// A write completed: a kswapd throttled on writeback runs again.
    pub(crate) fn kswapd_writeback_progress(&mut self) {
        if self.rs.kswapd.throttled {
            self.rs.kswapd.throttled = false;
            let k = self.kswapd;
            let now = self.now;
            self.wake(k, now);
        }
    }

    // ------------------------------------------------------------------ shrink_node

    /// `shrink_node` with `prepare_scan_control` (§3.6) for the one lruvec.
    fn shrink_node(&mut self, sc: &mut ScanControl) {
        let v6 = self.profile >= Profile::V6;
        if v6 {
            let act = [self.vm.workingset_activate_anon, self.vm.workingset_activate_file];
            sc.may_deactivate[0] = act[0] != self.rs.refault_snapshot[0] || self.inactive_is_low(true);
            sc.may_deactivate[1] = act[1] != self.rs.refault_snapshot[1] || self.inactive_is_low(false);
            sc.cache_trim_mode = (self.lru.size(LruList::InactiveFile) >> sc.priority) > 0 && !sc.may_deactivate[1];
        } else {
            sc.may_deactivate = [true, true];
            sc.cache_trim_mode = false;
        }
        let file = self.lru.size(LruList::InactiveFile) + self.lru.size(LruList::ActiveFile);
        sc.file_is_tiny = !sc.memcg
            && file + self.nr_free() <= self.wm.high
            && (!v6 || !sc.may_deactivate[0])
            && (self.lru.size(LruList::InactiveAnon) >> sc.priority) > 0;
        let before = sc.nr_reclaimed;
        self.shrink_lruvec(sc);
        if sc.nr_reclaimed > before {
            self.rs.kswapd_failures = 0;
        }
    }

    /// `get_scan_count` (§3.7): pages to scan per list at this priority.
    fn get_scan_count(&mut self, sc: &ScanControl) -> [u64; 4] {
        let sw = self.cfg.config.kernel.swappiness as u64;
        let swap_possible = sc.may_swap && self.swap_free_pages() > 0;
        #[derive(PartialEq)]
        enum Mode {
            Equal,
            Fract,
            Anon,
            File,
        }
        let v6 = self.profile >= Profile::V6;
        let inactive_file = self.lru.size(LruList::InactiveFile);
        let mode = if !swap_possible || (sc.memcg && sw == 0) {
            Mode::File
        } else if sc.priority == 0 && sw > 0 {
            Mode::Equal
        } else if sc.file_is_tiny {
            Mode::Anon
        } else if v6 && sc.cache_trim_mode {
            Mode::File
        } else if !v6 && self.profile > Profile::V2_6_28 && !self.inactive_is_low(false) && (inactive_file >> sc.priority) > 0 {
            Mode::File
        } else {
            Mode::Fract
        };
        let (ap, fp, denom) = if mode == Mode::Fract {
            if v6 {
                let (ac, fc) = (self.rs.anon_cost, self.rs.file_cost);
                let total = ac + fc;
                let a = total + ac;
                let f = total + fc;
                let t = a + f;
                let ap = sw * (t + 1) / (a + 1);
                let fp = (200 - sw) * (t + 1) / (f + 1);
                (ap, fp, ap + fp)
            } else {
                let anon_size = self.lru.size(LruList::InactiveAnon) + self.lru.size(LruList::ActiveAnon);
                let file_size = inactive_file + self.lru.size(LruList::ActiveFile);
                let rs = &mut self.rs;
                if rs.recent_scanned[0] > anon_size / 4 {
                    rs.recent_scanned[0] /= 2;
                    rs.recent_rotated[0] /= 2;
                }
                if rs.recent_scanned[1] > file_size / 4 {
                    rs.recent_scanned[1] /= 2;
                    rs.recent_rotated[1] /= 2;
                }
                let ap = sw * (rs.recent_scanned[0] + 1) / (rs.recent_rotated[0] + 1);
                let fp = (200 - sw) * (rs.recent_scanned[1] + 1) / (rs.recent_rotated[1] + 1);
                (ap, fp, ap + fp + 1)
            }
        } else {
            (0, 0, 1)
        };
        let mut nr = [0u64; 4];
        for l in LruList::ALL {
            let size = self.lru.size(l);
            let mut scan = size >> sc.priority;
            match mode {
                Mode::Equal => {}
                Mode::Fract => {
                    let frac = if l.is_anon() { ap } else { fp };
                    scan = (scan as u128 * frac as u128 / denom.max(1) as u128) as u64;
                }
                Mode::Anon => {
                    if !l.is_anon() {
                        scan = 0
                    }
                }
                Mode::File => {
                    if l.is_anon() {
                        scan = 0
                    }
                }
            }
            nr[l as usize] = scan;
        }
        nr
    }

    /// `shrink_lruvec` with the era's bail-out rule (§3.8).
    fn shrink_lruvec(&mut self, sc: &mut ScanControl) {
        let mut nr = self.get_scan_count(sc);
        let targets = nr;
        let proportional = !sc.kswapd && !sc.memcg && sc.priority == DEF_PRIORITY;
        let mut reclaimed = 0u64;
        let mut scan_adjusted = false;
        const IA: usize = 0;
        const AA: usize = 1;
        const IF: usize = 2;
        const AF: usize = 3;
        while nr[IA] > 0 || nr[AF] > 0 || nr[IF] > 0 {
            for l in LruList::ALL {
                let li = l as usize;
                if nr[li] > 0 && !sc.writeback_stall {
                    let k = nr[li].min(SWAP_CLUSTER_MAX);
                    nr[li] -= k;
                    reclaimed += self.shrink_list(l, k, sc);
                }
            }
            if sc.writeback_stall {
                break;
            }
            // reclaim_throttle(WRITEBACK) / wait_iff_congested: when the folios taken so far
            // are all under writeback, the kernel sleeps inside this loop until writes
            // complete; the model ends the pass here and the caller sleeps (§3.13).
            if self.profile > Profile::V2_6_28 && reclaimed == 0 && sc.nr_taken >= 4 * SWAP_CLUSTER_MAX && (sc.nr_writeback + sc.nr_congested) * 2 >= sc.nr_taken {
                sc.writeback_stall = true;
                break;
            }
            match self.bailout {
                Bailout::None => continue,
                Bailout::Rvr => {
                    if reclaimed > SWAP_CLUSTER_MAX && sc.priority < DEF_PRIORITY && !sc.kswapd {
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
            if reclaimed < sc.nr_to_reclaim || proportional || scan_adjusted {
                continue;
            }
            let left_file = nr[IF] + nr[AF];
            let left_anon = nr[IA] + nr[AA];
            if left_file == 0 || left_anon == 0 {
                break;
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
            if self.bailout == Bailout::ProportionalFull {
                scan_adjusted = true;
            }
        }
        sc.nr_reclaimed += reclaimed;
        if self.swap_free_pages() > 0 && self.inactive_is_low(true) {
            self.shrink_active_list(SWAP_CLUSTER_MAX, LruList::ActiveAnon, sc);
        }
    }

    fn shrink_list(&mut self, l: LruList, n: u64, sc: &mut ScanControl) -> u64 {
        if l.is_active() {
            let gate = if self.profile >= Profile::V6 { sc.may_deactivate[!l.is_anon() as usize] } else { self.inactive_is_low(l.is_anon()) };
            if gate {
                self.shrink_active_list(n, l, sc);
            }
            return 0;
        }
        self.shrink_inactive_list(n, l, sc)
    }

    /// `shrink_active_list` (§3.9): deactivate from the active tail; referenced pages lose
    /// their accessed bits but are deactivated anyway (no executable file mappings here).
    fn shrink_active_list(&mut self, n: u64, l: LruList, sc: &mut ScanControl) {
        let anon = l.is_anon();
        let mut taken = 0u64;
        let mut rotated = 0u64;
        let mut walks = 0u64;
        while taken < n {
            let f = self.lru.tail(l);
            if f == NONE {
                break;
            }
            self.lru.remove(&mut self.frames, f);
            taken += 1;
            let (refs, w) = self.folio_referenced(f);
            walks += w as u64;
            if refs > 0 {
                rotated += 1; // pre-5.8 recent_rotated counts every referenced page
            }
            let fr = &mut self.frames[f as usize];
            fr.flags &= !PG_ACTIVE;
            fr.flags |= PG_WORKINGSET;
            self.lru.add_head(&mut self.frames, f, LruList::of(anon, false));
        }
        self.vm.pgrefill += taken;
        self.vm.pgdeactivate += taken;
        self.rs.recent_scanned[!anon as usize] += taken;
        if self.profile < Profile::V6 {
            self.rs.recent_rotated[!anon as usize] += rotated;
        }
        sc.cost += taken * self.costs.scan_page_ns + walks * self.costs.rmap_walk_ns;
    }

    /// `folio_check_references` (§3.10), per era.
    fn check_references(&mut self, f: u32) -> (Verdict, u32) {
        let (ptes, walks) = self.folio_referenced(f);
        let fr = &mut self.frames[f as usize];
        let had_ref = fr.flags & PG_REFERENCED != 0;
        fr.flags &= !PG_REFERENCED;
        if ptes > 0 {
            if self.profile < Profile::V6 && fr.has(PG_SWAPBACKED) {
                return (Verdict::Activate, walks); // pre-5.9: referenced anon activates at once
            }
            fr.flags |= PG_REFERENCED;
            if had_ref || ptes > 1 {
                return (Verdict::Activate, walks);
            }
            return (Verdict::Keep, walks);
        }
        if had_ref && !fr.has(PG_SWAPBACKED) {
            return (Verdict::ReclaimClean, walks);
        }
        (Verdict::Reclaim, walks)
    }

    /// `shrink_inactive_list` + `shrink_folio_list` (§3.10, §2.6).
    fn shrink_inactive_list(&mut self, n: u64, l: LruList, sc: &mut ScanControl) -> u64 {
        let anon = l.is_anon();
        let mut isolated = Vec::with_capacity(n as usize);
        while (isolated.len() as u64) < n {
            let f = self.lru.tail(l);
            if f == NONE {
                break;
            }
            self.lru.remove(&mut self.frames, f);
            isolated.push(f);
        }
        let taken = isolated.len() as u64;
        if taken == 0 {
            return 0;
        }
        sc.nr_taken += taken;
        // pgscan_kswapd / pgscan_direct count global reclaim only; cgroup limit reclaim shows in
        // the per-type counters (and the cgroup's memory.stat), §7.2.
        if sc.kswapd {
            self.vm.pgscan_kswapd += taken;
        } else if !sc.memcg {
            self.vm.pgscan_direct += taken;
        }
        if anon {
            self.vm.pgscan_anon += taken;
        } else {
            self.vm.pgscan_file += taken;
        }
        sc.nr_scanned += taken;
        self.rs.recent_scanned[!anon as usize] += taken;
        let c = self.costs.clone();
        let mut cost = taken * c.scan_page_ns;
        let mut reclaimed = 0u64;
        let mut activated = 0u64;
        let mut pageout = 0u64;
        let mut swap_plugs: Vec<Plug> = (0..self.swaps.len()).map(|_| Plug::default()).collect();
        let mut file_plug = Plug::default();
        let mut keep = Vec::new();
        let mut activate = Vec::new();
        for f in isolated {
            let fr = self.frames[f as usize];
            if sc.writeback_stall {
                keep.push(f);
                continue;
            }
            if fr.has(PG_LOCKED) {
                keep.push(f);
                continue;
            }
            if fr.has(PG_WRITEBACK) {
                // §3.10 step 3: (a) kswapd meeting a folio already marked: nr_immediate;
                // (b) otherwise mark it for immediate reclaim. Both activate; writeback
                // completion rotates it to the inactive tail.
                if fr.has(PG_RECLAIM) {
                    sc.nr_immediate += 1;
                }
                sc.nr_writeback += 1;
                self.frames[f as usize].flags |= PG_RECLAIM;
                activate.push(f);
                continue;
            }
            let (verdict, walks) = self.check_references(f);
            cost += walks as u64 * c.rmap_walk_ns;
            match verdict {
                Verdict::Activate => {
                    activate.push(f);
                    continue;
                }
                Verdict::Keep => {
                    keep.push(f);
                    continue;
                }
                Verdict::Reclaim | Verdict::ReclaimClean => {}
            }
            let swap_backed = fr.has(PG_SWAPBACKED);
            if swap_backed && !fr.has(PG_SWAPCACHE) {
                if !self.add_to_swap(f, sc.cpu) {
                    activate.push(f);
                    continue;
                }
                cost += c.swap_alloc_ns;
            }
            if self.folio_mapped(f) {
                self.try_to_unmap(f);
                cost += c.unmap_ns;
                if self.frames[f as usize].owner_kind() == Owner::Shmem {
                    // shmem_writeout: the inode entry now points at the swap slot.
                    let fr = self.frames[f as usize];
                    let (dev, slot) = (fr.swap_dev(), fr.slot);
                    self.objects[fr.owner as usize].entries[fr.index as usize] = swp_entry(dev, slot);
                    self.swaps[dev].map[slot as usize] += 1;
                    self.frames[f as usize].set_owner(Owner::None, NONE, 0);
                }
            } else if self.frames[f as usize].owner_kind() == Owner::Shmem {
                let fr = self.frames[f as usize];
                let (dev, slot) = (fr.swap_dev(), fr.slot);
                self.objects[fr.owner as usize].entries[fr.index as usize] = swp_entry(dev, slot);
                self.swaps[dev].map[slot as usize] += 1;
                self.frames[f as usize].set_owner(Owner::None, NONE, 0);
            }
            if self.frames[f as usize].has(PG_DIRTY) {
                if verdict == Verdict::ReclaimClean {
                    keep.push(f);
                    continue;
                }
                let congested = if swap_backed {
                    let dev = self.frames[f as usize].swap_dev();
                    let d = &self.swaps[dev].device;
                    !d.params.synchronous && d.in_flight() + swap_plugs[dev].requests.len() as u64 >= d.params.nr_requests as u64
                } else {
                    self.file_dev.in_flight() + file_plug.requests.len() as u64 >= self.file_dev.params.nr_requests as u64
                };
                if congested {
                    // The request queue is full: the submitter would sleep for a free request
                    // (blk-mq tag wait); the model ends this pass and the caller sleeps until
                    // writes complete.
                    sc.nr_congested += 1;
                    // 2.6.28 pageout(): may_write_to_queue() fails -> PAGE_KEEP, scanning goes on.
                    sc.writeback_stall = self.profile > Profile::V2_6_28;
                    keep.push(f);
                    continue;
                }
                let fr = &mut self.frames[f as usize];
                fr.flags &= !PG_DIRTY;
                if swap_backed {
                    let (dev, slot) = (fr.swap_dev(), fr.slot);
                    self.vm.pswpout += 1;
                    self.vm.nr_vmscan_write += 1;
                    pageout += 1;
                    let d = &mut self.swaps[dev].device;
                    if d.params.synchronous {
                        // SWP_SYNCHRONOUS_IO write: done in this context, free it now (§1.7).
                        cost += d.sync_cpu_ns(1, true) + if d.params.block_layer { d.params.block_layer_cpu_ns } else { 0 };
                        d.sync_io(crate::device::Request { start: slot as u64, pages: 1, write: true });
                        self.vm.pgpgout += 4;
                    } else {
                        let fr = &mut self.frames[f as usize];
                        fr.flags |= PG_WRITEBACK | PG_RECLAIM;
                        self.nr_writeback += 1;
                        sc.nr_writeback += 1;
                        let m = self.swaps[dev].device.params.max_request_pages;
                        swap_plugs[dev].add(slot as u64, true, f, m);
                        keep.push(f);
                        continue;
                    }
                } else {
                    // A dirty file page: written back asynchronously (the flusher's work, started
                    // by reclaim), then reclaimed clean after it rotates to the tail.
                    let fr = &mut self.frames[f as usize];
                    fr.flags |= PG_WRITEBACK | PG_RECLAIM;
                    self.nr_writeback += 1;
                    self.vm.nr_vmscan_immediate_reclaim += 1;
                    let fr = self.frames[f as usize];
                    let base = self.objects[fr.owner as usize].file_base;
                    file_plug.add(base + fr.index as u64, true, f, self.file_dev.params.max_request_pages);
                    pageout += 1;
                    keep.push(f);
                    continue;
                }
            }
            // __remove_mapping: leave a shadow, free the page.
            self.remove_mapping(f);
            cost += c.free_page_ns;
            reclaimed += 1;
        }
        for f in keep {
            self.lru.add_head(&mut self.frames, f, LruList::of(anon, false));
        }
        for f in activate {
            // activate_locked: give swap back when swap is tight (§2.5).
            if self.frames[f as usize].has(PG_SWAPCACHE) && self.vm_swap_full() {
                self.try_free_swap(f);
            }
            self.frames[f as usize].flags |= PG_ACTIVE;
            self.lru.add_head(&mut self.frames, f, LruList::of(anon, true));
            activated += 1;
        }
        self.vm.pgactivate += activated;
        self.age_nonresident(activated);
        let mut at_cpu = cost;
        let reclaimer_clock = if sc.kswapd { self.tasks[self.kswapd as usize].clock } else { self.now };
        for (d, plug) in swap_plugs.into_iter().enumerate() {
            if !plug.is_empty() {
                at_cpu += self.submit_plug(DevRef::Swap(d), plug, reclaimer_clock + sc.cost + at_cpu);
            }
        }
        if !file_plug.is_empty() {
            at_cpu += self.submit_plug(DevRef::File, file_plug, reclaimer_clock + sc.cost + at_cpu);
        }
        sc.cost += at_cpu;
        if sc.kswapd {
            self.vm.pgsteal_kswapd += reclaimed;
        } else if !sc.memcg {
            self.vm.pgsteal_direct += reclaimed;
        }
        if anon {
            self.vm.pgsteal_anon += reclaimed;
        } else {
            self.vm.pgsteal_file += reclaimed;
        }
        if self.profile >= Profile::V6 {
            self.lru_note_cost(anon, pageout, taken - reclaimed);
        } else {
            self.rs.recent_rotated[!anon as usize] += activated;
        }
        reclaimed
    }

    /// `__remove_mapping` (§2.5): out of the swap cache or page cache with a shadow, freed.
    fn remove_mapping(&mut self, f: u32) {
        let fr = self.frames[f as usize];
        if fr.has(PG_SWAPCACHE) {
            self.delete_from_swap_cache(f, true);
        } else if fr.owner_kind() == Owner::File {
            let sh = if self.workingset_file { self.workingset_eviction(f) } else { 0 };
            let e = if sh != 0 { ENT_SHADOW | sh as u64 } else { 0 };
            self.objects[fr.owner as usize].entries[fr.index as usize] = e;
        } else if fr.owner_kind() == Owner::Shmem {
            self.objects[fr.owner as usize].entries[fr.index as usize] = 0;
        }
        self.free_frame(f);
    }
}
