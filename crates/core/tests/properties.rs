//! Property tests: random small configurations must never panic, never break an invariant of
//! the memory model, keep the counters consistent and run every touch of their programs
//! (unless OOM-killed); `config::load` must never panic on mangled workload text.

mod common;
use common::*;
use proptest::prelude::*;
use swaplab_core::config::{self, MappingKind};
use swaplab_core::workload::PhaseGen;

const KINDS: [&str; 3] = ["anon", "shmem", "file"];
const PATTERNS: [&str; 5] = ["sequential", "random", "zipf", "strided", "matrix"];
const DEVICES: [&str; 5] = ["hdd", "sata-ssd", "nvme", "ramdisk", "zram"];
const PROFILES: [&str; 4] = ["2.6.28", "3.14", "4.14", "6.x"];
const READAHEAD: [&str; 7] = ["auto", "none", "fixed", "fixed-run", "adaptive", "adaptive-2012", "vma"];
const TIME_LIMIT_S: u64 = 30;
const BAILOUT: [&str; 5] = ["auto", "none", "rvr", "kosaki", "proportional"];

#[derive(Clone, Debug)]
struct Phase {
    mapping: usize,
    pattern: usize,
    cycles: f64,
    write_ratio: f64,
    backward: bool,
    stride: u64,
    block: u64,
    theta: f64,
}

#[derive(Clone, Debug)]
struct Task {
    mappings: Vec<(usize, u64)>, // (kind, pages)
    phases: Vec<Phase>,
    instances: u32,
}

#[derive(Clone, Debug)]
struct Cfg {
    ram_mib: u64,
    cpus: u32,
    profile: usize,
    readahead: usize,
    bailout: usize,
    page_cluster: u32,
    swappiness: u32,
    vma_ra: bool,
    memcg: Option<u64>, // pages
    swaps: Vec<(usize, u64)>, // (device, pages)
    tasks: Vec<Task>,
    seed: u64,
}

fn phase(nmaps: usize) -> impl Strategy<Value = Phase> {
    (0..nmaps, 0..PATTERNS.len(), 0.3f64..2.0, prop_oneof![Just(0.0), Just(0.5), Just(1.0), 0.0f64..1.0], any::<bool>(), 1u64..64, 1u64..128, 0.2f64..1.5)
        .prop_map(|(mapping, pattern, cycles, write_ratio, backward, stride, block, theta)| Phase { mapping, pattern, cycles, write_ratio, backward, stride, block, theta })
}

fn task(max_pages: u64) -> impl Strategy<Value = Task> {
    // Mostly large mappings (so that most runs reclaim), sometimes tiny ones.
    let size = prop_oneof![3 => (max_pages / 3).max(1)..=max_pages, 1 => 1..=max_pages];
    (prop::collection::vec((0..KINDS.len(), size), 1..=2), 1u32..=2).prop_flat_map(|(mappings, instances)| {
        let n = mappings.len();
        prop::collection::vec(phase(n), 1..=2).prop_map(move |phases| Task { mappings: mappings.clone(), phases, instances })
    })
}

fn cfg() -> impl Strategy<Value = Cfg> {
    (16u64..=64, 1u32..=3, 1usize..=3).prop_flat_map(|(ram_mib, cpus, ntasks)| {
        let ram_pages = ram_mib * MIB_PAGES;
        // Each task's mappings together up to about twice the RAM / the number of tasks.
        let per_mapping = (2 * ram_pages / ntasks as u64).max(1);
        (
            Just(ram_mib),
            Just(cpus),
            (0..PROFILES.len(), 0..READAHEAD.len(), 0..BAILOUT.len(), 0u32..=6, 0u32..=200, any::<bool>()),
            prop::option::weighted(0.25, 64..=ram_pages),
            prop::collection::vec((0..DEVICES.len(), 2..=2 * ram_pages), 0..=2),
            prop::collection::vec(task(per_mapping), ntasks),
            0u64..(i64::MAX as u64),
        )
            .prop_map(|(ram_mib, cpus, (profile, readahead, bailout, page_cluster, swappiness, vma_ra), memcg, swaps, tasks, seed)| Cfg {
                ram_mib,
                cpus,
                profile,
                readahead,
                bailout,
                page_cluster,
                swappiness,
                vma_ra,
                memcg,
                swaps,
                tasks,
                seed,
            })
    })
}

fn to_toml(c: &Cfg) -> String {
    let mut s = format!(
        "seed = {}\n[machine]\ncpus = {}\nram = \"{}MiB\"\nkernel_reserved = \"4MiB\"\n",
        c.seed, c.cpus, c.ram_mib
    );
    if let Some(m) = c.memcg {
        s += &format!("memcg_limit = {}\n", m * 4096);
    }
    // A virtual-time cap keeps a pathological run (HDD thrashing) from taking minutes.
    s += &format!("[sim]\ntime_limit = \"{}s\"\n", TIME_LIMIT_S);
    s += &format!(
        "[kernel]\nprofile = \"{}\"\nreadahead = \"{}\"\nbailout = \"{}\"\npage_cluster = {}\nswappiness = {}\nvma_ra_enabled = {}\n",
        PROFILES[c.profile], READAHEAD[c.readahead], BAILOUT[c.bailout], c.page_cluster, c.swappiness, c.vma_ra
    );
    for (d, pages) in &c.swaps {
        s += &format!("[[swap]]\ndevice = \"{}\"\nsize = {}\n", DEVICES[*d], pages * 4096);
    }
    for (ti, t) in c.tasks.iter().enumerate() {
        s += &format!("[[task]]\nname = \"t{ti}\"\ninstances = {}\n", t.instances);
        for (mi, (k, pages)) in t.mappings.iter().enumerate() {
            s += &format!("[[task.mapping]]\nname = \"m{mi}\"\nkind = \"{}\"\nsize = {}\n", KINDS[*k], pages * 4096);
        }
        for p in &t.phases {
            s += &format!(
                "[[task.phase]]\nmapping = \"m{}\"\npattern = \"{}\"\ncycles = {:?}\nwrite_ratio = {:?}\nbackward = {}\nstride = {}\nblock_pages = {}\nzipf_theta = {:?}\n",
                p.mapping, PATTERNS[p.pattern], p.cycles, p.write_ratio, p.backward, p.stride, p.block, p.theta
            );
        }
    }
    s
}

/// Run a generated workload; it must keep every invariant, its counters consistent and run
/// its whole program unless OOM-killed or stopped by the time limit.
fn check_generated(text: &str) -> Result<(), TestCaseError> {
    let r = config::load(text, "prop.toml", &[]).unwrap_or_else(|e| panic!("generated config does not load: {e}\n{text}"));
    let (sim, res) = run_resolved(&r);
    let errs = sim.check_invariants();
    prop_assert!(errs.is_empty(), "invariants broken:\n  {}\n--- workload:\n{}", errs.join("\n  "), text);
    check_relations(&res, &r, text);
    // Every task that was neither OOM-killed nor stopped by the time limit ran its whole program.
    let mut i = 0;
    for t in &r.config.tasks {
        let expect: u64 = t.phases.iter().map(|p| {
            let m = t.mappings.iter().find(|m| m.name == p.mapping).unwrap();
            PhaseGen::new(p, m.size.pages()).total_touches()
        }).sum();
        for _ in 0..t.instances {
            let tr = &res.tasks[i];
            i += 1;
            prop_assert!(tr.touches <= expect, "task {} did more touches than its program\n{}", tr.name, text);
            if !tr.oom_killed && tr.end_ns < TIME_LIMIT_S * 1_000_000_000 {
                prop_assert_eq!(tr.touches, expect, "task {} touches\n{}", tr.name, text);
            }
        }
    }
    prop_assert_eq!(i, res.tasks.len());
    // Without anything swappable there is no swap traffic.
    let swappable = r.config.tasks.iter().any(|t| t.mappings.iter().any(|m| m.kind != MappingKind::File));
    if !swappable {
        prop_assert_eq!(v(&res, "pswpout"), 0);
    }
    Ok(())
}

/// Found by `random_small_configurations_keep_every_invariant_under_mglru` (a fresh-clone run of
/// the test command, 2026-11-27). Guards `scan_swap_map_slots` reusing a cache-only slot while
/// swap is full: when `__try_to_reclaim_swap` frees the slot into the per-CPU slots cache, the
/// slot is not free yet (its swap_map keeps SWAP_HAS_CACHE until the cache returns it), so the
/// scan must go on; taking it anyway handed the same slot out twice (counts wrapped to 63, slots
/// marked cached with no folio).
#[test]
fn a_cache_only_slot_freed_into_the_slots_cache_is_not_allocated_twice() {
    let text = r#"
seed = 3933737754064661447
[machine]
cpus = 2
ram = "59MiB"
kernel_reserved = "4MiB"
[sim]
time_limit = "30s"
[kernel]
profile = "6.1"
reclaim = "mglru"
lru_gen_enabled = 7
lru_gen_min_ttl_ms = 0
readahead = "adaptive-2012"
bailout = "auto"
page_cluster = 6
swappiness = 1
vma_ra_enabled = false
[[swap]]
device = "sata-ssd"
size = 66363392
[[swap]]
device = "zram"
size = 45703168
[[task]]
name = "t0"
instances = 2
[[task.mapping]]
name = "m0"
kind = "anon"
size = 84996096
[[task.mapping]]
name = "m1"
kind = "shmem"
size = 69726208
[[task.phase]]
mapping = "m0"
pattern = "matrix"
cycles = 0.3
write_ratio = 0.5
backward = false
stride = 1
block_pages = 35
zipf_theta = 0.7595808826243239"#;
    let r = config::load(text, "prop-regression.toml", &[]).expect("the regression workload loads");
    let (sim, res) = run_resolved(&r);
    let errs = sim.check_invariants();
    assert!(errs.is_empty(), "invariants broken:\n  {}", errs.join("\n  "));
    assert!(v(&res, "pswpout") > 0, "the workload must swap");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, max_shrink_iters: 200, failure_persistence: None, .. ProptestConfig::default() })]

    #[test]
    fn random_small_configurations_keep_every_invariant(c in cfg()) {
        check_generated(&to_toml(&c))?;
    }

    /// The same under the multi-generational LRU: either era, any capability bits, sometimes
    /// a min_ttl_ms.
    #[test]
    fn random_small_configurations_keep_every_invariant_under_mglru(c in cfg(), era in 0usize..2, caps in prop::sample::select(vec![1u32, 3, 5, 7]), ttl in prop::sample::select(vec![0u64, 0, 50])) {
        let text = to_toml(&c);
        let profile = format!("profile = \"{}\"", PROFILES[c.profile]);
        let mglru = format!("profile = \"{}\"\nreclaim = \"mglru\"\nlru_gen_enabled = {caps}\nlru_gen_min_ttl_ms = {ttl}", ["6.1", "6.14"][era]);
        check_generated(&text.replacen(&profile, &mglru, 1))?;
    }
}

/// A fronting store for a generated workload: zswap with a random pool limit, compressor,
/// content (zero share, two-point ratios) and writeback switch, or frontswap with a random
/// capacity that shrinks half-way through, exclusive gets or not.
fn store_section(kind: usize, pool_pct: u32, zero: f64, cap_pages: u64, flip: bool) -> String {
    match kind {
        0 => format!(
            "[zswap]\nenabled = true\nmax_pool_percent = {pool_pct}\ncompressor = \"{}\"\nmemcg_writeback = {}\nstore_incompressible = {flip}\n[content]\nzero_fraction = {zero:?}\nmodel = \"two-point\"\nratio = 3.5\nratio2 = 1.0\nratio2_fraction = 0.2\n",
            ["lzo", "lz4", "zstd"][pool_pct as usize % 3],
            !pool_pct.is_multiple_of(4)
        ),
        _ => format!(
            "[frontswap]\ncapacity = {}\nexclusive_loads = {flip}\n[[frontswap.capacity_step]]\nat = \"50ms\"\nsize = {}\n",
            cap_pages * 4096,
            cap_pages / 2 * 4096
        ),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, max_shrink_iters: 100, failure_persistence: None, .. ProptestConfig::default() })]

    #[test]
    fn random_configurations_with_a_store_keep_every_invariant(c in cfg(), kind in 0usize..2, pool_pct in 1u32..40, zero in 0.0f64..0.5, cap_pages in 1u64..8192, flip in any::<bool>()) {
        let text = to_toml(&c) + &store_section(kind, pool_pct, zero, cap_pages, flip);
        let r = config::load(&text, "prop.toml", &[]).unwrap_or_else(|e| panic!("generated config does not load: {e}\n{text}"));
        let (sim, res) = run_resolved(&r);
        let errs = sim.check_invariants();
        prop_assert!(errs.is_empty(), "invariants broken:\n  {}\n--- workload:\n{}", errs.join("\n  "), text);
        check_relations(&res, &r, &text);
        let store = res.store.as_ref().expect("a store was configured");
        prop_assert_eq!(store.pool_pages, sim.swap.pool_frames.len() as u64);
        if kind == 1 {
            prop_assert_eq!(store.pool_pages_max, 0, "frontswap takes no guest memory");
        }
    }
}

// ------------------------------------------------------------------ config::load fuzzing

const VALID: &[&str] = &[BASE, r#"
name = "x"
[machine]
cpus = 2
ram = "64MiB"
memcg_limit = "16MiB"
[kernel]
profile = "3.14"
readahead = "adaptive-2012"
[[swap]]
device = "hdd"
size = "32MiB"
params = { parallelism = 2 }
[costs]
minor_fault_ns = 900
[sim]
time_limit = "1s"
[[task]]
name = "a"
repeat = true
time_limit = "200ms"
start_delay = "5ms"
[[task.mapping]]
name = "m"
kind = "shmem"
size = "20MiB"
[[task.phase]]
mapping = "m"
pattern = "zipf"
zipf_theta = 0.8
touches = 1000
compute = "1us"
"#];

const VALUES: &[&str] = &[
    "0", "-1", "-5", "1", "3.14", "1e308", "-0.0", "nan", "inf", "18446744073709551615", "99999999999999999999",
    "\"\"", "\"abc\"", "\"0\"", "\"-1MiB\"", "\"1TiB\"", "\"16EiB\"", "\"4KiB\"", "\"1.5GiB\"", "\"12 parsecs\"", "\"5ms\"", "\"-3s\"",
    "true", "false", "[]", "[1, 2]", "{}", "{ a = 1 }", "\"anon\"", "\"matrix\"", "\"vma\"", "\"6.x\"", "\"zram\"", "\"mglru\"",
];

const KEYS: &[&str] = &[
    "ram", "cpus", "size", "kind", "pattern", "cycles", "touches", "write_ratio", "stride", "block_pages", "zipf_theta", "device",
    "priority", "profile", "readahead", "bailout", "page_cluster", "swappiness", "memcg_limit", "time_limit", "instances", "name",
    "mapping", "kernel_reserved", "sample_interval", "sync_quantum", "hz", "min_free_kbytes", "watermark_scale_factor", "bogus",
    "reclaim", "lru_gen_enabled", "lru_gen_min_ttl_ms",
];

#[derive(Clone, Debug)]
enum Edit {
    /// Replace the value of line i (if it has one) with VALUES[j].
    Value(usize, usize),
    /// Replace line i by `KEYS[k] = VALUES[j]`.
    Line(usize, usize, usize),
    Delete(usize),
    Duplicate(usize),
    /// Truncate the text at this fraction of its length.
    Truncate(u16),
    /// Insert a raw byte string at a fraction of the text.
    Garbage(u16, String),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        4 => (any::<usize>(), 0..VALUES.len()).prop_map(|(i, j)| Edit::Value(i, j)),
        2 => (any::<usize>(), 0..KEYS.len(), 0..VALUES.len()).prop_map(|(i, k, j)| Edit::Line(i, k, j)),
        1 => any::<usize>().prop_map(Edit::Delete),
        1 => any::<usize>().prop_map(Edit::Duplicate),
        1 => any::<u16>().prop_map(Edit::Truncate),
        1 => (any::<u16>(), "[\\[\\]=\"'.{},#\n a-z0-9\\-]{0,12}").prop_map(|(p, s)| Edit::Garbage(p, s)),
    ]
}

fn apply(text: &str, e: &Edit) -> String {
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    if lines.is_empty() {
        lines.push(String::new());
    }
    let n = lines.len();
    match e {
        Edit::Value(i, j) => {
            let l = &mut lines[i % n];
            if let Some((k, _)) = l.split_once('=') {
                *l = format!("{}= {}", k, VALUES[*j]);
            }
        }
        Edit::Line(i, k, j) => lines[i % n] = format!("{} = {}", KEYS[*k], VALUES[*j]),
        Edit::Delete(i) => {
            lines.remove(i % n);
        }
        Edit::Duplicate(i) => {
            let l = lines[i % n].clone();
            lines.insert(i % n, l);
        }
        Edit::Truncate(f) => {
            let mut cut = text.len() * *f as usize / 65536;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            return text[..cut].to_string();
        }
        Edit::Garbage(f, s) => {
            let mut at = text.len() * *f as usize / 65536;
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            return format!("{}{}{}", &text[..at], s, &text[at..]);
        }
    }
    lines.join("\n")
}

fn override_() -> impl Strategy<Value = String> {
    (
        prop::sample::select(vec!["kernel.page_cluster", "task.0.phase.0.pattern", "task.5.name", "swap.0.params.parallelism", "machine", "task.x.y", "", ".", "a..b", "task.0", "swap.0.params.bogus", "machine.ram", "task.0.mapping.0.size", "sim.time_limit"]),
        prop::sample::select(VALUES.to_vec()),
        any::<bool>(),
    )
        .prop_map(|(k, v, eq)| if eq { format!("{k}={v}") } else { format!("{k}{v}") })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, .. ProptestConfig::default() })]

    #[test]
    fn config_load_never_panics_on_mutated_text(
        base in 0..VALID.len(),
        edits in prop::collection::vec(edit(), 1..4),
        overrides in prop::collection::vec(override_(), 0..2),
    ) {
        let mut text = VALID[base].to_string();
        for e in &edits {
            text = apply(&text, e);
        }
        match config::load(&text, "fuzz.toml", &overrides) {
            Ok(r) => {
                // A configuration that loads is valid: the simulator can be built from it when
                // it is small (big ones are legal but too slow to build here).
                prop_assert!(!r.config.tasks.is_empty());
                prop_assert!(r.config.machine.ram.pages() > r.config.machine.kernel_reserved.pages());
            }
            Err(e) => {
                prop_assert_eq!(e.file.as_str(), "fuzz.toml");
                // (With --set overrides a syntax error keeps its message and line: see
                // syntax_error_with_overrides_has_a_message below.)
                prop_assert!(!overrides.is_empty() || !e.message.trim().is_empty(), "empty error message for\n{}", text);
                if let (Some(l), true) = (e.line, overrides.is_empty()) {
                    prop_assert!(l >= 1 && l <= text.lines().count() + 1, "line {} out of range ({} lines): {}\n{}", l, text.lines().count(), e, text);
                }
            }
        }
    }
}

#[test]
fn the_unmutated_fuzz_bases_load() {
    for t in VALID {
        config::load(t, "base.toml", &[]).unwrap();
    }
}

/// A file whose last line is `key =` (a value missing) reports "invalid string / expected a
/// value" without overrides; with `--set` overrides it once had an empty message and no line
/// ("f.toml: "), which this guards against.
#[test]
fn syntax_error_with_overrides_has_a_message() {
    let text = "name = \"test\"\nseed =";
    let plain = config::load(text, "f.toml", &[]).unwrap_err();
    assert!(!plain.message.trim().is_empty() && plain.line == Some(2), "{plain:?}");
    let e = config::load(text, "f.toml", &["kernel.page_cluster=0".to_string()]).unwrap_err();
    assert!(!e.message.trim().is_empty(), "empty message: {e:?}");
    assert_eq!(e.line, Some(2), "{e:?}");
}
