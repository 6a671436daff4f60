//! Where a swapped-in anonymous page enters the LRU, by era: 4.8–5.8 `do_swap_page` calls
//! `activate_page` as it maps a page from the swap cache (Minchan Kim, "mm: move swap-in
//! anonymous page into active list", 4.8; removed by 5.9's "mm/vmscan: protect the workingset
//! on anonymous LRU"), so under the 4.14 profile the page is on the active list once mapped.
//! 3.14 left it where the swap cache put it, on the inactive list.

mod common;
use common::*;

/// "a" writes 16 MiB and waits; "b" then writes 40 MiB in 32 MiB of RAM, pushing "a" out to
/// swap, and exits; "a" reads its 16 MiB back (swap-ins with free memory, so no reclaim moves
/// the pages after) and then idles on one page for 300 ms, long enough for samples.
const SWAP_BACK_IN: &str = r#"
name = "swap-back-in"
seed = 5
[machine]
cpus = 2
ram = "32MiB"
kernel_reserved = "4MiB"
[[swap]]
device = "nvme"
size = "64MiB"
[[channel]]
name = "a-done"
capacity = "4KiB"
[[channel]]
name = "b-done"
capacity = "4KiB"
[[task]]
name = "a"
[[task.mapping]]
name = "m"
kind = "anon"
size = "16MiB"
[[task.mapping]]
name = "idle"
kind = "anon"
size = "4KiB"
[[task.phase]]
mapping = "m"
pattern = "sequential"
[[task.phase]]
mapping = "idle"
pattern = "send"
channel = "a-done"
index = "zero"
bytes = 1
messages = 1
[[task.phase]]
mapping = "idle"
pattern = "recv"
channel = "b-done"
index = "zero"
messages = 1
[[task.phase]]
mapping = "m"
pattern = "sequential"
write_ratio = 0.0
[[task.phase]]
mapping = "idle"
pattern = "sequential"
cycles = 3000
compute = "100us"
[[task]]
name = "b"
[[task.mapping]]
name = "m"
kind = "anon"
size = "40MiB"
[[task.phase]]
mapping = "m"
pattern = "recv"
channel = "a-done"
index = "zero"
messages = 1
[[task.phase]]
mapping = "m"
pattern = "sequential"
[[task.phase]]
mapping = "m"
pattern = "send"
channel = "b-done"
index = "zero"
bytes = 1
messages = 1
"#;

/// "a"'s pages: 16 MiB and the idle page.
const A_PAGES: u64 = 4097;

/// The active and inactive anonymous pages at the last time-series sample ("a" idling).
fn last_anon_lists(res: &swaplab_core::stats::result::SimResult) -> (u64, u64) {
    let ts = &res.timeseries;
    (*ts.nr_active_anon.last().expect("samples"), *ts.nr_inactive_anon.last().expect("samples"))
}

/// (active, inactive) anonymous pages once "a" swapped back in under `profile`.
fn anon_lists_after_swapping_back_in(profile: &str) -> (u64, u64) {
    let res = run_checked(SWAP_BACK_IN, &[&format!("kernel.profile=\"{profile}\"")]);
    let swapped_in = v(&res, "pswpin");
    assert!(swapped_in >= 2048, "\"a\" must swap at least half of its 4096 pages back in (pswpin {swapped_in})");
    last_anon_lists(&res)
}

#[test]
fn swapped_in_anon_pages_are_activated_from_4_8_to_5_8() {
    let (active, inactive) = anon_lists_after_swapping_back_in("4.14");
    assert!(
        active >= A_PAGES - 64 && inactive < 64,
        "4.14: every page mapped from the swap cache is activated: active {active}, inactive {inactive}"
    );
}

#[test]
fn swapped_in_anon_pages_stay_inactive_on_3_14() {
    let (active, inactive) = anon_lists_after_swapping_back_in("3.14");
    assert!(
        inactive >= A_PAGES - 64 && active < 64,
        "3.14: swapped-in pages stay on the inactive list: active {active}, inactive {inactive}"
    );
}
