//! The multi-generational LRU (`kernel.reclaim = "mglru"`): the invariants matrix of both
//! eras, the PID controller protecting a tier that refaults more, the Bloom filter skipping
//! PTE tables without young PTEs, and min_ttl_ms's OOM.

mod common;
use common::*;
use swaplab_core::engine::Sim;

const ERAS: [&str; 2] = ["kernel.profile=\"6.1\"", "kernel.profile=\"6.14\""];

fn stat(sim: &Sim, name: &str) -> u64 {
    sim.reclaim.policy_ref().policy_stats().into_iter().find(|(n, _)| *n == name).unwrap_or_else(|| panic!("no MGLRU stat {name}")).1
}

fn run_sim(toml: &str, overrides: &[&str]) -> (Sim, swaplab_core::stats::result::SimResult) {
    let r = load(toml, overrides);
    let (sim, res) = run_resolved(&r);
    let errs = sim.check_invariants();
    assert!(errs.is_empty(), "invariants broken after run with {overrides:?}:\n  {}", errs.join("\n  "));
    check_relations(&res, &r, &format!("{overrides:?}"));
    (sim, res)
}

#[test]
fn kinds_patterns_and_eras_keep_the_generations_consistent() {
    for era in ERAS {
        for kind in ["anon", "shmem", "file"] {
            for pattern in ["sequential", "random", "zipf"] {
                let ov = [era.to_string(), "kernel.reclaim=\"mglru\"".into(), format!("task.0.mapping.0.kind={kind}"), format!("task.0.phase.0.pattern={pattern}"), "task.0.phase.0.cycles=2".into()];
                let ov: Vec<&str> = ov.iter().map(|s| s.as_str()).collect();
                let (sim, res) = run_sim(BASE, &ov);
                assert_eq!(total_touches(&res), 2 * 40 * MIB_PAGES, "{ov:?}");
                if pattern != "zipf" {
                    // (zipf's skew leaves most of the mapping untouched: it may fit)
                    assert!(v(&res, "pgsteal_anon") + v(&res, "pgsteal_file") > 0, "{ov:?}: 40 MiB in 28 MiB must reclaim");
                    assert!(stat(&sim, "max_seq") > 3, "{ov:?}: reclaim must have aged at least once");
                }
            }
        }
    }
}

#[test]
fn min_ttl_kills_rather_than_evict_a_young_working_set() {
    for era in ERAS {
        let base = [era, "kernel.reclaim=\"mglru\""];
        // 40 MiB written in 28 MiB within well under 10 s: every generation is younger.
        let mut ov = base.to_vec();
        ov.push("kernel.lru_gen_min_ttl_ms=10000");
        let (sim, res) = run_sim(BASE, &ov);
        assert!(v(&res, "oom_kill") >= 1, "{era}: min_ttl_ms 10 s must OOM-kill");
        assert!(res.events.iter().any(|e| e.kind == "oom_kill"), "{era}: the kill is reported as an event");
        assert!(stat(&sim, "min_ttl_ooms") >= 1, "{era}: the kill came from lru_gen_age_node");
        // Without min_ttl the same workload swaps and finishes.
        let (_, res) = run_sim(BASE, &base);
        assert_eq!(v(&res, "oom_kill"), 0, "{era}");
        assert!(v(&res, "pswpout") > 0, "{era}");
    }
}

#[test]
fn resident_fast_path_is_unchanged_and_vmstat_reports_the_two_youngest_as_active() {
    let (sim, res) = run_sim(BASE, &["kernel.reclaim=\"mglru\"", "task.0.mapping.0.size=\"8MiB\"", "sim.sample_interval=\"1ms\""]);
    // Fits: no reclaim, so no aging; everything added in a fault is in max_seq - 1 or max_seq,
    // which vmstat shows as active.
    assert_eq!(v(&res, "pgscan_kswapd") + v(&res, "pgscan_direct"), 0);
    assert_eq!(stat(&sim, "max_seq"), 3, "no aging without reclaim");
    let ts = &res.timeseries;
    let peak = *ts.nr_active_anon.iter().max().expect("samples");
    assert!(peak > 0 && peak <= 8 * MIB_PAGES, "active anon at its peak: {peak}");
    assert_eq!(ts.nr_inactive_anon.iter().max(), Some(&0));
}

#[test]
fn the_lru_gen_series_lists_every_page_once_per_sample_in_debugfs_order() {
    for era in ERAS {
        let (_, res) = run_sim(BASE, &[era, "kernel.reclaim=\"mglru\"", "sim.sample_interval=\"20ms\""]);
        let ts = &res.timeseries;
        assert_eq!(ts.lru_gen.len(), ts.t_ns.len(), "{era}: one dump per sample");
        assert!(ts.lru_gen.iter().any(|rows| rows.len() >= 3), "{era}: aging made generations");
        for (i, rows) in ts.lru_gen.iter().enumerate() {
            let seqs: Vec<u64> = rows.iter().map(|r| r[0]).collect();
            assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1) && (2..=4).contains(&seqs.len()), "{era} sample {i}: {seqs:?}");
            // The youngest generation is the newest: no row is younger than the one after it;
            // one made by aging is younger than the run (ages are the reclaimer's time).
            assert!(rows.windows(2).all(|w| w[0][1] >= w[1][1]), "{era} sample {i}: ages {rows:?}");
            if seqs[seqs.len() - 1] > 3 {
                assert!(rows[rows.len() - 1][1] < ts.t_ns[i] / 1_000_000, "{era} sample {i} at {} ns: {rows:?}", ts.t_ns[i]);
            }
            let anon: u64 = rows.iter().map(|r| r[2]).sum();
            let file: u64 = rows.iter().map(|r| r[3]).sum();
            assert_eq!(anon, ts.nr_active_anon[i] + ts.nr_inactive_anon[i], "{era} sample {i}");
            assert_eq!(file, ts.nr_active_file[i] + ts.nr_inactive_file[i], "{era} sample {i}");
        }
    }
    let classic = run_checked(BASE, &["sim.sample_interval=\"2ms\""]);
    assert!(classic.timeseries.lru_gen.is_empty(), "the classic LRU has no generations");
    let json: serde_json::Value = serde_json::from_str(&classic.to_json()).unwrap();
    assert!(json["timeseries"].get("lru_gen").is_none(), "and its result has no lru_gen series");
}

#[test]
fn mglru_needs_a_6_x_profile_and_the_policy_bit() {
    use swaplab_core::config;
    let e = config::load(BASE, "t.toml", &["kernel.reclaim=\"mglru\"".into(), "kernel.profile=\"4.14\"".into()]).unwrap_err();
    assert!(e.to_string().contains("MGLRU was merged in 6.1"), "{e}");
    let e = config::load(BASE, "t.toml", &["kernel.reclaim=\"mglru\"".into(), "kernel.lru_gen_enabled=6".into()]).unwrap_err();
    assert!(e.to_string().contains("classic"), "{e}");
    let e = config::load(BASE, "t.toml", &["kernel.lru_gen_enabled=8".into()]).unwrap_err();
    assert!(e.to_string().contains("0x7"), "{e}");
}
