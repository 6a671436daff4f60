//! A task's touch latencies split by what each touch met (result `tasks[].touch_kinds`,
//! stats/touch_kinds.rs): every touch is filed once, the fault counters agree with the kinds,
//! and misses, hits and new pages sit where their costs put them.

mod common;
use common::run_checked;

/// usemem's verifying sequential writer (seed 000's sequential task) over 24 MiB in a 8 MiB
/// memory cgroup, three passes, with 4.14's VMA readahead on NVMe: the first pass allocates,
/// the later ones swap in one window of 8 pages per miss.
const USEMEM: &str = r#"
name = "touch-kinds"
seed = 1
[machine]
cpus = 2
ram = "1GiB"
memcg_limit = "8MiB"
[kernel]
profile = "4.14"
readahead = "vma"
vma_ra_enabled = true
[[swap]]
device = "nvme"
size = "256MiB"
[[task]]
name = "u"
[[task.mapping]]
name = "m"
kind = "anon"
size = "24MiB"
[[task.phase]]
mapping = "m"
pattern = "sequential"
cycles = 3
write_ratio = 1.0
verify = true
"#;

#[test]
fn every_touch_is_filed_under_one_kind_that_the_fault_counters_agree_with() {
    let res = run_checked(USEMEM, &[]);
    let t = &res.tasks[0];
    let k = &t.touch_kinds;
    let n = |name: &str| k.get(name).map_or(0, |s| s.touches);
    let filed: u64 = k.values().map(|s| s.touches).sum();
    assert_eq!(filed, t.touches, "each touch once: {k:?}");
    let pages = 24 * 256;
    // The first pass allocates every page; an allocation that reclaimed is filed there.
    assert!(n("new_page") <= pages && n("new_page") + n("direct_reclaim") >= pages, "{k:?}");
    assert!(n("direct_reclaim") > 0 && n("direct_reclaim") as f64 <= 0.05 * t.touches as f64, "the memory cgroup reclaims now and then: {k:?}");
    // Each major touch completed one major fault; the others reclaimed on the way.
    assert!(n("major") <= t.major_faults && n("major") + n("direct_reclaim") >= t.major_faults, "{k:?} against {}", t.major_faults);
    // Later passes: one miss per readahead window, the rest of the window hits.
    let hits = n("cache_hit") + n("cache_hit_waited");
    assert!(hits > 4 * n("major"), "VMA readahead's windows hit: {k:?}");
    let p50 = |name: &str| k[name].latency_ns.p50;
    assert!(p50("major") > 10 * p50("cache_hit"), "a miss waits for the device, a hit does not: {k:?}");
    assert!(k["new_page"].latency_ns.max < p50("major"), "a new page reads nothing: {k:?}");
}
