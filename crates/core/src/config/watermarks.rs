//! Zone watermarks as each era computes them.

use super::Profile;
use serde::Serialize;

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

/// Bytes of one `struct page` in the memory map of a 2.6.32 x86-64 kernel (`flags`,
/// `_count`, `_mapcount`, `private`, `mapping`, `index`, `lru`: 8 + 4 + 4 + 8 + 8 + 8 + 16),
/// which `free_area_init_core` takes out of a zone's `present_pages`.
pub const STRUCT_PAGE_BYTES_2_6_32: u64 = 56;

/// The pages `init_per_zone_wmark_min` sizes `min_free_kbytes` from, and over which
/// `setup_per_zone_wmarks` spreads it (§3.2). Since 3.x (managed pages) that is what the
/// page allocator was handed at boot, the model's RAM less `kernel_reserved`. 2.6.32 read
/// `nr_free_buffer_pages()` at boot, which sums each zone's `present_pages` less its high
/// watermark (0 then), and `present_pages` is the zone's RAM less its memory map only: the
/// kernel's own pages count, and so does memory the kernel allocates after boot. Seed 002's
/// ramdisk (256 MiB of the guest's 768, filled with dd before each run: part of
/// `kernel_reserved` in the model) was empty when the guest booted: 2.6.32 sized its
/// watermarks from the whole 768 MiB. The guest's two zones (DMA, 16 MiB, and DMA32) share
/// that minimum by size; the model's one zone takes all of it. 2.6.28 did the same
/// (`nr_free_zone_pages` is unchanged from 2.6.28 to 2.6.32), modelled for 2.6.32 only, as
/// the per-CPU lists are (config/profile.rs `era_2_6_32`).
pub fn watermark_basis_pages(ram_pages: u64, managed_pages: u64, profile: &str) -> u64 {
    if !super::era_2_6_32(profile) {
        return managed_pages;
    }
    ram_pages - ram_pages * STRUCT_PAGE_BYTES_2_6_32 / crate::config::PAGE_SIZE
}

/// The zone watermarks a configuration gives: `kernel.min_free_kbytes` or the kernel's
/// default from [`watermark_basis_pages`], with the era's gaps.
pub fn zone_watermarks(cfg: &super::Config, profile: Profile) -> Watermarks {
    let m = &cfg.machine;
    let managed = m.ram.pages().saturating_sub(m.kernel_reserved.pages());
    let basis = watermark_basis_pages(m.ram.pages(), managed, &cfg.kernel.profile);
    let min_free = cfg.kernel.min_free_kbytes.unwrap_or_else(|| default_min_free_kbytes(basis));
    watermarks(managed, min_free, cfg.kernel.watermark_scale_factor, profile)
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
