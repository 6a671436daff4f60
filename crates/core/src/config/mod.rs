//! The workload language: one TOML file describes a machine, its kernel knobs, its swap
//! devices and the programs that run on it. The same file drives the simulator and the host
//! runner, so it says *what the programs do* (mappings, access patterns, compute between
//! touches), never how the simulator models it.
//!
//! Parsing is strict: unknown keys, wrong types and impossible values are errors that name the
//! file, the line and key, and what was expected ([`ConfigError`]).

pub mod calibrated;
pub mod footprint;
pub mod pagecache;
pub mod stores;
pub mod trace;
pub mod units;

use crate::device::DeviceParams;
use serde::{Deserialize, Serialize};
pub use units::{Duration, Size, PAGE_SIZE};

/// A user's mistake in a workload file, with enough context to fix it.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigError {
    pub file: String,
    pub line: Option<usize>,
    pub key: String,
    pub message: String,
}

/// Always one line: a name or value echoed from the user's text may hold newlines or other
/// control characters; they are shown escaped (`\n`).
impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        let line = self.line.map(|l| format!(":{l}")).unwrap_or_default();
        let text = if self.key.is_empty() {
            format!("{}{line}: {}", self.file, self.message)
        } else {
            format!("{}{line}: {}: {}", self.file, self.key, self.message)
        };
        for c in text.chars() {
            if c.is_control() {
                write!(f, "{}", c.escape_default())?;
            } else {
                write!(f, "{c}")?;
            }
        }
        Ok(())
    }
}

impl std::error::Error for ConfigError {}

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
/// pipe_buffer bookkeeping) occupy ceil(bytes / 4096) kernel pages per channel, allocated by
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
}

fn default_cpus() -> u32 {
    1
}
fn default_reserved() -> Size {
    Size::mib(48)
}
fn default_file_device() -> String {
    "sata-ssd".into()
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Machine {
    #[serde(default = "default_cpus")]
    pub cpus: u32,
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
    /// Device preset backing file-backed mappings.
    #[serde(default = "default_file_device")]
    pub file_device: String,
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
fn default_dirty_ratio() -> u64 {
    20
}
fn default_dirty_background_ratio() -> u64 {
    10
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

fn is_false(b: &bool) -> bool {
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
    /// throttled hard (`balance_dirty_pages`; the setpoint lies between it and the
    /// background threshold). Default 20 (mm/page-writeback.c).
    #[serde(default = "default_dirty_ratio")]
    pub dirty_ratio: u64,
    /// `vm.dirty_background_ratio`: percent at which the flusher starts background
    /// writeback. Default 10.
    #[serde(default = "default_dirty_background_ratio")]
    pub dirty_background_ratio: u64,
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
    /// CPU of a major fault besides the I/O: swap-cache insert, charge, PTE update.
    pub major_fault_cpu_ns: u64,
    /// Reclaim: isolating and checking one LRU page.
    pub scan_page_ns: u64,
    /// Reclaim: one reverse-map walk testing accessed bits (folio_referenced).
    pub rmap_walk_ns: u64,
    /// Reclaim: unmapping one page (try_to_unmap incl. TLB flush share).
    pub unmap_ns: u64,
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
}

impl Default for Costs {
    fn default() -> Self {
        Costs {
            resident_touch_ns: 10,
            minor_fault_ns: 800,
            cache_hit_fault_ns: 600,
            fault_around_page_ns: 60,
            major_fault_cpu_ns: 2_000,
            scan_page_ns: 100,
            rmap_walk_ns: 150,
            unmap_ns: 250,
            free_page_ns: 100,
            swap_alloc_ns: 100,
            alloc_page_ns: 100,
            wakeup_ns: 2_000,
            msg_send_ns: 1_500,
            msg_recv_ns: 1_000,
            syscall_page_ns: 1_000,
            writeback_page_ns: 500,
            pt_walk_pte_ns: 2,
            bloom_test_ns: 5,
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
    /// A task waking from sleep preempts one that has run at least this long (CFS
    /// sched_wakeup_granularity).
    #[serde(default = "default_wakeup_gran")]
    pub sched_wakeup_granularity: Duration,
    /// Stop the whole run at this virtual time.
    #[serde(default)]
    pub time_limit: Option<Duration>,
}

impl Default for SimSettings {
    fn default() -> Self {
        toml::from_str("").expect("sim defaults")
    }
}

fn default_instances() -> u32 {
    1
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskSpec {
    pub name: String,
    /// Identical processes started from this description (each with its own mappings).
    #[serde(default = "default_instances")]
    pub instances: u32,
    /// Empty for a task whose phases replay a trace: its mappings come from the trace.
    #[serde(rename = "mapping", default)]
    pub mappings: Vec<MappingSpec>,
    #[serde(rename = "phase")]
    pub phases: Vec<PhaseSpec>,
    /// Run the phases again and again until `time_limit` (vm-scalability style).
    #[serde(default)]
    pub repeat: bool,
    /// Stop this task at this virtual time after its start.
    #[serde(default)]
    pub time_limit: Option<Duration>,
    /// Start this long after time 0.
    #[serde(default)]
    pub start_delay: Duration,
    /// Instances form groups of this many consecutive instances (default: all in one group);
    /// message phases address channels by group or by rank within the group.
    #[serde(default)]
    pub group_size: Option<u32>,
    /// A background task (a load beside the measured programs, e.g. dbench beside hackbench):
    /// the run ends when every foreground task is done.
    #[serde(default)]
    pub background: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MappingKind {
    /// MAP_PRIVATE|MAP_ANONYMOUS.
    Anon,
    /// MAP_SHARED|MAP_ANONYMOUS: tmpfs-backed, swapped through its inode.
    Shmem,
    /// A MAP_SHARED mapping of a regular file on `machine.file_device`.
    File,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MappingSpec {
    pub name: String,
    pub kind: MappingKind,
    pub size: Size,
    /// Set by the resolver for mappings laid out from a trace (config/trace.rs): the trace's
    /// virtual page at which this mapping starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_page: Option<u64>,
    /// File mappings: madvise/fadvise advice for readahead (config/pagecache.rs).
    #[serde(default, skip_serializing_if = "pagecache::Advice::is_normal")]
    pub advice: pagecache::Advice,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PatternKind {
    /// Every page in order, `cycles` times.
    Sequential,
    /// Uniformly random pages.
    Random,
    /// Zipf-distributed page popularity with exponent `zipf_theta`, popular pages scattered.
    Zipf,
    /// Every `stride`-th page, then the next offset, covering all pages once per cycle.
    Strided,
    /// Blocked dense-matrix traversal (LU-style): see workload::Pattern::Matrix.
    Matrix,
    /// Send `messages` messages of `bytes` to each of `fanout` channels (write()/sendmsg());
    /// every message also touches the next page of `mapping` (the user buffer).
    Send,
    /// Receive `messages` messages from one channel (read()/recvmsg()), blocking while it is
    /// empty; every message also touches the next page of `mapping`.
    Recv,
    /// Replay a page trace (`file`): its mappings come from the trace (config/trace.rs).
    Trace,
}

/// How a phase's touches reach memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Access {
    /// Loads and stores through the page table (the accessed bit, faults).
    #[default]
    Pte,
    /// Buffered read()/write() of whole pages through the page cache (`file` mappings only):
    /// no page-table entry, `folio_mark_accessed` on every access (kernel-algorithms.md §3.10).
    Syscall,
}

/// Which channel of a channel array a message phase uses: the channels
/// `[sel * fanout, sel * fanout + fanout)` where `sel` is the instance's index, its group's
/// index, its rank within the group, or 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChannelIndex {
    #[default]
    Instance,
    Group,
    Rank,
    Zero,
}

fn default_one() -> f64 {
    1.0
}
fn default_theta() -> f64 {
    0.99
}
fn default_stride() -> u64 {
    16
}
fn default_block() -> u64 {
    64
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PhaseSpec {
    /// The mapping the phase touches (set by the resolver for trace phases).
    #[serde(default)]
    pub mapping: String,
    pub pattern: PatternKind,
    /// Passes over the mapping (sequential, strided, matrix), or touches = cycles x pages
    /// (random, zipf) unless `touches` is given.
    #[serde(default = "default_one")]
    pub cycles: f64,
    #[serde(default)]
    pub touches: Option<u64>,
    /// Fraction of touches that write (1.0: every touch dirties its page).
    #[serde(default = "default_one")]
    pub write_ratio: f64,
    /// The program's own CPU time per touch.
    #[serde(default)]
    pub compute: Duration,
    #[serde(default)]
    pub backward: bool,
    /// Check every read of this phase: an anon page must hold what an earlier phase wrote
    /// (fill-and-verify, seed 002). A read that finds no data (never written, or lost on its
    /// way through swap) counts in the task's `verify_errors`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub verify: bool,
    #[serde(default = "default_theta")]
    pub zipf_theta: f64,
    #[serde(default = "default_stride")]
    pub stride: u64,
    /// Matrix: pages per block edge.
    #[serde(default = "default_block")]
    pub block_pages: u64,
    /// Touches through page tables ("pte") or buffered file I/O ("syscall").
    #[serde(default)]
    pub access: Access,
    /// send/recv: the channel array.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    /// send: messages to each destination channel; recv: messages to receive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<u64>,
    /// send: payload bytes per message (default 100, hackbench's DATASIZE).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<Size>,
    /// send: destination channels, `[sel * fanout, sel * fanout + fanout)`, written round-robin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fanout: Option<u32>,
    /// send/recv: how `sel` is chosen (see [`ChannelIndex`]).
    #[serde(default)]
    pub index: ChannelIndex,
    /// trace: the trace file (swaplab, oracleGeneral or CSV, optionally .zst), relative to the
    /// workload file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// trace: the trace's clock units (instructions, or records) per second of virtual time;
    /// each access then costs its time delta as compute. Without it every access costs `compute`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed: Option<f64>,
    /// trace: replay only these threads' accesses (default: all, in trace order).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<Vec<u32>>,
    /// trace: CSV column spec, e.g. "time=icount,page=vpn,op=op" (default: header names).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub columns: Option<String>,
}

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
/// 2.6.28 in two things the model has: direct reclaim bails out once it reclaimed its goal
/// below DEF_PRIORITY (Rik van Riel's 2.6.29 rule, `nr_reclaimed >= nr_to_reclaim &&
/// priority < DEF_PRIORITY` in 2.6.32's shrink_zone), and swapon marks an area
/// SWP_SOLIDSTATE only when its queue has QUEUE_FLAG_NONROT, which brd did not set (seed
/// 002: adding it "didn't make any difference"), so a ramdisk is a disk to swap
/// ([`crate::device::DeviceParams::queue_nonrot`]).
pub fn era_2_6_32(profile: &str) -> bool {
    profile == "2.6.32"
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

/// A configuration after defaults, presets and validation: what a run actually used.
#[derive(Clone, Debug, Serialize)]
pub struct Resolved {
    #[serde(flatten)]
    pub config: Config,
    pub swap_devices: Vec<ResolvedSwap>,
    pub file_device_params: DeviceParams,
    pub profile: Profile,
}

#[derive(Clone, Debug, Serialize)]
pub struct ResolvedSwap {
    pub name: String,
    pub size: Size,
    pub priority: i32,
    pub params: DeviceParams,
}

/// Parse a workload file's text, apply `--set key=value` overrides, validate.
///
/// Errors name lines of the file as written (never of the text rewritten by the overrides),
/// or the `--set` that introduced the offending value. A model that would not fit in this
/// machine's memory is refused here, before anything is allocated (footprint.rs).
pub fn load(text: &str, file: &str, overrides: &[String]) -> Result<Resolved, ConfigError> {
    let rewritten = apply_overrides(text, file, overrides)?;
    let mut cfg: Config = toml::from_str(&rewritten).map_err(|e| toml_error(text, &rewritten, file, &e, overrides))?;
    let located = |key: &str, message: String| locate_error(text, file, overrides, key, message);
    trace::lay_out(&mut cfg, file, &located)?;
    apply_calibrated_costs(&mut cfg, &rewritten, &located)?;
    let had_content = cfg.content.is_some();
    let mut content = cfg.content.take().unwrap_or_default();
    stores::resolve(&cfg.zswap, &mut cfg.frontswap, &mut content, file, &located)?;
    // Embedded in results only where it matters, so runs without a store keep their config.
    cfg.content = (had_content || stores::store_name(&cfg.zswap, &cfg.frontswap) != "none").then_some(content);
    let resolved = resolve(cfg, &located)?;
    footprint::check(&resolved, footprint::available_bytes()).map_err(|(key, message)| located(key, message))?;
    Ok(resolved)
}

/// Longest piece of a user's text echoed in a message (a line may be megabytes long).
const SNIPPET_CHARS: usize = 80;

fn cut(s: &str) -> String {
    match s.char_indices().nth(SNIPPET_CHARS) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_string(),
    }
}

/// The override that set `key` (or a table above it), if any.
fn override_of<'a>(overrides: &'a [String], key: &str) -> Option<&'a String> {
    overrides.iter().rev().find(|o| {
        let k = o.split('=').next().unwrap_or("").trim();
        !k.is_empty() && (key == k || key.starts_with(&format!("{k}.")))
    })
}

fn locate_error(original: &str, file: &str, overrides: &[String], key: &str, message: String) -> ConfigError {
    if let Some(ov) = override_of(overrides, key) {
        let message = format!("{message} (set by --set {})", cut(ov));
        return ConfigError { file: file.to_string(), line: None, key: key.to_string(), message };
    }
    ConfigError { file: file.to_string(), line: locate(original, key), key: key.to_string(), message }
}

fn toml_error(original: &str, rewritten: &str, file: &str, e: &toml::de::Error, overrides: &[String]) -> ConfigError {
    let line = e.span().map(|s| line_of(rewritten, s.start.min(rewritten.len())));
    let snippet = line.and_then(|l| rewritten.lines().nth(l - 1)).map(str::trim).filter(|s| !s.is_empty());
    let mut message = syntax_message(rewritten, e.message(), e.span());
    if let Some(s) = snippet {
        message = format!("{message} (in `{}`)", cut(s));
    }
    if overrides.is_empty() {
        return ConfigError { file: file.to_string(), line, key: String::new(), message };
    }
    // the same line in the file as written; none when an override wrote it
    let line = snippet.and_then(|s| original.lines().position(|l| l.trim() == s)).map(|i| i + 1);
    if line.is_none() {
        message.push_str(" [in a value set by --set]");
    }
    ConfigError { file: file.to_string(), line, key: String::new(), message }
}

/// A calibrated device preset's `[costs]` (calibrated.rs) for every cost the workload does
/// not set itself; the first calibrated device (swap devices in order, then the file device)
/// provides them.
fn apply_calibrated_costs(cfg: &mut Config, rewritten: &str, at: &dyn Fn(&str, String) -> ConfigError) -> Result<(), ConfigError> {
    let devices = cfg.swap.iter().enumerate().map(|(i, s)| (format!("swap.{i}.device"), s.device.clone()));
    let mut devices = devices.chain(std::iter::once(("machine.file_device".to_string(), cfg.machine.file_device.clone())));
    let Some((key, name)) = devices.find_map(|(k, d)| calibrated::name_of(&d).map(|n| (k, n.to_string()))) else {
        return Ok(());
    };
    let (_, costs) = calibrated::load(&name).map_err(|e| at(&key, e))?;
    let user = rewritten
        .parse::<toml::Table>()
        .ok()
        .and_then(|mut t| t.remove("costs"))
        .and_then(|v| if let toml::Value::Table(t) = v { Some(t) } else { None })
        .unwrap_or_default();
    let mut table = toml::Table::try_from(&cfg.costs).expect("costs serialize");
    for (k, v) in costs {
        if !table.contains_key(&k) {
            return Err(at(&key, format!("calibrated preset {name:?}: unknown cost `{k}` in its [costs]")));
        }
        if !user.contains_key(&k) {
            table.insert(k, v);
        }
    }
    cfg.costs = toml::Value::Table(table)
        .try_into()
        .map_err(|e: toml::de::Error| at(&key, format!("calibrated preset {name:?}: [costs]: {}", e.message().trim())))?;
    Ok(())
}

/// One-line description of a parse error; the TOML parser leaves some messages empty (e.g. a
/// key with no value at the end of the file), so fall back to naming the column.
fn syntax_message(text: &str, message: &str, span: Option<std::ops::Range<usize>>) -> String {
    let m = message.trim().replace('\n', " ");
    if !m.is_empty() {
        return m;
    }
    let col = span.map(|s| {
        let start = s.start.min(text.len());
        start - text[..start].rfind('\n').map_or(0, |i| i + 1) + 1
    });
    match col {
        Some(c) => format!("invalid TOML syntax at column {c} (a value or closing bracket is missing)"),
        None => "invalid TOML syntax".to_string(),
    }
}

/// Find the line of a dotted key path (`task.0.mapping.1.size`) in the file, if present.
/// Stops at the deepest segment that exists, so a missing key points at its table.
pub fn locate(text: &str, path: &str) -> Option<usize> {
    use toml_edit::{Item, TableLike, Value};
    let doc = toml_edit::ImDocument::parse(text.to_string()).ok()?;
    let segs: Vec<&str> = path.split('.').collect();
    let mut table: &dyn TableLike = doc.as_table();
    let mut span = None;
    let mut i = 0;
    while i < segs.len() {
        let Some(item) = table.get(segs[i]) else { break };
        span = table.key(segs[i]).and_then(|k| k.span()).or_else(|| item.span()).or(span);
        match item {
            Item::ArrayOfTables(a) => {
                let Some(t) = segs.get(i + 1).and_then(|s| s.parse::<usize>().ok()).and_then(|n| a.get(n)) else { break };
                span = t.span().or(span);
                table = t;
                i += 2;
                continue;
            }
            Item::Table(t) => table = t,
            Item::Value(Value::InlineTable(t)) => table = t,
            _ => break,
        }
        i += 1;
    }
    span.map(|s| line_of(text, s.start))
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// Apply `key=value` overrides (dotted paths, numeric segments index arrays of tables) to the
/// document text. Values are TOML literals; anything that does not parse as one is a string.
pub fn apply_overrides(text: &str, file: &str, overrides: &[String]) -> Result<String, ConfigError> {
    use toml_edit::{Item, TableLike};
    if overrides.is_empty() {
        return Ok(text.to_string());
    }
    let err = |key: &str, message: String| ConfigError { file: file.to_string(), line: None, key: key.to_string(), message };
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| {
        let line = e.span().map(|s| line_of(text, s.start));
        let message = syntax_message(text, e.message(), e.span());
        ConfigError { file: file.to_string(), line, key: String::new(), message }
    })?;
    for ov in overrides {
        let (key, raw) = ov
            .split_once('=')
            .ok_or_else(|| err(ov, "an override must look like key=value (e.g. kernel.page_cluster=0)".into()))?;
        let (key, raw) = (key.trim(), raw.trim());
        let value: toml_edit::Value = raw.parse::<toml_edit::Value>().unwrap_or_else(|_| toml_edit::Value::from(raw));
        let segs: Vec<&str> = key.split('.').collect();
        if segs.iter().any(|s| s.is_empty() || s.parse::<usize>().is_ok()) && segs.len() == 1 || segs.iter().any(|s| s.is_empty()) {
            return Err(err(key, "expected a dotted key path such as kernel.page_cluster or task.0.phase.1.pattern".into()));
        }
        let mut table: &mut dyn TableLike = doc.as_table_mut();
        let mut i = 0;
        while i + 1 < segs.len() {
            let here = segs[..=i].join(".");
            if table.get(segs[i]).is_none() {
                table.insert(segs[i], Item::Table(toml_edit::Table::new()));
            }
            let item = table.get_mut(segs[i]).expect("present");
            match item {
                Item::ArrayOfTables(a) => {
                    let n = a.len();
                    let idx = segs[i + 1]
                        .parse::<usize>()
                        .map_err(|_| err(key, format!("`{here}` is a list: follow it with an index, e.g. {here}.0")))?;
                    if i + 2 >= segs.len() {
                        return Err(err(key, "cannot replace a whole table; set one of its keys".into()));
                    }
                    table = a
                        .get_mut(idx)
                        .ok_or_else(|| err(key, format!("index {idx} out of range: `{here}` has {n} entries")))?;
                    i += 2;
                }
                other => {
                    table = other.as_table_like_mut().ok_or_else(|| err(key, format!("`{here}` is not a table")))?;
                    i += 1;
                }
            }
        }
        if i >= segs.len() {
            return Err(err(key, "the key path ends in an index; name a key".into()));
        }
        if table.get(segs[i]).is_some_and(|old| old.is_table_like() || old.is_array_of_tables()) {
            return Err(err(
                key,
                format!("`{key}` is a table: replacing it whole would drop its other keys; set them one at a time, e.g. --set {key}.KEY=VALUE"),
            ));
        }
        table.insert(segs[i], Item::Value(value));
    }
    Ok(doc.to_string())
}

/// Why a device could not be resolved: its preset, or one of its parameter overrides (named,
/// so that the error points at `swap.N.params.NAME`, not at the device).
#[derive(Debug)]
pub enum DeviceError {
    Preset(String),
    Param(String, String),
}

/// A device preset (built-in, or `calibrated:NAME`) with a table of parameter overrides,
/// rejecting unknown parameter names.
pub fn device_with_overrides(preset: &str, overrides: &toml::Table) -> Result<DeviceParams, DeviceError> {
    let mut table;
    if let Some(name) = calibrated::name_of(preset) {
        let base = DeviceParams::preset(calibrated::BASE_PRESET).expect("a built-in preset");
        table = toml::Table::try_from(&base).expect("device params serialize");
        let (device, _) = calibrated::load(name).map_err(DeviceError::Preset)?;
        overlay(&mut table, &device).map_err(|(k, m)| DeviceError::Preset(format!("calibrated preset {name:?}: [device] {k}: {m}")))?;
    } else {
        let base = DeviceParams::preset(preset).ok_or_else(|| {
            DeviceError::Preset(format!(
                "unknown device preset {preset:?} (expected one of {}, or \"calibrated:NAME\")",
                DeviceParams::PRESETS.join(", ")
            ))
        })?;
        if overrides.is_empty() {
            return Ok(base);
        }
        table = toml::Table::try_from(&base).expect("device params serialize");
    }
    overlay(&mut table, overrides).map_err(|(k, m)| DeviceError::Param(k, m))?;
    let params: DeviceParams =
        toml::Value::Table(table).try_into().map_err(|e: toml::de::Error| DeviceError::Preset(e.message().trim().to_string()))?;
    params.validate().map_err(DeviceError::Preset)?;
    Ok(params)
}

/// Set `fields` onto a device's parameter table, each checked alone so that an error names
/// its field: (field, what is wrong).
fn overlay(table: &mut toml::Table, fields: &toml::Table) -> Result<(), (String, String)> {
    for (k, v) in fields {
        if k == "queue_nonrot" {
            // Optional (absent from a serialized preset): the driver's flag.
            if !v.is_bool() {
                return Err((k.clone(), format!("expected boolean, got {}", v.type_str())));
            }
            table.insert(k.clone(), v.clone());
            continue;
        }
        let Some(old) = table.get(k) else {
            let mut known: Vec<&str> = table.keys().map(|s| s.as_str()).collect();
            known.push("queue_nonrot");
            return Err((k.clone(), format!("unknown device parameter `{k}` (known: {})", known.join(", "))));
        };
        if std::mem::discriminant(old) != std::mem::discriminant(v) {
            return Err((k.clone(), format!("expected {}, got {}", old.type_str(), v.type_str())));
        }
        table.insert(k.clone(), v.clone());
    }
    Ok(())
}

/// Watermarks of the single modelled zone, in pages (kernel-algorithms.md §3.2).
#[derive(Clone, Copy, Debug, Serialize, PartialEq, Eq)]
pub struct Watermarks {
    pub min: u64,
    pub low: u64,
    pub high: u64,
}

/// `calculate_min_free_kbytes`: clamp(int_sqrt(lowmem_kb * 16), 128, 262144) (§3.2).
pub fn default_min_free_kbytes(managed_pages: u64) -> u64 {
    let lowmem_kb = managed_pages * 4;
    ((lowmem_kb * 16) as f64).sqrt().floor().clamp(128.0, 262_144.0) as u64
}

/// `__setup_per_zone_wmarks` for one zone holding all managed pages (§3.2); before 4.6 the
/// gaps were min/4 and min/2 with no scale factor.
pub fn watermarks(managed_pages: u64, min_free_kbytes: u64, scale_factor: u32, profile: Profile) -> Watermarks {
    let min = min_free_kbytes / 4;
    if profile <= Profile::V3_14 {
        return Watermarks { min, low: min + min / 4, high: min + min / 2 };
    }
    let gap = (min / 4).max(managed_pages * scale_factor as u64 / 10_000);
    Watermarks { min, low: min + gap, high: min + 2 * gap }
}

/// The `vm.dirty_*` sysctls' own bounds (kernel/sysctl.c: ratios 0..=100, `dirty_bytes` at
/// least two pages when set).
fn check_dirty_knobs(k: &Kernel) -> Result<(), (&'static str, String)> {
    if k.dirty_ratio > 100 {
        return Err(("kernel.dirty_ratio", format!("expected a percentage 0..=100, got {}", k.dirty_ratio)));
    }
    if k.dirty_background_ratio > 100 {
        return Err(("kernel.dirty_background_ratio", format!("expected a percentage 0..=100, got {}", k.dirty_background_ratio)));
    }
    if k.dirty_bytes != 0 && k.dirty_bytes < 2 * crate::mm::PAGE_SIZE {
        return Err(("kernel.dirty_bytes", format!("expected 0 or at least 8192, got {}", k.dirty_bytes)));
    }
    // Keep jiffy and nanosecond arithmetic far from overflow: a day is beyond any run.
    for (key, cs) in [("kernel.dirty_expire_centisecs", k.dirty_expire_centisecs), ("kernel.dirty_writeback_centisecs", k.dirty_writeback_centisecs)] {
        if cs > 8_640_000 {
            return Err((key, format!("expected at most 8640000 (a day), got {cs}")));
        }
    }
    Ok(())
}

fn resolve(cfg: Config, at: &dyn Fn(&str, String) -> ConfigError) -> Result<Resolved, ConfigError> {
    let m = &cfg.machine;
    let profile = Profile::parse(&cfg.kernel.profile)
        .ok_or_else(|| at("kernel.profile", format!("unknown kernel profile {:?} (expected \"2.6.28\", \"2.6.32\", \"3.14\", \"4.14\" or \"6.x\")", cfg.kernel.profile)))?;
    if cfg.sim.time_limit == Some(Duration(0)) {
        return Err(at("sim.time_limit", "expected a positive duration: 0 would end the run before anything happens (leave it out for no limit)".into()));
    }
    if m.cpus == 0 || m.cpus > 1024 {
        return Err(at("machine.cpus", format!("expected 1..=1024 CPUs, got {}", m.cpus)));
    }
    if m.ram.pages() == 0 {
        return Err(at("machine.ram", "RAM must be at least one page".into()));
    }
    if m.ram.0 > (1u64 << 42) {
        return Err(at("machine.ram", "at most 4 TiB of RAM can be simulated (32-bit frame numbers)".into()));
    }
    let managed = m.ram.pages().saturating_sub(m.kernel_reserved.pages());
    let min_free = cfg.kernel.min_free_kbytes.unwrap_or_else(|| default_min_free_kbytes(managed));
    let wm = watermarks(managed, min_free, cfg.kernel.watermark_scale_factor, profile);
    if managed <= wm.high * 2 + 64 {
        return Err(at(
            "machine.ram",
            format!(
                "RAM of {} pages leaves {} pages after the kernel's reserve of {} pages: not enough above the high watermark ({} pages)",
                m.ram.pages(), managed, m.kernel_reserved.pages(), wm.high
            ),
        ));
    }
    if let Some(limit) = m.memcg_limit {
        if limit.pages() < 64 {
            return Err(at("machine.memcg_limit", "a memory cgroup limit below 64 pages cannot run a program".into()));
        }
    }
    if cfg.kernel.swappiness > 200 {
        return Err(at("kernel.swappiness", format!("expected 0..=200, got {}", cfg.kernel.swappiness)));
    }
    if cfg.kernel.page_cluster > 31 {
        return Err(at("kernel.page_cluster", format!("expected 0..=31, got {}", cfg.kernel.page_cluster)));
    }
    if !(1..=3000).contains(&cfg.kernel.watermark_scale_factor) {
        return Err(at("kernel.watermark_scale_factor", "expected 1..=3000".into()));
    }
    if !READAHEAD_POLICIES.contains(&cfg.kernel.readahead.as_str()) {
        return Err(at("kernel.readahead", format!("unknown readahead policy {:?} (expected one of {})", cfg.kernel.readahead, READAHEAD_POLICIES.join(", "))));
    }
    if !BAILOUT_POLICIES.contains(&cfg.kernel.bailout.as_str()) {
        return Err(at("kernel.bailout", format!("unknown bail-out policy {:?} (expected one of {})", cfg.kernel.bailout, BAILOUT_POLICIES.join(", "))));
    }
    if !RECLAIM_POLICIES.contains(&cfg.kernel.reclaim.as_str()) {
        return Err(at("kernel.reclaim", format!("unknown reclaim policy {:?}: expected one of {}", cfg.kernel.reclaim, RECLAIM_POLICIES.join(", "))));
    }
    if cfg.kernel.lru_gen_enabled > 0x7 {
        return Err(at("kernel.lru_gen_enabled", format!("expected capability bits 0x0..=0x7, got {:#x}", cfg.kernel.lru_gen_enabled)));
    }
    if cfg.kernel.reclaim == "mglru" {
        if Profile::parse(&cfg.kernel.profile) != Some(Profile::V6) {
            return Err(at("kernel.reclaim", format!("MGLRU was merged in 6.1: kernel.profile {:?} has no multi-generational LRU (use 6.x)", cfg.kernel.profile)));
        }
        if cfg.kernel.lru_gen_enabled & 0x1 == 0 {
            return Err(at("kernel.lru_gen_enabled", "without bit 0x1 the kernel runs the classic LRU: set kernel.reclaim = \"classic\"".into()));
        }
    }
    if !(100..=1000).contains(&cfg.kernel.hz) {
        return Err(at("kernel.hz", "expected 100..=1000".into()));
    }
    check_dirty_knobs(&cfg.kernel).map_err(|(key, msg)| at(key, msg))?;
    cfg.pagecache.validate().map_err(|(key, msg)| at(key, msg))?;
    let file_device_params = device_with_overrides(&m.file_device, &toml::Table::new()).map_err(|e| match e {
        DeviceError::Preset(m) | DeviceError::Param(_, m) => at("machine.file_device", m),
    })?;
    let mut swap_devices = Vec::new();
    for (i, s) in cfg.swap.iter().enumerate() {
        let mut params = device_with_overrides(&s.device, &s.params).map_err(|e| match e {
            DeviceError::Preset(m) => at(&format!("swap.{i}.device"), m),
            DeviceError::Param(k, m) => at(&format!("swap.{i}.params.{k}"), m),
        })?;
        if era_2_6_32(&cfg.kernel.profile) && s.device == "ramdisk" && params.queue_nonrot.is_none() {
            // 2.6.32's brd_alloc did not set QUEUE_FLAG_NONROT: swap saw a disk.
            params.queue_nonrot = Some(false);
        }
        if s.size.pages() < 2 {
            return Err(at(&format!("swap.{i}.size"), "a swap device needs at least 2 pages (slot 0 holds the header)".into()));
        }
        if s.size.pages() >= (1 << 32) {
            return Err(at(&format!("swap.{i}.size"), "at most 16 TiB per swap device".into()));
        }
        swap_devices.push(ResolvedSwap {
            name: format!("swap{i}:{}", s.device),
            size: s.size,
            priority: s.priority.unwrap_or(-1 - i as i32),
            params,
        });
    }
    if cfg.swap.len() > 32 {
        return Err(at("swap", "at most 32 swap devices".into()));
    }
    if cfg.tasks.is_empty() {
        return Err(at("task", "a workload needs at least one [[task]]".into()));
    }
    let mut total_instances = 0u64;
    for (ti, t) in cfg.tasks.iter().enumerate() {
        if t.instances == 0 {
            return Err(at(&format!("task.{ti}.instances"), "expected at least 1".into()));
        }
        total_instances += t.instances as u64;
        if t.mappings.is_empty() {
            return Err(at(&format!("task.{ti}"), "a task needs at least one [[task.mapping]]".into()));
        }
        if t.phases.is_empty() {
            return Err(at(&format!("task.{ti}"), "a task needs at least one [[task.phase]]".into()));
        }
        if t.time_limit == Some(Duration(0)) {
            return Err(at(&format!("task.{ti}.time_limit"), "expected a positive duration: 0 would stop the task before it starts (leave it out for no limit)".into()));
        }
        if t.repeat && t.time_limit.is_none() && cfg.sim.time_limit.is_none() {
            return Err(at(&format!("task.{ti}.repeat"), "repeat = true needs a time_limit (on the task or in [sim])".into()));
        }
        for (mi, mp) in t.mappings.iter().enumerate() {
            if mp.size.pages() == 0 {
                return Err(at(&format!("task.{ti}.mapping.{mi}.size"), format!("mapping {:?} has zero pages: expected at least 4096 bytes", mp.name)));
            }
            if mp.size.pages() >= (1 << 31) {
                return Err(at(&format!("task.{ti}.mapping.{mi}.size"), "at most 8 TiB per mapping".into()));
            }
            if t.mappings[..mi].iter().any(|o| o.name == mp.name) {
                return Err(at(&format!("task.{ti}.mapping.{mi}.name"), format!("duplicate mapping name {:?}", mp.name)));
            }
        }
        for (pi, ph) in t.phases.iter().enumerate() {
            let key = |f: &str| format!("task.{ti}.phase.{pi}.{f}");
            if !t.mappings.iter().any(|mp| mp.name == ph.mapping) {
                let names: Vec<&str> = t.mappings.iter().map(|m| m.name.as_str()).collect();
                return Err(at(&key("mapping"), format!("no mapping named {:?} in this task (it has: {})", ph.mapping, names.join(", "))));
            }
            if !(0.0..=1.0).contains(&ph.write_ratio) {
                return Err(at(&key("write_ratio"), format!("expected a fraction in 0..=1, got {}", ph.write_ratio)));
            }
            if !(ph.cycles > 0.0 && ph.cycles.is_finite()) {
                return Err(at(&key("cycles"), format!("expected a positive number of cycles, got {}", ph.cycles)));
            }
            if ph.touches == Some(0) {
                return Err(at(&key("touches"), "expected at least one touch".into()));
            }
            if ph.pattern == PatternKind::Zipf && !(ph.zipf_theta > 0.0 && ph.zipf_theta < 10.0) {
                return Err(at(&key("zipf_theta"), "expected 0 < zipf_theta < 10".into()));
            }
            if ph.stride == 0 {
                return Err(at(&key("stride"), "expected a stride of at least 1 page".into()));
            }
            if ph.block_pages == 0 {
                return Err(at(&key("block_pages"), "expected at least 1 page per block".into()));
            }
        }
    }
    if total_instances > 100_000 {
        return Err(at("task", "at most 100000 task instances".into()));
    }
    validate_messages(&cfg, at)?;
    if cfg.sim.sample_interval.0 < 1_000_000 {
        return Err(at("sim.sample_interval", "expected at least 1ms".into()));
    }
    if cfg.sim.sync_quantum.0 == 0 || cfg.sim.sched_slice.0 == 0 {
        return Err(at("sim", "sync_quantum and sched_slice must be positive".into()));
    }
    Ok(Resolved { config: cfg, swap_devices, file_device_params, profile })
}

/// The channels a message phase of instance `instance` uses: `[sel * fanout, sel * fanout +
/// fanout)` of its channel array (see [`ChannelIndex`]).
pub fn phase_channels(task: &TaskSpec, ph: &PhaseSpec, instance: u32) -> std::ops::Range<u64> {
    let g = task.group_size.unwrap_or(task.instances).max(1);
    let sel = match ph.index {
        ChannelIndex::Instance => instance,
        ChannelIndex::Group => instance / g,
        ChannelIndex::Rank => instance % g,
        ChannelIndex::Zero => 0,
    } as u64;
    let fanout = if ph.pattern == PatternKind::Send { ph.fanout.unwrap_or(1) as u64 } else { 1 };
    sel * fanout..sel * fanout + fanout
}

/// Channels, message phases and buffered-I/O phases: names resolve, channel indices stay in
/// their arrays, and no channel is asked for more messages than are sent to it (a receiver
/// would wait forever).
fn validate_messages(cfg: &Config, at: &dyn Fn(&str, String) -> ConfigError) -> Result<(), ConfigError> {
    if cfg.tasks.iter().all(|t| t.background) {
        return Err(at("task", "every task is background: the run needs at least one task to wait for".into()));
    }
    let mut total = 0u64;
    for (ci, c) in cfg.channels.iter().enumerate() {
        if c.name.is_empty() || cfg.channels[..ci].iter().any(|o| o.name == c.name) {
            return Err(at(&format!("channel.{ci}.name"), format!("channel names must be non-empty and unique, got {:?}", c.name)));
        }
        if c.count == 0 {
            return Err(at(&format!("channel.{ci}.count"), "expected at least 1 channel".into()));
        }
        if c.capacity.0 == 0 {
            return Err(at(&format!("channel.{ci}.capacity"), "expected a capacity of at least 1 byte".into()));
        }
        total += c.count as u64;
    }
    if total > 10_000_000 {
        return Err(at("channel", "at most 10 million channels".into()));
    }
    // Messages sent to / received from each channel, per array.
    let mut sent: Vec<Vec<u64>> = cfg.channels.iter().map(|c| vec![0; c.count as usize]).collect();
    let mut recvd: Vec<Vec<u64>> = sent.clone();
    let mut repeated = vec![false; cfg.channels.len()];
    for (ti, t) in cfg.tasks.iter().enumerate() {
        if t.group_size == Some(0) {
            return Err(at(&format!("task.{ti}.group_size"), "expected at least 1".into()));
        }
        for (pi, ph) in t.phases.iter().enumerate() {
            let key = |f: &str| format!("task.{ti}.phase.{pi}.{f}");
            let msg = matches!(ph.pattern, PatternKind::Send | PatternKind::Recv);
            if ph.access == Access::Syscall {
                let kind = t.mappings.iter().find(|m| m.name == ph.mapping).map(|m| m.kind);
                if kind != Some(MappingKind::File) {
                    return Err(at(&key("access"), "access = \"syscall\" (buffered read/write) needs a mapping of kind \"file\"".into()));
                }
                if msg {
                    return Err(at(&key("access"), "message phases touch their buffer through page tables: use access = \"pte\"".into()));
                }
            }
            if !msg {
                for (k, set) in [("channel", ph.channel.is_some()), ("messages", ph.messages.is_some()), ("bytes", ph.bytes.is_some()), ("fanout", ph.fanout.is_some())] {
                    if set {
                        return Err(at(&key(k), format!("`{k}` belongs to message phases (pattern = \"send\" or \"recv\")")));
                    }
                }
                continue;
            }
            let Some(name) = &ph.channel else {
                return Err(at(&key("pattern"), "a message phase needs `channel`".into()));
            };
            let Some(ci) = cfg.channels.iter().position(|c| &c.name == name) else {
                let names: Vec<&str> = cfg.channels.iter().map(|c| c.name.as_str()).collect();
                return Err(at(&key("channel"), format!("no [[channel]] named {name:?} (declared: {})", if names.is_empty() { "none".into() } else { names.join(", ") })));
            };
            let Some(n) = ph.messages.filter(|&n| n > 0) else {
                return Err(at(&key("messages"), "a message phase needs `messages` >= 1".into()));
            };
            if ph.pattern == PatternKind::Recv && (ph.fanout.is_some() || ph.bytes.is_some()) {
                return Err(at(&key("fanout"), "`fanout` and `bytes` belong to send phases; a receiver takes what arrives".into()));
            }
            if ph.fanout == Some(0) {
                return Err(at(&key("fanout"), "expected at least 1 destination".into()));
            }
            if ph.bytes.is_some_and(|b| b.0 == 0 || b.0 > u32::MAX as u64) {
                return Err(at(&key("bytes"), "expected 1 byte .. 4 GiB per message".into()));
            }
            let count = cfg.channels[ci].count as u64;
            if t.repeat {
                repeated[ci] = true;
            }
            for inst in 0..t.instances {
                let r = phase_channels(t, ph, inst);
                if r.end > count {
                    return Err(at(
                        &key("index"),
                        format!("instance {inst} of task {:?} uses channels {}..{} of {name:?}, which has {count} (give the channel array `count = {}` or change `index`/`fanout`/`group_size`)", t.name, r.start, r.end, r.end.max(count)),
                    ));
                }
                for c in r {
                    if ph.pattern == PatternKind::Send {
                        sent[ci][c as usize] += n;
                    } else {
                        recvd[ci][c as usize] += n;
                    }
                }
            }
        }
    }
    for (ci, c) in cfg.channels.iter().enumerate() {
        if repeated[ci] {
            continue;
        }
        if let Some(k) = (0..c.count as usize).find(|&k| recvd[ci][k] > sent[ci][k]) {
            return Err(at(
                &format!("channel.{ci}"),
                format!("channel {:?}[{k}]: receivers wait for {} messages but senders send {}: the receivers would block forever", c.name, recvd[ci][k], sent[ci][k]),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = r#"
[machine]
ram = "256MiB"

[[swap]]
device = "sata-ssd"
size = "256MiB"

[[task]]
name = "t"
[[task.mapping]]
name = "buf"
kind = "anon"
size = "300MiB"
[[task.phase]]
mapping = "buf"
pattern = "sequential"
"#;

    #[test]
    fn base_config_loads_with_defaults() {
        let r = load(BASE, "base.toml", &[]).unwrap();
        assert_eq!(r.config.kernel.page_cluster, 3);
        assert_eq!(r.swap_devices[0].priority, -1);
        assert_eq!(r.profile, Profile::V6);
    }

    #[test]
    fn unknown_key_names_file_and_line() {
        let text = BASE.replace("ram = \"256MiB\"", "ram = \"256MiB\"\nramm = 3");
        let e = load(&text, "w.toml", &[]).unwrap_err();
        assert_eq!(e.file, "w.toml");
        assert_eq!(e.line, Some(4));
        assert!(e.message.contains("unknown field `ramm`"), "{e}");
    }

    #[test]
    fn wrong_type_is_reported_with_expectation() {
        let text = BASE.replace("ram = \"256MiB\"", "ram = \"256MiB\"\ncpus = \"two\"");
        let e = load(&text, "w.toml", &[]).unwrap_err();
        assert!(e.to_string().contains("w.toml:4"), "{e}");
    }

    #[test]
    fn zero_page_mapping_is_rejected_at_its_line() {
        let text = BASE.replace("size = \"300MiB\"", "size = 0");
        let e = load(&text, "w.toml", &[]).unwrap_err();
        assert_eq!(e.key, "task.0.mapping.0.size");
        assert_eq!(e.line, Some(14));
    }

    #[test]
    fn ram_below_the_reserve_is_rejected() {
        let e = load(&BASE.replace("256MiB\"\n\n[[swap]]", "40MiB\"\n\n[[swap]]"), "w.toml", &[]).unwrap_err();
        assert_eq!(e.key, "machine.ram");
    }

    #[test]
    fn unknown_policy_is_rejected() {
        let e = load(BASE, "w.toml", &["kernel.readahead=\"smart\"".into()]).unwrap_err();
        assert_eq!(e.key, "kernel.readahead");
        assert!(e.message.contains("adaptive"));
    }

    #[test]
    fn negative_size_is_rejected() {
        let e = load(&BASE.replace("\"300MiB\"", "-5"), "w.toml", &[]).unwrap_err();
        assert!(e.message.contains("negative"), "{e}");
    }

    #[test]
    fn overrides_reach_nested_tables_and_arrays() {
        let r = load(
            BASE,
            "w.toml",
            &["kernel.page_cluster=0".into(), "task.0.phase.0.pattern=random".into(), "swap.0.params.parallelism=1".into()],
        )
        .unwrap();
        assert_eq!(r.config.kernel.page_cluster, 0);
        assert_eq!(r.config.tasks[0].phases[0].pattern, PatternKind::Random);
        assert_eq!(r.swap_devices[0].params.parallelism, 1);
        let e = load(BASE, "w.toml", &["task.3.name=x".into()]).unwrap_err();
        assert!(e.message.contains("out of range"));
    }

    #[test]
    fn watermarks_match_the_kernel_example() {
        // §3.2: 16 GiB, one zone: min 4096, gap 4194, low 8290, high 12484.
        let managed = 16u64 << 18;
        let wm = watermarks(managed, 16384, 10, Profile::V6);
        assert_eq!(wm, Watermarks { min: 4096, low: 8290, high: 12484 });
        assert_eq!(default_min_free_kbytes(managed), 16384);
    }
}
