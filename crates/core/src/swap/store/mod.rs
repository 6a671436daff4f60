//! Fronting stores: a store that every page being swapped out is offered to before the swap
//! device, and that every swap-in asks first (frontswap 2010, zswap today; kernel-algorithms.md
//! §6). A store keys pages by their swap entry (device, slot): the slot is allocated as usual
//! and only the device I/O is replaced.
//!
//! # Contract
//! The caller (the swap I/O layer, `swap/io.rs`) guarantees: `store` is offered each dirty
//! swap-cache folio being written out, exactly once per write-out; `load` is asked before each
//! read of a slot from its device; `invalidate_page` is called when a slot's last reference
//! goes (the slot is free: whatever the store keeps for it is garbage); `invalidate_area`
//! when a whole area goes (`swapoff`; not modelled yet, so nothing calls it). The implementer
//! guarantees: a stored page is returned by every later `load` of its entry until it is
//! invalidated (or, for an exclusive store, until the first load); a refused store keeps no
//! state; the CPU time it returns is what the calling task pays.
//!
//! How to add one: one file here implementing [`FrontingStore`], one line in [`build`] (and
//! the configuration that selects it), and golden tests.

mod none;

/// What `store` did with a page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreOutcome {
    /// Kept: no device write; the folio is clean and can be freed now.
    Stored { cpu_ns: u64 },
    /// Not kept: the page goes to the swap device.
    Refused { cpu_ns: u64 },
}

/// What `load` found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadOutcome {
    /// The page came from the store synchronously: no device read.
    Hit { cpu_ns: u64 },
    /// Not in the store: read it from the device.
    Miss,
}

pub trait FrontingStore {
    /// The name a workload selects it by.
    fn name(&self) -> &'static str;
    /// Offer a page being swapped out to (`dev`, `slot`) at virtual time `now`.
    fn store(&mut self, dev: usize, slot: u32, now: u64) -> StoreOutcome;
    /// A swap-in of (`dev`, `slot`) asks the store first.
    fn load(&mut self, dev: usize, slot: u32, now: u64) -> LoadOutcome;
    /// The slot was freed.
    fn invalidate_page(&mut self, dev: usize, slot: u32);
    /// The whole area was swapped off.
    fn invalidate_area(&mut self, dev: usize);
}

/// The registry: a store by name.
pub fn build(name: &str) -> Box<dyn FrontingStore> {
    match name {
        "none" => Box::new(none::NoStore),
        other => unreachable!("fronting store {other:?} passed validation but has no implementation"),
    }
}
