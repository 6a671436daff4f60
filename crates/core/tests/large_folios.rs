//! Large page-cache folios (`pagecache.large_folios`, pagecache/folio.rs) and the statistics
//! 6.x reclaim reads as of their last flush (reclaim/classic/flushed.rs): the two mechanisms
//! behind a 6.18 host that scans a file beside an anonymous working set without swapping.

mod common;
use common::*;

/// One task mapping a 16 MiB file (4096 pages) and reading it in order on a machine where
/// nothing is reclaimed.
const SCAN: &str = r#"
name = "scan"
seed = 5
[machine]
cpus = 1
ram = "256MiB"
kernel_reserved = "16MiB"
[kernel]
profile = "6.x"
[[task]]
name = "reader"
[[task.mapping]]
name = "f"
kind = "file"
size = "16MiB"
[[task.phase]]
mapping = "f"
pattern = "sequential"
cycles = 1
write_ratio = 0.0
"#;

/// The evidence workload of docs/evidence/host-pagecache.md scaled down by four: an anonymous
/// working set written, then a file larger than what is left of the memory cgroup scanned
/// through a mapping, three times, the working set written again after each scan.
const SCAN_BESIDE_ANON: &str = r#"
name = "scan-beside-anon"
seed = 1
[machine]
cpus = 2
ram = "2GiB"
memcg_limit = "175MiB"
cgroup_version = 1
[kernel]
profile = "6.x"
swappiness = 150
[[swap]]
device = "sata-ssd"
size = "256MiB"
[[task]]
name = "db"
[[task.mapping]]
name = "heap"
kind = "anon"
size = "100MiB"
[[task.mapping]]
name = "data"
kind = "file"
size = "128MiB"
[[task.phase]]
mapping = "heap"
pattern = "sequential"
write_ratio = 1.0
[[task.phase]]
mapping = "data"
pattern = "sequential"
write_ratio = 0.0
[[task.phase]]
mapping = "heap"
pattern = "sequential"
write_ratio = 1.0
[[task.phase]]
mapping = "data"
pattern = "sequential"
write_ratio = 0.0
[[task.phase]]
mapping = "heap"
pattern = "sequential"
write_ratio = 1.0
[[task.phase]]
mapping = "data"
pattern = "sequential"
write_ratio = 0.0
[[task.phase]]
mapping = "heap"
pattern = "sequential"
write_ratio = 1.0
"#;

#[test]
fn fault_around_maps_large_folios_whole() {
    let base = run_checked(SCAN, &[]);
    let r = load(SCAN, &["pagecache.large_folios=true"]);
    let (sim, res) = run_resolved(&r);
    assert!(sim.check_invariants().is_empty(), "{:?}", sim.check_invariants());
    check_relations(&res, &r, "large folios");
    // Base pages: one fault per 16-page fault-around block; large folios: one per folio.
    let (faults_base, faults_large) = (v(&base, "pgfault"), v(&res, "pgfault"));
    assert!(faults_base >= 4096 / 16, "{faults_base}");
    assert!(faults_large <= 4096 / 32 + 8, "large folios: {faults_large} faults for 128 folios");
    assert_eq!(v(&res, "pgpgin"), v(&base, "pgpgin"), "the same pages are read");
}

#[test]
fn large_folios_refused_outside_6x_classic() {
    for bad in [&["pagecache.large_folios=true", "kernel.profile=4.14"][..], &["pagecache.large_folios=true", "kernel.reclaim=mglru"][..]] {
        let err = swaplab_core::config::load(SCAN, "scan.toml", &bad.iter().map(|s| s.to_string()).collect::<Vec<_>>()).expect_err("refused");
        assert!(err.to_string().contains("pagecache.large_folios"), "{err}");
    }
}

/// The regression this guards (issue 10, item 6): memcg reclaim isolates file folios whole
/// (`isolate_lru_folios` counts pages but takes folios), so a 32-page folio meets a reclaim
/// call's goal at DEF_PRIORITY and the anon list is scanned only its `size >> 12` share per
/// call; with base pages the model lowered the priority, scanned the anon list around more
/// than once between two writes of the working set and swapped it out, where the host
/// swapped nothing.
#[test]
fn memcg_reclaim_takes_file_folios_whole_and_spares_the_anon_working_set() {
    let reader = "machine.memory_stat_reader=100ms";
    let base = run_checked(SCAN_BESIDE_ANON, &[reader]);
    let r = load(SCAN_BESIDE_ANON, &[reader, "pagecache.large_folios=true"]);
    let (sim, large) = run_resolved(&r);
    assert!(sim.check_invariants().is_empty(), "{:?}", sim.check_invariants());
    check_relations(&large, &r, "large folios");
    assert!(v(&large, "pgscan_anon") * 3 < v(&base, "pgscan_anon") * 2, "anon scanned: large folios {} vs base pages {}", v(&large, "pgscan_anon"), v(&base, "pgscan_anon"));
    assert!(v(&large, "pswpout") * 4 < v(&base, "pswpout").max(1), "swapped: large folios {} vs base pages {}", v(&large, "pswpout"), v(&base, "pswpout"));
}

/// 6.x reclaim reads refault counts and list sizes as of the last statistics flush: a reader
/// of memory.stat flushes them often, the kernel's own worker every 2 s. The same run with
/// and without a reader therefore reclaims differently, and reproducibly.
#[test]
fn reclaim_sees_statistics_only_as_of_the_last_flush() {
    let ov = ["pagecache.large_folios=true"];
    let a = run_checked(SCAN_BESIDE_ANON, &ov);
    let b = run_checked(SCAN_BESIDE_ANON, &[ov[0], "machine.memory_stat_reader=100ms"]);
    assert_ne!(
        (v(&a, "pgscan_anon"), v(&a, "pgdeactivate")),
        (v(&b, "pgscan_anon"), v(&b, "pgdeactivate")),
        "a memory.stat reader changes what reclaim sees"
    );
    let again = run_checked(SCAN_BESIDE_ANON, &[ov[0], "machine.memory_stat_reader=100ms"]);
    assert_eq!(v(&b, "pgscan_anon"), v(&again, "pgscan_anon"), "deterministic");
    let err = swaplab_core::config::load(SCAN_BESIDE_ANON, "s.toml", &["machine.memory_stat_reader=10us".to_string()]).expect_err("refused");
    assert!(err.to_string().contains("machine.memory_stat_reader"), "{err}");
}

/// The evidence workload of docs/evidence/host-pagecache.md at its own size, at swappiness
/// 150 (its cell that swapped in the model and not on the host).
fn host_scan_beside_anon() -> String {
    SCAN_BESIDE_ANON
        .replace("ram = \"2GiB\"", "ram = \"24GiB\"")
        .replace("memcg_limit = \"175MiB\"", "memcg_limit = \"700MiB\"")
        .replace("size = \"256MiB\"", "size = \"1GiB\"")
        .replace("size = \"100MiB\"", "size = \"400MiB\"")
        .replace("size = \"128MiB\"", "size = \"512MiB\"")
}

/// The regression this guards (issue 10, item 6; pagecache/held.rs): a fault that finds its
/// folio cached holds a reference on it while it starts the next readahead window, and the
/// reclaim that window's charge runs cannot free it (`__remove_mapping`'s refcount freeze
/// fails). Before, the model's first deep memcg reclaim of a scan evicted the reader's own
/// folio; the reader took a major fault in the middle of the file, the read-around centred
/// there left every later readahead folio off the 32-page alignment, one folio no longer met
/// a reclaim call's goal, and the anon list was scanned (and, at swappiness 150, swapped:
/// 18,393 pages) far more than on the host. A 6.18 host takes one major fault per scan, at
/// page 0, and swaps nothing. Every era holds the reference (the base-page eras and MGLRU
/// run the same path below, with the invariant that no reference outlives its readahead).
#[test]
fn reclaim_keeps_the_folio_a_reader_holds_while_it_reads_ahead() {
    let scans = 3;
    let host = host_scan_beside_anon();
    let r = load(&host, &["pagecache.large_folios=true", "machine.memory_stat_reader=100ms"]);
    let (sim, res) = run_resolved(&r);
    assert!(sim.check_invariants().is_empty(), "{:?}", sim.check_invariants());
    assert_eq!(v(&res, "pgmajfault"), scans, "one major fault per scan, at page 0: the readahead chain is never lost");
    assert_eq!(v(&res, "pswpout"), 0, "swappiness 150 swaps nothing beside the scan, as on the host");
    for ov in [&["kernel.profile=4.14"][..], &["kernel.profile=3.14"][..], &["kernel.profile=2.6.28"][..], &["kernel.reclaim=mglru"][..]] {
        let r = load(SCAN_BESIDE_ANON, ov);
        let (sim, res) = run_resolved(&r);
        assert!(sim.check_invariants().is_empty(), "{ov:?}: {:?}", sim.check_invariants());
        assert!(v(&res, "pgmajfault") >= scans, "{ov:?}: every scan starts cold at page 0");
    }
}
