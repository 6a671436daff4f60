//! The per-CPU swap slots caches of 4.11 .. 6.10 in a real run (swap/slots_cache.rs,
//! kernel-algorithms.md §2.2): a slot freed while the caches are in use waits in the freeing
//! CPU's return cache, still allocated, until 64 go back together (`free_swap_slot`); 6.11+
//! frees it at once.

mod common;
use common::{load, run_resolved, BASE};

/// BASE with 20 MiB of swap: the random pass fills more than half of it, so every swap-in frees
/// its slot (`vm_swap_full`, §2.5) while the caches stay in use (more than 2 x 64 slots free).
fn run(profile: &str, extra: &[&str]) -> swaplab_core::engine::Sim {
    let profile = format!("kernel.profile=\"{profile}\"");
    let mut sets = vec![profile.as_str(), "swap.0.size=\"20MiB\"", "task.0.phase.0.pattern=\"random\""];
    sets.extend_from_slice(extra);
    let (sim, res) = run_resolved(&load(BASE, &sets));
    let swapins = res.vmstat["pswpin"] + res.vmstat.get("zswpin").copied().unwrap_or(0);
    assert!(swapins > 1000, "the run swaps in ({swapins} pages from the device or zswap)");
    let errs = sim.check_invariants();
    assert!(errs.is_empty(), "invariants: {}", errs.join("; "));
    sim
}

#[test]
fn freed_slots_wait_in_the_cpu_return_cache_before_6_11() {
    let sim = run("4.14", &[]);
    let area = &sim.swap.areas[0];
    let waiting: Vec<u32> = area.returning_slots().collect();
    assert!(!waiting.is_empty() && waiting.len() <= 64, "1..=64 freed slots wait on the one CPU: {}", waiting.len());
    for &s in &waiting {
        assert!(!area.in_use(s) && area.held_by_slots_cache(s), "slot {s}: freed but not free to the allocator");
    }
    let free = area.free_slots();
    let map_free = (1..area.slots).filter(|&s| !area.in_use(s) && !area.held_by_slots_cache(s)).count() as u64;
    assert_eq!(free, map_free, "the free count leaves out the slots waiting to go back");
    let sim = run("6.x", &[]);
    assert_eq!(sim.swap.areas[0].returning_slots().count(), 0, "6.11+ frees a slot at once");
}

#[test]
fn zswap_keeps_the_pages_of_slots_waiting_in_a_return_cache() {
    // The invariants (checked by `run`) accept a stored page only for a slot in use or one
    // held by a return cache; the store forgets it when the batch goes back.
    let sim = run("4.14", &["zswap.enabled=true", "content.zero_fraction=0.1", "content.ratio=3.0"]);
    assert!(sim.swap.areas[0].returning_slots().count() > 0);
}
