//! The compressors zswap (and zram) can use, and what compressing or decompressing one 4 KiB
//! page costs the CPU that does it.
//!
//! Source of every figure: the lzbench table in the zstd README (v1.4.5, 2020: Core i9-9900K
//! at 5.0 GHz, gcc 9.3, Silesia corpus), converted to ns per 4096-byte page:
//!
//! | compressor | compress MB/s | decompress MB/s | compress ns/page | decompress ns/page |
//! |---|---|---|---|---|
//! | lzo1x 2.10 -1 | 690 | 820 | 5 936 | 4 995 |
//! | lz4 1.9.2 | 740 | 4 530 | 5 535 | 904 |
//! | zstd 1.4.5 -1 | 500 | 1 660 | 8 192 | 2 467 |
//!
//! Per-page calls on 4 KiB inputs run somewhat slower than these streaming figures (setup per
//! call, a cold dictionary); kernel-algorithms.md §6.3 gives 3-10 µs to compress and 1-3 µs
//! to decompress, which these fall in. Both can be overridden per workload
//! (`zswap.compress_ns`, `zswap.decompress_ns`) to calibrate against a host.

/// Per-page CPU costs of one compressor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompressorCost {
    pub compress_ns: u64,
    pub decompress_ns: u64,
}

/// The costs of `name` (one of `config::stores::COMPRESSORS`).
pub fn cost(name: &str) -> CompressorCost {
    let (c_mb_s, d_mb_s) = match name {
        "lzo" => (690, 820),
        "lz4" => (740, 4530),
        "zstd" => (500, 1660),
        other => unreachable!("compressor {other:?} passed validation but has no costs"),
    };
    let per_page = |mb_s: u64| crate::mm::PAGE_SIZE * 1000 / mb_s;
    CompressorCost { compress_ns: per_page(c_mb_s), decompress_ns: per_page(d_mb_s) }
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

#[cfg(test)]
mod tests {
    #[test]
    fn costs_follow_the_lzbench_table() {
        assert_eq!(super::cost("lz4").decompress_ns, 904);
        assert_eq!(super::cost("lzo").compress_ns, 5936);
        assert!(super::cost("zstd").compress_ns > super::cost("lz4").compress_ns);
    }
}
