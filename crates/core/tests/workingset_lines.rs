//! The workingset counters' cache lines (reclaim/workingset_lines.rs): the classic LRU adds to
//! `nonresident_age` of its group's lruvec and of every ancestor's at each eviction and
//! activation, MGLRU to its group's `evicted[]` / `refaulted[]` only; readers and reclaimers on
//! many CPUs pull those lines from each other and wait for them.

mod common;
use common::*;
use swaplab_core::stats::result::SimResult;

/// `jobs` fio-like tasks on `cpus` CPUs, each reading its own 2 MiB file at random through
/// read() for 50 ms, in a 4 MiB memory cgroup at `path`.
fn readers(cpus: u32, jobs: u32, path: &str, policy: &str) -> String {
    let profile = if policy == "mglru" { "6.1" } else { "5.17" };
    format!(
        "name = \"readers\"\nseed = 5\n[machine]\ncpus = {cpus}\nram = \"64MiB\"\nkernel_reserved = \"4MiB\"\nmemcg_limit = \"4MiB\"\nmemcg_path = \"{path}\"\nfile_device = \"ramdisk\"\n\
         [kernel]\nprofile = \"{profile}\"\nreclaim = \"{policy}\"\n[[task]]\nname = \"fio\"\ninstances = {jobs}\ntime_limit = \"50ms\"\nrepeat = true\n\
         [[task.mapping]]\nname = \"file\"\nkind = \"file\"\nsize = \"2MiB\"\nadvice = \"random\"\n\
         [[task.phase]]\nmapping = \"file\"\npattern = \"random\"\naccess = \"syscall\"\nwrite_ratio = 0.0\n"
    )
}

fn per_steal(res: &SimResult) -> f64 {
    res.summary.workingset_line_adds as f64 / v(res, "pgsteal_file") as f64
}

#[test]
fn the_classic_lru_adds_on_its_group_and_every_ancestor_at_each_eviction_and_activation() {
    let res = run_checked(&readers(8, 8, "user.slice/test", "classic"), &[]);
    let s = &res.summary;
    let steal = v(&res, "pgsteal_file");
    assert!(steal > 1_000, "16 MiB of files in a 4 MiB memcg: {steal}");
    // Three lines (test, user.slice, root) per evicted folio, and per activation (counted
    // ones, and second reads of a folio still in its CPU's LRU-add batch).
    assert!(s.workingset_line_adds > 3 * steal, "{} adds, {steal} evictions", s.workingset_line_adds);
    assert_eq!(s.workingset_line_adds % 3, 0, "each add walks the three lruvecs");
    // Eight CPUs pull the lines from each other.
    assert!(s.workingset_line_waited > 0 && s.workingset_line_wait_s > 0.0 && s.workingset_line_cpu_s > s.workingset_line_wait_s, "{s:?}");
    // One level deeper, one more line per walk.
    let deep = run_checked(&readers(8, 8, "a/user.slice/test", "classic"), &[]);
    assert!(per_steal(&deep) > per_steal(&res) * 1.2, "adds per eviction: 3 ancestors {:.2}, 2 {:.2}", per_steal(&deep), per_steal(&res));
}

#[test]
fn mglru_adds_once_per_eviction_and_recent_refault_on_its_own_group() {
    let mglru = run_checked(&readers(8, 8, "user.slice/test", "mglru"), &[]);
    let classic = run_checked(&readers(8, 8, "user.slice/test", "classic"), &[]);
    let s = &mglru.summary;
    let (steal, refaults) = (v(&mglru, "pgsteal_file"), v(&mglru, "workingset_refault_file"));
    assert!(s.workingset_line_adds >= steal && s.workingset_line_adds <= steal + refaults, "{} adds, {steal} evictions, {refaults} refaults", s.workingset_line_adds);
    assert!(per_steal(&mglru) < per_steal(&classic) / 2.0, "adds per eviction: MGLRU {:.2}, classic {:.2}", per_steal(&mglru), per_steal(&classic));
    let cpu_per = |r: &SimResult| r.summary.workingset_line_cpu_s / v(r, "pgsteal_file") as f64;
    assert!(cpu_per(&mglru) < cpu_per(&classic), "line CPU per eviction: MGLRU {:.3e} s, classic {:.3e} s", cpu_per(&mglru), cpu_per(&classic));
}

#[test]
fn lines_do_not_move_on_one_cpu_nor_before_5_15() {
    let one = run_checked(&readers(1, 4, "user.slice/test", "classic"), &[]);
    assert!(v(&one, "pgsteal_file") > 1_000);
    assert_eq!((one.summary.workingset_line_adds, one.summary.workingset_line_cpu_s), (0, 0.0), "a line never leaves the only CPU");
    let old = run_checked(&readers(8, 8, "user.slice/test", "classic"), &["kernel.profile=\"4.14\""]);
    assert!(v(&old, "pgsteal_file") > 1_000);
    assert_eq!(old.summary.workingset_line_adds, 0, "not modelled before the 5.9 walk's era");
}
