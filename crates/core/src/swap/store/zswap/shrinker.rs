//! zswap writeback: the shrink worker that writes the pool's coldest entries back to the swap
//! device (`shrink_worker` → `shrink_memcg_cb` → `zswap_writeback_entry`, kernel-algorithms.md
//! §6.2), and the memory-pressure shrinker that does the same from reclaim.
//!
//! The worker is queued when a store is refused because the pool reached `max_pool_percent`
//! (or the memcg its `zswap.max`). A run of it (`shrink_worker`, 6.18) loops while the pool is
//! above the accept threshold; each iteration is one `shrink_memcg` call, which walks exactly
//! one entry of the LRU (`list_lru_walk_one` with `nr_to_walk = 1`, 6.8+): the tail entry,
//! with the second chance (entries start referenced; a referenced one is cleared and rotated
//! to the head, and that iteration wrote nothing back). An iteration that wrote nothing back
//! (a rotation, an entry whose page is in the swap cache, an empty LRU) is a failure, and the
//! run ends at the `MAX_RECLAIM_RETRIES`th (16) failure — counted over the whole run, a
//! success does not reset it (6.11+, "fix global shrinker error handling logic"). The
//! workqueue clears the work's PENDING bit as a run starts, so a store refused during the run
//! queues it again and it runs once more right after; otherwise it sleeps until the next
//! refusal. So a pool whose coldest entries are still referenced drains slowly: every
//! referenced entry costs a failure, 16 of them end the run, and stores meanwhile go to the
//! device. A written-back entry goes as `zswap_writeback_entry` does: a new swap-cache folio
//! for the slot (skipped, and the entry kept, if one exists: the page was just swapped in),
//! decompressed into, the entry freed (`zswpwb`, `written_back_pages`), the folio marked for
//! reclaim and written through the swap device (`pswpout`); when the write completes it
//! rotates to the inactive tail and reclaim frees it.
//!
//! The memory-pressure shrinker (6.8+, `zswap.shrinker_enabled`; `zswap_shrinker_count` /
//! `zswap_shrinker_scan`) runs in every reclaim pass as `shrink_slab` runs a shrinker
//! (`do_shrink_slab`, DEFAULT_SEEKS 2, batches of SHRINK_BATCH 128): it is offered
//! `freeable >> priority` × 4 / seeks entries plus its deferred work (at most twice the
//! freeable), where freeable is the LRU's entries less those protected by recent disk
//! swap-ins, scaled by pool pages per stored page (`Zswap::shrinker_count`); each batch walks
//! that many LRU entries with the second chance and writes back the unreferenced ones. A batch
//! that frees nothing, or that meets an entry whose page is in the swap cache ("a sign that we
//! are shrinking into the warmer region"), stops the shrinker (SHRINK_STOP); what it did not
//! scan is deferred to the next pass. Its CPU is the reclaimer's (decompression as
//! `compression`, the device submission by block-layer stage; a synchronous device's copy and
//! block-layer figure as `blk_dispatch`).
//!
//! On cgroup v1 the shrinker counts nothing (its counts are the memcg's zswap statistics,
//! which v1 never charges). Not modelled: the synchronous memcg shrink of `zswap.max`.

use crate::device::{Plug, Request};
use crate::engine::{DevRef, KernelThread, KthreadStep, Sim};
use crate::mm::*;
use crate::reclaim::{ScanControl, MAX_RECLAIM_RETRIES};
use crate::stats::cpu::{CpuCategory, CpuCost};
use crate::swap::store::ShrinkerStep;
use crate::swap::SWAP_HAS_CACHE;

/// `DEFAULT_SEEKS`: zswap's shrinker's cost to recreate an object (`zswap_alloc_shrinker`).
const DEFAULT_SEEKS: u64 = 2;
/// `SHRINK_BATCH`: the shrinker's batch (zswap sets none).
const SHRINK_BATCH: u64 = 128;

/// CPU of one iteration of the shrink worker (or one entry of the shrinker's walk) that wrote
/// nothing back: `mem_cgroup_iter` to the group, `list_lru_walk_one` over one entry under the
/// LRU lock, `cond_resched`. An assumption of a microsecond (not measured).
const WALK_FAIL_NS: u64 = 1_000;

/// The shrink worker (a kworker on `zswap_shrink_wq`).
#[derive(Default)]
pub struct ShrinkWorker {
    /// A run of `shrink_worker` is under way.
    running: bool,
    /// Iterations of this run that wrote nothing back.
    failures: u32,
}

impl KernelThread for ShrinkWorker {
    fn name(&self) -> &'static str {
        "kworker/zswap-shrink"
    }

    fn step(&mut self, sim: &mut Sim, tid: u32) -> KthreadStep {
        let clock = sim.tasks[tid as usize].clock;
        if !self.running {
            sim.swap.writeback_worker_waits = None;
            match sim.swap.writeback_queued_at.front() {
                None => return KthreadStep::Sleep,
                // queued later than now (by a reclaimer whose clock is ahead): run then
                Some(&queued) if queued > clock => {
                    sim.swap.writeback_worker_waits = Some(queued);
                    return KthreadStep::SleepUntil(queued);
                }
                Some(_) => {}
            }
            // The run takes every request queued so far (the workqueue clears PENDING as the
            // work starts); one queued while it runs makes it run again right after.
            let queued = &mut sim.swap.writeback_queued_at;
            while queued.front().is_some_and(|&t| t <= clock) {
                queued.pop_front();
            }
            self.running = true;
            self.failures = 0;
        }
        let (cpu, wrote) = sim.zswap_shrink_memcg(clock, tid);
        sim.tasks[tid as usize].clock += cpu;
        if !wrote {
            self.failures += 1;
        }
        // do { ... } while (zswap_total_pages() > thr), or the run's 16th failure
        if self.failures >= MAX_RECLAIM_RETRIES || !sim.swap.store.writeback_above_target() {
            self.running = false;
        }
        KthreadStep::Continue
    }

    fn timer(&mut self, _sim: &mut Sim, _tid: u32) -> bool {
        true
    }
}

impl Sim {
    /// `queue_work(shrink_wq, &zswap_shrink_work)` by a store refused at time `at` (the
    /// refusing reclaimer's clock, which may be ahead of the engine's: a reclaim pass is one
    /// step). The request is kept with its time; a sleeping worker is woken by a timer then,
    /// so that a reclaim pass's refusals reach the worker when they happen, not all at the
    /// pass's start.
    pub(crate) fn queue_store_writeback(&mut self, at: u64) {
        let Some(tid) = self.swap.writeback_worker else { return };
        let queued = &mut self.swap.writeback_queued_at;
        queued.insert(queued.partition_point(|&t| t <= at), at);
        // An idle worker's timer is armed for the earliest request (re-armed when an earlier
        // one arrives); a running worker, or one blocked inside its run, finds the requests
        // when its run ends.
        let idle = self.swap.writeback_worker_waits.is_none() && self.tasks[tid as usize].state == crate::engine::TState::Sleeping;
        if idle || self.swap.writeback_worker_waits.is_some_and(|w| at < w) {
            let when = at.max(self.now);
            self.swap.writeback_worker_waits = Some(when);
            self.sleep_until(tid, when);
        }
    }

    /// One `shrink_memcg` call of the shrink worker (task `worker`) at its clock `at`: one
    /// entry of the LRU walked. Returns its CPU time and whether it wrote an entry back.
    fn zswap_shrink_memcg(&mut self, at: u64, worker: u32) -> (u64, bool) {
        let (dev, slot) = match self.swap.store.lru_walk_one() {
            ShrinkerStep::Empty | ShrinkerStep::Rotated => return (WALK_FAIL_NS, false),
            ShrinkerStep::Candidate(dev, slot) => (dev, slot),
        };
        self.charge_writeback_folio(worker);
        match self.zswap_writeback_entry(dev, slot, at) {
            Ok(cost) => (cost.total(), true),
            Err(_) => (WALK_FAIL_NS, false),
        }
    }

    /// `__read_swap_cache_async` → `mem_cgroup_swapin_charge_folio`: the worker's new
    /// swap-cache folio is charged to the memory cgroup that owns the swap entry (recorded at
    /// swap-out, v1 and v2 alike). A group at its limit is reclaimed first, in the worker's
    /// context (`try_charge` → `try_to_free_mem_cgroup_pages`): the worker's time goes into
    /// reclaiming the very group whose pool it drains, and stores stay refused meanwhile. The
    /// memory-pressure shrinker runs inside reclaim already (PF_MEMALLOC: no nested reclaim).
    fn charge_writeback_folio(&mut self, tid: u32) {
        let over = matches!(self.mem.memcg_limit, Some(l) if self.mem.charged >= l);
        if !over {
            return;
        }
        let cpu = match self.tasks[tid as usize].state {
            crate::engine::TState::Running(c) => c as usize,
            _ => self.tasks[tid as usize].last_cpu as usize,
        };
        self.direct_reclaim(tid, cpu, true, false);
    }

    /// `zswap_writeback_entry` for (`dev`, `slot`): the CPU it cost by category, or why the
    /// entry stays (it is then rotated and counted in `reject_reclaim_fail`).
    fn zswap_writeback_entry(&mut self, dev: usize, slot: u32, at: u64) -> Result<CpuCost, WritebackFail> {
        // __read_swap_cache_async: a folio already there means the page was just swapped in
        // (-EEXIST). It returns no folio (-ENOMEM) for a slot no PTE or shmem entry refers to
        // any more, one waiting in a per-CPU return cache with its entry still stored
        // (swap/slots_cache.rs; the `!__swp_swapcount(entry) && swap_slot_cache_enabled` check,
        // 4.11+), and when the new folio, a GFP_KERNEL allocation the model does not reclaim
        // for, cannot be had.
        let area = &self.swap.areas[dev];
        let fail = if area.cache[slot as usize] != NONE {
            Some(WritebackFail::InSwapCache)
        } else if area.count(slot) == 0 || self.nr_free() <= self.mem.wm.min {
            Some(WritebackFail::NoMemory)
        } else {
            None
        };
        if let Some(why) = fail {
            self.swap.store.writeback_keep(dev, slot);
            return Err(why);
        }
        let f = self.take_frame();
        let fr = &mut self.mem.frames[f as usize];
        fr.flags |= PG_SWAPBACKED | PG_RECLAIM;
        fr.set_swap(dev, slot);
        let area = &mut self.swap.areas[dev];
        area.cache[slot as usize] = f;
        area.map[slot as usize] |= SWAP_HAS_CACHE;
        self.lru_add(f);
        let mut cost = CpuCost::of(CpuCategory::Compression, self.swap.store.writeback_take(dev, slot));
        self.sync_pool_frames();
        // __swap_writepage: past the store, to the device.
        self.stats.vm.pswpout += 1;
        let d = &mut self.swap.areas[dev].device;
        if d.params.synchronous {
            cost.charge(CpuCategory::BlkDispatch, d.sync_cpu_ns(1, true) + d.block_layer_cpu_ns());
            d.sync_io(Request { start: slot as u64, pages: 1, write: true });
            self.stats.vm.pgpgout += PAGE_KB;
            self.mem.frames[f as usize].flags &= !PG_RECLAIM;
            return Ok(cost);
        }
        self.mem.frames[f as usize].flags |= PG_WRITEBACK;
        self.io.nr_writeback += 1;
        let mut plug = Plug::default();
        plug.add(slot as u64, true, f, self.swap.areas[dev].device.params.max_request_pages);
        let at = at + cost.total();
        cost.add(&self.submit_plug_by_category(DevRef::Swap(dev), plug, at));
        Ok(cost)
    }

    /// `shrink_slab` → `do_shrink_slab` for zswap's shrinker, inside a reclaim pass at
    /// `sc.priority` (see the module doc); pages it writes back are freed by later passes
    /// once their writes complete, as in the kernel (the shrinker's `freed` counts entries).
    pub(crate) fn zswap_shrink_slab(&mut self, sc: &mut ScanControl) {
        // zswap_shrinker_count reads the memcg's zswap statistics, which cgroup v1 never
        // fills (obj_cgroup_charge_zswap returns at once there): the shrinker finds nothing.
        if !self.mem.pool_charged {
            return;
        }
        let freeable = self.swap.store.shrinker_count();
        if freeable == 0 {
            return;
        }
        let deferred = std::mem::take(&mut self.swap.shrinker_deferred);
        let delta = (freeable >> sc.priority) * 4 / DEFAULT_SEEKS;
        let mut total_scan = ((deferred >> sc.priority) + delta).min(2 * freeable);
        let mut scanned = 0;
        while total_scan >= SHRINK_BATCH || total_scan >= freeable {
            let nr_to_scan = SHRINK_BATCH.min(total_scan);
            let (freed, stop) = self.zswap_shrinker_scan(nr_to_scan, sc);
            if stop || freed == 0 {
                break;
            }
            total_scan -= nr_to_scan;
            scanned += nr_to_scan;
        }
        self.swap.shrinker_deferred = (deferred + delta).saturating_sub(scanned).min(2 * freeable);
    }

    /// `zswap_shrinker_scan`: walk `nr_to_walk` LRU entries; returns the entries written
    /// back and whether a page in the swap cache stopped the walk.
    fn zswap_shrinker_scan(&mut self, nr_to_walk: u64, sc: &mut ScanControl) -> (u64, bool) {
        let mut freed = 0;
        for _ in 0..nr_to_walk {
            let (dev, slot) = match self.swap.store.lru_walk_one() {
                ShrinkerStep::Empty => break,
                ShrinkerStep::Rotated => continue,
                ShrinkerStep::Candidate(dev, slot) => (dev, slot),
            };
            match self.zswap_writeback_entry(dev, slot, sc.start_clock + sc.cost.total()) {
                Ok(cost) => {
                    sc.cost.add(&cost);
                    freed += 1;
                }
                Err(WritebackFail::InSwapCache) => return (freed, true),
                Err(WritebackFail::NoMemory) => {}
            }
        }
        (freed, false)
    }
}

/// Why `zswap_writeback_entry` kept an entry.
enum WritebackFail {
    /// -EEXIST: the page is in the swap cache (just swapped in).
    InSwapCache,
    /// -ENOMEM: `__read_swap_cache_async` gave no folio (no page for it, or the slot unused).
    NoMemory,
}
