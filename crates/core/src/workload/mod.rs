//! Access-pattern generators: the sequence of page touches a program performs.
//!
//! This module is the single definition of "what the program does": the simulator consumes it
//! and the host runner's native worker replays the very same sequence on real memory, so a
//! pattern is written once. A generator is a pure function of its phase description and the
//! task's random stream ([`crate::rng::Rng`]).

pub mod hpl;
pub mod kv;
pub mod trace;

use crate::config::{Access, PatternKind, PhaseSpec};
use crate::rng::Rng;

/// What a phase's generated touches stand for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GenKind {
    /// Loads and stores through page tables.
    Touch,
    /// Buffered read()/write() of a file page ([`Op::FileIo`]).
    Syscall,
    /// Each touch is preceded by a message to channel `first + i % fanout` (global channel id).
    Send { first: u32, fanout: u32, bytes: u32 },
    /// Each touch is preceded by a message received from channel `chan`.
    Recv { chan: u32 },
    /// Touches replayed from a trace, each in the mapping its page was laid out in.
    Trace,
    /// Key-value requests, each an [`Op::Request`] and then its item's page touches (kv.rs).
    Kv,
    /// A kv store's client: each step an [`Op::KvClient`] and then its buffer touch, until the
    /// engine ends the phase (its server is done).
    KvClient,
}

/// A step of a program that is not a plain page touch: the engine hands these to the kernel
/// model (engine/ipc.rs). The host runner performs buffered file I/O with pread()/pwrite() and
/// refuses message phases.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Send { chan: u32, bytes: u32 },
    Recv { chan: u32 },
    /// read() (touch.write false) or write() of one page of file mapping `mi`.
    FileIo { mi: usize, touch: Touch },
    /// A request to a server begins (the touches that follow serve it); its bytes on the wire.
    Request { bytes: u32 },
    /// A kv client's next socket call on its connection: read the replies that arrived, or
    /// send requests up to its pipeline, or wait (engine/kv_conn.rs).
    KvClient,
    /// Wait until every instance of the task has ended the phases before phase `phase`
    /// (config `barrier`, engine/barrier.rs).
    Barrier { phase: u32 },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    Touch(usize, Touch),
    Op(Op),
}

/// One access: a page index within a mapping, and whether it is a store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Touch {
    pub page: u32,
    pub write: bool,
    /// A store that first loads the word it overwrites and checks it (usemem's "verify last
    /// write" on its passes after the first, `PhaseSpec::verify` on a write phase): a page
    /// that is not mapped takes a read fault, then the store a write-protect fault.
    pub check: bool,
}

/// Zipf sampler by rejection-inversion (Hörmann & Derflinger, 1996): O(1) per sample, no
/// table, exact for any exponent > 0.
#[derive(Clone, Debug)]
pub struct Zipf {
    n: f64,
    s: f64,
    h_x1: f64,
    h_n: f64,
    cut: f64,
}

impl Zipf {
    pub fn new(n: u64, s: f64) -> Zipf {
        let mut z = Zipf { n: n as f64, s, h_x1: 0.0, h_n: 0.0, cut: 0.0 };
        z.h_x1 = z.h(1.5) - 1.0;
        z.h_n = z.h(z.n + 0.5);
        z.cut = 1.0 - z.h_inv(z.h(1.5) - 2f64.powf(-s));
        z
    }
    fn h(&self, x: f64) -> f64 {
        let e = 1.0 - self.s;
        if e.abs() < 1e-9 {
            x.ln()
        } else {
            (x.powf(e) - 1.0) / e
        }
    }
    fn h_inv(&self, x: f64) -> f64 {
        let e = 1.0 - self.s;
        if e.abs() < 1e-9 {
            x.exp()
        } else {
            (1.0 + e * x).max(1e-300).powf(1.0 / e)
        }
    }
    /// A rank in 0..n (0 is the most popular).
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        loop {
            let u = self.h_n + rng.unit() * (self.h_x1 - self.h_n);
            let x = self.h_inv(u);
            let k = (x + 0.5).floor().clamp(1.0, self.n);
            if k - x <= self.cut || u >= self.h(k + 0.5) - k.powf(-self.s) {
                return k as u64 - 1;
            }
        }
    }
}

/// A multiplier coprime with `n`, used to scatter Zipf ranks over the mapping so that popular
/// pages are not all neighbours (which would flatter readahead).
fn scatter_multiplier(n: u64) -> u64 {
    let mut a = 2_654_435_761u64 % n.max(2);
    while a < 2 || gcd(a, n) != 1 {
        a += 1;
    }
    a
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

#[derive(Clone, Debug)]
enum Order {
    Sequential,
    Random,
    Zipf { zipf: Zipf, mult: u64 },
    Strided { stride: u64 },
    Matrix { tiles: u64, block: u64 },
    /// One HPL rank's run (attached by [`program_for`]).
    Hpl(Box<hpl::HplGen>),
}

/// The touches of one phase over a mapping of `pages` pages.
#[derive(Clone, Debug)]
pub struct PhaseGen {
    order: Order,
    pages: u64,
    total: u64,
    done: u64,
    write_ratio: f64,
    backward: bool,
    /// Reads check that the page holds data (`PhaseSpec::verify`); writes of a later pass
    /// first read what the previous pass wrote.
    pub verify: bool,
    /// A repeated program is past its first pass (`Program` sets it when it starts over).
    later_pass: bool,
    /// The program's own CPU time per touch (`compute`).
    pub compute_ns: u64,
    /// Matrix traversal state: (k, stage, i, j, page within tile); strided: (next, lane).
    m: [u64; 5],
    pub kind: GenKind,
    /// The replay of a trace phase (attached by [`program_for`]).
    trace: Option<trace::TraceReplay>,
    /// The requests of a kv phase (attached by [`program_for`]).
    kv: Option<kv::KvGen>,
    /// Requests kept outstanding: kv `pipeline`, buffered-read `iodepth` (1: one at a time).
    pub outstanding: u32,
    /// Count this phase's requests in the result.
    pub measure: bool,
    /// The instances begin this phase together ([`Op::Barrier`]).
    pub barrier: bool,
}

impl PhaseGen {
    pub fn new(spec: &PhaseSpec, pages: u64) -> PhaseGen {
        let pages = pages.max(1);
        let per_cycle = |p: u64| (spec.cycles * p as f64).round().max(1.0) as u64;
        let (order, total) = match spec.pattern {
            PatternKind::Sequential => (Order::Sequential, per_cycle(pages)),
            // One buffer touch per message, walking the buffer mapping in order.
            PatternKind::Send => (Order::Sequential, spec.messages.unwrap_or(1).max(1) * spec.fanout.unwrap_or(1).max(1) as u64),
            PatternKind::Recv => (Order::Sequential, spec.messages.unwrap_or(1).max(1)),
            // The resolver sets `touches` to the trace's access count.
            PatternKind::Trace => (Order::Sequential, spec.touches.unwrap_or(0)),
            // Requests, counted by the attached generator.
            PatternKind::KvSet | PatternKind::KvGet => (Order::Sequential, 0),
            // Unbounded: the engine ends it when the server closes the connection.
            PatternKind::KvClient => (Order::Sequential, u64::MAX),
            // The rank's generator, attached with its rank and CPU rate, sets the count.
            PatternKind::Hpl | PatternKind::Linpack => (Order::Sequential, 0),
            PatternKind::Strided => (Order::Strided { stride: spec.stride.min(pages) }, per_cycle(pages)),
            PatternKind::Random => (Order::Random, spec.touches.unwrap_or_else(|| per_cycle(pages))),
            PatternKind::Zipf => (
                Order::Zipf { zipf: Zipf::new(pages, spec.zipf_theta), mult: scatter_multiplier(pages) },
                spec.touches.unwrap_or_else(|| per_cycle(pages)),
            ),
            PatternKind::Matrix => {
                let block = spec.block_pages.min(pages);
                let tiles = ((pages / block) as f64).sqrt().floor().max(1.0) as u64;
                let one = matrix_touches(tiles, block);
                (Order::Matrix { tiles, block }, (spec.cycles * one as f64).round().max(1.0) as u64)
            }
        };
        let kind = match (spec.pattern, spec.access) {
            (PatternKind::Send, _) => GenKind::Send { first: 0, fanout: spec.fanout.unwrap_or(1).max(1), bytes: spec.bytes.map_or(100, |b| b.0 as u32) },
            (PatternKind::Recv, _) => GenKind::Recv { chan: 0 },
            (PatternKind::Trace, _) => GenKind::Trace,
            (PatternKind::KvSet | PatternKind::KvGet, _) => GenKind::Kv,
            (PatternKind::KvClient, _) => GenKind::KvClient,
            (_, Access::Syscall) => GenKind::Syscall,
            _ => GenKind::Touch,
        };
        PhaseGen { order, pages, total, done: 0, write_ratio: spec.write_ratio, backward: spec.backward, verify: spec.verify, later_pass: false, compute_ns: spec.compute.0, m: [0; 5], kind, trace: None, kv: None, outstanding: spec.pipeline.or(spec.iodepth).unwrap_or(1).max(1), measure: spec.measure, barrier: spec.barrier }
    }

    /// Make this phase serve kv requests.
    pub fn attach_kv(&mut self, gen: kv::KvGen) {
        self.total = gen.requests();
        self.kv = Some(gen);
    }

    /// The next step of a kv phase: a request, or a touch of the current request's item.
    fn kv_next(&mut self, rng: &mut Rng) -> Option<kv::KvStep> {
        let gen = self.kv.as_mut()?;
        let step = gen.next(rng)?;
        self.done = gen.done();
        Some(step)
    }

    /// Make this phase one HPL rank's run.
    pub fn attach_hpl(&mut self, gen: hpl::HplGen) {
        self.total = gen.total();
        self.order = Order::Hpl(Box::new(gen));
    }

    /// Make this phase replay a trace.
    pub fn attach_trace(&mut self, replay: trace::TraceReplay) {
        self.trace = Some(replay);
    }

    /// The next replayed access of a trace phase, with its mapping index.
    fn trace_next(&mut self) -> Option<(usize, Touch)> {
        if self.done >= self.total {
            return None;
        }
        let (mi, t, compute) = self.trace.as_mut()?.next()?;
        self.done += 1;
        if let Some(c) = compute {
            self.compute_ns = c;
        }
        Some((mi, t))
    }

    /// Point a message phase at its first channel (a global channel id).
    pub fn set_channel(&mut self, first: u32) {
        match &mut self.kind {
            GenKind::Send { first: f, .. } => *f = first,
            GenKind::Recv { chan } => *chan = first,
            _ => {}
        }
    }

    /// Touches this phase performs in all.
    pub fn total_touches(&self) -> u64 {
        self.total
    }

    pub fn remaining(&self) -> u64 {
        self.total - self.done
    }

    #[inline]
    pub fn next(&mut self, rng: &mut Rng) -> Option<Touch> {
        if self.done >= self.total {
            return None;
        }
        let i = self.done;
        self.done += 1;
        if let Order::Hpl(gen) = &mut self.order {
            // Its own pages, stores and compute: no write ratio, no direction.
            let (t, compute) = gen.next()?;
            self.compute_ns = compute;
            return Some(t);
        }
        let page = match &self.order {
            Order::Sequential => i % self.pages,
            Order::Random => rng.below(self.pages),
            Order::Zipf { zipf, mult } => (zipf.sample(rng) * mult) % self.pages,
            Order::Strided { stride } => {
                // m[0] = next page, m[1] = lane (offset within the stride)
                let p = self.m[0];
                self.m[0] += stride;
                if self.m[0] >= self.pages {
                    self.m[1] = (self.m[1] + 1) % stride;
                    self.m[0] = self.m[1];
                }
                p
            }
            Order::Matrix { tiles, block } => {
                let (tiles, block) = (*tiles, *block);
                let p = self.matrix_next(tiles, block);
                p.min(self.pages - 1)
            }
            Order::Hpl(_) => unreachable!("handled above"),
        };
        let page = if self.backward { self.pages - 1 - page } else { page };
        let write = if self.write_ratio >= 1.0 {
            true
        } else if self.write_ratio <= 0.0 {
            false
        } else {
            rng.unit() < self.write_ratio
        };
        // usemem checks each word of its previous pass before it overwrites it (do_rw_once's
        // "verify last write", passes after the first).
        let check = write && self.verify && (self.later_pass || i >= self.pages);
        Some(Touch { page: page as u32, write, check })
    }

    /// Right-looking blocked LU on a tiles x tiles grid of tiles stored row-major, each tile
    /// `block` contiguous pages: for each k, factor the panel column (tiles (i,k), i >= k),
    /// then update the trailing matrix: for every (i,j) with i,j > k, read (i,k), (k,j) and
    /// update (i,j). Each tile touch walks its pages in order.
    fn matrix_next(&mut self, tiles: u64, block: u64) -> u64 {
        let [k, stage, i, j, p] = self.m;
        let tile = |r: u64, c: u64| (r * tiles + c) * block;
        let page = match stage {
            0 => tile(i, k) + p,
            1 => tile(i, k) + p,
            2 => tile(k, j) + p,
            _ => tile(i, j) + p,
        };
        // advance
        let mut s = [k, stage, i, j, p + 1];
        if s[4] == block {
            s[4] = 0;
            match stage {
                0 => {
                    s[2] += 1;
                    if s[2] == tiles {
                        s[2] = k + 1;
                        s[3] = k + 1;
                        s[1] = 1;
                    }
                }
                1 => s[1] = 2,
                2 => s[1] = 3,
                _ => {
                    s[1] = 1;
                    s[3] += 1;
                    if s[3] == tiles {
                        s[3] = k + 1;
                        s[2] += 1;
                        if s[2] == tiles {
                            s = [k + 1, 0, k + 1, 0, 0];
                        }
                    }
                }
            }
            if s[1] >= 1 && (s[2] >= tiles || s[3] >= tiles) {
                s = [k + 1, 0, k + 1, 0, 0];
            }
            if s[0] >= tiles {
                s = [0, 0, 0, 0, 0];
            }
        }
        self.m = s;
        page
    }
}

/// Touches in one full blocked-LU pass over `tiles` x `tiles` tiles of `block` pages.
pub fn matrix_touches(tiles: u64, block: u64) -> u64 {
    let mut n = 0;
    for k in 0..tiles {
        let rest = tiles - k - 1;
        n += (tiles - k) * block + rest * rest * 3 * block;
    }
    n
}

/// A task's whole program: its phases in order, optionally repeated.
#[derive(Clone, Debug)]
pub struct Program {
    /// (mapping index in the task, phase generator template)
    phases: Vec<(usize, PhaseGen)>,
    current: usize,
    live: Option<PhaseGen>,
    repeat: bool,
    pub rng: Rng,
    /// The buffer touch that follows a message operation.
    held: Option<(usize, Touch)>,
    /// The live phase yields plain touches (the fast path of `next_step`).
    plain: bool,
    /// The live phase begins with a barrier not yet yielded.
    barrier_due: bool,
    /// The program has started over at least once (`repeat`).
    later_pass: bool,
}

impl Program {
    pub fn new(phases: Vec<(usize, PhaseGen)>, repeat: bool, rng: Rng) -> Program {
        let live = phases.first().map(|(_, g)| g.clone());
        let barrier_due = live.as_ref().is_some_and(|g| g.barrier);
        let plain = live.as_ref().is_some_and(|g| g.kind == GenKind::Touch) && !barrier_due;
        Program { phases, current: 0, live, repeat, rng, held: None, plain, barrier_due, later_pass: false }
    }

    /// The index of the phase the program is in (the number of phases once it has ended).
    #[inline]
    pub fn phase(&self) -> usize {
        if self.live.is_some() { self.current } else { self.phases.len() }
    }

    /// How many phases one pass has.
    pub fn phase_count(&self) -> usize {
        self.phases.len()
    }

    /// The channels (global ids) this program reads from, each once: the sockets whose
    /// receiving end it holds.
    pub fn recv_channels(&self) -> Vec<u32> {
        let mut chans: Vec<u32> = self.phases.iter().filter_map(|(_, g)| match g.kind { GenKind::Recv { chan } => Some(chan), _ => None }).collect();
        chans.sort_unstable();
        chans.dedup();
        chans
    }

    /// Does any phase send or receive messages?
    pub fn has_messages(&self) -> bool {
        self.phases.iter().any(|(_, g)| matches!(g.kind, GenKind::Send { .. } | GenKind::Recv { .. }))
    }

    /// Does any phase serve or send kv requests or keep reads outstanding (an `iodepth` above 1)?
    pub fn has_requests(&self) -> bool {
        self.phases.iter().any(|(_, g)| matches!(g.kind, GenKind::Kv | GenKind::KvClient) || g.outstanding > 1)
    }

    /// Is this a kv client, whose length is its server's (progress is the server's)?
    pub fn is_kv_client(&self) -> bool {
        self.phases.iter().any(|(_, g)| g.kind == GenKind::KvClient)
    }

    /// End the current phase now: its buffer touch still follows (a kv client whose server
    /// closed the connection).
    pub fn end_phase(&mut self) {
        if let Some(live) = self.live.as_mut() {
            live.done = live.total;
        }
    }

    /// The next step: a page touch, or an operation for the kernel model (a message sent or
    /// received, buffered file I/O). A message phase yields the operation, then its buffer touch.
    #[inline]
    pub fn next_step(&mut self) -> Option<Step> {
        if self.plain {
            // A plain phase never holds a buffer touch (only message phases set `held`).
            if let Some(live) = self.live.as_mut() {
                if let Some(t) = live.next(&mut self.rng) {
                    return Some(Step::Touch(self.phases[self.current].0, t));
                }
            }
        }
        self.next_step_slow()
    }

    fn next_step_slow(&mut self) -> Option<Step> {
        if let Some((mi, t)) = self.held.take() {
            return Some(Step::Touch(mi, t));
        }
        if std::mem::take(&mut self.barrier_due) {
            self.plain = self.live.as_ref().is_some_and(|g| g.kind == GenKind::Touch);
            return Some(Step::Op(Op::Barrier { phase: self.current as u32 }));
        }
        loop {
            let live = self.live.as_mut()?;
            let idx = live.done;
            if live.kind == GenKind::Trace {
                if let Some((mi, t)) = live.trace_next() {
                    return Some(Step::Touch(mi, t));
                }
            } else if live.kind == GenKind::Kv {
                if let Some(step) = live.kv_next(&mut self.rng) {
                    let mi = self.phases[self.current].0;
                    return Some(match step {
                        kv::KvStep::Request { bytes } => Step::Op(Op::Request { bytes }),
                        kv::KvStep::Touch(t) => Step::Touch(mi, t),
                    });
                }
            } else if let Some(t) = live.next(&mut self.rng) {
                let mi = self.phases[self.current].0;
                return Some(match live.kind {
                    GenKind::Touch => Step::Touch(mi, t),
                    GenKind::Syscall => Step::Op(Op::FileIo { mi, touch: t }),
                    GenKind::Send { first, fanout, bytes } => {
                        self.held = Some((mi, t));
                        Step::Op(Op::Send { chan: first + (idx % fanout as u64) as u32, bytes })
                    }
                    GenKind::Recv { chan } => {
                        self.held = Some((mi, t));
                        Step::Op(Op::Recv { chan })
                    }
                    GenKind::KvClient => {
                        self.held = Some((mi, t));
                        Step::Op(Op::KvClient)
                    }
                    GenKind::Trace | GenKind::Kv => unreachable!("trace and kv phases are handled above"),
                });
            }
            self.current += 1;
            if self.current == self.phases.len() {
                if !self.repeat {
                    self.live = None;
                    return None;
                }
                self.current = 0;
                self.later_pass = true;
            }
            let next = &self.phases[self.current].1;
            self.live = Some(PhaseGen { later_pass: self.later_pass, ..next.clone() });
            if next.barrier {
                self.plain = false;
                return Some(Step::Op(Op::Barrier { phase: self.current as u32 }));
            }
            self.plain = next.kind == GenKind::Touch;
        }
    }

    /// Does the current phase verify what it reads?
    #[inline]
    pub fn verifying(&self) -> bool {
        self.live.as_ref().is_some_and(|g| g.verify)
    }

    /// Requests the current phase keeps outstanding (1 when it has no such notion).
    #[inline]
    pub fn outstanding(&self) -> u32 {
        self.live.as_ref().map_or(1, |g| g.outstanding)
    }

    /// Are the current phase's requests measured?
    #[inline]
    pub fn measuring(&self) -> bool {
        self.live.as_ref().is_some_and(|g| g.measure)
    }

    /// The program's own CPU time per touch in the current phase.
    #[inline]
    pub fn compute_ns(&self) -> u64 {
        self.live.as_ref().map_or(0, |g| g.compute_ns)
    }

    /// Touches left in the current pass (for progress estimates).
    pub fn remaining_in_pass(&self) -> u64 {
        let live = self.live.as_ref().map_or(0, |g| g.remaining());
        let rest = self.phases[(self.current + 1).min(self.phases.len())..].iter().fold(0u64, |a, (_, g)| a.saturating_add(g.total_touches()));
        live.saturating_add(rest)
    }

    /// Touches of one pass through all phases.
    pub fn touches_per_pass(&self) -> u64 {
        self.phases.iter().fold(0u64, |a, (_, g)| a.saturating_add(g.total_touches()))
    }
}

impl Iterator for Program {
    type Item = (usize, Touch);

    /// Next touch and the index of the mapping it falls in. Message operations are skipped
    /// and buffered file I/O comes out as a plain touch of its page (callers that model the
    /// kernel use [`Program::next_step`]).
    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            match self.next_step()? {
                Step::Touch(mi, t) | Step::Op(Op::FileIo { mi, touch: t }) => return Some((mi, t)),
                Step::Op(_) => continue,
            }
        }
    }
}

/// The program of task instance `instance` of task `task_idx`: its phases over its mappings,
/// with the random stream `Rng::for_stream(seed, k)` where `k` is the instance's global index
/// over all tasks' instances in file order. The simulator and the host runner's native worker
/// both build programs here, so they perform the very same touches.
pub fn program_for(resolved: &crate::config::Resolved, task_idx: usize, instance: u32) -> Program {
    let cfg = &resolved.config;
    let task = &cfg.tasks[task_idx];
    let k: u64 = cfg.tasks[..task_idx].iter().map(|t| t.instances as u64).sum::<u64>() + instance as u64;
    let phases = task
        .phases
        .iter()
        .enumerate()
        .map(|(pi, ph)| {
            let mi = task.mappings.iter().position(|m| m.name == ph.mapping).expect("validated: phase names a mapping");
            let mut g = PhaseGen::new(ph, task.mappings[mi].size.pages());
            if ph.pattern == PatternKind::Trace {
                g.attach_trace(trace_replay(task, pi, ph));
            }
            if matches!(ph.pattern, PatternKind::KvSet | PatternKind::KvGet) {
                g.attach_kv(kv::KvGen::new(ph, instance as u64, task.instances as u64));
            }
            if matches!(ph.pattern, PatternKind::Hpl | PatternKind::Linpack) {
                g.attach_hpl(hpl::HplGen::new(ph, instance as u64, task.instances as u64, cfg.costs.cpu_flops_per_us));
            }
            if let Some(name) = &ph.channel {
                // Global channel id: the arrays' channels numbered in file order.
                let ci = cfg.channels.iter().position(|c| &c.name == name).expect("validated: channel exists");
                let base: u64 = cfg.channels[..ci].iter().map(|c| c.count as u64).sum();
                g.set_channel((base + crate::config::phase_channels(task, ph, instance).start) as u32);
            }
            (mi, g)
        })
        .collect();
    Program::new(phases, task.repeat, Rng::for_stream(cfg.seed, k))
}

/// The replay of trace phase `pi`: its mappings are the task's mappings laid out for it.
fn trace_replay(task: &crate::config::TaskSpec, pi: usize, ph: &PhaseSpec) -> trace::TraceReplay {
    let prefix = crate::config::trace::mapping_prefix(pi);
    let regions = task
        .mappings
        .iter()
        .enumerate()
        .filter(|(_, m)| m.name.starts_with(&prefix))
        .map(|(mi, m)| trace::Region {
            start: m.trace_page.expect("resolver sets trace_page"),
            pages: m.size.pages(),
            mi,
            populate: m.kind != crate::config::MappingKind::File,
            first_bit: 0,
        })
        .collect();
    let file = ph.file.clone().expect("validated: trace phase has a file");
    trace::TraceReplay::new(file, ph.columns.clone(), ph.threads.clone(), regions, ph.speed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(pattern: PatternKind) -> PhaseSpec {
        toml::from_str::<PhaseSpec>(&format!("mapping = \"m\"\npattern = \"{}\"", format!("{pattern:?}").to_lowercase())).unwrap()
    }

    #[test]
    fn sequential_covers_every_page_in_order() {
        let mut g = PhaseGen::new(&spec(PatternKind::Sequential), 10);
        let mut rng = Rng::new(1);
        let pages: Vec<u32> = std::iter::from_fn(|| g.next(&mut rng)).map(|t| t.page).collect();
        assert_eq!(pages, (0..10).collect::<Vec<_>>());
    }

    #[test]
    fn strided_is_a_permutation() {
        let mut s = spec(PatternKind::Strided);
        s.stride = 3;
        let mut g = PhaseGen::new(&s, 10);
        let mut rng = Rng::new(1);
        let mut pages: Vec<u32> = std::iter::from_fn(|| g.next(&mut rng)).map(|t| t.page).collect();
        assert_eq!(&pages[..4], &[0, 3, 6, 9]);
        pages.sort();
        assert_eq!(pages, (0..10).collect::<Vec<_>>());
    }

    #[test]
    fn zipf_favours_low_ranks() {
        let z = Zipf::new(1000, 0.99);
        let mut rng = Rng::new(3);
        let mut top = 0;
        for _ in 0..10_000 {
            let r = z.sample(&mut rng);
            assert!(r < 1000);
            if r < 10 {
                top += 1;
            }
        }
        // With s = 0.99 the top 1% of ranks draw roughly 35-40% of samples.
        assert!((2500..5000).contains(&top), "top-10 share {top}");
    }

    #[test]
    fn matrix_pass_matches_its_count_and_stays_in_range() {
        let mut s = spec(PatternKind::Matrix);
        s.block_pages = 4;
        let mut g = PhaseGen::new(&s, 4 * 4 * 4);
        assert_eq!(g.total_touches(), matrix_touches(4, 4));
        let mut rng = Rng::new(1);
        let mut n = 0;
        while let Some(t) = g.next(&mut rng) {
            assert!(t.page < 64);
            n += 1;
        }
        assert_eq!(n, matrix_touches(4, 4));
    }

    #[test]
    fn program_repeats_when_asked() {
        let g = PhaseGen::new(&spec(PatternKind::Sequential), 3);
        let mut p = Program::new(vec![(0, g)], true, Rng::new(1));
        let v: Vec<u32> = (0..7).map(|_| p.next().unwrap().1.page).collect();
        assert_eq!(v, vec![0, 1, 2, 0, 1, 2, 0]);
    }
}
