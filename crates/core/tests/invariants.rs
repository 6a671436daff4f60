//! Every run over a matrix of small workloads must end with the memory model's invariants
//! intact (`Sim::check_invariants`) and its counters consistent (common::check_relations), and
//! must do what the program says (touch counts) and what the kernel would (swap or not).

mod common;
use common::*;
use swaplab_core::workload::matrix_touches;

const N: u64 = 40 * MIB_PAGES; // pages of BASE's mapping

#[test]
fn fitting_workload_never_swaps_and_touches_every_page_each_cycle() {
    for kind in ["anon", "shmem", "file"] {
        let kindset = format!("task.0.mapping.0.kind={kind}");
        let res = run_checked(BASE, &[&kindset, "task.0.mapping.0.size=\"16MiB\""]);
        let pages = 16 * MIB_PAGES;
        assert_eq!(total_touches(&res), 3 * pages, "{kind}: sequential cycles=3 over {pages} pages");
        for n in ["pswpout", "pswpin", "swap_ra", "pgscan_direct", "allocstall", "oom_kill"] {
            assert_eq!(v(&res, n), 0, "{kind}: a 16 MiB mapping in 28 MiB of usable RAM but {n} = {}", v(&res, n));
        }
        // Each anon/shmem page faults once, on its first touch: the later cycles hit resident
        // pages. A shared file page is mapped read-only until written (write notification for
        // dirty accounting) and write-protected again when the flusher cleans it, so its
        // writes fault too, at most once per page and cycle.
        if kind == "file" {
            assert!((pages + 1..=3 * pages).contains(&v(&res, "pgfault")), "{kind}: {} faults", v(&res, "pgfault"));
            assert!(v(&res, "pgpgout") > 0, "{kind}: dirty pages were never written back");
        } else {
            assert_eq!(v(&res, "pgfault"), pages, "{kind}: one fault per page");
        }
        // A file is read by its first fault's read-around and then by asynchronous readahead
        // ahead of the writer (pagecache/): one major fault; anon/shmem are zero-filled.
        let expect_major = if kind == "file" { 1 } else { 0 };
        assert_eq!(v(&res, "pgmajfault"), expect_major, "{kind}: major faults");
        let expect_kb = if kind == "file" { pages * 4 } else { 0 };
        assert_eq!(v(&res, "pgpgin"), expect_kb, "{kind}: every page of a file read once");
    }
}

#[test]
fn oversized_workload_swaps_and_does_all_its_touches() {
    for kind in ["anon", "shmem"] {
        let kindset = format!("task.0.mapping.0.kind={kind}");
        let res = run_checked(BASE, &[&kindset]);
        assert_eq!(total_touches(&res), 3 * N, "{kind}");
        assert!(v(&res, "pswpout") > 0, "{kind}: 40 MiB in 28 MiB must swap out");
        assert!(v(&res, "pswpin") > 0, "{kind}: later cycles must swap in");
        assert!(v(&res, "pgmajfault") > 0, "{kind}");
        // Two more passes over 40 MiB with only ~28 MiB resident: at least the 12 MiB that do
        // not fit are swapped in per pass.
        assert!(v(&res, "pswpin") >= 2 * 12 * MIB_PAGES, "{kind}: pswpin {}", v(&res, "pswpin"));
    }
    // A file mapping larger than RAM is reclaimed without swap.
    let res = run_checked(BASE, &["task.0.mapping.0.kind=file"]);
    assert_eq!(total_touches(&res), 3 * N);
    assert_eq!(v(&res, "pswpout"), 0, "clean file pages are dropped, not swapped");
    assert!(v(&res, "pgsteal_file") > 0 && v(&res, "workingset_refault_file") > 0);
    assert!(v(&res, "pgpgin") >= N * 4, "every page of the first pass is read from the file");
}

#[test]
fn mapping_kinds_times_patterns() {
    for kind in ["anon", "shmem", "file"] {
        for pattern in ["sequential", "random", "zipf", "strided", "matrix"] {
            let ov = [format!("task.0.mapping.0.kind={kind}"), format!("task.0.phase.0.pattern={pattern}"), "task.0.phase.0.cycles=2".into()];
            let ov: Vec<&str> = ov.iter().map(|s| s.as_str()).collect();
            let res = run_checked(BASE, &ov);
            let expect = match pattern {
                "matrix" => {
                    let tiles = ((N / 64) as f64).sqrt().floor() as u64;
                    2 * matrix_touches(tiles, 64)
                }
                _ => 2 * N,
            };
            assert_eq!(total_touches(&res), expect, "{kind}/{pattern}");
            // Zipf's popular pages may all fit; every other pattern covers the whole mapping.
            if kind != "file" && pattern != "matrix" && pattern != "zipf" {
                assert!(v(&res, "pswpout") > 0, "{kind}/{pattern}: 40 MiB in 28 MiB must swap");
            }
        }
    }
}

#[test]
fn readahead_policies_times_patterns() {
    for ra in ["none", "fixed", "fixed-run", "adaptive", "adaptive-2012", "vma", "auto"] {
        for pattern in ["sequential", "random", "strided", "zipf"] {
            for kind in ["anon", "shmem"] {
                let ov = [format!("kernel.readahead={ra}"), format!("task.0.phase.0.pattern={pattern}"), format!("task.0.mapping.0.kind={kind}")];
                let ov: Vec<&str> = ov.iter().map(|s| s.as_str()).collect();
                let res = run_checked(BASE, &ov);
                let what = format!("{ra}/{pattern}/{kind}");
                assert_eq!(total_touches(&res), 3 * N, "{what}");
                if ra == "none" {
                    assert_eq!(v(&res, "swap_ra"), 0, "{what}: no readahead but swap_ra > 0");
                    assert_eq!(v(&res, "swap_ra_hit"), 0, "{what}");
                }
                let expect_name = if ra == "auto" { "vma" } else { ra };
                assert_eq!(res.summary.readahead, expect_name, "{what}");
            }
        }
    }
}

#[test]
fn device_presets() {
    for dev in ["hdd", "sata-ssd", "nvme", "ramdisk", "zram"] {
        for pattern in ["sequential", "random"] {
            for kind in ["anon", "shmem"] {
                let ov = [format!("swap.0.device={dev}"), format!("task.0.phase.0.pattern={pattern}"), format!("task.0.mapping.0.kind={kind}"), "task.0.phase.0.cycles=2".into()];
                let ov: Vec<&str> = ov.iter().map(|s| s.as_str()).collect();
                let res = run_checked(BASE, &ov);
                let what = format!("{dev}/{pattern}/{kind}");
                assert_eq!(total_touches(&res), 2 * N, "{what}");
                assert!(v(&res, "pswpout") > 0, "{what}");
                let d = res.devices.iter().find(|d| d.role == "swap").expect("swap device in result");
                assert!(d.name.contains(dev), "{what}: device {}", d.name);
                assert!(d.pages_written > 0, "{what}");
            }
        }
    }
    // Slower media take longer for the same sequential swap load.
    let elapsed = |dev: &str| run_checked(BASE, &[&format!("swap.0.device={dev}")]).elapsed_ns;
    let (hdd, ssd, nvme) = (elapsed("hdd"), elapsed("sata-ssd"), elapsed("nvme"));
    assert!(hdd > ssd && ssd > nvme, "elapsed hdd {hdd} ssd {ssd} nvme {nvme}");
}

#[test]
fn kernel_profiles() {
    for profile in ["2.6.28", "3.14", "4.14", "6.x"] {
        for kind in ["anon", "shmem", "file"] {
            for pattern in ["sequential", "random"] {
                let ov = [format!("kernel.profile=\"{profile}\""), format!("task.0.mapping.0.kind={kind}"), format!("task.0.phase.0.pattern={pattern}")];
                let ov: Vec<&str> = ov.iter().map(|s| s.as_str()).collect();
                let res = run_checked(BASE, &ov);
                assert_eq!(total_touches(&res), 3 * N, "{profile}/{kind}/{pattern}");
            }
        }
    }
    let ra = |p: &str| run_checked(BASE, &[&format!("kernel.profile=\"{p}\"")]).summary.readahead;
    assert_eq!(ra("2.6.28"), "fixed-run");
    assert_eq!(ra("3.14"), "adaptive");
    assert_eq!(ra("4.14"), "vma");
    assert_eq!(ra("6.x"), "vma");
}

#[test]
fn bailout_policies() {
    for b in ["none", "rvr", "kosaki", "proportional", "auto"] {
        for profile in ["2.6.28", "6.x"] {
            let res = run_checked(BASE, &[&format!("kernel.bailout={b}"), &format!("kernel.profile=\"{profile}\""), "task.0.phase.0.pattern=random"]);
            assert_eq!(total_touches(&res), 3 * N, "{b}/{profile}");
        }
    }
}

#[test]
fn memcg_limit_mode_reclaims_inside_the_cgroup() {
    // 64 MiB machine, 12 MiB cgroup, 20 MiB mapping: the cgroup swaps although the machine has room.
    for kind in ["anon", "shmem", "file"] {
        for pattern in ["sequential", "random"] {
            let ov = [
                "machine.ram=\"64MiB\"".to_string(),
                "machine.memcg_limit=\"12MiB\"".into(),
                "task.0.mapping.0.size=\"20MiB\"".into(),
                format!("task.0.mapping.0.kind={kind}"),
                format!("task.0.phase.0.pattern={pattern}"),
            ];
            let ov: Vec<&str> = ov.iter().map(|s| s.as_str()).collect();
            let res = run_checked(BASE, &ov);
            let what = format!("memcg {kind}/{pattern}");
            assert_eq!(total_touches(&res), 3 * 20 * MIB_PAGES, "{what}");
            if kind == "file" {
                assert!(v(&res, "pgsteal_file") > 0, "{what}: limit reclaim must drop file pages");
            } else {
                assert!(v(&res, "pswpout") > 0, "{what}: a 20 MiB mapping in a 12 MiB cgroup must swap");
            }
            // Limit reclaim is not kswapd's business: the machine itself is never short.
            assert_eq!(v(&res, "pgscan_kswapd"), 0, "{what}: kswapd scanned in memcg mode");
            assert_eq!(v(&res, "oom_kill"), 0, "{what}");
        }
    }
    // Same workload without the limit: fits, no swap.
    let res = run_checked(BASE, &["machine.ram=\"64MiB\"", "task.0.mapping.0.size=\"20MiB\""]);
    assert_eq!(v(&res, "pswpout"), 0);
}

#[test]
fn several_tasks_and_cpus() {
    for cpus in [1, 2, 4] {
        for kind in ["anon", "shmem", "file"] {
            for pattern in ["sequential", "random", "zipf"] {
                let text = multi_task(3, cpus, "40MiB", Some(("nvme", "96MiB")), kind, "24MiB", pattern, 2.0);
                let res = run_checked(&text, &[]);
                let what = format!("3 tasks on {cpus} cpus {kind}/{pattern}");
                assert_eq!(res.tasks.len(), 3, "{what}");
                for t in &res.tasks {
                    assert_eq!(t.touches, 2 * 24 * MIB_PAGES, "{what}: task {}", t.name);
                    assert!(t.elapsed_ns > 0);
                }
                if kind != "file" && pattern != "zipf" {
                    assert!(v(&res, "pswpout") > 0, "{what}: any two of the 24 MiB mappings exceed 36 MiB");
                }
            }
        }
    }
    // instances: identical processes, each with its own mapping.
    let res = run_checked(BASE, &["task.0.instances=3", "task.0.mapping.0.size=\"12MiB\"", "machine.cpus=3"]);
    assert_eq!(res.tasks.len(), 3);
    let pids: std::collections::BTreeSet<u32> = res.tasks.iter().map(|t| t.pid).collect();
    assert_eq!(pids.len(), 3, "instances have distinct pids");
    for t in &res.tasks {
        assert_eq!(t.touches, 3 * 12 * MIB_PAGES);
    }
    assert!(v(&res, "pswpout") > 0, "36 MiB in 28 MiB must swap");
}

#[test]
fn oom_when_swap_is_too_small_is_a_result() {
    for kind in ["anon", "shmem"] {
        for (swap, label) in [(Some("4MiB"), "tiny swap"), (None, "no swap")] {
            let mut text = BASE.replace("size = \"64MiB\"", &format!("size = \"{}\"", swap.unwrap_or("4MiB")));
            if swap.is_none() {
                text = no_swap(&text);
            }
            let res = run_checked(&text, &[&format!("task.0.mapping.0.kind={kind}")]);
            let what = format!("{kind} with {label}");
            assert!(v(&res, "oom_kill") > 0, "{what}: 40 MiB in 28 MiB RAM + {label} must OOM");
            let ev = res.events.iter().find(|e| e.kind == "oom_kill").unwrap_or_else(|| panic!("{what}: no oom_kill event"));
            assert!(ev.task.starts_with('t'), "{what}: event names the victim: {}", ev.task);
            assert!(ev.rss_pages > 0, "{what}: the victim had memory");
            assert!(res.tasks[0].oom_killed, "{what}");
            assert!(res.tasks[0].touches < 3 * N, "{what}: a killed task does not finish its program");
            assert!(!res.to_json().is_empty());
        }
    }
    // Two tasks, one killed: the biggest dies, the other finishes.
    let text = multi_task(2, 2, "32MiB", None, "anon", "8MiB", "sequential", 2.0).replace(
        "name = \"t1\"\n[[task.mapping]]\nname = \"m\"\nkind = \"anon\"\nsize = \"8MiB\"",
        "name = \"t1\"\n[[task.mapping]]\nname = \"m\"\nkind = \"anon\"\nsize = \"30MiB\"",
    );
    let res = run_checked(&text, &[]);
    assert_eq!(v(&res, "oom_kill"), 1, "one kill frees enough");
    let big = res.tasks.iter().find(|t| t.name == "t1").unwrap();
    let small = res.tasks.iter().find(|t| t.name == "t0").unwrap();
    assert!(big.oom_killed && !small.oom_killed, "the biggest task is the victim");
    assert_eq!(small.touches, 2 * 8 * MIB_PAGES, "the survivor completes");
}

#[test]
fn write_ratio_extremes() {
    for kind in ["anon", "shmem", "file"] {
        for wr in ["0.0", "0.5", "1.0"] {
            for pattern in ["sequential", "random"] {
                let ov = [format!("task.0.phase.0.write_ratio={wr}"), format!("task.0.mapping.0.kind={kind}"), format!("task.0.phase.0.pattern={pattern}")];
                let ov: Vec<&str> = ov.iter().map(|s| s.as_str()).collect();
                let res = run_checked(BASE, &ov);
                assert_eq!(total_touches(&res), 3 * N, "{kind}/{wr}/{pattern}");
                if kind == "file" && wr == "0.0" {
                    // Read-only file pages stay clean: reclaim never writes them back.
                    assert_eq!(v(&res, "nr_vmscan_write"), 0, "read-only file mapping wrote pages back");
                    assert_eq!(v(&res, "pgpgout"), 0, "read-only file mapping wrote to disk");
                }
            }
        }
    }
}

#[test]
fn time_limits_and_repeat() {
    // A global time limit stops a long program early.
    let full = run_checked(BASE, &["task.0.phase.0.cycles=50"]);
    assert_eq!(total_touches(&full), 50 * N);
    let limited = run_checked(BASE, &["task.0.phase.0.cycles=50", "sim.time_limit=\"50ms\""]);
    assert!(total_touches(&limited) < 50 * N, "time limit did not stop the run");
    assert!(limited.elapsed_ns <= 50_000_000, "elapsed {} past the 50 ms limit", limited.elapsed_ns);
    assert!(full.elapsed_ns > 50_000_000, "the unlimited run takes longer than the limit");
    // repeat = true runs the program again and again until the task's limit.
    let rep = run_checked(BASE, &["task.0.repeat=true", "task.0.time_limit=\"200ms\"", "task.0.phase.0.cycles=1"]);
    let t = &rep.tasks[0];
    assert!(t.touches > N, "repeat ran the one-pass program only once ({} touches)", t.touches);
    assert!(t.elapsed_ns <= 200_000_000 && t.elapsed_ns >= 190_000_000, "elapsed {}", t.elapsed_ns);
    // A start delay shifts the task.
    let d = run_checked(BASE, &["task.0.start_delay=\"10ms\"", "task.0.mapping.0.size=\"4MiB\""]);
    assert_eq!(d.tasks[0].start_ns, 10_000_000);
    // Per-task time limits with several tasks: each stops at its own deadline.
    let text = multi_task(2, 2, "48MiB", Some(("sata-ssd", "96MiB")), "anon", "20MiB", "random", 100.0);
    let res = run_checked(&text, &["task.0.time_limit=\"30ms\"", "task.1.time_limit=\"60ms\"", "task.0.phase.0.compute=\"1us\"", "task.1.phase.0.compute=\"1us\""]);
    assert!(res.tasks[0].end_ns <= 30_000_000 && res.tasks[1].end_ns <= 60_000_000, "{} {}", res.tasks[0].end_ns, res.tasks[1].end_ns);
    assert!(res.tasks[1].end_ns > 30_000_000);
}

#[test]
fn multi_phase_and_multi_mapping_tasks() {
    let text = r#"
seed = 11
[machine]
cpus = 2
ram = "32MiB"
kernel_reserved = "4MiB"
[[swap]]
device = "sata-ssd"
size = "32MiB"
[[swap]]
device = "nvme"
size = "64MiB"
priority = 5
[[task]]
name = "mixed"
[[task.mapping]]
name = "a"
kind = "anon"
size = "24MiB"
[[task.mapping]]
name = "s"
kind = "shmem"
size = "12MiB"
[[task.mapping]]
name = "f"
kind = "file"
size = "8MiB"
[[task.phase]]
mapping = "a"
pattern = "sequential"
[[task.phase]]
mapping = "s"
pattern = "random"
touches = 5000
[[task.phase]]
mapping = "f"
pattern = "strided"
stride = 7
[[task.phase]]
mapping = "a"
pattern = "sequential"
backward = true
cycles = 2
"#;
    let res = run_checked(text, &[]);
    assert_eq!(total_touches(&res), 24 * MIB_PAGES + 5000 + 8 * MIB_PAGES + 2 * 24 * MIB_PAGES);
    // The higher-priority device (nvme, priority 5) fills first.
    assert!(v(&res, "pswpout") > 0, "24 MiB anon + shmem + file in 28 MiB must swap");
    let nvme = res.devices.iter().find(|d| d.name.contains("nvme")).unwrap();
    let ssd = res.devices.iter().find(|d| d.name.contains("sata-ssd")).unwrap();
    assert!(nvme.pages_written > 0, "the priority-5 device takes the swap-outs");
    assert_eq!(ssd.pages_written, 0, "the lower-priority device stays unused while the first has room");
}
