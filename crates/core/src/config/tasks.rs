//! What a program does: its mappings and the phases that touch them (access patterns,
//! messages, buffered I/O, traces).

use super::pagecache;
use super::schema::is_false;
use super::units::{Duration, Size};
use serde::{Deserialize, Serialize};

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
    /// The instances are threads of one process rather than separate processes: they share
    /// one address space (`mm_struct`), so a page-table change by reclaim must be flushed from
    /// the TLBs of every CPU running any of them (reclaim/tlb_flush.rs). Each keeps its own
    /// mappings in the model (workload/kv.rs explains why that is close enough for a kv
    /// store's threads). Default false: one process per instance.
    #[serde(default, skip_serializing_if = "is_false")]
    pub threads: bool,
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
    /// Requests completing in this long after the start are not measured (fio's
    /// `ramp_time`): `requests` in the result counts what follows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ramp_time: Option<Duration>,
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
    /// Each instance is forked, when it starts, from the named task (one instance, earlier in
    /// the file), as a browser's renderers are forked from its zygote: it inherits the
    /// parent's anonymous mappings copy-on-write (`fork()`: the same pages mapped read-only in
    /// both, a write copies the page into the writer's own anon_vma) and its phases can touch
    /// them by the parent's mapping names. The resolver puts those mappings first in the
    /// task's list (`config/fork.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fork_of: Option<String>,
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
    /// Bytes; may be left out for the anon mapping of a kv store, which is then sized to
    /// hold its slab pages (config/requests.rs), or of an hpl phase, sized as HPL allocates a
    /// rank's matrix (config/hpl.rs).
    #[serde(default)]
    pub size: Size,
    /// Anonymous mappings of a task of threads (`threads = true`): one VMA that every thread
    /// maps, as threads share their process's heap (a matrix the threads of an OpenMP program
    /// work on). Without it each thread has a mapping of its own (a private arena).
    #[serde(default, skip_serializing_if = "is_false")]
    pub shared: bool,
    /// Set by the resolver for mappings laid out from a trace (config/trace.rs): the trace's
    /// virtual page at which this mapping starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_page: Option<u64>,
    /// File mappings: madvise/fadvise advice for readahead (config/pagecache.rs).
    #[serde(default, skip_serializing_if = "pagecache::Advice::is_normal")]
    pub advice: pagecache::Advice,
    /// File mappings: mapped executable (`PROT_EXEC`, VM_EXEC: program text, shared
    /// libraries). Reclaim protects referenced executable file pages: kept on the active list
    /// since 2.6.31, activated on their first referenced scan of the inactive list since 3.3.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub exec: bool,
    /// File mappings: the file's name. Every mapping of the same file, in any task or
    /// instance, maps one inode and so the same page-cache folios, and its VMA joins that
    /// file's reverse map (`mapping->i_mmap`), as the processes of a program map its binary
    /// and shared libraries (config/shared_file.rs). Left out, a file mapping is a file of
    /// its own per process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
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
    /// HPL (High-Performance Linpack) as one MPI rank runs it over its block-cyclic share of
    /// an `n` × `n` matrix in `nb`-column blocks on a `grid` = [P, Q] of ranks, one rank per
    /// task instance: matrix generation, LU factorisation, solve, residual check
    /// (workload/hpl.rs).
    Hpl,
    /// The Intel Optimized LINPACK Benchmark (MKL's shared-memory LINPACK, what the LKP
    /// suite's `linpack` test runs): the task's instances are the threads (`threads = true`)
    /// of one process factoring one `n` × `n` matrix in a `shared` mapping, its `nb`-column
    /// blocks dealt round-robin over the threads (workload/hpl.rs).
    Linpack,
    /// Send `messages` messages of `bytes` to each of `fanout` channels (write()/sendmsg());
    /// every message also touches the next page of `mapping` (the user buffer).
    Send,
    /// Receive `messages` messages from one channel (read()/recvmsg()), blocking while it is
    /// empty; every message also touches the next page of `mapping`.
    Recv,
    /// Replay a page trace (`file`): its mappings come from the trace (config/trace.rs).
    Trace,
    /// memcached-like store, memtier-like client: `requests` SETs of `keys` items of
    /// `value_size` bytes into slab pages of the (anon) mapping (workload/kv.rs).
    #[serde(rename = "kv-set")]
    KvSet,
    /// GETs of the items a `kv-set` phase stored, keys drawn by `key_pattern`.
    #[serde(rename = "kv-get")]
    KvGet,
    /// memtier-like client of the kv store task `server`: instance i holds one connection to
    /// server instance i, keeps `pipeline` requests outstanding on it and reads the replies,
    /// until the server has served its kv phases (engine/kv_conn.rs); every socket call also
    /// touches the next page of `mapping` (the client's buffers).
    #[serde(rename = "kv-client")]
    KvClient,
}

/// How a kv phase picks its keys (memtier's `--key-pattern`), within the instance's part of
/// the key range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KeyPattern {
    /// `P`: in key order (the fill; default of kv-set).
    Parallel,
    /// `R`: uniformly random (default of kv-get).
    Random,
    /// `G`: normal around the range's middle with `key_stddev` (default range / 6).
    Gaussian,
    /// Zipf-distributed popularity with exponent `zipf_theta`, popular keys scattered.
    Zipf,
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
    /// way through swap) counts in the task's `verify_errors`. On a phase that writes, each
    /// write of a later pass (a repeated program, or a cycle after the first) first reads the
    /// word the previous pass wrote: vm-scalability's usemem checks every word before it
    /// overwrites it on its passes after the first (`do_rw_once`, "verify last write").
    #[serde(default, skip_serializing_if = "is_false")]
    pub verify: bool,
    #[serde(default = "default_theta")]
    pub zipf_theta: f64,
    #[serde(default = "default_stride")]
    pub stride: u64,
    /// Matrix: pages per block edge.
    #[serde(default = "default_block")]
    pub block_pages: u64,
    /// hpl: the matrix order N (HPL.dat `Ns`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n: Option<u64>,
    /// hpl: the block size NB (HPL.dat `NBs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nb: Option<u64>,
    /// hpl: the process grid [P, Q] (HPL.dat `Ps`, `Qs`); the task's `instances` are its P × Q
    /// ranks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grid: Option<[u32; 2]>,
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
    /// kv: items in the store, over all instances (memtier `--key-maximum`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keys: Option<u64>,
    /// kv: bytes per value (memtier `-d`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_size: Option<Size>,
    /// kv: bytes per key (default: memtier's, "memtier-" and the key's number).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_size: Option<u64>,
    /// kv: the key distribution (default: parallel for kv-set, random for kv-get).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_pattern: Option<KeyPattern>,
    /// kv gaussian: the standard deviation in keys (default: the instance's keys / 6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_stddev: Option<f64>,
    /// kv: requests per instance (default: memtier's `-n allkeys` per client: `keys - 1`, or for
    /// a `parallel` fill the instance's part, `(keys - 1) / instances + 1`; workload/kv.rs
    /// `memtier_allkeys_requests`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<u64>,
    /// kv: requests a client keeps outstanding (memtier `--pipeline`, default 1): a
    /// request's latency runs from the completion of the one `pipeline` before it. In a
    /// kv-client phase: the requests it sends before it waits for replies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipeline: Option<u32>,
    /// kv-client: the task whose kv phases this client's requests drive (its instances are
    /// the server's worker threads, one connection each).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// Buffered reads (access = "syscall"): reads a job keeps outstanding (fio `iodepth`,
    /// default 1: read() blocks). A read that misses the page cache is submitted and the job
    /// goes on, as io_uring's async buffered reads do, until this many are outstanding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iodepth: Option<u32>,
    /// Count this phase's requests in the result (default true; false for a load phase).
    #[serde(default = "default_true", skip_serializing_if = "is_true")]
    pub measure: bool,
    /// The task's instances begin this phase together: each waits, asleep, until every
    /// instance has ended the phases before it (or has exited). A `pthread_barrier_wait`, or a
    /// benchmark run in steps, each a separate command started when the previous one has
    /// ended: seed 004 fills memcached with one memtier run and reads it with a second, so no
    /// get is sent before the last set is answered (engine/barrier.rs). Not with `repeat`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub barrier: bool,
}

fn default_true() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
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

