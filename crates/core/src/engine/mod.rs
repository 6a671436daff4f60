//! The discrete-event engine.
//!
//! Time is virtual nanoseconds. Tasks (user programs and kernel threads such as kswapd) run on
//! `cpus` CPUs; a task that waits for I/O, for writeback or for a throttle uses no CPU. Events
//! (I/O completions, wake-ups, CPU hand-overs, samples) sit in one heap ordered by (time,
//! sequence number), so a run is a pure function of its configuration and seed.
//!
//! Resident touches never go through the heap: a running task executes its program until its
//! clock passes the next event's time plus `sync_quantum` (the bounded causality skew between
//! CPUs), its time slice ends, or it needs the kernel (a fault). Kernel work (faults, direct
//! reclaim, one step of a kernel thread) runs at the task's current clock and charges its CPU
//! cost to that task, which is how direct-reclaim stalls and kswapd's CPU time appear.
//!
//! `Sim` is a composition of parts with one concern each, so that code borrows only what it
//! needs: `mem` (frames, page tables, inodes, watermarks; mm/), `swap` (swap areas, swap-in
//! readahead, the fronting store; swap/), `io` (requests in flight, waiters, the file device;
//! engine/io.rs), `sched` (CPUs and the run queue; engine/sched.rs), `stats` (counters, time
//! series, events; engine/report.rs), `reclaim` (the LRU policy and what every policy shares;
//! reclaim/). The files of this folder: `sched.rs` scheduling, `user.rs` running user programs,
//! `kthread.rs` kernel threads, `io.rs` block I/O and writeback accounting, `congestion.rs`
//! queue congestion and `congestion_wait`, `fault.rs` page
//! faults, `swapin_window.rs` a swap-in's readahead window, `fork.rs` fork's copy-on-write sharing and its breaking, `memory.rs` page allocation and teardown, `ipc.rs` messages and buffered file I/O,
//! `kv_conn.rs` a kv store's client connections, `barrier.rs` barriers between phases, `requests.rs` requests and their latency,
//! `report.rs` samples and the result, `invariants.rs` consistency checks.

mod barrier;
mod congestion;
mod events;
pub(crate) mod fault;
mod fork;
pub mod invariants;
mod io;
mod iowait;
pub mod ipc;
pub mod kthread;
pub mod kv_conn;
pub(crate) mod memory;
mod report;
pub mod requests;
mod sched;
mod swapin_window;
mod task;
pub(crate) mod steal;
pub(crate) mod tick;
mod user;

use crate::config::{Costs, MappingKind, Profile, Resolved};
use crate::mm::*;
use crate::reclaim::ReclaimState;
use crate::stats::Stats;
use crate::swap::SwapSystem;
pub(crate) use events::{Ev, EventQueue};
pub(crate) use io::{DevRef, IoState};
pub use kthread::{KernelThread, KthreadStep};
pub(crate) use sched::Sched;
pub use report::MAX_TIMESERIES_SAMPLES;
pub use task::{DirtyWait, TState, Task, TaskKind};

#[derive(Clone, Copy, Debug)]
pub struct Progress {
    pub virtual_ns: u64,
    pub fraction: f64,
}

/// How often the event loop consults the wall clock for progress reports and interruption:
/// every this many events (an event is at least a fault or a scheduling hand-over, so the
/// `Instant::now()` call is noise), so that Ctrl-C acts within a fraction of a second.
const WALL_CHECK_EVENTS: u64 = 64;
/// Real time between two progress callbacks.
const PROGRESS_INTERVAL_MS: u128 = 200;

pub struct Sim {
    pub cfg: Resolved,
    pub profile: Profile,
    /// A read fault maps an exclusive swapped-in page writable (6.11+, engine/fault.rs).
    pub(crate) swapin_read_fault_writable: bool,
    pub costs: Costs,
    pub now: u64,
    pub(crate) events: EventQueue,
    pub mem: Memory,
    pub swap: SwapSystem,
    pub(crate) io: IoState,
    pub(crate) iowait: iowait::IowaitAcct,
    pub(crate) sched: Sched,
    pub tasks: Vec<Task>,
    pub stats: Stats,
    pub reclaim: ReclaimState,
    /// Kernel threads, indexed by `TaskKind::Kernel(i)`; a slot is empty while its thread runs.
    pub(crate) kthreads: Vec<Option<Box<dyn KernelThread>>>,
    /// The task id of kswapd (the first kernel thread).
    pub(crate) kswapd: u32,
    /// One jiffy (1 / CONFIG_HZ) in ns.
    pub(crate) jiffy_ns: u64,
    /// 2.6.32: the guest's tick boundaries, on which its `schedule_timeout` naps end
    /// (`tick.rs`); None: naps last exactly their timeout.
    pub(crate) tick: Option<tick::Tick>,
    /// Xen PV: when dom0 has the guest's physical CPUs (`steal.rs`); None elsewhere.
    pub(crate) steal: Option<steal::Steal>,
    sample_interval: u64,
    global_deadline: Option<u64>,
    pub(crate) user_tasks_left: usize,
    /// The fronting store's debugfs counters when the last user task finished its work, before
    /// its memory was freed: what a host run reads while its workers still hold their memory.
    pub(crate) store_at_work_end: Option<std::collections::BTreeMap<&'static str, u64>>,
    interrupted: bool,
    /// Message channels (engine/ipc.rs).
    pub ipc: ipc::IpcState,
    /// kv stores' client connections (engine/kv_conn.rs).
    pub kv_conns: kv_conn::KvConns,
    pub(crate) barriers: barrier::Barriers,
    /// Dirty pages and the flusher (writeback/).
    pub wb: crate::writeback::WbState,
}

impl Sim {
    pub fn new(cfg: &Resolved) -> Sim {
        let c = &cfg.config;
        let profile = cfg.profile;
        let mut sim = Sim {
            cfg: cfg.clone(),
            profile,
            swapin_read_fault_writable: crate::config::swapin_read_fault_maps_writable(&c.kernel.profile),
            costs: c.costs.clone(),
            now: 0,
            events: EventQueue::default(),
            mem: Memory::new(cfg),
            swap: SwapSystem::new(cfg),
            io: IoState::new(cfg),
            iowait: iowait::IowaitAcct::new(c.machine.cpus as usize),
            sched: Sched::new(&c.sim, c.machine.cpus as usize, profile > crate::config::Profile::V2_6_28 || crate::config::era_2_6_32(&c.kernel.profile)),
            tasks: Vec::new(),
            stats: Stats::default(),
            reclaim: ReclaimState::new(cfg),
            kthreads: Vec::new(),
            kswapd: 0,
            jiffy_ns: 1_000_000_000 / c.kernel.hz as u64,
            tick: crate::config::era_2_6_32(&c.kernel.profile).then(|| tick::Tick::for_run(c.seed, 1_000_000_000 / c.kernel.hz as u64)),
            steal: c.machine.xen_pv.then(|| steal::Steal::new(c.seed, c.machine.cpus as usize, c.machine.xen_dom0_interval.0, c.machine.xen_dom0_burst.0)).flatten(),
            sample_interval: c.sim.sample_interval.0,
            global_deadline: c.sim.time_limit.map(|d| d.0),
            user_tasks_left: 0,
            store_at_work_end: None,
            interrupted: false,
            ipc: ipc::IpcState::new(c),
            kv_conns: kv_conn::KvConns::default(),
            barriers: barrier::Barriers::default(),
            wb: crate::writeback::WbState::new(c),
        };
        // The legacy request queue bounds the reads an elevator holds (device/mod.rs); blk-mq's
        // tags are not modelled for reads.
        let legacy_queue = profile <= crate::config::Profile::V4_14;
        for d in sim.swap.areas.iter_mut().map(|a| &mut a.device).chain(std::iter::once(&mut sim.io.file_dev)) {
            d.read_pool = legacy_queue && d.params.scheduler != "none";
        }
        sim.build_tasks();
        sim.ipc_count_readers();
        sim.kswapd = sim.spawn_kthread(Box::new(crate::reclaim::kswapd::Kswapd), None);
        if c.zswap.as_ref().is_some_and(|z| z.enabled) {
            let worker = sim.spawn_kthread(Box::new(crate::swap::store::zswap::shrinker::ShrinkWorker::default()), None);
            sim.swap.writeback_worker = Some(worker);
        }
        sim.wb.flusher = sim.spawn_kthread(Box::new(crate::writeback::flusher::Flusher::default()), None);
        sim
    }

    /// `HZ / 10` in ns: kswapd's nap, the writeback throttle's timeout and 2.6.28's
    /// `congestion_wait(WRITE, HZ/10)` (the kernel writes these as HZ/10 jiffies).
    pub(crate) fn hz_div_10_ns(&self) -> u64 {
        self.jiffy_ns * (self.cfg.config.kernel.hz as u64 / 10)
    }

    /// How long a `schedule_timeout` of `timeout` ns called at `now` sleeps: to the guest's
    /// tick where the profile has one (`tick.rs`), else exactly the timeout.
    pub(crate) fn nap_ns(&self, now: u64, timeout: u64) -> u64 {
        self.tick.map_or(timeout, |t| t.expiry(now, timeout) - now)
    }

    fn build_tasks(&mut self) {
        let cfg = self.cfg.clone();
        let mut pid = 1;
        let mut first_tid = Vec::with_capacity(cfg.config.tasks.len());
        for (ti, t) in cfg.config.tasks.iter().enumerate() {
            first_tid.push(self.tasks.len() as u32);
            let fork_parent = t.fork_of.as_ref().map(|p| first_tid[cfg.config.tasks.iter().position(|o| &o.name == p).expect("validated: fork_of names an earlier task")]);
            let mut first_vmas: Vec<u32> = Vec::new();
            for inst in 0..t.instances {
                let tid = self.tasks.len() as u32;
                // Threads map their process's shared mappings (config `shared`): the first
                // thread's VMAs.
                let shared = if t.threads && inst > 0 { Some(first_vmas.as_slice()) } else { None };
                let vmas = self.map_task(tid, ti, inst, t, shared);
                if inst == 0 {
                    first_vmas = vmas.clone();
                }
                let program = crate::workload::program_for(&self.cfg, ti, inst);
                let start = t.start_delay.0;
                let deadline = match (t.time_limit, self.global_deadline) {
                    (Some(l), Some(g)) => Some((start + l.0).min(g)),
                    (Some(l), None) => Some(start + l.0),
                    (None, g) => g,
                };
                let mut task = Task::user(&t.name, inst, pid, program, vmas, start, deadline);
                if t.threads {
                    // One process: every thread runs in the first instance's mm.
                    task.mm = pid - inst;
                }
                task.background = t.background;
                task.ramp_ns = t.ramp_time.map_or(0, |r| r.0);
                task.fork_parent = fork_parent;
                self.tasks.push(task);
                pid += 1;
                self.push(start, Ev::Start(tid));
                if !t.background {
                    self.user_tasks_left += 1;
                }
            }
        }
        self.kv_conns = kv_conn::KvConns::new(&cfg, &first_tid, self.tasks.len());
        self.barriers = barrier::Barriers::new(&cfg, &first_tid, self.tasks.len());
    }

    /// Lay a process's mappings out from 4 GiB upwards, 2 MiB aligned with a 2 MiB gap; shared
    /// and file mappings get an inode each. A thread after the first (`process_vmas`: the
    /// first thread's VMAs) maps the process's `shared` mappings instead of its own. Returns
    /// the VMA ids.
    fn map_task(&mut self, tid: u32, task_idx: usize, instance: u32, task: &crate::config::TaskSpec, process_vmas: Option<&[u32]>) -> Vec<u32> {
        let mappings = &task.mappings;
        use crate::config::pagecache::Advice;
        // bdi->ra_pages; POSIX_FADV_SEQUENTIAL doubles the file's.
        let ra_pages = self.cfg.config.pagecache.ra_pages();
        let mem = &mut self.mem;
        let mut vmas = Vec::new();
        let mut vpn = 1u64 << (32 - PAGE_SHIFT);
        for (mi, m) in mappings.iter().enumerate() {
            let pages = m.size.pages();
            if let Some(first) = process_vmas.filter(|_| m.shared) {
                vmas.push(first[mi]);
                vpn += pages.div_ceil(PTRS_PER_PMD) * PTRS_PER_PMD + PTRS_PER_PMD;
                continue;
            }
            let object = match m.kind {
                MappingKind::Anon => NONE,
                MappingKind::Shmem | MappingKind::File => {
                    // A file the program only reads and writes with system calls is not mmapped
                    // (`mapping_mapped` is false), though the model keeps a VMA for it.
                    let mmapped = m.kind == MappingKind::Shmem || task.phases.iter().any(|ph| ph.mapping == m.name && ph.access != crate::config::Access::Syscall);
                    let v = mem.vmas.len() as u32;
                    match m.file.as_ref().and_then(|name| mem.files.get(name)) {
                        Some(&obj) => {
                            // Another process's mapping of a file already open: the same inode;
                            // the VMA joins its i_mmap tree after those mapped before it (equal
                            // page offsets insert to the right: mmap order).
                            let o = &mut mem.objects[obj as usize];
                            o.vmas.push(v);
                            o.mmapped |= mmapped;
                            obj
                        }
                        None => {
                            let base = mem.objects.iter().filter(|o| o.kind == MappingKind::File).map(|o| o.entries.len() as u64).sum();
                            let ra = crate::pagecache::readahead::RaState::new(ra_pages * if m.advice == Advice::Sequential { 2 } else { 1 });
                            mem.objects.push(Object { kind: m.kind, entries: vec![0; pages as usize], vmas: vec![v], file_base: base, ra, advice: m.advice, mmapped });
                            let obj = (mem.objects.len() - 1) as u32;
                            if let Some(name) = &m.file {
                                mem.files.insert(name.clone(), obj);
                            }
                            obj
                        }
                    }
                }
            };
            vmas.push(mem.vmas.len() as u32);
            let content_key = crate::swap::store::zswap::content::mapping_key(task_idx, instance, mi);
            mem.vmas.push(Vma { task: tid, kind: m.kind, start_vpn: vpn, ptes: vec![0; pages as usize], object, ra_info: 0, rss: 0, swapents: 0, exec: m.exec, content_key, anon_vma: NONE, tree_pos: 0, forked: false });
            vpn += pages.div_ceil(PTRS_PER_PMD) * PTRS_PER_PMD + PTRS_PER_PMD;
        }
        vmas
    }

    #[inline]
    pub(crate) fn push(&mut self, t: u64, ev: Ev) {
        self.events.push(t, ev);
    }

    pub fn run(&mut self, progress: &mut dyn FnMut(Progress) -> bool) {
        self.push(0, Ev::Sample);
        let mut last_report = std::time::Instant::now();
        let mut n: u64 = 0;
        while self.user_tasks_left > 0 {
            let Some((t, ev)) = self.events.pop() else { break };
            self.now = t;
            match ev {
                Ev::Cpu(cpu, token) => {
                    if self.sched.cpu_token[cpu as usize] == token {
                        self.run_cpu(cpu as usize)
                    }
                }
                Ev::IoDone(r) => self.io_done(r),
                Ev::IoIdle(dev, until) => self.io_idle(dev, until),
                Ev::Timer(tid, token) => self.timer(tid, token),
                Ev::Start(tid) => {
                    if let Some(parent) = self.tasks[tid as usize].fork_parent {
                        self.fork_mm(parent, tid);
                    }
                    self.tasks[tid as usize].clock = t;
                    self.make_runnable(tid, t);
                }
                Ev::Sample => {
                    self.sample();
                    self.ipc_check_deadlock();
                    self.push(t + self.sample_interval, Ev::Sample);
                }
            }
            n += 1;
            if n.is_multiple_of(WALL_CHECK_EVENTS) {
                let now = std::time::Instant::now();
                if now.duration_since(last_report).as_millis() >= PROGRESS_INTERVAL_MS {
                    last_report = now;
                    if !progress(Progress { virtual_ns: self.now, fraction: self.fraction_done() }) {
                        self.interrupted = true;
                        break;
                    }
                }
            }
        }
    }
}

/// The readahead policy in effect: "auto" resolves to the profile's kernel; VMA readahead
/// falls back to the offset-based adaptive window when disabled or when any swap device is
/// rotational (§1.5, §1.6).
pub fn resolve_readahead(knob: &str, profile: Profile, vma_ra_enabled: bool, any_rotational: bool) -> String {
    let name = match knob {
        "auto" => match profile {
            Profile::V2_6_28 => "fixed-run",
            Profile::V3_14 => "adaptive",
            Profile::V4_14 | Profile::V6 => "vma",
        },
        other => other,
    };
    if name == "vma" && (!vma_ra_enabled || any_rotational) {
        return "adaptive".into();
    }
    name.into()
}

/// Run a resolved configuration to completion (or until `progress` returns false).
pub fn simulate(resolved: &Resolved, progress: &mut dyn FnMut(Progress) -> bool) -> crate::stats::result::SimResult {
    let mut sim = Sim::new(resolved);
    sim.run(progress);
    sim.result()
}

#[cfg(test)]
mod shared_mapping_tests;

/// A fresh machine of `profile` for unit tests of one kernel rule: 64 MiB, a disk to swap
/// to, one task (task 0) that has not run yet.
#[cfg(test)]
pub(crate) fn test_machine(profile: &str) -> Sim {
    const ONE_TASK: &str = "name = \"t\"\n[machine]\nram = \"64MiB\"\n[[swap]]\ndevice = \"hdd\"\nsize = \"64MiB\"\n[[task]]\nname = \"t\"\n[[task.mapping]]\nname = \"m\"\nkind = \"anon\"\nsize = \"1MiB\"\n[[task.phase]]\nmapping = \"m\"\npattern = \"sequential\"\n";
    let r = crate::config::load(ONE_TASK, "t.toml", &[format!("kernel.profile=\"{profile}\"")]).expect("valid");
    Sim::new(&r)
}
