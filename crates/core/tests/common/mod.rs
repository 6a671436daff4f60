//! Shared helpers of the integration tests: a small workload builder, a checked run, and the
//! counter relations every finished run must satisfy (kernel-algorithms.md §1.4, §7).
#![allow(dead_code)]

use swaplab_core::config::{self, Resolved};
use swaplab_core::engine::Sim;
use swaplab_core::stats::result::SimResult;

/// One task with one mapping and one phase on a small machine: 32 MiB of RAM of which 4 MiB
/// is the kernel's, 64 MiB of NVMe swap, a 40 MiB anonymous mapping written sequentially three
/// times. Every knob is changed by `--set`-style overrides.
pub const BASE: &str = r#"
name = "test"
seed = 7

[machine]
cpus = 1
ram = "32MiB"
kernel_reserved = "4MiB"

[kernel]
profile = "6.x"

[[swap]]
device = "nvme"
size = "64MiB"

[[task]]
name = "t"
[[task.mapping]]
name = "m"
kind = "anon"
size = "40MiB"
[[task.phase]]
mapping = "m"
pattern = "sequential"
cycles = 3
"#;

/// `BASE` without its [[swap]] table.
pub fn no_swap(text: &str) -> String {
    let start = text.find("[[swap]]").expect("has a swap table");
    let end = start + text[start..].find("[[task]]").expect("task after swap");
    format!("{}{}", &text[..start], &text[end..])
}

/// A workload of `ntasks` tasks, each with one mapping of `size` and one phase.
#[allow(clippy::too_many_arguments)] // the test helper spells out every dimension a test varies
pub fn multi_task(ntasks: usize, cpus: u32, ram: &str, swap: Option<(&str, &str)>, kind: &str, size: &str, pattern: &str, cycles: f64) -> String {
    let mut s = format!("name = \"multi\"\nseed = 3\n[machine]\ncpus = {cpus}\nram = \"{ram}\"\nkernel_reserved = \"4MiB\"\n");
    if let Some((dev, sz)) = swap {
        s += &format!("[[swap]]\ndevice = \"{dev}\"\nsize = \"{sz}\"\n");
    }
    for i in 0..ntasks {
        s += &format!(
            "[[task]]\nname = \"t{i}\"\n[[task.mapping]]\nname = \"m\"\nkind = \"{kind}\"\nsize = \"{size}\"\n[[task.phase]]\nmapping = \"m\"\npattern = \"{pattern}\"\ncycles = {cycles:?}\n"
        );
    }
    s
}

pub fn load(toml: &str, overrides: &[&str]) -> Resolved {
    let ov: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    config::load(toml, "test.toml", &ov).unwrap_or_else(|e| panic!("workload does not load ({overrides:?}): {e}"))
}

/// Run a resolved configuration to the end; return the simulator (for invariants) and the result.
pub fn run_resolved(r: &Resolved) -> (Sim, SimResult) {
    let mut sim = Sim::new(r);
    sim.run(&mut |_| true);
    let res = sim.result();
    (sim, res)
}

/// Run a workload, assert that every invariant of the memory model holds at the end and that
/// the counters are consistent with each other, and return the result.
pub fn run_checked(toml: &str, overrides: &[&str]) -> SimResult {
    let r = load(toml, overrides);
    let (sim, res) = run_resolved(&r);
    let errs = sim.check_invariants();
    assert!(errs.is_empty(), "invariants broken after run with {overrides:?}:\n  {}", errs.join("\n  "));
    check_relations(&res, &r, &format!("{overrides:?}"));
    res
}

pub fn v(res: &SimResult, name: &str) -> u64 {
    *res.vmstat.get(name).unwrap_or_else(|| panic!("no vmstat counter {name}"))
}

/// Relations between counters that follow from their kernel meaning (§1.4, §7.1) and hold for
/// every run, whatever the workload.
pub fn check_relations(res: &SimResult, r: &Resolved, what: &str) {
    let g = |n: &str| v(res, n);
    assert!(!res.interrupted, "{what}: run was interrupted");
    assert!(g("pgmajfault") <= g("pgfault"), "{what}: pgmajfault {} > pgfault {}", g("pgmajfault"), g("pgfault"));
    // Every fault is a touch of some task: the per-task counts (completed faults) add up to the
    // global ones, which also count a swap-in attempt whose page was reclaimed before it was
    // mapped (one such attempt per extra read).
    let major: u64 = res.tasks.iter().map(|t| t.major_faults).sum();
    let minor: u64 = res.tasks.iter().map(|t| t.minor_faults).sum();
    assert!(major + minor <= g("pgfault"), "{what}: per-task faults > pgfault");
    let retried = g("pgfault") - (major + minor);
    assert_eq!(major + retried, g("pgmajfault"), "{what}: per-task major faults + re-read attempts != pgmajfault");
    for t in &res.tasks {
        // At most two faults per touch: a checked store (usemem's verify of its last pass)
        // swaps its page in with a read fault and then takes a write-protect fault.
        assert!(t.major_faults + t.minor_faults <= 2 * t.touches, "{what}: task {} has {} faults but {} touches", t.name, t.major_faults + t.minor_faults, t.touches);
        assert!(t.end_ns >= t.start_ns, "{what}: task {} ends before it starts", t.name);
    }
    // Readahead pages are pages read from swap: swap_ra counts the non-target ones. With a
    // fronting store some come from the store (zswap and the zero map, or frontswap's loads).
    let store_loads = res.vmstat.get("zswpin").copied().unwrap_or(0) + res.vmstat.get("swpin_zero").copied().unwrap_or(0) + res.store.as_ref().and_then(|s| s.debugfs.get("loads").copied()).unwrap_or(0);
    assert!(g("swap_ra") <= g("pswpin") + store_loads, "{what}: swap_ra {} > pswpin {} + store loads {store_loads}", g("swap_ra"), g("pswpin"));
    // Before 6.x PG_readahead aliases PG_reclaim, so a page marked for immediate reclaim that
    // is faulted counts as a hit too: only the modern profile bounds hits by readahead pages.
    if r.profile >= config::Profile::V6 {
        assert!(g("swap_ra_hit") <= g("swap_ra"), "{what}: swap_ra_hit {} > swap_ra {}", g("swap_ra_hit"), g("swap_ra"));
    }
    // pgpgin/pgpgout are KiB of all block I/O, swap included.
    assert!(g("pgpgin") >= 4 * g("pswpin"), "{what}: pgpgin {} < 4 x pswpin {}", g("pgpgin"), g("pswpin"));
    assert!(g("pgpgout") >= 4 * g("pswpout"), "{what}: pgpgout {} < 4 x pswpout {}", g("pgpgout"), g("pswpout"));
    assert!(g("pgsteal_kswapd") <= g("pgscan_kswapd") && g("pgsteal_direct") <= g("pgscan_direct"), "{what}: pgsteal > pgscan");
    assert!(g("pgsteal_anon") <= g("pgscan_anon") && g("pgsteal_file") <= g("pgscan_file"), "{what}: pgsteal by type > pgscan by type");
    assert!(g("allocstall_normal") <= g("allocstall") || g("allocstall") == 0, "{what}: allocstall_normal > allocstall");
    assert!(g("pgfree") <= g("pgalloc_normal"), "{what}: more pages freed than allocated");
    if r.swap_devices.is_empty() {
        for n in ["pswpin", "pswpout", "swap_ra", "swap_ra_hit", "workingset_refault_anon"] {
            assert_eq!(g(n), 0, "{what}: no swap device but {n} = {}", g(n));
        }
    }
    // OOM kills are reported as events, one per kill.
    let kills = res.events.iter().filter(|e| e.kind == "oom_kill").count() as u64;
    assert_eq!(kills, g("oom_kill"), "{what}: {kills} oom_kill events but oom_kill = {}", g("oom_kill"));
    assert_eq!(res.tasks.iter().filter(|t| t.oom_killed).count() as u64, g("oom_kill"), "{what}: oom_killed tasks != oom_kill");
    // pswpin/pswpout count at submission, the devices at completion: I/O still in flight when
    // the last task exits is counted only by vmstat.
    let dev_read: u64 = res.devices.iter().filter(|d| d.role == "swap").map(|d| d.pages_read).sum();
    let dev_written: u64 = res.devices.iter().filter(|d| d.role == "swap").map(|d| d.pages_written).sum();
    assert!(dev_read <= g("pswpin"), "{what}: swap devices read {dev_read} pages but pswpin = {}", g("pswpin"));
    assert!(dev_written <= g("pswpout"), "{what}: swap devices wrote {dev_written} pages but pswpout = {}", g("pswpout"));
    assert!(g("pswpout") == 0 || dev_written > 0, "{what}: pswpout {} but no device wrote anything", g("pswpout"));
}

pub fn total_touches(res: &SimResult) -> u64 {
    res.tasks.iter().map(|t| t.touches).sum()
}

pub const MIB_PAGES: u64 = 256;

/// `jobs` fio-like tasks on `cpus` CPUs, each reading its own 2 MiB file at random through
/// read() for 50 ms, in a 4 MiB memory cgroup at `path` (none: the default, a child of the
/// root): every read past the first few refaults.
pub fn file_readers(cpus: u32, jobs: u32, path: Option<&str>) -> String {
    let path = path.map_or(String::new(), |p| format!("memcg_path = \"{p}\"\n"));
    format!(
        "name = \"readers\"\nseed = 5\n[machine]\ncpus = {cpus}\nram = \"64MiB\"\nkernel_reserved = \"4MiB\"\nmemcg_limit = \"4MiB\"\n{path}file_device = \"ramdisk\"\n\
         [kernel]\nprofile = \"5.17\"\nreclaim = \"classic\"\n[[task]]\nname = \"fio\"\ninstances = {jobs}\ntime_limit = \"50ms\"\nrepeat = true\n\
         [[task.mapping]]\nname = \"file\"\nkind = \"file\"\nsize = \"2MiB\"\nadvice = \"random\"\n\
         [[task.phase]]\nmapping = \"file\"\npattern = \"random\"\naccess = \"syscall\"\nwrite_ratio = 0.0\n"
    )
}
