//! File readahead as `mm/readahead.c` decides it (on-demand readahead, Fengguang Wu, 2.6.23;
//! the form read here is 6.x's `page_cache_sync_ra` / `page_cache_async_ra`) and the mmap
//! read-around of `mm/filemap.c` (`do_sync_mmap_readahead` / `do_async_mmap_readahead`).
//!
//! This file only decides *which pages* to read: each entry point updates the file's
//! [`RaState`] (`struct file_ra_state`) and returns a [`RaRequest`] — `nr` pages from `start`,
//! with `PG_readahead` set on the page `lookahead` pages before the end (the trigger of the
//! next, asynchronous, window). The engine (`pagecache/mod.rs`) performs the request as
//! `page_cache_ra_unbounded` does: skip cached pages, stop at the first allocation failure.
//!
//! The window's life: a read at the start of a file, or right after the previous read,
//! starts a window of `get_init_ra_size` pages (4x, 2x or the maximum for small requests)
//! whose tail is the async part; hitting the marked page starts the next window right after
//! the current one, `get_next_ra_size` pages (4x while below max/16, 2x up to max/2, then the
//! maximum), so a sequential reader ramps to `ra_pages` (= read_ahead_kb / 4). A read that is
//! neither at the start nor after the previous one looks back in the page cache for the trail
//! a sequential stream leaves (`page_cache_prev_miss`); without one it reads just what was asked
//! and leaves the state alone, so random reads do no readahead. Requests are in pages; the
//! model's read() and faults ask for one page (`req_count` 1, or `ra_pages` under
//! MADV_SEQUENTIAL as the kernel asks).

/// `MMAP_LOTSAMISS` (mm/filemap.c): after this many more mmap misses than hits, read-around
/// stops for the file.
pub const MMAP_LOTSAMISS: u32 = 100;

/// `struct file_ra_state` of one open file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RaState {
    /// The current window: `size` pages from `start`, the last `async_size` of them read ahead
    /// of need (the first of those carries PG_readahead).
    pub start: u64,
    pub size: u64,
    pub async_size: u64,
    /// Largest window (`ra->ra_pages`: the device's read_ahead_kb / 4, doubled by
    /// POSIX_FADV_SEQUENTIAL).
    pub ra_pages: u64,
    /// mmap misses not yet balanced by hits (`ra->mmap_miss`).
    pub mmap_miss: u32,
    /// Page of the previous read() (`ra->prev_pos >> PAGE_SHIFT`; -1 >> PAGE_SHIFT when new,
    /// as `file_ra_state_init` leaves it).
    pub prev_index: u64,
    /// The folio order of the current window (6.16+ `ra->order`): 0 for a synchronous window
    /// or read-around, 2 more for each asynchronous one, at most `ilog2(size)`. Used only when
    /// the file system has large folios (pagecache/folio.rs).
    pub order: u32,
}

impl RaState {
    pub fn new(ra_pages: u64) -> RaState {
        RaState { start: 0, size: 0, async_size: 0, ra_pages, mmap_miss: 0, prev_index: u64::MAX >> crate::mm::PAGE_SHIFT, order: 0 }
    }
}

/// Pages to read: `nr` from `start`, PG_readahead on `start + nr - lookahead` (when
/// `lookahead` is not 0 and not beyond `nr`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RaRequest {
    pub start: u64,
    pub nr: u64,
    pub lookahead: u64,
    /// The largest folio order to read it in (`page_cache_ra_order`'s `new_order`).
    pub order: u32,
}

impl RaRequest {
    /// The state's window; its order is clamped to the window as `page_cache_ra_order`
    /// clamps and stores `ra->order`.
    fn window(ra: &mut RaState) -> RaRequest {
        ra.order = ra.order.min(crate::pagecache::folio::window_max_order(ra.size));
        RaRequest { start: ra.start, nr: ra.size, lookahead: ra.async_size, order: ra.order }
    }

    /// Just the pages asked for (`force_page_cache_ra` / a lone random read): base pages.
    fn exact(start: u64, nr: u64) -> RaRequest {
        RaRequest { start, nr, lookahead: 0, order: 0 }
    }
}

/// `get_init_ra_size`: the first window for a request of `size` pages.
pub fn init_ra_size(size: u64, max: u64) -> u64 {
    let newsize = size.max(1).next_power_of_two();
    if newsize <= max / 32 {
        newsize * 4
    } else if newsize <= max / 4 {
        newsize * 2
    } else {
        max
    }
}

/// `get_next_ra_size`: the window after one of `cur` pages.
pub fn next_ra_size(cur: u64, max: u64) -> u64 {
    if cur < max / 16 {
        4 * cur
    } else if cur <= max / 2 {
        2 * cur
    } else {
        max
    }
}

/// `page_cache_prev_miss`: the first page not cached scanning back from `index` over at
/// most `max` pages; `u64::MAX` when the scan runs past the file's start (cached from the
/// beginning), an index `max` back when every page is cached.
fn prev_miss(cached: &dyn Fn(u64) -> bool, index: u64, max: u64) -> u64 {
    for j in 0..max {
        let Some(i) = index.checked_sub(j) else { return u64::MAX };
        if !cached(i) {
            return i;
        }
    }
    index.wrapping_sub(max)
}

/// `page_cache_next_miss`: the first page not cached from `index` over at most `max` pages
/// (`index + max` when all are).
fn next_miss(cached: &dyn Fn(u64) -> bool, index: u64, max: u64) -> u64 {
    (index..index + max).find(|&i| !cached(i)).unwrap_or(index + max)
}

/// `page_cache_sync_ra`: a read of `req` pages at `index` missed the page cache. `random`
/// is FMODE_RANDOM (`force_page_cache_ra`: just the request). `cached` tells whether a page
/// of the file is in the page cache.
pub fn sync_ra(ra: &mut RaState, index: u64, req: u64, random: bool, cached: &dyn Fn(u64) -> bool) -> RaRequest {
    if random || ra.ra_pages == 0 {
        return RaRequest::exact(index, req);
    }
    let max = ra.ra_pages;
    // Start of file, oversized read, sequential (index == prev + 1) or unaligned (== prev).
    if index == 0 || req > max || index.wrapping_sub(ra.prev_index) <= 1 {
        ra.start = index;
        ra.size = init_ra_size(req, max);
        ra.async_size = if ra.size > req { ra.size - req } else { ra.size >> 1 };
        ra.order = 0;
        return RaRequest::window(ra);
    }
    // Look for the cached history a sequential stream would leave behind.
    let miss = index.checked_sub(1).map_or(u64::MAX, |i| prev_miss(cached, i, max));
    let mut contig = index.wrapping_sub(miss).wrapping_sub(1);
    if contig <= req {
        // A standalone, small random read: read as is, leave the state alone.
        return RaRequest::exact(index, req);
    }
    if miss == u64::MAX {
        contig *= 2; // cached from the beginning: a long-run stream or a whole-file read
    }
    ra.start = index;
    ra.size = (contig + req).min(max);
    ra.async_size = 1;
    ra.order = 0;
    RaRequest::window(ra)
}

/// `page_cache_async_ra`: a read hit the PG_readahead page at `index` (the caller has
/// cleared the mark, and skips a page under writeback). Returns the next window, or None.
pub fn async_ra(ra: &mut RaState, index: u64, req: u64, cached: &dyn Fn(u64) -> bool) -> Option<RaRequest> {
    if ra.ra_pages == 0 {
        return None;
    }
    let max = ra.ra_pages;
    if index == ra.start + ra.size - ra.async_size {
        // The expected mark: ramp up, the whole next window is asynchronous.
        ra.start += ra.size;
        ra.size = next_ra_size(ra.size, max);
        ra.async_size = ra.size;
        ra.order += 2;
        return Some(RaRequest::window(ra));
    }
    // A marked page without matching state (interleaved streams): the cache tells how far
    // the previous window went.
    let start = next_miss(cached, index + 1, max);
    if start == 0 || start - index > max {
        return None;
    }
    ra.start = start;
    ra.size = next_ra_size(start - index + req, max);
    ra.async_size = ra.size;
    ra.order += 2;
    Some(RaRequest::window(ra))
}

/// `do_sync_mmap_readahead`: a page fault at `pgoff` missed the page cache. `advice` is the
/// VMA's (MADV_RANDOM: nothing beyond the page; MADV_SEQUENTIAL: on-demand readahead of
/// `ra_pages`); otherwise read-around: `ra_pages` centred on the fault, the last quarter
/// asynchronous — until the file has missed `MMAP_LOTSAMISS` more times than it hit.
pub fn mmap_sync_ra(ra: &mut RaState, pgoff: u64, advice: crate::config::pagecache::Advice, cached: &dyn Fn(u64) -> bool) -> Option<RaRequest> {
    use crate::config::pagecache::Advice;
    if advice == Advice::Random || ra.ra_pages == 0 {
        return None;
    }
    if advice == Advice::Sequential {
        let req = ra.ra_pages;
        return Some(sync_ra(ra, pgoff, req, false, cached));
    }
    if ra.mmap_miss < MMAP_LOTSAMISS * 10 {
        ra.mmap_miss += 1;
    }
    if ra.mmap_miss > MMAP_LOTSAMISS {
        return None;
    }
    ra.start = pgoff.saturating_sub(ra.ra_pages / 2);
    ra.size = ra.ra_pages;
    ra.async_size = ra.ra_pages / 4;
    ra.order = 0;
    Some(RaRequest::window(ra))
}

/// `do_async_mmap_readahead`: a page fault found its page cached; `marked` is its
/// PG_readahead (which the caller clears). A hit pays back one miss.
pub fn mmap_async_ra(ra: &mut RaState, pgoff: u64, advice: crate::config::pagecache::Advice, marked: bool, cached: &dyn Fn(u64) -> bool) -> Option<RaRequest> {
    if advice == crate::config::pagecache::Advice::Random || ra.ra_pages == 0 {
        return None;
    }
    ra.mmap_miss = ra.mmap_miss.saturating_sub(1);
    if !marked {
        return None;
    }
    let req = ra.ra_pages;
    async_ra(ra, pgoff, req, cached)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_sizes_follow_the_kernel_formulas() {
        // 128 KiB: 32 pages. A one-page read starts at 4 pages, then 8, 16, 32, 32.
        assert_eq!(init_ra_size(1, 32), 4);
        assert_eq!(next_ra_size(4, 32), 8);
        assert_eq!(next_ra_size(8, 32), 16);
        assert_eq!(next_ra_size(16, 32), 32);
        assert_eq!(next_ra_size(4, 512), 16);
        assert_eq!(next_ra_size(32, 32), 32);
        assert_eq!(init_ra_size(32, 32), 32);
        assert_eq!(init_ra_size(3, 512), 16);
        assert_eq!(init_ra_size(64, 512), 128);
    }

    #[test]
    fn sequential_reads_ramp_and_random_reads_do_not_read_ahead() {
        let none = |_: u64| false;
        let mut ra = RaState::new(32);
        let w = sync_ra(&mut ra, 0, 1, false, &none);
        assert_eq!(w, RaRequest { start: 0, nr: 4, lookahead: 3, order: 0 });
        // The mark is on page 1: hitting it reads the next window of 8, all asynchronous.
        let w = async_ra(&mut ra, 1, 1, &none).unwrap();
        assert_eq!(w, RaRequest { start: 4, nr: 8, lookahead: 8, order: 2 });
        let w = async_ra(&mut ra, 4, 1, &none).unwrap();
        assert_eq!(w, RaRequest { start: 12, nr: 16, lookahead: 16, order: 4 });
        let w = async_ra(&mut ra, 12, 1, &none).unwrap();
        assert_eq!(w, RaRequest { start: 28, nr: 32, lookahead: 32, order: 5 });
        ra.prev_index = 60;
        let before = ra;
        assert_eq!(sync_ra(&mut ra, 1000, 1, false, &none), RaRequest { start: 1000, nr: 1, lookahead: 0, order: 0 });
        assert_eq!(ra, before, "a random read leaves the state alone");
    }

    #[test]
    fn mmap_read_around_stops_after_lots_of_misses() {
        use crate::config::pagecache::Advice;
        let none = |_: u64| false;
        let mut ra = RaState::new(32);
        let w = mmap_sync_ra(&mut ra, 100, Advice::Normal, &none).unwrap();
        assert_eq!(w, RaRequest { start: 84, nr: 32, lookahead: 8, order: 0 });
        for _ in 1..MMAP_LOTSAMISS {
            assert!(mmap_sync_ra(&mut ra, 100, Advice::Normal, &none).is_some());
        }
        assert!(mmap_sync_ra(&mut ra, 100, Advice::Normal, &none).is_none());
        assert!(mmap_sync_ra(&mut RaState::new(32), 100, Advice::Random, &none).is_none());
    }
}
