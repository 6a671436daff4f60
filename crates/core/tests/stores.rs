//! Fronting stores end to end (zswap, frontswap): an auditing wrapper follows every page
//! through the swap I/O layer and checks that each swapped page is in exactly one place —
//! the store, the zero map, or the device — and that nothing is ever read back from a place
//! it was not put; the pool's pages are counted in memory; a full frontswap falls through to
//! the device; the zswap shrinker writes back the coldest entries first.

mod common;
use common::*;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use swaplab_core::engine::Sim;
use swaplab_core::mm::NONE;
use swaplab_core::stats::result::SimResult;
use swaplab_core::swap::SWAP_HAS_CACHE;
use swaplab_core::swap::store::{self, FrontingStore, Held, LoadOutcome, StoreCounters, StoreCtx, StoreOutcome};

/// Where a slot's page is, as the audit has followed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Loc {
    Store,
    ZeroMap,
    Device,
    /// Loaded exclusively: the only copy is the (dirty) folio in memory.
    Memory,
}

#[derive(Default)]
struct Log {
    locs: HashMap<(usize, u32), Loc>,
    store_hits: u64,
    device_reads: u64,
    writebacks: Vec<(usize, u32)>,
    errors: Vec<String>,
}

/// Wraps the configured store; every call is checked against where the page should be.
struct Audit {
    inner: Box<dyn FrontingStore>,
    log: Rc<RefCell<Log>>,
}

impl Audit {
    fn agree(&self, dev: usize, slot: u32, what: &str) {
        let mut log = self.log.borrow_mut();
        let held = self.inner.held(dev, slot);
        let loc = log.locs.get(&(dev, slot)).copied();
        let expect = match loc {
            Some(Loc::Store) => Held::Store,
            Some(Loc::ZeroMap) => Held::ZeroMap,
            _ => Held::No,
        };
        if held != expect && log.errors.len() < 10 {
            log.errors.push(format!("{what} slot {slot}: store says {held:?}, audit says {loc:?}"));
        }
    }
}

impl FrontingStore for Audit {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn store(&mut self, dev: usize, slot: u32, ctx: &StoreCtx) -> StoreOutcome {
        let out = self.inner.store(dev, slot, ctx);
        let loc = match (out, self.inner.held(dev, slot)) {
            (StoreOutcome::Refused { .. }, Held::No) => Loc::Device,
            (StoreOutcome::Stored { .. }, Held::Store) => Loc::Store,
            (StoreOutcome::Stored { .. }, Held::ZeroMap) => Loc::ZeroMap,
            (o, h) => {
                self.log.borrow_mut().errors.push(format!("store of slot {slot}: {o:?} but held {h:?}"));
                Loc::Device
            }
        };
        self.log.borrow_mut().locs.insert((dev, slot), loc);
        out
    }
    fn load(&mut self, dev: usize, slot: u32, ctx: &StoreCtx, in_swapcache: bool) -> LoadOutcome {
        self.agree(dev, slot, "before load");
        let out = self.inner.load(dev, slot, ctx, in_swapcache);
        let mut log = self.log.borrow_mut();
        let loc = log.locs.get(&(dev, slot)).copied();
        match out {
            LoadOutcome::Hit { exclusive, .. } => {
                log.store_hits += 1;
                if !matches!(loc, Some(Loc::Store | Loc::ZeroMap)) {
                    log.errors.push(format!("hit on slot {slot} whose page is at {loc:?}"));
                }
                if exclusive {
                    log.locs.insert((dev, slot), Loc::Memory);
                }
            }
            LoadOutcome::Miss => {
                log.device_reads += 1;
                if loc != Some(Loc::Device) {
                    log.errors.push(format!("device read of slot {slot} whose page is at {loc:?}: the page would be lost"));
                }
            }
        }
        out
    }
    fn invalidate_page(&mut self, dev: usize, slot: u32) {
        self.inner.invalidate_page(dev, slot);
        self.log.borrow_mut().locs.remove(&(dev, slot));
        self.agree(dev, slot, "after invalidate");
    }
    fn invalidate_area(&mut self, dev: usize) {
        self.inner.invalidate_area(dev);
        self.log.borrow_mut().locs.retain(|&(d, _), _| d != dev);
    }
    fn held(&self, dev: usize, slot: u32) -> Held {
        self.inner.held(dev, slot)
    }
    fn pool_pages(&self) -> u64 {
        self.inner.pool_pages()
    }
    fn take_writeback_request(&mut self) -> bool {
        self.inner.take_writeback_request()
    }
    fn writeback_above_target(&self) -> bool {
        self.inner.writeback_above_target()
    }
    fn writeback_keep(&mut self, dev: usize, slot: u32) {
        self.inner.writeback_keep(dev, slot)
    }
    fn writeback_take(&mut self, dev: usize, slot: u32) -> u64 {
        let mut log = self.log.borrow_mut();
        if log.locs.get(&(dev, slot)) != Some(&Loc::Store) {
            log.errors.push(format!("writeback of slot {slot} which is not in the store"));
        }
        log.locs.insert((dev, slot), Loc::Device);
        log.writebacks.push((dev, slot));
        drop(log);
        self.inner.writeback_take(dev, slot)
    }
    fn shrinker_count(&mut self) -> u64 {
        self.inner.shrinker_count()
    }
    fn lru_walk_one(&mut self) -> store::ShrinkerStep {
        self.inner.lru_walk_one()
    }
    fn counters(&self) -> StoreCounters {
        self.inner.counters()
    }
    fn check(&self) -> Vec<String> {
        self.inner.check()
    }
}

/// Run with the configured store wrapped in an audit; check invariants, relations and the
/// audit's findings. Returns the result and the audit log.
fn audited(text: &str, overrides: &[&str]) -> (SimResult, Log) {
    let r = load(text, overrides);
    let mut sim = Sim::new(&r);
    let log = Rc::new(RefCell::new(Log::default()));
    let inner = std::mem::replace(&mut sim.swap.store, store::build(&r));
    sim.swap.store = Box::new(Audit { inner, log: log.clone() });
    sim.run(&mut |_| true);
    let res = sim.result();
    let errs = sim.check_invariants();
    assert!(errs.is_empty(), "{overrides:?}: invariants:\n  {}", errs.join("\n  "));
    check_relations(&res, &r, &format!("{overrides:?}"));
    // A slot whose only reference is a swap-cache folio (its task exited while the folio was
    // under writeback or locked, so free_swap_and_cache could not drop it) stays allocated,
    // and its store entry with it, until reclaim frees the folio - as in the kernel.
    let cache_only: Vec<(usize, u32)> = log
        .borrow()
        .locs
        .keys()
        .copied()
        .filter(|&(d, sl)| sim.swap.areas[d].map[sl as usize] == SWAP_HAS_CACHE && sim.swap.areas[d].cache[sl as usize] != NONE)
        .collect();
    drop(sim);
    let mut log = Rc::try_unwrap(log).ok().expect("the simulator is gone").into_inner();
    for k in &cache_only {
        log.locs.remove(k);
    }
    assert!(log.errors.is_empty(), "{overrides:?}: audit:\n  {}", log.errors.join("\n  "));
    assert!(log.locs.is_empty(), "{overrides:?}: {} slots still held after every task exited", log.locs.len());
    (res, log)
}

fn dbg(res: &SimResult, name: &str) -> u64 {
    *res.store.as_ref().expect("a store ran").debugfs.get(name).unwrap_or_else(|| panic!("no debugfs counter {name}"))
}

const ZSWAP: &[&str] = &["zswap.enabled=true", "content.zero_fraction=0.1", "content.ratio=3.0"];

fn with(base: &[&str], extra: &[&str]) -> Vec<String> {
    base.iter().chain(extra).map(|s| s.to_string()).collect()
}

fn refs(v: &[String]) -> Vec<&str> {
    v.iter().map(|s| s.as_str()).collect()
}

#[test]
fn zswap_keeps_every_page_somewhere_and_its_pool_is_memory() {
    for pattern in ["sequential", "random"] {
        let ov = with(ZSWAP, &[&format!("task.0.phase.0.pattern={pattern}")]);
        let (res, log) = audited(BASE, &refs(&ov));
        let (zout, zin, zero) = (v(&res, "zswpout"), v(&res, "zswpin"), v(&res, "swpout_zero"));
        assert!(zout > 0 && zin > 0 && zero > 0, "{pattern}: zswpout {zout} zswpin {zin} swpout_zero {zero}");
        // The content model's zero fraction shows in what was swapped out (± sampling).
        let zero_share = zero as f64 / (zero + zout + v(&res, "pswpout")) as f64;
        assert!((zero_share - 0.1).abs() < 0.03, "{pattern}: zero share {zero_share}");
        let s = res.store.as_ref().unwrap();
        // A 3:1 ratio packs ~2.9 pages' worth per pool page (1365 + 8 -> 1376-byte class).
        let max_pool = (32 - 4) * MIB_PAGES / 5;
        assert!(s.pool_pages_max > 0 && s.pool_pages_max <= max_pool + 16, "{pattern}: pool max {} pages (limit {max_pool})", s.pool_pages_max);
        assert_eq!((s.pool_pages, dbg(&res, "stored_pages"), dbg(&res, "pool_total_size")), (0, 0, 0), "{pattern}: all freed at exit");
        assert!(log.store_hits >= zin, "{pattern}");
        assert_eq!(log.device_reads, v(&res, "pswpin"), "{pattern}: device reads are what pswpin counts");
    }
}

#[test]
fn zswap_pool_pages_are_charged_memory() {
    // In a memory cgroup the pool's frames are charged with the workload's pages: the
    // invariants check charge == frames in use and pgalloc - pgfree == frames in use, with the
    // pool's frames among them, while the pool is at its largest and at the end.
    let ov = with(ZSWAP, &["machine.memcg_limit=\"20MiB\"", "task.0.phase.0.pattern=random"]);
    let (res, _) = audited(BASE, &refs(&ov));
    let s = res.store.as_ref().unwrap();
    assert!(s.pool_pages_max > 100, "pool max {}", s.pool_pages_max);
    assert!(v(&res, "zswpout") > 0);
}

#[test]
fn zswap_full_pool_writes_back_coldest_through_the_device() {
    // A 2% pool fills at once: the shrink worker writes back, stores are refused with the
    // hysteresis, and every written-back page is later read from the device, not lost.
    let ov = with(ZSWAP, &["zswap.max_pool_percent=2", "task.0.phase.0.pattern=random"]);
    let (res, log) = audited(BASE, &refs(&ov));
    let wb = v(&res, "zswpwb");
    assert!(wb > 0 && dbg(&res, "pool_limit_hit") > 0, "zswpwb {wb} pool_limit_hit {}", dbg(&res, "pool_limit_hit"));
    assert_eq!(dbg(&res, "written_back_pages"), wb);
    assert_eq!(log.writebacks.len() as u64, wb);
    // pswpout counts both refused stores and written-back pages.
    assert!(v(&res, "pswpout") >= wb);
    let limit = (32 - 4) * MIB_PAGES * 2 / 100;
    assert!(res.store.as_ref().unwrap().pool_pages_max <= limit + 8, "pool max {} over its limit {limit}", res.store.as_ref().unwrap().pool_pages_max);
}

#[test]
fn zswap_worker_charges_its_folio_to_the_full_cgroup_and_reclaims_it_first() {
    // The shrink worker's swap-cache folio is charged to the entry's memory cgroup (v1 too);
    // at the limit the worker reclaims the group before taking it. The audit and the
    // invariants (charge == frames in use less the uncharged v1 pool) hold throughout.
    let ov = with(ZSWAP, &["zswap.max_pool_percent=2", "task.0.phase.0.pattern=random", "machine.memcg_limit=\"16MiB\"", "machine.cgroup_version=1"]);
    let (res, log) = audited(BASE, &refs(&ov));
    let wb = v(&res, "zswpwb");
    assert!(wb > 0 && dbg(&res, "pool_limit_hit") > 0, "zswpwb {wb}");
    assert_eq!(log.writebacks.len() as u64, wb);
}

#[test]
fn zswap_writeback_off_never_writes_back_and_rejects_incompressible() {
    let ov = with(ZSWAP, &["zswap.max_pool_percent=2", "zswap.memcg_writeback=false", "zswap.store_incompressible=true", "content.model=\"two-point\"", "content.ratio2=1.0", "content.ratio2_fraction=0.3"]);
    let (res, _) = audited(BASE, &refs(&ov));
    assert_eq!(v(&res, "zswpwb"), 0);
    assert!(dbg(&res, "reject_compress_poor") > 0, "incompressible pages are rejected without writeback");
    assert_eq!(dbg(&res, "stored_incompressible_pages"), 0);
    let ov = with(ZSWAP, &["zswap.store_incompressible=true", "content.model=\"two-point\"", "content.ratio2=1.0", "content.ratio2_fraction=0.3"]);
    let (res, _) = audited(BASE, &refs(&ov));
    assert!(dbg(&res, "stored_incompressible_pages") > 0 && dbg(&res, "reject_compress_poor") == 0);
}

#[test]
fn zswap_memcg_max_limits_the_compressed_bytes() {
    let ov = with(ZSWAP, &["machine.memcg_limit=\"24MiB\"", "zswap.memcg_max=\"1MiB\"", "task.0.phase.0.pattern=random"]);
    let (res, _) = audited(BASE, &refs(&ov));
    assert!(dbg(&res, "reject_memcg_max") > 0 && v(&res, "zswpwb") > 0);
    // 1 MiB of ~1373-byte objects in 1376-byte chunks: about 256 pages plus a zspage per class.
    assert!(res.store.as_ref().unwrap().pool_pages_max < 300, "pool max {}", res.store.as_ref().unwrap().pool_pages_max);
}

#[test]
fn zswap_shrinker_writes_back_the_coldest_entries_first() {
    let r = load(BASE, ZSWAP);
    let mut z = store::build(&r);
    let mut stored = Vec::new();
    for slot in 1..=200u32 {
        // A different page in each slot (its content is drawn by its identity).
        let ctx = StoreCtx { now: 0, free_frames: u64::MAX, page_key: swaplab_core::swap::store::zswap::content::page_key(1, slot as u64) };
        if matches!(z.store(0, slot, &ctx), StoreOutcome::Stored { .. }) && z.held(0, slot) == Held::Store {
            stored.push(slot);
        }
    }
    assert!(stored.len() > 150);
    // Second chance: every entry starts referenced, so the first walk clears them all and the
    // oldest comes round first; a kept entry (in the swap cache) goes to the head.
    for _ in 0..stored.len() {
        assert_eq!(z.lru_walk_one(), store::ShrinkerStep::Rotated);
    }
    assert_eq!(z.lru_walk_one(), store::ShrinkerStep::Candidate(0, stored[0]));
    z.writeback_keep(0, stored[0]);
    let mut order = Vec::new();
    while let store::ShrinkerStep::Candidate(d, s) = z.lru_walk_one() {
        z.writeback_take(d, s);
        order.push(s);
    }
    let mut expect: Vec<u32> = stored[1..].to_vec();
    expect.push(stored[0]);
    assert_eq!(order, expect);
    assert_eq!(z.pool_pages(), 0);
    assert!(z.check().is_empty());
}

/// A simulator whose zswap pool (2% of the machine) was filled past its limit by direct
/// stores of distinct pages, every entry still referenced; returns it with its shrink
/// worker's task.
fn sim_with_full_referenced_pool() -> (Sim, u32) {
    let r = load(BASE, &refs(&with(ZSWAP, &["zswap.max_pool_percent=2"])));
    let mut sim = Sim::new(&r);
    for slot in 1..=2000u32 {
        let ctx = StoreCtx { now: 0, free_frames: u64::MAX, page_key: swaplab_core::swap::store::zswap::content::page_key(1, slot as u64) };
        sim.swap.store.store(0, slot, &ctx);
    }
    assert!(sim.swap.store.writeback_above_target(), "the pool is over its accept threshold");
    let tid = sim.swap.writeback_worker.expect("zswap has a shrink worker");
    (sim, tid)
}

#[test]
fn zswap_worker_run_ends_at_its_sixteenth_iteration_that_wrote_nothing_back() {
    // shrink_worker walks one LRU entry per shrink_memcg call; a referenced entry is rotated
    // and counts as a failure, and the 16th failure (MAX_RECLAIM_RETRIES) ends the run. A
    // pool of referenced entries is therefore not drained in one run: 16 rotations, nothing
    // written back, then the worker sleeps until queued again.
    use swaplab_core::engine::{KernelThread, KthreadStep};
    use swaplab_core::swap::store::zswap::shrinker::ShrinkWorker;
    let (mut sim, tid) = sim_with_full_referenced_pool();
    let stored = dbg_of(&*sim.swap.store, "stored_pages");
    sim.swap.writeback_queued_at.push_back(0);
    let mut worker = ShrinkWorker::default();
    let steps: Vec<KthreadStep> = (0..17).map(|_| worker.step(&mut sim, tid)).collect();
    assert!(steps[..16].iter().all(|s| *s == KthreadStep::Continue), "{steps:?}");
    assert_eq!(steps[16], KthreadStep::Sleep, "the run ended at its 16th failure and nothing queued it again");
    assert_eq!(dbg_of(&*sim.swap.store, "written_back_pages"), 0);
    assert_eq!(dbg_of(&*sim.swap.store, "stored_pages"), stored);
    assert!(sim.swap.store.writeback_above_target());
}

#[test]
fn zswap_worker_runs_again_for_a_store_refused_during_its_run_and_waits_for_a_later_one() {
    // The workqueue clears PENDING as a run starts: a store refused while the run goes on
    // (by its time, not by the order the engine handled it) queues one more run right after;
    // a refusal later than the run's end wakes the worker at that time.
    use swaplab_core::engine::{KernelThread, KthreadStep};
    use swaplab_core::swap::store::zswap::shrinker::ShrinkWorker;
    let (mut sim, tid) = sim_with_full_referenced_pool();
    let start = sim.tasks[tid as usize].clock;
    let later = start + 1_000_000_000;
    sim.swap.writeback_queued_at.extend([start, start + 1, later]);
    let mut worker = ShrinkWorker::default();
    for _ in 0..16 {
        assert_eq!(worker.step(&mut sim, tid), KthreadStep::Continue);
    }
    assert!(sim.tasks[tid as usize].clock > start + 1, "the run outlasted the second request");
    // the request at start + 1 came during the first run: a second run follows at once
    for _ in 0..16 {
        assert_eq!(worker.step(&mut sim, tid), KthreadStep::Continue);
    }
    assert_eq!(worker.step(&mut sim, tid), KthreadStep::SleepUntil(later));
    assert_eq!(sim.swap.writeback_queued_at.len(), 1, "only the later request is left");
}

#[test]
fn zswap_memory_pressure_shrinker_writes_back_before_the_pool_fills() {
    // shrinker_enabled: reclaim passes (here a memory cgroup's, cgroup v2) write the pool's
    // cold entries back although the pool never reaches max_pool_percent; off, nothing is
    // written back. Either way every page is found again (the audit).
    let pressure = ["machine.memcg_limit=\"20MiB\"", "task.0.phase.0.pattern=random", "zswap.max_pool_percent=60"];
    let off = with(ZSWAP, &pressure);
    let (res_off, _) = audited(BASE, &refs(&off));
    assert_eq!((v(&res_off, "zswpwb"), dbg(&res_off, "pool_limit_hit")), (0, 0));
    let on = with(&refs(&off), &["zswap.shrinker_enabled=true"]);
    let (res, log) = audited(BASE, &refs(&on));
    let wb = v(&res, "zswpwb");
    assert!(wb > 100, "zswpwb {wb}");
    assert_eq!(dbg(&res, "pool_limit_hit"), 0, "the pool never filled: the shrinker wrote back");
    assert_eq!(log.writebacks.len() as u64, wb);
    assert!(res.store.as_ref().unwrap().pool_pages_max < res_off.store.as_ref().unwrap().pool_pages_max);
}

#[test]
fn zswap_shrinker_counts_nothing_on_cgroup_v1() {
    // zswap_shrinker_count reads the memcg's zswap statistics, which v1 never charges.
    let ov = with(ZSWAP, &["machine.memcg_limit=\"20MiB\"", "task.0.phase.0.pattern=random", "zswap.max_pool_percent=60", "zswap.shrinker_enabled=true", "machine.cgroup_version=1"]);
    let (res, _) = audited(BASE, &refs(&ov));
    assert!(v(&res, "zswpout") > 0);
    assert_eq!(dbg(&res, "pool_limit_hit"), 0, "the pool never filled: no worker writeback either");
    assert_eq!(v(&res, "zswpwb"), 0);
}

#[test]
fn zswap_shrinker_count_spares_disk_swapins_and_scales_by_compression() {
    let r = load(BASE, &with(ZSWAP, &["zswap.shrinker_enabled=true"]).iter().map(|s| s.as_str()).collect::<Vec<_>>());
    let mut z = store::build(&r);
    for slot in 1..=300u32 {
        let ctx = StoreCtx { now: 0, free_frames: u64::MAX, page_key: swaplab_core::swap::store::zswap::content::page_key(1, slot as u64) };
        z.store(0, slot, &ctx);
    }
    let stored = dbg_of(&*z, "stored_pages");
    let full = z.shrinker_count();
    // Freeable entries scaled by pool pages per stored page: ~1/2.9 at 3:1.
    assert_eq!(full, stored * z.pool_pages() / stored);
    assert!(full > 0 && full < stored / 2, "{full} of {stored}");
    // Reads from the device (load misses) protect as many entries, once.
    let ctx = StoreCtx { now: 0, free_frames: u64::MAX, page_key: 0 };
    for slot in 1000..1100u32 {
        assert!(matches!(z.load(0, slot, &ctx, true), LoadOutcome::Miss));
    }
    assert_eq!(z.shrinker_count(), (stored - 100) * z.pool_pages() / stored);
    assert_eq!(z.shrinker_count(), full, "the protection is consumed by the count");
    // The walk gives the second chance before any candidate.
    assert_eq!(z.lru_walk_one(), store::ShrinkerStep::Rotated);
}

#[test]
fn zswap_compression_cpu_follows_the_page_content_class() {
    use swaplab_core::swap::store::zswap::compressor::{cost, PAGE_COPY_NS, STORE_OVERHEAD_NS, ZERO_CHECK_NS, ZERO_FILL_NS};
    use swaplab_core::swap::store::zswap::content::{page_key, ContentModel, PageContent};
    let content = ["content.zero_fraction=0.2", "content.model=\"two-point\"", "content.ratio=3.0", "content.ratio2=1.0", "content.ratio2_fraction=0.3"];
    let r = load(BASE, &refs(&with(&content, &["zswap.enabled=true", "zswap.max_pool_percent=100", "zswap.store_incompressible=true"])));
    let model = ContentModel::new(r.config.content.as_ref().unwrap(), r.config.seed);
    let lzo = cost("lzo");
    let three_to_one = (4096.0f64 / 3.0).round() as u32;
    let mut z = store::build(&r);
    let mut seen = [0u32; 3];
    for slot in 1..=600u32 {
        let ctx = StoreCtx { now: 0, free_frames: u64::MAX, page_key: page_key(7, slot as u64) };
        let (class, store_ns, load_ns) = match model.page(ctx.page_key) {
            // the zero map's check, never the compressor; zeroes filled on the way back
            PageContent::Zero => (0, ZERO_CHECK_NS, ZERO_FILL_NS),
            // a full pass that keeps nothing, the page stored whole and copied back
            PageContent::Compressed(4096) => (2, ZERO_CHECK_NS + lzo.compress_ns + STORE_OVERHEAD_NS, PAGE_COPY_NS),
            PageContent::Compressed(len) => {
                assert_eq!(len, three_to_one);
                (1, ZERO_CHECK_NS + lzo.compress(len) + STORE_OVERHEAD_NS, lzo.decompress(len))
            }
        };
        seen[class] += 1;
        assert_eq!(z.store(0, slot, &ctx), StoreOutcome::Stored { cpu_ns: store_ns }, "slot {slot}, class {class}");
        assert_eq!(z.load(0, slot, &ctx, true), LoadOutcome::Hit { cpu_ns: load_ns, exclusive: class != 0 }, "slot {slot}, class {class}");
    }
    assert!(seen.iter().all(|&n| n > 60), "every class drawn: {seen:?}");
    // A 3:1 page is cheaper than the corpus (Silesia, ~2.1:1) the source measured at.
    assert!(lzo.compress(three_to_one) < lzo.compress_ns && lzo.decompress(three_to_one) < lzo.decompress_ns);
}

fn dbg_of(z: &dyn FrontingStore, name: &str) -> u64 {
    z.counters().debugfs.into_iter().find(|(k, _)| *k == name).map(|(_, v)| v).unwrap_or_else(|| panic!("no {name}"))
}

#[test]
fn frontswap_that_fills_falls_through_to_the_device_and_loses_nothing() {
    // 4 MiB of hypervisor memory for a 40 MiB working set in 28 MiB, shrinking to 1 MiB.
    let ov = ["frontswap.capacity=\"4MiB\"", "frontswap.capacity_step=[{at=\"20ms\", size=\"1MiB\"}]", "task.0.phase.0.pattern=random"];
    let (res, log) = audited(BASE, &ov);
    let (succ, failed, loads) = (dbg(&res, "succ_stores"), dbg(&res, "failed_stores"), dbg(&res, "loads"));
    assert!(succ > 0 && failed > 0 && loads > 0, "succ {succ} failed {failed} loads {loads}");
    assert!(v(&res, "pswpout") >= failed, "every refused store is a device write");
    assert_eq!(log.store_hits, loads);
    assert_eq!(dbg(&res, "curr_pages"), 0);
    assert!(res.store.as_ref().unwrap().pool_pages_max == 0, "hypervisor memory is not the guest's");
}

/// Write 40 MiB once, then read it at random: swap-ins are read faults, and swap is large
/// enough (256 MiB) that a swapped-in page keeps its slot (no `vm_swap_full`).
fn write_then_read() -> String {
    let base = BASE.replace("size = \"64MiB\"", "size = \"256MiB\"").replace("cycles = 3", "cycles = 1");
    base + "[[task.phase]]\nmapping = \"m\"\npattern = \"random\"\nwrite_ratio = 0.0\ncycles = 2\n"
}

#[test]
fn frontswap_exclusive_loads_dirty_the_folio() {
    let text = write_then_read();
    let (keep, _) = audited(&text, &["frontswap.capacity=\"256MiB\""]);
    let (excl, _) = audited(&text, &["frontswap.capacity=\"256MiB\"", "frontswap.exclusive_loads=true"]);
    // 2010 semantics: the copy stays, so a clean folio read back is dropped again without a
    // store; with exclusive gets it is dirty and every re-eviction stores it again.
    assert!(dbg(&keep, "loads") > 1000);
    assert!(dbg(&excl, "succ_stores") > dbg(&keep, "succ_stores") + 1000, "{} vs {}", dbg(&excl, "succ_stores"), dbg(&keep, "succ_stores"));
    assert_eq!((v(&keep, "pswpout"), v(&excl, "pswpout")), (0, 0), "room for everything");
}

#[test]
fn stores_are_deterministic() {
    for ov in [&with(ZSWAP, &["zswap.max_pool_percent=3", "task.0.phase.0.pattern=random"])[..], &with(&["frontswap.capacity=\"8MiB\""], &[])[..]] {
        let a = run_checked(BASE, &refs(ov)).to_json();
        assert_eq!(a, run_checked(BASE, &refs(ov)).to_json(), "{ov:?}");
    }
}

#[test]
fn bad_store_configuration_is_one_clear_error() {
    for (ov, says) in [
        (&["zswap.enabled=true", "zswap.compressor=\"gzip\""][..], "unknown compressor \"gzip\""),
        (&["zswap.enabled=true", "content.model=\"histogram\""][..], "needs histogram"),
        (&["zswap.enabled=true", "content.ratio=0.5"][..], "compression ratio"),
        (&["frontswap.backend=\"xen\"", "frontswap.capacity=\"1MiB\""][..], "unknown frontswap backend"),
        (&["zswap.enabled=true", "frontswap.capacity=\"1MiB\""][..], "cannot both"),
    ] {
        let ov: Vec<String> = ov.iter().map(|s| s.to_string()).collect();
        let e = swaplab_core::config::load(BASE, "t.toml", &ov).err().unwrap_or_else(|| panic!("{ov:?} accepted"));
        assert!(e.to_string().contains(says), "{ov:?}: {e}");
    }
    let ov: Vec<String> = ["zswap.enabled=true", "content.model=\"histogram\"", "content.histogram=\"/nonexistent/h.txt\""].iter().map(|s| s.to_string()).collect();
    let e = swaplab_core::config::load(BASE, "t.toml", &ov).err().unwrap();
    assert!(e.to_string().contains("cannot read /nonexistent/h.txt"), "{e}");
}

#[test]
fn histogram_content_reads_a_file() {
    let dir = std::env::temp_dir().join(format!("swaplab-hist-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("h.txt");
    std::fs::write(&path, "# bytes pages\n500 3\n4096 1\n").unwrap();
    let h = format!("content.histogram=\"{}\"", path.display());
    let ov = with(&["zswap.enabled=true", "content.model=\"histogram\""], &[&h]);
    let (res, _) = audited(BASE, &refs(&ov));
    let (poor, out) = (dbg(&res, "reject_compress_poor"), v(&res, "zswpout"));
    let share = poor as f64 / (poor + out) as f64;
    assert!((share - 0.25).abs() < 0.05, "a quarter of the pages do not compress: {share}");
    std::fs::write(&path, "500 x\n").unwrap();
    let e = swaplab_core::config::load(BASE, "t.toml", &refs(&ov).iter().map(|s| s.to_string()).collect::<Vec<_>>()).err().unwrap();
    assert!(e.to_string().contains("h.txt:1"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}

// ---------------------------------------------------------------- zram (swap/zram.rs)

fn zram_stats(res: &SimResult) -> swaplab_core::swap::zram::ZramStats {
    res.devices[0].zram.expect("a zram device reports its mm_stat")
}

fn compression_ns(res: &SimResult) -> u64 {
    use swaplab_core::stats::CpuCategory;
    res.kswapd_cpu_by_category.get(CpuCategory::Compression) + res.direct_reclaim_cpu_by_category.get(CpuCategory::Compression)
}

#[test]
fn zram_zero_pages_take_no_memory_and_no_compression() {
    let run = |zero: &str| audited(BASE, &["swap.0.device=zram", &format!("content.zero_fraction={zero}"), "task.0.phase.0.pattern=random"]).0;
    let (none, half, all) = (run("0.0"), run("0.5"), run("1.0"));
    let (a, b, c) = (zram_stats(&none), zram_stats(&half), zram_stats(&all));
    assert!(a.mem_used_max > 0 && c.mem_used_max == 0, "{a:?} {c:?}");
    // Half the pages zero: about half the pool.
    let share = b.mem_used_max as f64 / a.mem_used_max as f64;
    assert!((0.35..0.7).contains(&share), "pool with half the pages zero: {share} of the full one");
    // Only the zero check (200 ns a page) where nothing compresses; lzo's cost of a 3:1 page otherwise.
    let writes = v(&all, "pswpout");
    assert!(compression_ns(&all) <= writes * 400, "{} ns for {writes} zero pages", compression_ns(&all));
    let lzo = swaplab_core::swap::store::zswap::compressor::cost("lzo");
    assert!(compression_ns(&none) > v(&none, "pswpout") * lzo.compress((4096.0f64 / 3.0).round() as u32));
    // The pool's frames came out of the machine's memory: more allocations than without it.
    assert!(v(&none, "pgalloc_normal") > v(&all, "pgalloc_normal"));
}

#[test]
fn zram_compressor_and_content_decide_its_size_and_cost() {
    let run = |extra: &[&str]| audited(BASE, &refs(&with(&["swap.0.device=zram", "task.0.phase.0.pattern=random"], extra))).0;
    let lzo = run(&[]);
    let lz4 = run(&["zram.compressor=\"lz4\""]);
    // Same pages, so about the same pool (the timing, and so which pages are out at once,
    // differs with the compressor's speed); lz4 decompresses ~5x faster than lzo.
    let (a, b) = (zram_stats(&lzo).mem_used_max as f64, zram_stats(&lz4).mem_used_max as f64);
    assert!((a / b - 1.0).abs() < 0.05, "lzo pool {a}, lz4 pool {b}");
    assert!(compression_ns(&lz4) < compression_ns(&lzo));
    // A fifth that does not compress is stored whole (huge pages) and makes the pool larger.
    let mixed = run(&["content.model=\"two-point\"", "content.ratio2=1.0", "content.ratio2_fraction=0.2"]);
    assert!(zram_stats(&mixed).mem_used_max > zram_stats(&lzo).mem_used_max);
}

#[test]
fn zram_zswap_and_frontswap_compare_on_one_workload() {
    // One workload, one content model: zram's pool and zswap's (unlimited, in front of NVMe)
    // hold the same pages in zsmalloc, so at their largest they are about the same size; a
    // frontswap with room for everything keeps every page whole, in the hypervisor.
    let content = ["content.zero_fraction=0.1", "content.model=\"two-point\"", "content.ratio=3.0", "content.ratio2=1.0", "content.ratio2_fraction=0.2", "task.0.phase.0.pattern=random"];
    let zram = audited(BASE, &refs(&with(&content, &["swap.0.device=zram"]))).0;
    let zswap = audited(BASE, &refs(&with(&content, &["zswap.enabled=true", "zswap.max_pool_percent=100", "zswap.store_incompressible=true"]))).0;
    let front = audited(BASE, &refs(&with(&content, &["frontswap.capacity=\"64MiB\""]))).0;
    let zram_pool = zram_stats(&zram).mem_used_max as f64 / 4096.0;
    let zswap_pool = zswap.store.as_ref().unwrap().pool_pages_max as f64;
    assert!((zram_pool / zswap_pool - 1.0).abs() < 0.15, "zram pool {zram_pool} pages, zswap pool {zswap_pool}");
    assert_eq!(v(&zswap, "pswpout"), 0);
    assert!(v(&front, "pswpout") == 0 && front.store.as_ref().unwrap().pool_pages_max == 0);
}

/// Task 0's elapsed time and major faults.
fn task_time_and_majors(res: &SimResult) -> (u64, u64) {
    (res.tasks[0].elapsed_ns, res.tasks[0].major_faults)
}

#[test]
fn store_served_swapin_pays_no_read_submission_cpu() {
    // A calibrated major fault's CPU contains the submission of its device read (driver,
    // completion interrupt; ~31 of ~33 us on a virtio disk). A swap-in the store serves
    // submits no read: with zswap large enough for everything, the figure's submission part
    // comes off every major fault; with swap to the device only, every major fault still
    // pays it, so the run is as slow as with the whole figure charged up front.
    const SUBMIT_NS: u64 = 28_000;
    let costs = |submit: u64| vec!["costs.major_fault_cpu_ns=30000".to_string(), format!("costs.read_submit_cpu_ns={submit}")];
    let zswap = with(ZSWAP, &["zswap.max_pool_percent=50"]);
    let run = |extra: &[String], submit: u64| {
        let ov: Vec<String> = extra.iter().cloned().chain(costs(submit)).collect();
        run_checked(BASE, &refs(&ov))
    };
    let (whole, split) = (run(&zswap, 0), run(&zswap, SUBMIT_NS));
    assert_eq!((v(&whole, "pswpin"), v(&split, "pswpin")), (0, 0), "every swap-in is a store hit or a zero page");
    let ((t_whole, majors), (t_split, _)) = (task_time_and_majors(&whole), task_time_and_majors(&split));
    assert!(majors > 1000, "the run swaps in: {majors} major faults");
    let saved = t_whole as f64 - t_split as f64;
    let expect = (majors * SUBMIT_NS) as f64;
    assert!((saved - expect).abs() < 0.1 * expect, "saved {saved} ns, expected ~{expect} ({majors} faults x {SUBMIT_NS} ns)");

    let (whole, split) = (run(&[], 0), run(&[], SUBMIT_NS));
    assert!(v(&whole, "pswpin") > 1000, "device swap-ins: {}", v(&whole, "pswpin"));
    let ((t_whole, _), (t_split, _)) = (task_time_and_majors(&whole), task_time_and_majors(&split));
    let diff = (t_split as f64 - t_whole as f64).abs() / t_whole as f64;
    assert!(diff < 0.02, "device swap-ins pay the whole figure either way: {t_whole} vs {t_split} ns");
}

#[test]
fn read_submission_cpu_above_the_major_fault_cpu_is_one_clear_error() {
    let ov: Vec<String> = ["costs.major_fault_cpu_ns=2000", "costs.read_submit_cpu_ns=3000"].iter().map(|s| s.to_string()).collect();
    let e = swaplab_core::config::load(BASE, "t.toml", &ov).expect_err("accepted a submission part above the whole");
    assert!(e.to_string().contains("costs.read_submit_cpu_ns") && e.to_string().contains("major_fault_cpu_ns (2000 ns)"), "{e}");
}
