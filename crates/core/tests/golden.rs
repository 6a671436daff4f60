//! Golden counters: small fixed workloads whose full vmstat map and per-task touches / major /
//! minor faults are compared exactly with tests/golden/NAME.json. A change to the model that
//! moves a counter must update the files consciously:
//!
//!     SWAPLAB_BLESS=1 cargo test --release -p swaplab-core --test golden
//!
//! rewrites them; without it a mismatch fails and lists every counter that changed
//! (`name: expected -> got`). Review the diff of the JSON files before committing.

mod common;
use common::*;
use serde_json::{json, Value};
use std::path::PathBuf;

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests").join("golden")
}

fn blessing() -> bool {
    std::env::var("SWAPLAB_BLESS").is_ok_and(|v| !v.is_empty() && v != "0")
}

/// What a golden file holds for one run.
fn snapshot(name: &str, toml: &str, overrides: &[&str]) -> Value {
    let res = run_checked(toml, overrides);
    let tasks: Vec<Value> = res
        .tasks
        .iter()
        .map(|t| json!({"name": t.name, "instance": t.instance, "touches": t.touches, "major_faults": t.major_faults, "minor_faults": t.minor_faults, "oom_killed": t.oom_killed}))
        .collect();
    let mut snap = json!({
        "case": name,
        "overrides": overrides,
        "readahead": res.summary.readahead,
        "ra_hit_pct": res.summary.ra_hit_pct,
        "vmstat": res.vmstat,
        "tasks": tasks,
    });
    if let Some(store) = &res.store {
        snap["store"] = json!({"name": store.name, "pool_pages_max": store.pool_pages_max, "debugfs": store.debugfs});
    }
    let zram: Vec<Value> = res.devices.iter().filter_map(|d| d.zram.map(|z| json!(z))).collect();
    if !zram.is_empty() {
        snap["zram"] = json!(zram);
    }
    snap
}

/// Flatten a snapshot to `path -> scalar` for a readable diff.
fn flatten(prefix: &str, v: &Value, out: &mut std::collections::BTreeMap<String, String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                flatten(&p, x, out);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                flatten(&format!("{prefix}[{i}]"), x, out);
            }
        }
        other => {
            out.insert(prefix.to_string(), other.to_string());
        }
    }
}

fn diff(expected: &Value, got: &Value) -> Vec<String> {
    let (mut e, mut g) = Default::default();
    flatten("", expected, &mut e);
    flatten("", got, &mut g);
    let mut keys: Vec<&String> = e.keys().chain(g.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter_map(|k| match (e.get(k), g.get(k)) {
            (Some(a), Some(b)) if a == b => None,
            (a, b) => Some(format!("{k}: {} -> {}", a.map_or("(absent)", |s| s), b.map_or("(absent)", |s| s))),
        })
        .collect()
}

fn check_golden(name: &str, toml: &str, overrides: &[&str]) {
    let got = snapshot(name, toml, overrides);
    // Run twice: a golden test of a non-deterministic run would be meaningless.
    assert_eq!(got, snapshot(name, toml, overrides), "{name}: two runs differ");
    let path = golden_dir().join(format!("{name}.json"));
    let text = serde_json::to_string_pretty(&got).unwrap() + "\n";
    if blessing() {
        std::fs::create_dir_all(golden_dir()).unwrap();
        let old = std::fs::read_to_string(&path).ok();
        if old.as_deref() != Some(text.as_str()) {
            std::fs::write(&path, &text).unwrap();
            eprintln!("blessed {}", path.display());
        }
        return;
    }
    let stored = std::fs::read_to_string(&path).unwrap_or_else(|_| {
        panic!("{name}: no golden file {}; create it with SWAPLAB_BLESS=1 cargo test --release -p swaplab-core --test golden", path.display())
    });
    let expected: Value = serde_json::from_str(&stored).unwrap_or_else(|e| panic!("{}: not JSON: {e}", path.display()));
    let d = diff(&expected, &got);
    assert!(
        d.is_empty(),
        "golden {name} ({}) changed; {} value(s) (expected -> got):\n  {}\nIf the change is intended, re-bless: SWAPLAB_BLESS=1 cargo test --release -p swaplab-core --test golden",
        path.display(),
        d.len(),
        d.join("\n  ")
    );
}

/// A sequential (or random) swap load on NVMe, 40 MiB anon in 28 MiB, page-cluster 3.
fn ra(name: &str, policy: &str, pattern: &str, extra: &[&str]) {
    let p = format!("kernel.readahead={policy}");
    let q = format!("task.0.phase.0.pattern={pattern}");
    let mut ov = vec![p.as_str(), q.as_str()];
    ov.extend_from_slice(extra);
    check_golden(name, BASE, &ov);
}

macro_rules! golden {
    ($($test:ident => $body:expr;)*) => { $( #[test] fn $test() { $body } )* };
}

/// Direct reclaim under pressure: four random writers on four CPUs, 56 MiB in 36 MiB, on the
/// 2.6.28 kernel of seed 001 with the bail-out rule under test.
fn bailout(name: &str, policy: &str) {
    let text = multi_task(1, 4, "40MiB", Some(("sata-ssd", "96MiB")), "anon", "14MiB", "random", 2.0);
    let res = run_checked(&text, &["task.0.instances=4", "kernel.profile=\"2.6.28\"", &format!("kernel.bailout={policy}")]);
    assert!(v(&res, "allocstall") > 0 && v(&res, "pgsteal_direct") > 0, "{name}: the workload must enter direct reclaim");
    check_golden(name, &text, &["task.0.instances=4", "kernel.profile=\"2.6.28\"", &format!("kernel.bailout={policy}")]);
}

golden! {
    ra_none_seq => ra("ra-none-seq", "none", "sequential", &[]);
    ra_none_rand => ra("ra-none-rand", "none", "random", &[]);
    ra_fixed_seq => ra("ra-fixed-seq", "fixed", "sequential", &[]);
    ra_fixed_rand => ra("ra-fixed-rand", "fixed", "random", &[]);
    ra_fixed_run_seq => ra("ra-fixed-run-seq", "fixed-run", "sequential", &[]);
    ra_fixed_run_rand => ra("ra-fixed-run-rand", "fixed-run", "random", &[]);
    ra_adaptive_seq => ra("ra-adaptive-seq", "adaptive", "sequential", &[]);
    ra_adaptive_rand => ra("ra-adaptive-rand", "adaptive", "random", &[]);
    ra_adaptive_2012_seq => ra("ra-adaptive-2012-seq", "adaptive-2012", "sequential", &[]);
    ra_adaptive_2012_rand => ra("ra-adaptive-2012-rand", "adaptive-2012", "random", &[]);
    ra_vma_seq => ra("ra-vma-seq", "vma", "sequential", &[]);
    ra_vma_rand => ra("ra-vma-rand", "vma", "random", &[]);
    ra_vma_shmem_seq => ra("ra-vma-shmem-seq", "vma", "sequential", &["task.0.mapping.0.kind=shmem"]);
    ra_adaptive_shmem_rand => ra("ra-adaptive-shmem-rand", "adaptive", "random", &["task.0.mapping.0.kind=shmem"]);

    bailout_none => bailout("bailout-none", "none");
    bailout_rvr => bailout("bailout-rvr", "rvr");
    bailout_kosaki => bailout("bailout-kosaki", "kosaki");
    bailout_proportional => bailout("bailout-proportional", "proportional");

    device_hdd => check_golden("device-hdd", BASE, &["swap.0.device=hdd"]);
    device_sata_ssd => check_golden("device-sata-ssd", BASE, &["swap.0.device=sata-ssd"]);
    device_nvme => check_golden("device-nvme", BASE, &["swap.0.device=nvme"]);
    device_ramdisk => check_golden("device-ramdisk", BASE, &["swap.0.device=ramdisk"]);
    device_zram => check_golden("device-zram", BASE, &["swap.0.device=zram"]);
    // zram with the zswap goldens' mixed content: zero pages, a fifth incompressible, zstd.
    store_zram => check_golden("store-zram", BASE, &["swap.0.device=zram", "zram.compressor=\"zstd\"", "content.zero_fraction=0.1", "content.model=\"two-point\"", "content.ratio=3.0", "content.ratio2=1.0", "content.ratio2_fraction=0.2", "task.0.phase.0.pattern=random"]);

    profile_2_6_28 => check_golden("profile-2.6.28", BASE, &["kernel.profile=\"2.6.28\"", "task.0.phase.0.pattern=zipf", "task.0.phase.0.zipf_theta=0.6"]);
    profile_3_14 => check_golden("profile-3.14", BASE, &["kernel.profile=\"3.14\"", "task.0.phase.0.pattern=zipf", "task.0.phase.0.zipf_theta=0.6"]);
    profile_4_14 => check_golden("profile-4.14", BASE, &["kernel.profile=\"4.14\"", "task.0.phase.0.pattern=zipf", "task.0.phase.0.zipf_theta=0.6"]);
    profile_6_x => check_golden("profile-6.x", BASE, &["kernel.profile=\"6.x\"", "task.0.phase.0.pattern=zipf", "task.0.phase.0.zipf_theta=0.6"]);

    memcg => check_golden("memcg", BASE, &["machine.ram=\"64MiB\"", "machine.memcg_limit=\"16MiB\"", "task.0.mapping.0.size=\"24MiB\"", "task.0.phase.0.pattern=strided"]);
    file_mapping => check_golden("file-seq", BASE, &["task.0.mapping.0.kind=file", "task.0.phase.0.write_ratio=0.3"]);
    oom => check_golden("oom", BASE, &["swap.0.size=\"4MiB\""]);

    mglru_6_1_seq => check_golden("mglru-6.1-seq", BASE, &["kernel.reclaim=\"mglru\"", "kernel.profile=\"6.1\""]);
    mglru_6_14_seq => check_golden("mglru-6.14-seq", BASE, &["kernel.reclaim=\"mglru\"", "kernel.profile=\"6.14\""]);
    mglru_6_1_zipf => check_golden("mglru-6.1-zipf", BASE, &["kernel.reclaim=\"mglru\"", "kernel.profile=\"6.1\"", "task.0.phase.0.pattern=zipf", "task.0.phase.0.zipf_theta=0.6"]);
    mglru_6_14_zipf => check_golden("mglru-6.14-zipf", BASE, &["kernel.reclaim=\"mglru\"", "kernel.profile=\"6.14\"", "task.0.phase.0.pattern=zipf", "task.0.phase.0.zipf_theta=0.6"]);
    mglru_6_1_file => check_golden("mglru-6.1-file", BASE, &["kernel.reclaim=\"mglru\"", "kernel.profile=\"6.1\"", "task.0.mapping.0.kind=file", "task.0.phase.0.write_ratio=0.3"]);
    mglru_6_14_file => check_golden("mglru-6.14-file", BASE, &["kernel.reclaim=\"mglru\"", "kernel.profile=\"6.14\"", "task.0.mapping.0.kind=file", "task.0.phase.0.write_ratio=0.3"]);
    mglru_6_14_memcg => check_golden("mglru-6.14-memcg", BASE, &["kernel.reclaim=\"mglru\"", "kernel.profile=\"6.14\"", "machine.ram=\"64MiB\"", "machine.memcg_limit=\"16MiB\"", "task.0.mapping.0.size=\"24MiB\"", "task.0.phase.0.pattern=strided"]);
    mglru_6_14_no_mm_walk => check_golden("mglru-6.14-no-mm-walk", BASE, &["kernel.reclaim=\"mglru\"", "kernel.profile=\"6.14\"", "kernel.lru_gen_enabled=1", "task.0.phase.0.pattern=random"]);

    // The page cache (pagecache/): read() of a 40 MiB file in 28 MiB with readahead,
    // sequential and random; random page faults with read-around; and MADV_RANDOM.
    pagecache_read_seq => check_golden("pagecache-read-seq", BASE, &["task.0.mapping.0.kind=file", "task.0.phase.0.access=syscall", "task.0.phase.0.write_ratio=0.0"]);
    pagecache_read_rand => check_golden("pagecache-read-rand", BASE, &["task.0.mapping.0.kind=file", "task.0.phase.0.access=syscall", "task.0.phase.0.write_ratio=0.0", "task.0.phase.0.pattern=random"]);
    pagecache_mmap_rand => check_golden("pagecache-mmap-rand", BASE, &["task.0.mapping.0.kind=file", "task.0.phase.0.write_ratio=0.0", "task.0.phase.0.pattern=random"]);
    pagecache_mmap_madv_random => check_golden("pagecache-mmap-madv-random", BASE, &["task.0.mapping.0.kind=file", "task.0.phase.0.write_ratio=0.0", "task.0.phase.0.pattern=random", "task.0.mapping.0.advice=random"]);
    // Fronting stores (swap/store/): zswap on a sequential and a random load (10% zero pages,
    // 3:1 compression), zswap with a 2% pool that writes back, frontswap that fills.
    store_zswap_seq => check_golden("store-zswap-seq", BASE, &["zswap.enabled=true", "content.zero_fraction=0.1", "content.ratio=3.0"]);
    store_zswap_rand => check_golden("store-zswap-rand", BASE, &["zswap.enabled=true", "content.zero_fraction=0.1", "content.ratio=3.0", "task.0.phase.0.pattern=random"]);
    store_zswap_writeback => check_golden("store-zswap-writeback", BASE, &["zswap.enabled=true", "zswap.max_pool_percent=2", "zswap.compressor=\"zstd\"", "content.model=\"two-point\"", "content.ratio=4.0", "content.ratio2=1.5", "content.ratio2_fraction=0.4", "task.0.phase.0.pattern=random"]);
    store_frontswap => check_golden("store-frontswap", BASE, &["frontswap.capacity=\"4MiB\"", "frontswap.capacity_step=[{at=\"20ms\", size=\"1MiB\"}]", "task.0.phase.0.pattern=random"]);
}

/// Every file in tests/golden belongs to a case above (a renamed case leaves no stale file).
#[test]
fn no_stale_golden_files() {
    let src = include_str!("golden.rs");
    let mut stale = Vec::new();
    for entry in std::fs::read_dir(golden_dir()).expect("tests/golden exists") {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if let Some(stem) = name.strip_suffix(".json") {
            if !src.contains(&format!("\"{stem}\"")) {
                stale.push(name);
            }
        }
    }
    assert!(stale.is_empty(), "golden files without a case: {stale:?}");
}

#[test]
fn diff_is_readable_and_catches_changes() {
    let a = json!({"vmstat": {"pswpin": 10, "swap_ra": 3}, "tasks": [{"touches": 5}]});
    let b = json!({"vmstat": {"pswpin": 11, "swap_ra": 3}, "tasks": [{"touches": 6}]});
    assert_eq!(diff(&a, &b), vec!["tasks[0].touches: 5 -> 6".to_string(), "vmstat.pswpin: 10 -> 11".to_string()]);
    assert!(diff(&a, &a).is_empty());
}
