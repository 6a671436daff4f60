//! The swap I/O layer (`mm/page_io.c`): every swap-out write and swap-in read goes through
//! here. A page is offered to the fronting store first (`swap_writepage` →
//! frontswap/zswap store; `swap_read_folio` → load); what the store does not take goes to the
//! area's device — at once and in the caller's context for a synchronous device (zram, brd:
//! `SWP_SYNCHRONOUS_IO`, §1.7), else into the caller's plug, submitted as block requests when
//! the batch ends. `pswpin` / `pswpout` count pages read from / written to a device, where the
//! kernel counts them; `pgpgin` / `pgpgout` count the KiB the block layer moved.
//!
//! The layer also keeps the store's pool in the workload's memory: after every store call it
//! takes or gives back frames until it holds exactly `pool_pages()` (`sync_pool_frames`), so
//! a zswap pool is allocated, freed and charged to the memory cgroup like any other memory.
//! A store may grow its pool only within the free frames it is told of: reclaim runs with
//! PF_MEMALLOC, so the pool's allocations may use every free frame, reserves included.

use super::store::{LoadOutcome, StoreCtx, StoreOutcome};
use crate::device::{Plug, Request};
use crate::engine::{DevRef, Sim};
use crate::mm::*;
use crate::stats::{CpuCategory, CpuCost};

/// How a swap write went; `cpu` is the caller's CPU time by category (a fronting store's
/// work is compression; a synchronous device's is compression or block layer,
/// `Device::sync_cpu_category`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteOutcome {
    /// Done before returning (a fronting store kept it, or a synchronous device wrote it): the
    /// folio is clean and can be freed.
    Done { cpu: CpuCost },
    /// Under writeback: the request is in the plug; the folio is kept until it completes.
    /// `cpu` is what a store that refused the page cost.
    Queued { cpu: CpuCost },
    /// The device could not take the page (a zram pool that got no memory): the folio is
    /// dirty again and stays, as after a write error (`end_swap_bio_write`).
    Failed { cpu: CpuCost },
}

/// One batch's plugs, one per swap area (`blk_start_plug` .. `blk_finish_plug`).
pub struct SwapPlugs {
    plugs: Vec<Plug>,
}

impl SwapPlugs {
    pub fn new(areas: usize) -> SwapPlugs {
        SwapPlugs { plugs: (0..areas).map(|_| Plug::default()).collect() }
    }

    /// A swap-in's plugs: its reads are task `tid`'s (CFQ's per-process queues).
    pub fn for_task(areas: usize, tid: u32) -> SwapPlugs {
        SwapPlugs { plugs: (0..areas).map(|_| Plug { owner: Some(tid), ..Plug::default() }).collect() }
    }

    /// Hand empty plugs to task `tid`'s reads.
    pub fn set_owner(&mut self, tid: u32) {
        debug_assert!(self.is_empty(), "plugs handed on with requests in them");
        for p in &mut self.plugs {
            p.owner = Some(tid);
        }
    }

    /// The submitting CPU (a multi-queue device queues the requests in its hardware queue).
    pub fn set_cpu(&mut self, cpu: u32) {
        for p in &mut self.plugs {
            p.cpu = cpu;
        }
    }

    /// Nothing plugged on any area.
    pub fn is_empty(&self) -> bool {
        self.plugs.iter().all(Plug::is_empty)
    }

    /// Requests already queued in the plug for area `dev`.
    pub fn queued(&self, dev: usize) -> u64 {
        self.plugs[dev].requests.len() as u64
    }

    /// `blk_finish_plug`: submit every area's requests, in area order, the first at `at`;
    /// returns the submitter's CPU time by category (the block layer's stages). The plugs are
    /// left empty with their owner, ready for the next batch (a swap-in window flushes more
    /// than once), so a flush allocates nothing.
    pub fn submit(&mut self, sim: &mut Sim, at: u64) -> CpuCost {
        let mut cpu = CpuCost::default();
        for (d, plug) in self.plugs.iter_mut().enumerate() {
            if !plug.is_empty() {
                let batch = Plug { requests: std::mem::take(&mut plug.requests), owner: plug.owner, cpu: plug.cpu };
                let c = sim.submit_plug_by_category(DevRef::Swap(d), batch, at + cpu.total());
                cpu.add(&c);
            }
        }
        cpu
    }
}

impl Sim {
    /// Would writing `slot` of area `dev` need a request from a full queue, counting what this
    /// batch has plugged? A write that merges into the plug needs none; a synchronous device
    /// has no queue.
    pub(crate) fn swap_queue_congested(&self, dev: usize, slot: u32, plugs: &SwapPlugs) -> bool {
        let max_pages = self.swap.areas[dev].device.params.max_request_pages;
        self.write_request_pool_full(DevRef::Swap(dev), plugs.queued(dev)) && !plugs.plugs[dev].would_merge(slot as u64, true, max_pages)
    }

    fn store_ctx(&self) -> StoreCtx {
        StoreCtx { now: self.now, free_frames: self.mem.nr_free(), page_key: 0 }
    }

    /// Hold exactly the frames the store's pool and the zram devices' pools occupy: take the
    /// missing ones from the free list (they grew only within the free frames they were told
    /// of), give back the surplus. On a cgroup v1 memory cgroup the store's frames are not
    /// charged to it (`Memory::pool_charged`); zram's never are.
    pub(crate) fn sync_pool_frames(&mut self) {
        let want = self.swap.store.pool_pages() as usize;
        let uncharged = !self.mem.pool_charged as u64;
        while self.swap.pool_frames.len() < want {
            let f = self.take_frame();
            self.mem.charged -= uncharged;
            self.swap.pool_frames.push(f);
            self.swap.pool_frames_max = self.swap.pool_frames_max.max(self.swap.pool_frames.len() as u64);
        }
        while self.swap.pool_frames.len() > want {
            let f = self.swap.pool_frames.pop().expect("len > want >= 0");
            self.mem.charged += uncharged;
            self.free_frame(f);
        }
        let want = self.swap.zram_pool_pages() as usize;
        while self.swap.zram_frames.len() < want {
            let f = self.take_frame();
            self.mem.charged -= 1;
            self.swap.zram_frames.push(f);
        }
        while self.swap.zram_frames.len() > want {
            let f = self.swap.zram_frames.pop().expect("len > want >= 0");
            self.mem.charged += 1;
            self.free_frame(f);
        }
    }

    /// One page to or from zram area `dev`'s `slot` in the caller's context: the CPU it took,
    /// or the failure of a write whose pool got no memory.
    pub(crate) fn zram_io(&mut self, dev: usize, slot: u32, write: bool) -> Result<u64, u64> {
        let free = self.mem.nr_free();
        let area = &mut self.swap.areas[dev];
        let key = area.page_key.get(slot as usize).copied().unwrap_or(0);
        let z = area.zram.as_mut().expect("a zram area");
        area.device.sync_io(Request { start: slot as u64, pages: 1, write });
        let out = if write { z.write(slot, key, free).map_err(|e| e.cpu_ns) } else { Ok(z.read(slot)) };
        self.sync_pool_frames();
        out
    }

    /// `swap_writepage`: write out dirty swap-cache folio `f` (already marked clean) at the
    /// writer's clock `at`.
    pub(crate) fn swap_writepage(&mut self, f: u32, at: u64, plugs: &mut SwapPlugs) -> WriteOutcome {
        let fr = self.mem.frames[f as usize];
        let (dev, slot) = (fr.swap_dev(), fr.slot);
        let keys = &self.swap.areas[dev].page_key;
        let ctx = StoreCtx { page_key: keys.get(slot as usize).copied().unwrap_or(0), ..self.store_ctx() };
        let outcome = self.swap.store.store(dev, slot, &ctx);
        self.sync_pool_frames();
        // The store's work (compression, or frontswap's hypercall and copy).
        let mut cpu = match outcome {
            StoreOutcome::Stored { cpu_ns } => return WriteOutcome::Done { cpu: CpuCost::of(CpuCategory::Compression, cpu_ns) },
            StoreOutcome::Refused { cpu_ns } => CpuCost::of(CpuCategory::Compression, cpu_ns),
        };
        if self.swap.store.take_writeback_request() {
            self.queue_store_writeback(at);
        }
        self.stats.vm.pswpout += 1;
        if self.swap.areas[dev].zram.is_some() {
            return match self.zram_io(dev, slot, true) {
                Ok(ns) => {
                    self.stats.vm.pgpgout += PAGE_KB;
                    cpu.charge(CpuCategory::Compression, ns);
                    WriteOutcome::Done { cpu }
                }
                Err(ns) => {
                    cpu.charge(CpuCategory::Compression, ns);
                    self.mem.frames[f as usize].flags |= PG_DIRTY;
                    WriteOutcome::Failed { cpu }
                }
            };
        }
        let d = &mut self.swap.areas[dev].device;
        if d.params.synchronous {
            // SWP_SYNCHRONOUS_IO write: done in this context (§1.7).
            cpu.charge(d.sync_cpu_category(), d.sync_cpu_ns(1, true));
            cpu.add(&d.block_layer_cost());
            d.sync_io(Request { start: slot as u64, pages: 1, write: true });
            self.stats.vm.pgpgout += PAGE_KB;
            return WriteOutcome::Done { cpu };
        }
        let m = d.params.max_request_pages;
        let fr = &mut self.mem.frames[f as usize];
        fr.flags |= PG_WRITEBACK | PG_RECLAIM;
        self.io.nr_writeback += 1;
        plugs.plugs[dev].add(slot as u64, true, f, m);
        WriteOutcome::Queued { cpu }
    }

    /// `swap_read_folio` for a locked swap-cache folio `f` of (`dev`, `slot`) in a batch
    /// (a fault's target or a readahead page): from the store when it has the page (the folio
    /// is up to date at once), else into the plug. Returns the CPU time of a store hit.
    pub(crate) fn swap_read_folio(&mut self, f: u32, dev: usize, slot: u32, plugs: &mut SwapPlugs) -> u64 {
        let ctx = self.store_ctx();
        if let LoadOutcome::Hit { cpu_ns, exclusive } = self.swap.store.load(dev, slot, &ctx, true) {
            self.sync_pool_frames();
            // An exclusive load leaves the folio the only copy: dirty, to be written again.
            self.mem.frames[f as usize].flags &= !PG_LOCKED;
            if exclusive {
                self.mem.frames[f as usize].flags |= PG_DIRTY;
            }
            return cpu_ns;
        }
        self.stats.vm.pswpin += 1;
        // Swap reads one page per bio (`get_swap_bio`; 2.6.32's `swap_readpage` submits each
        // readahead page's at once). A request queue merges neighbouring bios into one
        // request; a bio-based driver (brd) gets each bio alone and pays the block layer for
        // each, so its pages do not merge.
        let p = &self.swap.areas[dev].device.params;
        let m = if p.bio_based() { 1 } else { p.max_request_pages };
        plugs.plugs[dev].add(slot as u64, false, f, m);
        0
    }

    /// `swap_read_folio` on a synchronous device without the swap cache (the
    /// `SWP_SYNCHRONOUS_IO` bypass, §1.7): read (`dev`, `slot`) in the caller's context.
    /// Returns the caller's CPU time.
    pub(crate) fn swap_read_folio_sync(&mut self, dev: usize, slot: u32) -> u64 {
        let ctx = self.store_ctx();
        if let LoadOutcome::Hit { cpu_ns, .. } = self.swap.store.load(dev, slot, &ctx, false) {
            self.sync_pool_frames();
            return cpu_ns;
        }
        self.stats.vm.pswpin += 1;
        if self.swap.areas[dev].zram.is_some() {
            self.stats.vm.pgpgin += PAGE_KB;
            return self.zram_io(dev, slot, false).expect("reads do not fail");
        }
        let d = &mut self.swap.areas[dev].device;
        let cpu_ns = d.sync_cpu_ns(1, false) + d.block_layer_cpu_ns();
        d.sync_io(Request { start: slot as u64, pages: 1, write: false });
        self.stats.vm.pgpgin += PAGE_KB;
        cpu_ns
    }
}
