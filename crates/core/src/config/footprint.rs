//! How much real memory a workload's model needs, and the refusal of one that would not fit in
//! this machine's memory — before anything is allocated, with the figure, instead of an
//! allocator abort minutes into the run (`machine.ram = "4TiB"` needs ~28 GiB of frames).
//!
//! The figures are the model's data structures (mm/mod.rs, swap/mod.rs): a `Frame` (24 bytes)
//! plus a free-list entry (4) per page of RAM; a page-table entry (8) per page of every anon
//! mapping of every instance, a PTE plus an object entry (16) per shmem or file page; per swap
//! slot the swap map (1), the swap-cache index (4) and the shadow (4). What does not scale
//! with sizes (histograms, the capped time series, task state) is covered by `FIXED_BYTES`.
//! The available memory is `MemAvailable` of /proc/meminfo; where that cannot be read (not
//! Linux), nothing is refused.

use super::{MappingKind, Resolved};

pub const BYTES_PER_FRAME: u64 = 24 + 4;
pub const BYTES_PER_ANON_PAGE: u64 = 8;
pub const BYTES_PER_SHARED_PAGE: u64 = 16;
pub const BYTES_PER_SWAP_SLOT: u64 = 1 + 4 + 4;
/// With a content model, each slot also remembers its page's key (swap/mod.rs `page_key`).
pub const BYTES_PER_KEYED_SLOT: u64 = 8;
/// A zram device's slot: what it holds (swap/zram.rs `Slot`: a zsmalloc handle and a length;
/// `swap::zram::SLOT_BYTES`).
pub const BYTES_PER_ZRAM_SLOT: u64 = crate::swap::zram::SLOT_BYTES;
/// Everything that does not grow with the sizes: 64 MiB.
pub const FIXED_BYTES: u64 = 64 << 20;

/// The model's estimated size in bytes, and the key of its largest part (for the message).
pub fn model_bytes(r: &Resolved) -> (u64, &'static str) {
    let cfg = &r.config;
    let frames = cfg.machine.ram.pages().saturating_mul(BYTES_PER_FRAME);
    let mut mapped = 0u64;
    for t in &cfg.tasks {
        let per_instance: u64 = t
            .mappings
            .iter()
            .map(|m| {
                let per_page = if m.kind == MappingKind::Anon { BYTES_PER_ANON_PAGE } else { BYTES_PER_SHARED_PAGE };
                m.size.pages().saturating_mul(per_page)
            })
            .fold(0u64, u64::saturating_add);
        mapped = mapped.saturating_add(per_instance.saturating_mul(t.instances as u64));
    }
    let per_slot = |s: &crate::config::ResolvedSwap| {
        BYTES_PER_SWAP_SLOT + if cfg.content.is_some() { BYTES_PER_KEYED_SLOT } else { 0 } + if s.params.compressed { BYTES_PER_ZRAM_SLOT } else { 0 }
    };
    let swap = r.swap_devices.iter().map(|s| s.size.pages().saturating_mul(per_slot(s))).fold(0u64, u64::saturating_add);
    let total = frames.saturating_add(mapped).saturating_add(swap).saturating_add(FIXED_BYTES);
    let key = if frames >= mapped && frames >= swap {
        "machine.ram"
    } else if mapped >= swap {
        "task"
    } else {
        "swap"
    };
    (total, key)
}

/// `MemAvailable` in bytes, None where /proc/meminfo cannot be read.
pub fn available_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

/// Refuse a model that needs more than `available`: (key, message).
pub fn check(r: &Resolved, available: Option<u64>) -> Result<(), (&'static str, String)> {
    let Some(avail) = available else { return Ok(()) };
    let (need, key) = model_bytes(r);
    if need <= avail {
        return Ok(());
    }
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    Err((
        key,
        format!(
            "the model of this workload needs about {:.1} GiB of memory ({BYTES_PER_FRAME} bytes per page of RAM, \
             {BYTES_PER_ANON_PAGE}/{BYTES_PER_SHARED_PAGE} per mapped anon/shared page, {BYTES_PER_SWAP_SLOT} per swap slot) \
             but this machine has {:.1} GiB available: use smaller sizes (e.g. `swaplab reproduce --scale`) or a larger machine",
            gib(need),
            gib(avail)
        ),
    ))
}
