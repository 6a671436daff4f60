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
