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
