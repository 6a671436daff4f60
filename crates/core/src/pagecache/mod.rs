//! The page cache of regular files: how file pages come in (kernel-algorithms.md §3.10, and
//! `mm/filemap.c`, `mm/readahead.c`, `mm/memory.c` of 6.x).
//!
//! * **read()** (`filemap_read` → `filemap_get_pages`): a miss calls on-demand readahead
//!   (`page_cache_sync_readahead`), and a page is read alone only if readahead did not bring
//!   it; a page found with PG_readahead starts the next window asynchronously; the reader
//!   sleeps on the folio lock of a page still being read; then `folio_mark_accessed`, and
//!   the file's `prev_pos` moves to the page.
//! * **Page faults on file mappings** (`do_read_fault` → `do_fault_around` → `filemap_fault`):
//!   a read fault first maps the cached pages of its aligned `fault_around_bytes` block
//!   (`filemap_map_pages`, 3.15+ profiles: not locked, up to date, not PG_readahead, PTE
//!   empty); if that mapped the faulting page the fault is done (a minor fault; the pages
//!   mapped around it are not faults at all). Otherwise `filemap_fault`: a cached page gets
//!   `do_async_mmap_readahead`, a missing one counts `pgmajfault` and gets
//!   `do_sync_mmap_readahead` (read-around, or on-demand readahead under MADV_SEQUENTIAL,
//!   nothing under MADV_RANDOM), then the fault sleeps on the page and is retried.
//! * **The reader's reference** (`held.rs`): a fault or read() that starts the next window
//!   from a cached folio holds a reference on it meanwhile, and reclaim run by the window's
//!   allocations cannot free that folio.
//! * **Reading a window** (`page_cache_ra_unbounded`): pages already cached are skipped, each
//!   new page is allocated without blocking (`readahead_gfp_mask` is __GFP_NORETRY: the model
//!   takes a free page above the min watermark, or reclaims within the memory cgroup, and
//!   stops the window otherwise), charged, put in the page cache locked (a shadow entry is a
//!   refault, `filemap_add_folio` → `workingset_refault`), added to the inactive list, and
//!   read in one plug so contiguous pages merge. `pgpgin` is counted at submission, in KiB.
//!
//! There is no readahead hit counter for files in the kernel, so there is none here.

pub mod folio;
pub mod held;
pub mod readahead;

use crate::config::pagecache::Advice;
use crate::device::Plug;
use crate::engine::fault::Outcome;
use crate::engine::{DevRef, Sim};
use crate::mm::*;
use readahead::RaRequest;

impl Sim {
    /// Is page `index` of inode `obj` in the page cache?
    fn page_cached(&self, obj: usize) -> impl Fn(u64) -> bool + '_ {
        let entries = &self.mem.objects[obj].entries;
        move |i| entries.get(i as usize).is_some_and(|e| e & PTE_PRESENT != 0)
    }

    /// Read the pages of `req` that are not cached (`do_page_cache_ra`, clipped to the file's
    /// size), in folios of up to the window's size when the file system has large folios
    /// (`page_cache_ra_order`, `folio.rs`). Allocation, charge and submission CPU go to the
    /// task's clock after `extra_cpu`. Returns the number of pages read.
    pub(crate) fn page_cache_ra(&mut self, tid: u32, cpu: usize, obj: usize, req: RaRequest, extra_cpu: u64) -> u64 {
        let len = self.mem.objects[obj].entries.len() as u64;
        if req.start >= len || req.nr == 0 {
            return 0;
        }
        let nr = req.nr.min(len - req.start);
        let limit = req.start + nr - 1;
        let mark = (req.lookahead > 0 && req.lookahead <= nr).then(|| req.start + nr - req.lookahead);
        let max_order = if self.cfg.config.pagecache.large_folios { req.order } else { 0 };
        let base = self.mem.objects[obj].file_base;
        let max_req = self.io.file_dev.params.max_request_pages;
        let mut plug = Plug::default();
        let mut read = 0;
        let mut index = req.start;
        let mut pages = Vec::new();
        while index <= limit {
            if self.mem.objects[obj].entries[index as usize] & PTE_PRESENT != 0 {
                index += 1;
                continue;
            }
            let order = if max_order > 0 { self.ra_folio_order_at(obj, index, limit, max_order) } else { 0 };
            if !self.alloc_folio_nowait(tid, cpu, 1 << order, &mut pages) {
                break;
            }
            self.add_ra_folio(obj, index, order, mark, &pages);
            for (i, &f) in pages.iter().enumerate() {
                plug.add(base + index + i as u64, false, f, max_req);
            }
            read += pages.len() as u64;
            index += pages.len() as u64;
        }
        let at = self.tasks[tid as usize].clock + extra_cpu + read * self.costs.alloc_page_ns;
        let cpu_ns = if read > 0 { self.submit_plug(DevRef::File, plug, at) } else { 0 };
        self.tasks[tid as usize].clock = at + cpu_ns;
        read
    }

    /// `nr` pages for one readahead folio into `pages`, without blocking; on failure the ones
    /// taken are given back and false is returned (the window stops there).
    fn alloc_folio_nowait(&mut self, tid: u32, cpu: usize, nr: u64, pages: &mut Vec<u32>) -> bool {
        pages.clear();
        while (pages.len() as u64) < nr {
            match self.try_alloc_nowait(tid, cpu) {
                Some(f) => pages.push(f),
                None => {
                    for f in pages.drain(..) {
                        self.free_frame(f);
                    }
                    return false;
                }
            }
        }
        true
    }

    /// `filemap_add_folio` of a readahead folio of `order` at `index`: locked, PG_readahead if
    /// it holds `mark`, in the page cache, refault-checked against the first page's shadow (a
    /// large folio's pages take its decision), on the LRU with its pages together.
    fn add_ra_folio(&mut self, obj: usize, index: u64, order: u32, mark: Option<u64>, pages: &[u32]) {
        let shadow = self.mem.objects[obj].entries[index as usize];
        let marked = mark.is_some_and(|m| (index..index + pages.len() as u64).contains(&m));
        for (i, &f) in pages.iter().enumerate() {
            let idx = index + i as u64;
            let own = self.mem.objects[obj].entries[idx as usize];
            let fr = &mut self.mem.frames[f as usize];
            fr.flags |= PG_LOCKED | if marked && i == 0 { PG_READAHEAD } else { 0 };
            fr.set_owner(Owner::File, obj as u32, idx as u32);
            if order > 0 {
                fr.set_folio_order(order);
            }
            let ent = if order > 0 && shadow & ENT_SHADOW != 0 { shadow } else { own };
            if ent & ENT_SHADOW != 0 {
                self.refault(f, ent as u32, false);
            }
            self.mem.objects[obj].entries[idx as usize] = PTE_PRESENT | f as u64;
        }
        if order > 0 {
            let shared = self.mem.frames[pages[0] as usize].flags & (PG_ACTIVE | PG_WORKINGSET);
            for &f in &pages[1..] {
                let fr = &mut self.mem.frames[f as usize];
                fr.flags = (fr.flags & !(PG_ACTIVE | PG_WORKINGSET)) | shared;
            }
        }
        for &f in pages {
            self.lru_add(f);
        }
    }

    /// The madvise/fadvise advice of the file's mapping.
    fn advice_of(&self, obj: usize) -> Advice {
        self.mem.objects[obj].advice
    }

    /// A read of a cached page: if it carries PG_readahead (and is not under writeback),
    /// clear it and start the next window (`filemap_readahead` / `page_cache_async_ra`).
    fn read_hit_marked(&mut self, tid: u32, cpu: usize, obj: usize, index: u64, f: u32, req: u64) {
        let head = self.folio_head(f);
        let fr = self.mem.frames[head as usize];
        if !fr.has(PG_READAHEAD) || fr.has(PG_WRITEBACK) {
            return;
        }
        self.mem.frames[head as usize].flags &= !PG_READAHEAD;
        let mut ra = self.mem.objects[obj].ra;
        let win = readahead::async_ra(&mut ra, index, req, &self.page_cached(obj));
        self.mem.objects[obj].ra = ra;
        if let Some(w) = win {
            // The read holds its folio's reference meanwhile (held.rs).
            self.holding_folio(f, |sim| sim.page_cache_ra(tid, cpu, obj, w, 0));
        }
    }

    /// Buffered read() of page `index` of inode `obj` (generic_file_read_iter). `Done` when
    /// the page was copied; `Blocked` while it is being read.
    pub(crate) fn filemap_read(&mut self, tid: u32, cpu: usize, obj: usize, index: u64) -> Outcome {
        let f = match self.filemap_get_page(tid, cpu, obj, index) {
            Ok(f) => f,
            Err(out) => return out,
        };
        if self.mem.frames[f as usize].has(PG_LOCKED) {
            self.wait_on_frame(tid, f);
            return Outcome::Blocked;
        }
        self.filemap_read_done(obj, index, f);
        Outcome::Done
    }

    /// The page-cache half of a read (`filemap_get_pages`): readahead on a miss, the next
    /// window on a PG_readahead hit. Returns the page's frame, which may still be locked
    /// (being read); `Err` when allocating it blocked or killed the task.
    pub(crate) fn filemap_get_page(&mut self, tid: u32, cpu: usize, obj: usize, index: u64) -> Result<u32, Outcome> {
        if self.mem.objects[obj].entries[index as usize] & PTE_PRESENT == 0 {
            let mut ra = self.mem.objects[obj].ra;
            let random = self.advice_of(obj) == Advice::Random;
            let req = readahead::sync_ra(&mut ra, index, 1, random, &self.page_cached(obj));
            self.mem.objects[obj].ra = ra;
            self.page_cache_ra(tid, cpu, obj, req, self.costs.major_fault_cpu_ns);
            if self.mem.objects[obj].entries[index as usize] & PTE_PRESENT == 0 {
                // Readahead could not allocate it: filemap_create_folio, which may reclaim.
                if let Some(out) = self.read_one_page(tid, cpu, obj, index) {
                    return Err(out);
                }
            }
        }
        let f = pte_frame(self.mem.objects[obj].entries[index as usize]);
        self.read_hit_marked(tid, cpu, obj, index, f, 1);
        Ok(f)
    }

    /// The copy is done: `folio_mark_accessed`, and the file's `prev_pos` moves to the page.
    pub(crate) fn filemap_read_done(&mut self, obj: usize, index: u64, f: u32) {
        self.mark_page_accessed(f);
        self.mem.objects[obj].ra.prev_index = index;
    }

    /// Read one page that readahead did not bring (`filemap_create_folio` /
    /// `__filemap_get_folio(FGP_CREAT)` + `filemap_read_folio`): the allocation may block in
    /// reclaim. `None` when the page is now in the cache, locked and being read.
    fn read_one_page(&mut self, tid: u32, cpu: usize, obj: usize, index: u64) -> Option<Outcome> {
        let f = match self.alloc_page(tid, cpu) {
            crate::engine::memory::Alloc::Frame(f) => f,
            crate::engine::memory::Alloc::Blocked => return Some(Outcome::Blocked),
            crate::engine::memory::Alloc::Killed => return Some(Outcome::Killed),
        };
        let ent = self.mem.objects[obj].entries[index as usize];
        let fr = &mut self.mem.frames[f as usize];
        fr.flags |= PG_LOCKED;
        fr.set_owner(Owner::File, obj as u32, index as u32);
        if ent & ENT_SHADOW != 0 {
            self.refault(f, ent as u32, false);
        }
        self.mem.objects[obj].entries[index as usize] = PTE_PRESENT | f as u64;
        self.lru_add(f);
        let mut plug = Plug::default();
        plug.add(self.mem.objects[obj].file_base + index, false, f, u32::MAX);
        let at = self.tasks[tid as usize].clock + self.costs.alloc_page_ns;
        let cpu_ns = self.submit_plug(DevRef::File, plug, at);
        self.tasks[tid as usize].clock = at + cpu_ns;
        None
    }

    /// `filemap_map_pages` for a read fault at page `page` of file VMA `v`: map the cached,
    /// up-to-date, unmarked pages of the fault's aligned `fault_around_pages` block (clipped to
    /// the VMA) whose PTEs are empty; a large folio the block touches is mapped whole when it
    /// lies in the VMA (6.18, `folio.rs`). Returns whether the faulting page was mapped. The
    /// pages mapped that were not PG_workingset pay back mmap misses (6.x).
    fn fault_around(&mut self, tid: u32, v: usize, page: u64) -> bool {
        let nr = self.cfg.config.pagecache.fault_around_pages();
        let obj = self.mem.vmas[v].object as usize;
        let len = self.mem.vmas[v].ptes.len() as u64;
        let (from, to) = self.whole_folios(obj, page & !(nr - 1), ((page & !(nr - 1)) + nr).min(len), len);
        let (mut mapped, mut paid_back, mut target) = (0u64, 0u32, false);
        for i in from..to {
            let ent = self.mem.objects[obj].entries[i as usize];
            if ent & PTE_PRESENT == 0 || self.mem.vmas[v].ptes[i as usize] != 0 {
                continue;
            }
            let f = pte_frame(ent);
            let fr = self.mem.frames[f as usize];
            if fr.has(PG_LOCKED) || self.mem.frames[self.folio_head(f) as usize].has(PG_READAHEAD) {
                continue;
            }
            // Mapped read-only and young (x86's vm_page_prot has _PAGE_ACCESSED); a write
            // faults again to make it writable.
            let vma = &mut self.mem.vmas[v];
            vma.ptes[i as usize] = PTE_PRESENT | PTE_ACCESSED | f as u64;
            vma.rss += 1;
            mapped += 1;
            paid_back += !fr.has(PG_WORKINGSET) as u32;
            target |= i == page;
        }
        let ra = &mut self.mem.objects[obj].ra;
        ra.mmap_miss = ra.mmap_miss.saturating_sub(paid_back);
        self.tasks[tid as usize].clock += mapped.saturating_sub(1) * self.costs.fault_around_page_ns;
        target
    }

    /// `[from, to)` widened to the whole large folios at its two ends, when they lie within
    /// the VMA's `len` pages (base pages leave it as it is).
    fn whole_folios(&self, obj: usize, from: u64, to: u64, len: u64) -> (u64, u64) {
        let entries = &self.mem.objects[obj].entries;
        let order_at = |i: u64| {
            let e = entries[i as usize];
            if e & PTE_PRESENT == 0 { 0 } else { self.mem.frames[pte_frame(e) as usize].folio_order() }
        };
        let first = from & !((1u64 << order_at(from)) - 1);
        let last = to - 1;
        let end = (last | ((1u64 << order_at(last)) - 1)) + 1;
        (first, if end <= len { end } else { to })
    }

    /// A fault on a file mapping whose PTE is empty (`do_read_fault` / `do_shared_fault`).
    /// `Done` when mapped; `Blocked` while the page is read (the fault is retried).
    pub(crate) fn file_fault(&mut self, tid: u32, cpu: usize, v: usize, page: u64, write: bool) -> Outcome {
        let retry = self.tasks[tid as usize].fault_was_major;
        if !write && self.profile > crate::config::Profile::V3_14 && self.cfg.config.pagecache.fault_around_pages() > 1 && self.fault_around(tid, v, page) {
            self.tasks[tid as usize].clock += self.costs.cache_hit_fault_ns;
            self.count_file_fault(tid);
            return Outcome::Done;
        }
        let obj = self.mem.vmas[v].object as usize;
        let advice = self.advice_of(obj);
        let ent = self.mem.objects[obj].entries[page as usize];
        if ent & PTE_PRESENT == 0 {
            // Not in the page cache at all: a major fault (filemap_fault counts PGMAJFAULT here).
            self.tasks[tid as usize].fault_was_major = true;
            self.tasks[tid as usize].touch_kinds.mark(crate::stats::touch_kinds::TouchKind::Major);
            let mut ra = self.mem.objects[obj].ra;
            let req = readahead::mmap_sync_ra(&mut ra, page, advice, &self.page_cached(obj));
            self.mem.objects[obj].ra = ra;
            let req = req.unwrap_or(RaRequest { start: page, nr: 0, lookahead: 0, order: 0 });
            self.page_cache_ra(tid, cpu, obj, req, self.costs.major_fault_cpu_ns);
            if self.mem.objects[obj].entries[page as usize] & PTE_PRESENT == 0 {
                if let Some(out) = self.read_one_page(tid, cpu, obj, page) {
                    return out;
                }
            }
            let f = pte_frame(self.mem.objects[obj].entries[page as usize]);
            self.wait_on_frame(tid, f);
            return Outcome::Blocked;
        }
        let f = pte_frame(ent);
        if !retry {
            let head = self.folio_head(f);
            let marked = self.mem.frames[head as usize].has(PG_READAHEAD);
            self.mem.frames[head as usize].flags &= !PG_READAHEAD;
            let mut ra = self.mem.objects[obj].ra;
            let win = readahead::mmap_async_ra(&mut ra, page, advice, marked, &self.page_cached(obj));
            self.mem.objects[obj].ra = ra;
            if let Some(w) = win {
                // filemap_fault holds the folio it found across the readahead (held.rs).
                self.holding_folio(f, |sim| sim.page_cache_ra(tid, cpu, obj, w, 0));
            }
        }
        if self.mem.frames[f as usize].has(PG_LOCKED) {
            self.wait_on_frame(tid, f);
            return Outcome::Blocked;
        }
        // A read maps the page read-only (the mapping wants write notification for dirty
        // accounting); a write maps it writable and dirties the folio (do_shared_fault →
        // fault_dirty_shared_page), which may throttle the writer.
        let w = if write { PTE_WRITE | PTE_DIRTY } else { 0 };
        let vma = &mut self.mem.vmas[v];
        vma.ptes[page as usize] = PTE_PRESENT | PTE_ACCESSED | w | f as u64;
        vma.rss += 1;
        self.tasks[tid as usize].clock += self.costs.cache_hit_fault_ns;
        self.count_file_fault(tid);
        if write {
            let dirtied = self.folio_mark_dirty(f);
            self.balance_dirty_pages_ratelimited(tid, dirtied);
        }
        Outcome::Done
    }
}
