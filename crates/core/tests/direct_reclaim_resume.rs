//! A direct reclaimer that sleeps inside its pass goes on with what is left of that pass
//! (`reclaim::PassLeft`). In the kernel the sleep is a call deep inside the scan loop — a swap
//! writer in `get_request` / `blk_mq_get_tag` for a free request, `too_many_isolated`'s nap,
//! 3.x/4.x's writeback stall in `shrink_inactive_list` — and returns into the same
//! `shrink_zone` / `shrink_lruvec` loop with its local `nr[]`, `targets[]` and
//! `nr_reclaimed`; no second `get_scan_count`. The model once began a fresh pass at the same
//! priority on every wake-up, so a reclaimer that slept often reclaimed pass after pass in
//! one call (vm-ra-2017 combined, 4.14: 4,325 pages and 94 ms a call).

use swaplab_core::engine::Sim;
use swaplab_core::reclaim::SWAP_CLUSTER_MAX;

/// Four anonymous writers over twice the memory, swapping to a disk whose queue takes four
/// requests (BLKDEV_MIN_RQ), so reclaimers sleep for requests in the middle of their passes.
const SMALL_QUEUE: &str = r#"
name = "t"
seed = 3
[machine]
cpus = 1
ram = "32MiB"
kernel_reserved = "4MiB"
[[swap]]
device = "hdd"
size = "128MiB"
[swap.params]
nr_requests = 4
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
    let r = swaplab_core::config::load(SMALL_QUEUE, "t.toml", &[format!("kernel.profile=\"{profile}\"")]).expect("valid");
    let mut sim = Sim::new(&r);
    sim.run(&mut |_| true);
    let errs = sim.check_invariants();
    assert!(errs.is_empty(), "{profile}: invariants broken:\n  {}", errs.join("\n  "));
    sim
}

/// Every era with a direct-reclaim bail-out (2.6.32's Rik van Riel test, 3.x+'s proportional
/// rule, kernel-algorithms.md §3.8) frees about SWAP_CLUSTER_MAX pages a call, "at most a few
/// batches more", however often its pass sleeps for a request. Fresh passes on every wake-up
/// made single 6.x calls free 1,168 pages here.
#[test]
fn a_direct_reclaimer_woken_inside_its_pass_goes_on_with_what_is_left_of_it() {
    const FEW_BATCHES: u64 = 8;
    for profile in ["2.6.32", "3.14", "4.14", "6.x"] {
        let sim = run(profile);
        let calls: u64 = sim.tasks.iter().map(|t| t.dr_calls).sum();
        let most = sim.tasks.iter().map(|t| t.dr_pages_hist.quantile(1.0)).max().unwrap_or(0);
        assert!(calls > 20 && sim.request_sleeps() > 20, "{profile}: direct reclaimers must sleep for requests ({calls} calls, {} request sleeps)", sim.request_sleeps());
        assert!(most <= FEW_BATCHES * SWAP_CLUSTER_MAX, "{profile}: a direct-reclaim call freed {most} pages (of {calls} calls, {} request sleeps)", sim.request_sleeps());
    }
}

/// kswapd, too, sleeps for requests inside its pass (it writes much of the swap here) and goes
/// on with that pass when it wakes: `balance_pgdat`'s priority loop and `kswapd_shrink_node` are
/// where it fell asleep, so its next step neither re-checks the watermarks nor runs
/// `kswapd_age`/`get_scan_count` again. Its steps once began a fresh pass after every sleep,
/// rescanning the pages it had just queued for writeback: 2.5-3.8 pages scanned per page freed
/// here (6.x: 24,000 scanned, 6,382 freed); going on with the pass, 1.3-1.7.
#[test]
fn kswapd_woken_inside_its_pass_goes_on_with_what_is_left_of_it() {
    for profile in ["3.14", "4.14", "6.x"] {
        let sim = run(profile);
        let (ks, vm) = (&sim.reclaim.kswapd, &sim.stats.vm);
        assert!(ks.pass_resumes > 0 && vm.pgsteal_kswapd > 0, "{profile}: kswapd must sleep inside its passes ({} resumes, {} pages freed)", ks.pass_resumes, vm.pgsteal_kswapd);
        assert!(vm.pgscan_kswapd < 2 * vm.pgsteal_kswapd, "{profile}: kswapd scanned {} pages to free {} ({} passes resumed)", vm.pgscan_kswapd, vm.pgsteal_kswapd, ks.pass_resumes);
    }
}
