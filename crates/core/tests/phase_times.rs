//! Per-phase elapsed time in a task's result (stats/phase_times.rs): the split a user needs
//! to tell a swap-out pass from a swap-in pass, kept the same way by the host runner.

mod common;
use common::*;

/// A 16-page mapping: a first pass that faults it in, then `cycles` passes that each compute
/// `compute` after every touch.
fn two_phases(cycles: u32, compute: &str, time_limit: Option<&str>) -> String {
    let limit = time_limit.map_or(String::new(), |l| format!("repeat = true\ntime_limit = \"{l}\"\n"));
    format!(
        r#"
name = "phases"
seed = 1
[machine]
cpus = 1
ram = "64MiB"
[[task]]
name = "t"
{limit}[[task.mapping]]
name = "m"
kind = "anon"
size = "64KiB"
[[task.phase]]
mapping = "m"
pattern = "sequential"
write_ratio = 1.0
[[task.phase]]
mapping = "m"
pattern = "sequential"
cycles = {cycles}
compute = "{compute}"
"#
    )
}

/// Guards the boundary between phases: the second phase's time is its own touches and
/// compute, not the first phase's faults, and the phases add up to the task's elapsed time.
#[test]
fn each_phase_reports_its_own_time_and_the_phases_add_up() {
    let res = run_checked(&two_phases(10, "10us", None), &[]);
    let t = &res.tasks[0];
    assert_eq!(t.phase_elapsed_ns.len(), 2);
    assert_eq!(t.phase_elapsed_ns.iter().sum::<u64>(), t.elapsed_ns);
    // 160 touches of resident pages, each followed by 10 us of compute.
    let second = t.phase_elapsed_ns[1];
    assert!((1_600_000..1_700_000).contains(&second), "second phase {second} ns");
    // The first phase is the 16 minor faults and nothing of the compute.
    assert!(t.phase_elapsed_ns[0] < 200_000, "first phase {} ns", t.phase_elapsed_ns[0]);
    assert_eq!(t.minor_faults, 16);
}

/// Guards a repeating (time-limited) program: each pass adds to the same phase, so the record
/// keeps one entry per phase and still adds up.
#[test]
fn a_repeating_program_adds_each_pass_to_its_phase() {
    let res = run_checked(&two_phases(1, "10us", Some("50ms")), &[]);
    let t = &res.tasks[0];
    assert!(t.elapsed_ns >= 49_000_000, "the program ran {} ns, not to its time limit", t.elapsed_ns);
    assert_eq!(t.phase_elapsed_ns.len(), 2);
    assert_eq!(t.phase_elapsed_ns.iter().sum::<u64>(), t.elapsed_ns);
    // Both phases touch 16 pages per pass; only the second computes, so it holds nearly all.
    assert!(t.phase_elapsed_ns[1] > 20 * t.phase_elapsed_ns[0], "{:?}", t.phase_elapsed_ns);
}

/// A write pass over 40 MiB on a 32 MiB machine, then a read pass that swaps it back in from
/// a disk one 4 KiB read at a time (page-cluster 0).
const SWAP_OUT_THEN_IN: &str = r#"
name = "out-in"
seed = 1
[machine]
cpus = 1
ram = "32MiB"
kernel_reserved = "4MiB"
[kernel]
page_cluster = 0
[[swap]]
device = "hdd"
size = "64MiB"
[[task]]
name = "t"
[[task.mapping]]
name = "m"
kind = "anon"
size = "40MiB"
[[task.phase]]
mapping = "m"
pattern = "sequential"
write_ratio = 1.0
[[task.phase]]
mapping = "m"
pattern = "sequential"
write_ratio = 0.0
"#;

/// Guards the CPU side of the record: a task's CPU time is the time it held a CPU, so the
/// read-back pass, which sleeps on a disk read per fault, runs a small part of its elapsed
/// time, while its CPU still covers the faults' own work; the phases add up to the task's CPU.
#[test]
fn cpu_time_leaves_out_the_waits_for_swap_reads() {
    let res = run_checked(SWAP_OUT_THEN_IN, &[]);
    let t = &res.tasks[0];
    assert_eq!(t.phase_cpu_ns.len(), 2);
    assert_eq!(t.phase_cpu_ns.iter().sum::<u64>(), t.cpu_ns);
    assert!(t.cpu_ns <= t.elapsed_ns);
    for (cpu, el) in t.phase_cpu_ns.iter().zip(&t.phase_elapsed_ns) {
        assert!(cpu <= el, "a phase ran {cpu} ns of CPU in {el} ns");
    }
    let (read_cpu, read_elapsed) = (t.phase_cpu_ns[1], t.phase_elapsed_ns[1]);
    assert!(t.major_faults > 1_000, "the read pass swapped in {} pages", t.major_faults);
    assert!(read_cpu * 10 < read_elapsed, "read pass: {read_cpu} ns of CPU in {read_elapsed} ns");
    let fault_cpu = res.config.config.costs.major_fault_cpu_ns * t.major_faults;
    assert!(read_cpu >= fault_cpu, "read pass CPU {read_cpu} ns < its faults' own {fault_cpu} ns");
}

/// Guards CPU time against time spent runnable: two tasks that only compute on one CPU each
/// run their own share, and together they ran as long as the CPU was busy.
#[test]
fn tasks_sharing_a_cpu_each_count_only_their_own_turns() {
    let one = |name: &str| format!("[[task]]\nname = \"{name}\"\n[[task.mapping]]\nname = \"m\"\nkind = \"anon\"\nsize = \"64KiB\"\n[[task.phase]]\nmapping = \"m\"\npattern = \"sequential\"\ncycles = 100\ncompute = \"50us\"\n");
    let toml = format!("name = \"share\"\nseed = 1\n[machine]\ncpus = 1\nram = \"64MiB\"\n{}{}", one("a"), one("b"));
    let res = run_checked(&toml, &[]);
    let (a, b) = (&res.tasks[0], &res.tasks[1]);
    // 1,600 touches each followed by 50 us: 80 ms of CPU each, besides 16 minor faults.
    for t in [a, b] {
        assert!((80_000_000..81_000_000).contains(&t.cpu_ns), "{} ran {} ns of CPU", t.name, t.cpu_ns);
        assert_eq!(t.phase_cpu_ns, vec![t.cpu_ns]);
    }
    let last_end = a.end_ns.max(b.end_ns);
    assert!(last_end >= a.cpu_ns + b.cpu_ns, "one CPU ran {} + {} ns by {last_end} ns", a.cpu_ns, b.cpu_ns);
    assert!(a.elapsed_ns > a.cpu_ns + 50_000_000 || b.elapsed_ns > b.cpu_ns + 50_000_000, "neither task waited for the CPU: {a:?} {b:?}");
}
