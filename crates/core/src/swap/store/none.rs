//! No fronting store: every page goes to the swap device (the kernel without frontswap or
//! with zswap disabled).

use super::{FrontingStore, LoadOutcome, StoreOutcome};

pub struct NoStore;

impl FrontingStore for NoStore {
    fn name(&self) -> &'static str {
        "none"
    }
    fn store(&mut self, _dev: usize, _slot: u32, _now: u64) -> StoreOutcome {
        StoreOutcome::Refused { cpu_ns: 0 }
    }
    fn load(&mut self, _dev: usize, _slot: u32, _now: u64) -> LoadOutcome {
        LoadOutcome::Miss
    }
    fn invalidate_page(&mut self, _dev: usize, _slot: u32) {}
    fn invalidate_area(&mut self, _dev: usize) {}
}
