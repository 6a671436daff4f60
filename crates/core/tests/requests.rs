//! Request workloads: the memcached-like kv store (workload/kv.rs) and buffered reads with an
//! I/O depth (engine/requests.rs). The generators are checked on the programs the engine runs
//! (`program_for`), the accounting on finished runs.

mod common;
use common::*;
use swaplab_core::workload::kv::{memtier_key_len, partition, SlabLayout};
use swaplab_core::workload::{program_for, Op, Step};

/// A kv store of 4 server threads with 20,000 items of 2000 bytes (~47 MiB of slabs) on a
/// machine large enough that nothing is reclaimed.
const KV: &str = r#"
name = "kv"
seed = 5
[machine]
cpus = 4
ram = "256MiB"
kernel_reserved = "16MiB"
[[task]]
name = "memcached"
instances = 4
[[task.mapping]]
name = "slabs"
kind = "anon"
[[task.phase]]
mapping = "slabs"
pattern = "kv-set"
keys = 20000
value_size = 2000
measure = false
[[task.phase]]
mapping = "slabs"
pattern = "kv-get"
keys = 20000
value_size = 2000
requests = 20000
pipeline = 8
"#;

/// memtier's longest key of the store: "memtier-20000".
const KEY: u64 = 13;

/// Every step of instance `inst`'s program: (request starts, pages touched per request).
fn requests_of(text: &str, overrides: &[&str], inst: u32) -> Vec<Vec<(u32, bool)>> {
    let r = load(text, overrides);
    let mut p = program_for(&r, 0, inst);
    let mut out: Vec<Vec<(u32, bool)>> = Vec::new();
    while let Some(step) = p.next_step() {
        match step {
            Step::Op(Op::Request { .. }) => out.push(Vec::new()),
            Step::Touch(_, t) => out.last_mut().expect("a touch follows a request").push((t.page, t.write)),
            Step::Op(other) => panic!("unexpected step {other:?}"),
        }
    }
    out
}

#[test]
fn the_slab_mapping_is_sized_for_the_largest_instance() {
    let r = load(KV, &[]);
    assert_eq!(memtier_key_len(20000), KEY);
    // 5,000 keys per instance, 451 items of the 2320-byte class per 1 MiB slab page: 12 pages.
    let l = SlabLayout::new(5000, KEY, 2000).unwrap();
    assert_eq!((l.chunk, l.per_slab), (2320, 451));
    assert_eq!(r.config.tasks[0].mappings[0].size.0, 12 << 20);
}

#[test]
fn the_fill_writes_every_item_in_key_order() {
    let reqs = requests_of(KV, &[], 1);
    let fill = &reqs[..5000];
    let l = SlabLayout::new(5000, KEY, 2000).unwrap();
    for (i, pages) in fill.iter().enumerate() {
        let (first, last) = l.item_pages(i as u64);
        let want: Vec<(u32, bool)> = (first..=last).map(|p| (p as u32, true)).collect();
        assert_eq!(pages, &want, "item {i}");
    }
    // Page order never goes back: the fill walks the slabs forwards.
    let flat: Vec<u32> = fill.iter().flatten().map(|&(p, _)| p).collect();
    assert!(flat.windows(2).all(|w| w[0] <= w[1]));
    // An item of 2075 bytes spans one or two pages; the gets read and never write.
    let gets = &reqs[5000..];
    assert_eq!(gets.len(), 20000);
    assert!(gets.iter().all(|g| (1..=2).contains(&g.len()) && g.iter().all(|&(_, w)| !w)));
}

#[test]
fn without_requests_each_client_sends_what_memtier_allkeys_sends() {
    // 20,001 keys over 4 clients: memtier's P:P range is 20,000 / 4 + 1 = 5,001 keys, the
    // last client keeps the 4,998 left; -n allkeys is 5,001 sets per client for the fill and
    // 20,000 gets per client (key_maximum - key_minimum) for R:R.
    let text = KV.replace("keys = 20000", "keys = 20001").replace("requests = 20000\n", "");
    assert_eq!((partition(20001, 0, 4), partition(20001, 3, 4)), (0..5001, 15003..20001));
    for inst in 0..4 {
        let reqs = requests_of(&text, &[], inst);
        assert_eq!(reqs.len(), 5001 + 20000, "instance {inst}: a fill of its range, then 20,000 gets");
    }
    // The last client's fill runs past its 4,998 keys and starts over at its first, as memtier's
    // sequential key iterator wraps within the client's range.
    let last = requests_of(&text, &[], 3);
    assert_eq!(&last[4998..5001], &last[..3]);
    let r = load(&text, &[]);
    let l = SlabLayout::new(5001, KEY, 2000).unwrap();
    assert_eq!(r.config.tasks[0].mappings[0].size.0, l.pages() * 4096, "sized for the first, largest, range");
}

#[test]
fn a_store_whose_memtier_split_leaves_a_client_no_keys_is_refused() {
    // 10 keys over 6 clients: ranges of 9 / 6 + 1 = 2 keys give the first five all ten.
    let text = KV.replace("keys = 20000", "keys = 10").replace("instances = 4", "instances = 6");
    let err = swaplab_core::config::load(&text, "test.toml", &[]).expect_err("refused").to_string();
    assert!(err.contains("task.0.phase.0.keys") && err.contains("use at least 11 keys"), "{err}");
}

/// Requests per decile of the instance's items for a get pattern.
fn get_deciles(overrides: &[&str]) -> [u64; 10] {
    let l = SlabLayout::new(5000, KEY, 2000).unwrap();
    let first_page_of = |i: u64| l.item_pages(i).0;
    let reqs = requests_of(KV, overrides, 0);
    let mut d = [0u64; 10];
    for g in &reqs[5000..] {
        // The item whose first page is the request's first page and whose range matches.
        let p = g[0].0 as u64;
        let i = (0..5000).find(|&i| first_page_of(i) == p && l.item_pages(i).1 == g.last().unwrap().0 as u64).expect("an item");
        d[(i * 10 / 5000) as usize] += 1;
    }
    d
}

#[test]
fn get_key_distributions() {
    let uniform = get_deciles(&[]);
    assert!(uniform.iter().all(|&n| (1700..=2300).contains(&n)), "random gets spread evenly: {uniform:?}");
    let gauss = get_deciles(&["task.0.phase.1.key_pattern=\"gaussian\""]);
    assert!(gauss[4] + gauss[5] > 5 * (gauss[0] + gauss[9]), "gaussian gets gather in the middle: {gauss:?}");
    let zipf = get_deciles(&["task.0.phase.1.key_pattern=\"zipf\""]);
    let (max, min) = (*zipf.iter().max().unwrap(), *zipf.iter().min().unwrap());
    assert!(max > 0 && min < max, "zipf gets are skewed: {zipf:?}");
    assert_eq!(partition(20000, 3, 4), 15000..20000);
}

#[test]
fn gets_are_measured_and_the_fill_is_not() {
    let res = run_checked(KV, &[]);
    for t in &res.tasks {
        let q = t.requests.as_ref().expect("requests measured");
        assert_eq!(q.ops, 20000, "only the gets count");
        // A GET request on the wire: the 24-byte header and the key, "memtier-" and the
        // number of a key of this instance's part.
        let part = partition(20000, t.instance as u64, 4);
        let (lo, hi) = (24 + memtier_key_len(part.start + 1), 24 + memtier_key_len(part.end));
        assert!(q.bytes >= 20000 * lo && q.bytes <= 20000 * hi, "{}: {} not in {lo}..={hi} per get", t.instance, q.bytes);
        assert!(q.ops_per_s > 0.0 && q.window_ns > 0);
    }
}

#[test]
fn pipelining_multiplies_latency_not_throughput() {
    let one = run_checked(KV, &["task.0.phase.1.pipeline=1"]);
    let eight = run_checked(KV, &[]);
    let (a, b) = (one.tasks[0].requests.as_ref().unwrap(), eight.tasks[0].requests.as_ref().unwrap());
    // Nothing faults during the gets: the server's pace is the same, each request waits for
    // the seven ahead of it.
    assert!((a.ops_per_s / b.ops_per_s - 1.0).abs() < 0.01, "{} vs {}", a.ops_per_s, b.ops_per_s);
    let ratio = b.latency_ns.mean / a.latency_ns.mean;
    assert!((7.5..=8.5).contains(&ratio), "latency ratio {ratio}");
}

/// Four fio-like jobs, each reading its own 8 MiB file at random pages, in a 16 MiB cgroup.
const FIO: &str = r#"
name = "fio"
seed = 9
[machine]
cpus = 4
ram = "128MiB"
kernel_reserved = "16MiB"
memcg_limit = "16MiB"
file_device = "ramdisk"
[[task]]
name = "fio"
instances = 4
[[task.mapping]]
name = "file"
kind = "file"
size = "8MiB"
[[task.phase]]
mapping = "file"
pattern = "random"
access = "syscall"
write_ratio = 0.0
touches = 20000
"#;

#[test]
fn random_reads_collapse_readahead_to_about_a_page_per_read() {
    // 4 x 64 MiB of files read through a 16 MiB cgroup: ~94% of reads miss. Without fadvise,
    // on-demand readahead sees no sequential history and reads what was asked (apart from a
    // rare context-readahead window behind a cached run): about one page per read(), where
    // sequential readahead would bring in windows of up to 32.
    let big = "task.0.mapping.0.size=\"64MiB\"";
    let per_read = |res: &swaplab_core::stats::result::SimResult| {
        let reads: u64 = res.tasks.iter().map(|t| t.file_reads).sum();
        (res.vmstat["pgpgin"] / 4) as f64 / reads as f64
    };
    let normal = per_read(&run_checked(FIO, &[big]));
    assert!((0.85..=1.1).contains(&normal), "pages read per read() {normal}");
    // POSIX_FADV_RANDOM: exactly the page asked for, so never more than one per read.
    let random = per_read(&run_checked(FIO, &[big, "task.0.mapping.0.advice=\"random\""]));
    assert!((0.85..=1.0).contains(&random), "pages read per read() {random}");
}

#[test]
fn iodepth_bounds_the_reads_in_flight() {
    // NVMe answers after 20 us: with a depth of 8 a job keeps up to 8 misses in flight, which
    // overlaps their waits; on the synchronous ramdisk nothing stays in flight.
    let nvme = ["machine.file_device=\"nvme\"", "task.0.mapping.0.advice=\"random\""];
    let r = load(FIO, &[&nvme[..], &["task.0.phase.0.iodepth=8"]].concat());
    let (sim, deep) = run_resolved(&r);
    let errs = sim.check_invariants();
    assert!(errs.is_empty(), "{errs:?}");
    for t in sim.tasks.iter().filter(|t| t.name == "fio") {
        let q = t.requests.as_ref().expect("requests");
        assert_eq!(q.inflight_max, 8, "{}: the depth is reached and never exceeded", t.label());
        assert!(q.inflight.is_empty() && q.ops == t.file_reads, "{}: every read is reaped before the job exits", t.label());
    }
    let shallow = run_checked(FIO, &nvme);
    let iops = |res: &swaplab_core::stats::result::SimResult| res.tasks.iter().map(|t| t.requests.as_ref().unwrap().ops_per_s).sum::<f64>();
    assert!(iops(&deep) > 2.0 * iops(&shallow), "depth 8 {} vs depth 1 {}", iops(&deep), iops(&shallow));
    let (sim, _) = run_resolved(&load(FIO, &["task.0.phase.0.iodepth=8"]));
    assert!(sim.tasks.iter().filter_map(|t| t.requests.as_ref()).all(|q| q.inflight_max == 0), "ramdisk reads complete at submission");
}

#[test]
fn the_ramp_is_not_measured() {
    let timed = ["task.0.repeat=true", "task.0.time_limit=\"200ms\""];
    let all = run_checked(FIO, &timed);
    let ramped = run_checked(FIO, &[&timed[..], &["task.0.ramp_time=\"100ms\""]].concat());
    let (a, b) = (all.tasks[0].requests.as_ref().unwrap(), ramped.tasks[0].requests.as_ref().unwrap());
    assert!(b.ops < a.ops && b.ops > a.ops / 4, "{} of {}", b.ops, a.ops);
    assert!(b.window_ns <= 101_000_000 && b.window_ns > 90_000_000, "window {}", b.window_ns);
}

#[test]
fn requests_are_deterministic() {
    let json = |res: &swaplab_core::stats::result::SimResult| serde_json::to_string(&res.tasks).unwrap();
    let under_pressure = ["machine.ram=\"48MiB\"", "machine.kernel_reserved=\"8MiB\"", "task.0.phase.1.key_pattern=\"zipf\""];
    let text = KV.replacen("[[task]]", "[[swap]]\ndevice = \"ramdisk\"\nsize = \"64MiB\"\n[[task]]", 1);
    let a = run_checked(&text, &under_pressure);
    let b = run_checked(&text, &under_pressure);
    assert!(a.vmstat["pswpin"] > 0, "the gets swap");
    assert_eq!(json(&a), json(&b));
}
