//! Where a swapped-in anonymous page enters the LRU, by era: 4.8–5.8 `do_swap_page` calls
//! `activate_page` as it maps a page from the swap cache (Minchan Kim, "mm: move swap-in
//! anonymous page into active list", 4.8; removed by 5.9's "mm/vmscan: protect the workingset
//! on anonymous LRU"), so under the 4.14 profile the page is on the active list once mapped.
//! 3.14 left it where the swap cache put it, on the inactive list.

mod common;
use common::*;
use swaplab_core::mm::{Frame, Owner, PG_ACTIVE, PG_LRU, PG_SWAPBACKED, PG_SWAPCACHE};

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

/// The anonymous lists at the last time-series sample ("a" idling), and the orphans on them.
#[derive(Debug)]
struct AnonLists {
    active: u64,
    inactive: u64,
    /// Of the inactive pages, "b"'s orphaned swap-cache folios (see below).
    orphans: u64,
}

impl AnonLists {
    /// "a"'s own pages on the inactive list.
    fn inactive_of_a(&self) -> u64 {
        self.inactive - self.orphans
    }
}

/// The lists once "a" swapped back in under `profile`.
///
/// "b" exits while some of its swap writes are still in flight: `free_swap_and_cache` cannot
/// drop a folio under writeback (`__try_to_reclaim_swap`), so such a folio stays in the swap
/// cache, mapped by nobody, on the inactive list, until reclaim takes it — with free memory,
/// never in this run. How many there are depends on when "b"'s last reclaim ran, not on where
/// a swap-in goes, so they are counted (once "a" too has exited, the unmapped swap-cache
/// folios left on the lists) and the assertions are on "a"'s pages.
fn anon_lists_after_swapping_back_in(profile: &str) -> AnonLists {
    let r = load(SWAP_BACK_IN, &[&format!("kernel.profile=\"{profile}\"")]);
    let (sim, res) = run_resolved(&r);
    let errs = sim.check_invariants();
    assert!(errs.is_empty(), "{profile}: invariants broken:\n  {}", errs.join("\n  "));
    let swapped_in = v(&res, "pswpin");
    assert!(swapped_in >= 2048, "\"a\" must swap at least half of its 4096 pages back in (pswpin {swapped_in})");
    let left: Vec<_> = sim.mem.frames.iter().filter(|f| f.has(PG_LRU) && f.has(PG_SWAPBACKED)).collect();
    let orphan = |f: &&Frame| f.owner_kind() == Owner::None && f.has(PG_SWAPCACHE) && !f.has(PG_ACTIVE);
    assert!(left.iter().all(orphan), "{profile}: after every task exited, an anonymous page on the LRU that is not an orphaned inactive swap-cache folio");
    let ts = &res.timeseries;
    let lists = AnonLists { active: *ts.nr_active_anon.last().expect("samples"), inactive: *ts.nr_inactive_anon.last().expect("samples"), orphans: left.len() as u64 };
    assert!(lists.orphans <= lists.inactive, "{profile}: {lists:?}");
    lists
}

#[test]
fn swapped_in_anon_pages_are_activated_from_4_8_to_5_8() {
    let l = anon_lists_after_swapping_back_in("4.14");
    assert!(
        l.active >= A_PAGES - 64 && l.inactive_of_a() < 64,
        "4.14: every page mapped from the swap cache is activated: {l:?}"
    );
}

#[test]
fn swapped_in_anon_pages_stay_inactive_on_3_14() {
    let l = anon_lists_after_swapping_back_in("3.14");
    assert!(
        l.inactive_of_a() >= A_PAGES - 64 && l.active < 64,
        "3.14: swapped-in pages stay on the inactive list: {l:?}"
    );
}
