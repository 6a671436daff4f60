//! Kernel eras and the policy names a workload may choose.

use serde::Serialize;

/// Kernel eras (kernel-algorithms.md §0.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Profile {
    /// P1, the 2.6.28 .. 2.6.35 family: split LRU, static page-cluster window,
    /// recent_scanned/rotated balancing, no workingset detection, `congestion_wait` naps in
    /// reclaim (until 2.6.36's wait_iff_congested). "2.6.28" (-rc6) has no direct-reclaim
    /// bail-out; "2.6.32" (seed 002's guest) differs only where [`era_2_6_32`] says so.
    V2_6_28,
    /// P2: adaptive readahead window, file-only workingset shadows.
    V3_14,
    /// P3: VMA readahead, synchronous-device bypass (4.15), referenced anon activated at once.
    V4_14,
    /// P4: modern: cost-based balancing, anon workingset, proportional bail-out.
    V6,
}

/// Is `profile` (the `kernel.profile` string) 2.6.32? Within the P1 family it differs from
/// 2.6.28 in what the model has: direct reclaim bails out once it reclaimed its goal below
/// DEF_PRIORITY (Rik van Riel's 2.6.29 rule, `nr_reclaimed >= nr_to_reclaim && priority <
/// DEF_PRIORITY` in 2.6.32's shrink_zone), and swapon marks an area SWP_SOLIDSTATE only when
/// its queue has QUEUE_FLAG_NONROT, which brd did not set (seed 002: adding it "didn't make
/// any difference"), so a ramdisk is a disk to swap
/// ([`crate::device::DeviceParams::queue_nonrot`]). Two mechanisms 2.6.28 shared are so far
/// modelled for 2.6.32 only (seed 002 needs them; the 2.6.28 tables are another engineer's
/// work in progress): per-CPU page lists that watermarks do not see (`mm/pcp.rs`) and the swap
/// token (`swap/token.rs`); `congestion_wait` woken by every freed async request
/// (`engine/congestion.rs`) is modelled for both.
pub fn era_2_6_32(profile: &str) -> bool {
    profile == "2.6.32"
}

/// Does reclaim read the memory cgroup statistics through a ratelimited flush (`profile` is
/// the `kernel.profile` string of a 6.x-era kernel)? Since 6.12 ("memcg: use ratelimited stats
/// flush in the reclaim", Shakeel Butt, 2024) `prepare_scan_control` calls
/// `mem_cgroup_flush_stats_ratelimited`, which flushes only when the periodic 2 s flusher is
/// late, so its heuristics read statistics up to a flush period old
/// (reclaim/classic/flushed.rs). From 5.16 to 6.11 it called `mem_cgroup_flush_stats`, which
/// flushes whenever more than `MEMCG_CHARGE_BATCH` updates per online CPU are pending: a view
/// some hundred pages behind at most, which the model takes as exact. "6.x" is the newest era.
pub fn reclaim_stats_ratelimited(profile: &str) -> bool {
    at_least(profile, (6, 12))
}

/// The kernel version a profile string names, `(major, minor)`: "5.17" is (5, 17); `None` for
/// the era names ("6.x", "6", "modern", "4.x", ...), which stand for the newest kernel of their
/// era.
pub fn version(profile: &str) -> Option<(u32, u32)> {
    let (major, minor) = profile.split_once('.')?;
    let major = major.parse::<u32>().ok()?;
    let minor = minor.parse::<u32>().ok()?;
    Some((major, minor))
}

/// Is the 6.x-family `profile` at least version `v`? An era name ("6.x", "modern") is the
/// newest kernel, so it is. Only meaningful for profiles that parse to [`Profile::V6`].
fn at_least(profile: &str, v: (u32, u32)) -> bool {
    version(profile).is_none_or(|p| p >= v)
}

/// What `workingset_refault` does with the memory cgroup statistics before it reads the
/// workingset size (mm/workingset.c, mm/memcontrol.c; reclaim/rstat_flush.rs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RefaultFlush {
    /// 5.15 (1f828223b799, "memcg: flush lruvec stats in the refault", 5.15-rc3): a
    /// synchronous `mem_cgroup_flush_stats()` at every refault, skipped only while another
    /// CPU's flush holds `stats_flush_lock` (trylock).
    Always,
    /// 5.16-5.17: the same call, which flushes only once the pending updates pass the
    /// threshold (11192d9c124d "memcg: flush stats only if updated", 5.16: while
    /// `stats_flush_threshold` exceeds `num_online_cpus()`, counted in `MEMCG_CHARGE_BATCH`
    /// units; 5b3be698a872 "memcg: better bounds on the memcg stats updates", 5.17-rc1: the
    /// units are the updates' absolute values).
    Threshold,
    /// 5.18+ (9b3016154c91, "memcg: sync flush only if periodic flush is delayed", 5.18-rc4):
    /// `mem_cgroup_flush_stats_delayed()`, which flushes only when the periodic flusher is late
    /// by a whole period; the model's view is the periodic flusher's (classic/flushed.rs).
    /// Also every profile before 5.15, whose refault read the counters unflushed.
    Periodic,
}

/// The refault's statistics flush of `profile` (a 6.x-family profile: 5.15 .. 5.19, 6.N, 6.x).
pub fn refault_flush(profile: &str) -> RefaultFlush {
    match version(profile) {
        Some((5, 15)) => RefaultFlush::Always,
        Some((5, 16..=17)) => RefaultFlush::Threshold,
        _ => RefaultFlush::Periodic,
    }
}

/// What the classic LRU's `shrink_node` does with the memory cgroup statistics before its scan
/// heuristics read them (`profile` a 6.x-family profile; mm/vmscan.c). Since 5.13 ("memcg:
/// switch lruvec stats to rstat") `shrink_node` begins with `mem_cgroup_flush_stats()` ("so
/// that we read accurate per-memcg lruvec stats for heuristics"), at every pass, the retry
/// after `again:` included: in 5.15 a flush at every call, from 5.16 only past the threshold
/// ([`RefaultFlush`] says how each era's call behaves). MGLRU's patches moved the call into
/// `prepare_scan_count`, which returns first when MGLRU is enabled ("MGLRU is not impacted by
/// this issue at all as it avoids rstat flushing completely", Shakeel Butt's 2024 change of
/// the call to `mem_cgroup_flush_stats_ratelimited`, 6.12+ here). Modelled to 6.1 (its
/// `MEMCG_CHARGE_BATCH` is [`memcg_charge_batch`]); 6.2-6.11 flush here too but changed how
/// (6.8's per-memcg thresholds and a flush that waits for another instead of skipping it),
/// which the model does not have: they read [`RefaultFlush::Periodic`], no flush.
pub fn reclaim_flush(profile: &str) -> RefaultFlush {
    match version(profile) {
        Some((5, 15)) => RefaultFlush::Always,
        Some((5, 16..)) | Some((6, 0..=1)) => RefaultFlush::Threshold,
        _ => RefaultFlush::Periodic,
    }
}

/// `MEMCG_CHARGE_BATCH` (include/linux/memcontrol.h): the per-CPU updates that make one step
/// of `stats_flush_threshold` (reclaim/rstat_flush.rs). 32 until "memcg: increase
/// MEMCG_CHARGE_BATCH to 64" (Shakeel Butt, 6.1).
pub fn memcg_charge_batch(profile: &str) -> u64 {
    if version(profile).is_some_and(|v| v < (6, 1)) {
        32
    } else {
        64
    }
}

/// How the classic LRU's `lru_note_cost` (mm/swap.c, 5.8+) takes the `lru_lock` of each lruvec
/// it updates, from the group's own up through every ancestor memory cgroup's to the root's
/// (`parent_lruvec`; reclaim/lru_lock.rs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoteCostLocking {
    /// 5.11-6.16: `do { spin_lock_irq(&lruvec->lru_lock); ...; spin_unlock_irq(..); } while
    /// ((lruvec = parent_lruvec(lruvec)))` - each level's lock in turn, the group's own
    /// included, whatever the cost (Alex Shi's "mm/lru: move lock into lru_note_cost", the
    /// per-memcg `lru_lock` series, 5.11). `shrink_inactive_list` calls it after it dropped
    /// the put-back's lock, so it takes the group's lock a second time (Hugh Dickins' review:
    /// "this patch does introduce an extra unlock+lock in shrink_inactive_list()").
    EachLevel,
    /// 6.17+ (Hugh Dickins, "mm: optimize lru_note_cost() by adding
    /// lru_note_cost_unlock_irq()", July 2025): the caller's put-back section goes on into the
    /// group's update, a zero cost returns before any other lock, and each ancestor's lock is
    /// taken in turn after its child's is dropped.
    UnderPutback,
}

/// `lru_note_cost`'s locking in `profile` (a 6.x-family profile: 5.15 .. 5.19, 6.N, 6.x); the
/// model has no 5.8-5.10 profile, whose one per-node `lru_lock` covered the whole walk. "6.x"
/// is the newest era.
pub fn note_cost_locking(profile: &str) -> NoteCostLocking {
    if at_least(profile, (6, 17)) {
        NoteCostLocking::UnderPutback
    } else {
        NoteCostLocking::EachLevel
    }
}

/// Does `shrink_active_list` call `lru_note_cost` for the folios it kept active (`profile` a
/// 6.x-family profile)? Since 6.2 (Johannes Weiner, "mm: vmscan: make rotations a secondary
/// factor in balancing anon vs file": `if (nr_rotated) lru_note_cost(lruvec, file, 0,
/// nr_rotated)`); 5.8-6.1's `shrink_active_list` noted no cost.
pub fn active_list_notes_cost(profile: &str) -> bool {
    at_least(profile, (6, 2))
}

/// Does an arm64 kernel of `profile` batch reclaim's TLB flushes? arm64 selects
/// `ARCH_WANT_BATCHED_UNMAP_TLB_FLUSH` since 6.5 (Barry Song, Yicong Yang, "arm64: support
/// batched/deferred tlb shootdown during page reclamation/migration"); before it every PTE
/// reclaim clears is flushed and waited for at once (reclaim/tlb_flush.rs). "6.x" is the
/// newest era.
pub fn arm64_batched_unmap_flush(profile: &str) -> bool {
    Profile::parse(profile) == Some(Profile::V6) && at_least(profile, (6, 5))
}

/// Does a read fault map a swapped-in page its task alone owns writable (`profile` is the
/// `kernel.profile` string)? Since 6.11 ("mm: use pte_mkwrite on exclusive swapin", Barry
/// Song, c18160dba5ff, 2024) `do_swap_page` makes an exclusive page's PTE writable on any
/// fault of a VM_WRITE mapping; before, only a write fault did (`maybe_mkwrite` under
/// FAULT_FLAG_WRITE: 2.6.x `reuse_swap_page`, 6.1 .. 6.10 `RMAP_EXCLUSIVE`), and a read fault
/// mapped it with `vm_page_prot`, read-only, so the first store takes a write-protect fault.
/// "6.x" is the newest era.
pub fn swapin_read_fault_maps_writable(profile: &str) -> bool {
    Profile::parse(profile) == Some(Profile::V6) && at_least(profile, (6, 11))
}

/// `PAGEVEC_SIZE`, the folios a CPU's LRU batch (`lru_add_pvec`, `cpu_fbatches.lru_add`, the
/// activate and rotate batches) holds before the CPU moves them all under `lru_lock`
/// (`profile` is the `kernel.profile` string; reclaim/lru_add.rs):
/// * 14 until 4.15 ("14 pointers + two long's align the pagevec structure to a power of two",
///   include/linux/pagevec.h): the 2.6.28, 3.14 and 4.14 profiles;
/// * 15 from Matthew Wilcox's "pagevec: Use unsigned char for nr" (after Mel Gorman removed
///   the `cold` field, 4.15/4.16: "15 pointers + header align ..."): "5.x" and 6.1 .. 6.8;
/// * 31 from 6.9 ("mm: increase folio batch size", Matthew Wilcox, March 2024, merged with
///   "mm: make folios_put() the basis of release_pages()" for the will-it-scale regression it
///   caused: "31 pointers + header align the folio_batch structure to a power of two").
///   "6.x" is the newest era; "5.17" (seed 004's baselines) has 15.
pub fn lru_batch_size(profile: &str) -> u32 {
    match (Profile::parse(profile), version(profile)) {
        (Some(Profile::V2_6_28 | Profile::V3_14), _) => 14,
        (Some(Profile::V4_14), _) if profile == "5.x" => 15,
        (Some(Profile::V4_14), _) => 14,
        (_, Some(v)) if v < (6, 9) => 15,
        _ => 31,
    }
}

impl Profile {
    pub fn parse(s: &str) -> Option<Profile> {
        Some(match s {
            "2.6.28" | "2.6" | "2.6.32" => Profile::V2_6_28,
            "3.14" | "3.x" => Profile::V3_14,
            "4.14" | "4.x" | "5.x" => Profile::V4_14,
            "6.x" | "6" | "modern" => Profile::V6,
            // 6.1 .. 6.19: the classic model is the same; MGLRU reads the minor version.
            // 5.15 .. 5.19 (seed 004's 5.17-rc2): the modern era's classic LRU (cost-based
            // balancing 5.8, anon workingset 5.9) with the rules whose version differs read
            // from the string ([`refault_flush`], [`reclaim_stats_ratelimited`], ...).
            v => match version(v) {
                Some((6, 1..=19)) | Some((5, 15..=19)) => Profile::V6,
                _ => return None,
            },
        })
    }
}

pub const READAHEAD_POLICIES: [&str; 7] = ["auto", "none", "fixed", "fixed-run", "adaptive", "adaptive-2012", "vma"];
pub const BAILOUT_POLICIES: [&str; 5] = ["auto", "none", "rvr", "kosaki", "proportional"];
pub use crate::reclaim::policy::RECLAIM_POLICIES;


#[cfg(test)]
mod tests {
    use super::*;

    /// "5.17" is the modern era's classic LRU with 5.17's own rules: the refault's threshold
    /// flush, exact scan statistics, the 6.1 swap-in mapping and the old swap allocator.
    #[test]
    fn a_5_x_profile_is_the_modern_era_with_its_own_version_rules() {
        assert_eq!(Profile::parse("5.17"), Some(Profile::V6));
        assert_eq!(Profile::parse("5.14"), None, "before 5.15 the model has no profile of its own");
        assert_eq!(Profile::parse("5.x"), Some(Profile::V4_14));
        assert_eq!(version("5.17"), Some((5, 17)));
        assert_eq!(version("6.x"), None);
        assert!(!reclaim_stats_ratelimited("5.17"));
        assert!(!swapin_read_fault_maps_writable("5.17"));
        assert!(!arm64_batched_unmap_flush("5.17"));
        assert!(reclaim_stats_ratelimited("6.x") && reclaim_stats_ratelimited("6.12") && !reclaim_stats_ratelimited("6.11"));
    }

    #[test]
    fn lru_note_cost_takes_each_level_lock_from_5_11_and_continues_the_putback_from_6_17() {
        for p in ["5.17", "6.1", "6.16"] {
            assert_eq!(note_cost_locking(p), NoteCostLocking::EachLevel, "{p}");
        }
        for p in ["6.17", "6.x"] {
            assert_eq!(note_cost_locking(p), NoteCostLocking::UnderPutback, "{p}");
        }
        assert!(!active_list_notes_cost("5.17") && !active_list_notes_cost("6.1"));
        assert!(active_list_notes_cost("6.2") && active_list_notes_cost("6.x"));
    }

    #[test]
    fn the_classic_shrink_node_flushes_from_5_15_to_6_1_with_the_era_batch() {
        assert_eq!(reclaim_flush("5.15"), RefaultFlush::Always);
        for p in ["5.16", "5.17", "5.19", "6.0", "6.1"] {
            assert_eq!(reclaim_flush(p), RefaultFlush::Threshold, "{p}");
        }
        for p in ["6.2", "6.12", "6.x"] {
            assert_eq!(reclaim_flush(p), RefaultFlush::Periodic, "{p}");
        }
        assert_eq!((memcg_charge_batch("5.17"), memcg_charge_batch("6.0")), (32, 32));
        assert_eq!((memcg_charge_batch("6.1"), memcg_charge_batch("6.x")), (64, 64));
    }

    #[test]
    fn the_refault_flushes_synchronously_from_5_15_to_5_17_only() {
        assert_eq!(refault_flush("5.15"), RefaultFlush::Always);
        assert_eq!(refault_flush("5.16"), RefaultFlush::Threshold);
        assert_eq!(refault_flush("5.17"), RefaultFlush::Threshold);
        for p in ["5.18", "6.1", "6.x", "4.14"] {
            assert_eq!(refault_flush(p), RefaultFlush::Periodic, "{p}");
        }
    }
}
