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
/// ([`crate::device::DeviceParams::queue_nonrot`]). Three mechanisms 2.6.28 shared are so far
/// modelled for 2.6.32 only (seed 002 needs them; the 2.6.28 tables are another engineer's
/// work in progress): per-CPU page lists that watermarks do not see (`mm/pcp.rs`), the swap
/// token (`swap/token.rs`), and `congestion_wait` woken by every freed async request
/// (`engine/congestion.rs`).
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
    match profile.strip_prefix("6.").and_then(|m| m.parse::<u32>().ok()) {
        Some(minor) => minor >= 12,
        None => true,
    }
}

/// Does an arm64 kernel of `profile` batch reclaim's TLB flushes? arm64 selects
/// `ARCH_WANT_BATCHED_UNMAP_TLB_FLUSH` since 6.5 (Barry Song, Yicong Yang, "arm64: support
/// batched/deferred tlb shootdown during page reclamation/migration"); before it every PTE
/// reclaim clears is flushed and waited for at once (reclaim/tlb_flush.rs). "6.x" is the
/// newest era.
pub fn arm64_batched_unmap_flush(profile: &str) -> bool {
    Profile::parse(profile) == Some(Profile::V6) && profile.strip_prefix("6.").and_then(|m| m.parse::<u32>().ok()).is_none_or(|minor| minor >= 5)
}

/// Does a read fault map a swapped-in page its task alone owns writable (`profile` is the
/// `kernel.profile` string)? Since 6.11 ("mm: use pte_mkwrite on exclusive swapin", Barry
/// Song, c18160dba5ff, 2024) `do_swap_page` makes an exclusive page's PTE writable on any
/// fault of a VM_WRITE mapping; before, only a write fault did (`maybe_mkwrite` under
/// FAULT_FLAG_WRITE: 2.6.x `reuse_swap_page`, 6.1 .. 6.10 `RMAP_EXCLUSIVE`), and a read fault
/// mapped it with `vm_page_prot`, read-only, so the first store takes a write-protect fault.
/// "6.x" is the newest era.
pub fn swapin_read_fault_maps_writable(profile: &str) -> bool {
    Profile::parse(profile) == Some(Profile::V6) && profile.strip_prefix("6.").and_then(|m| m.parse::<u32>().ok()).is_none_or(|minor| minor >= 11)
}

impl Profile {
    pub fn parse(s: &str) -> Option<Profile> {
        Some(match s {
            "2.6.28" | "2.6" | "2.6.32" => Profile::V2_6_28,
            "3.14" | "3.x" => Profile::V3_14,
            "4.14" | "4.x" | "5.x" => Profile::V4_14,
            "6.x" | "6" | "modern" => Profile::V6,
            // 6.1 .. 6.19: the classic model is the same; MGLRU reads the minor version.
            v if v.strip_prefix("6.").and_then(|m| m.parse::<u32>().ok()).map_or(false, |m| (1..=19).contains(&m)) => Profile::V6,
            _ => return None,
        })
    }
}

pub const READAHEAD_POLICIES: [&str; 7] = ["auto", "none", "fixed", "fixed-run", "adaptive", "adaptive-2012", "vma"];
pub const BAILOUT_POLICIES: [&str; 5] = ["auto", "none", "rvr", "kosaki", "proportional"];
pub use crate::reclaim::policy::RECLAIM_POLICIES;

