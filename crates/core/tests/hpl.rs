//! `pattern = "hpl"` (workload/hpl.rs): HPL ranks as task instances, run through the whole
//! simulator. Guards the touch stream's bookkeeping (every rank does what it counted, within
//! the mapping HPL allocates), the cost model (the factorisation's flops at the CPU rate set
//! the run's length when nothing swaps) and what seed 000's Linpack table rests on: a matrix
//! bigger than RAM is swapped out by the factorisation and read back in address order by the
//! residual check, which VMA readahead follows.

mod common;
use common::*;
use swaplab_core::workload::hpl::Rank;

/// 4 ranks on a 2 x 2 grid, N = 2,048 in blocks of 64: [A | b] is 32 MiB in all.
const HPL: &str = r#"
name = "hpl"
seed = 1

[machine]
cpus = 4
ram = "64MiB"
kernel_reserved = "4MiB"

[kernel]
profile = "4.14"

[[swap]]
device = "nvme"
size = "128MiB"

[[task]]
name = "xhpl"
instances = 4
[[task.mapping]]
name = "matrix"
kind = "anon"
[[task.phase]]
mapping = "matrix"
pattern = "hpl"
n = 2048
nb = 64
grid = [2, 2]
"#;

#[test]
fn every_rank_touches_its_counted_pages_and_a_fitting_matrix_never_swaps() {
    let res = run_checked(HPL, &[]);
    let expected: u64 = (0..4).map(|r| Rank::new(2048, 64, 2, 2, r).touches()).sum();
    assert_eq!(total_touches(&res), expected);
    assert_eq!(v(&res, "pswpout"), 0, "32 MiB of matrix in 60 MiB of RAM");
    // Each rank's CPU is its flops at 15.2 GFLOPS: ~2/3 N^3 / 4 ranks for the LU alone.
    let lu_s = 2.0 / 3.0 * 2048f64.powi(3) / 4.0 / 15.2e9;
    assert!(res.summary.elapsed_s > lu_s && res.summary.elapsed_s < 1.5 * lu_s, "elapsed {} s vs the LU's {lu_s} s per rank", res.summary.elapsed_s);
}

#[test]
fn a_matrix_bigger_than_ram_swaps_and_vma_readahead_follows_the_residual_check() {
    let small = ["machine.ram=\"32MiB\""];
    let cluster = run_checked(HPL, &[small[0], "kernel.readahead=\"adaptive\"", "kernel.vma_ra_enabled=false"]);
    let vma = run_checked(HPL, &[small[0], "kernel.readahead=\"vma\"", "kernel.vma_ra_enabled=true"]);
    for (what, r) in [("cluster", &cluster), ("vma", &vma)] {
        assert!(v(r, "pswpout") > 0 && v(r, "pswpin") > 0, "{what}: 32 MiB of matrix in 28 MiB must swap");
    }
    let hit = |r: &swaplab_core::stats::result::SimResult| v(r, "swap_ra_hit") as f64 / v(r, "swap_ra").max(1) as f64;
    assert!(hit(&vma) > 0.9, "VMA readahead along columns read in address order: hit ratio {}", hit(&vma));
}
