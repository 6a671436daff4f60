//! `swaplab bench`: the speed contract, measured (DESIGN.md "Performance contract").
//!
//! * `resident_touches_per_s`: uniform-random touches over a 1 GiB anonymous mapping that fits
//!   in RAM, one task on one CPU (every touch after the first pass only sets accessed bits).
//! * `reference_lru_hits_per_s`: the same trace through a plain array-linked LRU cache in this
//!   process, the yardstick a trace-driven cache simulator sets.
//! * `major_faults_per_s`: the sequential swap workload of seed 003 (1000 MiB mapping, 900 MiB
//!   RAM, SATA SSD) with page-cluster 0, so that every swap-in is a major fault; reclaim,
//!   swap-out and swap-in are all included. `swapins_per_s` is the same with page-cluster 3;
//!   `mglru_major_faults_per_s` the page-cluster 0 run under `kernel.reclaim = "mglru"`.
//! * `zswap_stores_per_s`: the same sequential workload with zswap on (default lzo, 3:1
//!   content): pages stored into the zswap pool per second of wall time, the whole model
//!   (reclaim, pool, swap-in from the pool) included.
//! * `bytes_per_frame` / `bytes_per_mapped_page` / `bytes_per_swap_slot`: the model's memory.

use crate::config;
use crate::engine::Sim;
use crate::mm::Frame;
use serde_json::{json, Value};
use std::time::Instant;

fn workload(ram: &str, mapping: &str, pattern_phases: &str, extra: &str) -> String {
    format!(
        r#"
name = "bench"
[machine]
cpus = 1
ram = "{ram}"
{extra}
[[swap]]
device = "sata-ssd"
size = "1GiB"
[[task]]
name = "bench"
[[task.mapping]]
name = "buf"
kind = "anon"
size = "{mapping}"
{pattern_phases}
"#
    )
}

fn run_workload(text: &str, overrides: &[String]) -> (Sim, f64) {
    let resolved = config::load(text, "bench", overrides).expect("bench workload is valid");
    let mut sim = Sim::new(&resolved);
    let t = Instant::now();
    sim.run(&mut |_| true);
    (sim, t.elapsed().as_secs_f64())
}

/// A plain LRU over dense page ids: doubly linked through arrays, hits move to the head.
fn reference_lru(trace_len: u64, pages: u64, capacity: u64, seed: u64) -> (u64, f64) {
    let n = pages as usize;
    let mut prev = vec![u32::MAX; n];
    let mut next = vec![u32::MAX; n];
    let mut present = vec![false; n];
    let (mut head, mut tail, mut size) = (u32::MAX, u32::MAX, 0u64);
    let mut rng = crate::rng::Rng::new(seed);
    let mut hits = 0u64;
    let t = Instant::now();
    for _ in 0..trace_len {
        let p = rng.below(pages) as u32;
        let pi = p as usize;
        if present[pi] {
            hits += 1;
            if head == p {
                continue;
            }
            let (pv, nx) = (prev[pi], next[pi]);
            if pv != u32::MAX {
                next[pv as usize] = nx;
            }
            if nx != u32::MAX {
                prev[nx as usize] = pv;
            } else {
                tail = pv;
            }
        } else {
            if size == capacity {
                let victim = tail;
                tail = prev[victim as usize];
                next[tail as usize] = u32::MAX;
                present[victim as usize] = false;
                size -= 1;
            }
            present[pi] = true;
            size += 1;
        }
        prev[pi] = u32::MAX;
        next[pi] = head;
        if head != u32::MAX {
            prev[head as usize] = p;
        }
        head = p;
        if tail == u32::MAX {
            tail = p;
        }
    }
    (hits, t.elapsed().as_secs_f64())
}

fn run_bench(quick: bool) -> Value {
    let touches: u64 = if quick { 20_000_000 } else { 200_000_000 };
    let pages = 262_144u64;
    let resident = workload(
        "4GiB",
        "1GiB",
        &format!(
            "[[task.phase]]\nmapping = \"buf\"\npattern = \"sequential\"\n[[task.phase]]\nmapping = \"buf\"\npattern = \"random\"\ntouches = {touches}\nwrite_ratio = 0.0\n"
        ),
        "",
    );
    let (sim, wall) = run_workload(&resident, &[]);
    let done: u64 = sim.tasks.iter().map(|t| t.touches).sum();
    let resident_rate = done as f64 / wall;
    let (lru_hits, lru_wall) = reference_lru(touches, pages, pages, 7);

    let seq = workload("900MiB", "1000MiB", "[[task.phase]]\nmapping = \"buf\"\npattern = \"sequential\"\ncycles = 5\n", "");
    let cycles_override = if quick { vec!["task.0.phase.0.cycles=2".to_string()] } else { vec![] };
    let mut o0 = cycles_override.clone();
    o0.push("kernel.page_cluster=0".into());
    let (sim0, wall0) = run_workload(&seq, &o0);
    let (sim3, wall3) = run_workload(&seq, &cycles_override);
    let mut og = o0.clone();
    og.push("kernel.reclaim=\"mglru\"".into());
    let (simg, wallg) = run_workload(&seq, &og);
    let mut oz = cycles_override.clone();
    oz.push("zswap.enabled=true".into());
    let (simz, wallz) = run_workload(&seq, &oz);
    let zswpout = simz.swap.store.counters().vmstat.iter().find(|c| c.0 == "zswpout").map_or(0, |c| c.1);

    let frame = std::mem::size_of::<Frame>() + std::mem::size_of::<u32>();
    json!({
        "swaplab_version": crate::VERSION,
        "quick": quick,
        "resident_touches": done,
        "resident_wall_s": round3(wall),
        "resident_touches_per_s": resident_rate.round(),
        "reference_lru_hits_per_s": ((lru_hits as f64) / lru_wall).round(),
        "reference_lru_note": "plain array-linked LRU over the same uniform trace, same process",
        "major_faults": sim0.stats.vm.pgmajfault,
        "major_faults_wall_s": round3(wall0),
        "major_faults_per_s": (sim0.stats.vm.pgmajfault as f64 / wall0).round(),
        "major_faults_virtual_s": round3(sim0.now as f64 / 1e9),
        "mglru_major_faults": simg.stats.vm.pgmajfault,
        "mglru_major_faults_wall_s": round3(wallg),
        "mglru_major_faults_per_s": (simg.stats.vm.pgmajfault as f64 / wallg).round(),
        "swapins_per_s": (sim3.stats.vm.pswpin as f64 / wall3).round(),
        "swapins_page_cluster_3": sim3.stats.vm.pswpin,
        "zswap_stores": zswpout,
        "zswap_stores_per_s": (zswpout as f64 / wallz).round(),
        "bytes_per_frame": frame,
        "bytes_per_mapped_page": std::mem::size_of::<u64>(),
        "bytes_per_mapped_shared_page": 2 * std::mem::size_of::<u64>(),
        "bytes_per_swap_slot": 1 + 4 + 4,
        "model_bytes_32g_ram_80g_mapped": frame as u64 * (32u64 << 18) + 8 * (80u64 << 18),
    })
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Entry point used by the CLI.
pub fn run(quick: bool) -> Value {
    run_bench(quick)
}

/// `swaplab bench --trace F`: the trace replayed through the full model where it fits in
/// memory (`trace_replay_resident_per_s`: after the first touch of each page every access only
/// sets an accessed bit) and where it swaps (`trace_replay_swapping_per_s`: a memory cgroup
/// limit of half the trace's footprint), both reading the trace file as they go; and the exact
/// LRU miss-ratio curve of the same accesses (`exact_mrc_per_s`, loading excluded). Rates are
/// trace accesses per second of wall time; resolving (which reads the trace once to lay out
/// its mappings) is not timed.
pub fn trace(path: &str) -> Result<Value, String> {
    let abs = std::path::Path::new(path).canonicalize().map_err(|e| format!("{path}: {e}"))?;
    let file = abs.to_string_lossy().replace('\\', "\\\\").replace('"', "\\\"");
    let t = Instant::now();
    let seq = swaplab_trace::PageSeq::load_reader(swaplab_trace::open(path, &Default::default()).map_err(|e| e.to_string())?, None, path).map_err(|e| e.to_string())?;
    let load_wall = t.elapsed().as_secs_f64();
    let footprint_mib = (seq.distinct() as u64 * 4096).div_ceil(1 << 20);
    let text = |memcg: &str| {
        format!(
            "name = \"bench-trace\"\n[machine]\ncpus = 1\nram = \"{}MiB\"\n{memcg}\n[[swap]]\ndevice = \"nvme\"\nsize = \"{}MiB\"\n[[task]]\nname = \"trace\"\n[[task.phase]]\npattern = \"trace\"\nfile = \"{file}\"\n",
            footprint_mib * 2 + 256,
            footprint_mib * 2 + 64
        )
    };
    let run = |t: &str| -> Result<(Sim, f64), String> {
        let resolved = config::load(t, "bench-trace", &[]).map_err(|e| e.to_string())?;
        let mut sim = Sim::new(&resolved);
        let w = Instant::now();
        sim.run(&mut |_| true);
        Ok((sim, w.elapsed().as_secs_f64()))
    };
    let (resident, wall_r) = run(&text(""))?;
    let half = (seq.distinct() as u64 / 2).max(64) * 4096;
    let (swapping, wall_s) = run(&text(&format!("memcg_limit = \"{half}\"")))?;
    let t = Instant::now();
    let h = swaplab_trace::mrc::histogram(&seq);
    let mrc_wall = t.elapsed().as_secs_f64();
    let n = seq.len() as f64;
    Ok(json!({
        "swaplab_version": crate::VERSION,
        "trace": path,
        "accesses": seq.len(),
        "distinct_pages": seq.distinct(),
        "trace_load_per_s": (n / load_wall).round(),
        "trace_replay_resident_per_s": (n / wall_r).round(),
        "trace_replay_resident_majfault": resident.stats.vm.pgmajfault,
        "trace_replay_swapping_per_s": (n / wall_s).round(),
        "trace_replay_swapping_memcg_limit_pages": half / 4096,
        "trace_replay_swapping_majfault": swapping.stats.vm.pgmajfault,
        "exact_mrc_per_s": (n / mrc_wall).round(),
        "exact_mrc_cold_misses": h.cold,
    }))
}
