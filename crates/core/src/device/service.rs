//! Service time as a distribution: a device's per-request access time drawn from a measured
//! quantile table instead of one constant.
//!
//! A real device's QD1 latency has a narrow body and a long tail (a virtual disk's host-side
//! flushes, an SSD's garbage collection, a write cache draining). A constant fitted to the mean
//! charges every request the tail's share; fitted to the median it drops the tail. The table
//! keeps both: `swaplab calibrate` measures 4 KiB requests at queue depth 1 and stores the
//! access time (the measured time minus the transfer at the device's bandwidth) at fixed
//! cumulative probabilities, for reads, for writes, and for reads that run while the device
//! is writing (how writes in flight slow reads: a write cache draining to the media, the
//! device's one link). A request's access time is the inverse CDF at a uniform number from the
//! device's own random stream, interpolated linearly between the table's points and clamped
//! at its ends (no extrapolation beyond the slowest request measured).
//!
//! The stream is `Rng::for_stream(run seed, DEVICE_STREAM + device index)`, drawn once per
//! request started, so a run is bit-identical for one seed and the spread between runs comes
//! from the seed. A device without a table (every built-in preset) draws nothing and keeps
//! its constant `read_latency_ns` / `write_latency_ns`.

use serde::{Deserialize, Serialize};

/// The device streams of a run: `DEVICE_STREAM + i` for swap area `i`, `DEVICE_STREAM - 1` for
/// the file device ("device" in ASCII, away from the task streams 0, 1, 2, ...).
pub const DEVICE_STREAM: u64 = 0x6465_7669_6365_0000;

/// An access-time distribution: `ns[i]` is the access time at cumulative probability `p[i]`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccessQuantiles {
    /// Cumulative probabilities, strictly increasing, within [0, 1].
    pub p: Vec<f64>,
    /// Access time in ns at each probability, non-decreasing.
    pub ns: Vec<u64>,
}

impl AccessQuantiles {
    /// No table: the constant latency applies.
    pub fn is_empty(&self) -> bool {
        self.ns.is_empty()
    }

    pub fn validate(&self, what: &str) -> Result<(), String> {
        if self.is_empty() && self.p.is_empty() {
            return Ok(());
        }
        if self.p.len() != self.ns.len() || self.p.len() < 2 {
            return Err(format!("{what}: p and ns need the same length, at least 2 (got {} and {})", self.p.len(), self.ns.len()));
        }
        if self.p.iter().any(|&p| !(0.0..=1.0).contains(&p)) || self.p.windows(2).any(|w| w[1] <= w[0]) {
            return Err(format!("{what}: p must increase strictly within [0, 1]"));
        }
        if self.ns.windows(2).any(|w| w[1] < w[0]) {
            return Err(format!("{what}: ns must not decrease"));
        }
        Ok(())
    }

    /// The access time at cumulative probability `u` (the inverse CDF).
    pub fn at(&self, u: f64) -> u64 {
        let (p, ns) = (&self.p, &self.ns);
        if u <= p[0] {
            return ns[0];
        }
        let last = p.len() - 1;
        if u >= p[last] {
            return ns[last];
        }
        let i = p.partition_point(|&x| x <= u) - 1;
        let f = (u - p[i]) / (p[i + 1] - p[i]);
        ns[i] + ((ns[i + 1] - ns[i]) as f64 * f).round() as u64
    }

    /// The mean of the distribution the table describes (segments are uniform between their
    /// end points; the mass below the first and above the last point sits on them).
    pub fn mean(&self) -> f64 {
        let (p, ns) = (&self.p, &self.ns);
        let mut m = p[0] * ns[0] as f64 + (1.0 - p[p.len() - 1]) * ns[ns.len() - 1] as f64;
        for i in 0..p.len() - 1 {
            m += (p[i + 1] - p[i]) * (ns[i] + ns[i + 1]) as f64 / 2.0;
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> AccessQuantiles {
        AccessQuantiles { p: vec![0.0, 0.5, 0.99, 1.0], ns: vec![10_000, 20_000, 40_000, 4_000_000] }
    }

    #[test]
    fn inverse_cdf_interpolates_and_clamps() {
        let t = table();
        assert_eq!(t.at(0.0), 10_000);
        assert_eq!(t.at(0.25), 15_000);
        assert_eq!(t.at(0.5), 20_000);
        assert_eq!(t.at(0.995), 2_020_000);
        let clamped = AccessQuantiles { p: vec![0.1, 0.9], ns: vec![5, 9] };
        assert_eq!((clamped.at(0.05), clamped.at(0.95)), (5, 9));
    }

    #[test]
    fn mean_counts_the_tail() {
        let t = table();
        let m = t.mean();
        // body 0.5 * 15 us + 0.49 * 30 us + tail 0.01 * 2.02 ms
        assert!((m - (7_500.0 + 14_700.0 + 20_200.0)).abs() < 1e-6, "{m}");
        // sampling at evenly spaced probabilities converges on it
        let n = 100_000;
        let s: f64 = (0..n).map(|i| t.at((i as f64 + 0.5) / n as f64) as f64).sum::<f64>() / n as f64;
        assert!((s - m).abs() / m < 0.001, "{s} vs {m}");
    }

    #[test]
    fn bad_tables_are_refused() {
        assert!(AccessQuantiles::default().validate("x").is_ok());
        assert!(AccessQuantiles { p: vec![0.5], ns: vec![1] }.validate("x").is_err());
        assert!(AccessQuantiles { p: vec![0.5, 0.4], ns: vec![1, 2] }.validate("x").is_err());
        assert!(AccessQuantiles { p: vec![0.1, 0.4], ns: vec![3, 2] }.validate("x").is_err());
        assert!(AccessQuantiles { p: vec![0.1, 1.4], ns: vec![1, 2] }.validate("x").is_err());
        assert!(table().validate("x").is_ok());
    }
}
