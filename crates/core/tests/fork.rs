//! Forked processes sharing anonymous memory copy-on-write (`fork_of`, engine/fork.rs,
//! mm/anon_vma.rs): fork maps every page in parent and children, the rmap walk of a shared
//! folio visits every VMA of its anon_vma tree, a write copies the page out of the shared
//! mapping (or, by the last user, moves it into the writer's anon_vma), and reclaim unmaps a
//! shared folio from every mapping. What the walks cost is tested where they are charged
//! (reclaim/pageout.rs, `rmap_tests`).

mod common;
use common::*;
use swaplab_core::engine::Sim;
use swaplab_core::mm::{pte_frame, Mappings, Owner, PTE_PRESENT, PTE_SWAP, PTE_WRITE};

const RENDERERS: u32 = 3;

/// The fork family (tests/data/fork-family.toml): a zygote's heap of `zygote_mib`, read by
/// `RENDERERS` children (`child_ratio` of their touches write), and a foreground task writing
/// `hog_mib` that ends the run.
const FAMILY: &str = include_str!("data/fork-family.toml");

fn family_overrides(zygote_mib: u32, child_ratio: f64, hog_mib: u32) -> Vec<String> {
    vec![format!("task.0.mapping.0.size=\"{zygote_mib}MiB\""), format!("task.1.phase.0.write_ratio={child_ratio:?}"), format!("task.2.mapping.0.size=\"{hog_mib}MiB\"")]
}

fn run(toml: &str, overrides: &[String]) -> (Sim, swaplab_core::stats::result::SimResult) {
    let ov: Vec<&str> = overrides.iter().map(|s| s.as_str()).collect();
    let r = load(toml, &ov);
    let (sim, res) = run_resolved(&r);
    let errs = sim.check_invariants();
    assert!(errs.is_empty(), "invariants broken ({overrides:?}):\n  {}", errs.join("\n  "));
    (sim, res)
}

/// The VMA of the zygote's heap and of each renderer's copy of it (their first mapping).
fn heap_vmas(sim: &Sim) -> (u32, Vec<u32>) {
    let zygote = sim.tasks.iter().find(|t| t.name == "zygote").expect("zygote").vmas[0];
    let children = sim.tasks.iter().filter(|t| t.name == "renderer").map(|t| t.vmas[0]).collect();
    (zygote, children)
}

fn mappings_of(sim: &Sim, f: u32) -> Mappings {
    let fr = sim.mem.frames[f as usize];
    assert_eq!(fr.owner_kind(), Owner::Anon, "frame {f} is a mapped anonymous folio");
    sim.mem.anon_mappings(f, fr.owner, fr.index)
}

#[test]
fn fork_maps_every_page_read_only_in_parent_and_children_and_the_rmap_walk_visits_every_vma() {
    let (sim, _) = run(FAMILY, &family_overrides(2, 0.0, 1));
    let (zygote, children) = heap_vmas(&sim);
    let pages = sim.mem.vmas[zygote as usize].ptes.len();
    for i in 0..pages {
        let pte = sim.mem.vmas[zygote as usize].ptes[i];
        assert!(pte & PTE_PRESENT != 0 && pte & PTE_WRITE == 0, "page {i}: the parent's PTE is write-protected by fork");
        let f = pte_frame(pte);
        for &c in &children {
            let cp = sim.mem.vmas[c as usize].ptes[i];
            assert!(cp & PTE_PRESENT != 0 && cp & PTE_WRITE == 0 && pte_frame(cp) == f, "page {i}: child VMA {c} maps the parent's folio read-only");
        }
        let m = mappings_of(&sim, f);
        assert_eq!(m, Mappings { mapcount: RENDERERS + 1, visits: RENDERERS + 1 }, "page {i}: mapped by the zygote and every renderer, the walk visits all four VMAs");
    }
    // Each child's own memory, allocated after the fork, is in its own anon_vma: one visit
    // (its mappings: the zygote's heap and stack, then its own).
    for t in sim.tasks.iter().filter(|t| t.name == "renderer") {
        let own = t.vmas[2];
        let f = pte_frame(sim.mem.vmas[own as usize].ptes.iter().copied().find(|p| p & PTE_PRESENT != 0).expect("the child touched its own memory"));
        assert_eq!(mappings_of(&sim, f), Mappings { mapcount: 1, visits: 1 });
    }
}

#[test]
fn a_cow_break_moves_the_folio_out_of_the_shared_mapping() {
    let (sim, _) = run(FAMILY, &family_overrides(2, 1.0, 1));
    let (zygote, children) = heap_vmas(&sim);
    for i in 0..sim.mem.vmas[zygote as usize].ptes.len() {
        let original = pte_frame(sim.mem.vmas[zygote as usize].ptes[i]);
        // Every renderer wrote: each has a copy of its own, writable, in its own anon_vma.
        for &c in &children {
            let cp = sim.mem.vmas[c as usize].ptes[i];
            let copy = pte_frame(cp);
            assert!(cp & PTE_WRITE != 0 && copy != original, "page {i}: child VMA {c} writes its own copy");
            assert_eq!(sim.mem.frames[copy as usize].owner, c, "page {i}: the copy belongs to the writer's anon_vma");
            assert_eq!(mappings_of(&sim, copy), Mappings { mapcount: 1, visits: 1 });
        }
        // The original is the zygote's alone; the zygote is first in its tree: one visit.
        assert_eq!(mappings_of(&sim, original), Mappings { mapcount: 1, visits: 1 }, "page {i}");
    }
}

/// Before anon_vma chains (2.6.28 .. 2.6.33) a child's VMA joins its parent's one anon_vma, so
/// the copies the children write stay in it: the walk of the k-th child's copy visits the
/// parent and the k - 1 children forked before it (`page_referenced_anon` from the list head),
/// where 6.x visits the child alone (a_cow_break_moves_the_folio_out_of_the_shared_mapping).
#[test]
fn before_anon_vma_chains_a_childs_copy_stays_in_the_parents_anon_vma_and_its_walk_visits_the_earlier_forks() {
    let mut ov = family_overrides(2, 1.0, 1);
    ov.push("kernel.profile=\"2.6.28\"".into());
    let (sim, _) = run(FAMILY, &ov);
    let (zygote, children) = heap_vmas(&sim);
    for i in 0..sim.mem.vmas[zygote as usize].ptes.len() {
        let original = pte_frame(sim.mem.vmas[zygote as usize].ptes[i]);
        for (k, &c) in children.iter().enumerate() {
            let copy = pte_frame(sim.mem.vmas[c as usize].ptes[i]);
            assert_ne!(copy, original, "page {i}: child VMA {c} writes its own copy");
            assert_eq!(mappings_of(&sim, copy), Mappings { mapcount: 1, visits: k as u32 + 2 }, "page {i}: child {k}'s copy is found after the zygote and {k} earlier children");
        }
        assert_eq!(mappings_of(&sim, original), Mappings { mapcount: 1, visits: 1 }, "page {i}: the zygote is the list's head");
    }
    // The children's own memory, allocated after the fork, is in their own (unshared) VMA.
    for t in sim.tasks.iter().filter(|t| t.name == "renderer") {
        let own = t.vmas[2];
        let f = pte_frame(sim.mem.vmas[own as usize].ptes.iter().copied().find(|p| p & PTE_PRESENT != 0).expect("the child touched its own memory"));
        assert_eq!(mappings_of(&sim, f), Mappings { mapcount: 1, visits: 1 });
    }
}

#[test]
fn the_last_user_writing_a_shared_page_reuses_it_and_moves_it_into_its_own_anon_vma() {
    // One renderer; the zygote writes its heap again after the fork (copying every page), so
    // the originals are the renderer's alone, still in the zygote's anon_vma. The renderer's
    // own write then reuses each one (no allocation) and moves it into its anon_vma.
    let mut toml = FAMILY.replace("instances = 3", "instances = 1").replace("start_delay = \"200ms\"", "start_delay = \"1s\"");
    toml = toml.replace(
        "[[task.phase]]\nmapping = \"stack\"",
        "[[task.phase]]\nmapping = \"stack\"\npattern = \"random\"\ntouches = 2\ncompute = \"50ms\"\n[[task.phase]]\nmapping = \"zygote-heap\"\npattern = \"sequential\"\n[[task.phase]]\nmapping = \"stack\"",
    );
    toml = toml.replace(
        "[[task.phase]]\nmapping = \"own\"",
        "[[task.phase]]\nmapping = \"own\"\npattern = \"random\"\ntouches = 2\ncompute = \"100ms\"\n[[task.phase]]\nmapping = \"zygote-heap\"\npattern = \"sequential\"\n[[task.phase]]\nmapping = \"own\"",
    );
    let (sim, res) = run(&toml, &family_overrides(1, 0.0, 1));
    let (zygote, children) = heap_vmas(&sim);
    let child = children[0];
    let pages = sim.mem.vmas[zygote as usize].ptes.len() as u64;
    for i in 0..pages as usize {
        let mine = pte_frame(sim.mem.vmas[child as usize].ptes[i]);
        assert_ne!(mine, pte_frame(sim.mem.vmas[zygote as usize].ptes[i]), "page {i}");
        assert_eq!(sim.mem.frames[mine as usize].owner, child, "page {i}: moved into the renderer's anon_vma");
        assert_eq!(mappings_of(&sim, mine), Mappings { mapcount: 1, visits: 1 });
    }
    // Allocations: the zygote's heap twice (first touch, then its copies), at most all of
    // the two small mappings, and the hog; copies by the renderer would add its heap again.
    let small = 2 * 16;
    assert!(v(&res, "pgalloc_normal") <= 2 * pages + small + MIB_PAGES, "the renderer's writes reused the pages: {} allocations", v(&res, "pgalloc_normal"));
}

#[test]
fn reclaim_unmaps_a_shared_folio_from_every_mapping() {
    for reclaim in ["classic", "mglru"] {
        let mut ov = family_overrides(40, 0.0, 64);
        ov.push(format!("kernel.reclaim=\"{reclaim}\""));
        // 40 MiB shared by four processes (referenced in all four, so active), then 64 MiB
        // written three times in 60: the idle shared heap goes to swap.
        let hog = "mapping = \"m\"\npattern = \"sequential\"\n";
        let toml = FAMILY.replace(hog, &format!("{hog}cycles = 3\n"));
        let (sim, _) = run(&toml, &ov);
        let (zygote, children) = heap_vmas(&sim);
        let mut swapped = 0u64;
        for i in 0..sim.mem.vmas[zygote as usize].ptes.len() {
            let pte = sim.mem.vmas[zygote as usize].ptes[i];
            if pte & PTE_SWAP == 0 {
                continue;
            }
            swapped += 1;
            for &c in &children {
                assert_eq!(sim.mem.vmas[c as usize].ptes[i], pte, "{reclaim}: page {i}: try_to_unmap replaced every mapping by the one swap entry");
            }
        }
        assert!(swapped > 256, "{reclaim}: the idle shared heap was swapped out ({swapped} pages)");
    }
}

/// Regression (session 38): a swap slot shared by more processes than the map byte counts
/// (`SWAP_MAP_MAX` 62) keeps its count in a continuation, as the kernel does, instead of the
/// model refusing or panicking at fork (hackbench forks 5,600 workers from one parent).
#[test]
fn a_swap_entry_shared_by_more_forks_than_the_map_byte_counts_continues_its_count() {
    const FORKS: u32 = 100;
    let ov = family_overrides(8, 0.0, 64);
    let hog = "mapping = \"m\"\npattern = \"sequential\"\n";
    let toml = FAMILY.replace("instances = 3", &format!("instances = {FORKS}")).replace(hog, &format!("{hog}cycles = 3\n"));
    let (sim, _) = run(&toml, &ov);
    let (zygote, children) = heap_vmas(&sim);
    assert_eq!(children.len(), FORKS as usize);
    let mut beyond = 0u32;
    for &pte in &sim.mem.vmas[zygote as usize].ptes {
        if pte & PTE_SWAP == 0 {
            continue;
        }
        let count = sim.swap.areas[swaplab_core::mm::swp_dev(pte)].count(swaplab_core::mm::swp_slot(pte));
        assert_eq!(count, FORKS + 1, "the parent and every child hold the swap entry");
        beyond += 1;
    }
    assert!(beyond > 256, "the idle shared heap was swapped out while shared by {} processes ({beyond} pages)", FORKS + 1);
}

#[test]
fn fork_of_names_an_earlier_task_with_one_instance() {
    let base = FAMILY;
    for (from, to, why) in [
        ("fork_of = \"zygote\"", "fork_of = \"nobody\"", "no such task"),
        ("fork_of = \"zygote\"", "fork_of = \"hog\"", "must come before"),
        ("name = \"zygote\"\nbackground = true", "name = \"zygote\"\ninstances = 2\nbackground = true", "a parent to fork from must have one"),
        ("[[task.mapping]]\nname = \"own\"", "[[task.mapping]]\nname = \"zygote-heap\"", "inherited from"),
    ] {
        let toml = base.replace(from, to);
        let err = swaplab_core::config::load(&toml, "test.toml", &[]).expect_err(why).to_string();
        assert!(err.contains(why) && err.contains("task.1"), "{why}: {err}");
    }
}
