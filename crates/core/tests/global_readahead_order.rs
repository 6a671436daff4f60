//! The adaptive swap-in window of 3.14+ (`swapin_nr_pages`, kernel-algorithms.md §1.3) is one
//! state shared by every CPU: the readahead hits any task's faults count (§1.4) open the next
//! window of whichever task misses next in time. The engine lets a CPU run ahead of the others
//! by up to `sim.sync_quantum` (20 us); a fault that reads or feeds that state waits for its
//! time (engine/user.rs `fault_ahead_of_shared_state`), so how the hits are shared out must
//! not depend on how far a CPU may run ahead. Before, a sequential reader took its window's 7
//! hits and its next miss in one go and kept every hit for itself: seed 000's Base (4.14,
//! sequential beside random swap) read 73% useful readahead where the posting had 53%.

mod common;
use common::run_checked;
use swaplab_core::stats::result::SimResult;

/// vm-scalability's combined case in miniature: 2 sequential writers beside 4 random writers,
/// 4.14 with the global cluster readahead (VMA readahead off), everything three times the RAM.
fn combined(quantum: &str) -> String {
    format!(
        r#"
name = "combined"
seed = 1
[machine]
cpus = 8
ram = "256MiB"
[kernel]
profile = "4.14"
readahead = "adaptive"
vma_ra_enabled = false
[sim]
sync_quantum = "{quantum}"
[[swap]]
device = "nvme"
size = "1GiB"
[[task]]
name = "seq"
instances = 2
repeat = true
time_limit = "2s"
[[task.mapping]]
name = "mem"
kind = "anon"
size = "200MiB"
[[task.phase]]
mapping = "mem"
pattern = "sequential"
write_ratio = 1.0
[[task]]
name = "rand"
instances = 4
repeat = true
time_limit = "2s"
[[task.mapping]]
name = "mem"
kind = "anon"
size = "100MiB"
[[task.phase]]
mapping = "mem"
pattern = "random"
write_ratio = 1.0
"#
    )
}

/// Run to the end; every invariant and counter relation must hold.
fn run(text: &str) -> SimResult {
    run_checked(text, &[])
}

fn ra_hit_pct(r: &SimResult) -> f64 {
    r.vmstat["swap_ra_hit"] as f64 * 100.0 / r.vmstat["swap_ra"].max(1) as f64
}

#[test]
fn global_readahead_hits_go_to_the_next_miss_in_time_however_far_a_cpu_runs_ahead() {
    let tight = run(&combined("200ns"));
    let usual = run(&combined("20us"));
    for r in [&tight, &usual] {
        assert!(r.vmstat["swap_ra"] > 10_000, "readahead happened ({} pages)", r.vmstat["swap_ra"]);
    }
    let (t, u) = (ra_hit_pct(&tight), ra_hit_pct(&usual));
    // The random writers' windows waste their pages, so the share of useful readahead is what
    // tells who got the sequential writers' hits.
    assert!(t < 90.0, "the random writers' faults opened windows too ({t:.1}% of readahead used)");
    assert!((t - u).abs() < 3.0, "the hits are shared out the same way with a 200 ns and a 20 us run-ahead: {t:.1}% vs {u:.1}% of readahead used");
}
