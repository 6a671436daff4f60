//! The page cache's reading side (pagecache/): readahead windows of read() and of page faults,
//! mmap read-around and its give-up rule, MADV_RANDOM, and fault-around. Each case runs the
//! real engine on a machine large enough that nothing is reclaimed, so every page read stays
//! cached and the file's state after the run shows what readahead did.

mod common;
use common::*;
use swaplab_core::engine::Sim;
use swaplab_core::mm::*;

/// One task reading a 16 MiB file (4096 pages) on a 256 MiB machine: nothing is reclaimed.
const FILE: &str = r#"
name = "pagecache"
seed = 11
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
access = "syscall"
"#;

/// A foreground task that lasts ~0.5 s of virtual time: with it, the reader can be made a
/// background task that keeps its file open (a finished task's files are dropped), so the
/// page cache can be inspected after the run.
const TIMER: &str = r#"
[[task]]
name = "timer"
[[task.mapping]]
name = "a"
kind = "anon"
size = "2MiB"
[[task.phase]]
mapping = "a"
pattern = "sequential"
cycles = 1
compute = "1ms"
"#;

/// `FILE` with the reader in the background (repeating) beside `TIMER`.
fn held() -> String {
    format!("{}{TIMER}", FILE.replace("name = \"reader\"\n", "name = \"reader\"\nbackground = true\nrepeat = true\ntime_limit = \"10s\"\n").replace("cpus = 1", "cpus = 2"))
}

const FILE_PAGES: u64 = 4096;

fn run(overrides: &[&str]) -> (Sim, swaplab_core::stats::result::SimResult) {
    run_text(FILE, overrides)
}

fn run_text(text: &str, overrides: &[&str]) -> (Sim, swaplab_core::stats::result::SimResult) {
    let r = load(text, overrides);
    let (sim, res) = run_resolved(&r);
    let errs = sim.check_invariants();
    assert!(errs.is_empty(), "invariants broken with {overrides:?}:\n  {}", errs.join("\n  "));
    check_relations(&res, &r, &format!("{overrides:?}"));
    (sim, res)
}

/// Pages of the file in the page cache, and of those the ones nobody read or mapped (brought
/// by readahead only: neither PG_referenced, nor active, nor mapped).
fn cached_and_unused(sim: &Sim) -> (u64, u64) {
    let obj = &sim.mem.objects[0];
    let (mut cached, mut unused) = (0, 0);
    for (i, &e) in obj.entries.iter().enumerate() {
        if e & PTE_PRESENT == 0 {
            continue;
        }
        cached += 1;
        let fr = &sim.mem.frames[pte_frame(e) as usize];
        let mapped = sim.mem.vmas[obj.vmas[0] as usize].ptes[i] & PTE_PRESENT != 0;
        if !fr.has(PG_REFERENCED) && !fr.has(PG_ACTIVE) && !mapped {
            unused += 1;
        }
    }
    (cached, unused)
}

#[test]
fn sequential_read_ramps_to_read_ahead_kb() {
    for (kb, pages) in [(128u64, 32u64), (512, 128)] {
        let (sim, res) = run(&[&format!("pagecache.read_ahead_kb={kb}")]);
        let ra = sim.mem.objects[0].ra;
        assert_eq!((ra.size, ra.async_size), (pages, pages), "read_ahead_kb={kb}: the window ramps to the maximum, all asynchronous");
        // Every page read exactly once, no fault taken by read().
        assert_eq!(v(&res, "pgpgin"), FILE_PAGES * PAGE_KB, "read_ahead_kb={kb}");
        assert_eq!(v(&res, "pgmajfault"), 0);
        assert_eq!(ra.prev_index, FILE_PAGES - 1);
    }
}

#[test]
fn sequential_read_without_readahead_reads_page_by_page() {
    let (sim, res) = run(&["pagecache.read_ahead_kb=0"]);
    assert_eq!(v(&res, "pgpgin"), FILE_PAGES * PAGE_KB);
    assert_eq!(sim.mem.objects[0].ra.size, 0);
    // Each read waited for its own page: far slower than with readahead.
    let (_, fast) = run(&[]);
    assert!(res.tasks[0].elapsed_ns > 3 * fast.tasks[0].elapsed_ns, "{} vs {}", res.tasks[0].elapsed_ns, fast.tasks[0].elapsed_ns);
}

#[test]
fn random_read_does_no_readahead() {
    let (sim, res) = run_text(&held(), &["task.0.phase.0.pattern=random", "task.0.phase.0.touches=2000"]);
    let (cached, unused) = cached_and_unused(&sim);
    assert!(cached > 1000, "the reader ran: {cached} pages cached");
    assert_eq!(v(&res, "pgpgin"), cached * PAGE_KB);
    // Only a read at page 0, or right after the previous one, opens a window (<= 3 extra
    // pages each); 2000 random reads of 4096 pages meet that a handful of times at most.
    assert!(unused <= 12, "random read() read {unused} pages nobody asked for ({cached} cached)");
    let (_, fadv) = run(&["task.0.phase.0.pattern=random", "task.0.phase.0.touches=2000", "task.0.mapping.0.advice=random"]);
    let (sim_f, _) = run_text(&held(), &["task.0.phase.0.pattern=random", "task.0.phase.0.touches=2000", "task.0.mapping.0.advice=random"]);
    // (At most the page whose read is in flight when the run ends is not yet read.)
    assert!(cached_and_unused(&sim_f).1 <= 1, "POSIX_FADV_RANDOM reads only what is asked");
    assert!(v(&fadv, "pgpgin") <= v(&res, "pgpgin"));
}

#[test]
fn mmap_read_around_gives_up_after_lots_of_misses() {
    // A 256 MiB file, so that random faults for the timer's lifetime leave most of it uncached.
    let big = ["machine.ram=\"1GiB\"", "task.0.mapping.0.size=\"256MiB\"", "task.0.phase.0.access=pte", "task.0.phase.0.pattern=random"];
    // Without fault-around only cache hits pay misses back: read-around (32 pages centred on
    // each miss) stops once misses outnumber hits by MMAP_LOTSAMISS (100), then only the
    // faulting page is read. So more than one page per miss, but far fewer than 32.
    let (sim, res) = run_text(&held(), &[&big[..], &["pagecache.fault_around_bytes=4096"]].concat());
    let (cached, unused) = cached_and_unused(&sim);
    let major = v(&res, "pgmajfault");
    assert!(unused > 100 * 20, "read-around should have read ahead: {unused} unused of {cached}");
    assert!(unused < 101 * 32, "read-around must stop: {unused} unused of {cached} for {major} major faults");
    assert!(sim.mem.objects[0].ra.mmap_miss > 100);
    // With fault-around (6.x) the retry of each miss maps the block just read, and every page
    // mapped that way pays back a miss: read-around never gives up on a random reader.
    let (sim_fa, res_fa) = run_text(&held(), &big);
    let (cached_fa, _) = cached_and_unused(&sim_fa);
    assert!(cached_fa > 20 * v(&res_fa, "pgmajfault"), "{cached_fa} cached for {} misses", v(&res_fa, "pgmajfault"));
    let (sim_r, res_r) = run_text(&held(), &[&big[..], &["task.0.mapping.0.advice=random"]].concat());
    // (At most the page whose read is in flight when the run ends is not yet mapped.)
    assert!(cached_and_unused(&sim_r).1 <= 1, "MADV_RANDOM: no read-around");
    assert!(v(&res_r, "pgpgin") <= (v(&res_r, "pgmajfault") + 1) * PAGE_KB, "one page per major fault");
}

#[test]
fn fault_around_maps_sixteen_cached_pages_per_fault() {
    // Read the file once through read() (all cached), then fault it in through the mapping:
    // each read fault maps its aligned 16-page block, so one fault per 16 pages, none major.
    let text = format!("{FILE}[[task.phase]]\nmapping = \"f\"\npattern = \"sequential\"\ncycles = 1\nwrite_ratio = 0.0\naccess = \"pte\"\n");
    let r = load(&text, &[]);
    let (sim, res) = run_resolved(&r);
    assert!(sim.check_invariants().is_empty());
    assert_eq!(v(&res, "pgmajfault"), 0);
    assert_eq!(v(&res, "pgfault"), FILE_PAGES / 16);
    assert_eq!(res.tasks[0].minor_faults, FILE_PAGES / 16);
    let r = load(&text, &["pagecache.fault_around_bytes=4096"]);
    let (_, off) = run_resolved(&r);
    assert_eq!(v(&off, "pgfault"), FILE_PAGES, "fault_around_bytes=4096 turns fault-around off");
    let r = load(&text, &["kernel.profile=\"3.14\""]);
    let (_, old) = run_resolved(&r);
    assert_eq!(v(&old, "pgfault"), FILE_PAGES, "no fault-around before 3.15");
}

#[test]
fn sequential_mmap_reads_ahead_and_faults_rarely() {
    let (sim, res) = run_text(&held(), &["task.0.phase.0.access=pte"]);
    assert_eq!(v(&res, "pgpgin"), FILE_PAGES * PAGE_KB);
    let major = v(&res, "pgmajfault");
    // Read-around plus async readahead on the marks: a handful of major faults.
    assert!(major <= 4, "{major} major faults for a sequential mmap scan");
    assert!(v(&res, "pgfault") < FILE_PAGES / 4, "fault-around maps most pages: {} faults", v(&res, "pgfault"));
    assert_eq!(cached_and_unused(&sim).1, 0, "everything read was used");
}

#[test]
fn bad_pagecache_knob_is_one_clear_error() {
    let e = swaplab_core::config::load(FILE, "w.toml", &["pagecache.fault_around_bytes=4194304".into()]).unwrap_err();
    assert!(e.to_string().contains("pagecache.fault_around_bytes"), "{e}");
}
