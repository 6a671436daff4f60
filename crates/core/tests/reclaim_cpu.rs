//! Reclaim CPU by category (`stats::cpu`): both policies charge every category they spend in,
//! the per-page categories match the counters of what was done, and the categories that
//! belong to one policy or one device stay empty elsewhere.

mod common;
use common::*;
use swaplab_core::config::Costs;
use swaplab_core::stats::{CpuCategory as Cat, CpuCost};

fn both(res: &swaplab_core::stats::result::SimResult) -> CpuCost {
    let mut c = res.kswapd_cpu_by_category;
    c.add(&res.direct_reclaim_cpu_by_category);
    c
}

#[test]
fn per_page_categories_match_what_reclaim_did_on_zram() {
    let costs = Costs::default();
    for policy in ["classic", "mglru"] {
        let ov = [format!("kernel.reclaim=\"{policy}\""), "swap.0.device=\"zram\"".into()];
        let ov: Vec<&str> = ov.iter().map(|s| s.as_str()).collect();
        let res = run_checked(BASE, &ov);
        let (k, d) = (res.kswapd_cpu_by_category, res.direct_reclaim_cpu_by_category);
        assert!(v(&res, "pswpout") > 0, "{policy}: 40 MiB in 28 MiB must swap");
        // zram compresses every page written (default content: 3:1, none zero), in the
        // reclaimer's context — the zero check, lzo, the pool copy — and has no block layer.
        use swaplab_core::swap::store::zswap::compressor::{cost, STORE_OVERHEAD_NS, ZERO_CHECK_NS};
        let three_to_one = (4096.0f64 / 3.0).round() as u32;
        let per_page = ZERO_CHECK_NS + cost("lzo").compress(three_to_one) + STORE_OVERHEAD_NS;
        assert_eq!(both(&res).get(Cat::Compression), v(&res, "pswpout") * per_page, "{policy}");
        assert_eq!(both(&res).block_layer(), 0, "{policy}: zram bypasses the block layer");
        // Every reclaimed page is freed once, by whoever reclaimed it.
        assert_eq!(k.get(Cat::FreePage), v(&res, "pgsteal_kswapd") * costs.free_page_ns, "{policy}");
        assert_eq!(d.get(Cat::FreePage), v(&res, "pgsteal_direct") * costs.free_page_ns, "{policy}");
        for cat in [Cat::RmapWalk, Cat::LruOps, Cat::Unmap, Cat::SwapAlloc] {
            assert!(both(&res).get(cat) > 0, "{policy}: nothing charged to {}", cat.name());
        }
        let mglru_only = both(&res).get(Cat::PageTableWalk) + both(&res).get(Cat::BloomFilter);
        if policy == "classic" {
            assert_eq!(mglru_only, 0, "the classic LRU has no page-table walk or Bloom filter");
        } else {
            assert!(both(&res).get(Cat::PageTableWalk) > 0 && both(&res).get(Cat::BloomFilter) > 0, "MGLRU's aging walks page tables through its filters");
        }
    }
}

#[test]
fn a_block_device_charges_submissions_to_the_block_layer() {
    let res = run_checked(BASE, &["kernel.reclaim=\"mglru\""]);
    let c = both(&res);
    assert!(v(&res, "pswpout") > 0);
    // NVMe swap-out goes through every stage of the block layer, each request paying the
    // preset's stage costs: the stages stand in the preset's proportions.
    let p = swaplab_core::device::DeviceParams::preset("nvme").unwrap();
    let stages = swaplab_core::device::blk::stage_ns(&p);
    let per_request: u64 = stages.iter().sum();
    assert!(c.block_layer() > 0 && c.block_layer().is_multiple_of(per_request), "{} ns", c.block_layer());
    let requests = c.block_layer() / per_request;
    for (cat, ns) in Cat::BLOCK_STAGES.into_iter().zip(stages) {
        assert_eq!(c.get(cat), requests * ns, "{}", cat.name());
    }
    assert_eq!(c.get(Cat::Compression), 0, "nothing compresses without zram or a store");
    // The JSON carries every category under its name.
    let json: serde_json::Value = serde_json::from_str(&res.to_json()).unwrap();
    for key in ["kswapd_cpu_by_category", "direct_reclaim_cpu_by_category"] {
        let by = json[key].as_object().unwrap_or_else(|| panic!("{key} missing"));
        assert_eq!(by.len(), Cat::ALL.len());
        let sum: u64 = by.values().map(|x| x.as_u64().unwrap()).sum();
        let want = if key.starts_with("kswapd") { res.kswapd_cpu_by_category.total() } else { res.direct_reclaim_cpu_by_category.total() };
        assert_eq!(sum, want);
    }
}
