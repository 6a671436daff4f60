//! vm-scalability's usemem checks, on every pass after its first, the word it is about to
//! overwrite (`do_rw_once`, "verify last write"): `verify = true` on a write phase. A swapped-out
//! page then takes a read fault, which swaps it in and maps it read-only on 4.14 (do_swap_page
//! maps with vm_page_prot; only a write fault that may reuse the page maps it writable), and the
//! store a write-protect fault that reuses it (do_wp_page → reuse_swap_page). From 6.11 a read
//! fault maps an exclusive page writable, so the store faults no more. kernel-algorithms.md §1.1.

mod common;
use common::run_checked;
use swaplab_core::stats::result::SimResult;

/// One task writes 16 MiB twice in order in an 8 MiB memory cgroup: the first pass swaps out,
/// the second swaps every page back in (page-cluster 0: one major fault per page).
fn usemem(profile: &str, verify: bool, swap: &str) -> String {
    format!(
        r#"
name = "usemem"
seed = 1
[machine]
cpus = 1
ram = "1GiB"
memcg_limit = "8MiB"
[kernel]
profile = "{profile}"
page_cluster = 0
[[swap]]
device = "nvme"
size = "{swap}"
[[task]]
name = "u"
[[task.mapping]]
name = "m"
kind = "anon"
size = "16MiB"
[[task.phase]]
mapping = "m"
pattern = "sequential"
cycles = 2
write_ratio = 1.0
verify = {verify}
"#
    )
}

/// Run to the end; every invariant and counter relation must hold.
fn run(text: &str) -> SimResult {
    run_checked(text, &[])
}

#[test]
fn a_usemem_pass_after_the_first_takes_a_read_fault_and_a_write_protect_fault_per_swapped_page() {
    // 64 MiB of swap: never half full, so the read fault keeps the slot and the store frees it.
    let plain = run(&usemem("4.14", false, "64MiB"));
    let checked = run(&usemem("4.14", true, "64MiB"));
    let (p, c) = (&plain.tasks[0], &checked.tasks[0]);
    assert!(c.major_faults > 2000, "the second pass swaps in ({} major faults)", c.major_faults);
    assert_eq!(c.touches, p.touches, "a checked store is one touch");
    assert_eq!(c.verify_errors, 0, "every page came back with the first pass's data");
    // Every swapped-in page of the second pass adds one minor (write-protect) fault.
    let extra = c.minor_faults as i64 - p.minor_faults as i64;
    let majors = c.major_faults as i64;
    assert!((extra - majors).abs() * 100 <= majors, "one write-protect fault per read swap-in: {extra} extra minor faults for {majors} swap-ins");
    // The store still reuses the page and frees its slot: nothing is left in swap but what
    // reclaim wrote out again.
    assert!(checked.vmstat["pswpout"] <= plain.vmstat["pswpout"] * 101 / 100, "the store frees the slot as a write fault would");
}

#[test]
fn a_read_swap_in_maps_read_only_before_6_11_even_when_swap_is_half_full_but_writable_from_6_11() {
    // 12 MiB of swap for 8+ MiB swapped out: vm_swap_full, so the read fault frees the slot.
    for (profile, wp_faults) in [("4.14", true), ("6.10", true), ("6.11", false), ("6.x", false)] {
        let plain = run(&usemem(profile, false, "12MiB"));
        let checked = run(&usemem(profile, true, "12MiB"));
        let (p, c) = (&plain.tasks[0], &checked.tasks[0]);
        assert!(c.major_faults > 1000, "{profile}: the second pass swaps in ({})", c.major_faults);
        let extra = c.minor_faults as i64 - p.minor_faults as i64;
        let majors = c.major_faults as i64;
        if wp_faults {
            assert!((extra - majors).abs() * 100 <= majors, "{profile}: the store faults on the read-only page: {extra} extra for {majors} swap-ins");
        } else {
            assert!(extra.abs() * 100 <= majors, "{profile}: the read fault mapped the freed page writable: {extra} extra for {majors} swap-ins");
        }
    }
}
