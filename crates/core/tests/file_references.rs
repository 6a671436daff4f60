//! `folio_check_references` for mapped file pages, per era (reclaim/pageout.rs), and the
//! VM_EXEC rules (`exec = true` mappings): a program streams once through a mapped file four
//! times the size of memory, so every page reclaim meets on the inactive list was referenced
//! exactly once, by the fault that mapped it.

mod common;
use common::*;
use swaplab_core::stats::result::SimResult;

const STREAM: &str = r#"
name = "file-references"
seed = 3
[machine]
cpus = 1
ram = "96MiB"
kernel_reserved = "16MiB"
[kernel]
profile = "6.x"
[[task]]
name = "reader"
[[task.mapping]]
name = "f"
kind = "file"
size = "320MiB"
[[task.phase]]
mapping = "f"
pattern = "sequential"
write_ratio = 0.0
"#;

fn stream(profile: &str, exec: bool) -> SimResult {
    let p = format!("kernel.profile=\"{profile}\"");
    let e = format!("task.0.mapping.0.exec={exec}");
    run_checked(STREAM, &[p.as_str(), e.as_str()])
}

/// Pages activated per page scanned from the inactive file list.
fn activated_share(r: &SimResult) -> f64 {
    v(r, "pgactivate") as f64 / v(r, "pgscan_file").max(1) as f64
}

#[test]
fn a_mapped_file_page_referenced_once_is_activated_before_2_6_34() {
    // 2.6.28: `referenced && page_mapping_inuse(page)` activates it.
    let r = stream("2.6.28", false);
    assert!(v(&r, "pgscan_file") > 20_000, "too little reclaim to judge: {}", v(&r, "pgscan_file"));
    assert!(activated_share(&r) > 0.5, "2.6.28 activated {:.2} of the scanned pages", activated_share(&r));
}

#[test]
fn a_file_used_only_through_read_is_not_in_use_on_2_6_28() {
    // read() leaves PG_referenced (mark_page_accessed), but no process maps the file
    // (`mapping_mapped` is false): the referenced page is reclaimed if clean, not activated.
    let r = run_checked(&STREAM.replace("write_ratio = 0.0", "write_ratio = 0.0\naccess = \"syscall\""), &["kernel.profile=\"2.6.28\""]);
    assert!(v(&r, "pgscan_file") > 20_000, "too little reclaim to judge: {}", v(&r, "pgscan_file"));
    assert!(activated_share(&r) < 0.05, "2.6.28 activated {:.2} of the scanned read() pages", activated_share(&r));
}

#[test]
fn a_mapped_file_page_referenced_once_gets_a_second_look_since_2_6_34() {
    // PG_referenced is set and the page kept; unreferenced on its next scan, it is reclaimed.
    for profile in ["3.14", "6.x"] {
        let r = stream(profile, false);
        assert!(v(&r, "pgscan_file") > 20_000, "{profile}: too little reclaim: {}", v(&r, "pgscan_file"));
        assert!(activated_share(&r) < 0.05, "{profile} activated {:.2} of the scanned pages", activated_share(&r));
    }
}

#[test]
fn an_executable_file_page_referenced_once_is_activated_since_3_3() {
    // Without VM_EXEC the share is under 0.05 (the test above). 6.x reads its inactive:active
    // estimates as of the last statistics flush (reclaim/classic/flushed.rs), so within this
    // sub-second run the active list is deactivated less often and more of the pages scanned
    // are second looks: 0.43 there, over 0.5 on 3.14.
    for (profile, share) in [("3.14", 0.5), ("6.x", 0.35)] {
        let r = stream(profile, true);
        assert!(activated_share(&r) > share, "{profile}: exec pages activated {:.2} of the scanned", activated_share(&r));
    }
}

#[test]
fn the_exec_flag_changes_nothing_on_2_6_28() {
    // Neither VM_EXEC rule exists yet (2.6.31 and 3.3): the two runs are the same run.
    let (a, b) = (text_and_stream("2.6.28", false), text_and_stream("2.6.28", true));
    assert_eq!(a.vmstat, b.vmstat);
    assert_eq!(a.elapsed_ns, b.elapsed_ns);
}

#[test]
fn referenced_executable_pages_stay_on_the_active_list_on_2_6_32() {
    // 2.6.31's shrink_active_list rule, without 3.3's first-reference activation: a program
    // executing its 4 MiB text over and over (2 s) while another task streams a file four
    // times. Text found referenced at the active tail goes back to the active head instead
    // of being deactivated.
    let text = STREAM.replace("cpus = 1", "cpus = 2")
        + "[[task]]\nname = \"app\"\n[[task.mapping]]\nname = \"text\"\nkind = \"file\"\nsize = \"4MiB\"\n\
           [[task.phase]]\nmapping = \"text\"\npattern = \"sequential\"\nwrite_ratio = 0.0\ncycles = 1000\ncompute = \"2us\"\n";
    let run = |exec: &str| run_checked(&text, &["kernel.profile=\"2.6.32\"", "task.0.phase.0.cycles=4", exec]);
    let (plain, exec) = (run("task.1.mapping.0.exec=false"), run("task.1.mapping.0.exec=true"));
    // The active tail's pages scanned (pgrefill) less those deactivated are the ones kept:
    // text pages, and only with VM_EXEC. (Total deactivations are no measure: the stream's
    // ~300k dwarf the text's and move with any change in timing.)
    let kept = |r: &SimResult| v(r, "pgrefill") - v(r, "pgdeactivate");
    assert_eq!(kept(&plain), 0, "without VM_EXEC every page scanned on the active list is deactivated");
    assert!(kept(&exec) > 1024, "referenced text went back to the active head: {} pages kept", kept(&exec));
}

/// A program running its text (a 4 MiB mapping executed in full) before and after each of
/// four streams through a 160 MiB data file, on a 96 MiB machine.
fn text_and_stream(profile: &str, exec: bool) -> SimResult {
    let mut t = STREAM.replace("size = \"320MiB\"", "size = \"160MiB\"");
    t.push_str("[[task.mapping]]\nname = \"text\"\nkind = \"file\"\nsize = \"4MiB\"\n");
    let text_pass = "[[task.phase]]\nmapping = \"text\"\npattern = \"sequential\"\nwrite_ratio = 0.0\n";
    let stream_pass = "[[task.phase]]\nmapping = \"f\"\npattern = \"sequential\"\nwrite_ratio = 0.0\n";
    for _ in 0..4 {
        t.push_str(text_pass);
        t.push_str(stream_pass);
    }
    t.push_str(text_pass);
    let p = format!("kernel.profile=\"{profile}\"");
    let e = format!("task.0.mapping.1.exec={exec}");
    run_checked(&t, &[p.as_str(), e.as_str()])
}

#[test]
fn referenced_executable_text_survives_a_stream_that_evicts_plain_file_pages() {
    // 3.3+ activates VM_EXEC file pages on their first reference (and 2.6.31+ keeps them
    // active while referenced): the text is read from the disk once; a plain mapping of the
    // same file is pushed out by each stream and read again.
    for profile in ["3.14", "6.x"] {
        let (plain, exec) = (text_and_stream(profile, false), text_and_stream(profile, true));
        // KiB read beyond what the exec run read: the text read again, 4096 KiB a time.
        let reread = v(&plain, "pgpgin").saturating_sub(v(&exec, "pgpgin"));
        assert!(reread >= 2 * 4096, "{profile}: the plain text cost {reread} KiB more reads than the exec text ({} vs {} KiB)", v(&plain, "pgpgin"), v(&exec, "pgpgin"));
    }
}

#[test]
fn exec_needs_a_file_mapping() {
    let text = STREAM.replace("kind = \"file\"", "kind = \"anon\"");
    let err = swaplab_core::config::load(&text, "x.toml", &["task.0.mapping.0.exec=true".to_string()]).expect_err("refused");
    assert!(err.to_string().contains("task.0.mapping.0.exec"), "{err}");
}
