//! The reference a reader holds on the page-cache folio it found, while it starts the next
//! readahead window from it — and why reclaim cannot free that folio meanwhile.
//!
//! A page fault that finds its folio cached takes a reference on it (6.x `filemap_fault` →
//! `filemap_get_folio`; 2.6.31+ `find_get_page`; 2.6.28 `find_lock_page`, which also locks it)
//! and, if the folio carries PG_readahead, starts the next window (`do_async_mmap_readahead`)
//! *before* it locks the folio and maps it. A `read()` does the same with the folios of its
//! batch (`filemap_get_read_batch` takes their references, then `filemap_readahead`). The
//! window's allocations charge the memory cgroup, and a charge over the limit reclaims in
//! the reader's own context. If that reclaim reaches the reader's folio — the newest on the
//! inactive list, not mapped yet, not referenced: on first look a folio to reclaim —
//! `__remove_mapping` refuses it: it frees a folio only when the reference count is the page
//! cache's and the isolation's (`folio_ref_freeze(folio, 1 + nr_pages)`, 6.x; the same
//! `page_freeze_refs(page, 2)` since 2.6.27), and the reader's makes one more. The folio goes
//! back to the inactive list (`keep_locked`), counted as scanned, neither reclaimed nor
//! kept for its references.
//!
//! Traced on a 6.18 host (docs/evidence/host-pagecache.md): the first memcg reclaim of a file
//! scan went down to priority 1, round the whole inactive file list, met the faulting
//! reader's order-5 folio after its read had completed, and kept it — 32 of the pages of the
//! priority-1 pass counted neither reclaimed nor `nr_ref_keep` — so the reader never lost its
//! readahead chain (3 major faults per run, all at page 0). Without this the model evicted
//! that folio, the reader took a major fault there, and the read-around centred on it broke
//! the 32-page alignment of every later readahead folio.
//!
//! The model holds the reference only across the readahead call: the reader's later wait on
//! the folio lock needs none (the folio is locked while its read is in flight, which reclaim
//! already respects), and nothing else runs between the wake-up and the mapping.

use crate::engine::Sim;

impl Sim {
    /// Run `op` with the running task holding a reference on the folio of page-cache frame
    /// `f` (released after, whatever `op` did).
    pub(crate) fn holding_folio<R>(&mut self, f: u32, op: impl FnOnce(&mut Sim) -> R) -> R {
        let head = self.folio_head(f);
        self.mem.held.push(head);
        let out = op(self);
        let last = self.mem.held.pop();
        debug_assert_eq!(last, Some(head), "folio references are released in reverse order");
        out
    }

    /// Does a task hold a reference on the folio of frame `f`, so that `__remove_mapping`'s
    /// refcount freeze fails?
    pub(crate) fn folio_held_elsewhere(&self, f: u32) -> bool {
        !self.mem.held.is_empty() && self.mem.held.contains(&self.folio_head(f))
    }
}
