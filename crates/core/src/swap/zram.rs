//! zram as a swap device (`drivers/block/zram/zram_drv.c`): a RAM disk that compresses each
//! page it is given, in the caller's context, into a zsmalloc pool whose pages are taken from
//! the machine's memory.
//!
//! * write (`zram_write_page`): a page that is all zeroes is recorded as a same-filled slot
//!   (`ZRAM_SAME`): no memory, no compression, only the check; any other page is compressed
//!   with `[zram]`'s compressor and its compressed bytes (from the content model, the same
//!   pages zswap would see: swap/store/zswap/content.rs) go into the pool; a page that does
//!   not compress is stored whole (`ZRAM_HUGE`, `huge_pages`). A slot written again drops its
//!   old object first. When the pool cannot get a page (`zs_malloc` fails) the write fails,
//!   `failed_writes` counts it, and the swap layer redirties the folio and keeps it, as
//!   `end_swap_bio_write` does on an I/O error.
//! * read (`zram_read_page`): decompress, or fill a same-filled slot with zeroes.
//! * free (`zram_slot_free_notify` when the swap slot is freed): the object goes.
//!
//! The pool competes for memory as zswap's does — its pages are frames the swap I/O layer takes
//! from the free list (`Sim::sync_pool_frames`) — but it is charged to no memory cgroup: zram's
//! zsmalloc allocations are the driver's, not the swapping task's.
//!
//! Counters are `/sys/block/zramN/mm_stat`'s: `orig_data_size` (bytes of pages stored,
//! same-filled included), `compr_data_size`, `mem_used_total` / `mem_used_max` (pool bytes),
//! `same_pages`, `huge_pages`, and `io_stat`'s `failed_writes`.

use crate::config::Resolved;
use crate::mm::PAGE_SIZE;
use crate::swap::store::zswap::compressor::{self, CompressorCost, STORE_OVERHEAD_NS, ZERO_CHECK_NS, ZERO_FILL_NS};
use crate::swap::store::zswap::content::{ContentModel, PageContent};
use crate::swap::store::zswap::zsmalloc::{Handle, ZsPool};
use serde::Serialize;

/// zram's zspage chain: CONFIG_ZSMALLOC_CHAIN_SIZE, as zswap's default.
const ZSPAGE_MAX_PAGES: u32 = 8;

/// `mm_stat` and `io_stat` of one zram device.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct ZramStats {
    pub orig_data_size: u64,
    pub compr_data_size: u64,
    pub mem_used_total: u64,
    pub mem_used_max: u64,
    pub same_pages: u64,
    pub huge_pages: u64,
    pub failed_writes: u64,
}

/// The memory of one slot's record (for the footprint check, config/footprint.rs).
pub const SLOT_BYTES: u64 = std::mem::size_of::<Slot>() as u64;

/// What a slot holds.
#[derive(Clone, Copy, Debug)]
enum Slot {
    Empty,
    Same,
    Stored { handle: Handle, len: u32 },
}

#[derive(Clone, Debug)]
pub struct Zram {
    cost: CompressorCost,
    content: ContentModel,
    pool: ZsPool,
    slots: Vec<Slot>,
    stats: ZramStats,
}

/// Why a write failed (the pool got no page), and what the attempt cost.
pub struct WriteFailed {
    pub cpu_ns: u64,
}

impl Zram {
    pub fn new(cfg: &Resolved, slots: u32) -> Zram {
        let c = &cfg.config;
        let spec = c.zram.clone().unwrap_or_default();
        let cost = compressor::cost_with(&spec.compressor, spec.compress_ns, spec.decompress_ns, spec.full_cost_bytes);
        Zram {
            cost,
            content: ContentModel::new(c.content.as_ref().expect("resolved with a compressing device"), c.seed),
            pool: ZsPool::new(ZSPAGE_MAX_PAGES),
            slots: vec![Slot::Empty; slots as usize],
            stats: ZramStats::default(),
        }
    }

    /// Write the page with key `page_key` to `slot`; Ok(cpu ns) or the failure. `free_frames`:
    /// what the pool may take.
    pub fn write(&mut self, slot: u32, page_key: u64, free_frames: u64) -> Result<u64, WriteFailed> {
        self.free(slot);
        match self.content.page(page_key) {
            PageContent::Zero => {
                self.slots[slot as usize] = Slot::Same;
                self.stats.same_pages += 1;
                self.stats.orig_data_size += PAGE_SIZE;
                Ok(ZERO_CHECK_NS)
            }
            PageContent::Compressed(len) => {
                let cpu = ZERO_CHECK_NS + self.cost.compress(len);
                let len = len.min(PAGE_SIZE as u32);
                let Ok(handle) = self.pool.alloc(len, free_frames) else {
                    self.stats.failed_writes += 1;
                    return Err(WriteFailed { cpu_ns: cpu });
                };
                if len == PAGE_SIZE as u32 {
                    self.stats.huge_pages += 1;
                }
                self.slots[slot as usize] = Slot::Stored { handle, len };
                self.stats.orig_data_size += PAGE_SIZE;
                self.stats.compr_data_size += len as u64;
                self.note_pool();
                Ok(cpu + STORE_OVERHEAD_NS)
            }
        }
    }

    /// Read `slot`: the CPU it costs.
    pub fn read(&self, slot: u32) -> u64 {
        match self.slots[slot as usize] {
            Slot::Same => ZERO_FILL_NS,
            // Stored whole (ZRAM_HUGE) is copied back: decompress() says so.
            Slot::Stored { len, .. } => self.cost.decompress(len),
            // Never written (a readahead beyond what was swapped): zram returns zeroes.
            Slot::Empty => ZERO_FILL_NS,
        }
    }

    /// `zram_slot_free_notify`: the swap slot was freed.
    pub fn free(&mut self, slot: u32) {
        match std::mem::replace(&mut self.slots[slot as usize], Slot::Empty) {
            Slot::Empty => {}
            Slot::Same => {
                self.stats.same_pages -= 1;
                self.stats.orig_data_size -= PAGE_SIZE;
            }
            Slot::Stored { handle, len } => {
                self.pool.free(handle);
                if len == PAGE_SIZE as u32 {
                    self.stats.huge_pages -= 1;
                }
                self.stats.orig_data_size -= PAGE_SIZE;
                self.stats.compr_data_size -= len as u64;
                self.note_pool();
            }
        }
    }

    fn note_pool(&mut self) {
        self.stats.mem_used_total = self.pool.total_pages() * PAGE_SIZE;
        self.stats.mem_used_max = self.stats.mem_used_max.max(self.stats.mem_used_total);
    }

    pub fn pool_pages(&self) -> u64 {
        self.pool.total_pages()
    }

    pub fn stats(&self) -> ZramStats {
        self.stats
    }

    /// Consistency of slots, pool and counters (engine/invariants.rs).
    pub fn check(&self) -> Vec<String> {
        let (mut same, mut stored, mut bytes) = (0u64, 0u64, 0u64);
        for s in &self.slots {
            match *s {
                Slot::Empty => {}
                Slot::Same => same += 1,
                Slot::Stored { len, .. } => {
                    stored += 1;
                    bytes += len as u64;
                }
            }
        }
        let mut errs = Vec::new();
        let (objs, pages) = self.pool.recount();
        if objs != stored || pages != self.pool.total_pages() {
            errs.push(format!("zram: {objs} pool objects in {pages} pages for {stored} stored slots, pool says {} pages", self.pool.total_pages()));
        }
        if same != self.stats.same_pages || bytes != self.stats.compr_data_size || (same + stored) * PAGE_SIZE != self.stats.orig_data_size {
            errs.push(format!("zram: counters ({:?}) disagree with the slots ({same} same, {stored} stored, {bytes} bytes)", self.stats));
        }
        errs
    }
}
