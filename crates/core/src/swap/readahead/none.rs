//! No swap-in readahead: every fault reads only its own page (page-cluster 0 behaviour, and
//! what a synchronous device's bypass path does, §1.7).

use super::{FaultCtx, SwapReadahead, Window};

pub struct NoReadahead;

impl SwapReadahead for NoReadahead {
    fn name(&self) -> &'static str {
        "none"
    }
    fn window(&mut self, _ctx: &FaultCtx, _info: &mut u64) -> Window {
        Window::TargetOnly
    }
    fn on_cache_hit(&mut self, _was_ra: bool, _shmem: bool, _info: &mut u64, _vpn: u64) {}
}
