//! frontswap with 2010 semantics and a tmem backend (kernel-algorithms.md §6.1; Dan
//! Magenheimer's posting against 2.6.36-rc5, seed 002): every page being swapped out is
//! offered synchronously, page at a time, to hypervisor memory ("transcendent memory") through
//! a hypercall; the hypervisor may refuse, and the page then goes to the swap device as usual.
//!
//! * `put_page` (store): refused when the pages held reach the hypervisor's free memory for
//!   this guest at that moment (`capacity`, a step function over virtual time or a trace: the
//!   other guests' demand is outside the model). A refused put of a slot that held data drops
//!   the old copy (frontswap's rule: succeed, or fail *and* remove the old data).
//! * `get_page` (load): synchronous; in 2010 the backend keeps its copy (the folio is clean
//!   and can be dropped again without a write); `exclusive_loads` models the later "exclusive
//!   gets" (~3.6), where the copy is dropped and the folio is dirty.
//! * `flush_page` / `flush_area` (invalidate) when the slot is freed / at swapoff.
//!
//! Hypervisor memory is not the guest's: the store takes no frames. Each call costs one
//! hypercall (`hypercall_ns`) plus, for put and get, a page copy (`copy_ns`). Counters as the
//! debugfs of 2012+ names them (`succ_stores`, `failed_stores`, `loads`, `invalidates`;
//! 2010's sysfs called them succ_puts, failed_puts, gets, flushes) and `curr_pages`.

use super::{FrontingStore, Held, LoadOutcome, StoreCounters, StoreCtx, StoreOutcome};
use crate::config::stores::FrontswapSpec;
use crate::mm::PAGE_SIZE;
use std::collections::HashSet;

pub struct Frontswap {
    /// (from virtual time, capacity in pages), in time order; the first starts at 0.
    capacity: Vec<(u64, u64)>,
    exclusive: bool,
    hypercall_ns: u64,
    copy_ns: u64,
    /// The per-device `frontswap_map`: slots whose page the backend holds.
    held: HashSet<(u32, u32)>,
    succ_stores: u64,
    failed_stores: u64,
    loads: u64,
    invalidates: u64,
}

impl Frontswap {
    pub fn new(spec: &FrontswapSpec) -> Frontswap {
        let mut capacity = vec![(0, spec.capacity.0 / PAGE_SIZE)];
        for s in &spec.capacity_steps {
            if s.at.0 == 0 {
                capacity[0].1 = s.size.0 / PAGE_SIZE;
            } else {
                capacity.push((s.at.0, s.size.0 / PAGE_SIZE));
            }
        }
        Frontswap {
            capacity,
            exclusive: spec.exclusive_loads,
            hypercall_ns: spec.hypercall_ns,
            copy_ns: spec.copy_ns,
            held: HashSet::new(),
            succ_stores: 0,
            failed_stores: 0,
            loads: 0,
            invalidates: 0,
        }
    }

    /// The hypervisor memory this guest may use at `now`.
    fn capacity_at(&self, now: u64) -> u64 {
        let i = self.capacity.partition_point(|&(t, _)| t <= now);
        self.capacity[i.saturating_sub(1)].1
    }
}

impl FrontingStore for Frontswap {
    fn name(&self) -> &'static str {
        "frontswap"
    }

    fn store(&mut self, dev: usize, slot: u32, ctx: &StoreCtx) -> StoreOutcome {
        let key = (dev as u32, slot);
        let dup = self.held.contains(&key);
        let room = (self.held.len() as u64 - dup as u64) < self.capacity_at(ctx.now);
        if room {
            self.held.insert(key);
            self.succ_stores += 1;
            return StoreOutcome::Stored { cpu_ns: self.hypercall_ns + self.copy_ns };
        }
        self.failed_stores += 1;
        if dup {
            // Never leave stale data behind a failed overwrite.
            self.held.remove(&key);
            self.invalidates += 1;
        }
        StoreOutcome::Refused { cpu_ns: self.hypercall_ns }
    }

    fn load(&mut self, dev: usize, slot: u32, _ctx: &StoreCtx, _in_swapcache: bool) -> LoadOutcome {
        let key = (dev as u32, slot);
        if !self.held.contains(&key) {
            // The frontswap bitmap says no: no hypercall.
            return LoadOutcome::Miss;
        }
        self.loads += 1;
        if self.exclusive {
            self.held.remove(&key);
        }
        LoadOutcome::Hit { cpu_ns: self.hypercall_ns + self.copy_ns, exclusive: self.exclusive }
    }

    fn invalidate_page(&mut self, dev: usize, slot: u32) {
        if self.held.remove(&(dev as u32, slot)) {
            self.invalidates += 1;
        }
    }

    fn invalidate_area(&mut self, dev: usize) {
        self.held.retain(|&(d, _)| d != dev as u32);
    }

    fn held(&self, dev: usize, slot: u32) -> Held {
        if self.held.contains(&(dev as u32, slot)) {
            Held::Store
        } else {
            Held::No
        }
    }

    fn counters(&self) -> StoreCounters {
        StoreCounters {
            vmstat: Vec::new(),
            debugfs: vec![
                ("curr_pages", self.held.len() as u64),
                ("failed_stores", self.failed_stores),
                ("invalidates", self.invalidates),
                ("loads", self.loads),
                ("succ_stores", self.succ_stores),
            ],
        }
    }
}
