//! The CPU a buffered write() pays for a page that is not in the page cache yet
//! (`costs.new_page_write_ns`: folio allocation, charge, the file system's write_begin for a
//! new block), on top of a cached page's `syscall_page_ns`; `swaplab calibrate` measures both.

mod common;
use common::{load, run_resolved};

/// One task writing an 8 MiB file with write() on a machine far larger: no reclaim, no dirty
/// throttling (the dirty limit is well above 8 MiB).
const WRITER: &str = r#"
name = "t"
seed = 1
[machine]
cpus = 1
ram = "1GiB"
[[task]]
name = "w"
[[task.mapping]]
name = "f"
kind = "file"
size = "8MiB"
[[task.phase]]
mapping = "f"
pattern = "sequential"
write_ratio = 1.0
access = "syscall"
"#;

fn writer_elapsed(new_page_write_ns: u64) -> u64 {
    let r = load(WRITER, &[&format!("costs.new_page_write_ns={new_page_write_ns}")]);
    let (_, res) = run_resolved(&r);
    res.tasks[0].elapsed_ns
}

#[test]
fn a_write_into_a_new_page_pays_the_new_page_cost_once_per_page() {
    let pages = 8 << 20 >> 12;
    let cheap = writer_elapsed(0);
    let dear = writer_elapsed(10_000);
    assert_eq!(dear - cheap, pages * 10_000, "each of the {pages} new pages pays new_page_write_ns once");
}
