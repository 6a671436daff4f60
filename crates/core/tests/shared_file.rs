//! A file mapped by several processes (`file = "NAME"`, config/shared_file.rs, mm/i_mmap.rs):
//! one inode whose page cache holds each page once, every mapper's VMA in its i_mmap tree, a
//! process that exits leaves the file to the others, and reclaim of its pages keeps every
//! mapping consistent. What the rmap walks cost is tested where they are charged
//! (reclaim/pageout.rs, `rmap_tests`).

mod common;
use common::*;
use swaplab_core::config;
use swaplab_core::engine::Sim;
use swaplab_core::mm::{pte_frame, Mappings, Owner, PG_ACTIVE, PG_REFERENCED, PTE_PRESENT};

/// tests/data/shared-binary.toml: a launcher that runs the 2 MiB binary `app` and exits, three
/// renderers that run it and stay, a hog that ends the run.
const SHARED_BINARY: &str = include_str!("data/shared-binary.toml");
const APP_PAGES: usize = 512;

fn run(overrides: &[&str]) -> (Sim, swaplab_core::stats::result::SimResult) {
    run_text(SHARED_BINARY, overrides)
}

fn run_text(text: &str, overrides: &[&str]) -> (Sim, swaplab_core::stats::result::SimResult) {
    let r = load(text, overrides);
    let (sim, res) = run_resolved(&r);
    let errs = sim.check_invariants();
    assert!(errs.is_empty(), "invariants broken ({overrides:?}):\n  {}", errs.join("\n  "));
    check_relations(&res, &r, &format!("{overrides:?}"));
    (sim, res)
}

/// The text VMA (first mapping) of every task named `name`.
fn text_vmas(sim: &Sim, name: &str) -> Vec<u32> {
    sim.tasks.iter().filter(|t| t.name == name).map(|t| t.vmas[0]).collect()
}

#[test]
fn one_file_mapped_by_four_processes_is_one_inode_whose_page_cache_holds_each_page_once() {
    let (sim, res) = run(&[]);
    let renderers = text_vmas(&sim, "renderer");
    let launcher = text_vmas(&sim, "launcher")[0];
    let obj = sim.mem.vmas[launcher as usize].object;
    assert!(renderers.iter().all(|&v| sim.mem.vmas[v as usize].object == obj), "every mapping of `app` maps one inode");
    assert_eq!(sim.mem.objects.iter().filter(|o| o.kind == config::MappingKind::File).count(), 1);
    // Read from the file device once, whoever faulted first: 2 MiB, not four times that.
    assert_eq!(v(&res, "pgpgin"), (APP_PAGES * 4) as u64, "KiB read");
    for i in 0..APP_PAGES {
        let ent = sim.mem.objects[obj as usize].entries[i];
        assert!(ent & PTE_PRESENT != 0, "page {i} is in the page cache");
        let f = pte_frame(ent);
        for &v in &renderers {
            assert_eq!(sim.mem.vmas[v as usize].ptes[i], sim.mem.vmas[v as usize].ptes[i] | PTE_PRESENT, "renderer VMA {v} maps page {i}");
            assert_eq!(pte_frame(sim.mem.vmas[v as usize].ptes[i]), f, "renderer VMA {v} maps the page-cache folio of page {i}");
        }
        assert_eq!(sim.mem.file_mappings(f), Mappings { mapcount: 3, visits: 3 }, "page {i}: mapcount 3, the walk visits the three renderers");
    }
}

#[test]
fn a_process_exiting_unlinks_its_vma_from_the_file_and_leaves_the_pages_to_the_other_mappers() {
    let (sim, _) = run(&[]);
    let launcher = text_vmas(&sim, "launcher")[0];
    let renderers = text_vmas(&sim, "renderer");
    let obj = sim.mem.vmas[launcher as usize].object as usize;
    assert_eq!(sim.mem.objects[obj].vmas, renderers, "the i_mmap tree: the renderers, in mmap order, without the launcher");
    assert!(sim.mem.vmas[launcher as usize].ptes.iter().all(|&p| p == 0), "the launcher's page tables are gone");
    let cached = sim.mem.objects[obj].entries.iter().filter(|&&e| e & PTE_PRESENT != 0).count();
    assert_eq!(cached, APP_PAGES, "the file's pages stay for its other mappers");
    // zap_present_pte: each page the launcher mapped young gave the folio its reference (the
    // run has no memory pressure, so nothing else cleared or set them).
    for (i, &e) in sim.mem.objects[obj].entries.iter().enumerate() {
        let fr = sim.mem.frames[pte_frame(e) as usize];
        assert!(fr.has(PG_REFERENCED) || fr.has(PG_ACTIVE), "page {i}: the launcher's young PTE was not passed to the folio");
    }
}

#[test]
fn reclaim_under_pressure_unmaps_shared_file_pages_from_every_mapper() {
    // Without swap, a 58 MiB hog on 60 MiB of usable RAM: the idle renderers' text is what
    // reclaim can take.
    let (sim, res) = run_text(&no_swap(SHARED_BINARY), &["task.2.mapping.0.size=\"58MiB\""]);
    assert!(v(&res, "pgsteal_file") > 0, "file pages were reclaimed");
    let renderers = text_vmas(&sim, "renderer");
    let obj = sim.mem.vmas[renderers[0] as usize].object as usize;
    let mut evicted = 0;
    for i in 0..APP_PAGES {
        let ent = sim.mem.objects[obj].entries[i];
        if ent & PTE_PRESENT == 0 {
            evicted += 1;
            assert!(renderers.iter().all(|&v| sim.mem.vmas[v as usize].ptes[i] == 0), "page {i} left the page cache while still mapped");
        } else {
            assert_eq!(sim.mem.frames[pte_frame(ent) as usize].owner_kind(), Owner::File);
        }
    }
    assert!(evicted > 0, "some of the binary was evicted");
}

fn refused(overrides: &[&str]) -> config::ConfigError {
    let ovs: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    config::load(SHARED_BINARY, "w.toml", &ovs).expect_err("must be refused")
}

#[test]
fn mappings_of_one_file_that_disagree_on_its_size_are_refused_naming_the_field() {
    let e = refused(&["task.1.mapping.0.size=\"4MiB\""]);
    assert_eq!(e.key, "task.1.mapping.0.size");
    assert!(e.message.contains("\"app\""), "{}", e.message);
}

#[test]
fn a_file_name_on_an_anonymous_mapping_is_refused() {
    let e = refused(&["task.1.mapping.1.file=\"app\""]);
    assert_eq!(e.key, "task.1.mapping.1.file");
}

/// The scan heuristics' statistics per era (config::reclaim_stats_ratelimited): 6.12+ reads
/// the lruvec sizes as of the last periodic flush (up to 2 s old), 5.16-6.11 flushed first and
/// read them exact. Here the renderers' 16 MiB binary is activated on its first scan
/// (VM_EXEC) and its inactive list empties within a flush period: with exact sizes
/// `inactive_is_low` sees that and deactivates the binary (pgrefill); the stale view still
/// shows the inactive list full, keeps cache-trim mode, and barely scans the active list.
#[test]
fn reclaim_before_6_12_reads_exact_lru_sizes_and_deactivates_an_executable_the_stale_6_12_view_keeps_active() {
    let refill = |profile: &str| {
        let p = format!("kernel.profile=\"{profile}\"");
        let (_, res) = run(&[&p, "task.0.mapping.0.size=\"16MiB\"", "task.1.mapping.0.size=\"16MiB\"", "task.2.mapping.0.size=\"96MiB\""]);
        v(&res, "pgrefill")
    };
    let (exact, stale) = (refill("6.11"), refill("6.12"));
    assert!(exact > 4 * stale.max(1), "pgrefill: 6.11 {exact}, 6.12 {stale}");
    // 6.1 and 6.8 share the exact era and a 15-folio LRU-add batch (31 from 6.9); 6.1's
    // shrink_node also flushes the statistics (reclaim/rstat_flush.rs; not modelled for 6.8),
    // which moves its timing a little, not its era.
    let exact_15 = refill("6.8");
    assert!(exact_15 > 4 * stale.max(1), "pgrefill: 6.8 {exact_15}, 6.12 {stale}");
    let r61 = refill("6.1");
    assert!(r61 > 4 * stale.max(1) && r61.abs_diff(exact_15) * 50 <= exact_15, "6.1 is of the exact era too: pgrefill 6.1 {r61}, 6.8 {exact_15}");
    assert_eq!(refill("6.x"), stale, "6.x is the newest era");
}
