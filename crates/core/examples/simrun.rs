//! Run a workload file and print the result JSON's headline figures (a developer's loop
//! without the Python lab): `cargo run --release --example simrun -- FILE [key=value ...]`.
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: simrun FILE [key=value ...]");
        std::process::exit(2);
    };
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| {
        eprintln!("{path}: {e}");
        std::process::exit(2)
    });
    let resolved = swaplab_core::config::load(&text, path, &args[1..]).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    });
    let wall = std::time::Instant::now();
    let mut sim = swaplab_core::engine::Sim::new(&resolved);
    sim.run(&mut |_| true);
    let r = sim.result();
    let errs = sim.check_invariants();
    eprintln!("wall {:.2}s, virtual {:.3}s, readahead {}", wall.elapsed().as_secs_f64(), r.elapsed_ns as f64 / 1e9, r.summary.readahead);
    for (k, v) in &r.vmstat {
        if *v != 0 {
            println!("{k:32} {v}");
        }
    }
    for t in &r.tasks {
        println!(
            "task {}#{} elapsed {:.3}s touches {} major {} minor {} fault p50 {} p99 {} max {} dr calls {} stall {:.3}ms runq {:.3}s oom {}",
            t.name, t.instance, t.elapsed_ns as f64 / 1e9, t.touches, t.major_faults, t.minor_faults,
            t.fault_latency_ns.p50, t.fault_latency_ns.p99, t.fault_latency_ns.max, t.direct_reclaim.calls,
            t.direct_reclaim.stall_ns as f64 / 1e6, t.runqueue_wait_ns as f64 / 1e9, t.oom_killed
        );
    }
    println!("ra_hit_pct {:?}", r.summary.ra_hit_pct);
    if std::env::var("SIMRUN_TS").is_ok() {
        let ts = &r.timeseries;
        for i in 0..ts.t_ns.len() {
            println!("t={:.1} free={} ia={} aa={} swap={} pswpin={} pswpout={}", ts.t_ns[i] as f64 / 1e9, ts.nr_free_pages[i], ts.nr_inactive_anon[i], ts.nr_active_anon[i], ts.swap_used_pages[i], ts.pswpin[i], ts.pswpout[i]);
        }
    }
    if !errs.is_empty() {
        eprintln!("INVARIANTS BROKEN:\n{}", errs.join("\n"));
        std::process::exit(1);
    }
}
