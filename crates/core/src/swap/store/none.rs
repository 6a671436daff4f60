//! No fronting store: every page goes to the swap device (the kernel without frontswap or
//! with zswap disabled).

use super::{FrontingStore, Held, LoadOutcome, StoreCtx, StoreOutcome};

pub struct NoStore;

impl FrontingStore for NoStore {
    fn name(&self) -> &'static str {
        "none"
    }
    fn store(&mut self, _dev: usize, _slot: u32, _ctx: &StoreCtx) -> StoreOutcome {
        StoreOutcome::Refused { cpu_ns: 0 }
    }
    fn load(&mut self, _dev: usize, _slot: u32, _ctx: &StoreCtx, _in_swapcache: bool) -> LoadOutcome {
        LoadOutcome::Miss
    }
    fn invalidate_page(&mut self, _dev: usize, _slot: u32) {}
    fn invalidate_area(&mut self, _dev: usize) {}
    fn held(&self, _dev: usize, _slot: u32) -> Held {
        Held::No
    }
}
