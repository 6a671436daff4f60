//! zswap as it is today (kernel-algorithms.md §6.2, `mm/zswap.c` v6.17): a compressed cache
//! in front of the swap device, in the workload's own memory.
//!
//! * `zswap_store`: a zero-filled page goes to the zero map (the swap layer's since 6.12:
//!   no entry, no I/O, `swpout_zero`; modelled here because the content model that decides
//!   zero-ness is zswap's — without `[zswap]` every page is written out); otherwise the
//!   memcg's `zswap.max`, then the pool limit with its hysteresis (`zswap_check_limits`:
//!   refuse from `max_pool_percent` of RAM until back under `accept_threshold_percent` of it,
//!   queueing the shrink worker), then compression (a page that does not compress is rejected,
//!   `reject_compress_poor`, or with `store_incompressible` stored whole where writeback is
//!   allowed), then `zs_malloc` (no direct reclaim: fails with `reject_alloc_fail` when no
//!   frame is free). A stored entry starts referenced at the head of the zswap LRU.
//! * `zswap_load`: decompress; in the swap cache the load is exclusive (entry freed, folio
//!   dirty); on the synchronous-device bypass the entry stays until the slot is freed.
//! * writeback (`shrinker.rs`): the LRU tail with a second chance for referenced entries, by
//!   the shrink worker when the pool is full and, with `shrinker_enabled`, by the
//!   memory-pressure shrinker in every reclaim pass.
//!
//! Files: `zsmalloc.rs` the pool's size classes, `compressor.rs` CPU costs, `content.rs` the
//! page-content model, `shrinker.rs` the writeback worker. The pool's pages are frames of the
//! workload's memory (the swap I/O layer holds `pool_pages()` frames, charged to the memcg).

pub mod compressor;
pub mod content;
pub mod shrinker;
pub mod zsmalloc;

use super::{FrontingStore, Held, LoadOutcome, ShrinkerStep, StoreCounters, StoreCtx, StoreOutcome};
use crate::config::Resolved;
use crate::mm::{NONE, PAGE_SIZE};
use compressor::{CompressorCost, STORE_OVERHEAD_NS, ZERO_CHECK_NS, ZERO_FILL_NS};
use content::{ContentModel, PageContent};
use zsmalloc::{Handle, ZsPool};

#[derive(Clone, Copy, Debug)]
struct Entry {
    dev: u32,
    slot: u32,
    len: u32,
    handle: Handle,
    referenced: bool,
    /// zswap LRU links: `prev` towards the head (newest), `next` towards the tail (oldest).
    prev: u32,
    next: u32,
}

/// Counters as the kernel names them (vmstat and debugfs `/sys/kernel/debug/zswap/`).
#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    zswpin: u64,
    zswpout: u64,
    zswpwb: u64,
    swpin_zero: u64,
    swpout_zero: u64,
    pool_limit_hit: u64,
    reject_reclaim_fail: u64,
    reject_alloc_fail: u64,
    reject_compress_poor: u64,
    stored_incompressible_pages: u64,
    /// Stores refused because the memcg was at `memory.zswap.max` (the kernel counts these
    /// nowhere; named by the model).
    reject_memcg_max: u64,
}

pub struct Zswap {
    cost: CompressorCost,
    content: ContentModel,
    pool: ZsPool,
    max_pool_pages: u64,
    accept_pages: u64,
    /// `zswap_pool_reached_full`.
    reached_full: bool,
    /// The last store was refused at the limit and queued the shrink worker (`queue_work`),
    /// not yet taken by the caller.
    shrink_queued: bool,
    memcg_max: Option<u64>,
    memcg_writeback: bool,
    /// `shrinker_enabled`: the memory-pressure shrinker (`shrinker.rs`).
    shrinker_enabled: bool,
    /// `nr_disk_swapins` of the (one) lruvec: swap-ins read from the device since the
    /// shrinker last counted, which it leaves alone.
    nr_disk_swapins: u64,
    store_incompressible: bool,
    /// Per swap area: the entry of each slot, or NONE.
    index: Vec<Vec<u32>>,
    /// Per swap area: the zero map, one bit per slot.
    zero: Vec<Vec<u64>>,
    entries: Vec<Entry>,
    unused: Vec<u32>,
    lru_head: u32,
    lru_tail: u32,
    stored_pages: u64,
    /// Compressed bytes stored (what the memcg is charged for `zswap.max`).
    stored_bytes: u64,
    c: Counts,
}

impl Zswap {
    pub fn new(cfg: &Resolved) -> Zswap {
        let c = &cfg.config;
        let z = c.zswap.as_ref().expect("zswap selected");
        let cost = compressor::cost_with(&z.compressor, z.compress_ns, z.decompress_ns, z.full_cost_bytes);
        // totalram_pages: what the kernel manages (the model's frames).
        let ram = c.machine.ram.pages() - c.machine.kernel_reserved.pages();
        let max_pool_pages = ram * z.max_pool_percent as u64 / 100;
        let slots: Vec<usize> = cfg.swap_devices.iter().map(|s| s.size.pages() as usize).collect();
        Zswap {
            cost,
            content: ContentModel::new(c.content.as_ref().expect("resolved with a store"), c.seed),
            pool: ZsPool::new(z.zspage_max_pages),
            max_pool_pages,
            accept_pages: max_pool_pages * z.accept_threshold_percent as u64 / 100,
            reached_full: false,
            shrink_queued: false,
            memcg_max: z.memcg_max.map(|s| s.0),
            memcg_writeback: z.memcg_writeback,
            shrinker_enabled: z.shrinker_enabled,
            nr_disk_swapins: 0,
            store_incompressible: z.store_incompressible,
            index: slots.iter().map(|&n| vec![NONE; n]).collect(),
            zero: slots.iter().map(|&n| vec![0u64; n.div_ceil(64)]).collect(),
            entries: Vec::new(),
            unused: Vec::new(),
            lru_head: NONE,
            lru_tail: NONE,
            stored_pages: 0,
            stored_bytes: 0,
            c: Counts::default(),
        }
    }

    fn zero_bit(&self, dev: usize, slot: u32) -> bool {
        self.zero[dev][slot as usize / 64] & (1 << (slot % 64)) != 0
    }

    fn set_zero(&mut self, dev: usize, slot: u32, on: bool) {
        let w = &mut self.zero[dev][slot as usize / 64];
        if on {
            *w |= 1 << (slot % 64);
        } else {
            *w &= !(1 << (slot % 64));
        }
    }

    fn memcg_full(&self) -> bool {
        matches!(self.memcg_max, Some(m) if self.stored_bytes >= m)
    }

    /// `zswap_check_limits`: the pool limit with its hysteresis.
    fn check_limits(&mut self) -> bool {
        let cur = self.pool.total_pages();
        if cur >= self.max_pool_pages {
            self.c.pool_limit_hit += 1;
            self.reached_full = true;
        } else if self.reached_full && cur <= self.accept_pages {
            self.reached_full = false;
        }
        self.reached_full
    }

    fn lru_unlink(&mut self, e: u32) {
        let Entry { prev, next, .. } = self.entries[e as usize];
        if prev == NONE { self.lru_head = next } else { self.entries[prev as usize].next = next }
        if next == NONE { self.lru_tail = prev } else { self.entries[next as usize].prev = prev }
    }

    fn lru_push_head(&mut self, e: u32) {
        let old = self.lru_head;
        self.entries[e as usize].prev = NONE;
        self.entries[e as usize].next = old;
        if old == NONE { self.lru_tail = e } else { self.entries[old as usize].prev = e }
        self.lru_head = e;
    }

    fn insert(&mut self, dev: usize, slot: u32, len: u32, handle: Handle) {
        let entry = Entry { dev: dev as u32, slot, len, handle, referenced: true, prev: NONE, next: NONE };
        let e = match self.unused.pop() {
            Some(e) => {
                self.entries[e as usize] = entry;
                e
            }
            None => {
                self.entries.push(entry);
                (self.entries.len() - 1) as u32
            }
        };
        self.index[dev][slot as usize] = e;
        self.lru_push_head(e);
        self.stored_pages += 1;
        self.stored_bytes += len as u64;
    }

    /// `zswap_entry_free`: out of the tree, the LRU and the pool.
    fn remove(&mut self, dev: usize, slot: u32) -> bool {
        let e = std::mem::replace(&mut self.index[dev][slot as usize], NONE);
        if e == NONE {
            return false;
        }
        self.lru_unlink(e);
        let en = self.entries[e as usize];
        self.pool.free(en.handle);
        self.stored_pages -= 1;
        self.stored_bytes -= en.len as u64;
        self.unused.push(e);
        true
    }

    /// Compress and keep a page of `len` compressed bytes, or say why not.
    fn store_compressed(&mut self, dev: usize, slot: u32, len: u32, ctx: &StoreCtx) -> StoreOutcome {
        let mut cpu = ZERO_CHECK_NS;
        if self.memcg_full() {
            self.c.reject_memcg_max += 1;
            self.shrink_queued = true;
            return StoreOutcome::Refused { cpu_ns: cpu };
        }
        if self.check_limits() {
            self.shrink_queued = true;
            return StoreOutcome::Refused { cpu_ns: cpu };
        }
        cpu += self.cost.compress(len);
        let len = if len as u64 >= PAGE_SIZE {
            if !(self.store_incompressible && self.memcg_writeback) {
                self.c.reject_compress_poor += 1;
                return StoreOutcome::Refused { cpu_ns: cpu };
            }
            self.c.stored_incompressible_pages += 1;
            PAGE_SIZE as u32
        } else {
            len
        };
        let Ok(handle) = self.pool.alloc(len, ctx.free_frames) else {
            self.c.reject_alloc_fail += 1;
            return StoreOutcome::Refused { cpu_ns: cpu };
        };
        self.insert(dev, slot, len, handle);
        self.c.zswpout += 1;
        StoreOutcome::Stored { cpu_ns: cpu + STORE_OVERHEAD_NS }
    }
}

impl FrontingStore for Zswap {
    fn name(&self) -> &'static str {
        "zswap"
    }

    fn store(&mut self, dev: usize, slot: u32, ctx: &StoreCtx) -> StoreOutcome {
        // A rewritten slot: whatever was kept for it is stale (zswap_store erases it on
        // failure too, so old data can never be written back or loaded).
        self.remove(dev, slot);
        self.set_zero(dev, slot, false);
        match self.content.page(ctx.page_key) {
            PageContent::Zero => {
                self.set_zero(dev, slot, true);
                self.c.swpout_zero += 1;
                StoreOutcome::Stored { cpu_ns: ZERO_CHECK_NS }
            }
            PageContent::Compressed(len) => self.store_compressed(dev, slot, len, ctx),
        }
    }

    fn load(&mut self, dev: usize, slot: u32, _ctx: &StoreCtx, in_swapcache: bool) -> LoadOutcome {
        if self.zero_bit(dev, slot) {
            // swap_read_folio_zeromap: the folio is zero-filled and clean; the bit stays until
            // the slot is freed or rewritten.
            self.c.swpin_zero += 1;
            return LoadOutcome::Hit { cpu_ns: ZERO_FILL_NS, exclusive: false };
        }
        if self.index[dev][slot as usize] == NONE {
            // zswap_folio_swapin: a read from the slower device protects that many entries
            // from the shrinker (`nr_disk_swapins`).
            self.nr_disk_swapins += 1;
            return LoadOutcome::Miss;
        }
        self.c.zswpin += 1;
        let cpu_ns = self.cost.decompress(self.entries[self.index[dev][slot as usize] as usize].len);
        if in_swapcache {
            self.remove(dev, slot);
        }
        LoadOutcome::Hit { cpu_ns, exclusive: in_swapcache }
    }

    fn invalidate_page(&mut self, dev: usize, slot: u32) {
        self.remove(dev, slot);
        self.set_zero(dev, slot, false);
    }

    fn invalidate_area(&mut self, dev: usize) {
        for slot in 0..self.index[dev].len() as u32 {
            self.remove(dev, slot);
        }
        self.zero[dev].fill(0);
    }

    fn held(&self, dev: usize, slot: u32) -> Held {
        match (self.index[dev][slot as usize] != NONE, self.zero_bit(dev, slot)) {
            (true, _) => Held::Store,
            (false, true) => Held::ZeroMap,
            _ => Held::No,
        }
    }

    fn pool_pages(&self) -> u64 {
        self.pool.total_pages()
    }

    fn take_writeback_request(&mut self) -> bool {
        std::mem::take(&mut self.shrink_queued)
    }

    fn writeback_above_target(&self) -> bool {
        // shrink_worker drains the pool to the accept threshold. A memcg at its zswap.max is
        // drained by the same worker here (the kernel shrinks it synchronously in zswap_store,
        // not modelled).
        self.memcg_writeback && self.stored_pages > 0 && (self.pool.total_pages() > self.accept_pages || self.memcg_full())
    }

    fn writeback_keep(&mut self, dev: usize, slot: u32) {
        let e = self.index[dev][slot as usize];
        self.lru_unlink(e);
        self.lru_push_head(e);
        self.c.reject_reclaim_fail += 1;
    }

    fn writeback_take(&mut self, dev: usize, slot: u32) -> u64 {
        let cpu_ns = self.cost.decompress(self.entries[self.index[dev][slot as usize] as usize].len);
        self.remove(dev, slot);
        self.c.zswpwb += 1;
        cpu_ns
    }

    fn shrinker_count(&mut self) -> u64 {
        // zswap_shrinker_count: nothing unless enabled and the cgroup may write back; the
        // LRU's entries less those protected by recent disk swap-ins (consumed), scaled by the
        // pool's pages per stored page, so that the better zswap compresses the fewer pages
        // it evicts.
        if !self.shrinker_enabled || !self.memcg_writeback || self.stored_pages == 0 {
            return 0;
        }
        let freeable = self.stored_pages;
        let protected = self.nr_disk_swapins.min(freeable);
        self.nr_disk_swapins -= protected;
        let freeable = freeable - protected;
        freeable * self.pool.total_pages() / self.stored_pages
    }

    fn lru_walk_one(&mut self) -> ShrinkerStep {
        // shrink_memcg_cb: the second chance (6.8+): a referenced entry is cleared and rotated.
        let e = self.lru_tail;
        if e == NONE {
            return ShrinkerStep::Empty;
        }
        let en = &mut self.entries[e as usize];
        if !en.referenced {
            return ShrinkerStep::Candidate(en.dev as usize, en.slot);
        }
        en.referenced = false;
        self.lru_unlink(e);
        self.lru_push_head(e);
        ShrinkerStep::Rotated
    }

    fn counters(&self) -> StoreCounters {
        let c = &self.c;
        StoreCounters {
            vmstat: vec![("zswpin", c.zswpin), ("zswpout", c.zswpout), ("zswpwb", c.zswpwb), ("swpin_zero", c.swpin_zero), ("swpout_zero", c.swpout_zero)],
            debugfs: vec![
                ("pool_limit_hit", c.pool_limit_hit),
                ("pool_total_size", self.pool.total_pages() * PAGE_SIZE),
                ("reject_alloc_fail", c.reject_alloc_fail),
                ("reject_compress_fail", 0),
                ("reject_compress_poor", c.reject_compress_poor),
                ("reject_kmemcache_fail", 0),
                ("reject_memcg_max", c.reject_memcg_max),
                ("reject_reclaim_fail", c.reject_reclaim_fail),
                ("stored_incompressible_pages", c.stored_incompressible_pages),
                ("stored_pages", self.stored_pages),
                ("written_back_pages", c.zswpwb),
            ],
        }
    }

    fn check(&self) -> Vec<String> {
        let mut errs = Vec::new();
        let (objs, pages) = self.pool.recount();
        if objs != self.stored_pages || objs != self.pool.objects() || pages != self.pool.total_pages() {
            errs.push(format!("zswap: {objs} pool objects in {pages} pages, but {} stored pages, pool says {} pages", self.stored_pages, self.pool.total_pages()));
        }
        let (mut n, mut e) = (0u64, self.lru_head);
        while e != NONE && n <= self.stored_pages {
            let en = &self.entries[e as usize];
            if self.index[en.dev as usize][en.slot as usize] != e {
                errs.push(format!("zswap: LRU entry for slot {} is not in the tree", en.slot));
            }
            if self.zero_bit(en.dev as usize, en.slot) {
                errs.push(format!("zswap: slot {} is both in the pool and in the zero map", en.slot));
            }
            n += 1;
            e = en.next;
        }
        if n != self.stored_pages {
            errs.push(format!("zswap: LRU holds {n} entries, {} stored", self.stored_pages));
        }
        errs
    }
}
