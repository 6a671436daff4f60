//! The CFS-like scheduler (engine/sched.rs): tasks share a CPU by virtual runtime.

mod common;
use common::*;

/// `n` CPU-bound tasks on one CPU, each computing `ms` milliseconds over 16 pages.
fn hogs(n: u32, ms: u64) -> String {
    format!(
        r#"
name = "hogs"
seed = 1
[machine]
cpus = 1
ram = "64MiB"
[[task]]
name = "hog"
instances = {n}
[[task.mapping]]
name = "m"
kind = "anon"
size = "64KiB"
[[task.phase]]
mapping = "m"
pattern = "sequential"
cycles = {ms}
compute = "62500ns"
"#
    )
}

/// Guards the run queue's order: a task preempted at the end of its slice goes behind the
/// tasks with less virtual runtime, and among equals behind those queued first, so equal
/// CPU-bound tasks take turns slice by slice and finish together (a tie once went to the
/// lowest task id, which then ran to completion first).
#[test]
fn equal_cpu_bound_tasks_take_turns_and_finish_together() {
    let res = run_checked(&hogs(3, 300), &[]);
    let ends: Vec<u64> = res.tasks.iter().map(|t| t.end_ns).collect();
    let (first, last) = (*ends.iter().min().unwrap(), *ends.iter().max().unwrap());
    // 3 x 300 ms of CPU: every task ends in the last round of 3 ms slices.
    assert!(first > 850_000_000, "a task finished at {first} ns, before the others had their turns");
    assert!(last - first < 10_000_000, "ends {ends:?} spread over more than a round of slices");
    for t in &res.tasks {
        // Each waited while the other two ran: about twice its own CPU.
        let waited = t.runqueue_wait_ns as f64;
        assert!((waited / 600e6 - 1.0).abs() < 0.05, "{} waited {waited} ns for the CPU", t.name);
    }
}
