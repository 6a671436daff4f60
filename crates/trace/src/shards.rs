//! SHARDS (Waldspurger et al., FAST 2015): the LRU miss-ratio curve estimated from a spatially
//! hashed sample of the pages. A page is sampled when `hash(page) mod 2^24 < rate x 2^24`;
//! stack distances measured over the sampled accesses are scaled by 1/rate, and each sampled
//! access stands for 1/rate accesses. With `adjust` (SHARDS_adj) the difference between the
//! expected and the actual number of sampled accesses is added to the smallest distance, which
//! corrects most of the bias from a few hot pages landing in or out of the sample.

use crate::mrc::{histogram_of, Histogram};
use crate::seq::PageSeq;

const MODULUS: u64 = 1 << 24;

fn sampled(page: u64, threshold: u64) -> bool {
    let h = (page ^ (page >> 31)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (h >> 40) % MODULUS < threshold
}

/// An estimated curve: misses (as a real number) at the given sizes.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Estimate {
    pub rate: f64,
    pub sampled_accesses: u64,
    pub sampled_pages: u64,
    pub sizes: Vec<u64>,
    pub misses: Vec<f64>,
}

/// SHARDS at sampling `rate` (0 < rate <= 1), evaluated at `sizes` (pages).
pub fn estimate(seq: &PageSeq, rate: f64, adjust: bool, sizes: &[u64]) -> Estimate {
    let threshold = ((rate * MODULUS as f64).round() as u64).clamp(1, MODULUS);
    let rate = threshold as f64 / MODULUS as f64;
    let mut remap = vec![u32::MAX; seq.distinct()];
    let mut n = 0u32;
    for (id, &page) in seq.pages.iter().enumerate() {
        if sampled(page, threshold) {
            remap[id] = n;
            n += 1;
        }
    }
    let h: Histogram = histogram_of(seq.ids.iter().map(|&id| remap[id as usize]).filter(|&s| s != u32::MAX), n as usize);
    let scale = 1.0 / rate;
    let mut weights: Vec<f64> = h.hist.iter().map(|&c| c as f64 * scale).collect();
    if adjust && !weights.is_empty() {
        let expected = seq.len() as f64 * rate;
        weights[0] += (expected - h.accesses as f64) * scale;
    }
    let cold = h.cold as f64 * scale;
    let misses = sizes
        .iter()
        .map(|&c| {
            // Sampled distance d stands for distance d / rate: a miss when d / rate > c.
            let first_miss = ((c as f64 * rate).floor() as usize).min(weights.len());
            (cold + weights[first_miss..].iter().sum::<f64>()).max(0.0)
        })
        .collect();
    Estimate { rate, sampled_accesses: h.accesses, sampled_pages: n as u64, sizes: sizes.to_vec(), misses }
}
