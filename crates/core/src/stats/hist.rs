//! Log-linear latency histogram: exact below 64 ns, then 64 sub-buckets per power of two
//! (1/64 relative resolution), over the whole u64 range, in 30 KiB of counters. Recording is
//! a few instructions, so every touch and fault can be recorded. A coarse histogram
//! (`Histogram::coarse`, 8 sub-buckets: 1/8 resolution in 4 KiB) serves breakdowns a task keeps
//! several of (stats/touch_kinds.rs).

use serde::Serialize;

const SUB_BITS: u32 = 6;
const COARSE_SUB_BITS: u32 = 3;

/// Counters for `sub_bits` sub-buckets per power of two over the u64 range.
const fn buckets(sub_bits: u32) -> usize {
    ((64 - sub_bits as usize) + 1) << sub_bits
}

#[derive(Clone, Debug)]
pub struct Histogram {
    counts: Vec<u64>,
    sub_bits: u32,
    n: u64,
    sum: u128,
    max: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram::with_sub_bits(SUB_BITS)
    }
}

#[inline]
fn bucket(v: u64, sub_bits: u32) -> usize {
    let sub_n = 1u64 << sub_bits;
    if v < sub_n {
        v as usize
    } else {
        let exp = 63 - v.leading_zeros(); // >= sub_bits
        let shift = exp - sub_bits;
        let sub = (v >> shift) - sub_n; // 0..sub_n
        ((shift as u64 + 1) * sub_n + sub) as usize
    }
}

/// Smallest value that falls in bucket `b` (used as the reported percentile value).
fn bucket_low(b: usize, sub_bits: u32) -> u64 {
    let (b, sub_n) = (b as u64, 1u64 << sub_bits);
    if b < sub_n {
        b
    } else {
        let shift = b / sub_n - 1;
        (sub_n + b % sub_n) << shift
    }
}

#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq)]
pub struct Percentiles {
    pub mean: f64,
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    #[serde(rename = "p99.9")]
    pub p99_9: u64,
    pub max: u64,
}

impl Histogram {
    fn with_sub_bits(sub_bits: u32) -> Self {
        Histogram { counts: vec![0; buckets(sub_bits)], sub_bits, n: 0, sum: 0, max: 0 }
    }

    /// A histogram of 1/8 relative resolution (exact below 8 ns) in 4 KiB of counters.
    pub fn coarse() -> Self {
        Histogram::with_sub_bits(COARSE_SUB_BITS)
    }

    #[inline]
    pub fn record(&mut self, v: u64) {
        self.counts[bucket(v, self.sub_bits)] += 1;
        self.n += 1;
        self.sum += v as u128;
        if v > self.max {
            self.max = v;
        }
    }

    /// Record `count` occurrences of the same value at once (a run of resident touches).
    #[inline]
    pub fn record_n(&mut self, v: u64, count: u64) {
        if count == 0 {
            return;
        }
        self.counts[bucket(v, self.sub_bits)] += count;
        self.n += count;
        self.sum += v as u128 * count as u128;
        if v > self.max {
            self.max = v;
        }
    }

    pub fn count(&self) -> u64 {
        self.n
    }

    pub fn sum(&self) -> u128 {
        self.sum
    }

    pub fn quantile(&self, q: f64) -> u64 {
        if self.n == 0 {
            return 0;
        }
        let rank = ((q * self.n as f64).ceil() as u64).clamp(1, self.n);
        let mut seen = 0;
        for (b, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return bucket_low(b, self.sub_bits).min(self.max);
            }
        }
        self.max
    }

    pub fn percentiles(&self) -> Percentiles {
        Percentiles {
            mean: if self.n == 0 { 0.0 } else { (self.sum as f64 / self.n as f64 * 100.0).round() / 100.0 },
            p50: self.quantile(0.5),
            p90: self.quantile(0.9),
            p99: self.quantile(0.99),
            p99_9: self.quantile(0.999),
            max: self.max,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_monotonic_and_tight() {
        let mut last = 0;
        for v in [0u64, 1, 63, 64, 65, 127, 128, 1000, 1 << 20, u64::MAX] {
            let b = bucket(v, SUB_BITS);
            assert!(b >= last && b < buckets(SUB_BITS));
            last = b;
            let low = bucket_low(b, SUB_BITS);
            assert!(low <= v && (v - low) as f64 <= v as f64 / 64.0 + 1.0, "{v} -> {low}");
            let c = bucket(v, COARSE_SUB_BITS);
            assert!(c < buckets(COARSE_SUB_BITS));
            let low = bucket_low(c, COARSE_SUB_BITS);
            assert!(low <= v && (v - low) as f64 <= v as f64 / 8.0 + 1.0, "coarse {v} -> {low}");
        }
    }

    #[test]
    fn percentiles_of_a_known_distribution() {
        let mut h = Histogram::default();
        for v in 1..=1000u64 {
            h.record(v * 1000);
        }
        let p = h.percentiles();
        assert!((p.p50 as f64 - 500_000.0).abs() / 500_000.0 < 0.02);
        assert!((p.p99 as f64 - 990_000.0).abs() / 990_000.0 < 0.02);
        assert_eq!(p.max, 1_000_000);
    }
}
