//! Fuzzing the workload parser and `--set`: mutated workload files and random overrides go
//! through `config::load`, which must answer every one with a resolved configuration or a
//! `ConfigError` — never a panic, never an abort, never a hang — and whose errors are one
//! line of bounded length.
//!
//! The inputs are the project's own workload files, mutated by splicing TOML tokens and hostile
//! values (inf, nan, huge numbers, BOMs, deep nesting, `calibrated:` presets, whole-table
//! overrides) at random places, deleting and duplicating spans, plus random `key=value`
//! overrides over the real key paths. CI runs a bounded number of cases; for a longer run:
//!
//! ```sh
//! SWAPLAB_FUZZ_CASES=1000000 cargo test --release -p swaplab-core --test fuzz_config -- --nocapture
//! ```

use proptest::prelude::*;
use swaplab_core::config;

const SEEDS: [&str; 6] = [
    include_str!("../../../examples/quick.toml"),
    include_str!("../../../experiments/workloads/hugh2012.toml"),
    include_str!("../../../experiments/workloads/vm-scalability-combined.toml"),
    include_str!("../../../tests/host/small.toml"),
    include_str!("data/direct-reclaim-spiral-hdd-shmem.toml"),
    include_str!("data/direct-reclaim-spiral-hdd-zram-file.toml"),
];

const TOKENS: [&str; 40] = [
    "[", "]", "[[", "]]", "=", "\"", "'", "{", "}", ",", ".", "\n", "#", "\u{feff}", "\\", "inf", "-inf", "nan", "-1",
    "0", "1e308", "18446744073709551616", "9223372036854775807", "\"4TiB\"", "\"0s\"", "\"1 parsecs\"",
    "\"calibrated:\"", "\"calibrated:nope\"", "\"calibrated:../x.toml\"", "[[task]]", "[[task.phase]]", "[kernel]",
    "[[swap]]", "true", "\"\u{0}\"", "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[", "{a={a={a={a={a={a={a={a={}}}}}}}}",
    "\"é€𝄞\"", "1979-05-27T07:32:00Z", "\u{7f}",
];

const KEYS: [&str; 24] = [
    "machine.ram", "machine.cpus", "machine.kernel_reserved", "machine.memcg_limit", "machine.file_device",
    "kernel", "kernel.page_cluster", "kernel.readahead", "kernel.profile", "kernel.swappiness", "swap.0.device",
    "swap.0.size", "swap.0.params.read_latency_ns", "swap.0.params", "swap.9.size", "task.0.phase.0.pattern",
    "task.0.mapping.0.size", "task.0.instances", "task.0", "sim.time_limit", "sim.sample_interval", "seed", "costs",
    "task.0.phase.0.compute",
];

const VALUES: [&str; 20] = [
    "0", "-1", "inf", "nan", "1e400", "\"4TiB\"", "\"calibrated:none\"", "{page_cluster=0}", "[1,2,3]", "\"\"",
    "true", "\"sata-ssd\"", "random", "\"1 pages\"", "18446744073709551615", "'x'", "{", "\"0s\"", "\"3.14\"",
    "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
];

#[derive(Clone, Debug)]
enum Mutation {
    Insert(usize, String),
    Delete(usize, usize),
    Duplicate(usize, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), prop::sample::select(&TOKENS[..]).prop_map(String::from)).prop_map(|(p, t)| Mutation::Insert(p, t)),
        (any::<usize>(), "\\PC{0,12}").prop_map(|(p, t)| Mutation::Insert(p, t)),
        (any::<usize>(), 0usize..64).prop_map(|(p, n)| Mutation::Delete(p, n)),
        (any::<usize>(), 0usize..200).prop_map(|(p, n)| Mutation::Duplicate(p, n)),
    ]
}

fn boundary(text: &str, pos: usize) -> usize {
    let mut p = pos % (text.len() + 1);
    while !text.is_char_boundary(p) {
        p -= 1;
    }
    p
}

fn apply(mut text: String, muts: &[Mutation]) -> String {
    for m in muts {
        match m {
            Mutation::Insert(p, t) => {
                let p = boundary(&text, *p);
                text.insert_str(p, t);
            }
            Mutation::Delete(p, n) => {
                let a = boundary(&text, *p);
                let b = boundary(&text, a + n);
                text.replace_range(a..b.max(a), "");
            }
            Mutation::Duplicate(p, n) => {
                let a = boundary(&text, *p);
                let b = boundary(&text, a + n).max(a);
                let span = text[a..b].to_string();
                text.insert_str(b, &span);
            }
        }
    }
    text
}

fn override_string() -> impl Strategy<Value = String> {
    prop_oneof![
        (prop::sample::select(&KEYS[..]), prop::sample::select(&VALUES[..])).prop_map(|(k, v)| format!("{k}={v}")),
        (prop::sample::select(&KEYS[..]), "\\PC{0,16}").prop_map(|(k, v)| format!("{k}={v}")),
        "\\PC{0,24}",
    ]
}

fn cases() -> u32 {
    std::env::var("SWAPLAB_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(3000)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), failure_persistence: None, max_shrink_iters: 2000, .. ProptestConfig::default() })]

    #[test]
    fn mutated_workloads_and_overrides_never_panic(
        seed in 0usize..SEEDS.len(),
        muts in prop::collection::vec(mutation(), 0..6),
        overrides in prop::collection::vec(override_string(), 0..4),
    ) {
        // no preset directory: `calibrated:` names must fail cleanly, not read a developer's files
        std::env::set_var("SWAPLAB_DEVICES", "/nonexistent/swaplab-fuzz");
        let text = apply(SEEDS[seed].to_string(), &muts);
        if let Err(e) = config::load(&text, "fuzz.toml", &overrides) {
            let msg = e.to_string();
            prop_assert!(!msg.contains('\n'), "a multi-line error: {msg}");
            prop_assert!(msg.len() < 2000, "an error of {} bytes", msg.len());
        }
    }
}

#[test]
fn deeply_nested_arrays_are_an_error_not_a_stack_overflow() {
    let text = format!("{}\nx = {}{}\n", SEEDS[0], "[".repeat(100_000), "]".repeat(100_000));
    assert!(config::load(&text, "deep.toml", &[]).is_err());
    let ov = vec![format!("seed={}{}", "[".repeat(100_000), "]".repeat(100_000))];
    assert!(config::load(SEEDS[0], "deep.toml", &ov).is_err());
}
