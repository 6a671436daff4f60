//! 5.15-5.17's memory cgroup statistics flush in the classic LRU's refault path
//! (reclaim/rstat_flush.rs): the "5.17" profile's refaults flush once enough updates are
//! pending and the flushing task pays for it; 5.15 flushes at every refault a flush in
//! progress does not skip; 6.1 and MGLRU do not flush there. The classic `shrink_node`'s
//! flush (5.15-6.1) is paid by the reclaimer; MGLRU's reclaim never flushes.

mod common;
use common::*;
use swaplab_core::stats::result::SimResult;

fn flush_ns(res: &SimResult) -> u64 {
    (res.summary.memcg_refault_flush_s * 1e9).round() as u64
}

#[test]
fn a_5_17_classic_refault_flushes_the_memcg_statistics_and_the_reader_pays_for_it() {
    let res = run_checked(&file_readers(8, 8, None), &[]);
    let refaults = v(&res, "workingset_refault_file");
    let flushes = res.summary.memcg_refault_flushes;
    assert!(refaults > 10_000, "16 MiB of files read at random in a 4 MiB memcg refault: {refaults}");
    // A flush per (8 online CPUs + 1) x 33 units at most: several units per page turned over.
    assert!(flushes > 0 && flushes < refaults / 10, "{flushes} flushes for {refaults} refaults");
    // Each flush walks the 8 CPUs, at most 4.5 us each, at least 200 ns each.
    assert!(flush_ns(&res) <= flushes * 8 * 4_500 && flush_ns(&res) >= flushes * 8 * 200, "{} ns for {flushes} flushes", flush_ns(&res));
    // Readers on the CPUs the flush walks spin on their CPU's rstat lock.
    assert!(res.summary.memcg_rstat_updater_spin_s > 0.0, "8 readers updating statistics while a flush holds their CPUs' locks");
    // The flushing readers' time is the flush's: without its cost they read more.
    let free = run_checked(&file_readers(8, 8, None), &["costs.memcg_rstat_flush_cpu_ns=0", "costs.memcg_rstat_flush_idle_cpu_ns=0"]);
    assert_eq!((flush_ns(&free), free.summary.memcg_rstat_updater_spin_s), (0, 0.0));
    assert!(total_touches(&free) > total_touches(&res), "reads with free flushes {} <= with costed ones {}", total_touches(&free), total_touches(&res));
}

#[test]
fn more_online_cpus_than_the_workload_runs_on_raise_the_threshold_and_the_walk() {
    let eight = run_checked(&file_readers(8, 8, None), &[]);
    let wide = run_checked(&file_readers(8, 8, None), &["machine.online_cpus=64"]);
    let per = |r: &SimResult| v(r, "workingset_refault_file") as f64 / r.summary.memcg_refault_flushes as f64;
    assert!(per(&wide) > 4.0 * per(&eight), "refaults per flush: {:.1} with 64 online CPUs, {:.1} with 8", per(&wide), per(&eight));
    // The 56 CPUs that run nothing cost the idle rate each.
    assert!(flush_ns(&wide) >= wide.summary.memcg_refault_flushes * 56 * 200);
}

#[test]
fn the_5_15_refault_flushes_every_time_unless_another_cpu_is_flushing() {
    // Two CPUs: 5.17 waits for 3 x 33 units, more than a 9 us flush lets through.
    let r15 = run_checked(&file_readers(2, 8, None), &["kernel.profile=\"5.15\""]);
    let r17 = run_checked(&file_readers(2, 8, None), &[]);
    assert!(r15.summary.memcg_refault_flushes > 2 * r17.summary.memcg_refault_flushes, "5.15 {} flushes, 5.17 {}", r15.summary.memcg_refault_flushes, r17.summary.memcg_refault_flushes);
    // Eight: a flush walks 8 CPUs while the 7 others refault, and they skip it.
    let r15 = run_checked(&file_readers(8, 8, None), &["kernel.profile=\"5.15\""]);
    assert!(r15.summary.memcg_refault_flush_skipped > r15.summary.memcg_refault_flushes, "{} skipped, {} flushed", r15.summary.memcg_refault_flush_skipped, r15.summary.memcg_refault_flushes);
}

#[test]
fn neither_6_1_nor_mglru_flushes_in_the_refault() {
    for ov in [["kernel.profile=\"6.1\"", "kernel.reclaim=\"classic\""], ["kernel.profile=\"6.1\"", "kernel.reclaim=\"mglru\""], ["kernel.profile=\"5.18\"", "kernel.reclaim=\"classic\""]] {
        let res = run_checked(&file_readers(8, 8, None), &ov);
        assert!(v(&res, "workingset_refault_file") > 1_000, "{ov:?}: {}", v(&res, "workingset_refault_file"));
        assert_eq!((res.summary.memcg_refault_flushes, flush_ns(&res)), (0, 0), "{ov:?}");
    }
    // Without the classic shrink_node's flush (MGLRU; 6.2+) nothing holds a CPU's rstat lock.
    let res = run_checked(&file_readers(8, 8, None), &["kernel.profile=\"6.1\"", "kernel.reclaim=\"mglru\""]);
    assert_eq!(res.summary.memcg_rstat_updater_spin_s, 0.0);
}

fn reclaim_flush_ns(res: &SimResult) -> u64 {
    (res.summary.memcg_reclaim_flush_s * 1e9).round() as u64
}

fn memcg_flush_category_ns(res: &SimResult) -> u64 {
    let by = |c: &swaplab_core::stats::CpuCost| c.get(swaplab_core::stats::CpuCategory::MemcgFlush);
    by(&res.kswapd_cpu_by_category) + by(&res.direct_reclaim_cpu_by_category)
}

/// 5.13+'s `shrink_node` begins with `mem_cgroup_flush_stats()`; 5.16-6.1 flush there once the
/// updates pass the threshold, the reclaimer paying for the walk (its `memcg_flush` CPU).
/// MGLRU's reclaim never reaches the call, and 6.2+ is not modelled: neither flushes there.
#[test]
fn the_classic_shrink_node_flushes_the_memcg_statistics_from_5_15_to_6_1_and_mglru_never() {
    for profile in ["5.17", "6.1"] {
        let res = run_checked(&file_readers(8, 8, None), &[&format!("kernel.profile=\"{profile}\"")]);
        let flushes = res.summary.memcg_reclaim_flushes;
        assert!(flushes > 0, "{profile}: memcg reclaim of 8 readers flushed {flushes} times in shrink_node");
        assert_eq!(memcg_flush_category_ns(&res), reclaim_flush_ns(&res), "{profile}: the flushes' CPU is the reclaimers' memcg_flush");
        // A flush walks 8 CPUs, each at most 4.5 us and at least 200 ns.
        assert!(reclaim_flush_ns(&res) <= flushes * 8 * 4_500 && reclaim_flush_ns(&res) >= flushes * 8 * 200, "{profile}: {} ns for {flushes}", reclaim_flush_ns(&res));
        let free = run_checked(&file_readers(8, 8, None), &[&format!("kernel.profile=\"{profile}\""), "costs.memcg_rstat_flush_cpu_ns=0", "costs.memcg_rstat_flush_idle_cpu_ns=0"]);
        assert_eq!(memcg_flush_category_ns(&free), 0, "{profile}");
        assert!(total_touches(&free) > total_touches(&res), "{profile}: reads with free flushes {} <= with costed ones {}", total_touches(&free), total_touches(&res));
    }
    for ov in [["kernel.profile=\"6.1\"", "kernel.reclaim=\"mglru\""], ["kernel.profile=\"6.2\"", "kernel.reclaim=\"classic\""]] {
        let res = run_checked(&file_readers(8, 8, None), &ov);
        assert!(v(&res, "workingset_refault_file") > 1_000, "{ov:?} reclaims and refaults");
        assert_eq!((res.summary.memcg_reclaim_flushes, memcg_flush_category_ns(&res)), (0, 0), "{ov:?}");
    }
}

#[test]
fn mglru_is_refused_on_a_5_x_profile() {
    let err = swaplab_core::config::load(&file_readers(2, 2, None), "t.toml", &["kernel.reclaim=\"mglru\"".to_string()]).expect_err("MGLRU on 5.17 must be refused");
    assert!(err.to_string().contains("MGLRU was merged in 6.1"), "{err}");
}
