//! The block layer as explicit stages: what one request to a block device costs the CPU, stage
//! by stage, each a named device parameter (device/params.rs) and its own CPU category
//! (stats/cpu.rs), so that a profile of reclaim shows where the block layer's time goes.
//!
//! A swap page on its way to a request-based device (`swap_writepage` → `submit_bio`):
//!
//! 1. **bio allocation** (`bio_alloc_ns`): `get_swap_bio` takes a bio from the bio set's
//!    mempool and adds the page;
//! 2. **plug and merge** (`plug_merge_ns`): `submit_bio` → `blk_mq_submit_bio` (2.6.32:
//!    `__make_request`) adds it to the task's plug, trying to merge it into a plugged
//!    request first (the back-merge `device::Plug` models);
//! 3. **request allocation and tag** (`request_alloc_ns`): `blk_mq_get_new_requests` (2.6.32:
//!    `get_request`) — the CPU of taking a request and its tag; waiting for one when the
//!    pool of `nr_requests` is empty is a sleep (engine/congestion.rs), not charged here;
//! 4. **dispatch** (`dispatch_ns`): the plug flush inserts the request into the I/O
//!    scheduler, which hands it to the driver (`queue_rq`: building the command, ringing the
//!    doorbell; virtio's notify is a VM exit);
//! 5. **completion interrupt and softirq** (`completion_ns`): the device's interrupt, the
//!    block softirq (`blk_done_softirq` / `blk_mq_complete_request`), `bio_endio` and
//!    `end_swap_bio_write/read` ending the page's writeback or unlocking it.
//!
//! Every stage is charged per request (a merged request of many pages pays once, as the model
//! has always charged the block layer), to the submitter at submission: the interrupt's CPU
//! is real CPU but lands on whichever CPU takes the interrupt, which the model does not
//! schedule separately. A fronting store's hit never reaches the block layer; a device that
//! bypasses it (zram: `block_layer = false`) pays none of the stages; brd is bio-based
//! (`blk_queue_make_request(brd_make_request)`): it has no plug merge of requests, no request,
//! no scheduler and no interrupt — its `make_request` copies the page (`sync_*_cpu_ns`, its
//! dispatch) and ends the bio inline — so it pays bio allocation, submission and the inline
//! completion only.
//!
//! Sources. The per-request totals are the figures the model had as one number (2 µs for SATA
//! and disks, 1.5 µs for NVMe and brd: kernel-algorithms.md §6.3, the block layer at "a few
//! µs per I/O", and seed 002's observation that it cost more than a hypercall round trip of
//! about 1 µs). No source found gives the split by stage for these kernels; the defaults divide
//! each total by an assumption stated here, not a measurement: allocation of the bio and the
//! request are slab/mempool and tag-bitmap operations (a few hundred ns each), the merge attempt
//! is a list walk of the plug, and dispatch and completion carry the driver and interrupt work
//! (the larger shares). A calibration that measures the stages (e.g. from `perf` on the host)
//! would replace them; a preset file giving the old single `block_layer_cpu_ns` has it spread
//! over the stages in the proportions of its base preset (config/devices.rs).

use super::DeviceParams;
use crate::stats::{CpuCategory, CpuCost};

/// One request's block-layer CPU, by stage (zero for a device that bypasses the block layer).
pub fn request_cost(p: &DeviceParams) -> CpuCost {
    let mut c = CpuCost::default();
    if p.block_layer {
        for (cat, ns) in CpuCategory::BLOCK_STAGES.into_iter().zip(stage_ns(p)) {
            c.charge(cat, ns);
        }
    }
    c
}

/// The stages' parameters in `CpuCategory::BLOCK_STAGES` order.
pub fn stage_ns(p: &DeviceParams) -> [u64; 5] {
    [p.bio_alloc_ns, p.plug_merge_ns, p.request_alloc_ns, p.dispatch_ns, p.completion_ns]
}

/// The parameter names of the stages, in the same order.
pub const STAGE_PARAMS: [&str; 5] = ["bio_alloc_ns", "plug_merge_ns", "request_alloc_ns", "dispatch_ns", "completion_ns"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stage_defaults_sum_to_the_per_request_figures_and_zram_skips_them() {
        for (preset, total) in [("hdd", 2_000), ("sata-ssd", 2_000), ("nvme", 1_500), ("ramdisk", 1_500), ("zram", 0)] {
            let p = DeviceParams::preset(preset).unwrap();
            assert_eq!(request_cost(&p).block_layer(), total, "{preset}");
            assert_eq!(request_cost(&p).total(), total, "{preset}: only block-layer categories");
        }
        // brd is bio-based: no request, no scheduler dispatch.
        let brd = DeviceParams::preset("ramdisk").unwrap();
        assert_eq!((brd.request_alloc_ns, brd.dispatch_ns), (0, 0));
    }
}
