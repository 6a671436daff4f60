//! The LRU is one list every CPU adds to (`folio_add_lru`, kernel-algorithms.md §1.8), and its
//! order is the order reclaim takes pages and so the order of the swap slots reclaim allocates
//! (§2): two processes writing new pages at once interleave on the list, and so on the swap
//! device. The engine lets a CPU run ahead of the others by up to `sim.sync_quantum` (20 us);
//! a fault that allocates a page waits for its time (engine/user.rs
//! `fault_ahead_of_shared_state`), so the interleaving must not depend on how far a CPU may
//! run ahead. Before, a task 20 us ahead put ~10 new pages at a time on the list: each
//! process's slots came in runs which its read-back then read in 3.5 pages per request, where
//! in time order it read 1.2 (host-procs-mixed, docs/evidence/host-procs.md, Session 31).

mod common;
use common::run_checked;
use swaplab_core::stats::result::SimResult;

/// Two processes write their own 48 MiB in order at the same time, in a 64 MiB memory cgroup,
/// then read it back in order: page-cluster readahead reads the slots around each miss.
fn writers(quantum: &str) -> String {
    format!(
        r#"
name = "two-writers"
seed = 1
[machine]
cpus = 2
ram = "4GiB"
memcg_limit = "64MiB"
[sim]
sync_quantum = "{quantum}"
[[swap]]
device = "sata-ssd"
size = "1GiB"
[[task]]
name = "w"
instances = 2
[[task.mapping]]
name = "buf"
kind = "anon"
size = "48MiB"
[[task.phase]]
mapping = "buf"
pattern = "sequential"
write_ratio = 1.0
[[task.phase]]
mapping = "buf"
pattern = "sequential"
write_ratio = 0.0
"#
    )
}

/// Pages the swap device read per read request.
fn pages_per_read(r: &SimResult) -> f64 {
    let d = r.devices.iter().find(|d| d.role == "swap").expect("a swap device");
    assert!(d.reads > 1_000, "the read-back swapped in ({} reads)", d.reads);
    d.pages_read as f64 / d.reads as f64
}

#[test]
fn new_pages_reach_the_lru_in_time_order_however_far_a_cpu_runs_ahead() {
    let tight = run_checked(&writers("200ns"), &[]);
    let usual = run_checked(&writers("20us"), &[]);
    let (t, u) = (pages_per_read(&tight), pages_per_read(&usual));
    assert!(
        (t - u).abs() < 0.1 * t,
        "each process's slots are as contiguous with a 200 ns as with a 20 us run-ahead: {t:.2} vs {u:.2} pages per read request"
    );
    let (wt, wu) = (tight.vmstat["pswpout"] as f64, usual.vmstat["pswpout"] as f64);
    assert!((wt - wu).abs() < 0.02 * wt, "as many pages are written out whichever CPU runs ahead: {wt} vs {wu}");
}
