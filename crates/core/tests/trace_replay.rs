//! Trace phases through the simulator: the resolver lays out the trace's mappings, the run
//! replays every access, twice over the same result, and a broken trace is a configuration
//! error naming the phase's `file`.

mod common;
use common::*;
use swaplab_core::config::{self, MappingKind};

fn dir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("swaplab-core-trace-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A trace over two ranges: 8000 pages (31 MiB) written then read twice (a working set above RAM), and a
/// hot set of 5 pages (0, 10, .., 40: one 41-page mapping) far below it.
fn write_trace() -> String {
    let mut csv = String::from("icount,vpn,op\n");
    let mut t = 0;
    for pass in 0..3 {
        for p in 0..8000u64 {
            t += 10;
            csv += &format!("{t},{},{}\n", 0x7000_0000 + p, if pass == 0 { 'w' } else { 'r' });
            if p % 10 == 0 {
                csv += &format!("{t},{},r\n", 0x1000 + p % 50);
            }
        }
    }
    let path = dir().join("t.csv");
    std::fs::write(&path, csv).unwrap();
    path.to_str().unwrap().to_string()
}

fn workload(file: &str) -> String {
    format!(
        "[machine]\nram = \"24MiB\"\nkernel_reserved = \"4MiB\"\n[[swap]]\ndevice = \"nvme\"\nsize = \"64MiB\"\n[[task]]\nname = \"t\"\n[[task.phase]]\npattern = \"trace\"\nfile = \"{file}\"\nspeed = 1e9\n"
    )
}

#[test]
fn a_trace_becomes_mappings_and_every_access_is_replayed() {
    let file = write_trace();
    let text = workload(&file);
    let r = config::load(&text, "w.toml", &[]).unwrap();
    let maps = &r.config.tasks[0].mappings;
    let layout: Vec<(Option<u64>, u64, MappingKind)> = maps.iter().map(|m| (m.trace_page, m.size.pages(), m.kind)).collect();
    assert_eq!(layout, vec![(Some(0x1000), 41, MappingKind::Anon), (Some(0x7000_0000), 8000, MappingKind::Anon)]);
    assert_eq!(r.config.tasks[0].phases[0].touches, Some(24_000 + 2_400));
    let a = run_checked(&text, &[]);
    assert_eq!(a.tasks[0].touches, 26_400);
    // 8000 pages do not fit in ~20 MiB minus watermarks: the re-reads swap.
    assert!(a.vmstat["pswpin"] > 0 && a.vmstat["pgmajfault"] > 0, "{:?}", a.vmstat);
    // speed = 1e9 instructions/s: 10 instructions between accesses are 10 ns of compute each.
    assert!(a.elapsed_ns >= 26_400 * 10);
    assert_eq!(a.to_json(), run_checked(&text, &[]).to_json(), "deterministic");
}

#[test]
fn a_broken_trace_is_a_configuration_error_at_the_phase() {
    let path = dir().join("bad.csv");
    std::fs::write(&path, "icount,vpn,op\n1,2,r\n3,oops,r\n").unwrap();
    let text = workload(path.to_str().unwrap());
    let e = config::load(&text, "w.toml", &[]).unwrap_err();
    assert_eq!(e.key, "task.0.phase.0.file");
    assert!(e.message.contains("bad.csv:3: page \"oops\""), "{e}");
    let e = config::load(&workload("/nonexistent/t.csv"), "w.toml", &[]).unwrap_err();
    assert!(e.message.contains("no such file"), "{e}");
    let e = config::load(&text.replace("speed = 1e9", "speed = -1.0"), "w.toml", &[]).unwrap_err();
    assert_eq!(e.key, "task.0.phase.0.speed");
}
