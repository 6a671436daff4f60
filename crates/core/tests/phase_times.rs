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
