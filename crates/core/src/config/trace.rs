//! Trace phases (`pattern = "trace"`) at resolve time: the trace is read once, its address
//! space is laid out as mappings (`swaplab_trace::layout`: anon, shmem or file as its mmap
//! records say, untouched gaps dropped) and those mappings are added to the task, named
//! `trace<phase>.<k>` with the trace page they start at. The phase's `touches` becomes the
//! number of accesses it replays. The engine then sees an ordinary task: the replay itself is a
//! stream of touches ([`crate::workload::trace`]), so nothing downstream knows about traces.
//!
//! Paths are relative to the workload file's directory (or the current directory when the
//! workload did not come from a file); the resolved configuration holds the absolute path, so
//! a result records exactly which trace it replayed.

use super::{Config, ConfigError, MappingKind, MappingSpec, PatternKind};
use crate::config::units::Size;
use std::path::{Path, PathBuf};
use swaplab_trace::layout::{self, RegionKind};
use swaplab_trace::ReadOptions;

/// The mappings of trace phase `pi` are named with this prefix.
pub fn mapping_prefix(pi: usize) -> String {
    format!("trace{pi}.")
}

fn base_dir(workload_file: &str) -> PathBuf {
    let p = Path::new(workload_file);
    match p.parent() {
        Some(d) if p.is_file() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Replace every trace phase's `file` by its absolute path and lay out its mappings.
pub fn lay_out(cfg: &mut Config, workload_file: &str, at: &dyn Fn(&str, String) -> ConfigError) -> Result<(), ConfigError> {
    for (ti, task) in cfg.tasks.iter_mut().enumerate() {
        for (pi, ph) in task.phases.iter_mut().enumerate() {
            let key = |f: &str| format!("task.{ti}.phase.{pi}.{f}");
            if ph.pattern != PatternKind::Trace {
                for (set, name) in [(ph.file.is_some(), "file"), (ph.speed.is_some(), "speed"), (ph.threads.is_some(), "threads"), (ph.columns.is_some(), "columns")] {
                    if set {
                        return Err(at(&key(name), format!("`{name}` belongs to trace phases (pattern = \"trace\")")));
                    }
                }
                continue;
            }
            let Some(file) = ph.file.clone() else {
                return Err(at(&key("pattern"), "a trace phase needs `file` (a swaplab, oracleGeneral or CSV trace)".into()));
            };
            if !ph.mapping.is_empty() || ph.touches.is_some() {
                return Err(at(&key(if ph.touches.is_some() { "touches" } else { "mapping" }), "a trace phase takes its mappings and touches from the trace".into()));
            }
            if let Some(s) = ph.speed {
                if !(s > 0.0 && s.is_finite()) {
                    return Err(at(&key("speed"), format!("expected a positive rate (trace clock units per second), got {s}")));
                }
            }
            let path = base_dir(workload_file).join(&file);
            let path_str = path.canonicalize().unwrap_or(path).to_string_lossy().into_owned();
            let opts = ReadOptions { format: None, columns: ph.columns.clone() };
            let trace_err = |e: swaplab_trace::TraceError| at(&key("file"), format!("trace {e}"));
            let reader = swaplab_trace::open(&path_str, &opts).map_err(trace_err)?;
            let shift = reader.header.page_shift;
            if shift != 12 {
                return Err(at(&key("file"), format!("trace {path_str} has {}-byte pages: the simulator replays 4 KiB pages", 1u64 << shift)));
            }
            let lay = layout::infer(reader, ph.threads.as_deref(), shift).map_err(trace_err)?;
            if lay.accesses == 0 {
                return Err(at(&key("file"), format!("trace {path_str} has no accesses{}", if ph.threads.is_some() { " by the selected threads" } else { "" })));
            }
            let prefix = mapping_prefix(pi);
            for (k, r) in lay.regions.iter().enumerate() {
                let kind = match r.kind {
                    RegionKind::Anon => MappingKind::Anon,
                    RegionKind::Shmem => MappingKind::Shmem,
                    RegionKind::File => MappingKind::File,
                };
                task.mappings.push(MappingSpec { name: format!("{prefix}{k}"), kind, size: Size(r.pages * 4096), shared: false, trace_page: Some(r.start_page), advice: Default::default(), exec: false, file: None });
            }
            ph.mapping = format!("{prefix}0");
            ph.touches = Some(lay.accesses);
            ph.file = Some(path_str);
        }
    }
    Ok(())
}
