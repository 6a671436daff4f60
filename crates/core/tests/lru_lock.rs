//! The lruvec's `lru_lock` (reclaim/lru_lock.rs): reclaimers and readers on many CPUs wait
//! for each other on it, the wait is charged where it is spent, a machine of one CPU never
//! waits, and only the classic LRU takes it to activate a folio read twice (seed 004's point
//! about the buffered-I/O access path).

mod common;
use common::*;
use swaplab_core::stats::CpuCategory as Cat;

/// `jobs` fio-like tasks, each reading its own 2 MiB file at random through read(), for
/// 50 ms of virtual time, on `cpus` CPUs; in a 4 MiB memory cgroup unless `fits`.
fn readers(cpus: u32, jobs: u32, fits: bool) -> String {
    let memcg = if fits { String::new() } else { "memcg_limit = \"4MiB\"\n".into() };
    format!(
        "name = \"readers\"\nseed = 5\n[machine]\ncpus = {cpus}\nram = \"64MiB\"\nkernel_reserved = \"4MiB\"\n{memcg}file_device = \"ramdisk\"\n\
         [kernel]\nprofile = \"6.x\"\n[[task]]\nname = \"fio\"\ninstances = {jobs}\ntime_limit = \"50ms\"\nrepeat = true\n\
         [[task.mapping]]\nname = \"file\"\nkind = \"file\"\nsize = \"2MiB\"\nadvice = \"random\"\n\
         [[task.phase]]\nmapping = \"file\"\npattern = \"random\"\naccess = \"syscall\"\nwrite_ratio = 0.0\n"
    )
}

#[test]
fn reclaimers_on_many_cpus_wait_on_lru_lock_and_the_wait_is_charged_to_its_category() {
    for policy in ["classic", "mglru"] {
        let ov = format!("kernel.reclaim=\"{policy}\"");
        let res = run_checked(&readers(8, 8, false), &[&ov]);
        let s = &res.summary;
        let reclaim_lock = res.kswapd_cpu_by_category.get(Cat::LruLock) + res.direct_reclaim_cpu_by_category.get(Cat::LruLock);
        assert!(v(&res, "pgsteal_file") > 0, "{policy}: 16 MiB of files in a 4 MiB memcg must reclaim");
        assert!(s.lru_lock_contended > 0, "{policy}: 8 readers reclaiming one memcg never found the lock held");
        assert!(s.lru_lock_reclaim_spin_s > 0.0, "{policy}");
        // The category holds the spin and the hand-offs: at least the spin.
        let spin_ns = (s.lru_lock_reclaim_spin_s * 1e9).round() as u64;
        assert!(reclaim_lock >= spin_ns && spin_ns > 0, "{policy}: category {reclaim_lock} ns, spin {spin_ns} ns");
        // Without the lock's costs nobody waits and the category is empty.
        let free = run_checked(&readers(8, 8, false), &[&ov, "costs.lru_lock_folio_ns=0", "costs.lru_lock_handoff_ns=0"]);
        let free_lock = free.kswapd_cpu_by_category.get(Cat::LruLock) + free.direct_reclaim_cpu_by_category.get(Cat::LruLock);
        assert_eq!((free_lock, free.summary.lru_lock_contended), (0, 0), "{policy}");
    }
}

#[test]
fn a_machine_of_one_cpu_never_spins_on_lru_lock() {
    for policy in ["classic", "mglru"] {
        let ov = format!("kernel.reclaim=\"{policy}\"");
        let res = run_checked(&readers(1, 4, false), &[&ov]);
        assert!(v(&res, "pgsteal_file") > 0, "{policy}");
        let lock = res.kswapd_cpu_by_category.get(Cat::LruLock) + res.direct_reclaim_cpu_by_category.get(Cat::LruLock);
        assert_eq!((lock, res.summary.lru_lock_acquisitions), (0, 0), "{policy}: a holder is never preempted on one CPU");
    }
}

#[test]
fn only_the_classic_lru_takes_lru_lock_to_activate_a_folio_read_twice() {
    // Nothing is reclaimed: every acquisition is a page vector drain of the access path.
    let cpus = 4;
    let run = |policy: &str| run_checked(&readers(cpus, 4, true), &[&format!("kernel.reclaim=\"{policy}\"")]);
    let (classic, mglru) = (run("classic"), run("mglru"));
    for res in [&classic, &mglru] {
        assert_eq!(v(res, "pgscan_file"), 0, "the files fit: no reclaim");
    }
    let added = |res: &swaplab_core::stats::result::SimResult| v(res, "pgalloc_normal");
    // PAGEVEC_SIZE of the default profile ("6.x": 31 since 6.9, reclaim/lru_add.rs).
    let vec = swaplab_core::config::lru_batch_size("6.x") as u64;
    // MGLRU: one drain per full vector of added folios, per CPU.
    assert!(mglru.summary.lru_lock_acquisitions <= added(&mglru) / vec + cpus as u64, "{} drains for {} adds", mglru.summary.lru_lock_acquisitions, added(&mglru));
    // Classic: its activations fill the vectors too.
    // Enough activations that drains of added folios alone (at most adds / 15 + one partial
    // vector per CPU) fall short of the bound below.
    assert!(v(&classic, "pgactivate") / vec > 2 * cpus as u64, "random reads of 2 MiB files for 50 ms read pages twice: {}", v(&classic, "pgactivate"));
    let min = (added(&classic) + v(&classic, "pgactivate")) / vec;
    assert!(classic.summary.lru_lock_acquisitions + cpus as u64 >= min, "{} drains for {} adds and {} activations", classic.summary.lru_lock_acquisitions, added(&classic), v(&classic, "pgactivate"));
}

#[test]
fn a_classic_refault_of_a_workingset_folio_takes_lru_lock_and_an_mglru_one_does_not() {
    for policy in ["classic", "mglru"] {
        // Seed 004's fio workload, 16 jobs on 8 CPUs in a 32 MiB memcg: the classic LRU's
        // refaults restore workingset folios only once its active list has formed, after ~2 s.
        let text = include_str!("../../../experiments/workloads/fio-randread.toml");
        let ov = ["machine.cpus=8", "task.0.instances=16", "machine.memcg_limit=\"32MiB\"", "task.0.ramp_time=\"0ms\""];
        let policy_ov = format!("kernel.reclaim=\"{policy}\"");
        let r = load(text, &[ov[0], ov[1], ov[2], ov[3], &policy_ov]);
        let (sim, res) = run_resolved(&r);
        let restored = v(&res, "workingset_restore_file") + v(&res, "workingset_restore_anon");
        assert!(restored > 0, "{policy}: 16 readers of 5.5 MiB files in 32 MiB restore workingset folios");
        let notes = sim.reclaim.lru_lock.stats.refault_notes;
        // Every refault here happens in a reader's read(): classic notes each restore's cost
        // under the lock (lru_note_cost_refault), MGLRU's lru_gen_refault none.
        let want = if policy == "classic" { restored } else { 0 };
        assert_eq!(notes, want, "{policy}: {restored} restores");
    }
}
