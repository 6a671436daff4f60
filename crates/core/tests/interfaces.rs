//! The extension points of the model (docs/architecture.md): the LRU policy registry, the
//! fronting-store interface of the swap I/O layer, and kernel threads. Each test plugs in an
//! implementation and checks that the engine calls it as the trait's contract says.

mod common;
use common::*;
use std::cell::{Cell, RefCell};
use std::collections::HashSet;
use std::rc::Rc;
use swaplab_core::engine::{KernelThread, KthreadStep, Sim};
use swaplab_core::swap::store::{FrontingStore, Held, LoadOutcome, StoreCtx, StoreOutcome};

#[test]
fn kernel_reclaim_selects_the_policy_through_the_registry() {
    let sim = Sim::new(&load(BASE, &["kernel.reclaim=\"classic\""]));
    assert_eq!(sim.reclaim.policy_ref().name(), "classic");
}

/// A store that keeps every page it is offered (a frontswap backend with room for all).
#[derive(Default)]
struct KeepAll {
    pages: Rc<RefCell<HashSet<(usize, u32)>>>,
    stores: Rc<Cell<u64>>,
    loads: Rc<Cell<u64>>,
}

impl FrontingStore for KeepAll {
    fn name(&self) -> &'static str {
        "keep-all"
    }
    fn store(&mut self, dev: usize, slot: u32, _ctx: &StoreCtx) -> StoreOutcome {
        self.pages.borrow_mut().insert((dev, slot));
        self.stores.set(self.stores.get() + 1);
        StoreOutcome::Stored { cpu_ns: 1_000 }
    }
    fn load(&mut self, dev: usize, slot: u32, _ctx: &StoreCtx, _in_swapcache: bool) -> LoadOutcome {
        assert!(self.pages.borrow().contains(&(dev, slot)), "load of slot {slot}, which was never stored or was invalidated");
        self.loads.set(self.loads.get() + 1);
        LoadOutcome::Hit { cpu_ns: 1_000, exclusive: false }
    }
    fn invalidate_page(&mut self, dev: usize, slot: u32) {
        self.pages.borrow_mut().remove(&(dev, slot));
    }
    fn invalidate_area(&mut self, _dev: usize) {
        self.pages.borrow_mut().clear();
    }
    fn held(&self, dev: usize, slot: u32) -> Held {
        if self.pages.borrow().contains(&(dev, slot)) {
            Held::Store
        } else {
            Held::No
        }
    }
}

#[test]
fn a_store_that_keeps_every_page_replaces_all_swap_device_io() {
    for ov in [&["task.0.phase.0.pattern=random"][..], &["task.0.phase.0.pattern=sequential"][..], &["swap.0.device=zram", "task.0.phase.0.pattern=random"][..]] {
        let r = load(BASE, ov);
        let r = &r;
        let mut sim = Sim::new(r);
        let store = KeepAll::default();
        let (pages, stores, loads) = (store.pages.clone(), store.stores.clone(), store.loads.clone());
        sim.swap.store = Box::new(store);
        sim.run(&mut |_| true);
        let res = sim.result();
        assert!(sim.check_invariants().is_empty(), "{ov:?}: {:?}", sim.check_invariants());
        // (check_relations' `swap_ra <= pswpin` is for device reads: here readahead is served
        // by the store.)
        assert!(stores.get() > 0 && loads.get() > 0, "{ov:?}: the run must swap out and in through the store");
        assert_eq!((v(&res, "pswpout"), v(&res, "pswpin")), (0, 0), "{ov:?}: no page may reach the device");
        assert_eq!((res.devices[0].pages_written, res.devices[0].pages_read), (0, 0), "{ov:?}");
        assert!(v(&res, "pgmajfault") > 0, "{ov:?}: a store hit is still a major fault");
        // Every slot was freed when the task exited, and each free invalidated the store's copy.
        assert!(pages.borrow().is_empty(), "{ov:?}: {} stale entries", pages.borrow().len());
    }
}

#[test]
fn without_a_store_swap_io_counts_pages_at_the_device() {
    let res = run_checked(BASE, &["task.0.phase.0.pattern=random"]);
    let d = &res.devices[0];
    assert!(v(&res, "pswpout") > 0);
    assert_eq!(v(&res, "pswpout"), d.pages_written, "pswpout counts pages written by the device");
    assert_eq!(v(&res, "pswpin"), d.pages_read, "pswpin counts pages read by the device");
}

/// A periodic kernel thread: one short step every `period`, counted.
struct Ticker {
    period: u64,
    steps: Rc<Cell<u64>>,
}

impl KernelThread for Ticker {
    fn name(&self) -> &'static str {
        "ticker"
    }
    fn step(&mut self, sim: &mut Sim, tid: u32) -> KthreadStep {
        self.steps.set(self.steps.get() + 1);
        sim.tasks[tid as usize].clock += 1_000;
        KthreadStep::SleepUntil(sim.tasks[tid as usize].clock + self.period)
    }
    fn timer(&mut self, _sim: &mut Sim, _tid: u32) -> bool {
        true
    }
}

#[test]
fn a_periodic_kernel_thread_runs_between_user_work() {
    let run = || {
        let mut sim = Sim::new(&load(BASE, &["task.0.phase.0.pattern=random"]));
        let steps = Rc::new(Cell::new(0));
        sim.spawn_kthread(Box::new(Ticker { period: 1_000_000, steps: steps.clone() }), Some(0));
        sim.run(&mut |_| true);
        let res = sim.result();
        assert!(sim.check_invariants().is_empty());
        (steps.get(), res.elapsed_ns, res.to_json())
    };
    let (steps, elapsed, json) = run();
    // At most one step per millisecond of the run; at least one per two, since a woken thread
    // waits for the user task's CPU at most the wakeup granularity (1 ms).
    let most = elapsed / 1_001_000 + 2;
    assert!(steps >= most / 2 && steps <= most, "{steps} steps in {elapsed} ns");
    assert_eq!(json, run().2, "a run with a kernel thread is deterministic");
}
