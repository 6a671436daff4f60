//! The workload file's tables as serde types: machine, kernel knobs, swap devices, costs,
//! channels and simulation settings. Defaults live beside their fields; validation is in
//! resolve.rs.

use super::pagecache;
use super::stores;
use super::tasks::TaskSpec;
use super::units::{Duration, Size};
use serde::{Deserialize, Serialize};

fn default_seed() -> u64 {
    1
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Run seed: every random stream (access patterns, tie-breaks) derives from it.
    #[serde(default = "default_seed")]
    pub seed: u64,
    pub machine: Machine,
    #[serde(default)]
    pub kernel: Kernel,
    #[serde(default)]
    pub swap: Vec<SwapSpec>,
    #[serde(default)]
    pub costs: Costs,
    #[serde(default)]
    pub sim: SimSettings,
    /// Page-cache knobs (config/pagecache.rs).
    #[serde(default)]
    pub pagecache: pagecache::PageCacheSpec,
    #[serde(rename = "task", default)]
    pub tasks: Vec<TaskSpec>,
    /// Message channels between tasks (pipes / sockets), see [`ChannelSpec`].
    #[serde(rename = "channel", default, skip_serializing_if = "Vec::is_empty")]
    pub channels: Vec<ChannelSpec>,
    /// Fronting stores and the page-content model (config/stores.rs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zswap: Option<stores::ZswapSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frontswap: Option<stores::FrontswapSpec>,
    /// The compressor of every zram swap device (`/sys/block/zramN/comp_algorithm`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zram: Option<stores::ZramSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<stores::ContentSpec>,
}

fn default_channel_count() -> u32 {
    1
}
fn default_channel_capacity() -> Size {
    Size(65_536)
}

/// An array of `count` message channels (a pipe or a socket each): bounded FIFO queues of
/// messages between tasks. A sender blocks while its message does not fit in `capacity`; a
/// receiver blocks (using no CPU) until a message arrives.
///
/// Kernel memory: the bytes in flight (messages plus `overhead` per message: the sk_buff or
/// pipe_buffer bookkeeping; or `footprint` per message where set) occupy ceil(bytes / 4096)
/// kernel pages per channel, allocated by
/// the sender through the page allocator (so a send can enter direct reclaim, as
/// `alloc_skb` / `pipe_write` do) and freed when the receiver consumes the data. These pages are
/// charged like other memory but are on no LRU list: reclaim cannot take them, only
/// consumption frees them. See docs/ipc.md.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChannelSpec {
    pub name: String,
    /// Channels in this array (e.g. one per receiver); phases pick one by `index`.
    #[serde(default = "default_channel_count")]
    pub count: u32,
    /// Bytes in flight per channel before a sender blocks (pipe: 16 pages = 64 KiB; an
    /// AF_UNIX socket: its sndbuf).
    #[serde(default = "default_channel_capacity")]
    pub capacity: Size,
    /// Kernel bytes per message besides its payload (sk_buff truesize overhead; 0 for a pipe,
    /// which packs small writes into its page buffers).
    #[serde(default)]
    pub overhead: Size,
    /// Kernel bytes one message of this channel holds while it is queued, when that differs
    /// from what the sndbuf accounting charges (payload + `overhead`): the slab objects the
    /// message really occupies. Unset: payload + `overhead`. Before Linux 3.2 ("net: more
    /// accurate skb truesize") `skb->truesize` counted `SKB_DATA_ALIGN(len) +
    /// sizeof(struct sk_buff)` only; the kmalloc'd data also holds `skb_shared_info` and is
    /// rounded up to its kmalloc size class, and the head sits in a cache-aligned
    /// `skbuff_head_cache` object, so a small message holds about twice what it is charged.
    #[serde(default)]
    pub footprint: Option<Size>,
}

fn default_cpus() -> u32 {
    1
}
fn default_reserved() -> Size {
    Size::mib(48)
}
fn default_cgroup_version() -> u32 {
    2
}
fn default_file_device() -> String {
    "sata-ssd".into()
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Machine {
    #[serde(default = "default_cpus")]
    pub cpus: u32,
    /// CPUs the kernel has online, when more than the `cpus` the workload runs on (a process
    /// bound to one NUMA node of a larger machine): what `num_online_cpus()` and
    /// `for_each_possible_cpu` count in the memory cgroup statistics flush
    /// (reclaim/rstat_flush.rs). Default: `cpus`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub online_cpus: Option<u32>,
    /// Physical memory.
    pub ram: Size,
    /// Memory the kernel itself holds (text, slab, page tables, other processes): never
    /// available to the workload. Default 48 MiB, a small distribution kernel's footprint.
    #[serde(default = "default_reserved")]
    pub kernel_reserved: Size,
    /// Run the tasks in a memory cgroup with this limit (memory.max / limit_in_bytes) instead
    /// of putting the whole machine under pressure.
    #[serde(default)]
    pub memcg_limit: Option<Size>,
    /// Where that memory cgroup sits below the cgroup root, as under `/sys/fs/cgroup/`
    /// ("user.slice/test": a child of `user.slice`, itself a child of the root). Each
    /// component above the group is an ancestor whose lruvec the classic LRU's
    /// `lru_note_cost` updates under that lruvec's own `lru_lock` (5.11+,
    /// reclaim/lru_lock.rs), and the root is always one. Default: a child of the root, the
    /// least a group with a limit can be (the root has no `memory.max`). Only with
    /// `memcg_limit`; without one the tasks are the root's and nothing is above them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memcg_path: Option<String>,
    /// The cgroup hierarchy holding that memory cgroup: 2 (the unified hierarchy, the default)
    /// or 1 (the legacy memory controller). Only v2 has cgroup writeback, so only v2 gives a
    /// memory cgroup its own dirty-throttling domain (mm/page-writeback.c `mdtc`, which
    /// exists when `cgroup_subsys_on_dfl(memory_cgrp_subsys)`); under v1 `balance_dirty_pages`
    /// sees the global domain alone. It also decides whether zswap's compressed pool is charged
    /// to the group: on v2 (`obj_cgroup_charge_zswap`); on v1 nothing of it (that function
    /// returns at once unless `cgroup_subsys_on_dfl`), so a v1 group's pool grows outside its
    /// limit. `swaplab compare` simulates the host's version.
    #[serde(default = "default_cgroup_version")]
    pub cgroup_version: u32,
    /// A process that reads the memory cgroup's `memory.stat` this often (a monitoring agent;
    /// the host runner reads it every `sim.sample_interval`). A read flushes the cgroup's
    /// statistics (rstat), and 6.x reclaim sees new LRU sizes and refault counts only at a
    /// flush (reclaim/classic/flushed.rs). Default none: the kernel's own flush every 2 s.
    /// `swaplab compare` sets the host runner's interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_stat_reader: Option<Duration>,
    /// How late each of that reader's reads can be after its tick (uniform in
    /// `[0, jitter)`): a sampling loop that sleeps between checks reads at its first wake-up
    /// after the tick. Default 0; `swaplab compare` sets the host runner's loop period
    /// (10 ms, `time.sleep(0.01)` in host/runner.py).
    #[serde(default)]
    pub memory_stat_reader_jitter: Duration,
    /// Device preset backing file-backed mappings.
    #[serde(default = "default_file_device")]
    pub file_device: String,
    /// The CPU architecture, for what differs in the kernel's memory management: how reclaim
    /// flushes other CPUs' TLBs after an unmap (reclaim/tlb_flush.rs). Default x86_64.
    #[serde(default)]
    pub arch: Arch,
    /// The machine is a Xen paravirtualised (PV) guest: Xen keeps its page-table pages
    /// read-only to it, so every PTE change of a fault or of reclaim is a hypercall or a write
    /// Xen traps and emulates, and a local TLB flush is a hypercall (`costs.xen_*`, charged in
    /// engine/fault.rs and reclaim/pageout.rs); every page fault enters Xen first and is bounced
    /// to the guest kernel (`costs.xen_fault_bounce_ns`); and its disks are blkfront devices,
    /// whose queue is non-rotational to the kernel (config/resolve.rs
    /// `xen_pv_blkfront_queue`). Default false; set only where the source says
    /// the guest was PV (seed 002: "a 2.6.32 pv_ops kernel (PV, not in a VMX container)").
    #[serde(default)]
    pub xen_pv: bool,
    /// Xen PV (`machine.xen_pv`): how often, on average, dom0 or Xen's own work takes the
    /// guest's physical CPU from its vCPU (a Poisson process drawn from the run's seed,
    /// engine/steal.rs); 0 turns steal off. **Estimate**, no published figure for an idle
    /// 2010 Xen host was found: on a machine with "no other activity", dom0's periodic timer
    /// tick and daemons (xenstored, xenconsoled, xend's polling) and Xen's per-CPU softirqs
    /// (the credit scheduler's 10 ms tick, its 30 ms accounting, the 1 s time calibration)
    /// wake there every few to tens of milliseconds: 10 ms.
    #[serde(default = "default_xen_dom0_interval")]
    pub xen_dom0_interval: Duration,
    /// Xen PV: how long such a wake-up keeps the guest's vCPU off its CPU, on average
    /// (exponential; at most one 10 ms credit scheduler tick, engine/steal.rs). **Estimate**:
    /// two Xen context switches (a few microseconds each on 2009 hardware) and a short
    /// handler in dom0 or Xen: 20 us, so that dom0 takes 0.2% of the guest's CPU.
    #[serde(default = "default_xen_dom0_burst")]
    pub xen_dom0_burst: Duration,
}

fn default_xen_dom0_interval() -> Duration {
    Duration(10_000_000)
}
fn default_xen_dom0_burst() -> Duration {
    Duration(20_000)
}

/// `machine.arch`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Arch {
    /// TLB shootdown by IPI to each CPU running the mm (`flush_tlb_multi`).
    #[default]
    #[serde(rename = "x86_64")]
    X86_64,
    /// TLB invalidation broadcast by the hardware (`TLBI ...IS` then `DSB ISH`), no IPI.
    #[serde(rename = "arm64")]
    Arm64,
}

fn default_profile() -> String {
    "6.x".into()
}
fn default_swappiness() -> u32 {
    60
}
fn default_page_cluster() -> u32 {
    3
}
fn default_true() -> bool {
    true
}
fn default_wsf() -> u32 {
    10
}
fn default_auto() -> String {
    "auto".into()
}
fn default_classic() -> String {
    "classic".into()
}
fn default_hz() -> u32 {
    250
}
fn default_dirty_expire_centisecs() -> u64 {
    3000
}
fn default_dirty_writeback_centisecs() -> u64 {
    500
}
fn default_lru_gen_enabled() -> u32 {
    0x7
}

pub(super) fn is_false(b: &bool) -> bool {
    !*b
}

/// Accept `profile = 3.14` as well as `profile = "3.14"` (a version reads like a number).
fn string_or_number<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum V {
        S(String),
        F(f64),
        I(i64),
    }
    Ok(match V::deserialize(d)? {
        V::S(s) => s,
        V::F(f) => format!("{f}"),
        V::I(i) => i.to_string(),
    })
}

/// Kernel knobs (kernel-algorithms.md §8) and the era profile (§0.2).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Kernel {
    /// "2.6.28", "2.6.32", "3.14", "4.14" or "6.x": selects the readahead family, workingset detection,
    /// anon/file balancing and the direct-reclaim bail-out rule of that era.
    #[serde(default = "default_profile", deserialize_with = "string_or_number")]
    pub profile: String,
    #[serde(default = "default_swappiness")]
    pub swappiness: u32,
    #[serde(default = "default_page_cluster")]
    pub page_cluster: u32,
    #[serde(default = "default_true")]
    pub vma_ra_enabled: bool,
    /// Default: the kernel's sqrt formula (§3.2).
    #[serde(default)]
    pub min_free_kbytes: Option<u64>,
    #[serde(default = "default_wsf")]
    pub watermark_scale_factor: u32,
    /// Swap-in readahead policy: "auto" (what the profile's kernel does), "none", "fixed",
    /// "fixed-run", "adaptive", "adaptive-2012" or "vma".
    #[serde(default = "default_auto")]
    pub readahead: String,
    /// LRU implementation: "classic" or "mglru" (the multi-generational LRU, 6.1+; its era,
    /// 6.1-6.13 or 6.14+, follows `profile`: "6.1" .. "6.13" or "6.x"/"6.14"+).
    #[serde(default = "default_classic")]
    pub reclaim: String,
    /// MGLRU `/sys/kernel/mm/lru_gen/enabled` capability bits: 0x1 the policy, 0x2 page-table
    /// walks during aging, 0x4 clearing the accessed bit of non-leaf PMDs (x86's default 0x7).
    #[serde(default = "default_lru_gen_enabled")]
    pub lru_gen_enabled: u32,
    /// MGLRU `/sys/kernel/mm/lru_gen/min_ttl_ms`: OOM rather than evict a working set younger
    /// than this (0 = off, the default).
    #[serde(default)]
    pub lru_gen_min_ttl_ms: u64,
    /// Direct-reclaim bail-out: "auto" (the profile's), "none", "rvr", "kosaki", "proportional".
    #[serde(default = "default_auto")]
    pub bailout: String,
    #[serde(default = "default_hz")]
    pub hz: u32,
    /// `vm.dirty_ratio`: percent of dirtyable memory (free + file LRU) at which writers are
    /// throttled hard (`balance_dirty_pages`). Default: the profile's kernel, 10 on 2.6.28
    /// (2.6.22-2.6.29), 20 since 2.6.30 (mm/page-writeback.c); filled in at resolve time.
    #[serde(default)]
    pub dirty_ratio: Option<u64>,
    /// `vm.dirty_background_ratio`: percent at which background writeback starts. Default:
    /// 5 on 2.6.28, 10 since 2.6.30.
    #[serde(default)]
    pub dirty_background_ratio: Option<u64>,
    /// `vm.dirty_bytes` / `vm.dirty_background_bytes`: the same thresholds in bytes; when not
    /// 0 they replace the ratios (default 0).
    #[serde(default)]
    pub dirty_bytes: u64,
    #[serde(default)]
    pub dirty_background_bytes: u64,
    /// `vm.dirty_expire_centisecs`: a dirty inode older than this is written by the flusher's
    /// periodic (kupdate) pass. Default 3000 (30 s).
    #[serde(default = "default_dirty_expire_centisecs")]
    pub dirty_expire_centisecs: u64,
    /// `vm.dirty_writeback_centisecs`: the flusher's period; 0 turns periodic writeback off.
    /// Default 500 (5 s).
    #[serde(default = "default_dirty_writeback_centisecs")]
    pub dirty_writeback_centisecs: u64,
    /// x86 since 6.12 ("x86/mm/tlb: Update mm_cpumask lazily", Rik van Riel): a CPU stays in
    /// an mm's `mm_cpumask` after it switches to another process, and reclaim's batched flush,
    /// built with no mm, IPIs every CPU of the mask that is not lazy (`should_flush_tlb`):
    /// every CPU that has run the mm and now runs any user task. false (the default, every
    /// profile): the older rule, a CPU leaves the mask when it switches away. `swaplab compare`
    /// sets it from the host's kernel release. reclaim/tlb_flush.rs.
    #[serde(default)]
    pub lazy_mm_cpumask: bool,
}

impl Default for Kernel {
    fn default() -> Self {
        toml::from_str("").expect("kernel defaults")
    }
}

/// One swap device: a preset and optional overrides of any of its parameters.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwapSpec {
    /// "hdd", "sata-ssd", "nvme", "ramdisk", "zram" or "calibrated:NAME" (resolved by the lab).
    pub device: String,
    pub size: Size,
    /// swapon -p; default: -1, -2, ... in file order (§2.1).
    #[serde(default)]
    pub priority: Option<i32>,
    /// Overrides of the preset's parameters (see `DeviceParams`).
    #[serde(default)]
    pub params: toml::Table,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Costs {
    /// A touch of a resident page: one store that misses the caches (~10 ns) - the program's
    /// own work between touches is the workload's `compute`.
    pub resident_touch_ns: u64,
    /// Minor fault that allocates and zeroes a new anonymous page (§6.3: 0.5-1 us).
    pub minor_fault_ns: u64,
    /// Fault that finds its page in the swap cache or page cache (lookup + map).
    pub cache_hit_fault_ns: u64,
    /// Each further page a fault maps by fault-around (filemap_map_pages: xarray step, folio
    /// reference, rmap and set_pte; no I/O, no fault entry). Estimate: a few cache-missing
    /// atomics, ~10% of a cache-hit fault.
    pub fault_around_page_ns: u64,
    /// CPU of a major fault that reads its page from a block device, besides the I/O and its
    /// retry: allocation, swap-cache insert, charge, and the submission of the read
    /// (`read_submit_cpu_ns` of it). The retry after the read, which finds the folio cached
    /// and maps it, pays `cache_hit_fault_ns`; calibrate measures the two together.
    pub major_fault_cpu_ns: u64,
    /// The part of `major_fault_cpu_ns` that submitting the device read costs the faulting
    /// task (syscall-free here: block layer, driver submission, completion interrupt — on a
    /// virtual disk the exits to the hypervisor). A swap-in served without a block request
    /// (zswap or frontswap hit, zero map, a synchronous device read in place) pays
    /// `major_fault_cpu_ns` less this; a fault pays it for each flush of its plugged device
    /// reads. Default 0: the built-in figure of 2 us has no submission in it (the model's
    /// block-layer stages are charged per request). `swaplab calibrate` measures it as the
    /// submitting thread's CPU per QD1 4 KiB O_DIRECT read (this VM: 31-32 us of a 32-36 us
    /// major fault, 2026-11-26).
    pub read_submit_cpu_ns: u64,
    /// CPU of a swap-in fault that misses the swap cache, besides its pages' own work
    /// (`swapin_page_cpu_ns`), submitting its read (`read_submit_cpu_ns` and the block layer's
    /// stages) and its retry (`cache_hit_fault_ns`): the fault's entry and exit, the swap-cache
    /// lookup, the readahead window's choice (`do_swap_page` / `swapin_readahead`). Unset, a
    /// swap-in pays a file major fault's figure (`major_fault_cpu_ns` less `read_submit_cpu_ns`),
    /// as every built-in preset does; `swaplab calibrate` measures it through the swap path
    /// (python/swaplab/host/swapin_cost.py): on this project's VM a synchronous swap-in's
    /// whole CPU was 24.6 us against a file major fault's 28.5 us (2026-11-27, `perf` and
    /// thread CPU time), because it has no file system and no syscall.
    pub swapin_fault_cpu_ns: Option<u64>,
    /// CPU per page a swap-in reads through the swap cache, the target and each readahead page
    /// alike (`__read_swap_cache_async`: allocate the folio, charge it, insert it in the swap
    /// cache, look up its shadow, add it to the LRU, add it to the plugged bio). Default 0:
    /// the built-in `major_fault_cpu_ns` holds the target's share and readahead pages are
    /// taken as free; `swaplab calibrate` measures it from page-cluster 0 and 3 swap-ins.
    pub swapin_page_cpu_ns: u64,
    /// Reclaim: isolating and checking one LRU page.
    pub scan_page_ns: u64,
    /// The time one folio keeps the lruvec's `lru_lock` while it is moved on or off a list
    /// (`list_del`/`list_add`, the LRU flag and the lruvec counters on its `struct folio`):
    /// the share of the work already charged (`scan_page_ns` in reclaim, the fault's or
    /// read's own cost in `folio_add_lru`) that is done under the lock, so it adds no CPU; it
    /// is how long other CPUs wait (reclaim/lru_lock.rs). Estimate: the folio's cache line is
    /// cold when reclaim takes it from the list tail, so about one cache miss of a 2017 server
    /// core's ~90 ns local DRAM latency, of which the list moves (two neighbours' lines, hot
    /// after the walk) add little: 50 ns, half of `scan_page_ns`.
    pub lru_lock_folio_ns: u64,
    /// An acquisition of `lru_lock` by a CPU other than its last holder: the lock's cache line
    /// and the lruvec's list heads move from the CPU that wrote them last. CPU of the
    /// acquirer, and part of the hold. Estimate: one core-to-core cache-line transfer on a
    /// 2017 two-socket Xeon (Skylake-SP mesh, the posting's Xeon 6154), commonly measured at
    /// 70-110 ns within a socket: 100 ns. A one-CPU machine never pays it.
    pub lru_lock_handoff_ns: u64,
    /// The work `lru_note_cost` does under each level's `lru_lock` (5.8+, mm/swap.c): add the
    /// cost to `anon_cost` or `file_cost`, read the lruvec's four LRU sizes
    /// (`lruvec_page_state`) and halve both costs past a quarter of them. CPU of the caller
    /// and part of the hold (reclaim/lru_lock.rs); the lock's line, which holds the costs too
    /// (`struct lruvec`: `lru_lock`, `anon_cost`, `file_cost` adjacent), comes with the
    /// hand-off. Estimate (no published per-call figure): about fifteen instructions whose
    /// loads hit lines the hand-off brought or that stay shared between statistics flushes:
    /// 20 ns.
    pub lru_note_cost_ns: u64,
    /// Reclaim: one VMA visited by a reverse-map walk (`page_vma_mapped_walk`, called per VMA
    /// of the folio's anon_vma or i_mmap tree by `folio_referenced_one` and `try_to_unmap_one`),
    /// mapped there or not: `vma_address`, the page-table descent to the PTE and its lock.
    /// Estimate (no published per-call figure): three or four dependent loads of page-table
    /// entries that are cold in the reclaimer's cache, ~40-50 ns each.
    pub rmap_walk_ns: u64,
    /// Reclaim: removing one mapping of a page being unmapped (`try_to_unmap_one`: clearing the
    /// PTE, the local TLB entry's flush, the rmap and counter updates); the walk that finds the
    /// mapping is `rmap_walk_ns`, the flush of other CPUs' TLBs `tlb_shootdown_*`.
    pub unmap_ns: u64,
    /// A TLB shootdown's initiator, once per flush that has remote CPUs to interrupt
    /// (reclaim/tlb_flush.rs): `flush_tlb_multi` → `smp_call_function_many_cond` with
    /// `wait`, i.e. the spin until the last target's handler has run and acked. Estimate: an
    /// IPI's delivery, the target's interrupt entry and the flush, commonly 1-3 us on
    /// two-socket Xeons (Amit, "Optimizing the TLB Shootdown Algorithm with Page Access
    /// Tracking", USENIX ATC 2017: a shootdown "can take microseconds"; LATR, ASPLOS 2018,
    /// counts the IPI round trip as the bulk of munmap's latency on a 2-socket machine): 2 us.
    pub tlb_shootdown_ns: u64,
    /// The initiator's cost per CPU it interrupts: queueing the flush request on the
    /// target's `call_single_queue` (a cache line the target owns) and its share of the
    /// APIC writes. Estimate: one core-to-core cache-line transfer on Skylake-SP, as
    /// `lru_lock_handoff_ns`: 100 ns.
    pub tlb_shootdown_per_cpu_ns: u64,
    /// What one TLB-flush IPI costs the CPU it interrupts (`flush_tlb_func`): interrupt entry
    /// and exit (with page-table isolation on a Meltdown-affected Skylake-SP, two CR3
    /// switches), the flush itself (a reclaim batch flushes the whole TLB:
    /// `arch_tlbbatch_flush` sends `full_flush_tlb_info`), and the refills of the translations
    /// the interrupted program was using. Estimate, from the same sources as
    /// `tlb_shootdown_ns` (the target's part of the round trip): 1.5 us.
    pub tlb_ipi_receive_ns: u64,
    /// arm64: one `DSB ISH` wait for broadcast TLB invalidations (`TLBI VALE1IS`) to complete
    /// on every CPU (reclaim/tlb_flush.rs), per cleared PTE before 6.5 (`ptep_clear_flush`),
    /// per batch after. Source: the 6.5 batching commit (Barry Song, "arm64: support
    /// batched/deferred tlb shootdown during page reclamation/migration") profiles a program
    /// that swaps 1 MiB out and in 10,000 times (2.56 M pages unmapped) on an 8-core
    /// Snapdragon 888 with zram: `ptep_clear_flush` 5.36% of a 14.55 s run, "95% ... used by
    /// the final dsb()", i.e. ~300 ns per page (the run was 0.89 s shorter with batching,
    /// ~350 ns per page): 300 ns.
    pub tlb_broadcast_flush_ns: u64,
    /// 5.15-5.17's synchronous memory cgroup statistics flush (reclaim/rstat_flush.rs): the
    /// time `cgroup_rstat_flush_locked` holds one CPU's `cgroup_rstat_cpu_lock` while it pops
    /// that CPU's updated cgroups and folds their per-CPU counters
    /// (`mem_cgroup_css_rstat_flush`: every memcg stat, event and per-node lruvec stat), for a
    /// CPU with updates pending. Source: Waiman Long, "cgroup/rstat: Reduce cpu_lock hold time
    /// in cgroup_rstat_flush_locked()" (v4 cover letter, linux-kernel, 2023-11-06), the hold
    /// times before the series (the per-CPU loop 5.17 has) measured over a parallel kernel
    /// build on a two-socket x86-64 server: 15.6 M holds, 63% in 1-5 us, 29% in 5-10 us,
    /// mean 4.5 us by the bins' midpoints: 4,500 ns.
    pub memcg_rstat_flush_cpu_ns: u64,
    /// The same walk's cost for a CPU with nothing pending: its lock taken and its empty
    /// updated list read, lines that CPU owns. Estimate: one cross-socket cache-line transfer
    /// on a two-socket Skylake-SP, commonly ~150-200 ns (the bin below 1 us in the source of
    /// `memcg_rstat_flush_cpu_ns` holds 5% of its holds): 200 ns.
    pub memcg_rstat_flush_idle_cpu_ns: u64,
    /// Reclaim: freeing one page (remove from the cache, shadow store, free).
    pub free_page_ns: u64,
    /// Allocating one swap slot.
    pub swap_alloc_ns: u64,
    /// Taking a free page from the allocator.
    pub alloc_page_ns: u64,
    /// Waking a sleeping task (scheduler wake-up + context switch).
    pub wakeup_ns: u64,
    /// One small message sent: write()/sendmsg() syscall, skb or pipe-buffer bookkeeping, copy
    /// of 100 bytes, and the try_to_wake_up of a waiting reader (unix_stream_sendmsg /
    /// pipe_write; hackbench's ~2-4 us per message pair on 2008 hardware, lmbench "AF_UNIX"
    /// and "pipe" latencies of 5-10 us round trip include two context switches).
    pub msg_send_ns: u64,
    /// One small message received: read()/recvmsg(), copy-out, freeing the skb.
    pub msg_recv_ns: u64,
    /// Buffered read()/write() of one page that is in the page cache: syscall entry, page-cache
    /// lookup, 4 KiB copy (~1 GB/s-class memcpy in 2008: ~1-2 us; modern ~0.5 us).
    pub syscall_page_ns: u64,
    /// A buffered write() of a page not in the page cache, beyond `syscall_page_ns`:
    /// allocating the page-cache folio, its memory-cgroup charge and LRU add, and the file
    /// system's `write_begin`/`write_end` for a new block (ext4: delayed-allocation
    /// reservation, buffer heads). Estimate ~1.5 us on a 2020s core; `swaplab calibrate`
    /// measures it (a fresh file written page by page, less a cached read()).
    pub new_page_write_ns: u64,
    /// The flusher's CPU per page written back (`write_cache_pages`: folio lock, clearing the
    /// dirty tag and `folio_mkclean`'s rmap walk, setting writeback, adding to the bio).
    /// Estimate: about the cost of a page-cache lookup plus an rmap walk, ~0.5 us.
    pub writeback_page_ns: u64,
    /// MGLRU: one PTE examined by the aging walk or look-around (8 PTEs per 64-byte cache
    /// line read sequentially, ~15 ns per line: ~2 ns each; estimate).
    pub pt_walk_pte_ns: u64,
    /// MGLRU: one Bloom-filter test or update (two bit probes in a 4 KiB filter plus the
    /// hash; estimate).
    pub bloom_test_ns: u64,
    /// A kv server's CPU per request besides touching the item (memcached worker: read and
    /// parse a binary-protocol request, hash lookup, item refcount and LRU bump, build the
    /// reply and its share of the sendmsg on a UNIX socket). Estimate: memcached serves
    /// ~200-500k small GETs per second per worker thread when nothing faults, 2-5 us each.
    /// With a kv-client (engine/kv_conn.rs) the worker's read() and sendmsg() of a batch are
    /// charged besides, `msg_recv_ns` and `msg_send_ns` once per batch.
    pub kv_request_ns: u64,
    /// A kv client's CPU per request (memtier_benchmark: create the request from the key
    /// pattern, parse its reply, count it in the per-second statistics and latency
    /// histograms); its socket calls are `msg_send_ns` / `msg_recv_ns` per batch. Source:
    /// memtier measured as the limit of a Redis benchmark suite (redis-benchmarks-specification
    /// issue 487, 2026): 3.22 of its 4 threads busy for over 1.2 M ops/s at `--pipeline 10`,
    /// ~2.7 us of CPU per request, of which its socket calls are ~0.25 us at that pipeline:
    /// 2.5 us.
    pub kv_client_request_ns: u64,
    /// Double-precision floating-point operations one CPU completes per microsecond in dense
    /// linear algebra (the hpl pattern's DGEMM, panel and solve). Default 15,200 (15.2
    /// GFLOPS): a Haswell core retires 16 double-precision flops per cycle (two 256-bit FMA
    /// units, Intel's Haswell microarchitecture), shared by its two hardware threads, at the
    /// 1.9 GHz AVX base frequency of the 18-core Xeon E5-2699 v3 (Intel's Xeon E5 v3 AVX
    /// frequency specification) — the only E5 v3 with 72 threads in two sockets, seed 000's
    /// machine. The peak: HPL's efficiency below it is not modelled.
    pub cpu_flops_per_us: u64,
    /// Xen PV (`machine.xen_pv`): a hypercall that changes one PTE or flushes one TLB entry —
    /// `HYPERVISOR_update_va_mapping` in `xen_set_pte_at` when the PTE is the current mm's
    /// (every fault that maps a page), `MMUEXT_INVLPG_LOCAL` in `xen_flush_tlb_single` (the
    /// flush after clearing a PTE in reclaim); 2.6.32 arch/x86/xen/mmu.c. Outside lazy-MMU
    /// mode (faults and reclaim do not enter it) each is issued alone, not batched. Estimate,
    /// no published per-call figure found for 2010 hardware: a ring transition into Xen and
    /// back plus its validation of the new entry, a few hundred ns to a microsecond: 500 ns.
    pub xen_hypercall_ns: u64,
    /// Xen PV: a PTE write the guest makes directly to a pinned (read-only) page-table page,
    /// which faults into Xen, which decodes, validates and emulates it (writable page tables,
    /// "trap-and-emulate"): 2.6.32's `xen_set_pte` writes the entry directly (a PTE of
    /// another mm: reclaim's swap entry set by kswapd), and the PTE atomics reclaim uses
    /// (`ptep_get_and_clear` in `try_to_unmap_one`, `ptep_test_and_clear_young` in
    /// `page_referenced_one`) are native instructions on the entry. Jeremy Fitzhardinge's
    /// ptep_modify_prot commit (2.6.26) calls two such faults "expensive" against one batched
    /// hypercall. Estimate: a guest page fault bounced into Xen plus instruction emulation and
    /// validation, several hypercalls' worth: 2 us.
    pub xen_pte_trap_ns: u64,
    /// Xen PV (`machine.xen_pv`): a page fault's trip through the hypervisor. A PV guest's
    /// kernel does not own the IDT: the CPU delivers #PF to Xen, which reads CR2, builds an
    /// exception frame on the guest kernel's stack and enters the handler the guest registered
    /// (`xen_page_fault` in 2.6.32 arch/x86/xen); the Xen paper (Barham et al., SOSP 2003)
    /// says page faults, unlike system calls, must always go through Xen because only ring 0
    /// can read CR2. A 64-bit guest's kernel runs in ring 3, so Xen also switches page tables
    /// in and out, and the return to user space is a `HYPERVISOR_iret`. Charged once per
    /// fault, on top of the native fault cost and the PTE hypercall. **Estimate**: no
    /// published per-bounce figure for 2009–2010 hardware was found; a hardware VM exit and
    /// entry on a 2009 Nehalem (Xeon X5570, KVM) costs ~2,000 cycles, ~0.7 us (Landau et al.,
    /// "SplitX", 2011, Table 1), and a bounce is two privilege transitions each way without
    /// a VMCS switch: 500 ns.
    pub xen_fault_bounce_ns: u64,
}

impl Costs {
    /// `swapin_fault_cpu_ns` as a swap-in pays it (resolved: unset is a file major fault's).
    pub fn swapin_fault_cpu(&self) -> u64 {
        self.swapin_fault_cpu_ns.unwrap_or(self.major_fault_cpu_ns - self.read_submit_cpu_ns)
    }
}

impl Default for Costs {
    fn default() -> Self {
        Costs {
            resident_touch_ns: 10,
            minor_fault_ns: 800,
            cache_hit_fault_ns: 600,
            fault_around_page_ns: 60,
            major_fault_cpu_ns: 2_000,
            read_submit_cpu_ns: 0,
            swapin_fault_cpu_ns: None,
            swapin_page_cpu_ns: 0,
            scan_page_ns: 100,
            lru_lock_folio_ns: 50,
            lru_lock_handoff_ns: 100,
            lru_note_cost_ns: 20,
            rmap_walk_ns: 150,
            unmap_ns: 250,
            tlb_shootdown_ns: 2_000,
            tlb_shootdown_per_cpu_ns: 100,
            tlb_ipi_receive_ns: 1_500,
            tlb_broadcast_flush_ns: 300,
            memcg_rstat_flush_cpu_ns: 4_500,
            memcg_rstat_flush_idle_cpu_ns: 200,
            free_page_ns: 100,
            swap_alloc_ns: 100,
            alloc_page_ns: 100,
            wakeup_ns: 2_000,
            msg_send_ns: 1_500,
            msg_recv_ns: 1_000,
            syscall_page_ns: 1_000,
            new_page_write_ns: 1_500,
            writeback_page_ns: 500,
            pt_walk_pte_ns: 2,
            bloom_test_ns: 5,
            kv_request_ns: 3_000,
            kv_client_request_ns: 2_500,
            xen_hypercall_ns: 500,
            xen_pte_trap_ns: 2_000,
            xen_fault_bounce_ns: 500,
            cpu_flops_per_us: 15_200,
        }
    }
}

fn default_sample() -> Duration {
    Duration(100_000_000)
}
fn default_quantum() -> Duration {
    Duration(20_000)
}
fn default_slice() -> Duration {
    Duration(3_000_000)
}
fn default_wakeup_gran() -> Duration {
    Duration(1_000_000)
}
fn default_sched_latency() -> Duration {
    Duration(6_000_000)
}

/// How the simulator itself runs (not part of the modelled machine).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimSettings {
    /// Time-series sampling period (virtual time).
    #[serde(default = "default_sample")]
    pub sample_interval: Duration,
    /// How far one CPU may run ahead of the others between synchronisation points.
    #[serde(default = "default_quantum")]
    pub sync_quantum: Duration,
    /// Scheduler time slice when more tasks are runnable than there are CPUs.
    #[serde(default = "default_slice")]
    pub sched_slice: Duration,
    /// A waking task preempts a running one whose virtual runtime is ahead of its own by more
    /// than this (CFS `sysctl_sched_wakeup_granularity`, 1 ms, kernel/sched/fair.c).
    #[serde(default = "default_wakeup_gran")]
    pub sched_wakeup_granularity: Duration,
    /// CFS `sysctl_sched_latency` before its CPU-count scaling (6 ms, kernel/sched/fair.c;
    /// scaled by 1 + ilog2(min(cpus, 8)) as `sched_init_granularity` does): bounds how far
    /// behind `min_vruntime` a waking sleeper is placed (engine/sched.rs).
    #[serde(default = "default_sched_latency")]
    pub sched_latency: Duration,
    /// Stop the whole run at this virtual time.
    #[serde(default)]
    pub time_limit: Option<Duration>,
}

impl Default for SimSettings {
    fn default() -> Self {
        toml::from_str("").expect("sim defaults")
    }
}

