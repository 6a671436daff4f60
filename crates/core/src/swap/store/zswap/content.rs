//! The content model: what a page being swapped out contains, as far as a compressing store
//! cares — zero-filled (no pool entry, no I/O: the swap layer's zero map) or a compressed
//! size in bytes. The pool's size is then an outcome of the pages swapped, not an input.
//!
//! A page's content is a property of the page: it is drawn from the model by the page's
//! identity (task, instance, mapping, page index: [`page_key`]) with a hash of the run seed,
//! not by the order in which pages happen to be swapped. So a page swapped out, read back and
//! swapped out again compresses as it did the first time, as real data does; zero pages stay
//! zero pages (they go back to the zero map each time, and a clean one read from the zero map
//! is not stored again at all). The host runner's workers write every page with the content
//! its key draws (crates/host/src/content.rs), so the simulator and the kernel see the same
//! pages, page for page. Rewriting a page keeps its character: the model draws no new
//! content when a program writes a page again.
//!
//! Models (`[content]`, config/stores.rs): `fixed` (every page PAGE_SIZE / ratio), `two-point`
//! (PAGE_SIZE / ratio, or PAGE_SIZE / ratio2 with probability ratio2_fraction: e.g. text and
//! already-compressed data), `histogram` (compressed sizes with their page counts, read from a
//! file, drawn in proportion to the counts).

use crate::config::stores::ContentSpec;
use crate::mm::PAGE_SIZE;
use crate::rng::Rng;

/// The random stream of the content model (distinct from every task's).
const CONTENT_STREAM: u64 = 0x0063_6f6e_7465_6e74;

/// What one page turned out to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageContent {
    Zero,
    /// Compressed size in bytes (PAGE_SIZE or more: does not compress).
    Compressed(u32),
}

#[derive(Clone, Debug)]
pub struct ContentModel {
    zero_fraction: f64,
    sizes: Sizes,
    seed: u64,
}

/// The identity of a mapping's pages: task `task` of the workload file, its instance, and the
/// mapping's index among the task's mappings.
pub fn mapping_key(task: usize, instance: u32, mapping: usize) -> u64 {
    let mut s = ((task as u64) << 40) ^ ((instance as u64) << 16) ^ mapping as u64;
    crate::rng::splitmix64(&mut s)
}

/// The identity of page `index` of the mapping `mapping_key` names.
pub fn page_key(mapping_key: u64, index: u64) -> u64 {
    let mut s = mapping_key ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    crate::rng::splitmix64(&mut s)
}

#[derive(Clone, Debug)]
enum Sizes {
    Fixed(u32),
    TwoPoint { first: u32, second: u32, second_fraction: f64 },
    /// Cumulative page counts and their sizes.
    Histogram { cumulative: Vec<u64>, sizes: Vec<u32> },
}

fn size_for_ratio(ratio: f64) -> u32 {
    ((PAGE_SIZE as f64 / ratio).round() as u32).clamp(1, PAGE_SIZE as u32)
}

impl ContentModel {
    pub fn new(spec: &ContentSpec, seed: u64) -> ContentModel {
        let sizes = match spec.model.as_str() {
            "fixed" => Sizes::Fixed(size_for_ratio(spec.ratio)),
            "two-point" => Sizes::TwoPoint { first: size_for_ratio(spec.ratio), second: size_for_ratio(spec.ratio2), second_fraction: spec.ratio2_fraction },
            "histogram" => {
                let mut total = 0;
                let (mut cumulative, mut sizes) = (Vec::new(), Vec::new());
                for &(bytes, pages) in spec.histogram_bins.iter().filter(|b| b.1 > 0) {
                    total += pages;
                    cumulative.push(total);
                    sizes.push(bytes);
                }
                Sizes::Histogram { cumulative, sizes }
            }
            other => unreachable!("content model {other:?} passed validation but has no implementation"),
        };
        ContentModel { zero_fraction: spec.zero_fraction, sizes, seed }
    }

    /// The content of the page with key `page_key` (the same every time it is asked).
    pub fn page(&self, page_key: u64) -> PageContent {
        let mut rng = Rng::for_stream(self.seed ^ page_key, CONTENT_STREAM);
        if self.zero_fraction > 0.0 && rng.unit() < self.zero_fraction {
            return PageContent::Zero;
        }
        PageContent::Compressed(match &self.sizes {
            Sizes::Fixed(s) => *s,
            Sizes::TwoPoint { first, second, second_fraction } => {
                if rng.unit() < *second_fraction {
                    *second
                } else {
                    *first
                }
            }
            Sizes::Histogram { cumulative, sizes } => {
                let x = rng.below(*cumulative.last().expect("validated non-empty"));
                sizes[cumulative.partition_point(|&c| c <= x)]
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(model: &str) -> ContentSpec {
        ContentSpec { model: model.into(), ..ContentSpec::default() }
    }

    #[test]
    fn draws_follow_the_model() {
        let mut s = spec("two-point");
        s.zero_fraction = 0.25;
        s.ratio = 4.0;
        s.ratio2 = 1.0;
        s.ratio2_fraction = 0.5;
        let m = ContentModel::new(&s, 1);
        let key = mapping_key(0, 0, 0);
        let draws: Vec<PageContent> = (0..40_000).map(|i| m.page(page_key(key, i))).collect();
        let zero = draws.iter().filter(|d| **d == PageContent::Zero).count() as f64 / 40_000.0;
        let whole = draws.iter().filter(|d| **d == PageContent::Compressed(4096)).count() as f64 / 40_000.0;
        assert!((zero - 0.25).abs() < 0.01, "{zero}");
        assert!((whole - 0.375).abs() < 0.01, "{whole}");
        assert!(draws.iter().all(|d| matches!(d, PageContent::Zero | PageContent::Compressed(1024) | PageContent::Compressed(4096))));
    }

    #[test]
    fn histogram_draws_in_proportion_to_counts() {
        let mut s = spec("histogram");
        s.histogram_bins = vec![(100, 1), (2000, 3), (3000, 0)];
        let m = ContentModel::new(&s, 9);
        let n = 20_000;
        let key = mapping_key(1, 2, 3);
        let small = (0..n).filter(|&i| m.page(page_key(key, i)) == PageContent::Compressed(100)).count() as f64 / n as f64;
        assert!((small - 0.25).abs() < 0.015, "{small}");
    }

    #[test]
    fn a_page_keeps_its_content_and_pages_differ() {
        let mut s = spec("two-point");
        s.zero_fraction = 0.1;
        s.ratio2 = 1.0;
        s.ratio2_fraction = 0.3;
        let m = ContentModel::new(&s, 5);
        let (a, b) = (mapping_key(0, 0, 0), mapping_key(0, 1, 0));
        assert!((0..1000).all(|i| m.page(page_key(a, i)) == m.page(page_key(a, i))));
        let same = (0..1000).filter(|&i| m.page(page_key(a, i)) == m.page(page_key(b, i))).count();
        // Two instances' pages are independent draws: they agree only as often as chance says
        // (0.01 + 0.63^2 + 0.27^2 ~ 0.48).
        assert!((380..580).contains(&same), "{same}");
    }
}
