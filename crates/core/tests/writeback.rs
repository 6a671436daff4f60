//! Dirty pages and writeback (writeback/): a writer over the dirty limits is throttled while
//! the flusher writes in the background; below them, background and periodic (kupdate)
//! writeback; reclaim writes dirty file pages only as each era allows.

mod common;
use common::*;
use swaplab_core::stats::result::SimResult;

/// One task writing a 96 MiB file with write() on a 256 MiB machine: nothing is reclaimed.
/// The file device is an HDD, far slower than the copy into the page cache.
const WRITER: &str = r#"
name = "writeback"
seed = 5
[machine]
cpus = 2
ram = "256MiB"
kernel_reserved = "16MiB"
file_device = "hdd"
[kernel]
profile = "6.x"
[[task]]
name = "writer"
[[task.mapping]]
name = "f"
kind = "file"
size = "96MiB"
[[task.phase]]
mapping = "f"
pattern = "sequential"
cycles = 1
write_ratio = 1.0
access = "syscall"
"#;

fn writer(res: &SimResult) -> &swaplab_core::stats::result::TaskResult {
    res.tasks.iter().find(|t| t.name == "writer").expect("writer task")
}

fn peak(series: &[u64]) -> u64 {
    series.iter().copied().max().unwrap_or(0)
}

#[test]
fn a_writer_over_dirty_ratio_sleeps_while_the_flusher_writes() {
    let res = run_checked(WRITER, &[]);
    let w = writer(&res);
    assert!(w.dirty_pauses > 0 && w.dirty_throttled_ns > 0, "the writer was never throttled: {} pauses", w.dirty_pauses);
    // The flusher wrote while the writer ran; reclaim wrote nothing (no memory pressure).
    assert!(v(&res, "pgpgout") > 0, "nothing written back");
    assert_eq!(v(&res, "nr_vmscan_write"), 0);
    // Dirty + writeback pages stay near the dirty limit (20% of ~240 MiB dirtyable: ~12k
    // pages), far below the 24k pages written.
    let held: Vec<u64> = res.timeseries.nr_dirty.iter().zip(&res.timeseries.nr_writeback).map(|(d, w)| d + w).collect();
    assert!(peak(&held) < 14_000, "dirty pages ran to {} pages", peak(&held));
    assert!(peak(&res.timeseries.nr_writeback) > 0, "no writeback in flight in any sample");
    // Without a limit (dirty_bytes = the whole machine) the same writer is never throttled and
    // finishes at memory speed.
    let free = run_checked(WRITER, &["kernel.dirty_bytes=1073741824", "kernel.dirty_background_bytes=1073741824"]);
    assert_eq!(writer(&free).dirty_pauses, 0);
    assert!(w.elapsed_ns > 5 * writer(&free).elapsed_ns, "throttled {} ns vs free {} ns", w.elapsed_ns, writer(&free).elapsed_ns);
}

/// `WRITER` with a file of `size`, then a phase that reads it with 1 ms of computing per page
/// (the task keeps the file open for a while: a finished task's file leaves the page cache).
fn write_then_wait(size: &str) -> String {
    format!(
        "{}{}",
        WRITER.replace("size = \"96MiB\"", &format!("size = \"{size}\"")),
        "[[task.phase]]\nmapping = \"f\"\npattern = \"sequential\"\ncycles = 2\nwrite_ratio = 0.0\ncompute = \"1ms\"\n"
    )
}

#[test]
fn dirty_pages_above_the_background_threshold_are_written_without_throttling() {
    // 8 MiB written under dirty_background_bytes = 4 MiB, far below dirty_bytes: the flusher
    // starts at once (no 30 s expiry in a run this short) and the writer never sleeps.
    let text = write_then_wait("8MiB");
    let res = run_checked(&text, &["kernel.dirty_background_bytes=4194304", "kernel.dirty_bytes=67108864"]);
    assert_eq!(writer(&res).dirty_pauses, 0);
    assert!(v(&res, "pgpgout") >= 4096, "background writeback wrote only {} KiB", v(&res, "pgpgout"));
    // Below the background threshold nothing is written before the data expires.
    let res = run_checked(&text, &[]);
    assert_eq!(v(&res, "pgpgout"), 0, "written back before expiry");
}

#[test]
fn the_periodic_flush_writes_expired_inodes() {
    // 4 MiB dirtied, then the task computes for ~2 s: with a 0.5 s expiry and a 0.2 s period
    // the flusher's kupdate pass writes the whole file.
    let text = write_then_wait("4MiB");
    let res = run_checked(&text, &["kernel.dirty_expire_centisecs=50", "kernel.dirty_writeback_centisecs=20"]);
    assert_eq!(v(&res, "pgpgout"), 4096, "the expired file was not written exactly once");
    assert_eq!(*res.timeseries.nr_dirty.last().unwrap(), 0);
    let res = run_checked(&text, &["kernel.dirty_writeback_centisecs=0"]);
    assert_eq!(v(&res, "pgpgout"), 0, "periodic writeback is off");
}

/// A task dirtying a shared file mapping twice the size of its memory cgroup: reclaim meets
/// dirty file pages.
const DIRTY_MMAP: &str = r#"
name = "dirty-mmap"
seed = 3
[machine]
cpus = 1
ram = "512MiB"
kernel_reserved = "16MiB"
memcg_limit = "32MiB"
file_device = "nvme"
[[task]]
name = "writer"
[[task.mapping]]
name = "f"
kind = "file"
size = "64MiB"
[[task.phase]]
mapping = "f"
pattern = "sequential"
cycles = 2
write_ratio = 1.0
"#;

#[test]
fn memcg_reclaim_leaves_dirty_file_pages_to_the_flusher_since_3_2() {
    // Limit reclaim is direct reclaim: since 3.2 it never writes a file page; it leaves dirty
    // pages to the flusher (marked for immediate reclaim, and the flusher woken when a batch
    // is nothing but unqueued dirty pages). (Limits of 90/80%: the memcg's own dirty limit,
    // 4.2+, and its background writeback would otherwise keep most pages clean before reclaim
    // meets them.)
    for profile in ["3.14", "4.14", "6.x"] {
        let res = run_checked(DIRTY_MMAP, &[&format!("kernel.profile={profile}"), "kernel.dirty_ratio=90", "kernel.dirty_background_ratio=80"]);
        assert_eq!(v(&res, "nr_vmscan_write"), 0, "{profile}: reclaim wrote file pages");
        assert!(v(&res, "pgpgout") >= 64 * 1024, "{profile}: the flusher wrote {} KiB", v(&res, "pgpgout"));
        assert!(v(&res, "pgsteal_file") > 0);
    }
    // 2.6.28: every reclaimer writes dirty file pages itself.
    let res = run_checked(DIRTY_MMAP, &["kernel.profile=2.6.28", "kernel.dirty_ratio=90", "kernel.dirty_background_ratio=80"]);
    assert!(v(&res, "nr_vmscan_write") > 0, "2.6.28 reclaim wrote no file page");
    assert_eq!(v(&res, "nr_vmscan_immediate_reclaim"), 0);
}

#[test]
fn bad_dirty_knobs_are_one_clear_error() {
    for (set, key) in [("kernel.dirty_ratio=101", "kernel.dirty_ratio"), ("kernel.dirty_bytes=4096", "kernel.dirty_bytes"), ("kernel.dirty_expire_centisecs=99999999", "kernel.dirty_expire_centisecs")] {
        let err = swaplab_core::config::load(WRITER, "w.toml", &[set.to_string()]).err().unwrap_or_else(|| panic!("{set} accepted"));
        let msg = err.to_string();
        assert!(msg.contains(key) && !msg.contains('\n'), "{set}: {msg}");
    }
}

/// The writer in a 128 MiB memory cgroup of a 2 GiB machine, with byte dirty limits that the
/// global domain never reaches: in the unified hierarchy the memcg domain converts them into
/// a ratio of the global dirtyable memory (a small fraction of the cgroup), so the writer
/// sleeps; the legacy hierarchy has no memcg domain and the writer runs free.
#[test]
fn only_a_cgroup_v2_memcg_has_its_own_dirty_domain() {
    let text = WRITER.replace("ram = \"256MiB\"", "ram = \"2GiB\"\nmemcg_limit = \"128MiB\"").replace("size = \"96MiB\"", "size = \"64MiB\"");
    let limits = ["kernel.dirty_bytes=268435456", "kernel.dirty_background_bytes=134217728"];
    let v2 = run_checked(&text, &limits);
    let v1 = run_checked(&text, &[&limits[..], &["machine.cgroup_version=1"]].concat());
    assert!(writer(&v2).dirty_pauses > 0, "the v2 memcg domain never throttled the writer");
    assert_eq!(writer(&v1).dirty_pauses, 0, "a v1 memcg throttled its writer");
    assert!(writer(&v2).elapsed_ns > 2 * writer(&v1).elapsed_ns, "v2 {} ns vs v1 {} ns", writer(&v2).elapsed_ns, writer(&v1).elapsed_ns);
}

/// Found by the property test (it hung there): two tasks rewriting skewed file pages under a
/// memory cgroup next to swapping tasks. At times every dirty page is one still under
/// writeback (dirtied again after the flusher cleaned it), which WB_SYNC_NONE writeback
/// skips; the flusher then spun at one instant forever. Guards that it waits for the
/// writeback in flight (`inode_sleep_on_writeback`) or sleeps until its timer instead.
const REDIRTY_UNDER_WRITEBACK: &str = r#"
seed = 1015995505921075446
[machine]
cpus = 2
ram = "46MiB"
kernel_reserved = "4MiB"
memcg_limit = 20955136
[sim]
time_limit = "30s"
[kernel]
profile = "6.x"
readahead = "fixed-run"
bailout = "proportional"
page_cluster = 5
swappiness = 6
vma_ra_enabled = true
[[swap]]
device = "sata-ssd"
size = 43278336
[[task]]
name = "t0"
instances = 2
[[task.mapping]]
name = "m0"
kind = "anon"
size = 27807744
[[task.phase]]
mapping = "m0"
pattern = "strided"
cycles = 1.1380711477823902
write_ratio = 0.3902042470481568
backward = false
stride = 61
block_pages = 114
zipf_theta = 0.3249725602118199
[[task.phase]]
mapping = "m0"
pattern = "strided"
cycles = 0.6152134493418523
write_ratio = 1.0
backward = false
stride = 22
block_pages = 29
zipf_theta = 0.8462288174855199
[[task]]
name = "t1"
instances = 2
[[task.mapping]]
name = "m0"
kind = "shmem"
size = 15310848
[[task.phase]]
mapping = "m0"
pattern = "sequential"
cycles = 1.260231929578273
write_ratio = 0.0
backward = true
stride = 49
block_pages = 22
zipf_theta = 0.3687395890980847
[[task]]
name = "t2"
instances = 2
[[task.mapping]]
name = "m0"
kind = "file"
size = 13422592
[[task.mapping]]
name = "m1"
kind = "file"
size = 11591680
[[task.phase]]
mapping = "m0"
pattern = "zipf"
cycles = 1.0228249049895632
write_ratio = 1.0
backward = true
stride = 31
block_pages = 72
zipf_theta = 1.4495152483742013
[[task.phase]]
mapping = "m1"
pattern = "zipf"
cycles = 1.8320378052402433
write_ratio = 0.0
backward = false
stride = 25
block_pages = 94
zipf_theta = 0.49878370987031434
"#;

#[test]
fn flusher_never_spins_on_pages_already_under_writeback() {
    let res = run_checked(REDIRTY_UNDER_WRITEBACK, &[]);
    assert!(v(&res, "pgpgout") > 0, "the flusher wrote nothing");
    for t in &res.tasks {
        assert!(t.end_ns > 0, "task {} never finished", t.name);
    }
}

/// Guards 2.6.28's throttle (writeback/legacy.rs): a writer over the dirty limit writes back
/// itself and naps in congestion_wait, with that kernel's 10 % limit, where 6.x pauses it
/// against the flusher's bandwidth at 20 %.
#[test]
fn writers_write_back_themselves_on_2_6_28() {
    let old = run_checked(WRITER, &["kernel.profile=2.6.28"]);
    let new = run_checked(WRITER, &[]);
    let held = |r: &SimResult| peak(&r.timeseries.nr_dirty.iter().zip(&r.timeseries.nr_writeback).map(|(d, w)| d + w).collect::<Vec<_>>());
    assert_eq!(old.config.config.kernel.dirty_ratio, Some(10), "2.6.28's vm_dirty_ratio");
    assert_eq!(new.config.config.kernel.dirty_ratio, Some(20));
    // The writer's own write-back: it was throttled (congestion_wait naps) and spent CPU on
    // pages it wrote, beyond what it spent copying them.
    let (wo, wn) = (writer(&old), writer(&new));
    assert!(wo.dirty_pauses > 0, "the 2.6.28 writer never napped");
    assert!(v(&old, "pgpgout") > 0);
    // ~10 % of ~240 MiB dirtyable is ~6k pages; 6.x holds about twice that.
    assert!(held(&old) < 9_000, "2.6.28 held {} dirty + writeback pages", held(&old));
    assert!(held(&new) > held(&old), "6.x {} vs 2.6.28 {}", held(&new), held(&old));
    assert!(wn.dirty_throttled_ns > 0);
}

/// A writer slower than its device, on two CPUs: the flusher, woken as the writer passes the
/// background threshold, writes beside it, so dirty + writeback pages stay below the freerun
/// ceiling and the writer never sleeps. (Samples are events too and bound how far a task runs
/// ahead, so this run keeps the default 100 ms interval.) Guards the engine's horizon: a task whose kernel work
/// woke another task returns to the event loop, instead of running on, alone, to a horizon
/// computed before the wake (host-pagecache-io's writer ran 26 ms ahead of the flusher it had
/// woken, dirtied 42 MiB and was paused 13 times).
#[test]
fn a_writer_slower_than_its_device_runs_beside_the_flusher_unthrottled() {
    let text = WRITER.replace("size = \"96MiB\"", "size = \"256MiB\"").replace("ram = \"256MiB\"", "ram = \"2GiB\"").replace("file_device = \"hdd\"", "file_device = \"ramdisk\"");
    let res = run_checked(&text, &["kernel.dirty_bytes=67108864", "kernel.dirty_background_bytes=16777216"]);
    let w = writer(&res);
    assert_eq!(w.dirty_pauses, 0, "throttled for {} ns", w.dirty_throttled_ns);
    assert!(v(&res, "pgpgout") >= 4 * 65_536 * 3 / 4, "the flusher wrote only {} KiB", v(&res, "pgpgout"));
}

/// Guards 2.6.28's `determine_dirtyable_memory` (free + every LRU list, anon included): a
/// machine half full of resident anonymous memory gives a writer the same dirty limit as an
/// empty one, where 3.14 and later (free + file LRU) would halve it.
#[test]
fn anon_memory_counts_as_dirtyable_on_2_6_28() {
    let writer = WRITER.replace("size = \"96MiB\"", "size = \"64MiB\"");
    let with_anon = format!(
        "{writer}\n[[task]]\nname = \"anon\"\nbackground = true\nrepeat = true\ntime_limit = \"600s\"\n[[task.mapping]]\nname = \"a\"\nkind = \"anon\"\nsize = \"112MiB\"\n[[task.phase]]\nmapping = \"a\"\npattern = \"sequential\"\ncompute = \"1us\"\n"
    );
    let held = |r: &SimResult| peak(&r.timeseries.nr_dirty.iter().zip(&r.timeseries.nr_writeback).map(|(d, w)| d + w).collect::<Vec<_>>());
    let alone = run_checked(&writer, &["kernel.profile=2.6.28"]);
    let beside = run_checked(&with_anon, &["kernel.profile=2.6.28"]);
    assert_eq!(v(&beside, "pswpout"), 0, "the anon task was swapped: the test needs it resident");
    assert!(held(&alone) > 1_000, "2.6.28 held only {} dirty + writeback pages", held(&alone));
    assert!(
        held(&beside) * 10 >= held(&alone) * 8,
        "112 MiB of anon cut the dirty pages held from {} to {}",
        held(&alone),
        held(&beside)
    );
}
