//! Page contents on the host that compress as the workload's content model says.
//!
//! The simulator never stores bytes: each page it swaps out is "zero-filled" or "compresses to
//! N bytes", drawn from the `[content]` model by the page's identity (task, instance, mapping,
//! page index: swap/store/zswap/content.rs). On the real kernel zswap and zram compress
//! whatever the page holds, so when the workload has a content model the worker writes each
//! page, at its first write (the fault that replaces the shared zero page with a page of its
//! own), with the content the same model draws for the same page:
//!
//! * a zero-filled page: nothing (it stays zero; the swap layer's zero map takes it);
//! * a page compressing to N bytes: N bytes of pseudo-random data followed by zeroes. Random
//!   bytes do not compress (LZ77 finds no matches; lzo, lz4 and zstd emit them as literals
//!   with an overhead under 1%), and a run of zeroes compresses to a few bytes, so the
//!   compressed size is N plus a few dozen bytes of framing;
//! * a page that does not compress (N = 4096): random bytes throughout.
//!
//! Every write touch stores into the word it touches the value the page's content has there
//! (the random words are a function of the page and the word), so a page keeps its content,
//! as the model says it does, and a write touch is a plain store, as in the simulator.

use swaplab_core::config::stores::ContentSpec;
use swaplab_core::config::PAGE_SIZE;
use swaplab_core::rng::splitmix64;
use swaplab_core::swap::store::zswap::content::{mapping_key, page_key, ContentModel, PageContent};

/// Writes the content of pages at their first write, for one task instance.
pub struct PageFiller {
    model: ContentModel,
    /// Per mapping: its key (`content::mapping_key`).
    keys: Vec<u64>,
    /// Per mapping: one bit per page, set once the page's content is written.
    filled: Vec<Vec<u64>>,
}

impl PageFiller {
    /// A filler for mappings of `pages` pages each (0: a mapping left alone, e.g. a file's).
    pub fn new(spec: &ContentSpec, seed: u64, task_idx: usize, instance: u32, pages: &[u64]) -> PageFiller {
        PageFiller {
            model: ContentModel::new(spec, seed),
            keys: (0..pages.len()).map(|mi| mapping_key(task_idx, instance, mi)).collect(),
            filled: pages.iter().map(|&n| vec![0u64; (n as usize).div_ceil(64)]).collect(),
        }
    }

    /// The page's key and how many of its leading words hold random data.
    fn layout(&self, mapping: usize, page: usize) -> (u64, usize) {
        let key = page_key(self.keys[mapping], page as u64);
        let random_bytes = match self.model.page(key) {
            PageContent::Zero => 0,
            PageContent::Compressed(len) => (len as u64).min(PAGE_SIZE) as usize,
        };
        (key, random_bytes.div_ceil(8))
    }

    /// Word `i` of a page's random data: a function of the page and the word, so that a later
    /// write can store the very value the page holds without reading it first (a read would
    /// fault a swapped-out page in as a read fault, which keeps its swap slot where the
    /// kernel frees it on a write fault: not the touch the simulator performs).
    fn random_word(key: u64, i: usize) -> u64 {
        let mut s = key ^ (i as u64).wrapping_mul(0xD134_2543_DE82_EF95);
        splitmix64(&mut s)
    }

    /// For a write touch of word `word` of page `page` of `mapping`: the value to store, which
    /// leaves the page's content as it is (or as it will be once filled). None for a mapping
    /// the filler leaves alone.
    pub fn touch_value(&self, mapping: usize, page: usize, word: usize) -> Option<u64> {
        if self.filled[mapping].is_empty() {
            return None;
        }
        let (key, words) = self.layout(mapping, page);
        Some(if word < words { Self::random_word(key, word) } else { 0 })
    }

    /// Called after a write touch of page `page` of mapping `mapping` at `page_ptr`: the
    /// first time, write the content the model draws for this page.
    ///
    /// # Safety
    /// `page_ptr` must point to a writable, page-aligned PAGE_SIZE bytes of that mapping.
    pub unsafe fn after_write(&mut self, mapping: usize, page: usize, page_ptr: *mut u8) {
        let Some(bits) = self.filled[mapping].get_mut(page / 64) else {
            return;
        };
        if *bits & (1 << (page % 64)) != 0 {
            return;
        }
        *bits |= 1 << (page % 64);
        let (key, words) = self.layout(mapping, page);
        let p = page_ptr as *mut u64;
        for i in 0..words {
            // SAFETY: i < PAGE_SIZE / 8, inside the caller's page.
            unsafe { p.add(i).write_volatile(Self::random_word(key, i)) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_hold_as_many_random_bytes_as_the_model_draws() {
        let spec = ContentSpec { model: "fixed".into(), ratio: 4.0, zero_fraction: 0.5, ..ContentSpec::default() };
        let mut f = PageFiller::new(&spec, 3, 0, 0, &[256]);
        let mut mem = vec![0u64; 256 * 512];
        for pg in 0..256 {
            unsafe { f.after_write(0, pg, mem.as_mut_ptr().add(pg * 512) as *mut u8) };
        }
        let nonzero: Vec<usize> = (0..256).map(|pg| mem[pg * 512..(pg + 1) * 512].iter().rposition(|&w| w != 0).map_or(0, |i| i + 1)).collect();
        let zero_pages = nonzero.iter().filter(|&&n| n == 0).count();
        assert!((100..156).contains(&zero_pages), "{zero_pages} of 256 zero pages for zero_fraction 0.5");
        // 4096 / 4 = 1024 bytes = 128 words, the last one almost surely non-zero.
        assert!(nonzero.iter().all(|&n| n == 0 || n == 128), "{nonzero:?}");
        // Page for page what the simulator's model says of the same page.
        let model = ContentModel::new(&spec, 3);
        for (pg, &n) in nonzero.iter().enumerate() {
            let want = match model.page(page_key(mapping_key(0, 0, 0), pg as u64)) {
                PageContent::Zero => 0,
                PageContent::Compressed(len) => len as usize / 8,
            };
            assert_eq!(n, want, "page {pg}");
        }
        // A second write keeps the content, and a touch stores what the page holds.
        let before = mem.clone();
        unsafe { f.after_write(0, 7, mem.as_mut_ptr().add(7 * 512) as *mut u8) };
        assert_eq!(before, mem);
        for pg in [0usize, 7, 100] {
            for w in [0usize, 5, 127, 128, 511] {
                assert_eq!(f.touch_value(0, pg, w), Some(mem[pg * 512 + w]), "page {pg} word {w}");
            }
        }
    }
}
