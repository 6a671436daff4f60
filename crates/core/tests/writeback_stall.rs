//! Each era's writeback stalls in reclaim (`reclaim/writeback_stall.rs`), run for real: a swap
//! workload whose writes pile up on a slow disk makes reclaim meet folios under writeback over
//! and over; anonymous folios are no flusher's business, so from 3.11 on no direct reclaimer
//! sleeps for them — only kswapd, when it meets the ones it marked again (6.x direct reclaim
//! still takes its NOPROGRESS jiffy at priority 1, which is not about whose writes pend).

use swaplab_core::engine::Sim;
use swaplab_core::reclaim::writeback_stall::WritebackWait;

/// Four anonymous writers over twice the memory on a disk, one CPU.
const SWAP_ON_DISK: &str = r#"
name = "t"
seed = 3
[machine]
cpus = 1
ram = "32MiB"
kernel_reserved = "4MiB"
[[swap]]
device = "hdd"
size = "128MiB"
[[task]]
name = "w"
instances = 4
[[task.mapping]]
name = "m"
kind = "anon"
size = "14MiB"
[[task.phase]]
mapping = "m"
pattern = "random"
write_ratio = 1.0
touches = 20000
"#;

fn run(profile: &str) -> Sim {
    run_text(SWAP_ON_DISK, profile)
}

fn run_text(text: &str, profile: &str) -> Sim {
    let r = swaplab_core::config::load(text, "t.toml", &[format!("kernel.profile=\"{profile}\"")]).expect("valid");
    let mut sim = Sim::new(&r);
    sim.run(&mut |_| true);
    sim
}

#[test]
fn direct_reclaimers_meeting_anonymous_writeback_do_not_sleep_for_it_from_3_11_on() {
    for profile in ["3.14", "4.14", "6.x"] {
        let sim = run(profile);
        let vm = &sim.stats.vm;
        assert!(vm.pgscan_direct > 0 && vm.pswpout > 1000, "{profile}: direct reclaim on a swapping machine ({} scanned, {} written)", vm.pgscan_direct, vm.pswpout);
        let s = &sim.reclaim.writeback_sleeps;
        for wait in [WritebackWait::CongestionWait, WritebackWait::WaitIffCongested, WritebackWait::ThrottleWriteback, WritebackWait::ThrottleCongested] {
            assert_eq!(s[wait as usize], 0, "{profile}: a direct reclaimer slept in {wait:?}");
        }
        assert!(!sim.reclaim.pgdat_congested, "{profile}");
    }
}

/// Every era's swap writer takes a request from the queue's write pool and sleeps in
/// `get_request` (2.6.28 `get_request_wait`) when the pool is empty: swapper_space's
/// backing_dev_info is never congested, so 2.6.28's may_write_to_queue lets every reclaimer
/// write swap, and the block layer is what holds it back. With a queue of 4 requests
/// (BLKDEV_MIN_RQ) the disk never holds more than 4 swap writes, and reclaimers sleep for them.
#[test]
fn swap_writers_sleep_for_a_request_when_the_write_pool_is_empty_in_every_era() {
    let small_queue = SWAP_ON_DISK.replace("size = \"128MiB\"\n", "size = \"128MiB\"\n[swap.params]\nnr_requests = 4\n");
    assert_ne!(small_queue, SWAP_ON_DISK);
    for profile in ["2.6.28", "3.14", "4.14", "6.x"] {
        let sim = run_text(&small_queue, profile);
        assert!(sim.stats.vm.pswpout > 500, "{profile}: the workload must swap ({} written)", sim.stats.vm.pswpout);
        let disk = &sim.swap.areas[0].device;
        assert!(disk.allocated_max(true) <= 4, "{profile}: {} write requests held a slot at once", disk.allocated_max(true));
        assert!(sim.request_sleeps() > 0, "{profile}: no reclaimer slept for a request");
    }
}
