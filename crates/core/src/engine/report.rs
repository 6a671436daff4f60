//! What a run reports: the time-series samples and the result (counters, tasks, devices,
//! events, the resolved configuration and the swaplab version).

use super::{Sim, TState, Task, TaskKind};
use crate::mm::*;
use crate::stats::result::*;

/// The most samples the time series keeps before halving its resolution (20,000 samples of
/// ten series: under 2 MB).
pub const MAX_TIMESERIES_SAMPLES: usize = 20_000;

impl Sim {
    /// Swap slots in use, over all areas.
    pub fn swap_used(&self) -> u64 {
        self.swap.areas.iter().map(|s| s.inuse).sum()
    }

    /// One time-series sample. The series is bounded: when it reaches
    /// `MAX_TIMESERIES_SAMPLES`, every other sample is dropped and the interval doubles, so a
    /// run of any virtual length keeps a few MB of samples (the result says the interval).
    pub(super) fn sample(&mut self) {
        let sizes = self.reclaim.lru_sizes();
        let lru_gen = self.reclaim.policy_ref().lru_gen_rows(self.now);
        let swap_used = self.swap_used();
        let st = &mut self.stats;
        if st.ts.t_ns.len() >= MAX_TIMESERIES_SAMPLES {
            st.ts.decimate();
            self.sample_interval *= 2;
        }
        let ts = &mut st.ts;
        ts.t_ns.push(self.now);
        ts.nr_free_pages.push(self.mem.free_list.len() as u64);
        ts.nr_inactive_anon.push(sizes[LruList::InactiveAnon as usize]);
        ts.nr_active_anon.push(sizes[LruList::ActiveAnon as usize]);
        ts.nr_inactive_file.push(sizes[LruList::InactiveFile as usize]);
        ts.nr_active_file.push(sizes[LruList::ActiveFile as usize]);
        ts.swap_used_pages.push(swap_used);
        ts.nr_dirty.push(self.wb.nr_dirty);
        ts.nr_writeback.push(self.io.nr_writeback);
        ts.pswpin.push(st.vm.pswpin);
        ts.pswpout.push(st.vm.pswpout);
        if let Some(rows) = lru_gen {
            ts.lru_gen.push(rows);
        }
        let (ra, hit) = (st.vm.swap_ra - st.last_ra.0, st.vm.swap_ra_hit - st.last_ra.1);
        ts.ra_hit_rate.push(if ra == 0 { None } else { Some(((hit as f64 / ra as f64) * 1e4).round() / 1e4) });
        st.last_ra = (st.vm.swap_ra, st.vm.swap_ra_hit);
    }

    pub fn result(&self) -> SimResult {
        let tasks: Vec<TaskResult> = self.tasks.iter().filter(|t| t.kind == TaskKind::User).map(task_result).collect();
        let elapsed = tasks.iter().filter(|t| !t.background).map(|t| t.end_ns).max().unwrap_or(0);
        SimResult {
            schema: 1,
            swaplab_version: crate::VERSION,
            kind: "simulation",
            host: None,
            name: self.cfg.config.name.clone(),
            seed: self.cfg.config.seed,
            config: self.cfg.clone(),
            interrupted: self.interrupted,
            elapsed_ns: elapsed,
            vmstat: {
                let mut m = self.stats.vm.to_map();
                m.extend(self.swap.store.counters().vmstat);
                m
            },
            kswapd_cpu_by_category: self.stats.kswapd_cpu,
            direct_reclaim_cpu_by_category: self.stats.direct_cpu,
            tasks,
            timeseries: self.stats.ts.clone(),
            events: self.stats.events_out.clone(),
            devices: self.device_results(),
            summary: self.summary(elapsed),
            store: (self.swap.store.name() != "none").then(|| StoreResult {
                name: self.swap.store.name(),
                pool_pages: self.swap.pool_frames.len() as u64,
                pool_pages_max: self.swap.pool_frames_max,
                debugfs: self.swap.store.counters().debugfs.into_iter().collect(),
                debugfs_at_work_end: self.store_at_work_end.clone().unwrap_or_default(),
            }),
        }
    }

    /// Every swap device, then the file device if any file I/O reached it.
    fn device_results(&self) -> Vec<DeviceResult> {
        let mut devices: Vec<DeviceResult> = self
            .swap
            .areas
            .iter()
            .map(|s| DeviceResult {
                name: s.name.clone(),
                role: "swap".into(),
                requests: s.device.requests,
                pages_read: s.device.pages_read,
                pages_written: s.device.pages_written,
                busy_ns: s.device.busy_ns,
                reads: s.device.reads,
                read_ticks_ns: s.device.read_ticks_ns,
                zram: s.zram.as_ref().map(|z| z.stats()),
            })
            .collect();
        if self.io.file_dev.requests > 0 {
            let d = &self.io.file_dev;
            devices.push(DeviceResult { name: "file".into(), role: "file".into(), requests: d.requests, pages_read: d.pages_read, pages_written: d.pages_written, busy_ns: d.busy_ns, reads: d.reads, read_ticks_ns: d.read_ticks_ns, zram: None });
        }
        devices
    }

    /// The run's figures beyond the counters: readahead hit rate, iowait, lock and TLB
    /// statistics. `elapsed` is the end of the last foreground task.
    fn summary(&self, elapsed: u64) -> Summary {
        let cpu_time = elapsed.saturating_mul(self.sched.cpus.len() as u64);
        let iowait_ns = self.iowait.total_ns(elapsed).min(cpu_time);
        let iowait_pct = if cpu_time == 0 { 0.0 } else { (iowait_ns as f64 * 1e4 / cpu_time as f64).round() / 100.0 };
        let ra_hit_pct = if self.stats.vm.swap_ra == 0 { None } else { Some(((self.stats.vm.swap_ra_hit as f64 * 100.0 / self.stats.vm.swap_ra as f64) * 100.0).round() / 100.0) };
        Summary {
            ra_hit_pct,
            elapsed_s: elapsed as f64 / 1e9,
            readahead: self.swap.ra_name.clone(),
            messages: self.ipc.messages,
            timeseries_interval_ns: self.sample_interval,
            channel_pages_max: self.ipc.kernel_pages_max,
            cpu_iowait_s: iowait_ns as f64 / 1e9,
            iowait_pct,
            reclaim_isolated_sleeps: self.reclaim.isolation.throttled,
            lru_lock_acquisitions: self.reclaim.lru_lock.stats.acquisitions,
            lru_lock_contended: self.reclaim.lru_lock.stats.contended,
            lru_lock_reclaim_spin_s: self.reclaim.lru_lock.stats.reclaim_spin_ns as f64 / 1e9,
            lru_lock_access_spin_s: self.reclaim.lru_lock.stats.access_spin_ns as f64 / 1e9,
            anon_vma_lock_acquisitions: self.reclaim.anon_vma_locks.stats.acquisitions,
            anon_vma_lock_contended: self.reclaim.anon_vma_locks.stats.contended,
            anon_vma_lock_reclaim_spin_s: self.reclaim.anon_vma_locks.stats.reclaim_spin_ns as f64 / 1e9,
            anon_vma_lock_exit_spin_s: self.reclaim.anon_vma_locks.stats.exit_spin_ns as f64 / 1e9,
            lru_note_cost_walks: self.reclaim.memcg_ancestors.stats.walks,
            memcg_ancestor_lock_acquisitions: self.reclaim.memcg_ancestors.stats.ancestor_acquisitions,
            memcg_ancestor_lock_contended: self.reclaim.memcg_ancestors.stats.ancestor_contended,
            memcg_ancestor_lock_spin_s: self.reclaim.memcg_ancestors.stats.ancestor_spin_ns as f64 / 1e9,
            workingset_line_adds: self.reclaim.ws_lines.stats.adds,
            workingset_line_waited: self.reclaim.ws_lines.stats.waited,
            workingset_line_wait_s: self.reclaim.ws_lines.stats.wait_ns as f64 / 1e9,
            workingset_line_cpu_s: self.reclaim.ws_lines.stats.cpu_ns as f64 / 1e9,
            tlb_shootdowns: self.reclaim.tlb.stats.shootdowns,
            tlb_ipis: self.reclaim.tlb.stats.ipis,
            tlb_shootdown_initiator_s: self.reclaim.tlb.stats.initiator_ns as f64 / 1e9,
            tlb_ipi_receive_s: self.reclaim.tlb.stats.receiver_ns as f64 / 1e9,
            tlb_broadcast_waits: self.reclaim.tlb.stats.broadcast_waits,
            memcg_refault_flushes: self.reclaim.rstat.stats.flushes,
            memcg_refault_flush_skipped: self.reclaim.rstat.stats.skipped_busy,
            memcg_refault_flush_s: self.reclaim.rstat.stats.flush_ns as f64 / 1e9,
            memcg_rstat_updater_spin_s: self.reclaim.rstat.stats.updater_spin_ns as f64 / 1e9,
            memcg_reclaim_flushes: self.reclaim.rstat.reclaim_stats.flushes,
            memcg_reclaim_flush_skipped: self.reclaim.rstat.reclaim_stats.skipped_busy,
            memcg_reclaim_flush_s: self.reclaim.rstat.reclaim_stats.flush_ns as f64 / 1e9,
            congestion_naps_alloc: self.reclaim.alloc_naps,
            congestion_naps_direct_reclaim: self.reclaim.direct_reclaim_naps,
            congestion_naps_kswapd: self.reclaim.kswapd.naps,
            cpu_steal_s: self.steal.as_ref().map_or(0.0, |s| s.total_ns as f64 / 1e9),
            steal_stretches: self.steal.as_ref().map_or(0, |s| s.hits),
        }
    }

    pub(crate) fn record_event(&mut self, kind: &str, task: String, rss: u64, swap: u64) {
        self.stats.events_out.push(Event { t_ns: self.now, kind: kind.to_string(), task, rss_pages: rss, swap_pages: swap });
    }
}

/// A user task's result.
fn task_result(t: &Task) -> TaskResult {
    // A task that never started (its start_delay is past the end of the run) ran
    // for no time: it ends where it starts.
    let end = if t.state == TState::Done { t.end } else { t.clock }.max(t.start);
    let elapsed = end.saturating_sub(t.start);
    TaskResult {
        name: t.name.clone(),
        instance: t.instance,
        pid: t.pid,
        start_ns: t.start,
        end_ns: end,
        elapsed_ns: elapsed,
        touches: t.touches,
        phase_elapsed_ns: t.phase_times.until(end),
        cpu_ns: t.cpu_at(end),
        phase_cpu_ns: t.phase_times.cpu_until(t.cpu_at(end)),
        minor_faults: t.minor_faults,
        major_faults: t.major_faults,
        touch_latency_ns: t.touch_hist.percentiles(),
        fault_latency_ns: t.fault_hist.percentiles(),
        touch_kinds: t.touch_kinds.report(),
        direct_reclaim: DirectReclaimStats {
            calls: t.dr_calls,
            stall_ns: t.dr_stall_ns,
            pages_reclaimed: t.dr_pages,
            stall_ns_pct: t.dr_stall_hist.percentiles(),
            pages_per_call_pct: t.dr_pages_hist.percentiles(),
        },
        oom_killed: t.oom_killed,
        runqueue_wait_ns: t.runq_wait_ns,
        throughput_bytes_per_s: if elapsed == 0 { 0.0 } else { (t.touches as f64 * PAGE_SIZE as f64 * 1e9 / elapsed as f64).round() },
        messages_sent: t.messages_sent,
        messages_received: t.messages_received,
        ipc_wait_ns: t.ipc_wait_ns,
        file_reads: t.file_reads,
        file_writes: t.file_writes,
        dirty_pauses: t.dirty_pauses,
        dirty_throttled_ns: t.dirty_throttled_ns,
        background: t.background,
        verify_errors: t.verify_errors,
        requests: t.requests.as_ref().filter(|r| r.ops > 0).map(|r| {
            let window = r.window_ns(t.start + t.ramp_ns);
            let rate = |n: u64| if window == 0 { 0.0 } else { (n as f64 * 1e9 / window as f64 * 100.0).round() / 100.0 };
            RequestResult { ops: r.ops, bytes: r.bytes, window_ns: window, ops_per_s: rate(r.ops), bytes_per_s: rate(r.bytes), latency_ns: r.latency.percentiles() }
        }),
    }
}
