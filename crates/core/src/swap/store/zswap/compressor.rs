//! The compressors zswap (and zram) can use, and what compressing or decompressing one 4 KiB
//! page costs the CPU that does it — as a function of what the page contains (the content
//! model's class, swap/store/zswap/content.rs), not one figure for every page:
//!
//! * **zero-filled** pages never reach the compressor: zswap's zero map / zram's same-filled
//!   check finds them (`ZERO_CHECK_NS`) and a swap-in fills zeroes (`ZERO_FILL_NS`);
//! * a page that **does not compress** (the content model's size ≥ PAGE_SIZE) costs the
//!   compressor a full pass (`compress_ns`) that keeps nothing; the page is then stored whole
//!   (a copy) or rejected, and a swap-in of a page stored whole is a copy (`PAGE_COPY_NS`):
//!   zswap entries of length PAGE_SIZE are not compressed (`zswap_decompress`, 6.18), zram's
//!   `ZRAM_HUGE` slots are copied back (`zram_read_page`);
//! * a page that **compresses** to `len` bytes costs the source's time per compressed byte:
//!   `compress_ns × len / full_cost_bytes`, at most the full pass (likewise decompression).
//!   `full_cost_bytes` is the source corpus's compressed bytes per page (PAGE_SIZE / its
//!   ratio), so a page that compresses as the corpus does costs what the source measured, a
//!   page of mostly runs costs less, as an LZ coder spends its time on literals and sequences,
//!   not on the bytes a long match covers. This proportionality is the model's assumption; a
//!   machine's own figures come from `swaplab calibrate` (its compressor phase measures the
//!   kernel's compressor through zram on pages of each class and fits these three figures).
//!
//! Source of the defaults: the lzbench table in the zstd README (v1.4.5, 2020: Core i9-9900K
//! at 5.0 GHz, gcc 9.3, Silesia corpus), converted to ns per 4096-byte page:
//!
//! | compressor | ratio | compress MB/s | decompress MB/s | compress ns/page | decompress ns/page | full_cost_bytes |
//! |---|---|---|---|---|---|---|
//! | lzo1x 2.10 -1 | 2.106 | 690 | 820 | 5 936 | 4 995 | 1 945 |
//! | lz4 1.9.2 | 2.101 | 740 | 4 530 | 5 535 | 904 | 1 950 |
//! | zstd 1.4.5 -1 | 2.884 | 500 | 1 660 | 8 192 | 2 467 | 1 420 |
//!
//! Per-page calls on 4 KiB inputs run somewhat slower than these streaming figures (setup per
//! call, a cold dictionary); kernel-algorithms.md §6.3 gives 3-10 µs to compress and 1-3 µs
//! to decompress, which these fall in. All three can be overridden per workload
//! (`zswap.compress_ns`, `zswap.decompress_ns`, `zswap.full_cost_bytes`, and the same in
//! `[zram]`), which is what a calibrated preset's `[zswap]` figures are for.

use crate::mm::PAGE_SIZE;

/// Per-page CPU costs of one compressor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompressorCost {
    /// A full compression pass over one page: a page that does not compress, or one that
    /// compresses no better than `full_cost_bytes`.
    pub compress_ns: u64,
    /// Decompressing a page of `full_cost_bytes` or more compressed bytes.
    pub decompress_ns: u64,
    /// The compressed size from which a page costs the full figures; below it the cost scales
    /// with the compressed size.
    pub full_cost_bytes: u32,
}

impl CompressorCost {
    /// The CPU of compressing a page whose content compresses to `len` bytes (PAGE_SIZE or
    /// more: it does not compress, and the pass finds that out at its full cost).
    pub fn compress(&self, len: u32) -> u64 {
        scaled(self.compress_ns, len, self.full_cost_bytes)
    }

    /// The CPU of getting back a page kept as `len` bytes: a copy if it was kept whole.
    pub fn decompress(&self, len: u32) -> u64 {
        if len as u64 >= PAGE_SIZE {
            PAGE_COPY_NS
        } else {
            scaled(self.decompress_ns, len, self.full_cost_bytes)
        }
    }
}

fn scaled(full_ns: u64, len: u32, full_cost_bytes: u32) -> u64 {
    if len >= full_cost_bytes {
        full_ns
    } else {
        full_ns * len as u64 / full_cost_bytes.max(1) as u64
    }
}

/// The costs of `name` (one of `config::stores::COMPRESSORS`), from the source table above.
pub fn cost(name: &str) -> CompressorCost {
    // (compress MB/s, decompress MB/s, Silesia ratio × 1000)
    let (c_mb_s, d_mb_s, ratio_milli) = match name {
        "lzo" => (690, 820, 2106),
        "lz4" => (740, 4530, 2101),
        "zstd" => (500, 1660, 2884),
        other => unreachable!("compressor {other:?} passed validation but has no costs"),
    };
    let per_page = |mb_s: u64| PAGE_SIZE * 1000 / mb_s;
    let full_cost_bytes = ((PAGE_SIZE * 1000 + ratio_milli / 2) / ratio_milli) as u32;
    CompressorCost { compress_ns: per_page(c_mb_s), decompress_ns: per_page(d_mb_s), full_cost_bytes }
}

/// The costs of `name` with a workload's overrides of the three figures.
pub fn cost_with(name: &str, compress_ns: Option<u64>, decompress_ns: Option<u64>, full_cost_bytes: Option<u32>) -> CompressorCost {
    let c = cost(name);
    CompressorCost {
        compress_ns: compress_ns.unwrap_or(c.compress_ns),
        decompress_ns: decompress_ns.unwrap_or(c.decompress_ns),
        full_cost_bytes: full_cost_bytes.unwrap_or(c.full_cost_bytes),
    }
}

/// What zswap_store does besides compressing: the entry allocation, the xarray insert, the
/// `zs_malloc` and copying the compressed bytes into the pool. An assumption of a few hundred
/// ns (slab allocation ~100 ns, xarray store ~100 ns, a memcpy of ≤ 4 KiB ~200 ns).
pub const STORE_OVERHEAD_NS: u64 = 400;
/// `is_folio_zero_filled`: reading a 4 KiB page at ~20 GB/s (L2 bandwidth) until the first
/// non-zero word; a zero page is read whole.
pub const ZERO_CHECK_NS: u64 = 200;
/// Filling a page with zeroes on a zero-map swap-in (`folio_zero_range`), as fast as the check.
pub const ZERO_FILL_NS: u64 = 200;
/// Copying back a page that was kept whole (`memcpy_from_sglist` / `memcpy` of 4 KiB), at the
/// same ~20 GB/s as the zero check.
pub const PAGE_COPY_NS: u64 = 200;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn costs_follow_the_lzbench_table() {
        assert_eq!(cost("lz4").decompress_ns, 904);
        assert_eq!(cost("lzo").compress_ns, 5936);
        assert_eq!(cost("lzo").full_cost_bytes, 1945);
        assert!(cost("zstd").compress_ns > cost("lz4").compress_ns);
    }

    #[test]
    fn a_page_costs_by_what_it_compresses_to() {
        let c = cost("lzo");
        // the corpus's own compressed size costs what the source measured
        assert_eq!(c.compress(c.full_cost_bytes), c.compress_ns);
        // a page that does not compress costs the full pass, and comes back as a copy
        assert_eq!(c.compress(PAGE_SIZE as u32), c.compress_ns);
        assert_eq!(c.decompress(PAGE_SIZE as u32), PAGE_COPY_NS);
        // a page of half the corpus's compressed size costs half
        assert_eq!(c.compress(c.full_cost_bytes / 2), c.compress_ns * (c.full_cost_bytes / 2) as u64 / c.full_cost_bytes as u64);
        assert!(c.decompress(512) < c.decompress(1024) && c.decompress(1024) < c.decompress_ns);
    }
}
