//! Reclaim mechanisms that differ by era (issue 11): 2.6.28's congestion_wait naps that sleep,
//! its balance_pgdat, the allocator's retry without an OOM counter, and the 2.6.35+ kswapd nap
//! that re-checks the watermark when it ends.

mod common;
use common::*;

/// A hog that needs reclaim on every page (a 40 MiB sequential writer in 28 MiB, HDD swap)
/// and a task that only computes and touches one hot page, on one CPU.
fn hog_and_spinner(profile: &str) -> String {
    format!(
        r#"
name = "hog-and-spinner"
seed = 11
[machine]
cpus = 1
ram = "32MiB"
kernel_reserved = "4MiB"
[kernel]
profile = "{profile}"
[[swap]]
device = "hdd"
size = "64MiB"
[[task]]
name = "hog"
[[task.mapping]]
name = "m"
kind = "anon"
size = "40MiB"
[[task.phase]]
mapping = "m"
pattern = "sequential"
cycles = 2
[[task]]
name = "spinner"
[[task.mapping]]
name = "m"
kind = "anon"
size = "4KiB"
[[task.phase]]
mapping = "m"
pattern = "sequential"
cycles = 20000
compute = "50us"
"#
    )
}

fn task<'a>(res: &'a swaplab_core::stats::result::SimResult, name: &str) -> &'a swaplab_core::stats::result::TaskResult {
    res.tasks.iter().find(|t| t.name == name).expect("task present")
}

/// 2.6.28 do_try_to_free_pages: congestion_wait(WRITE, HZ/10) sleeps. While the hog naps in
/// direct reclaim the spinner has the CPU: its run-queue wait stays far below the hog's stall
/// (when the nap was charged as CPU time, the spinner waited out every nap).
#[test]
fn congestion_wait_nap_gives_the_cpu_up_2_6_28() {
    let res = run_checked(&hog_and_spinner("2.6.28"), &[]);
    let hog = task(&res, "hog");
    let spinner = task(&res, "spinner");
    let stall = hog.direct_reclaim.stall_ns;
    assert!(hog.direct_reclaim.calls > 0, "the hog must reclaim directly");
    assert!(stall >= 100_000_000, "the hog must have napped at least once (stall {stall} ns)");
    assert!(
        spinner.runqueue_wait_ns * 4 < stall,
        "the spinner waited {} ns for the CPU while the hog stalled {stall} ns in reclaim",
        spinner.runqueue_wait_ns
    );
}

/// 2.6.28 balance_pgdat restarts at DEF_PRIORITY (counting PAGEOUTRUN at loop_again) as soon as
/// a run has reclaimed SWAP_CLUSTER_MAX pages, so kswapd reclaims in small runs; 6.x runs until
/// the high watermark.
#[test]
fn kswapd_2_6_28_restarts_after_swap_cluster_max() {
    let text = multi_task(1, 1, "128MiB", Some(("nvme", "256MiB")), "anon", "160MiB", "sequential", 2.0);
    let old = run_checked(&text, &["kernel.profile=\"2.6.28\""]);
    let new = run_checked(&text, &[]);
    let per_run = |r: &swaplab_core::stats::result::SimResult| v(r, "pgsteal_kswapd") as f64 / v(r, "pageoutrun").max(1) as f64;
    assert!(v(&old, "pgsteal_kswapd") > 0 && v(&new, "pgsteal_kswapd") > 0, "kswapd must reclaim in both eras");
    assert!(per_run(&old) < 96.0, "2.6.28 kswapd reclaimed {:.1} pages per balance_pgdat run", per_run(&old));
    // 6.x does not stop at SWAP_CLUSTER_MAX: it runs on to the high watermark, past the bound
    // 2.6.28's runs stay under.
    assert!(per_run(&new) > 96.0, "6.x kswapd reclaimed only {:.1} pages per run (2.6.28: {:.1})", per_run(&new), per_run(&old));
}

/// 2.6.35+ kswapd_try_to_sleep: when the HZ/10 nap ends below the high watermark kswapd goes
/// back to work (kswapd_high_wmark_hit_quickly); 2.6.28 had no nap and neither counter.
#[test]
fn kswapd_nap_end_rechecks_the_watermark() {
    // Two random readers of 36 MiB each in 60 MiB, with 2 ms of work per touch: faults come
    // slowly enough that kswapd reaches the high watermark and naps between bursts.
    let mut text = multi_task(2, 2, "64MiB", Some(("nvme", "128MiB")), "anon", "36MiB", "random", 4.0);
    text = text.replace("cycles = 4.0\n", "cycles = 4.0\ncompute = \"2ms\"\n");
    let new = run_checked(&text, &[]);
    eprintln!("low {} high {} pageoutrun {} allocstall {}", v(&new, "kswapd_low_wmark_hit_quickly"), v(&new, "kswapd_high_wmark_hit_quickly"), v(&new, "pageoutrun"), v(&new, "allocstall"));
    assert!(v(&new, "kswapd_high_wmark_hit_quickly") > 0, "6.x: no nap ended below the high watermark");
    let old = run_checked(&text, &["kernel.profile=\"2.6.28\""]);
    assert_eq!(v(&old, "kswapd_high_wmark_hit_quickly") + v(&old, "kswapd_low_wmark_hit_quickly"), 0, "2.6.28 kswapd had no nap");
}

/// 2.6.28 __alloc_pages_internal: a reclaimer that made progress but found no page naps in
/// congestion_wait(HZ/50) and retries; without progress and with reclaimable pages left it
/// never declares OOM (there was no MAX_RECLAIM_RETRIES): the run completes without a kill.
#[test]
fn allocator_2_6_28_retries_without_oom_while_pages_are_reclaimable() {
    let res = run_checked(&hog_and_spinner("2.6.28"), &[]);
    assert_eq!(v(&res, "oom_kill"), 0);
    assert!(res.tasks.iter().all(|t| !t.oom_killed));
}

/// 2.6.28's `throttle_vm_writeout` at the end of every zone pass (reclaim/vm_writeout.rs): the
/// hog's swap-out writes queue on the HDD past the dirty threshold plus a tenth (10 % of free +
/// LRU pages in 2.6.28), so its direct reclaims and kswapd nap in congestion_wait before going
/// on; 4.14 (the throttle went in 4.9) never does.
#[test]
fn swap_writes_past_the_dirty_threshold_nap_2_6_28_reclaimers_in_throttle_vm_writeout() {
    for profile in ["2.6.28", "4.14"] {
        let r = swaplab_core::config::load(&hog_and_spinner(profile), "t.toml", &[]).expect("valid workload");
        let mut sim = swaplab_core::engine::Sim::new(&r);
        sim.run(&mut |_| true);
        let errs = sim.check_invariants();
        assert!(errs.is_empty(), "{profile}: {errs:?}");
        let (direct, kswapd) = (sim.reclaim.vm_writeout_naps, sim.reclaim.kswapd_vm_writeout_naps);
        if profile == "2.6.28" {
            assert!(direct > 0, "{profile}: the hog's direct reclaims nap ({direct})");
            assert!(kswapd > 0, "{profile}: kswapd naps too ({kswapd})");
        } else {
            assert_eq!(direct + kswapd, 0, "{profile}: no throttle_vm_writeout");
        }
    }
}
