//! The workload sections that put a fronting store in front of the swap devices
//! (kernel-algorithms.md §6): `[zswap]` (today's compressed cache), `[frontswap]` (the 2010
//! hypervisor-backed store) and `[content]`, the model of what the swapped pages contain, which
//! decides how well they compress and so how large the zswap pool grows.
//!
//! Kept out of `config/mod.rs` so that the store's knobs, their defaults and sources, and the
//! files they name (a compressed-size histogram, a capacity trace) are checked in one place.
//! Files are read when the workload is resolved, relative to the workload file, and their
//! contents are embedded in the resolved configuration (so a result says what it ran on).

use super::{ConfigError, Duration, Size, PAGE_SIZE};
use serde::{Deserialize, Serialize};
use std::path::Path;

pub const COMPRESSORS: [&str; 3] = ["lzo", "lz4", "zstd"];
pub const CONTENT_MODELS: [&str; 3] = ["fixed", "two-point", "histogram"];
pub const FRONTSWAP_BACKENDS: [&str; 1] = ["tmem"];

fn default_true() -> bool {
    true
}
fn default_compressor() -> String {
    "lzo".into()
}
fn default_max_pool_percent() -> u32 {
    20
}
fn default_accept_threshold_percent() -> u32 {
    90
}
fn default_chain_size() -> u32 {
    8
}

/// `[zswap]`: the module parameters (`/sys/module/zswap/parameters/`) and the workload
/// cgroup's `memory.zswap.max` / `memory.zswap.writeback`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ZswapSpec {
    #[serde(default)]
    pub enabled: bool,
    /// `compressor`: lzo (the historical default, `CONFIG_ZSWAP_COMPRESSOR_DEFAULT`), lz4, zstd.
    #[serde(default = "default_compressor")]
    pub compressor: String,
    /// `max_pool_percent` (default 20): the pool may use this % of RAM.
    #[serde(default = "default_max_pool_percent")]
    pub max_pool_percent: u32,
    /// `accept_threshold_percent` (default 90): after the pool filled, stores are refused until
    /// it is back under this % of its limit.
    #[serde(default = "default_accept_threshold_percent")]
    pub accept_threshold_percent: u32,
    /// `memory.zswap.max` of the workload's cgroup (compressed bytes); none = unlimited.
    #[serde(default)]
    pub memcg_max: Option<Size>,
    /// `memory.zswap.writeback` (6.8+): 0 forbids writing the pool back to the swap device.
    #[serde(default = "default_true")]
    pub memcg_writeback: bool,
    /// `shrinker_enabled` (6.8+, `CONFIG_ZSWAP_SHRINKER_DEFAULT_ON` default n): the
    /// memory-pressure shrinker writes the pool's cold entries back from every reclaim pass
    /// (`shrink_slab`), not only when the pool is full (`swap/store/zswap/shrinker.rs`).
    #[serde(default)]
    pub shrinker_enabled: bool,
    /// Store pages that do not compress as they are (6.18+, only where writeback is allowed)
    /// instead of rejecting them (`reject_compress_poor`, up to 6.17).
    #[serde(default)]
    pub store_incompressible: bool,
    /// `CONFIG_ZSMALLOC_CHAIN_SIZE` (default 8 since 6.3; 4 before): most pages in a zspage.
    #[serde(default = "default_chain_size")]
    pub zspage_max_pages: u32,
    /// Override the compressor's per-page CPU costs (ns: a full pass, compressing and
    /// decompressing) and the compressed size from which a page costs them (bytes; smaller
    /// pages cost proportionally less); see `swap/store/zswap/compressor.rs`.
    #[serde(default)]
    pub compress_ns: Option<u64>,
    #[serde(default)]
    pub decompress_ns: Option<u64>,
    #[serde(default)]
    pub full_cost_bytes: Option<u32>,
}

/// `[zram]`: how zram swap devices (the `zram` preset, `compressed = true`) compress. Their
/// pages are drawn from `[content]` like zswap's (swap/zram.rs).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ZramSpec {
    /// `comp_algorithm`: lzo (this model's figure also for lzo-rle, the default since 5.1:
    /// the same LZO coder with run-length encoding of zero runs), lz4, zstd.
    #[serde(default = "default_compressor")]
    pub compressor: String,
    /// Override the compressor's per-page CPU costs (ns: a full pass, compressing and
    /// decompressing) and the compressed size from which a page costs them (bytes; smaller
    /// pages cost proportionally less); see `swap/store/zswap/compressor.rs`.
    #[serde(default)]
    pub compress_ns: Option<u64>,
    #[serde(default)]
    pub decompress_ns: Option<u64>,
    #[serde(default)]
    pub full_cost_bytes: Option<u32>,
}

impl Default for ZramSpec {
    fn default() -> ZramSpec {
        ZramSpec { compressor: default_compressor(), compress_ns: None, decompress_ns: None, full_cost_bytes: None }
    }
}

fn default_fixed() -> String {
    "fixed".into()
}
fn default_ratio() -> f64 {
    3.0
}

/// `[content]`: what the pages being swapped contain. Every page swapped out draws from this
/// model: zero-filled with probability `zero_fraction`, else a compressed size from `model`:
/// `fixed` (PAGE_SIZE / `ratio`), `two-point` (PAGE_SIZE / `ratio` or PAGE_SIZE / `ratio2`,
/// the latter with probability `ratio2_fraction`) or `histogram` (a file of `bytes count`
/// lines, e.g. from a memory dump compressed page by page).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContentSpec {
    #[serde(default)]
    pub zero_fraction: f64,
    #[serde(default = "default_fixed")]
    pub model: String,
    /// Compression ratio (original / compressed) for `fixed`, the first point of `two-point`.
    #[serde(default = "default_ratio")]
    pub ratio: f64,
    #[serde(default = "default_ratio")]
    pub ratio2: f64,
    #[serde(default)]
    pub ratio2_fraction: f64,
    /// `histogram`: the file (relative to the workload file).
    #[serde(default)]
    pub histogram: Option<String>,
    /// The histogram as read: (compressed bytes, pages), filled in when resolving.
    #[serde(default, skip_deserializing, skip_serializing_if = "Vec::is_empty")]
    pub histogram_bins: Vec<(u32, u64)>,
}

impl Default for ContentSpec {
    fn default() -> ContentSpec {
        ContentSpec { zero_fraction: 0.0, model: default_fixed(), ratio: 3.0, ratio2: 3.0, ratio2_fraction: 0.0, histogram: None, histogram_bins: Vec::new() }
    }
}

fn default_tmem() -> String {
    "tmem".into()
}
/// A tmem hypercall on 2010 hardware, everything but the page copy: the guest's entry into
/// Xen and back, and tmem's own work (pool and object lookup, the page descriptor's
/// allocation, its radix-tree insert or lookup, its locks). ~1 µs is an **estimate**: no
/// published per-call figure for 2009-2010 hardware was found (searched again in session 39;
/// kernel-algorithms.md §6.3 lists it as to calibrate).
fn default_hypercall_ns() -> u64 {
    1_000
}
/// The page copy of a put or get: Xen copies the guest's frame to or from a page of its own
/// heap (`tmh_copy_from_client` / `tmh_copy_to_client`), the same 4 KiB `memcpy` between two
/// frames of the host's RAM as brd's copy, so the same figure
/// (`device::params::PAGE_COPY_NS`). Until session 39 it was 1 µs here against brd's 0.5 µs.
fn default_copy_ns() -> u64 {
    crate::device::params::PAGE_COPY_NS
}

/// One step of the hypervisor's free memory: from `at` on, frontswap may hold `size`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapacityStep {
    pub at: Duration,
    pub size: Size,
}

/// `[frontswap]` (2010 semantics, kernel-algorithms.md §6.1): a synchronous store that may
/// refuse, backed by hypervisor memory whose size can change over time.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FrontswapSpec {
    #[serde(default = "default_tmem")]
    pub backend: String,
    /// Hypervisor memory available to this guest's frontswap at time 0.
    pub capacity: Size,
    /// Later changes of the capacity (a step function over virtual time).
    #[serde(default, rename = "capacity_step", skip_serializing_if = "Vec::is_empty")]
    pub capacity_steps: Vec<CapacityStep>,
    /// A file of `seconds bytes` lines: the capacity as a trace (replaces the steps).
    #[serde(default)]
    pub capacity_trace: Option<String>,
    /// Exclusive gets (~3.6+): a load drops the backend's copy. 2010: false, the copy stays.
    #[serde(default)]
    pub exclusive_loads: bool,
    #[serde(default = "default_hypercall_ns")]
    pub hypercall_ns: u64,
    #[serde(default = "default_copy_ns")]
    pub copy_ns: u64,
}

/// The store a configuration selects: "none", "zswap" or "frontswap".
pub fn store_name(zswap: &Option<ZswapSpec>, frontswap: &Option<FrontswapSpec>) -> &'static str {
    match (zswap, frontswap) {
        (Some(z), _) if z.enabled => "zswap",
        (_, Some(_)) => "frontswap",
        _ => "none",
    }
}

/// A compressor section's `compressor` and `full_cost_bytes` (a compressed size: 1..=PAGE_SIZE).
fn check_compressor(section: &str, compressor: &str, full_cost_bytes: Option<u32>, at: &dyn Fn(&str, String) -> ConfigError) -> Result<(), ConfigError> {
    if !COMPRESSORS.contains(&compressor) {
        return Err(at(&format!("{section}.compressor"), format!("unknown compressor {compressor:?} (expected one of {})", COMPRESSORS.join(", "))));
    }
    match full_cost_bytes {
        Some(b) if !(1..=crate::mm::PAGE_SIZE as u32).contains(&b) => {
            Err(at(&format!("{section}.full_cost_bytes"), format!("expected a compressed size of 1..={} bytes, got {b}", crate::mm::PAGE_SIZE)))
        }
        _ => Ok(()),
    }
}

/// Validate the store sections and read the files they name (relative to `file`'s folder).
pub fn resolve(
    zswap: &Option<ZswapSpec>,
    frontswap: &mut Option<FrontswapSpec>,
    zram: &Option<ZramSpec>,
    content: &mut ContentSpec,
    file: &str,
    at: &dyn Fn(&str, String) -> ConfigError,
) -> Result<(), ConfigError> {
    if let Some(z) = zram {
        check_compressor("zram", &z.compressor, z.full_cost_bytes, at)?;
    }
    if let Some(z) = zswap {
        check_compressor("zswap", &z.compressor, z.full_cost_bytes, at)?;
        if !(1..=100).contains(&z.max_pool_percent) {
            return Err(at("zswap.max_pool_percent", format!("expected 1..=100, got {}", z.max_pool_percent)));
        }
        if !(1..=100).contains(&z.accept_threshold_percent) {
            return Err(at("zswap.accept_threshold_percent", format!("expected 1..=100, got {}", z.accept_threshold_percent)));
        }
        if !(1..=16).contains(&z.zspage_max_pages) {
            return Err(at("zswap.zspage_max_pages", format!("expected 1..=16 (CONFIG_ZSMALLOC_CHAIN_SIZE), got {}", z.zspage_max_pages)));
        }
        if z.enabled && frontswap.is_some() {
            return Err(at("frontswap", "zswap and frontswap cannot both front the swap devices: choose one".into()));
        }
    }
    if let Some(f) = frontswap {
        if !FRONTSWAP_BACKENDS.contains(&f.backend.as_str()) {
            return Err(at("frontswap.backend", format!("unknown frontswap backend {:?} (expected \"tmem\")", f.backend)));
        }
        if let Some(w) = f.capacity_steps.windows(2).find(|w| w[1].at <= w[0].at) {
            return Err(at("frontswap.capacity_step", format!("steps must be in increasing time order ({} ns after {} ns)", w[1].at.0, w[0].at.0)));
        }
        if let Some(name) = f.capacity_trace.clone() {
            f.capacity_steps = read_capacity_trace(&relative_to(file, &name)).map_err(|e| at("frontswap.capacity_trace", e))?;
        }
    }
    resolve_content(content, file, at)
}

fn resolve_content(c: &mut ContentSpec, file: &str, at: &dyn Fn(&str, String) -> ConfigError) -> Result<(), ConfigError> {
    if !(0.0..=1.0).contains(&c.zero_fraction) {
        return Err(at("content.zero_fraction", format!("expected a fraction in 0..=1, got {}", c.zero_fraction)));
    }
    if !CONTENT_MODELS.contains(&c.model.as_str()) {
        return Err(at("content.model", format!("unknown content model {:?} (expected one of {})", c.model, CONTENT_MODELS.join(", "))));
    }
    for (key, r) in [("content.ratio", c.ratio), ("content.ratio2", c.ratio2)] {
        if !(r >= 1.0 && r <= PAGE_SIZE as f64 / 16.0) {
            return Err(at(key, format!("expected a compression ratio in 1..=256 (original / compressed), got {r}")));
        }
    }
    if !(0.0..=1.0).contains(&c.ratio2_fraction) {
        return Err(at("content.ratio2_fraction", format!("expected a fraction in 0..=1, got {}", c.ratio2_fraction)));
    }
    if c.model == "histogram" {
        let Some(name) = c.histogram.clone() else {
            return Err(at("content.histogram", "model = \"histogram\" needs histogram = \"FILE\" (lines of: compressed_bytes pages)".into()));
        };
        c.histogram_bins = read_histogram(&relative_to(file, &name)).map_err(|e| at("content.histogram", e))?;
    }
    Ok(())
}

fn relative_to(workload: &str, name: &str) -> std::path::PathBuf {
    let p = Path::new(name);
    if p.is_absolute() {
        return p.to_path_buf();
    }
    Path::new(workload).parent().map_or_else(|| p.to_path_buf(), |d| d.join(p))
}

/// Lines of two numbers (`#` comments and blank lines skipped), each checked by `check`.
fn read_pairs(path: &Path, what: &str, check: &dyn Fn(f64, f64) -> Option<String>) -> Result<Vec<(f64, f64)>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let nums: Vec<f64> = line.split(|c: char| c == ',' || c.is_whitespace()).filter(|s| !s.is_empty()).filter_map(|s| s.parse().ok()).collect();
        let bad = |m: String| format!("{}:{}: {m}", path.display(), i + 1);
        if nums.len() != 2 {
            return Err(bad(format!("expected two numbers ({what}), got {line:?}")));
        }
        if let Some(m) = check(nums[0], nums[1]) {
            return Err(bad(m));
        }
        out.push((nums[0], nums[1]));
    }
    if out.is_empty() {
        return Err(format!("{}: no data lines (expected {what})", path.display()));
    }
    Ok(out)
}

fn read_histogram(path: &Path) -> Result<Vec<(u32, u64)>, String> {
    let pairs = read_pairs(path, "compressed_bytes pages", &|b, n| {
        if !(b >= 1.0 && b <= PAGE_SIZE as f64 && b.fract() == 0.0) {
            return Some(format!("compressed size {b} is not a whole number of bytes in 1..={PAGE_SIZE}"));
        }
        (!(n >= 0.0 && n.fract() == 0.0)).then(|| format!("page count {n} is not a whole number"))
    })?;
    let bins: Vec<(u32, u64)> = pairs.into_iter().map(|(b, n)| (b as u32, n as u64)).collect();
    if bins.iter().all(|&(_, n)| n == 0) {
        return Err(format!("{}: every count is 0", path.display()));
    }
    Ok(bins)
}

fn read_capacity_trace(path: &Path) -> Result<Vec<CapacityStep>, String> {
    let pairs = read_pairs(path, "seconds bytes", &|t, b| {
        if !(t >= 0.0 && t.is_finite()) {
            return Some(format!("time {t} is not a non-negative number of seconds"));
        }
        (!(b >= 0.0 && b.fract() == 0.0)).then(|| format!("capacity {b} is not a whole number of bytes"))
    })?;
    let steps: Vec<CapacityStep> = pairs.into_iter().map(|(t, b)| CapacityStep { at: Duration((t * 1e9).round() as u64), size: Size(b as u64) }).collect();
    if let Some(w) = steps.windows(2).find(|w| w[1].at <= w[0].at) {
        return Err(format!("{}: times must increase ({} s after {} s)", path.display(), w[1].at.0 as f64 / 1e9, w[0].at.0 as f64 / 1e9));
    }
    Ok(steps)
}
