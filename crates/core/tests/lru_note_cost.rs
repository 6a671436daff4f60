//! The classic LRU's `lru_note_cost` walking the memory cgroup hierarchy (reclaim/lru_lock.rs):
//! every reclaim batch and every refault of a workingset folio takes the `lru_lock` of each
//! ancestor's lruvec in turn (5.11+), so readers of one group queue on their ancestors'
//! locks; the depth is `machine.memcg_path`'s; 6.17+ takes nothing for a zero reclaim cost;
//! MGLRU and the root's own tasks walk nothing.

mod common;
use common::*;
use swaplab_core::stats::result::SimResult;

fn spin_ns(res: &SimResult) -> u64 {
    (res.summary.memcg_ancestor_lock_spin_s * 1e9).round() as u64
}

#[test]
fn a_5_17_note_takes_every_ancestors_lock_from_reclaim_and_from_workingset_refaults() {
    let res = run_checked(&file_readers(8, 8, Some("user.slice/test")), &[]);
    let s = &res.summary;
    let restores = v(&res, "workingset_restore_file");
    assert!(v(&res, "pgsteal_file") > 1_000 && restores > 100, "16 MiB of files in a 4 MiB memcg: steal {}, restores {restores}", v(&res, "pgsteal_file"));
    // One walk per workingset refault and per reclaim batch, each through user.slice and the root.
    assert!(s.lru_note_cost_walks > restores, "{} walks for {restores} restores and the reclaim batches", s.lru_note_cost_walks);
    assert_eq!(s.memcg_ancestor_lock_acquisitions, 2 * s.lru_note_cost_walks);
    // Eight readers of one group meet on the two locks.
    assert!(s.memcg_ancestor_lock_contended > 0 && spin_ns(&res) > 0, "contended {} spin {} ns", s.memcg_ancestor_lock_contended, spin_ns(&res));
}

#[test]
fn a_deeper_group_spends_more_on_its_ancestors_locks_and_reads_less() {
    let shallow = run_checked(&file_readers(8, 8, Some("test")), &[]);
    let deep = run_checked(&file_readers(8, 8, Some("a/b/c/d/test")), &[]);
    // The default is a child of the root: one ancestor, as "test".
    let default = run_checked(&file_readers(8, 8, None), &[]);
    assert_eq!(default.summary.memcg_ancestor_lock_acquisitions, default.summary.lru_note_cost_walks);
    assert_eq!(deep.summary.memcg_ancestor_lock_acquisitions, 5 * deep.summary.lru_note_cost_walks);
    assert!(spin_ns(&deep) > spin_ns(&shallow), "spin: 5 levels {} ns, 1 level {} ns", spin_ns(&deep), spin_ns(&shallow));
    assert!(total_touches(&deep) < total_touches(&shallow), "reads: 5 levels {}, 1 level {}", total_touches(&deep), total_touches(&shallow));
}

#[test]
fn from_6_17_a_reclaim_batch_with_nothing_to_note_takes_no_lock() {
    // Only refaults and batches with a cost walk on 6.17+; 5.17-6.16 walk after every batch.
    let old = run_checked(&file_readers(8, 8, Some("user.slice/test")), &["kernel.profile=\"6.16\""]);
    let new = run_checked(&file_readers(8, 8, Some("user.slice/test")), &["kernel.profile=\"6.17\""]);
    let batches = |r: &SimResult| r.summary.lru_note_cost_walks - v(r, "workingset_restore_file");
    assert!(batches(&old) > 0, "6.16 walks after its reclaim batches");
    // Random reads leave clean folios read once: a batch frees all it scanned, writes
    // nothing, and 6.17 (cost nr_io * 32 + nr_rotated = 0) takes no lock for it.
    assert!(v(&new, "pgsteal_file") > 1_000);
    assert!(batches(&new) * 10 < batches(&old), "reclaim walks: 6.17 {}, 6.16 {}", batches(&new), batches(&old));
}

#[test]
fn mglru_and_the_roots_own_tasks_take_no_ancestors_lock() {
    let mglru = run_checked(&file_readers(8, 8, Some("user.slice/test")), &["kernel.profile=\"6.1\"", "kernel.reclaim=\"mglru\""]);
    assert!(v(&mglru, "pgsteal_file") > 1_000);
    assert_eq!((mglru.summary.lru_note_cost_walks, mglru.summary.memcg_ancestor_lock_acquisitions), (0, 0));
    // No memory cgroup: the tasks are the root's, whose lruvec has no parent.
    let root = run_checked(&file_readers(8, 8, None).replace("memcg_limit = \"4MiB\"\n", "").replace("ram = \"64MiB\"", "ram = \"16MiB\""), &[]);
    assert!(v(&root, "pgsteal_file") > 1_000 && root.summary.lru_note_cost_walks > 0, "global reclaim notes costs in the root's lruvec");
    assert_eq!(root.summary.memcg_ancestor_lock_acquisitions, 0);
}

#[test]
fn a_memcg_path_needs_a_limit_and_names_cgroups() {
    let no_limit = file_readers(2, 2, Some("user.slice/test")).replace("memcg_limit = \"4MiB\"\n", "");
    let err = swaplab_core::config::load(&no_limit, "t.toml", &[]).expect_err("a path without a limit must be refused");
    assert!(err.to_string().contains("machine.memcg_path") && err.to_string().contains("memcg_limit"), "{err}");
    for bad in ["/user.slice/test", "user.slice//test", "a/../b", ""] {
        let err = swaplab_core::config::load(&file_readers(2, 2, Some(bad)), "t.toml", &[]).err().unwrap_or_else(|| panic!("{bad:?} must be refused"));
        assert!(err.to_string().contains("machine.memcg_path"), "{bad:?}: {err}");
    }
}
