// scratch: run a workload file with overrides and print request stats (not committed)
use swaplab_core::config;
use swaplab_core::engine::Sim;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let text = std::fs::read_to_string(&args[1]).unwrap();
    let ov: Vec<String> = args[2..].to_vec();
    let r = config::load(&text, &args[1], &ov).unwrap_or_else(|e| { eprintln!("{e}"); std::process::exit(2) });
    let t0 = std::time::Instant::now();
    let mut sim = Sim::new(&r);
    sim.run(&mut |_| true);
    let res = sim.result();
    let wall = t0.elapsed().as_secs_f64();
    let (mut ops, mut bps, mut opss) = (0u64, 0.0, 0.0);
    for t in &res.tasks { if let Some(q) = &t.requests { ops += q.ops; bps += q.bytes_per_s; opss += q.ops_per_s; } }
    let t0r = res.tasks[0].requests.as_ref();
    println!("wall {wall:.1}s elapsed {:.3}s ops {ops} ops/s {opss:.0} KB/s {:.0} MiB/s {:.1} lat0 {:?}", res.elapsed_ns as f64/1e9, bps/1024.0, bps/1048576.0, t0r.map(|q| &q.latency_ns));
    let vm = &res.vmstat;
    for k in ["pgscan_kswapd","pgscan_direct","pgsteal_kswapd","pgsteal_direct","pswpin","pswpout","pgmajfault","workingset_refault_file","workingset_refault_anon","pgpgin"] { print!("{k}={} ", vm.get(k).unwrap_or(&0)); }
    println!();
    println!("kswapd {:?}\ndirect {:?}", res.kswapd_cpu_by_category, res.direct_reclaim_cpu_by_category);
    let errs = sim.check_invariants(); if !errs.is_empty() { println!("INVARIANTS: {errs:?}"); }
}
