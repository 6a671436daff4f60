//! 2.6.28's `anon_vma->lock` (reclaim/anon_vma_lock.rs): reclaimers walking the one anon_vma
//! that forked workers share spin on it, the spin is charged to its category, and the eras
//! whose walks share the lock (3.9+ rwsem read side) or a machine of one CPU never spin.

mod common;
use common::*;
use swaplab_core::stats::CpuCategory as Cat;

/// A parent (computing 400 ms in 10 ms pieces: alive while the workers fork, sharing a CPU) and `workers` processes forked from it
/// (`fork_of`): each worker writes its copy
/// of the parent's 1 MiB "heap" over and over for 300 ms, so every worker page lives in the parent's
/// anon_vma (2.6.28) and the workers together need more than the machine has: they reclaim
/// each other's pages, many of them at once.
fn forked_workers(cpus: u32, workers: u32, profile: &str) -> String {
    format!(
        "name = \"forked\"\nseed = 2\n[machine]\ncpus = {cpus}\nram = \"24MiB\"\nkernel_reserved = \"4MiB\"\n\
         [kernel]\nprofile = \"{profile}\"\n[[swap]]\ndevice = \"nvme\"\nsize = \"128MiB\"\n\
         [[task]]\nname = \"parent\"\nbackground = true\n\
         [[task.mapping]]\nname = \"heap\"\nkind = \"anon\"\nsize = \"1MiB\"\n\
         [[task.mapping]]\nname = \"stack\"\nkind = \"anon\"\nsize = \"16KiB\"\n\
         [[task.phase]]\nmapping = \"stack\"\npattern = \"random\"\ntouches = 40\ncompute = \"10ms\"\n\
         [[task]]\nname = \"worker\"\ninstances = {workers}\nfork_of = \"parent\"\nrepeat = true\ntime_limit = \"300ms\"\n\
         [[task.phase]]\nmapping = \"heap\"\npattern = \"sequential\"\nwrite_ratio = 1.0\n"
    )
}

fn lock_category_ns(res: &swaplab_core::stats::result::SimResult) -> u64 {
    res.kswapd_cpu_by_category.get(Cat::AnonVmaLock) + res.direct_reclaim_cpu_by_category.get(Cat::AnonVmaLock)
}

#[test]
fn reclaimers_walking_one_forked_anon_vma_spin_on_its_lock_in_2_6_28_only() {
    let res = run_checked(&forked_workers(4, 24, "2.6.28"), &[]);
    let s = &res.summary;
    assert!(v(&res, "pswpout") > 0, "24 MiB of workers' pages in 20 MiB must swap");
    assert!(s.anon_vma_lock_acquisitions > 0 && s.anon_vma_lock_contended > 0, "{} acquisitions, {} contended: the reclaimers never met on the shared anon_vma", s.anon_vma_lock_acquisitions, s.anon_vma_lock_contended);
    // The reclaimers' spin is their anon_vma_lock CPU, to the rounding of the summary.
    let spin_ns = (s.anon_vma_lock_reclaim_spin_s * 1e9).round() as i64;
    assert!(spin_ns > 0 && (lock_category_ns(&res) as i64 - spin_ns).abs() <= 1, "category {} ns, spin {spin_ns} ns", lock_category_ns(&res));

    // 4.14 walks with the lock shared (anon_vma chains, rwsem read side): nothing taken.
    let shared = run_checked(&forked_workers(4, 24, "4.14"), &[]);
    assert!(v(&shared, "pswpout") > 0);
    assert_eq!((shared.summary.anon_vma_lock_acquisitions, lock_category_ns(&shared)), (0, 0), "4.14");

    // One CPU: a spinlock holder is never preempted, so nobody finds it held.
    let one = run_checked(&forked_workers(1, 24, "2.6.28"), &[]);
    assert!(v(&one, "pswpout") > 0, "one CPU: pswpout {} pgscan_direct {} touches {} elapsed {}", v(&one, "pswpout"), v(&one, "pgscan_direct"), total_touches(&one), one.summary.elapsed_s);
    assert_eq!((one.summary.anon_vma_lock_acquisitions, lock_category_ns(&one)), (0, 0), "one CPU");
}
