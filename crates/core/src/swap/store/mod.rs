//! Fronting stores: a store that every page being swapped out is offered to before the swap
//! device, and that every swap-in asks first (frontswap 2010, zswap today; kernel-algorithms.md
//! §6). A store keys pages by their swap entry (device, slot): the slot is allocated as usual
//! and only the device I/O is replaced.
//!
//! # Contract
//! The caller (the swap I/O layer, `swap/io.rs`) guarantees: `store` is offered each dirty
//! swap-cache folio being written out, exactly once per write-out; `load` is asked before each
//! read of a slot from its device, saying whether the folio will stay in the swap cache;
//! `invalidate_page` is called when a slot's last reference goes (the slot is free: whatever
//! the store keeps for it is garbage); `invalidate_area` when a whole area goes (`swapoff`;
//! not modelled yet, so nothing calls it). After every call the layer holds exactly
//! `pool_pages()` frames for the store, taken from and given back to the workload's memory
//! (so a pool competes with the workload and is charged to its memory cgroup).
//!
//! The implementer guarantees: a stored page is returned by every later `load` of its entry
//! until it is invalidated, written back, or (for an exclusive load, `Hit { exclusive: true }`)
//! loaded; a refused store keeps nothing for the slot, including an older copy; a store that
//! grows its pool does so only within `ctx.free_frames`; the CPU time it returns is what the
//! calling task pays.
//!
//! A store with a backing device (zswap) may also write pages back: after a refused store,
//! `take_writeback_request` says whether it queued the writeback worker
//! (`zswap/shrinker.rs`), `writeback_above_target` is the worker's loop condition; each step walks one entry of the LRU (`lru_walk_one`), and the worker either
//! `writeback_keep`s a candidate (a swap-cache folio exists: the page is hot) or
//! `writeback_take`s it and writes it to the device.
//!
//! How to add one: one file (or folder) here implementing [`FrontingStore`], one line in
//! [`build`] (and the configuration that selects it, config/stores.rs), and golden tests.

mod frontswap;
mod none;
pub mod zswap;

use crate::config::Resolved;

/// What the layer tells the store about the moment of a call.
#[derive(Clone, Copy, Debug)]
pub struct StoreCtx {
    /// Virtual time of the call.
    pub now: u64,
    /// Free frames the store's pool may take without reclaim.
    pub free_frames: u64,
    /// `store`: the identity of the page being stored (`zswap::content::page_key`), which
    /// decides its content; 0 without a content model.
    pub page_key: u64,
}

/// What `store` did with a page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreOutcome {
    /// Kept: no device write; the folio is clean and can be freed now.
    Stored { cpu_ns: u64 },
    /// Not kept: the page goes to the swap device.
    Refused { cpu_ns: u64 },
}

/// One entry of a walk of the store's LRU (the shrink worker's or the memory-pressure
/// shrinker's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShrinkerStep {
    /// Nothing stored.
    Empty,
    /// The oldest entry was referenced: cleared and moved to the young end (LRU_ROTATE).
    Rotated,
    /// The oldest entry, unreferenced: write (`dev`, `slot`) back.
    Candidate(usize, u32),
}

/// What `load` found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadOutcome {
    /// The page came from the store synchronously: no device read. `exclusive`: the store
    /// dropped its copy, so the folio is the only one and is dirty.
    Hit { cpu_ns: u64, exclusive: bool },
    /// Not in the store: read it from the device.
    Miss,
}

/// Where a store holds a slot's page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Held {
    No,
    /// In the store proper (a pool entry, hypervisor memory).
    Store,
    /// In the zero map: no entry, no I/O.
    ZeroMap,
}

/// A store's counters: `/proc/vmstat` names (merged into the run's vmstat) and debugfs names.
#[derive(Clone, Debug, Default)]
pub struct StoreCounters {
    pub vmstat: Vec<(&'static str, u64)>,
    pub debugfs: Vec<(&'static str, u64)>,
}

pub trait FrontingStore {
    /// The name a workload selects it by.
    fn name(&self) -> &'static str;
    /// Offer a page being swapped out to (`dev`, `slot`).
    fn store(&mut self, dev: usize, slot: u32, ctx: &StoreCtx) -> StoreOutcome;
    /// A swap-in of (`dev`, `slot`) asks the store first; `in_swapcache` is false on the
    /// synchronous-device bypass (the folio never enters the swap cache).
    fn load(&mut self, dev: usize, slot: u32, ctx: &StoreCtx, in_swapcache: bool) -> LoadOutcome;
    /// The slot was freed.
    fn invalidate_page(&mut self, dev: usize, slot: u32);
    /// The whole area was swapped off.
    fn invalidate_area(&mut self, dev: usize);
    /// Where the store holds (`dev`, `slot`), for the invariant checks.
    fn held(&self, dev: usize, slot: u32) -> Held;
    /// Pages of the workload's memory the store holds (its pool).
    fn pool_pages(&self) -> u64 {
        0
    }
    /// Did the last `store` queue the writeback worker (refused at the pool's limit)? Taking
    /// the request clears it; the caller queues the work at the store's time.
    fn take_writeback_request(&mut self) -> bool {
        false
    }
    /// The run's loop condition: is the store still above what writeback drains it to?
    fn writeback_above_target(&self) -> bool {
        false
    }
    /// `lru_walk_one`'s candidate cannot go now (its page is in the swap cache): keep it.
    fn writeback_keep(&mut self, _dev: usize, _slot: u32) {}
    /// Drop `lru_walk_one`'s candidate, which is being written to the device; returns the CPU
    /// time of getting the page back (decompression).
    fn writeback_take(&mut self, _dev: usize, _slot: u32) -> u64 {
        0
    }
    /// The memory-pressure shrinker's `count_objects`: entries it offers to reclaim now
    /// (0: none, or no such shrinker).
    fn shrinker_count(&mut self) -> u64 {
        0
    }
    /// One entry of an LRU walk (`list_lru_walk_one` with `shrink_memcg_cb`), the shrink
    /// worker's and the memory-pressure shrinker's.
    fn lru_walk_one(&mut self) -> ShrinkerStep {
        ShrinkerStep::Empty
    }
    fn counters(&self) -> StoreCounters {
        StoreCounters::default()
    }
    /// Internal consistency (entries, pool accounting); empty when consistent.
    fn check(&self) -> Vec<String> {
        Vec::new()
    }
}

/// The registry: the store a resolved configuration selects.
pub fn build(cfg: &Resolved) -> Box<dyn FrontingStore> {
    let c = &cfg.config;
    match crate::config::stores::store_name(&c.zswap, &c.frontswap) {
        "none" => Box::new(none::NoStore),
        "zswap" => Box::new(zswap::Zswap::new(cfg)),
        "frontswap" => Box::new(frontswap::Frontswap::new(c.frontswap.as_ref().expect("selected"))),
        other => unreachable!("fronting store {other:?} passed validation but has no implementation"),
    }
}
