//! zswap writeback: the shrink worker that writes the pool's coldest entries back to the swap
//! device (`shrink_worker` → `shrink_memcg_cb` → `zswap_writeback_entry`, kernel-algorithms.md
//! §6.2).
//!
//! The worker is queued when a store is refused because the pool reached `max_pool_percent`
//! (or the memcg its `zswap.max`) and runs until the pool is back under the accept threshold,
//! one entry per step, giving up after `MAX_RECLAIM_RETRIES` (16) consecutive failures. Each
//! step takes the LRU tail with a second chance (a referenced entry is cleared and rotated;
//! entries start referenced), and writes it back as `zswap_writeback_entry` does: a new
//! swap-cache folio for the slot (skipped, and the entry kept, if one exists: the page was
//! just swapped in), decompressed into, the entry freed (`zswpwb`, `written_back_pages`), the
//! folio marked for reclaim and written through the swap device (`pswpout`); when the write
//! completes it rotates to the inactive tail and reclaim frees it.
//!
//! Not modelled: the memory-pressure shrinker (`shrinker_enabled`, run from `shrink_slab` in
//! every reclaim pass) and the synchronous memcg shrink of `zswap.max`; both write back
//! through the same `Sim::zswap_writeback_one`.

use crate::device::{Plug, Request};
use crate::engine::{DevRef, KernelThread, KthreadStep, Sim};
use crate::mm::*;
use crate::reclaim::MAX_RECLAIM_RETRIES;
use crate::swap::SWAP_HAS_CACHE;

/// CPU of one step of the LRU walk that found nothing to write (`list_lru_walk_one` over a
/// few entries under the LRU lock): an assumption of a microsecond.
const WALK_FAIL_NS: u64 = 1_000;

/// The shrink worker (a kworker on `zswap_shrink_wq`).
#[derive(Default)]
pub struct ShrinkWorker {
    failures: u32,
}

impl KernelThread for ShrinkWorker {
    fn name(&self) -> &'static str {
        "kworker/zswap-shrink"
    }

    fn step(&mut self, sim: &mut Sim, tid: u32) -> KthreadStep {
        if !sim.swap.store.writeback_wanted() {
            sim.swap.store.writeback_gave_up();
            self.failures = 0;
            return KthreadStep::Sleep;
        }
        let at = sim.tasks[tid as usize].clock;
        match sim.zswap_writeback_one(at) {
            Some(cpu) => {
                self.failures = 0;
                sim.tasks[tid as usize].clock += cpu;
            }
            None => {
                self.failures += 1;
                sim.tasks[tid as usize].clock += WALK_FAIL_NS;
                if self.failures >= MAX_RECLAIM_RETRIES {
                    sim.swap.store.writeback_gave_up();
                    self.failures = 0;
                    return KthreadStep::Sleep;
                }
            }
        }
        KthreadStep::Continue
    }

    fn timer(&mut self, _sim: &mut Sim, _tid: u32) -> bool {
        true
    }
}

impl Sim {
    /// Wake the store's writeback worker if the store wants it and it sleeps.
    pub(crate) fn wake_store_writeback(&mut self) {
        if let Some(tid) = self.swap.writeback_worker {
            if self.tasks[tid as usize].state == crate::engine::TState::Sleeping && self.swap.store.writeback_wanted() {
                let now = self.now;
                self.wake(tid, now);
            }
        }
    }

    /// `zswap_writeback_entry` for the store's coldest entry at the worker's clock `at`;
    /// returns the CPU it cost, or None when nothing could be written back.
    pub(crate) fn zswap_writeback_one(&mut self, at: u64) -> Option<u64> {
        let (dev, slot) = self.swap.store.writeback_next()?;
        // __read_swap_cache_async: a folio already there means the page was just swapped in;
        // the new folio is a GFP_KERNEL allocation the model does not reclaim for.
        if self.swap.areas[dev].cache[slot as usize] != NONE || self.nr_free() <= self.mem.wm.min {
            self.swap.store.writeback_keep(dev, slot);
            return None;
        }
        let f = self.take_frame();
        let fr = &mut self.mem.frames[f as usize];
        fr.flags |= PG_SWAPBACKED | PG_RECLAIM;
        fr.set_swap(dev, slot);
        let area = &mut self.swap.areas[dev];
        area.cache[slot as usize] = f;
        area.map[slot as usize] |= SWAP_HAS_CACHE;
        self.lru_add(f);
        let mut cpu = self.swap.store.writeback_take(dev, slot);
        self.sync_pool_frames();
        // __swap_writepage: past the store, to the device.
        self.stats.vm.pswpout += 1;
        let d = &mut self.swap.areas[dev].device;
        if d.params.synchronous {
            cpu += d.sync_cpu_ns(1, true) + d.block_layer_cpu_ns();
            d.sync_io(Request { start: slot as u64, pages: 1, write: true });
            self.stats.vm.pgpgout += PAGE_KB;
            self.mem.frames[f as usize].flags &= !PG_RECLAIM;
            return Some(cpu);
        }
        self.mem.frames[f as usize].flags |= PG_WRITEBACK;
        self.io.nr_writeback += 1;
        let mut plug = Plug::default();
        plug.add(slot as u64, true, f, self.swap.areas[dev].device.params.max_request_pages);
        cpu += self.submit_plug(DevRef::Swap(dev), plug, at + cpu);
        Some(cpu)
    }
}
