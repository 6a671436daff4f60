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

/// (read pass CPU ns, major faults, pages swapped in) with the given settings.
fn read_pass_cpu(sets: &[&str]) -> (u64, u64, u64) {
    let r = load(SWAPIN, sets);
    let (_, res) = run_resolved(&r);
    (res.tasks[0].phase_cpu_ns[1], res.tasks[0].major_faults, res.vmstat["pswpin"])
}

/// Guards the swap-in's own figure: set, it replaces a file major fault's for swap-ins (a
/// swap-in has no file system and no syscall), and every major swap-in pays it once.
#[test]
fn a_swap_in_pays_swapin_fault_cpu_when_it_is_set_not_the_file_fault_figure() {
    let base = ["costs.major_fault_cpu_ns=30000", "costs.read_submit_cpu_ns=20000"];
    let (unset, majors, _) = read_pass_cpu(&base);
    let (same, m2, _) = read_pass_cpu(&[base[0], base[1], "costs.swapin_fault_cpu_ns=10000"]);
    assert_eq!((same, m2), (unset, majors), "unset means the file major fault's figure less its submission (10,000 ns)");
    let (own, m3, _) = read_pass_cpu(&[base[0], base[1], "costs.swapin_fault_cpu_ns=4000"]);
    assert_eq!(m3, majors);
    let per_fault = (unset - own) as f64 / majors as f64;
    assert!((per_fault - 6_000.0).abs() < 60.0, "6,000 ns less per major swap-in: {per_fault:.0}");
}

/// Guards the per-page work of a swap-cache read: with readahead, each page read pays it,
/// the readahead pages as well as the target (the 8-page window's seven others were free).
#[test]
fn every_page_read_through_the_swap_cache_pays_swapin_page_cpu_readahead_pages_too() {
    let pc3 = "kernel.page_cluster=3";
    let (free, majors, pswpin) = read_pass_cpu(&[pc3]);
    assert!(pswpin >= 4 * majors, "page-cluster 3 reads ahead: {pswpin} pages in {majors} faults");
    let (dear, m2, p2) = read_pass_cpu(&[pc3, "costs.swapin_page_cpu_ns=2000"]);
    assert_eq!((m2, p2), (majors, pswpin));
    let read_pass_pages = pswpin as f64;
    let per_page = (dear - free) as f64 / read_pass_pages;
    assert!((per_page - 2_000.0).abs() < 100.0, "2,000 ns per page swapped in: {per_page:.0}");
}
