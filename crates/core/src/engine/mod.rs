//! The discrete-event engine (being written: this placeholder only fixes the API).
use crate::config::Resolved;
use crate::stats::result::*;
use crate::stats::VmStat;

#[derive(Clone, Copy, Debug)]
pub struct Progress {
    pub virtual_ns: u64,
    pub fraction: f64,
}

pub fn simulate(resolved: &Resolved, _progress: &mut dyn FnMut(Progress) -> bool) -> SimResult {
    SimResult {
        schema: 1,
        swaplab_version: crate::VERSION,
        kind: "simulation",
        host: None,
        name: resolved.config.name.clone(),
        seed: resolved.config.seed,
        config: resolved.clone(),
        interrupted: false,
        elapsed_ns: 0,
        vmstat: VmStat::default().to_map(),
        tasks: vec![],
        timeseries: TimeSeries::default(),
        events: vec![],
        devices: vec![],
        summary: Summary { ra_hit_pct: None, elapsed_s: 0.0, readahead: String::new() },
    }
}
