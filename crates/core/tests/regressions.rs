//! Regression tests, each named after the kernel behaviour it guards
//! (kernel-algorithms.md section in the comment).

mod common;
use common::*;

/// §1.5: VMA readahead reads the virtually adjacent pages of the fault, so a sequential walk
/// over an anon mapping is served almost entirely by readahead, whatever the slot order.
#[test]
fn vma_readahead_reads_virtually_adjacent_pages() {
    let res = run_checked(BASE, &["kernel.readahead=vma"]);
    assert_eq!(res.summary.readahead, "vma");
    let (ra, hit, maj, pin) = (v(&res, "swap_ra"), v(&res, "swap_ra_hit"), v(&res, "pgmajfault"), v(&res, "pswpin"));
    assert!(ra > 0 && hit * 100 >= ra * 95, "sequential VMA readahead hit rate {hit}/{ra} < 95%");
    // Each major fault brings its window: far fewer major faults than pages read.
    assert!(maj * 4 <= pin, "pgmajfault {maj} vs pswpin {pin}: readahead is not reading ahead");
    // Backward walks are detected too (§1.5 direction).
    let back = run_checked(BASE, &["kernel.readahead=vma", "task.0.phase.0.backward=true"]);
    let (ra, hit) = (v(&back, "swap_ra"), v(&back, "swap_ra_hit"));
    assert!(ra > 0 && hit * 100 >= ra * 90, "backward VMA readahead hit rate {hit}/{ra}");
    assert!(v(&back, "pgmajfault") * 4 <= v(&back, "pswpin"));
}

/// VMA readahead follows virtual addresses even when the swap slots are scattered: two tasks
/// interleave their swap-outs, so offset-based readahead of one task's slots reads the other's
/// pages, while VMA readahead still reads the right ones.
#[test]
fn vma_readahead_beats_offset_readahead_when_slots_interleave() {
    let text = multi_task(2, 2, "36MiB", Some(("nvme", "96MiB")), "anon", "24MiB", "sequential", 3.0);
    let vma = run_checked(&text, &["kernel.readahead=vma"]);
    let fixed = run_checked(&text, &["kernel.readahead=fixed"]);
    let rate = |r: &swaplab_core::stats::result::SimResult| v(r, "swap_ra_hit") as f64 / v(r, "swap_ra").max(1) as f64;
    assert!(v(&vma, "swap_ra") > 0 && v(&fixed, "swap_ra") > 0);
    assert!(rate(&vma) >= rate(&fixed), "vma hit rate {:.3} < fixed {:.3}", rate(&vma), rate(&fixed));
    assert!(rate(&vma) > 0.9, "vma hit rate {:.3}", rate(&vma));
}

/// §1.7: a synchronous device (zram) on a 4.14+ kernel swaps in with the bypass: no swap
/// cache, no readahead, one page per major fault.
#[test]
fn synchronous_device_bypasses_swap_cache_and_readahead() {
    for ra in ["vma", "fixed", "adaptive"] {
        let res = run_checked(BASE, &["swap.0.device=zram", &format!("kernel.readahead={ra}")]);
        assert_eq!(v(&res, "swap_ra"), 0, "{ra}: zram bypass but swap_ra > 0");
        assert_eq!(v(&res, "swap_ra_hit"), 0, "{ra}");
        assert!(v(&res, "pswpin") > 0, "{ra}: must swap in");
        assert_eq!(v(&res, "pswpin"), v(&res, "pgmajfault"), "{ra}: one page read per major fault");
    }
    // Before 4.15 there is no bypass: zram goes through the swap cache and reads ahead.
    let old = run_checked(BASE, &["swap.0.device=zram", "kernel.profile=\"3.14\""]);
    assert!(v(&old, "swap_ra") > 0, "3.14 on zram must still read ahead");
    assert!(v(&old, "pswpin") > v(&old, "pgmajfault"));
    // shmem never takes the bypass (it is an anon-only path): readahead still happens.
    let shm = run_checked(BASE, &["swap.0.device=zram", "task.0.mapping.0.kind=shmem"]);
    assert!(v(&shm, "swap_ra") > 0, "shmem on zram must use the swap cache and readahead");
}

/// §1.5: one rotational swap device turns VMA readahead off system-wide (nr_rotate_swap).
#[test]
fn rotational_swap_disables_vma_readahead() {
    let res = run_checked(BASE, &["swap.0.device=hdd", "kernel.readahead=vma"]);
    assert_eq!(res.summary.readahead, "adaptive");
    let auto = run_checked(BASE, &["swap.0.device=hdd"]);
    assert_eq!(auto.summary.readahead, "adaptive", "6.x auto on HDD");
    // Also when the HDD is only the second device.
    let text = BASE.replace("[[task]]", "[[swap]]\ndevice = \"hdd\"\nsize = \"16MiB\"\n\n[[task]]");
    let two = run_checked(&text, &["kernel.readahead=vma"]);
    assert_eq!(two.summary.readahead, "adaptive", "any rotational device turns VMA readahead off");
    // And vma_ra_enabled = false does the same on an SSD.
    let off = run_checked(BASE, &["kernel.vma_ra_enabled=false"]);
    assert_eq!(off.summary.readahead, "adaptive");
    let on = run_checked(BASE, &["swap.0.device=sata-ssd"]);
    assert_eq!(on.summary.readahead, "vma");
}

/// §1.3 / seed 003: the adaptive window stops reading ahead for random access, the fixed one
/// keeps reading 1 << page_cluster pages per fault; sequential access is unaffected.
#[test]
fn adaptive_window_cuts_random_readahead() {
    for kind in ["anon", "shmem"] {
        let k = format!("task.0.mapping.0.kind={kind}");
        let fixed = run_checked(BASE, &["kernel.readahead=fixed", "task.0.phase.0.pattern=random", &k]);
        let adaptive = run_checked(BASE, &["kernel.readahead=adaptive", "task.0.phase.0.pattern=random", &k]);
        let old = run_checked(BASE, &["kernel.readahead=adaptive-2012", "task.0.phase.0.pattern=random", &k]);
        let (f, a, o) = (v(&fixed, "swap_ra"), v(&adaptive, "swap_ra"), v(&old, "swap_ra"));
        assert!(a * 10 < f, "{kind}: adaptive swap_ra {a} not much lower than fixed {f}");
        assert!(o * 10 < f, "{kind}: adaptive-2012 swap_ra {o} not much lower than fixed {f}");
        assert!(v(&adaptive, "pswpin") < v(&fixed, "pswpin"), "{kind}: adaptive reads less");
        let fs = run_checked(BASE, &["kernel.readahead=fixed", &k]);
        let as_ = run_checked(BASE, &["kernel.readahead=adaptive", &k]);
        let (fr, ar) = (v(&fs, "swap_ra"), v(&as_, "swap_ra"));
        assert!(ar * 10 >= fr * 9, "{kind}: sequential adaptive swap_ra {ar} vs fixed {fr}");
    }
}

/// §1.2.2 / §1.5: page-cluster 0 reads only the faulting page under every policy.
#[test]
fn page_cluster_zero_means_no_readahead() {
    for ra in ["fixed", "fixed-run", "adaptive", "adaptive-2012", "vma"] {
        for kind in ["anon", "shmem"] {
            let res = run_checked(BASE, &["kernel.page_cluster=0", &format!("kernel.readahead={ra}"), &format!("task.0.mapping.0.kind={kind}")]);
            assert_eq!(v(&res, "swap_ra"), 0, "{ra}/{kind}: page_cluster 0 but swap_ra > 0");
            assert_eq!(v(&res, "pswpin"), v(&res, "pgmajfault"), "{ra}/{kind}: one page per major fault");
            assert!(v(&res, "pswpin") > 0);
        }
    }
    // And page_cluster 3 does read ahead on the same workload (the test above is not vacuous).
    let res = run_checked(BASE, &["kernel.readahead=fixed"]);
    assert!(v(&res, "swap_ra") > 0);
}

/// do_swap_page / shmem_swapin_folio count PGMAJFAULT for every read they issue: a page read
/// in and reclaimed before the faulting task could map it is read again, and that attempt is a
/// major fault of its own (3.14 and 4.14 on a tight machine do this a few times per run). With
/// page-cluster 0 every read is one major fault.
#[test]
fn every_swap_in_read_is_a_major_fault_even_when_read_twice() {
    let mut reread = 0;
    for (profile, dev, kind) in [("3.14", "nvme", "anon"), ("4.14", "hdd", "shmem"), ("4.14", "hdd", "anon"), ("3.14", "sata-ssd", "anon")] {
        let res = run_checked(BASE, &["kernel.page_cluster=0", &format!("kernel.profile=\"{profile}\""), &format!("swap.0.device={dev}"), &format!("task.0.mapping.0.kind={kind}"), "machine.ram=\"24MiB\""]);
        assert_eq!(v(&res, "pswpin"), v(&res, "pgmajfault"), "{profile}/{dev}/{kind}: pswpin vs pgmajfault");
        let task_faults: u64 = res.tasks.iter().map(|t| t.major_faults + t.minor_faults).sum();
        reread += v(&res, "pgfault") - task_faults;
    }
    assert!(reread > 0, "no page was read twice: the test no longer exercises the re-read");
}

/// page_cluster bounds the window: 1 << page_cluster for cluster readahead, and VMA readahead
/// is capped at 1 << 5 (SWAP_RA_ORDER_CEILING) pages.
#[test]
fn page_cluster_bounds_the_window() {
    for (ra, pc, max_win) in [("fixed", 2u64, 4u64), ("fixed", 4, 16), ("vma", 2, 4), ("vma", 7, 32)] {
        let res = run_checked(BASE, &[&format!("kernel.page_cluster={pc}"), &format!("kernel.readahead={ra}")]);
        let (pin, maj) = (v(&res, "pswpin"), v(&res, "pgmajfault"));
        assert!(pin <= maj * max_win, "{ra} pc={pc}: {pin} pages in {maj} faults > {max_win} per fault");
        assert!(pin * 10 >= maj * max_win * 7, "{ra} pc={pc}: sequential windows far below {max_win} pages ({pin}/{maj})");
    }
}

/// §1.5/§1.6: shmem has no VMA: its faults always use offset-based readahead, even with
/// readahead = "vma" (the 2012 posting's point about Shmem).
#[test]
fn shmem_never_uses_vma_readahead() {
    // Sequential shmem under "vma" behaves exactly like the offset-based adaptive window.
    let vma = run_checked(BASE, &["kernel.readahead=vma", "task.0.mapping.0.kind=shmem"]);
    let adaptive = run_checked(BASE, &["kernel.readahead=adaptive", "task.0.mapping.0.kind=shmem"]);
    assert_eq!(vma.vmstat, adaptive.vmstat, "shmem under vma readahead differs from the adaptive cluster path");
    // Whereas anon under "vma" does use the VMA path (differs from adaptive).
    let anon_vma = run_checked(BASE, &["kernel.readahead=vma"]);
    let anon_adaptive = run_checked(BASE, &["kernel.readahead=adaptive"]);
    assert_ne!(anon_vma.vmstat, anon_adaptive.vmstat, "anon vma and adaptive are the same path?");
}

/// §1.2.1: pre-3.14 readahead with "fixed-run" reads only the contiguous in-use run around the
/// target; "fixed" reads every in-use slot of the aligned window. Both read ahead on
/// sequential access and neither reads beyond 1 << page_cluster pages per fault.
#[test]
fn fixed_window_reads_at_most_the_aligned_block() {
    for ra in ["fixed", "fixed-run"] {
        let res = run_checked(BASE, &[&format!("kernel.readahead={ra}"), "task.0.phase.0.pattern=random"]);
        assert!(v(&res, "pswpin") <= 8 * v(&res, "pgmajfault") + v(&res, "swap_ra"), "{ra}");
        assert!(v(&res, "swap_ra") <= 7 * (v(&res, "pswpin") - v(&res, "swap_ra")), "{ra}: more than 7 readahead pages per target read");
    }
}

/// §1.4: since 4.14 only newly allocated readahead pages are marked, and on 6.x PG_readahead
/// no longer aliases PG_reclaim, so hits never exceed readahead pages; sequential access
/// consumes nearly all of them (on 4.14 too).
#[test]
fn readahead_hits_never_exceed_readahead_pages_on_modern_kernels() {
    for profile in ["4.14", "6.x"] {
        for ra in ["fixed", "fixed-run", "adaptive", "adaptive-2012", "vma"] {
            for pattern in ["sequential", "random", "strided"] {
                let res = run_checked(BASE, &[&format!("kernel.profile=\"{profile}\""), &format!("kernel.readahead={ra}"), &format!("task.0.phase.0.pattern={pattern}")]);
                if profile == "6.x" {
                    assert!(v(&res, "swap_ra_hit") <= v(&res, "swap_ra"), "{profile}/{ra}/{pattern}");
                }
                if pattern == "sequential" {
                    let pct = res.summary.ra_hit_pct.expect("sequential reads ahead");
                    assert!(pct >= 95.0, "{profile}/{ra}: sequential hit rate {pct}%");
                }
            }
        }
    }
}

/// Exiting tasks give back all their swap: after a run nothing holds swap entries.
#[test]
fn swap_entries_are_released_at_exit() {
    for kind in ["anon", "shmem"] {
        let r = load(BASE, &[&format!("task.0.mapping.0.kind={kind}")]);
        let (sim, res) = run_resolved(&r);
        assert!(v(&res, "pswpout") > 0);
        assert!(sim.check_invariants().is_empty());
        for vma in &sim.mem.vmas {
            assert_eq!(vma.swapents, 0, "{kind}: a VMA still holds swap entries after exit");
            assert_eq!(vma.rss, 0, "{kind}: a VMA still has resident pages after exit");
        }
    }
}

/// §3.2: swappiness 0 on a modern kernel avoids anon reclaim while file pages can go.
#[test]
fn swappiness_zero_prefers_file_pages() {
    let text = r#"
seed = 5
[machine]
ram = "32MiB"
kernel_reserved = "4MiB"
[kernel]
swappiness = 0
[[swap]]
device = "nvme"
size = "64MiB"
[[task]]
name = "t"
[[task.mapping]]
name = "a"
kind = "anon"
size = "12MiB"
[[task.mapping]]
name = "f"
kind = "file"
size = "32MiB"
[[task.phase]]
mapping = "a"
pattern = "sequential"
[[task.phase]]
mapping = "f"
pattern = "sequential"
cycles = 2
write_ratio = 0.0
[[task.phase]]
mapping = "a"
pattern = "sequential"
"#;
    let zero = run_checked(text, &[]);
    let high = run_checked(text, &["kernel.swappiness=200"]);
    assert!(v(&zero, "pgsteal_file") > 0);
    assert!(v(&zero, "pswpout") <= v(&high, "pswpout"), "swappiness 0 swapped more ({}) than 200 ({})", v(&zero, "pswpout"), v(&high, "pswpout"));
    assert!(v(&high, "pswpout") > 0, "swappiness 200 with a big file scan must swap some anon");
}

/// Workloads found by tests/properties.rs (HDD swap, 4.14) where direct reclaim once ran for
/// tens of thousands of stalls. What the kernel bounds is one direct reclaim call, not the
/// pages scanned per page reclaimed: `do_try_to_free_pages` (§3.5; the same loop in 2.6.28,
/// 3.14, 4.14 and 6.x) counts one ALLOCSTALL and walks priorities DEF_PRIORITY..0 once, each
/// `shrink_node` scanning at most `lru_size >> priority` of each of the 4 evictable lists
/// (`get_scan_count`, §3.7), at least one SWAP_CLUSTER_MAX batch each. So one call scans at
/// most 2 x the LRU (sum of L >> p) plus 13 x 4 batches, and the LRU never holds more than the
/// managed memory. A model that re-swept the lists within a call, or restarted a priority's
/// whole target after each sleep, breaks this bound.
///
/// The ratio of scanned to reclaimed pages is not bounded by any kernel mechanism: in 4.14 a
/// folio met under writeback is activated (c55e8d035b28) and comes back through the active
/// list, and anonymous writeback never stalls a direct reclaimer (`page_check_dirty_writeback`:
/// "Anonymous pages are not handled by flushers"). In hdd-zram-file, when direct reclaim met
/// a folio under writeback, ~12,800 of the ~13,500 managed pages were under writeback on
/// average, in ~104 merged write requests (at most 110: fewer than nr_requests, so
/// `get_request` never sleeps), and direct reclaim scans ~69 pages per page it frees.
#[test]
fn direct_reclaim_scans_at_most_one_priority_loop_per_stall_on_slow_swap() {
    use swaplab_core::reclaim::{DEF_PRIORITY, SWAP_CLUSTER_MAX};
    const EVICTABLE_LISTS: u64 = 4;
    for name in ["direct-reclaim-spiral-hdd-shmem", "direct-reclaim-spiral-hdd-zram-file"] {
        let path = format!("{}/tests/data/{name}.toml", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap();
        let machine = &load(&text, &[]).config.machine;
        let lru_max = machine.ram.pages() - machine.kernel_reserved.pages();
        let priorities = DEF_PRIORITY as u64 + 1;
        let per_call = (0..priorities).map(|p| lru_max >> p).sum::<u64>() + priorities * EVICTABLE_LISTS * SWAP_CLUSTER_MAX;
        let t0 = std::time::Instant::now();
        let res = run_checked(&text, &[]);
        let (scan, steal, stalls) = (v(&res, "pgscan_direct"), v(&res, "pgsteal_direct"), v(&res, "allocstall"));
        eprintln!("{name}: wall {:.2}s virtual {:.1}s allocstall {stalls} pgscan_direct {scan} pgsteal_direct {steal} per-call bound {per_call}", t0.elapsed().as_secs_f64(), res.elapsed_ns as f64 / 1e9);
        assert!(stalls > 0 && steal > 0, "{name}: the workload must reclaim directly");
        assert!(scan <= stalls * per_call, "{name}: direct reclaim scanned {scan} pages in {stalls} stalls, more than one priority loop ({per_call}) each");
    }
}

/// The time series cannot grow without bound on a run whose virtual time is very long (it
/// once grew ~100 MB/s of real memory): it thins itself and says at what interval it ended.
#[test]
fn timeseries_is_bounded_on_a_very_long_run() {
    use swaplab_core::engine::MAX_TIMESERIES_SAMPLES;
    // 3,000 s of virtual time: one touch per second of compute.
    let res = run_checked(BASE, &["task.0.mapping.0.size=\"4KiB\"", "task.0.phase.0.cycles=3000", "task.0.phase.0.compute=\"1s\""]);
    assert!(res.elapsed_ns >= 2_999_000_000_000, "the run must be long: {} ns", res.elapsed_ns);
    let n = res.timeseries.t_ns.len();
    assert!(n <= MAX_TIMESERIES_SAMPLES && n > MAX_TIMESERIES_SAMPLES / 4, "{n} samples");
    assert_eq!(res.summary.timeseries_interval_ns, 200_000_000, "30,000 samples at 100 ms halve once");
    assert!(res.timeseries.t_ns.windows(2).all(|w| w[0] < w[1]), "samples stay in time order");
}

/// A task whose start_delay lies past the end of the run never starts: it reports an empty
/// interval, never an end before its start.
#[test]
fn a_task_that_never_starts_reports_an_empty_interval() {
    let text = multi_task(2, 1, "32MiB", None, "anon", "1MiB", "sequential", 1.0);
    let res = run_checked(&text, &["task.1.start_delay=\"10s\"", "sim.time_limit=\"1s\""]);
    let late = &res.tasks[1];
    assert_eq!(late.start_ns, 10_000_000_000);
    assert_eq!((late.end_ns, late.elapsed_ns, late.touches), (late.start_ns, 0, 0), "{late:?}");
}

/// `too_many_isolated` (§3.10, §3.13; reclaim/isolation.rs): 192 processes reclaim at once on
/// a slow disk whose queue takes 4 requests (BLKDEV_MIN_RQ), so reclaimers sleep in the block
/// layer holding their isolated batches; the isolated pages pass an eighth of the inactive list
/// and further direct reclaimers sleep in too_many_isolated instead of isolating more. 2.6.28
/// had no such check (it came with 2.6.32).
#[test]
fn many_direct_reclaimers_on_slow_swap_sleep_in_too_many_isolated() {
    let text = r#"
name = "many-reclaimers"
seed = 5
[machine]
cpus = 2
ram = "48MiB"
kernel_reserved = "4MiB"
[[swap]]
device = "hdd"
size = "256MiB"
[swap.params]
nr_requests = 4
[[task]]
name = "w"
instances = 192
[[task.mapping]]
name = "m"
kind = "anon"
size = "512KiB"
[[task.phase]]
mapping = "m"
pattern = "random"
cycles = 40.0
compute = "2us"
"#;
    for profile in ["2.6.28", "3.14", "4.14", "6.x"] {
        let res = run_checked(text, &[&format!("kernel.profile=\"{profile}\"")]);
        let sleeps = res.summary.reclaim_isolated_sleeps;
        let (scan, steal) = (v(&res, "pgscan_direct"), v(&res, "pgsteal_direct"));
        eprintln!("{profile}: allocstall {} pgscan_direct {scan} pgsteal_direct {steal} isolated sleeps {sleeps}", v(&res, "allocstall"));
        assert!(v(&res, "allocstall") > 100, "{profile}: the workload must make many processes reclaim");
        if profile == "2.6.28" {
            assert_eq!(sleeps, 0, "2.6.28 has no too_many_isolated");
        } else {
            assert!(sleeps > 0, "{profile}: no direct reclaimer slept in too_many_isolated");
        }
    }
}

/// §1.2: `do_swap_page` hands its GFP mask (GFP_HIGHUSER_MOVABLE) to every page of the
/// readahead window (`read_swap_cache_async` → `alloc_page_vma(gfp_mask)` in 2.6.x,
/// `__read_swap_cache_async(.., gfp_mask, ..)` since), so a readahead page below the min
/// watermark reclaims (and in 2.6.x may nap) like the target instead of being dropped.
/// Reading back a swapped-out buffer in order with page-cluster 3, every swap-in fault then
/// brings its whole aligned window of 8: seven readahead pages per major fault. Dropping the
/// pages that meet the min watermark left 2.6.x and 3.14 at 5.3–6.4 per fault.
#[test]
fn swapin_readahead_pages_reclaim_with_the_faults_gfp_mask_instead_of_being_dropped() {
    let fill_verify = |profile: &str| {
        let base = BASE.replace("profile = \"6.x\"", &format!("profile = \"{profile}\"")).replace("device = \"nvme\"", "device = \"ramdisk\"");
        base.replace("cycles = 3", "cycles = 1\nwrite_ratio = 1.0") + "[[task.phase]]\nmapping = \"m\"\npattern = \"sequential\"\nwrite_ratio = 0.0\nverify = true\n"
    };
    for profile in ["2.6.28", "2.6.32", "3.14"] {
        let res = run_checked(&fill_verify(profile), &[]);
        let (ra, maj, stalls) = (v(&res, "swap_ra"), v(&res, "pgmajfault"), v(&res, "allocstall"));
        assert!(stalls > 0, "{profile}: the read-back never met the min watermark, nothing is tested");
        assert!(ra * 1000 >= maj * 6950, "{profile}: {ra} readahead pages for {maj} major faults: readahead pages were dropped");
        assert_eq!(res.tasks[0].verify_errors, 0, "{profile}: a window that slept lost a page");
    }
}

/// §1.2.2: a readahead page whose allocation freed its slot is not added to the swap cache
/// (`__read_swap_cache_async` allocates first, then `swapcache_prepare` fails on a slot no
/// longer in use and the folio is put back). Here offset readahead reads another task's slot
/// and its allocation OOM-kills that task, whose exit frees the slot.
#[test]
fn swap_readahead_skips_a_slot_freed_while_its_page_was_allocated() {
    let path = format!("{}/tests/data/readahead-slot-freed-during-allocation.toml", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("fixture");
    let res = run_checked(&text, &[]);
    assert!(v(&res, "oom_kill") > 0, "the fixture no longer OOM-kills: it does not reach the case");
    assert!(v(&res, "swap_ra") > 0);
}

/// §2.2, §4: zswap's writeback (`zswap_writeback_entry` → `__read_swap_cache_async`) skips a
/// slot whose last reference went while it waits in a per-CPU return cache: its stored page is
/// kept until the batch goes back (`frontswap_invalidate_page` in `swap_entry_free`), but the
/// slot is unused and `!__swp_swapcount(entry)` returns no folio. Taking it for writeback gave
/// the held slot SWAP_HAS_CACHE again, and the batch's release then freed a slot in use (the
/// area's `inuse` wrapped below 0). Found by `random_configurations_with_a_store_keep_every_invariant`.
#[test]
fn zswap_writeback_skips_a_slot_waiting_in_a_return_cache() {
    let path = format!("{}/tests/data/slot-reused-from-return-cache.toml", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("fixture");
    let res = run_checked(&text, &[]);
    let store = res.store.as_ref().expect("zswap ran");
    assert!(store.debugfs["written_back_pages"] > 0, "the fixture no longer writes back: it does not reach the case");
    assert!(store.debugfs["reject_reclaim_fail"] > 0, "no writeback was refused: the fixture does not reach the case");
}
