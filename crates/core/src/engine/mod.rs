//! The discrete-event engine.
//!
//! Time is virtual nanoseconds. Tasks (user programs and kswapd) run on `cpus` CPUs; a task
//! that waits for I/O, for writeback or for a throttle uses no CPU. Events (I/O completions,
//! wake-ups, CPU hand-overs, samples) sit in one heap ordered by (time, sequence number), so a
//! run is a pure function of its configuration and seed.
//!
//! Resident touches never go through the heap: a running task executes its program until its
//! clock passes the next event's time plus `sync_quantum` (the bounded causality skew between
//! CPUs), its time slice ends, or it needs the kernel (a fault). Kernel work (faults, reclaim,
//! kswapd's balance_pgdat iterations) runs at the task's current clock and charges its CPU cost
//! to that task, which is how direct-reclaim stalls and kswapd's CPU time appear.

mod fault;
pub mod invariants;
pub mod ipc;
mod memory;
mod task;

use crate::config::{Costs, MappingKind, Profile, Resolved, Watermarks};
use crate::device::{Device, Plug};
use crate::mm::*;
use crate::reclaim::{Bailout, ReclaimState};
use crate::stats::result::*;
use crate::stats::VmStat;
use crate::swap::readahead::{self, SwapReadahead};
use crate::swap::SwapArea;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
pub use task::{TState, Task, TaskKind};
use crate::workload::Step;

#[derive(Clone, Copy, Debug)]
pub struct Progress {
    pub virtual_ns: u64,
    pub fraction: f64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Ev {
    /// The task on this CPU continues; the token invalidates events of an earlier occupant.
    Cpu(u32, u64),
    /// An I/O request finished.
    IoDone(u32),
    /// A sleeping task's timer expired (throttle timeout, kswapd nap end).
    Timer(u32, u64),
    /// A task starts (start_delay).
    Start(u32),
    Sample,
}

/// Where an I/O request's pages go when it completes.
#[derive(Clone, Debug)]
pub(crate) struct IoReq {
    pub frames: Vec<u32>,
    pub write: bool,
    pub dev: DevRef,
}

/// Which device a request targets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DevRef {
    Swap(usize),
    File,
}

pub struct Sim {
    pub cfg: Resolved,
    pub profile: Profile,
    pub costs: Costs,
    pub now: u64,
    events: BinaryHeap<Reverse<(u64, u64, Ev)>>,
    seq: u64,
    pub frames: Vec<Frame>,
    pub(crate) free_list: Vec<u32>,
    pub lru: Lrus,
    pub vmas: Vec<Vma>,
    pub objects: Vec<Object>,
    pub swaps: Vec<SwapArea>,
    /// Swap devices in allocation order (priority, then file order).
    pub(crate) swap_order: Vec<usize>,
    pub file_dev: Device,
    pub(crate) ra: Box<dyn SwapReadahead>,
    pub ra_name: String,
    pub vm: VmStat,
    pub tasks: Vec<Task>,
    pub(crate) cpus: Vec<Option<u32>>,
    cpu_token: Vec<u64>,
    pub(crate) runq: VecDeque<u32>,
    pub wm: Watermarks,
    /// memcg mode: the limit in pages and the pages charged to the workload's cgroup.
    pub memcg_limit: Option<u64>,
    pub charged: u64,
    pub rs: ReclaimState,
    pub(crate) kswapd: u32,
    io_reqs: Vec<Option<IoReq>>,
    io_free: Vec<u32>,
    pub(crate) frame_waiters: HashMap<u32, Vec<u32>>,
    /// Tasks throttled until writeback makes progress (reclaim_throttle WRITEBACK).
    pub(crate) writeback_waiters: Vec<u32>,
    pub nr_writeback: u64,
    /// Pages whose writeback completed, and the count when the first throttled sleeper began.
    wb_completed: u64,
    wb_throttle_start: u64,
    events_out: Vec<Event>,
    ts: TimeSeries,
    last_ra: (u64, u64),
    pub(crate) swap_cache_bypass: bool,
    pub(crate) workingset_anon: bool,
    pub(crate) workingset_file: bool,
    pub(crate) bailout: Bailout,
    pub(crate) jiffy_ns: u64,
    quantum: u64,
    slice: u64,
    wakeup_granularity: u64,
    sample_interval: u64,
    global_deadline: Option<u64>,
    pub(crate) user_tasks_left: usize,
    interrupted: bool,
    /// Message channels (engine/ipc.rs).
    pub ipc: ipc::IpcState,
}

impl Sim {
    pub fn new(cfg: &Resolved) -> Sim {
        let c = &cfg.config;
        let profile = cfg.profile;
        let managed = c.machine.ram.pages() - c.machine.kernel_reserved.pages();
        let min_free = c.kernel.min_free_kbytes.unwrap_or_else(|| crate::config::default_min_free_kbytes(managed));
        let wm = crate::config::watermarks(managed, min_free, c.kernel.watermark_scale_factor, profile);
        let ncpu = c.machine.cpus as usize;
        let frames = vec![Frame::FREE; managed as usize];
        // LIFO free list whose first pops are low frame numbers (deterministic, cache friendly).
        let free_list: Vec<u32> = (0..managed as u32).rev().collect();
        let swaps: Vec<SwapArea> = cfg
            .swap_devices
            .iter()
            .map(|s| {
                let slots = s.size.pages() as u32;
                let mut area = SwapArea::new(&s.name, s.priority, slots, Device::new(&s.name, s.params.clone(), slots as u64), ncpu);
                area.prefer_nonfull = profile >= Profile::V6;
                area
            })
            .collect();
        let mut swap_order: Vec<usize> = (0..swaps.len()).collect();
        swap_order.sort_by_key(|&i| (Reverse(swaps[i].priority), i));
        let any_rotational = swaps.iter().any(|s| s.rotational());
        let ra_name = resolve_readahead(&c.kernel.readahead, profile, c.kernel.vma_ra_enabled, any_rotational);
        let mut ra = readahead::build(&ra_name);
        let bailout = Bailout::resolve(&c.kernel.bailout, profile);
        let _ = &mut ra;
        let mut sim = Sim {
            cfg: cfg.clone(),
            profile,
            costs: c.costs.clone(),
            now: 0,
            events: BinaryHeap::new(),
            seq: 0,
            frames,
            free_list,
            lru: Lrus::default(),
            vmas: Vec::new(),
            objects: Vec::new(),
            swaps,
            swap_order,
            file_dev: Device::new("file", cfg.file_device_params.clone(), 1 << 40),
            ra,
            ra_name,
            vm: VmStat::default(),
            tasks: Vec::new(),
            cpus: vec![None; ncpu],
            cpu_token: vec![0; ncpu],
            runq: VecDeque::new(),
            wm,
            memcg_limit: c.machine.memcg_limit.map(|l| l.pages()),
            charged: 0,
            rs: ReclaimState::default(),
            kswapd: 0,
            io_reqs: Vec::new(),
            io_free: Vec::new(),
            frame_waiters: HashMap::new(),
            writeback_waiters: Vec::new(),
            nr_writeback: 0,
            wb_completed: 0,
            wb_throttle_start: 0,
            events_out: Vec::new(),
            ts: TimeSeries::default(),
            last_ra: (0, 0),
            swap_cache_bypass: profile >= Profile::V4_14,
            workingset_anon: profile >= Profile::V6,
            workingset_file: profile >= Profile::V3_14,
            bailout,
            jiffy_ns: 1_000_000_000 / c.kernel.hz as u64,
            quantum: c.sim.sync_quantum.0,
            slice: c.sim.sched_slice.0,
            wakeup_granularity: c.sim.sched_wakeup_granularity.0,
            sample_interval: c.sim.sample_interval.0,
            global_deadline: c.sim.time_limit.map(|d| d.0),
            user_tasks_left: 0,
            interrupted: false,
            ipc: ipc::IpcState::new(c),
        };
        sim.build_tasks();
        sim
    }

    fn build_tasks(&mut self) {
        let cfg = self.cfg.clone();
        let mut pid = 1;
        for (ti, t) in cfg.config.tasks.iter().enumerate() {
            for inst in 0..t.instances {
                let tid = self.tasks.len() as u32;
                let mut vmas = Vec::new();
                // Each process lays its mappings out from 4 GiB upwards, 2 MiB aligned.
                let mut vpn = 1u64 << 20;
                for m in &t.mappings {
                    let pages = m.size.pages();
                    let object = match m.kind {
                        MappingKind::Anon => NONE,
                        MappingKind::Shmem | MappingKind::File => {
                            let base = self.objects.iter().filter(|o| o.kind == MappingKind::File).map(|o| o.entries.len() as u64).sum();
                            self.objects.push(Object { kind: m.kind, entries: vec![0; pages as usize], vmas: vec![self.vmas.len() as u32], file_base: base });
                            (self.objects.len() - 1) as u32
                        }
                    };
                    vmas.push(self.vmas.len() as u32);
                    self.vmas.push(Vma { task: tid, kind: m.kind, start_vpn: vpn, ptes: vec![0; pages as usize], object, ra_info: 0, rss: 0, swapents: 0 });
                    vpn += pages.div_ceil(512) * 512 + 512;
                }
                let program = crate::workload::program_for(&self.cfg, ti, inst);
                let start = t.start_delay.0;
                let deadline = match (t.time_limit, self.global_deadline) {
                    (Some(l), Some(g)) => Some((start + l.0).min(g)),
                    (Some(l), None) => Some(start + l.0),
                    (None, g) => g,
                };
                let mut task = Task::user(&t.name, inst, pid, program, vmas, start, deadline);
                task.background = t.background;
                self.tasks.push(task);
                pid += 1;
                self.push(start, Ev::Start(tid));
                if !t.background {
                    self.user_tasks_left += 1;
                }
            }
        }
        self.kswapd = self.tasks.len() as u32;
        self.tasks.push(Task::kswapd(pid));
    }

    #[inline]
    pub(crate) fn push(&mut self, t: u64, ev: Ev) {
        self.seq += 1;
        self.events.push(Reverse((t, self.seq, ev)));
    }

    /// Complete the I/O that finishes by `t` while a task is inside long kernel work (a
    /// reclaim priority loop): in the kernel, writes complete and pages rotate while the
    /// reclaimer scans, so later priorities find them clean. Only I/O completions are applied;
    /// other events keep their place.
    pub(crate) fn complete_io_until(&mut self, t: u64) {
        let saved_now = self.now;
        let mut deferred = Vec::new();
        while let Some(&Reverse((et, seq, ev))) = self.events.peek() {
            if et > t {
                break;
            }
            self.events.pop();
            match ev {
                Ev::IoDone(r) => {
                    self.now = et.max(saved_now);
                    self.io_done(r);
                }
                other => deferred.push(Reverse((et, seq, other))),
            }
        }
        for d in deferred {
            self.events.push(d);
        }
        self.now = saved_now;
    }

    #[inline]
    fn peek_time(&self) -> u64 {
        self.events.peek().map_or(u64::MAX, |Reverse((t, _, _))| *t)
    }

    pub fn run(&mut self, progress: &mut dyn FnMut(Progress) -> bool) {
        self.push(0, Ev::Sample);
        let wall = std::time::Instant::now();
        let mut last_report = wall;
        let mut n: u64 = 0;
        while self.user_tasks_left > 0 {
            let Some(Reverse((t, _, ev))) = self.events.pop() else { break };
            self.now = t;
            match ev {
                Ev::Cpu(cpu, token) => {
                    if self.cpu_token[cpu as usize] == token {
                        self.run_cpu(cpu as usize)
                    }
                }
                Ev::IoDone(r) => self.io_done(r),
                Ev::Timer(tid, token) => self.timer(tid, token),
                Ev::Start(tid) => {
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
            if n % 4096 == 0 {
                let now = std::time::Instant::now();
                if now.duration_since(last_report).as_millis() >= 200 {
                    last_report = now;
                    if !progress(Progress { virtual_ns: self.now, fraction: self.fraction_done() }) {
                        self.interrupted = true;
                        break;
                    }
                }
            }
        }
    }

    fn fraction_done(&self) -> f64 {
        let mut f: f64 = 1.0;
        for t in self.tasks.iter().filter(|t| t.kind == TaskKind::User && t.state != TState::Done && !t.background) {
            let by_time = t.deadline.map(|d| (t.clock.saturating_sub(t.start) as f64 / (d - t.start).max(1) as f64).min(1.0));
            let by_touches = t.program.as_ref().map(|p| {
                let total = p.touches_per_pass().max(1) as f64;
                1.0 - (p.remaining_in_pass() as f64 / total).min(1.0)
            });
            let g = match (by_time, by_touches, t.deadline.is_some() && t.repeat()) {
                (Some(a), _, true) => a,
                (Some(a), Some(b), false) => a.max(b),
                (None, Some(b), _) => b,
                (Some(a), None, _) => a,
                (None, None, _) => 0.0,
            };
            f = f.min(g);
        }
        f
    }

    // ---------------------------------------------------------------- scheduling

    /// A task becomes runnable at `at`. A task waking from sleep is placed like CFS places a
    /// sleeper: ahead of tasks that used their slices, and the CPU whose task has run longest
    /// is asked to reschedule once that task has run `wakeup_granularity` (CFS's
    /// sched_wakeup_granularity, 1 ms).
    pub(crate) fn make_runnable(&mut self, tid: u32, at: u64) {
        let t = &mut self.tasks[tid as usize];
        if matches!(t.state, TState::Runnable | TState::Running(_) | TState::Done) {
            return;
        }
        let sleeper = t.state != TState::New;
        t.clock = t.clock.max(at);
        t.state = TState::Runnable;
        t.timer_token += 1;
        t.runnable_since = t.clock;
        if let Some(cpu) = self.cpus.iter().position(|c| c.is_none()) {
            self.dispatch(cpu, tid, at);
            return;
        }
        if !sleeper {
            self.runq.push_back(tid);
            return;
        }
        // Behind earlier sleepers, ahead of preempted tasks.
        let pos = self.runq.iter().position(|&q| !self.tasks[q as usize].woken).unwrap_or(self.runq.len());
        self.runq.insert(pos, tid);
        self.tasks[tid as usize].woken = true;
        let gran = self.wakeup_granularity;
        let victim = self
            .cpus
            .iter()
            .filter_map(|c| *c)
            .min_by_key(|&r| (self.tasks[r as usize].slice_end, r));
        if let Some(r) = victim {
            let rt = &mut self.tasks[r as usize];
            let started = rt.slice_end.saturating_sub(self.slice);
            rt.slice_end = rt.slice_end.min(started.max(at) + gran).max(started + gran);
        }
    }

    fn dispatch(&mut self, cpu: usize, tid: u32, at: u64) {
        let slice = self.slice;
        let t = &mut self.tasks[tid as usize];
        t.clock = t.clock.max(at);
        t.runq_wait_ns += t.clock - t.runnable_since.min(t.clock);
        t.woken = false;
        t.state = TState::Running(cpu as u32);
        t.slice_end = t.clock + slice;
        let c = t.clock;
        self.cpus[cpu] = Some(tid);
        self.cpu_token[cpu] += 1;
        self.push(c, Ev::Cpu(cpu as u32, self.cpu_token[cpu]));
    }

    /// The task on `cpu` stops running (blocked, sleeping, done): hand the CPU on.
    pub(crate) fn release_cpu(&mut self, cpu: usize, at: u64) {
        self.cpus[cpu] = None;
        self.cpu_token[cpu] += 1;
        if let Some(next) = self.runq.pop_front() {
            self.dispatch(cpu, next, at);
        }
    }

    fn run_cpu(&mut self, cpu: usize) {
        let Some(tid) = self.cpus[cpu] else { return };
        let now = self.now;
        let (clock, slice_end) = {
            let t = &mut self.tasks[tid as usize];
            t.clock = t.clock.max(now);
            (t.clock, t.slice_end)
        };
        // Preempt at the end of the slice when others wait for a CPU.
        if clock >= slice_end && !self.runq.is_empty() {
            let t = &mut self.tasks[tid as usize];
            t.state = TState::Runnable;
            t.runnable_since = clock;
            self.runq.push_back(tid);
            self.cpus[cpu] = None;
            self.cpu_token[cpu] += 1;
            let next = self.runq.pop_front().expect("non-empty");
            self.dispatch(cpu, next, clock);
            return;
        }
        let mut horizon = self.peek_time().max(now).saturating_add(self.quantum);
        if !self.runq.is_empty() {
            horizon = horizon.min(slice_end.max(clock + 1));
        }
        if tid == self.kswapd {
            self.kswapd_run(cpu);
        } else {
            self.run_user(tid, cpu, horizon);
        }
    }

    /// Continue the task on `cpu` at its clock (after kernel work that did not block).
    pub(crate) fn continue_on_cpu(&mut self, tid: u32, cpu: usize) {
        let c = self.tasks[tid as usize].clock;
        self.push(c, Ev::Cpu(cpu as u32, self.cpu_token[cpu]));
    }

    fn run_user(&mut self, tid: u32, cpu: usize, horizon: u64) {
        let touch_ns = self.costs.resident_touch_ns;
        loop {
            // Fast path: resident touches only set the accessed (and dirty) bit (DESIGN.md
            // performance contract; the kernel does not move pages on access either).
            let (slow, stop) = {
                let Sim { tasks, vmas, .. } = self;
                let t = &mut tasks[tid as usize];
                let deadline = t.deadline.unwrap_or(u64::MAX);
                let limit = horizon.min(deadline);
                let mut resident = 0u64;
                let out;
                if let Some(op) = t.pending_op.take() {
                    out = (Some(Step::Op(op)), false);
                } else if let Some((mi, touch)) = t.pending.take() {
                    out = (Some(Step::Touch(mi, touch)), false);
                } else {
                    let program = t.program.as_mut().expect("user task has a program");
                    let mut cost = touch_ns + program.compute_ns();
                    let mut clock = t.clock;
                    loop {
                        if clock >= limit {
                            out = (None, clock >= deadline);
                            break;
                        }
                        match program.next_step() {
                            None => {
                                out = (None, true);
                                break;
                            }
                            Some(Step::Op(op)) => {
                                out = (Some(Step::Op(op)), false);
                                break;
                            }
                            Some(Step::Touch(mi, touch)) => {
                                let vma = &mut vmas[t.vmas[mi] as usize];
                                let pte = &mut vma.ptes[touch.page as usize];
                                let ok = *pte & PTE_PRESENT != 0 && (!touch.write || *pte & PTE_WRITE != 0);
                                if ok {
                                    *pte |= PTE_ACCESSED | if touch.write { PTE_DIRTY } else { 0 };
                                    clock += cost;
                                    resident += 1;
                                    cost = touch_ns + program.compute_ns();
                                } else {
                                    out = (Some(Step::Touch(mi, touch)), false);
                                    break;
                                }
                            }
                        }
                    }
                    t.clock = clock;
                    t.touches += resident;
                    t.touch_hist.record_n(touch_ns, resident);
                }
                out
            };
            if stop {
                self.finish_task(tid, cpu, false);
                return;
            }
            let Some(step) = slow else {
                // Horizon reached: come back at our clock.
                if self.tasks[tid as usize].clock >= self.tasks[tid as usize].deadline.unwrap_or(u64::MAX) {
                    self.finish_task(tid, cpu, false);
                } else {
                    self.continue_on_cpu(tid, cpu);
                }
                return;
            };
            if self.tasks[tid as usize].clock >= self.tasks[tid as usize].deadline.unwrap_or(u64::MAX) {
                self.finish_task(tid, cpu, false);
                return;
            }
            let (mi, touch) = match step {
                Step::Touch(mi, touch) => (mi, touch),
                // A message or buffered I/O (engine/ipc.rs).
                Step::Op(op) => match self.run_op(tid, cpu, op) {
                    fault::Outcome::Done => {
                        if self.tasks[tid as usize].clock >= horizon {
                            self.continue_on_cpu(tid, cpu);
                            return;
                        }
                        continue;
                    }
                    fault::Outcome::Blocked => {
                        let c = self.tasks[tid as usize].clock;
                        self.release_cpu(cpu, c);
                        return;
                    }
                    fault::Outcome::Killed => return,
                },
            };
            let t = &mut self.tasks[tid as usize];
            if t.fault_start.is_none() {
                t.fault_start = Some(t.clock);
            }
            match self.fault(tid, cpu, mi, touch) {
                fault::Outcome::Done => {
                    let touch_ns = self.costs.resident_touch_ns;
                    let t = &mut self.tasks[tid as usize];
                    let compute = t.program.as_ref().map_or(0, |p| p.compute_ns());
                    let start = t.fault_start.take().expect("fault start");
                    let lat = t.clock - start;
                    t.fault_hist.record(lat);
                    t.touch_hist.record(lat + touch_ns);
                    t.touches += 1;
                    t.clock += touch_ns + compute;
                    t.fault_was_major = false;
                    if t.clock >= horizon {
                        self.continue_on_cpu(tid, cpu);
                        return;
                    }
                }
                fault::Outcome::Blocked => {
                    let t = &mut self.tasks[tid as usize];
                    t.pending = Some((mi, touch));
                    let c = t.clock;
                    self.release_cpu(cpu, c);
                    return;
                }
                fault::Outcome::Killed => return,
            }
        }
    }

    pub(crate) fn finish_task(&mut self, tid: u32, cpu: usize, oom: bool) {
        let t = &mut self.tasks[tid as usize];
        if t.state == TState::Done {
            return;
        }
        let end = match t.deadline {
            Some(d) if !oom => t.clock.min(d),
            _ => t.clock,
        };
        t.end = end;
        t.state = TState::Done;
        t.oom_killed = oom;
        t.pending = None;
        t.pending_op = None;
        if !t.background {
            self.user_tasks_left -= 1;
        }
        let vmas = t.vmas.clone();
        for v in vmas {
            self.zap_vma(v);
        }
        if self.cpus.get(cpu).copied().flatten() == Some(tid) {
            self.release_cpu(cpu, end);
        }
    }

    /// Block the current task until `frame`'s read completes.
    pub(crate) fn wait_on_frame(&mut self, tid: u32, frame: u32) {
        self.frame_waiters.entry(frame).or_default().push(tid);
        self.tasks[tid as usize].state = TState::Blocked;
    }

    /// Sleep the task until writeback progresses or `timeout` passes (reclaim_throttle).
    pub(crate) fn throttle_on_writeback(&mut self, tid: u32, timeout: u64) {
        let t = &mut self.tasks[tid as usize];
        t.state = TState::Blocked;
        t.timer_token += 1;
        let token = t.timer_token;
        let wake_at = t.clock + timeout;
        self.note_writeback_throttle();
        self.writeback_waiters.push(tid);
        self.push(wake_at, Ev::Timer(tid, token));
    }

    /// Tasks (and kswapd) sleeping in reclaim_throttle(WRITEBACK).
    pub(crate) fn nr_writeback_throttled(&self) -> u64 {
        self.writeback_waiters.len() as u64 + self.rs.kswapd.throttled as u64
    }

    /// The first sleeper records how much writeback had completed (`nr_reclaim_start`).
    pub(crate) fn note_writeback_throttle(&mut self) {
        if self.nr_writeback_throttled() == 0 {
            self.wb_throttle_start = self.wb_completed;
        }
    }

    pub(crate) fn sleep_until(&mut self, tid: u32, at: u64) {
        let t = &mut self.tasks[tid as usize];
        t.state = TState::Sleeping;
        t.timer_token += 1;
        let token = t.timer_token;
        self.push(at, Ev::Timer(tid, token));
    }

    fn timer(&mut self, tid: u32, token: u64) {
        let t = &self.tasks[tid as usize];
        if t.timer_token != token || !matches!(t.state, TState::Blocked | TState::Sleeping) {
            return;
        }
        if tid == self.kswapd {
            self.kswapd_timer();
            return;
        }
        self.writeback_waiters.retain(|&w| w != tid);
        let now = self.now;
        self.wake(tid, now);
    }

    pub(crate) fn wake(&mut self, tid: u32, at: u64) {
        let wake_cost = self.costs.wakeup_ns;
        let t = &mut self.tasks[tid as usize];
        if t.state == TState::Done {
            return;
        }
        t.clock = t.clock.max(at) + wake_cost;
        self.make_runnable(tid, at);
    }

    // ---------------------------------------------------------------- I/O

    fn device_mut(&mut self, dev: DevRef) -> &mut Device {
        match dev {
            DevRef::Swap(i) => &mut self.swaps[i].device,
            DevRef::File => &mut self.file_dev,
        }
    }

    /// Submit a plug's requests to a device at `at`; returns the CPU the submitter spent.
    pub(crate) fn submit_plug(&mut self, dev: DevRef, plug: Plug, at: u64) -> u64 {
        let mut cpu = 0;
        for (req, frames) in plug.requests {
            let id = match self.io_free.pop() {
                Some(id) => {
                    self.io_reqs[id as usize] = Some(IoReq { frames, write: req.write, dev });
                    id
                }
                None => {
                    self.io_reqs.push(Some(IoReq { frames, write: req.write, dev }));
                    (self.io_reqs.len() - 1) as u32
                }
            };
            if req.write {
                self.vm.pgpgout += 4 * req.pages as u64;
            } else {
                self.vm.pgpgin += 4 * req.pages as u64;
            }
            let device = self.device_mut(dev);
            if device.params.block_layer {
                cpu += device.params.block_layer_cpu_ns;
            }
            if let Some(done) = device.submit(at + cpu, req, id) {
                self.push(done, Ev::IoDone(id));
            }
        }
        cpu
    }

    fn io_done(&mut self, id: u32) {
        let req = self.io_reqs[id as usize].take().expect("live request");
        self.io_free.push(id);
        let now = self.now;
        if let Some((next, done)) = self.device_mut(req.dev).complete(now) {
            self.push(done, Ev::IoDone(next));
        }
        if req.write {
            for &f in &req.frames {
                self.end_writeback(f);
            }
            // acct_reclaim_writeback: the throttled are woken together once more than
            // SWAP_CLUSTER_MAX pages per sleeper have been written since the first slept (§3.13).
            self.wb_completed += req.frames.len() as u64;
            let sleepers = self.nr_writeback_throttled();
            if sleepers > 0 && self.wb_completed - self.wb_throttle_start > crate::reclaim::SWAP_CLUSTER_MAX * sleepers {
                let waiters = std::mem::take(&mut self.writeback_waiters);
                for w in waiters {
                    self.wake(w, now);
                }
                self.kswapd_writeback_progress();
            }
        } else {
            for &f in &req.frames {
                self.frames[f as usize].flags &= !PG_LOCKED;
                if let Some(ws) = self.frame_waiters.remove(&f) {
                    for w in ws {
                        self.wake(w, now);
                    }
                }
            }
        }
    }

    /// `folio_end_writeback`: a PG_reclaim folio rotates to the inactive tail (§2.6).
    fn end_writeback(&mut self, f: u32) {
        let fr = &mut self.frames[f as usize];
        debug_assert!(fr.has(PG_WRITEBACK));
        fr.flags &= !PG_WRITEBACK;
        self.nr_writeback -= 1;
        if fr.has(PG_RECLAIM) {
            fr.flags &= !(PG_RECLAIM | PG_ACTIVE);
            let anon = fr.is_anon_type();
            if Lrus::list_of(fr).is_some() {
                self.lru.remove(&mut self.frames, f);
                self.lru.add_tail(&mut self.frames, f, LruList::of(anon, false));
                self.vm.pgrotated += 1;
            }
        }
    }

    // ---------------------------------------------------------------- statistics

    pub fn swap_used(&self) -> u64 {
        self.swaps.iter().map(|s| s.inuse).sum()
    }

    fn sample(&mut self) {
        let ts = &mut self.ts;
        ts.t_ns.push(self.now);
        ts.nr_free_pages.push(self.free_list.len() as u64);
        ts.nr_inactive_anon.push(self.lru.size(LruList::InactiveAnon));
        ts.nr_active_anon.push(self.lru.size(LruList::ActiveAnon));
        ts.nr_inactive_file.push(self.lru.size(LruList::InactiveFile));
        ts.nr_active_file.push(self.lru.size(LruList::ActiveFile));
        ts.swap_used_pages.push(self.swaps.iter().map(|s| s.inuse).sum());
        ts.pswpin.push(self.vm.pswpin);
        ts.pswpout.push(self.vm.pswpout);
        let (ra, hit) = (self.vm.swap_ra - self.last_ra.0, self.vm.swap_ra_hit - self.last_ra.1);
        ts.ra_hit_rate.push(if ra == 0 { None } else { Some(((hit as f64 / ra as f64) * 1e4).round() / 1e4) });
        self.last_ra = (self.vm.swap_ra, self.vm.swap_ra_hit);
    }

    pub fn result(&self) -> SimResult {
        let tasks: Vec<TaskResult> = self
            .tasks
            .iter()
            .filter(|t| t.kind == TaskKind::User)
            .map(|t| {
                let end = if t.state == TState::Done { t.end } else { t.clock };
                let elapsed = end.saturating_sub(t.start);
                TaskResult {
                    name: t.name.clone(),
                    instance: t.instance,
                    pid: t.pid,
                    start_ns: t.start,
                    end_ns: end,
                    elapsed_ns: elapsed,
                    touches: t.touches,
                    minor_faults: t.minor_faults,
                    major_faults: t.major_faults,
                    touch_latency_ns: t.touch_hist.percentiles(),
                    fault_latency_ns: t.fault_hist.percentiles(),
                    direct_reclaim: DirectReclaimStats {
                        calls: t.dr_calls,
                        stall_ns: t.dr_stall_ns,
                        pages_reclaimed: t.dr_pages,
                        stall_ns_pct: t.dr_stall_hist.percentiles(),
                        pages_per_call_pct: t.dr_pages_hist.percentiles(),
                    },
                    oom_killed: t.oom_killed,
                    runqueue_wait_ns: t.runq_wait_ns,
                    throughput_bytes_per_s: if elapsed == 0 { 0.0 } else { (t.touches as f64 * 4096.0 * 1e9 / elapsed as f64).round() },
                    messages_sent: t.messages_sent,
                    messages_received: t.messages_received,
                    ipc_wait_ns: t.ipc_wait_ns,
                    file_reads: t.file_reads,
                    file_writes: t.file_writes,
                    background: t.background,
                }
            })
            .collect();
        let elapsed = tasks.iter().filter(|t| !t.background).map(|t| t.end_ns).max().unwrap_or(0);
        let mut devices: Vec<DeviceResult> = self
            .swaps
            .iter()
            .map(|s| DeviceResult {
                name: s.name.clone(),
                role: "swap".into(),
                requests: s.device.requests,
                pages_read: s.device.pages_read,
                pages_written: s.device.pages_written,
                busy_ns: s.device.busy_ns,
            })
            .collect();
        if self.file_dev.requests > 0 {
            let d = &self.file_dev;
            devices.push(DeviceResult { name: "file".into(), role: "file".into(), requests: d.requests, pages_read: d.pages_read, pages_written: d.pages_written, busy_ns: d.busy_ns });
        }
        let ra_hit_pct = if self.vm.swap_ra == 0 { None } else { Some(((self.vm.swap_ra_hit as f64 * 100.0 / self.vm.swap_ra as f64) * 100.0).round() / 100.0) };
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
            vmstat: self.vm.to_map(),
            tasks,
            timeseries: self.ts.clone(),
            events: self.events_out.clone(),
            devices,
            summary: Summary {
                ra_hit_pct,
                elapsed_s: elapsed as f64 / 1e9,
                readahead: self.ra_name.clone(),
                messages: self.ipc.messages,
                channel_pages_max: self.ipc.kernel_pages_max,
            },
        }
    }

    pub(crate) fn record_event(&mut self, kind: &str, task: String, rss: u64, swap: u64) {
        self.events_out.push(Event { t_ns: self.now, kind: kind.to_string(), task, rss_pages: rss, swap_pages: swap });
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
pub fn simulate(resolved: &Resolved, progress: &mut dyn FnMut(Progress) -> bool) -> SimResult {
    let mut sim = Sim::new(resolved);
    sim.run(progress);
    sim.result()
}
