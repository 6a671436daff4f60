//! Counters, histograms and the run result.
//!
//! Counters are named as in `/proc/vmstat` and incremented at the sites kernel-algorithms.md
//! §7 gives, so a simulated run and a host run print the same table.

pub mod cpu;
pub mod hist;
pub mod phase_times;
pub mod result;
pub mod touch_kinds;

pub use cpu::{CpuCategory, CpuCost};
pub use hist::{Histogram, Percentiles};
pub use phase_times::PhaseTimes;

/// The run's statistics: counters, the time series, recorded events.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    pub vm: VmStat,
    pub ts: result::TimeSeries,
    pub events_out: Vec<result::Event>,
    /// `swap_ra` and `swap_ra_hit` at the last sample (for the per-interval hit rate).
    pub last_ra: (u64, u64),
    /// CPU time of reclaim and aging by category: kswapd's, and all direct reclaimers'.
    pub kswapd_cpu: CpuCost,
    pub direct_cpu: CpuCost,
}

macro_rules! vmstat {
    ($($name:ident),* $(,)?) => {
        /// Event counters, `/proc/vmstat` names and meanings (kernel-algorithms.md §7).
        #[derive(Clone, Debug, Default, PartialEq, Eq)]
        pub struct VmStat { $(pub $name: u64,)* }
        impl VmStat {
            pub const NAMES: &'static [&'static str] = &[$(stringify!($name)),*];
            pub fn to_map(&self) -> std::collections::BTreeMap<&'static str, u64> {
                let mut m = std::collections::BTreeMap::new();
                $(m.insert(stringify!($name), self.$name);)*
                m
            }
        }
    };
}

// `pgscan_direct_throttle` counts `throttle_direct_reclaim`'s sleeps on the pfmemalloc
// reserves (3.6+, reclaim/pfmemalloc.rs).
// `kswapd_{low,high}_wmark_hit_quickly` count the end of kswapd's HZ/10 nap (2.6.35+;
// reclaim/kswapd.rs) and read 0 on 2.6.28, which had no nap.
vmstat!(
    pswpin, pswpout, swap_ra, swap_ra_hit, pgfault, pgmajfault,
    pgscan_kswapd, pgscan_direct, pgsteal_kswapd, pgsteal_direct,
    pgscan_anon, pgscan_file, pgsteal_anon, pgsteal_file,
    pgrefill, pgactivate, pgdeactivate, pgrotated,
    allocstall, allocstall_normal, pageoutrun, pgscan_direct_throttle,
    kswapd_low_wmark_hit_quickly, kswapd_high_wmark_hit_quickly,
    workingset_refault_anon, workingset_refault_file,
    workingset_activate_anon, workingset_activate_file,
    workingset_restore_anon, workingset_restore_file,
    oom_kill, nr_vmscan_write, nr_vmscan_immediate_reclaim, pgpgin, pgpgout,
    pgalloc_normal, pgfree,
);
