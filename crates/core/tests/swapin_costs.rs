//! The CPU a synchronous swap-in charges its task. A major fault pays `major_fault_cpu_ns`
//! before it sleeps on its read; its retry, which finds the folio in the swap cache and maps
//! it, pays a cache hit (`cache_hit_fault_ns`), as a file fault's retry does. `swaplab
//! calibrate` measures a major fault's CPU as the faulting thread's CPU time, both attempts
//! together, so the figure must be charged once per fault, not once and a half.

mod common;
use common::{load, run_resolved};

/// One task writes 16 MiB into an 8 MiB memory cgroup, then reads it back in order with
/// page-cluster 0: every page of the read pass is one synchronous swap-in.
const SWAPIN: &str = r#"
name = "t"
seed = 1
[machine]
cpus = 1
ram = "1GiB"
memcg_limit = "8MiB"
[kernel]
page_cluster = 0
[[swap]]
device = "nvme"
size = "64MiB"
[[task]]
name = "s"
[[task.mapping]]
name = "m"
kind = "anon"
size = "16MiB"
[[task.phase]]
mapping = "m"
pattern = "sequential"
write_ratio = 1.0
[[task.phase]]
mapping = "m"
pattern = "sequential"
write_ratio = 0.0
"#;

/// (elapsed ns, major faults) with the given `costs.KEY=VALUE` settings.
fn swapin_run(sets: &[&str]) -> (u64, u64) {
    let r = load(SWAPIN, sets);
    let (_, res) = run_resolved(&r);
    (res.tasks[0].elapsed_ns, res.tasks[0].major_faults)
}

#[test]
fn a_swap_in_charges_the_major_fault_cpu_once_and_a_cache_hit_for_its_retry() {
    let (cheap, majors) = swapin_run(&["costs.major_fault_cpu_ns=2000", "costs.cache_hit_fault_ns=600"]);
    assert!(majors > 1000, "the read pass swaps in ({majors} major faults)");
    let (dear_major, m2) = swapin_run(&["costs.major_fault_cpu_ns=12000", "costs.cache_hit_fault_ns=600"]);
    assert_eq!(m2, majors);
    // Within 1%: a few faults may meet their page under writeback instead, at another time.
    let per_fault = (dear_major - cheap) as f64 / majors as f64;
    assert!((per_fault - 10_000.0).abs() < 100.0, "major_fault_cpu_ns is paid once per major fault: {per_fault:.0} ns per 10,000 ns added");
    let (dear_hit, m3) = swapin_run(&["costs.major_fault_cpu_ns=2000", "costs.cache_hit_fault_ns=1600"]);
    assert_eq!(m3, majors);
    let per_fault = (dear_hit - cheap) as f64 / majors as f64;
    assert!((per_fault - 1_000.0).abs() < 10.0, "the retry after the read pays one cache hit: {per_fault:.0} ns per 1,000 ns added");
}
