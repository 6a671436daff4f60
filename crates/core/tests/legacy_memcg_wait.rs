//! Legacy memory-cgroup reclaim waits on its own writes (kernel-algorithms.md §3.10 step 3(c)):
//! a memcg without dirty throttling of its own — any memcg in 3.11–4.1, a cgroup v1 memcg since
//! 4.2 (`sane_reclaim`, later `writeback_throttling_sane`) — meets the folios it sent to swap
//! again, still under writeback and marked PG_reclaim, and sleeps in `folio_wait_writeback`
//! until each write ends instead of cycling over them. Global reclaim, kswapd and cgroup v2
//! take case (b): mark, count `nr_writeback`, move on.

mod common;
use common::{load, run_resolved, v};

/// One writer over twice its memory cgroup, swapping to a disk slow enough that reclaim comes
/// round to its own writes before they end.
const WRITER: &str = r#"
name = "t"
seed = 1
[machine]
cpus = 1
ram = "1GiB"
memcg_limit = "48MiB"
[[swap]]
device = "hdd"
size = "256MiB"
[[task]]
name = "w"
[[task.mapping]]
name = "m"
kind = "anon"
size = "96MiB"
[[task.phase]]
mapping = "m"
pattern = "sequential"
write_ratio = 1.0
"#;

/// (folio writeback waits, pgscan_anon, oom kills) of the writer in `profile` under cgroup
/// `version`.
fn writer(profile: &str, version: u32) -> (u64, u64, u64) {
    let r = load(WRITER, &[&format!("kernel.profile=\"{profile}\""), &format!("machine.cgroup_version={version}")]);
    let (sim, res) = run_resolved(&r);
    (sim.reclaim.folio_writeback_waits, v(&res, "pgscan_anon"), v(&res, "oom_kill"))
}

#[test]
fn a_cgroup_v1_memcg_waits_for_its_own_writes_where_a_v2_memcg_moves_on() {
    for profile in ["4.14", "6.x"] {
        let (waits_v1, scanned_v1, oom_v1) = writer(profile, 1);
        let (waits_v2, scanned_v2, oom_v2) = writer(profile, 2);
        assert!(waits_v1 > 0, "{profile}: a v1 memcg reclaimer never waited on its own writes");
        assert_eq!(oom_v1, 0, "{profile}: waiting for its writes, the v1 writer completes");
        assert_eq!(waits_v2, 0, "{profile}: cgroup v2 has dirty throttling and takes case (b)");
        // v2 cycles over its writes in flight: it scans more, or (6.x, whose allocator no
        // longer sleeps either) runs out of retries before they end.
        assert!(oom_v2 > 0 || scanned_v1 < scanned_v2, "{profile}: v1 {scanned_v1} scanned, v2 {scanned_v2}");
    }
}

#[test]
fn every_memcg_waits_in_3_14_and_none_in_2_6_28() {
    assert!(writer("3.14", 2).0 > 0, "3.14: !global_reclaim(sc) waits whatever the hierarchy");
    assert_eq!(writer("2.6.28", 1).0, 0, "2.6.28 waited only in lumpy reclaim's synchronous mode");
}
