//! `pattern = "hpl"` (workload/hpl.rs): HPL ranks as task instances, run through the whole
//! simulator. Guards the touch stream's bookkeeping (every rank does what it counted, within
//! the mapping HPL allocates), the cost model (the factorisation's flops at the CPU rate set
//! the run's length when nothing swaps) and what seed 000's Linpack table rests on: a matrix
//! bigger than RAM is swapped out by the factorisation and read back in address order by the
//! residual check, which VMA readahead follows.

mod common;
use common::*;
use swaplab_core::workload::hpl::Rank;

/// The machine both fixtures run on: 4 CPUs, 60 MiB for the program, NVMe swap.
const MACHINE: &str = r#"
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
"#;

/// 4 ranks on a 2 x 2 grid, N = 2,048 in blocks of 64: [A | b] is 32 MiB in all.
fn hpl() -> String {
    format!("{MACHINE}{HPL_TASK}")
}

const HPL_TASK: &str = r#"
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
    let res = run_checked(&hpl(), &[]);
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
    let cluster = run_checked(&hpl(), &[small[0], "kernel.readahead=\"adaptive\"", "kernel.vma_ra_enabled=false"]);
    let vma = run_checked(&hpl(), &[small[0], "kernel.readahead=\"vma\"", "kernel.vma_ra_enabled=true"]);
    for (what, r) in [("cluster", &cluster), ("vma", &vma)] {
        assert!(v(r, "pswpout") > 0 && v(r, "pswpin") > 0, "{what}: 32 MiB of matrix in 28 MiB must swap");
    }
    let hit = |r: &swaplab_core::stats::result::SimResult| v(r, "swap_ra_hit") as f64 / v(r, "swap_ra").max(1) as f64;
    assert!(hit(&vma) > 0.9, "VMA readahead along columns read in address order: hit ratio {}", hit(&vma));
}

/// The Intel Optimized LINPACK Benchmark's shape: one process of 4 threads factoring one
/// N = 2,048 matrix (32 MiB) shared by all of them, 64-column blocks dealt round-robin.
fn linpack() -> String {
    format!("{MACHINE}{LINPACK_TASK}")
}

const LINPACK_TASK: &str = r#"
[[task]]
name = "xlinpack"
instances = 4
threads = true
[[task.mapping]]
name = "matrix"
kind = "anon"
shared = true
[[task.phase]]
mapping = "matrix"
pattern = "linpack"
n = 2048
nb = 64
"#;

#[test]
fn linpack_threads_do_their_counted_touches_in_one_shared_matrix() {
    let res = run_checked(&linpack(), &[]);
    let expected: u64 = (0..4).map(|t| Rank::shared(2048, 64, 4, t).touches()).sum();
    assert_eq!(total_touches(&res), expected);
    assert_eq!(v(&res, "pswpout"), 0, "32 MiB of matrix in 60 MiB of RAM");
    // The matrix's 8,192 pages are each first written once, by the thread owning its column.
    let faults: u64 = res.tasks.iter().map(|t| t.minor_faults + t.major_faults).sum();
    assert_eq!(faults, 2048 * 2048 * 8 / 4096);
    // The LU's flops shared by 4 threads set the length of the run.
    let lu_s = 2.0 / 3.0 * 2048f64.powi(3) / 4.0 / 15.2e9;
    assert!(res.summary.elapsed_s > lu_s && res.summary.elapsed_s < 1.6 * lu_s, "elapsed {} s vs the LU's {lu_s} s per thread", res.summary.elapsed_s);
}

#[test]
fn linpack_needs_threads_and_a_shared_anonymous_matrix() {
    let err = |text: &str| swaplab_core::config::load(text, "l.toml", &[]).err().map(|e| e.to_string()).unwrap_or_default();
    let no_threads = linpack().replace("threads = true\n", "");
    assert!(err(&no_threads).contains("threads"), "{}", err(&no_threads));
    let private = linpack().replace("shared = true\n", "");
    assert!(err(&private).contains("shared = true"), "{}", err(&private));
    let shared_process = no_threads.replace("pattern = \"linpack\"\nn = 2048\nnb = 64", "pattern = \"sequential\"");
    assert!(err(&shared_process).contains("`shared` is for anonymous mappings of a task of threads"), "{}", err(&shared_process));
    let grid = linpack().replace("nb = 64", "nb = 64\ngrid = [2, 2]");
    assert!(err(&grid).contains("no process grid"), "{}", err(&grid));
}

#[test]
fn a_matrix_ending_inside_a_page_is_mapped_to_the_end_of_that_page() {
    // 1,001^2 doubles end 3,464 bytes into a page: the mapping holds that page (the run
    // panicked on it at N = 69,511).
    let res = run_checked(&linpack().replace("n = 2048", "n = 1001"), &[]);
    let expected: u64 = (0..4).map(|t| Rank::shared(1001, 64, 4, t).touches()).sum();
    assert_eq!(total_touches(&res), expected);
}
