//! The result of one run, in the schema of docs/result-schema.md.

use super::{CpuCost, Percentiles, VmStat};
use crate::config::Resolved;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Clone, Debug, Serialize, Default)]
pub struct DirectReclaimStats {
    pub calls: u64,
    pub stall_ns: u64,
    pub pages_reclaimed: u64,
    pub stall_ns_pct: Percentiles,
    pub pages_per_call_pct: Percentiles,
}

#[derive(Clone, Debug, Serialize)]
pub struct TaskResult {
    pub name: String,
    pub instance: u32,
    pub pid: u32,
    pub start_ns: u64,
    pub end_ns: u64,
    pub elapsed_ns: u64,
    pub touches: u64,
    /// Elapsed time of each phase of the program, summed over its passes; the entries add up
    /// to `elapsed_ns` (stats/phase_times.rs).
    pub phase_elapsed_ns: Vec<u64>,
    /// CPU time the task ran: in the simulator the time it held a CPU, on the host the
    /// thread's CPU clock (program and the kernel work in its context). Elapsed less this is
    /// what it waited.
    pub cpu_ns: u64,
    /// `cpu_ns` per phase, as `phase_elapsed_ns` (stats/phase_times.rs).
    pub phase_cpu_ns: Vec<u64>,
    pub minor_faults: u64,
    pub major_faults: u64,
    pub touch_latency_ns: Percentiles,
    pub fault_latency_ns: Percentiles,
    /// `touch_latency_ns` by what the touch met (stats/touch_kinds.rs); the host runner writes
    /// `null` here (it cannot tell a touch's kind).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub touch_kinds: BTreeMap<String, super::touch_kinds::TouchKindStats>,
    pub direct_reclaim: DirectReclaimStats,
    pub oom_killed: bool,
    /// Time runnable but waiting for a CPU (scheduler contention).
    pub runqueue_wait_ns: u64,
    pub throughput_bytes_per_s: f64,
    /// Messages sent and received (engine/ipc.rs), and the time spent waiting on channels.
    pub messages_sent: u64,
    pub messages_received: u64,
    pub ipc_wait_ns: u64,
    /// Buffered read()/write() page operations (access = "syscall").
    pub file_reads: u64,
    pub file_writes: u64,
    /// Dirty throttling: pauses slept in `balance_dirty_pages` and their total time.
    pub dirty_pauses: u64,
    pub dirty_throttled_ns: u64,
    /// A background task: the run did not wait for it, and `elapsed_ns` ignores it.
    pub background: bool,
    /// Reads of a verifying phase that found no data (`phase.verify`).
    pub verify_errors: u64,
    /// Requests (kv requests, buffered reads) of measured phases after the ramp
    /// (engine/requests.rs); absent for a task that made none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests: Option<RequestResult>,
}

/// A task's measured requests: how many, over which window, the rates a benchmark prints
/// (memtier's Ops/sec and KB/sec, fio's IOPS and BW) and the latency percentiles.
#[derive(Clone, Debug, Serialize)]
pub struct RequestResult {
    pub ops: u64,
    pub bytes: u64,
    /// From the first measured request's start (or the end of the ramp) to the last
    /// completion.
    pub window_ns: u64,
    pub ops_per_s: f64,
    pub bytes_per_s: f64,
    pub latency_ns: Percentiles,
}

#[derive(Clone, Debug, Serialize, Default)]
pub struct TimeSeries {
    pub t_ns: Vec<u64>,
    pub nr_free_pages: Vec<u64>,
    pub nr_active_anon: Vec<u64>,
    pub nr_inactive_anon: Vec<u64>,
    pub nr_active_file: Vec<u64>,
    pub nr_inactive_file: Vec<u64>,
    pub swap_used_pages: Vec<u64>,
    /// `nr_dirty` and `nr_writeback` (page-cache folios dirty / under writeback of any kind).
    pub nr_dirty: Vec<u64>,
    pub nr_writeback: Vec<u64>,
    pub pswpin: Vec<u64>,
    pub pswpout: Vec<u64>,
    pub ra_hit_rate: Vec<Option<f64>>,
    /// MGLRU only (absent otherwise): per sample, the generations as
    /// `/sys/kernel/debug/lru_gen` lists them, `[seq, age_ms, anon_pages, file_pages]` each.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lru_gen: Vec<Vec<[u64; 4]>>,
}

impl TimeSeries {
    /// Keep every other sample (the first, third, ...): the series' resolution halves. Counters
    /// stay exact at the kept instants; `ra_hit_rate` keeps the rate of the kept intervals.
    pub fn decimate(&mut self) {
        fn halve<T: Clone>(v: &mut Vec<T>) {
            let kept: Vec<T> = v.iter().step_by(2).cloned().collect();
            *v = kept;
        }
        halve(&mut self.t_ns);
        halve(&mut self.nr_free_pages);
        halve(&mut self.nr_active_anon);
        halve(&mut self.nr_inactive_anon);
        halve(&mut self.nr_active_file);
        halve(&mut self.nr_inactive_file);
        halve(&mut self.swap_used_pages);
        halve(&mut self.nr_dirty);
        halve(&mut self.nr_writeback);
        halve(&mut self.pswpin);
        halve(&mut self.pswpout);
        halve(&mut self.ra_hit_rate);
        halve(&mut self.lru_gen);
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Event {
    pub t_ns: u64,
    pub kind: String,
    pub task: String,
    pub rss_pages: u64,
    pub swap_pages: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct DeviceResult {
    pub name: String,
    pub role: String,
    pub requests: u64,
    pub pages_read: u64,
    pub pages_written: u64,
    pub busy_ns: u64,
    /// Read requests completed and their summed submission-to-completion time (diskstats'
    /// reads and time spent reading).
    pub reads: u64,
    pub read_ticks_ns: u64,
    /// A zram device's `mm_stat` (and `failed_writes`) at the end of the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zram: Option<crate::swap::zram::ZramStats>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    pub ra_hit_pct: Option<f64>,
    pub elapsed_s: f64,
    pub readahead: String,
    /// Messages passed through channels, and the most kernel pages channels held at once.
    pub messages: u64,
    pub channel_pages_max: u64,
    /// The time series' sampling interval at the end of the run: `sim.sample_interval`, doubled
    /// each time the series reached its bound and was thinned.
    pub timeseries_interval_ns: u64,
    /// CPU time that was iowait, summed over CPUs (/proc/stat's iowait column), and its
    /// share of all CPU time (cpus x elapsed), as `top`'s `wa` (engine/iowait.rs).
    pub cpu_iowait_s: f64,
    pub iowait_pct: f64,
    /// Direct reclaimers' sleeps in `too_many_isolated` (reclaim/isolation.rs): on 6.x the
    /// `mm_vmscan_throttled` events with reason ISOLATED; no vmstat counter exists for them.
    pub reclaim_isolated_sleeps: u64,
    /// The lruvec's `lru_lock` (reclaim/lru_lock.rs): acquisitions, those that found it held,
    /// and the CPU time spun on it by reclaimers (also in the `lru_lock` category of the
    /// reclaim CPU tables) and by tasks draining their page vectors (`folio_add_lru`,
    /// `folio_activate`). No host counter gives these.
    pub lru_lock_acquisitions: u64,
    pub lru_lock_contended: u64,
    pub lru_lock_reclaim_spin_s: f64,
    pub lru_lock_access_spin_s: f64,
    /// 2.6.28's `anon_vma->lock` (reclaim/anon_vma_lock.rs): acquisitions by reclaim's rmap
    /// walks of a shared anon_vma and by exits unlinking from one, those that found it held,
    /// and the time spun by reclaimers (also their `anon_vma_lock` CPU category) and by
    /// exiting tasks. No host counter gives these.
    pub anon_vma_lock_acquisitions: u64,
    pub anon_vma_lock_contended: u64,
    pub anon_vma_lock_reclaim_spin_s: f64,
    pub anon_vma_lock_exit_spin_s: f64,
    /// The classic LRU's `lru_note_cost` walks up the memory cgroup hierarchy
    /// (reclaim/lru_lock.rs): walks that took a lock, and the acquisitions of the ancestors'
    /// `lru_lock`s (`machine.memcg_path`), those that found one held and the CPU time spun
    /// (in reclaim also in the `lru_lock` category, in the access path on the task's clock).
    pub lru_note_cost_walks: u64,
    pub memcg_ancestor_lock_acquisitions: u64,
    pub memcg_ancestor_lock_contended: u64,
    pub memcg_ancestor_lock_spin_s: f64,
    /// Atomic adds to the workingset counters' cache lines (reclaim/workingset_lines.rs: the
    /// classic LRU's `nonresident_age` of the group and every ancestor, MGLRU's
    /// `evicted[]` / `refaulted[]`), those that waited for the line to move, the wait and
    /// all the CPU they took (waits and transfers).
    pub workingset_line_adds: u64,
    pub workingset_line_waited: u64,
    pub workingset_line_wait_s: f64,
    pub workingset_line_cpu_s: f64,
    /// TLB shootdowns after reclaim's unmaps (reclaim/tlb_flush.rs): flushes that interrupted
    /// other CPUs, the IPIs sent, the reclaimers' time sending and waiting (also the
    /// `tlb_shootdown` category of the reclaim CPU tables) and the time the IPIs took from
    /// the interrupted CPUs' tasks. The host's `/proc/interrupts` TLB line counts IPIs of
    /// every origin, not reclaim's: not compared.
    pub tlb_shootdowns: u64,
    pub tlb_ipis: u64,
    pub tlb_shootdown_initiator_s: f64,
    pub tlb_ipi_receive_s: f64,
    /// arm64 (`machine.arch`): the reclaimers' waits for broadcast TLB invalidations, which
    /// interrupt no CPU; their time is in `tlb_shootdown_initiator_s`.
    pub tlb_broadcast_waits: u64,
    /// 5.15-5.17's memory cgroup statistics flushes in the classic LRU's refault path
    /// (reclaim/rstat_flush.rs): flushes, refaults that skipped one because another CPU was
    /// flushing, and the flushing tasks' CPU time. No host counter gives these.
    pub memcg_refault_flushes: u64,
    pub memcg_refault_flush_skipped: u64,
    pub memcg_refault_flush_s: f64,
    /// Tasks' spins on their CPU's `cgroup_rstat_cpu_lock` while such a flush held it (a
    /// refault's or reclaim's).
    pub memcg_rstat_updater_spin_s: f64,
    /// 5.15-6.1's flushes at the start of the classic LRU's `shrink_node`, the calls that
    /// skipped one in progress, and the reclaimers' CPU for them (their `memcg_flush`
    /// category). No host counter gives these.
    pub memcg_reclaim_flushes: u64,
    pub memcg_reclaim_flush_skipped: u64,
    pub memcg_reclaim_flush_s: f64,
    /// Reclaim's timed sleeps, by who took them: the allocator's before its retry after a
    /// direct reclaim (2.6.x `congestion_wait(HZ/50)`, 3.14 `wait_iff_congested`, 4.x's
    /// HZ/10 for pending writes), 2.6.x direct reclaim's `congestion_wait(HZ/10)` between
    /// priorities, and 2.6.x kswapd's in `balance_pgdat`. The kernel counts none of them
    /// (2.6.33 added KSWAPD_SKIP_CONGESTION_WAIT for the naps kswapd skips); seed 002's
    /// iowait is mostly these (docs/evidence/frontswap2010.md).
    pub congestion_naps_alloc: u64,
    pub congestion_naps_direct_reclaim: u64,
    pub congestion_naps_kswapd: u64,
    /// Xen PV (`machine.xen_pv`): time the guest's tasks waited while dom0 had their physical
    /// CPU (/proc/stat's steal column, summed over vCPUs), and in how many stolen stretches
    /// (engine/steal.rs). 0 on a machine that is not a Xen guest.
    pub cpu_steal_s: f64,
    pub steal_stretches: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct SimResult {
    pub schema: u32,
    pub swaplab_version: &'static str,
    pub kind: &'static str,
    pub host: Option<()>,
    pub name: String,
    pub seed: u64,
    pub config: Resolved,
    pub interrupted: bool,
    pub elapsed_ns: u64,
    pub vmstat: BTreeMap<&'static str, u64>,
    /// CPU nanoseconds kswapd spent in reclaim and aging, by category (`stats::cpu`).
    pub kswapd_cpu_by_category: CpuCost,
    /// The same for all direct reclaimers together.
    pub direct_reclaim_cpu_by_category: CpuCost,
    pub tasks: Vec<TaskResult>,
    pub timeseries: TimeSeries,
    pub events: Vec<Event>,
    pub devices: Vec<DeviceResult>,
    pub summary: Summary,
    /// The fronting store's debugfs counters (absent without a store).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub store: Option<StoreResult>,
}

/// A fronting store at the end of a run: its name, the frames its pool held and its debugfs
/// counters (`/sys/kernel/debug/zswap/`, `.../frontswap/`). Its vmstat counters (`zswpin`,
/// `zswpout`, `zswpwb`, ...) are in the run's `vmstat`.
#[derive(Clone, Debug, Serialize)]
pub struct StoreResult {
    pub name: &'static str,
    /// Pages the pool held at the end, and at most.
    pub pool_pages: u64,
    pub pool_pages_max: u64,
    pub debugfs: BTreeMap<&'static str, u64>,
    /// The same when the last user task finished, before the tasks' memory was freed (what a
    /// host run sees while its workers hold their memory); empty if no task finished.
    pub debugfs_at_work_end: BTreeMap<&'static str, u64>,
}

impl SimResult {
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a result serializes")
    }

    pub fn vmstat_struct_names() -> &'static [&'static str] {
        VmStat::NAMES
    }
}
