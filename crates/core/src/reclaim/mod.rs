//! What every reclaim policy shares (kernel-algorithms.md §3): the scan control, the
//! direct-reclaim priority loop (`direct.rs`), kswapd (`kswapd.rs`), the page-out path that
//! frees what a policy chose (`pageout.rs`, `shrink_folio_list`), and the LRU policy interface
//! with its registry (`policy.rs`). The policies themselves are folders: `classic/` (the
//! active/inactive lists with refault distance) and `mglru/` (the multi-generational LRU).
//!
//! Reclaim runs atomically at the reclaiming task's clock; its CPU cost (pages scanned, rmap
//! walks, unmaps, frees, block-layer submissions) is accumulated by category in
//! `ScanControl::cost` (`stats::cpu`) and charged to that task; the reclaim drivers add each
//! pass's ledger to kswapd's or the direct reclaimers' profile. kswapd reclaims one `shrink_node`
//! pass per step of its kernel thread. Each pass is atomic; 2.6.28's direct reclaim sleeps
//! between passes (`congestion_wait`) and resumes its priority loop when it wakes (`direct.rs`),
//! and a direct reclaimer that meets `too_many_isolated` sleeps and resumes at the same priority;
//! the pages every pass held isolated stay visible to the others for as long as it held them
//! (`isolation.rs`).

pub mod anon_vma_lock;
pub mod bailout;
pub mod change_sums;
pub mod classic;
mod direct;
pub mod isolation;
pub mod kswapd;
pub mod lru_add;
pub mod lru_lock;
pub mod mglru;
mod pageout;
pub mod pfmemalloc;
pub mod policy;
pub mod rstat_flush;
pub mod timeline;
pub mod tlb_flush;
pub mod workingset_lines;
mod vm_writeout;
pub mod writeback_stall;

pub use bailout::Bailout;
pub use direct::DirectReclaimCont;
pub(crate) use direct::DirectReclaim;
pub use policy::{LruGenRmap, LruPolicy, RefaultCtx};

use crate::config::Resolved;
use crate::engine::{DevRef, Sim};
use crate::stats::{CpuCost, VmStat};

/// `SWAP_CLUSTER_MAX`: reclaim's batch, and direct reclaim's goal (§3.5).
pub const SWAP_CLUSTER_MAX: u64 = 32;
/// `DEF_PRIORITY`: the first priority of a reclaim cycle; a pass scans `size >> priority`.
pub const DEF_PRIORITY: i32 = 12;
/// `MAX_RECLAIM_RETRIES` (§3.1, §3.4): allocation attempts without reclaim progress before
/// the OOM killer, and balance_pgdat runs without progress before kswapd gives up on a node.
pub const MAX_RECLAIM_RETRIES: u32 = 16;

/// Reclaim state of the single node: the LRU policy and kswapd's progress.
pub struct ReclaimState {
    /// The LRU policy; `None` only while one of its reclaim passes runs (`with_policy`).
    policy: Option<Box<dyn LruPolicy>>,
    /// `pgdat->kswapd_failures`: balance_pgdat runs in a row that reclaimed nothing (§3.4).
    pub kswapd_failures: u32,
    pub kswapd: kswapd::KswapdState,
    /// 2.6.28 `zone->pages_scanned`: pages scanned since a page was last freed.
    pub pages_scanned: u64,
    /// 2.6.28 `ZONE_ALL_UNRECLAIMABLE`: kswapd saw `pages_scanned` pass six times the LRU
    /// pages; cleared when a page is freed (`free_pages_bulk`).
    pub all_unreclaimable: bool,
    /// `PGDAT_DIRTY` (3.11+; ZONE_TAIL_LRU_DIRTY before 4.8): kswapd met nothing but unqueued
    /// dirty file folios, so it may write file folios itself; cleared when the node is
    /// balanced.
    pub pgdat_dirty: bool,
    /// PGDAT_WRITEBACK (ZONE_WRITEBACK before 4.8, 3.11+): a batch was all under writeback;
    /// kswapd then counts the marked folios it meets again as `nr_immediate`.
    pub pgdat_writeback: bool,
    /// PGDAT_CONGESTED (ZONE_CONGESTED before 4.8; LRUVEC_NODE_CONGESTED in 6.x): every
    /// dirty page-cache folio a pass met was congested; direct reclaimers then sleep
    /// (`wait_iff_congested`, `reclaim_throttle(CONGESTED)`). `writeback_stall.rs`.
    pub pgdat_congested: bool,
    /// Direct reclaimers' sleeps in each era's writeback stall, by `WritebackWait` (kswapd's
    /// are `kswapd.writeback_sleeps`).
    pub writeback_sleeps: [u64; writeback_stall::WAIT_KINDS],
    /// Legacy memcg reclaimers' waits on a folio's writeback (§3.10 step 3(c)).
    pub folio_writeback_waits: u64,
    /// Naps in 2.6.28's `throttle_vm_writeout` at the end of a zone pass (`vm_writeout.rs`):
    /// direct reclaimers', and kswapd's.
    pub vm_writeout_naps: u64,
    pub kswapd_vm_writeout_naps: u64,
    /// The allocator's sleeps before it retries after a direct reclaim
    /// (`congestion_wait(HZ/50)` through 2.6.35, 3.14's `wait_iff_congested`, 4.x's HZ/10
    /// wait for pending writes), and 2.6.28–2.6.35 direct reclaim's `congestion_wait(HZ/10)`
    /// between priorities: reported per run (`Summary::congestion_naps_*`), no vmstat counter.
    pub alloc_naps: u64,
    pub direct_reclaim_naps: u64,
    /// The task a direct reclaim runs for (the kernel's `current` in reclaim); None for
    /// kswapd and other kernel threads.
    pub current: Option<u32>,
    /// Pages reclaimers hold isolated, and the too_many_isolated sleepers (`isolation.rs`).
    pub isolation: isolation::Isolation,
    /// The lruvec's `lru_lock` and the CPUs' page vectors (`lru_lock.rs`).
    pub lru_lock: lru_lock::LruLock,
    /// The `lru_lock` of each memory cgroup above the tasks' group, which the classic LRU's
    /// `lru_note_cost` takes in turn (`lru_lock.rs`).
    pub memcg_ancestors: lru_lock::AncestorLocks,
    /// 2.6.28's `anon_vma->lock` of each shared anon_vma (`anon_vma_lock.rs`).
    pub anon_vma_locks: anon_vma_lock::AnonVmaLocks,
    /// The lines of the group's workingset counters (`workingset_lines.rs`).
    pub ws_lines: workingset_lines::WorkingsetLines,
    /// The CPUs' LRU-add batches (`folio_add_lru`).
    pub lru_add: lru_add::LruAddBatches,
    /// The reclaimer's pending TLB flush and the shootdowns sent (`tlb_flush.rs`).
    pub tlb: tlb_flush::TlbBatch,
    /// 5.15-5.17's statistics flush in the classic LRU's refault path and 5.15-6.1's in its
    /// `shrink_node` (`rstat_flush.rs`).
    pub rstat: rstat_flush::RstatFlush,
    /// Direct reclaimers throttled on the pfmemalloc reserves (`pfmemalloc.rs`).
    pub pfmemalloc: pfmemalloc::PfmemallocWait,
}

impl ReclaimState {
    pub fn new(cfg: &Resolved) -> ReclaimState {
        let policy = policy::build(&cfg.config.kernel.reclaim, cfg);
        let m = &cfg.config.machine;
        let batch = crate::config::memcg_charge_batch(&cfg.config.kernel.profile);
        let rstat = rstat_flush::RstatFlush::new(policy.refault_flush(), policy.reclaim_flush(), batch, m.cpus, m.online_cpus);
        // The group's depth below the root: its ancestors, the root's lruvec included.
        let depth = m.memcg_limit.map_or(0, |_| m.memcg_path.as_deref().and_then(crate::config::memcg_path_depth).unwrap_or(1));
        let memcg_ancestors = lru_lock::AncestorLocks::new(depth);
        ReclaimState { policy: Some(policy), rstat, pfmemalloc: Default::default(), kswapd_failures: 0, kswapd: Default::default(), pages_scanned: 0, pgdat_dirty: false, pgdat_writeback: false, pgdat_congested: false, writeback_sleeps: Default::default(), folio_writeback_waits: 0, vm_writeout_naps: 0, kswapd_vm_writeout_naps: 0, alloc_naps: 0, direct_reclaim_naps: 0, all_unreclaimable: false, current: None, isolation: Default::default(), lru_lock: Default::default(), anon_vma_locks: Default::default(), memcg_ancestors, ws_lines: workingset_lines::WorkingsetLines::new(depth), lru_add: Default::default(), tlb: tlb_flush::TlbBatch::new(tlb_flush::FlushMode::of(cfg), cfg.config.kernel.lazy_mm_cpumask) }
    }

    /// The policy, outside its own reclaim passes.
    #[inline]
    pub fn policy(&mut self) -> &mut dyn LruPolicy {
        self.policy.as_deref_mut().expect("the LRU policy was used from inside its own reclaim pass")
    }

    #[inline]
    pub fn policy_ref(&self) -> &dyn LruPolicy {
        self.policy.as_deref().expect("the LRU policy was used from inside its own reclaim pass")
    }

    /// `[nr_inactive_anon, nr_active_anon, nr_inactive_file, nr_active_file]`.
    pub fn lru_sizes(&self) -> [u64; 4] {
        self.policy_ref().lru_sizes()
    }
}

/// What is left of a classic `shrink_lruvec` pass whose reclaimer fell asleep inside it (for a
/// free request, in `too_many_isolated`, on a folio's writeback, in 3.x/4.x's writeback stall)
/// or, 2.6.32's kswapd, was preempted at a `cond_resched` in it. The kernel's sleeper returns
/// into the same loop: `shrink_zone` (2.6.28–3.x) or `shrink_lruvec` (3.x+) goes on with its
/// local `nr[]`, `targets[]`, `nr_reclaimed` and `scan_adjusted`, with no new
/// `get_scan_count` and no second `prepare_scan_control` (its `sc` fields are the pass's). The
/// policy fills it in when the pass stops; the reclaimer keeps it (a direct reclaim in its
/// continuation, kswapd in its state) and hands it back to the policy when it runs again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PassLeft {
    /// Pages still to scan per list (`nr[]`, indexed by `LruList`).
    pub nr: [u64; 4],
    /// The pass's original counts (`targets[]`, for the proportional rule).
    pub targets: [u64; 4],
    /// Pages this pass has reclaimed so far (its local `nr_reclaimed`).
    pub reclaimed: u64,
    pub scan_adjusted: bool,
    /// `prepare_scan_control`'s decisions for this pass.
    pub may_deactivate: [bool; 2],
    pub cache_trim_mode: bool,
    pub file_is_tiny: bool,
}

impl PassLeft {
    /// The rest of a pass that stops with `nr` left of `targets`, having reclaimed `reclaimed`.
    pub fn of(nr: [u64; 4], targets: [u64; 4], reclaimed: u64, scan_adjusted: bool, sc: &ScanControl) -> PassLeft {
        debug_assert!(nr.iter().zip(&targets).all(|(n, t)| n <= t), "more left of a pass than it set out to scan: {nr:?} of {targets:?}");
        PassLeft { nr, targets, reclaimed, scan_adjusted, may_deactivate: sc.may_deactivate, cache_trim_mode: sc.cache_trim_mode, file_is_tiny: sc.file_is_tiny }
    }
}

/// `struct scan_control`, the parts this model uses.
#[derive(Clone, Debug)]
pub struct ScanControl {
    pub nr_to_reclaim: u64,
    pub priority: i32,
    /// Reclaiming on behalf of kswapd (else a direct reclaimer).
    pub kswapd: bool,
    /// Memory-cgroup limit reclaim (else global).
    pub memcg: bool,
    /// The CPU the reclaimer runs on (picks the swap allocator's per-CPU cluster).
    pub cpu: usize,
    pub nr_scanned: u64,
    pub nr_reclaimed: u64,
    /// The kernel's `sc->nr` / `struct reclaim_stat` counts of this node pass (the era's
    /// writeback stalls read them, `writeback_stall.rs`). Folios met under writeback that
    /// kswapd had already marked for immediate reclaim while the node is flagged
    /// PGDAT_WRITEBACK (`nr_immediate`).
    pub nr_immediate: u64,
    /// Page-cache folios counted congested, the era's way (`writeback_stall.rs`).
    pub nr_congested: u64,
    /// Folios isolated, and of those, met under writeback (the `nr_writeback == nr_taken`
    /// test that flags PGDAT_WRITEBACK).
    pub nr_taken: u64,
    pub nr_writeback: u64,
    /// Page-cache folios isolated, of those the dirty or under writeback ones (`nr_dirty`), and
    /// the dirty ones not under writeback (`nr.file_taken`, `nr.unqueued_dirty`: kswapd's
    /// PGDAT_DIRTY test).
    pub nr_file_taken: u64,
    pub nr_dirty: u64,
    pub nr_unqueued_dirty: u64,
    /// This pass met a full request queue on this device: the submitter sleeps for a free
    /// request (`get_request` / `blk_mq_get_tag`), and the rest of its batch waits with it.
    /// The reclaimer resumes at the same priority when a write on that device completes.
    pub(crate) queue_full: Option<DevRef>,
    /// The era's writeback stall this pass ends in (`writeback_stall.rs`): the reclaimer
    /// sleeps it, then goes on.
    pub writeback_wait: Option<writeback_stall::WritebackWait>,
    /// Legacy memory-cgroup reclaim met this folio under writeback, already marked for
    /// immediate reclaim, and waits for its write to end (`folio_wait_writeback`, §3.10 step
    /// 3(c)): it and the rest of the batch wait with the reclaimer (deferred, as behind a full
    /// queue), which resumes at the same priority and meets the folio again first.
    pub(crate) folio_wait: Option<u32>,
    /// The reclaimer can sleep (not a readahead page's allocation, which is dropped rather
    /// than waited for).
    pub may_sleep: bool,
    /// This pass stopped in `too_many_isolated` before isolating from the inactive list of
    /// this type (anon: true): the direct reclaimer sleeps the era's way, then resumes at the
    /// same priority (`isolation.rs`).
    pub isolated_stall: Option<(bool, isolation::IsolatedWait)>,
    /// Resumed after such a sleep: the next `too_many_isolated` of this type is the check the
    /// kernel makes on waking.
    pub isolated_recheck: Option<bool>,
    /// Classic (6.x): may the active lists be deactivated ([anon, file]).
    pub may_deactivate: [bool; 2],
    /// 6.x: an active list was left alone because `may_deactivate` said so
    /// (`skipped_deactivate`); a direct reclaim that then freed nothing retries with
    /// `force_deactivate` (`do_try_to_free_pages`).
    pub skipped_deactivate: bool,
    pub force_deactivate: bool,
    pub cache_trim_mode: bool,
    pub file_is_tiny: bool,
    /// CPU time spent so far, by category.
    pub cost: CpuCost,
    /// The reclaimer's clock when the call began (`sim.now` may lag a user task that runs
    /// ahead of the event loop): with `elapsed()`, the reclaimer's time now.
    pub start_clock: u64,
    /// The policy asks for the OOM killer (MGLRU's `min_ttl_ms`); the reclaim driver invokes
    /// it once the policy's pass has returned.
    pub oom: bool,
    /// 2.6.32 kswapd (`kswapd.rs`, "preempted at cond_resched"): the time at which something
    /// else happens on the machine (the next event), or kswapd's slice ends while another
    /// task waits for the CPU (`kswapd_yield_at`). A pass whose clock reaches it stops at
    /// the end of its current SWAP_CLUSTER_MAX round and leaves the rest for kswapd's next
    /// step, as kswapd's `cond_resched` in `shrink_page_list` lets a woken task run.
    pub yield_at: Option<u64>,
    /// The pass stopped at `yield_at` with scanning left (the policy kept its remaining counts).
    pub yielded: bool,
    /// A pass that stopped part-way (set by the policy), or the one its reclaimer resumes
    /// (set by the caller): see [`PassLeft`].
    pub pass_left: Option<PassLeft>,
}

impl ScanControl {
    /// Count `taken` pages isolated by this pass. pgscan_kswapd / pgscan_direct count global
    /// reclaim only; cgroup limit reclaim shows in the per-type counters (and the cgroup's
    /// memory.stat), §7.2. Under MGLRU the pages are those isolated (§5.6).
    pub(crate) fn count_scan(&self, vm: &mut VmStat, anon: bool, taken: u64) {
        if self.kswapd {
            vm.pgscan_kswapd += taken;
        } else if !self.memcg {
            vm.pgscan_direct += taken;
        }
        if anon {
            vm.pgscan_anon += taken;
        } else {
            vm.pgscan_file += taken;
        }
    }

    /// pgsteal_* as [`ScanControl::count_scan`] counts pgscan_*.
    pub(crate) fn count_steal(&self, vm: &mut VmStat, anon: bool, reclaimed: u64) {
        if self.kswapd {
            vm.pgsteal_kswapd += reclaimed;
        } else if !self.memcg {
            vm.pgsteal_direct += reclaimed;
        }
        if anon {
            vm.pgsteal_anon += reclaimed;
        } else {
            vm.pgsteal_file += reclaimed;
        }
    }

    pub fn new(nr_to_reclaim: u64, kswapd: bool, memcg: bool, cpu: usize) -> ScanControl {
        ScanControl {
            nr_to_reclaim,
            priority: DEF_PRIORITY,
            kswapd,
            memcg,
            cpu,
            nr_scanned: 0,
            nr_reclaimed: 0,
            nr_immediate: 0,
            nr_congested: 0,
            nr_taken: 0,
            nr_writeback: 0,
            nr_file_taken: 0,
            nr_dirty: 0,
            nr_unqueued_dirty: 0,
            queue_full: None,
            writeback_wait: None,
            folio_wait: None,
            may_sleep: true,
            isolated_stall: None,
            isolated_recheck: None,
            may_deactivate: [true; 2],
            skipped_deactivate: false,
            force_deactivate: false,
            cache_trim_mode: false,
            file_is_tiny: false,
            cost: CpuCost::default(),
            start_clock: 0,
            oom: false,
            yield_at: None,
            yielded: false,
            pass_left: None,
        }
    }

    /// The reclaimer sleeps inside this pass (too_many_isolated, a full request queue, a
    /// legacy memcg's wait on a folio's writeback, or a 3.x/4.x writeback stall in
    /// `shrink_inactive_list`): the pass scans no more.
    pub fn pass_stalled(&self) -> bool {
        self.isolated_stall.is_some() || self.batch_waits() || self.writeback_wait.is_some_and(|w| w.mid_pass())
    }

    /// The rest of the batch waits with the reclaimer (deferred): it sleeps for a request or
    /// on a folio's writeback in the middle of `shrink_folio_list`.
    pub fn batch_waits(&self) -> bool {
        self.queue_full.is_some() || self.folio_wait.is_some()
    }

    /// `memset(&sc->nr, 0, ..)` at the start of `shrink_node`: the counts are the pass's.
    fn reset_node_counts(&mut self) {
        self.nr_immediate = 0;
        self.nr_congested = 0;
        self.nr_taken = 0;
        self.nr_writeback = 0;
        self.nr_file_taken = 0;
        self.nr_dirty = 0;
        self.nr_unqueued_dirty = 0;
    }

    /// Time since the reclaim pass began: its CPU (sleeps happen between passes, outside it).
    pub fn elapsed(&self) -> u64 {
        self.cost.total()
    }

    /// The reclaimer's clock now: where the call began plus the CPU it has spent.
    pub fn clock(&self) -> u64 {
        self.start_clock + self.cost.total()
    }
}

impl Sim {
    /// Run `f` with the LRU policy taken out of `self`, so that it can use all of the sim.
    fn with_policy<R>(&mut self, f: impl FnOnce(&mut dyn LruPolicy, &mut Sim) -> R) -> R {
        let mut p = self.reclaim.policy.take().expect("the LRU policy re-entered its own reclaim pass");
        let r = f(&mut *p, self);
        self.reclaim.policy = Some(p);
        r
    }

    /// `shrink_node`: one pass of the policy over the node; progress resets kswapd's failures.
    pub(crate) fn shrink_node(&mut self, sc: &mut ScanControl) {
        let before = sc.nr_reclaimed;
        sc.reset_node_counts();
        // lru_add_drain() of shrink_{in,}active_list / lru_gen_shrink_node (lru_add.rs).
        self.lru_add_drain_reclaim(sc);
        self.with_policy(|p, sim| p.shrink_node(sim, sc));
        // shrink_slab after the LRUs (shrink_node_memcgs, lru_gen's shrink_one): the one
        // shrinker the model has is zswap's. A pass asleep in too_many_isolated gets there when
        // the reclaimer resumes it.
        if !sc.pass_stalled() && !sc.yielded {
            self.zswap_shrink_slab(sc);
        }
        if sc.nr_reclaimed > before {
            self.reclaim.kswapd_failures = 0;
        }
        // 3.11+: kswapd may write file pages once every file folio it took was dirty and
        // not queued (like the kernel, a pass that took no file folio sets it too).
        if sc.kswapd && self.profile > crate::config::Profile::V2_6_28 && sc.nr_unqueued_dirty == sc.nr_file_taken {
            self.reclaim.pgdat_dirty = true;
        }
        if !sc.pass_stalled() {
            self.node_writeback_throttle(sc);
        }
    }

    /// `clear_pgdat_congested`: the node is balanced again; its reclaim flags go.
    pub(crate) fn clear_pgdat_congested(&mut self) {
        let r = &mut self.reclaim;
        (r.pgdat_dirty, r.pgdat_writeback, r.pgdat_congested) = (false, false, false);
    }

    /// The end of a reclaim cycle (`snapshot_refaults`).
    pub(crate) fn reclaim_cycle_end(&mut self) {
        let vm = &self.stats.vm;
        self.reclaim.policy.as_deref_mut().expect("policy present").reclaim_cycle_end(vm);
    }

    /// `pgdat_balanced`: free pages above the high watermark (§3.4).
    pub(crate) fn pgdat_balanced(&self) -> bool {
        self.nr_free() > self.mem.wm.high
    }
}
