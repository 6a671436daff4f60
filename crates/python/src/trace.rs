//! `swaplab._core` trace functions: read, convert and analyse page traces (the
//! `swaplab-trace` crate), the bounds of a synthetic workload's page sequence, and the trace
//! benchmark. JSON out, like the rest of the module; a malformed trace raises `TraceError`
//! (a `ValueError`) whose message names the file, the record or line and what was expected.

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use serde_json::json;
use swaplab_core::config;
use swaplab_trace::output::{write_trace, WriteError};
use swaplab_trace::{capture, clock, input, lru, mrc, opt, oracle_ra, shards, stats, Format, PageSeq, ReadOptions, TraceError as Terr};

create_exception!(_core, TraceError, PyValueError, "A trace file swaplab cannot read, or cannot write.");

fn terr(e: Terr) -> PyErr {
    TraceError::new_err(e.to_string())
}

fn options(columns: Option<String>, format: Option<&str>) -> PyResult<ReadOptions> {
    let format = match format {
        None => None,
        Some(f) => Some(Format::parse(f).ok_or_else(|| TraceError::new_err(format!("unknown trace format {f:?}: expected swaplab, oracleGeneral or csv")))?),
    };
    Ok(ReadOptions { format, columns })
}

fn load_seq(path: &str, columns: Option<String>, threads: Option<Vec<u32>>) -> PyResult<PageSeq> {
    let r = swaplab_trace::open(path, &options(columns, None)?).map_err(terr)?;
    PageSeq::load_reader(r, threads.as_deref(), path).map_err(terr)
}

/// Summary of a trace (JSON): accesses by kind, distinct pages, footprint, threads, meta
/// records, reuse-distance histogram.
#[pyfunction]
#[pyo3(signature = (path, columns=None))]
fn trace_stats(py: Python<'_>, path: &str, columns: Option<String>) -> PyResult<String> {
    let opts = options(columns, None)?;
    py.allow_threads(|| {
        let r = swaplab_trace::open(path, &opts).map_err(terr)?;
        let (format, header) = (r.format, r.header.clone());
        let mut v = stats::stats(r, path).map_err(terr)?;
        v["format"] = json!(format);
        v["header"] = json!(header);
        Ok(v.to_string())
    })
}

/// Convert `src` to `dst` (format from `dst`'s name: .csv, .oracleGeneral, else swaplab;
/// .zst compresses). Atomic.
#[pyfunction]
#[pyo3(signature = (src, dst, columns=None, raw=false, command=vec![]))]
fn trace_convert(py: Python<'_>, src: &str, dst: &str, columns: Option<String>, raw: bool, command: Vec<String>) -> PyResult<String> {
    let opts = options(columns, None)?;
    py.allow_threads(|| {
        let result = if raw {
            // The QEMU plugin's raw output (`swaplab trace capture`).
            let reader = capture::RawReader::new(input::open_bytes(src).map_err(terr)?, src).map_err(terr)?;
            let header = swaplab_trace::swpt::Header { clock: swaplab_trace::swpt::Clock::Instructions, command, ..Default::default() };
            write_trace(dst, &header, reader)
        } else {
            let reader = swaplab_trace::open(src, &opts).map_err(terr)?;
            let mut header = reader.header.clone();
            header.records = swaplab_trace::swpt::UNKNOWN_COUNT;
            write_trace(dst, &header, reader)
        };
        match result {
            Ok(w) => Ok(serde_json::to_string(&w).expect("serializes")),
            Err(WriteError::Input(e)) => Err(terr(e)),
            Err(WriteError::Output(m)) => Err(TraceError::new_err(m)),
        }
    })
}

fn bounds_of(seq: &PageSeq, sizes: &[u64], window: usize) -> serde_json::Value {
    let next = seq.next_use();
    let per = |f: &dyn Fn(usize) -> u64| -> Vec<u64> { sizes.iter().map(|&c| f(c as usize)).collect() };
    json!({
        "accesses": seq.len(),
        "distinct_pages": seq.distinct(),
        // Every first touch misses under every policy (compulsory misses).
        "cold_misses": seq.distinct(),
        "sizes_pages": sizes,
        "readahead_window": window,
        "oracle_lookahead_per_page": oracle_ra::LOOKAHEAD_PER_PAGE,
        "opt": per(&|c| opt::misses(seq, &next, c)),
        "oracle_readahead": per(&|c| oracle_ra::misses(seq, &next, c, window)),
        "lru": per(&|c| lru::misses(seq, c)),
        "clock": per(&|c| clock::misses(seq, c)),
    })
}

/// Misses of OPT, OPT with oracle readahead, LRU and CLOCK at each size (pages), as JSON.
#[pyfunction]
#[pyo3(signature = (path, sizes, window=8, columns=None, threads=None))]
fn trace_bounds(py: Python<'_>, path: &str, sizes: Vec<u64>, window: usize, columns: Option<String>, threads: Option<Vec<u32>>) -> PyResult<String> {
    py.allow_threads(|| {
        let seq = load_seq(path, columns, threads)?;
        Ok(bounds_of(&seq, &sizes, window).to_string())
    })
}

/// The same bounds for a synthetic workload: the touches its programs make (the simulator's
/// own generators), task instances interleaved one touch at a time, every mapping of every
/// instance its own pages.
#[pyfunction]
#[pyo3(signature = (text, source, overrides, sizes, window=8, limit=200_000_000))]
fn workload_bounds(py: Python<'_>, text: &str, source: &str, overrides: Vec<String>, sizes: Vec<u64>, window: usize, limit: u64) -> PyResult<String> {
    let resolved = config::load(text, source, &overrides).map_err(|e| crate::ConfigError::new_err(e.to_string()))?;
    py.allow_threads(|| {
        let cfg = &resolved.config;
        let mut programs = Vec::new();
        for (ti, t) in cfg.tasks.iter().enumerate() {
            if t.repeat {
                return Err(TraceError::new_err(format!("{source}: task {:?} repeats until a time limit: its page sequence has no end to bound", t.name)));
            }
            for inst in 0..t.instances {
                programs.push((programs.len() as u64, swaplab_core::workload::program_for(&resolved, ti, inst)));
            }
        }
        let mut pages = Vec::new();
        let mut live: Vec<_> = programs.into_iter().collect();
        while !live.is_empty() {
            live.retain_mut(|(k, p)| match p.next() {
                Some((mi, t)) => {
                    // (instance, mapping, page) packed into one number.
                    pages.push((*k << 48) | ((mi as u64) << 32) | t.page as u64);
                    true
                }
                None => false,
            });
            if pages.len() as u64 > limit {
                return Err(TraceError::new_err(format!("{source}: more than {limit} touches: bound a smaller workload (or --scale it down)")));
            }
        }
        Ok(bounds_of(&PageSeq::from_pages(&pages), &sizes, window).to_string())
    })
}

/// The exact LRU miss-ratio curve (misses at every size, subsampled to at most `points`
/// sizes) and its SHARDS estimate at `rate`, with the estimate's error against the exact curve.
#[pyfunction]
#[pyo3(signature = (path, rate=0.01, points=400, columns=None))]
fn trace_mrc(py: Python<'_>, path: &str, rate: f64, points: usize, columns: Option<String>) -> PyResult<String> {
    if !(rate > 0.0 && rate <= 1.0) {
        return Err(TraceError::new_err(format!("SHARDS rate {rate}: expected 0 < rate <= 1")));
    }
    py.allow_threads(|| {
        let seq = load_seq(path, columns, None)?;
        let t = std::time::Instant::now();
        let exact = mrc::histogram(&seq).curve();
        let exact_s = t.elapsed().as_secs_f64();
        let m = exact.len() - 1;
        let step = (m / points.max(1)).max(1);
        let mut sizes: Vec<u64> = (0..=m).step_by(step).map(|c| c as u64).collect();
        if *sizes.last().expect("size 0") != m as u64 {
            sizes.push(m as u64);
        }
        let t = std::time::Instant::now();
        let est = shards::estimate(&seq, rate, true, &sizes);
        let shards_s = t.elapsed().as_secs_f64();
        let n = seq.len().max(1) as f64;
        let errs: Vec<f64> = sizes.iter().zip(&est.misses).map(|(&c, &e)| (e - exact[c as usize] as f64).abs() / n).collect();
        let mae = errs.iter().sum::<f64>() / errs.len() as f64;
        let max = errs.iter().cloned().fold(0.0, f64::max);
        Ok(json!({
            "accesses": seq.len(),
            "distinct_pages": seq.distinct(),
            "sizes_pages": sizes,
            "exact_misses": sizes.iter().map(|&c| exact[c as usize]).collect::<Vec<_>>(),
            "exact_wall_s": exact_s,
            "shards": {"rate": est.rate, "adjusted": true, "sampled_pages": est.sampled_pages, "sampled_accesses": est.sampled_accesses,
                       "misses": est.misses, "wall_s": shards_s,
                       "miss_ratio_mean_abs_error": mae, "miss_ratio_max_abs_error": max},
        })
        .to_string())
    })
}

/// `swaplab bench --trace F` (the Rust half: replay and exact MRC rates).
#[pyfunction]
fn trace_bench(py: Python<'_>, path: &str) -> PyResult<String> {
    py.allow_threads(|| swaplab_core::bench::trace(path).map(|v| v.to_string()).map_err(TraceError::new_err))
}

/// The reclaim policies the simulator implements (`kernel.reclaim`), for `swaplab bounds`.
#[pyfunction]
fn reclaim_policies() -> Vec<&'static str> {
    config::RECLAIM_POLICIES.to_vec()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("TraceError", m.py().get_type_bound::<TraceError>())?;
    m.add_function(wrap_pyfunction!(trace_stats, m)?)?;
    m.add_function(wrap_pyfunction!(trace_convert, m)?)?;
    m.add_function(wrap_pyfunction!(trace_bounds, m)?)?;
    m.add_function(wrap_pyfunction!(workload_bounds, m)?)?;
    m.add_function(wrap_pyfunction!(trace_mrc, m)?)?;
    m.add_function(wrap_pyfunction!(trace_bench, m)?)?;
    m.add_function(wrap_pyfunction!(reclaim_policies, m)?)?;
    Ok(())
}
