//! The policy-neutral page-out path (kernel-algorithms.md §3.10, §2.6): what happens to a
//! batch of folios a policy has isolated — `shrink_folio_list`'s verdicts
//! (`folio_check_references` per era), `add_to_swap`, unmapping through the reverse map,
//! `pageout` through the swap I/O layer or the file's device, and `__remove_mapping` with
//! the policy's shadow (refused for a folio a reader holds, `pagecache/held.rs`). The classic
//! LRU's `shrink_inactive_list` and MGLRU's `evict_folios` both end here; each puts back what
//! is returned to keep or activate.

use super::writeback_stall::BatchStat;
use super::{LruGenRmap, LruPolicy, ScanControl};
use crate::config::Profile;
use crate::device::Plug;
use crate::engine::{DevRef, Sim};
use crate::mm::*;
use crate::stats::{CpuCategory as Cat, CpuCost};
use crate::swap::io::{SwapPlugs, WriteOutcome};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Verdict {
    Activate,
    Keep,
    Reclaim,
    ReclaimClean,
    /// The reclaimer is asleep (`sc.batch_waits()`): for a request on a full queue
    /// (`sc.queue_full`), or, in legacy memcg reclaim, for a folio's writeback to end
    /// (`sc.folio_wait`). The folio waits with it, its verdict still to be made.
    Deferred,
}

/// What `folio_referenced` found: young PTEs (cleared), mappings walked, and whether a VMA
/// that referenced the folio is executable (its `vm_flags & VM_EXEC`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Referenced {
    pub ptes: u32,
    pub walks: u32,
    pub exec: bool,
    /// PTEs found young and cleared (`ptep_clear_flush_young`: an atomic write to the entry
    /// and a flush of its TLB entry; an old entry is only read).
    pub young: u32,
}

/// What `shrink_folio_list` did with a batch.
#[derive(Debug, Default)]
pub struct FolioListResult {
    pub reclaimed: u64,
    /// Folios sent to writeback (swap or file) in this batch (`pageout` calls).
    pub pageout: u64,
    /// To put back on the inactive list (`keep_locked`), and to activate (`activate_locked`).
    pub keep: Vec<u32>,
    pub activate: Vec<u32>,
    /// Not yet decided because the reclaimer sleeps, for a request or for a folio's writeback
    /// (`Verdict::Deferred`):
    /// back where they were taken, to be taken first when the reclaimer resumes its pass, as
    /// the kernel's would go on with its batch.
    pub deferred: Vec<u32>,
    /// The batch's counts for the era's writeback stall (`writeback_stall.rs`).
    pub stat: BatchStat,
}

/// One batch in progress: its write plugs (swap devices through the swap I/O layer, and the
/// file device), the CPU time spent on it by category, and the folios sent to writeback.
struct Batch {
    swap: SwapPlugs,
    file: Plug,
    cost: CpuCost,
    pageout: u64,
}

impl Sim {
    /// `shrink_folio_list`: reclaim what can be reclaimed of `folios` (isolated from the
    /// policy's lists), leaving shadows through `policy`. Submits the batch's writes; its CPU
    /// time goes to `sc.cost`.
    pub(crate) fn shrink_folio_list(&mut self, policy: &mut dyn LruPolicy, folios: Vec<u32>, sc: &mut ScanControl) -> FolioListResult {
        let mut out = FolioListResult::default();
        let cost = CpuCost::of(Cat::LruOps, folios.len() as u64 * self.costs.scan_page_ns);
        let mut swap = SwapPlugs::new(self.swap.areas.len());
        swap.set_cpu(sc.cpu as u32);
        let file = Plug { cpu: sc.cpu as u32, ..Plug::default() };
        let mut batch = Batch { swap, file, cost, pageout: 0 };
        let before = (sc.nr_dirty, sc.nr_congested, sc.nr_writeback, sc.nr_immediate);
        let unqueued_dirty = self.count_dirty_writeback(&folios, sc);
        let mut i = 0;
        while i < folios.len() {
            // A large folio's pages were isolated together and are judged together.
            let f = folios[i];
            let mut end = i + 1;
            while end < folios.len() && self.mem.frames[folios[end] as usize].same_large_folio(&self.mem.frames[f as usize]) {
                end += 1;
            }
            let pages = &folios[i..end];
            let verdict = if pages.len() == 1 { self.shrink_one_folio(policy, f, sc, &mut batch) } else { self.shrink_large_folio(policy, pages, sc, &mut batch) };
            match verdict {
                Verdict::Activate => out.activate.extend_from_slice(pages),
                Verdict::Keep => out.keep.extend_from_slice(pages),
                Verdict::Deferred => out.deferred.extend_from_slice(pages),
                Verdict::Reclaim | Verdict::ReclaimClean => out.reclaimed += pages.len() as u64,
            }
            i = end;
        }
        // Before the batch's folios are freed: every CPU drops what was unmapped.
        self.try_to_unmap_flush(&mut batch.cost);
        out.pageout = batch.pageout;
        out.stat = BatchStat { taken: folios.len() as u64, dirty: sc.nr_dirty - before.0, unqueued_dirty, congested: sc.nr_congested - before.1, writeback: sc.nr_writeback - before.2, immediate: sc.nr_immediate - before.3 };
        for &f in &out.activate {
            // activate_locked: give swap back when swap is tight (§2.5).
            if self.mem.frames[f as usize].has(PG_SWAPCACHE) && self.vm_swap_full() {
                self.try_free_swap(f);
            }
        }
        self.submit_batch(batch, sc);
        // shrink_inactive_list (3.11+): a batch of nothing but dirty folios nobody is writing
        // means the flushers are behind: wake them for everything dirty.
        if self.profile > Profile::V2_6_28 && unqueued_dirty > 0 && unqueued_dirty == folios.len() as u64 {
            self.wakeup_flusher_threads();
        }
        out
    }

    /// May this reclaimer write a dirty page-cache folio itself? Before 3.2 every reclaimer
    /// did; 3.2 stopped direct reclaim (stack depth, seeky single-page I/O) and 3.11 let
    /// kswapd only once the node is flagged dirty (ZONE_TAIL_LRU_DIRTY / PGDAT_DIRTY); 4.12
    /// also requires the folio to have been seen dirty before (PG_reclaim set).
    fn reclaim_may_write_file(&self, f: u32, sc: &ScanControl) -> bool {
        match self.profile {
            Profile::V2_6_28 => true,
            Profile::V3_14 => sc.kswapd && self.reclaim.pgdat_dirty,
            Profile::V4_14 | Profile::V6 => sc.kswapd && self.reclaim.pgdat_dirty && self.mem.frames[f as usize].has(PG_RECLAIM),
        }
    }

    /// One folio of `shrink_folio_list`: its verdict, and for one that can go, the swap slot,
    /// the unmap, the page-out and the removal from its cache. `Reclaim` means freed.
    fn shrink_one_folio(&mut self, policy: &mut dyn LruPolicy, f: u32, sc: &mut ScanControl, batch: &mut Batch) -> Verdict {
        let fr = self.mem.frames[f as usize];
        if sc.batch_waits() {
            return Verdict::Deferred;
        }
        if fr.has(PG_LOCKED) {
            return Verdict::Keep;
        }
        if fr.has(PG_WRITEBACK) {
            return self.folio_under_writeback(f, sc);
        }
        let verdict = match policy.lru_gen_rmap() {
            Some(gen) => {
                self.check_references_lru_gen(gen, f, &mut batch.cost)
            }
            None => {
                let at = sc.clock() + batch.cost.total();
                let (v, walks, young) = self.check_references(f);
                let walk_ns = walks as u64 * self.costs.rmap_walk_ns + self.xen_clear_young_ns(young);
                // page_referenced_anon holds the anon_vma's lock for the whole walk (2.6.28).
                self.anon_vma_lock_walk(sc, fr.owner_kind(), fr.owner, at, walk_ns, &mut batch.cost);
                batch.cost.charge(Cat::RmapWalk, walk_ns);
                v
            }
        };
        if matches!(verdict, Verdict::Activate | Verdict::Keep) {
            return verdict;
        }
        let swap_backed = fr.has(PG_SWAPBACKED);
        if swap_backed && !fr.has(PG_SWAPCACHE) {
            if !self.add_to_swap(f, sc.cpu) {
                return Verdict::Activate;
            }
            batch.cost.charge(Cat::SwapAlloc, self.costs.swap_alloc_ns);
        }
        if self.folio_mapped(f) {
            // One page_vma_mapped_walk per VMA visited, one PTE clear and local flush per
            // mapping; other CPUs' TLBs are flushed per batch (4.3+) or at once (tlb_flush.rs).
            let at = sc.clock() + batch.cost.total();
            let (visits, unmapped, own) = self.try_to_unmap(f);
            let (walk_ns, unmap_ns) = (visits as u64 * self.costs.rmap_walk_ns, unmapped as u64 * self.costs.unmap_ns + self.xen_unmap_ns(unmapped, own));
            // try_to_unmap_anon holds the anon_vma's lock for the walk and the unmaps (2.6.28).
            self.anon_vma_lock_walk(sc, fr.owner_kind(), fr.owner, at, walk_ns + unmap_ns, &mut batch.cost);
            batch.cost.charge(Cat::RmapWalk, walk_ns);
            batch.cost.charge(Cat::Unmap, unmap_ns);
            self.try_to_unmap_flush_unless_batched(&mut batch.cost);
        }
        if self.mem.frames[f as usize].owner_kind() == Owner::Shmem {
            self.shmem_writeout(f);
        }
        if self.mem.frames[f as usize].has(PG_DIRTY) {
            if !swap_backed && !self.reclaim_may_write_file(f, sc) {
                // Left to the flusher, and reclaimed as soon as its writeback ends
                // (activated since 4.12, kept on the inactive list before).
                self.mem.frames[f as usize].flags |= PG_RECLAIM;
                self.stats.vm.nr_vmscan_immediate_reclaim += 1;
                return if self.profile >= Profile::V4_14 { Verdict::Activate } else { Verdict::Keep };
            }
            if verdict == Verdict::ReclaimClean {
                return Verdict::Keep;
            }
            // No CPU may write the folio through a stale writable entry while it is written.
            self.try_to_unmap_flush_dirty(&mut batch.cost);
            match self.pageout(f, swap_backed, sc, batch) {
                Some(WriteOutcome::Done { .. }) => {}
                None if sc.queue_full.is_some() => return Verdict::Deferred,
                _ => return Verdict::Keep,
            }
        }
        // __remove_mapping: a reader's reference fails the refcount freeze (pagecache/held.rs);
        // otherwise leave a shadow, free the page.
        if self.folio_held_elsewhere(f) {
            return Verdict::Keep;
        }
        let ages = policy.workingset_atomics();
        self.remove_mapping(policy, f);
        batch.cost.charge(Cat::FreePage, self.costs.free_page_ns);
        self.workingset_lines_in_reclaim(policy, ages, sc, &mut batch.cost, Cat::FreePage);
        Verdict::Reclaim
    }

    /// Does this reclaimer wait for a PG_reclaim folio's writeback (§3.10 step 3(c))? Only a
    /// memory cgroup's direct reclaim whose cgroup has no writeback throttling of its own:
    /// * 3.11–4.1 (3.14 here): every memcg reclaim (`!global_reclaim(sc)`, 3.11's case 3);
    /// * 4.2+ (4.14, 6.x): a cgroup v1 memcg (`!sane_reclaim(sc)`, `writeback_throttling_sane`
    ///   since 5.x); cgroup v2 has cgroup writeback's dirty throttling and takes case (b).
    ///
    /// A folio reclaim wrote itself carries PG_reclaim from `pageout` (mm/vmscan.c `pageout`
    /// sets it before `->writepage`; swap/io.rs), so such a reclaimer waits on the first of
    /// its own writes it meets again. User allocations in the model have `__GFP_IO` and
    /// `__GFP_FS` (`may_enter_fs`); a readahead page's charge cannot sleep in the model and
    /// takes case (b). 2.6.28 waited only in lumpy reclaim's PAGEOUT_IO_SYNC (high orders).
    fn reclaim_waits_on_writeback(&self, sc: &ScanControl) -> bool {
        if sc.kswapd || !sc.memcg || !sc.may_sleep {
            return false;
        }
        match self.profile {
            Profile::V2_6_28 => false,
            Profile::V3_14 => true,
            Profile::V4_14 | Profile::V6 => self.cfg.config.machine.cgroup_version < 2,
        }
    }

    /// A folio met under writeback (§3.10 step 3), per era. 2.6.28 keeps it on the inactive
    /// list and waits for nothing (its synchronous wait is lumpy reclaim's, order > 3).
    /// 3.11+: (a) kswapd meeting a folio it marked before while the node is flagged
    /// PGDAT_WRITEBACK counts `nr_immediate`; (b) otherwise the folio is marked for immediate
    /// reclaim (PG_reclaim: its writeback completion rotates it to the inactive tail) and
    /// counts `nr_writeback`. Kept on the inactive list until 4.11, activated since 4.12
    /// (c55e8d035b28, "move dirty pages out of the way until they're flushed").
    fn folio_under_writeback(&mut self, f: u32, sc: &mut ScanControl) -> Verdict {
        if self.profile == Profile::V2_6_28 {
            return Verdict::Keep;
        }
        if self.mem.frames[f as usize].has(PG_RECLAIM) && self.reclaim_waits_on_writeback(sc) {
            // (c): legacy memcg reclaim has no dirty throttling to lean on; it waits for this
            // folio's write and then looks at the folio again.
            sc.folio_wait = Some(f);
            return Verdict::Deferred;
        }
        if sc.kswapd && self.mem.frames[f as usize].has(PG_RECLAIM) && self.reclaim.pgdat_writeback {
            sc.nr_immediate += 1;
        } else {
            sc.nr_writeback += 1;
            self.mem.frames[f as usize].flags |= PG_RECLAIM;
        }
        if self.profile >= Profile::V4_14 { Verdict::Activate } else { Verdict::Keep }
    }

    /// `shrink_folio_list` for one large page-cache folio (`pagecache/folio.rs`): one verdict
    /// from the folio's references, then all its pages unmapped and freed. Large folios are
    /// clean (dirtying one splits it); a dirty PTE found while unmapping splits it too, and
    /// the pages go back to the list as base pages for the next pass.
    fn shrink_large_folio(&mut self, policy: &mut dyn LruPolicy, pages: &[u32], sc: &mut ScanControl, batch: &mut Batch) -> Verdict {
        let head = pages[0];
        if sc.batch_waits() {
            return Verdict::Deferred;
        }
        if pages.iter().any(|&p| self.mem.frames[p as usize].has(PG_LOCKED | PG_WRITEBACK | PG_DIRTY)) {
            return Verdict::Keep;
        }
        let (verdict, walks, young) = self.check_references(head);
        batch.cost.charge(Cat::RmapWalk, walks as u64 * self.costs.rmap_walk_ns + self.xen_clear_young_ns(young));
        let referenced = self.mem.frames[head as usize].flags & PG_REFERENCED;
        for &p in &pages[1..] {
            let fr = &mut self.mem.frames[p as usize];
            fr.flags = (fr.flags & !PG_REFERENCED) | referenced;
        }
        if matches!(verdict, Verdict::Activate | Verdict::Keep) {
            return verdict;
        }
        if pages.iter().any(|&p| self.folio_mapped(p)) {
            // One walk for the whole folio: each VMA it visits is visited once.
            let (mut visits, mut unmapped, mut own) = (0, 0, 0);
            for &p in pages {
                if self.folio_mapped(p) {
                    let (v, u, o) = self.try_to_unmap(p);
                    visits = visits.max(v);
                    unmapped += u;
                    own += o;
                }
            }
            batch.cost.charge(Cat::RmapWalk, visits as u64 * self.costs.rmap_walk_ns);
            batch.cost.charge(Cat::Unmap, self.costs.unmap_ns + self.xen_unmap_ns(unmapped, own));
            self.try_to_unmap_flush_unless_batched(&mut batch.cost);
        }
        if self.mem.frames[head as usize].folio_order() == 0 || self.folio_held_elsewhere(head) {
            return Verdict::Keep; // split by a dirty PTE, or a reader holds it (pagecache/held.rs)
        }
        let ages = policy.workingset_atomics();
        for &p in pages {
            self.remove_mapping(policy, p);
        }
        batch.cost.charge(Cat::FreePage, pages.len() as u64 * self.costs.free_page_ns);
        self.workingset_lines_in_reclaim(policy, ages, sc, &mut batch.cost, Cat::FreePage);
        Verdict::Reclaim
    }

    /// `pageout`: start writing a dirty folio. `None` when it was not written: 2.6.28's
    /// `may_write_to_queue()` kept it (scanning goes on), or the write needs a request its pool
    /// does not have (engine/congestion.rs): the submitter sleeps in `get_request` (2.6.28
    /// `get_request_wait`), which the model makes the end of the pass (`sc.queue_full`); the
    /// reclaimer resumes when a write on that device completes. A synchronous write (or a
    /// fronting store) is `Done` and the folio is freed at once; an asynchronous one is `Queued`
    /// and the folio is kept until its writeback ends and rotates it.
    fn pageout(&mut self, f: u32, swap_backed: bool, sc: &mut ScanControl, batch: &mut Batch) -> Option<WriteOutcome> {
        let dev = if swap_backed { DevRef::Swap(self.mem.frames[f as usize].swap_dev()) } else { DevRef::File };
        if self.profile == Profile::V2_6_28 && !sc.kswapd && !swap_backed && self.bdi_write_congested(dev) {
            // may_write_to_queue (2.6.28): kswapd (PF_SWAPWRITE) writes regardless; a direct
            // reclaimer skips a queue marked congested. Swap-cache pages belong to
            // swapper_space, whose swap_backing_dev_info is never marked congested: swap
            // writes always go, and wait for a request if their pool is empty.
            return None;
        }
        let fr = &self.mem.frames[f as usize];
        let pool_full = if swap_backed {
            self.swap_queue_congested(fr.swap_dev(), fr.slot, &batch.swap)
        } else {
            let page = self.mem.objects[fr.owner as usize].file_base + fr.index as u64;
            self.write_request_pool_full(DevRef::File, batch.file.requests.len() as u64) && !batch.file.would_merge(page, true, self.io.file_dev.params.max_request_pages)
        };
        if pool_full {
            sc.queue_full = Some(dev);
            return None;
        }
        batch.pageout += 1;
        self.stats.vm.nr_vmscan_write += 1;
        if swap_backed {
            self.mem.frames[f as usize].flags &= !PG_DIRTY;
            let at = self.reclaim_clock(sc, batch);
            let out = self.swap_writepage(f, at, &mut batch.swap);
            match out {
                WriteOutcome::Done { cpu } | WriteOutcome::Failed { cpu } | WriteOutcome::Queued { cpu } => batch.cost.add(&cpu),
            }
            return Some(out);
        }
        // A dirty file page that this reclaimer may write (`reclaim_may_write_file`): written
        // asynchronously, then reclaimed clean after its writeback rotates it to the tail.
        self.folio_clean_for_writeback(f);
        self.mem.frames[f as usize].flags |= PG_RECLAIM;
        let fr = self.mem.frames[f as usize];
        let base = self.mem.objects[fr.owner as usize].file_base;
        batch.file.add(base + fr.index as u64, true, f, self.io.file_dev.params.max_request_pages);
        Some(WriteOutcome::Queued { cpu: CpuCost::default() })
    }

    /// The reclaimer's time now: its clock when the reclaim call began plus what the call and
    /// this batch have spent.
    fn reclaim_clock(&self, sc: &ScanControl, batch: &Batch) -> u64 {
        let reclaimer_clock = if sc.kswapd { self.tasks[self.kswapd as usize].clock } else { self.now };
        reclaimer_clock + sc.cost.total() + batch.cost.total()
    }

    /// Submit a batch's writes after its CPU time (`blk_finish_plug`), at the reclaimer's
    /// clock plus what the reclaim call has spent; all of it goes to `sc.cost`, the
    /// submission by block-layer stage (device/blk.rs).
    fn submit_batch(&mut self, mut batch: Batch, sc: &mut ScanControl) {
        let at = self.reclaim_clock(sc, &batch);
        let mut cpu = batch.swap.submit(self, at);
        if !batch.file.is_empty() {
            let c = self.submit_plug_by_category(DevRef::File, batch.file, at + cpu.total());
            cpu.add(&c);
        }
        sc.cost.add(&batch.cost);
        sc.cost.add(&cpu);
    }

    /// `folio_check_references` (§3.10), per era: activate, keep, or reclaim (clean only).
    /// Returns the verdict and the mappings walked.
    ///
    /// * 2.6.28 .. 2.6.33 (`shrink_page_list` before `page_check_references`): a page
    ///   referenced at all — a young PTE or PG_referenced, both cleared by `page_referenced` —
    ///   whose mapping is in use (`page_mapping_inuse`: mapped, in the swap cache, or of a
    ///   file someone maps) is activated; referenced otherwise, it is reclaimed only if clean.
    /// * 2.6.34+ (Johannes Weiner's "detect mapped file pages used only once"): all mapped
    ///   pages start with a PTE reference from their fault, so a mapped file page is looked at
    ///   twice: a young PTE sets PG_referenced and keeps the page; a second one (or a page
    ///   mapped young more than once) activates it. Swap-backed pages activate at once until
    ///   5.9, when anon joins the two-touch rule. 3.3+ activates an executable file page
    ///   (VM_EXEC) on its first reference ("vmscan: activate executable pages after first
    ///   usage").
    fn check_references(&mut self, f: u32) -> (Verdict, u32, u32) {
        let r = self.folio_referenced(f);
        let (verdict, walks) = self.references_verdict(f, &r);
        (verdict, walks, r.young)
    }

    /// `check_references`'s decision for folio `f` with references `r` (see there).
    fn references_verdict(&mut self, f: u32, r: &Referenced) -> (Verdict, u32) {
        let in_use = self.page_mapping_inuse(f);
        let fr = &mut self.mem.frames[f as usize];
        let had_ref = fr.flags & PG_REFERENCED != 0;
        fr.flags &= !PG_REFERENCED;
        if self.profile == Profile::V2_6_28 {
            return match (r.ptes > 0 || had_ref, in_use) {
                (true, true) => (Verdict::Activate, r.walks),
                (true, false) => (Verdict::ReclaimClean, r.walks),
                (false, _) => (Verdict::Reclaim, r.walks),
            };
        }
        if r.ptes > 0 {
            if self.profile < Profile::V6 && fr.has(PG_SWAPBACKED) {
                return (Verdict::Activate, r.walks); // pre-5.9: referenced anon activates at once
            }
            fr.flags |= PG_REFERENCED;
            if had_ref || r.ptes > 1 || (r.exec && !fr.has(PG_SWAPBACKED)) {
                return (Verdict::Activate, r.walks);
            }
            return (Verdict::Keep, r.walks);
        }
        if had_ref && !fr.has(PG_SWAPBACKED) {
            return (Verdict::ReclaimClean, r.walks);
        }
        (Verdict::Reclaim, r.walks)
    }

    /// `page_mapping_inuse` (2.6.28 .. 2.6.33): the page is mapped, in the swap cache, or its
    /// file is mapped by some VMA (`mapping_mapped`).
    fn page_mapping_inuse(&self, f: u32) -> bool {
        let fr = &self.mem.frames[f as usize];
        if fr.has(PG_SWAPCACHE) || self.folio_mapped(f) {
            return true;
        }
        match fr.owner_kind() {
            Owner::Shmem | Owner::File => {
                let obj = &self.mem.objects[fr.owner as usize];
                obj.mmapped && !obj.vmas.is_empty()
            }
            Owner::Anon | Owner::None => false,
        }
    }

    /// `folio_check_references` under MGLRU (§5.6): the rmap walk clears each young PTE and
    /// looks around it (`lru_gen_look_around`); the policy turns what it found into a verdict
    /// (no "look twice": a folio without young PTEs is reclaimed). Charges its CPU to `cost`.
    fn check_references_lru_gen(&mut self, gen: &mut dyn LruGenRmap, f: u32, cost: &mut CpuCost) -> Verdict {
        let mapped = self.folio_mapped(f);
        if gen.keep_before_rmap(&self.mem.frames[f as usize], mapped) {
            return Verdict::Keep;
        }
        let fr = self.mem.frames[f as usize];
        // The VMAs the walk visits: the anon_vma or i_mmap tree up to the folio's last mapping.
        let visits = match fr.owner_kind() {
            Owner::None => 0,
            Owner::Anon => self.mem.anon_mappings(f, fr.owner, fr.index).visits as usize,
            Owner::Shmem | Owner::File => self.mem.file_mappings(f).visits as usize,
        };
        cost.charge(Cat::RmapWalk, visits as u64 * self.costs.rmap_walk_ns);
        let mut young = 0;
        let from = if fr.owner_kind() == Owner::Anon { self.mem.anon_walk_from(fr.owner) } else { 0 };
        for k in from..visits {
            let (v, i) = match fr.owner_kind() {
                Owner::Anon => (self.mem.anon_tree_vma(fr.owner, k), fr.index),
                _ => (self.mem.objects[fr.owner as usize].vmas[k], fr.index),
            };
            let pte = &mut self.mem.vmas[v as usize].ptes[i as usize];
            if *pte & PTE_PRESENT != 0 && *pte & PTE_ZERO == 0 && pte_frame(*pte) == f && *pte & PTE_ACCESSED != 0 {
                *pte &= !PTE_ACCESSED;
                young += 1;
                gen.look_around(&mut self.mem, &self.costs, v, i, cost);
            }
        }
        match gen.referenced_verdict(&mut self.mem.frames[f as usize], young) {
            Some(true) => Verdict::Activate,
            Some(false) => Verdict::Keep,
            None => Verdict::Reclaim,
        }
    }

    /// `folio_referenced`: test-and-clear the accessed bit of every PTE mapping the folio.
    pub(crate) fn folio_referenced(&mut self, f: u32) -> Referenced {
        let fr = self.mem.frames[f as usize];
        match fr.owner_kind() {
            Owner::None => Referenced::default(),
            Owner::Anon => {
                // rmap_walk_anon: the VMAs of the folio's anon_vma tree in order, until as
                // many mappings are found as it has (`pra->mapcount`); each visit is a
                // page_vma_mapped_walk, mapped there or not (mm/anon_vma.rs).
                let m = self.mem.anon_mappings(f, fr.owner, fr.index);
                let mut r = Referenced { walks: m.visits, ..Referenced::default() };
                for k in self.mem.anon_walk_from(fr.owner)..m.visits as usize {
                    let v = self.mem.anon_tree_vma(fr.owner, k);
                    if !self.mem.maps(v, fr.index, f) {
                        continue;
                    }
                    let token = self.swap_token_pretends_referenced(self.mem.vmas[v as usize].task);
                    let vma = &mut self.mem.vmas[v as usize];
                    let pte = &mut vma.ptes[fr.index as usize];
                    let young = *pte & PTE_ACCESSED != 0;
                    *pte &= !PTE_ACCESSED;
                    r.young += young as u32;
                    if young || token {
                        r.ptes += 1;
                        r.exec |= vma.exec;
                    }
                }
                r
            }
            Owner::Shmem | Owner::File => {
                // rmap_walk_file: nothing to walk for a folio no PTE maps; otherwise the
                // file's i_mmap tree in order until every mapping is found (mm/i_mmap.rs).
                // folio_referenced_one: per mapping, every PTE of the folio is tested and
                // cleared; a mapping with any young one is one reference.
                let visits = self.mem.file_mappings(f).visits;
                let mem = &mut self.mem;
                let order = fr.folio_order();
                let first = (fr.index as usize) & !((1usize << order) - 1);
                let mut r = Referenced { walks: visits, ..Referenced::default() };
                let obj = &mem.objects[fr.owner as usize];
                for &v in &obj.vmas[..visits as usize] {
                    let vma = &mut mem.vmas[v as usize];
                    let mut young = false;
                    for i in first..first + (1 << order) {
                        let page = if order == 0 { f } else { pte_frame(obj.entries[i]) };
                        let Some(pte) = vma.ptes.get_mut(i) else { break };
                        if *pte & PTE_PRESENT != 0 && pte_frame(*pte) == page && *pte & PTE_ACCESSED != 0 {
                            *pte &= !PTE_ACCESSED;
                            r.young += 1;
                            young = true;
                        }
                    }
                    if young {
                        r.ptes += 1;
                        // folio_referenced_one: the flags of the VMAs that referenced it.
                        r.exec |= vma.exec;
                    }
                }
                r
            }
        }
    }

    /// Xen PV (`machine.xen_pv`): what clearing `young` accessed bits adds —
    /// `ptep_clear_flush_young` writes the entry (trapped and emulated) and flushes its TLB
    /// entry (a hypercall). Zero on bare metal.
    pub(crate) fn xen_clear_young_ns(&self, young: u32) -> u64 {
        if !self.cfg.config.machine.xen_pv {
            return 0;
        }
        young as u64 * (self.costs.xen_pte_trap_ns + self.costs.xen_hypercall_ns)
    }

    /// Xen PV: what removing `unmapped` mappings adds, `own` of them in the reclaimer's own
    /// mm (2.6.32 `try_to_unmap_one`): `ptep_clear_flush`'s `ptep_get_and_clear` (a trapped
    /// write) and `flush_tlb_page` (a hypercall), then `set_pte_at` of the swap entry —
    /// `HYPERVISOR_update_va_mapping` for the current mm, a trapped direct write
    /// (`xen_set_pte`) for another, as kswapd's always are. Zero on bare metal.
    fn xen_unmap_ns(&self, unmapped: u32, own: u32) -> u64 {
        if !self.cfg.config.machine.xen_pv {
            return 0;
        }
        let (trap, call) = (self.costs.xen_pte_trap_ns, self.costs.xen_hypercall_ns);
        unmapped as u64 * (trap + call) + own as u64 * call + (unmapped - own) as u64 * trap
    }

    /// `page_referenced_one`'s swap-token rule (`swap/token.rs`): a page of the token's
    /// holder counts as referenced when reclaim runs outside the holder's context while the
    /// holder is inside a page fault (holding its mmap_sem: a fault the model retries after a
    /// sleep).
    fn swap_token_pretends_referenced(&self, owner: u32) -> bool {
        let Some(token) = &self.swap.token else { return false };
        token.holder() == Some(owner) && self.reclaim.current != Some(owner) && self.tasks[owner as usize].pending.is_some()
    }

    /// `try_to_unmap`: every PTE of the folio becomes a swap entry (anon) or none (shared);
    /// dirty bits move to the folio. Like `folio_referenced` it walks the reverse map until the
    /// folio is mapped nowhere (`folio_not_mapped`). Returns the VMAs visited, the mappings
    /// removed, and how many of those were the reclaiming task's own (Xen PV sets their swap
    /// entries by hypercall, another mm's by a trapped write: `xen_unmap_ns`).
    fn try_to_unmap(&mut self, f: u32) -> (u32, u32, u32) {
        let fr = self.mem.frames[f as usize];
        let mut dirty = false;
        let (mut visits, mut unmapped, mut own) = (0, 0, 0);
        match fr.owner_kind() {
            Owner::None => {}
            Owner::Anon => {
                let (dev, slot) = (fr.swap_dev(), fr.slot);
                visits = self.mem.anon_mappings(f, fr.owner, fr.index).visits;
                for k in self.mem.anon_walk_from(fr.owner)..visits as usize {
                    let v = self.mem.anon_tree_vma(fr.owner, k);
                    if !self.mem.maps(v, fr.index, f) {
                        continue;
                    }
                    let vma = &mut self.mem.vmas[v as usize];
                    let pte_dirty = vma.ptes[fr.index as usize] & PTE_DIRTY != 0;
                    dirty |= pte_dirty;
                    vma.ptes[fr.index as usize] = swp_entry(dev, slot);
                    vma.rss -= 1;
                    vma.swapents += 1;
                    let task = vma.task;
                    self.swap.areas[dev].swap_duplicate(slot);
                    self.tlb_flush_pending(task, pte_dirty);
                    unmapped += 1;
                    own += (self.reclaim.current == Some(task)) as u32;
                }
                if dirty {
                    self.mem.frames[f as usize].flags |= PG_DIRTY;
                }
                self.mem.frames[f as usize].set_owner(Owner::None, NONE, 0);
            }
            Owner::Shmem | Owner::File => {
                let mut cleared = Vec::new();
                let mem = &mut self.mem;
                for (k, &v) in mem.objects[fr.owner as usize].vmas.iter().enumerate() {
                    let vma = &mut mem.vmas[v as usize];
                    let pte = vma.ptes[fr.index as usize];
                    if pte & PTE_PRESENT != 0 && pte_frame(pte) == f {
                        vma.ptes[fr.index as usize] = 0;
                        vma.rss -= 1;
                        dirty |= pte & PTE_DIRTY != 0;
                        cleared.push((vma.task, pte & PTE_DIRTY != 0));
                        visits = k as u32 + 1;
                        unmapped += 1;
                    }
                }
                for (task, pte_dirty) in cleared {
                    own += (self.reclaim.current == Some(task)) as u32;
                    self.tlb_flush_pending(task, pte_dirty);
                }
                if dirty {
                    // The dirty bit moves to the folio (counted as dirtied if it was clean).
                    self.folio_mark_dirty(f);
                }
            }
        }
        (visits, unmapped, own)
    }

    /// `shmem_writeout`: the inode's entry becomes the swap entry of the folio's slot; the
    /// folio stays in the swap cache, owned by no one.
    fn shmem_writeout(&mut self, f: u32) {
        let fr = self.mem.frames[f as usize];
        let (dev, slot) = (fr.swap_dev(), fr.slot);
        self.mem.objects[fr.owner as usize].entries[fr.index as usize] = swp_entry(dev, slot);
        self.swap.areas[dev].swap_duplicate(slot);
        self.mem.frames[f as usize].set_owner(Owner::None, NONE, 0);
    }

    /// Is the folio mapped by any PTE?
    fn folio_mapped(&self, f: u32) -> bool {
        let fr = &self.mem.frames[f as usize];
        match fr.owner_kind() {
            Owner::None => false,
            Owner::Anon => true,
            Owner::Shmem | Owner::File => self.mem.objects[fr.owner as usize].vmas.iter().any(|&v| {
                let p = self.mem.vmas[v as usize].ptes[fr.index as usize];
                p & PTE_PRESENT != 0 && pte_frame(p) == f
            }),
        }
    }

    /// `__remove_mapping` (§2.5): out of the swap cache or page cache with the policy's
    /// shadow, then freed.
    fn remove_mapping(&mut self, policy: &mut dyn LruPolicy, f: u32) {
        let fr = self.mem.frames[f as usize];
        if fr.has(PG_SWAPCACHE) {
            let shadow = policy.eviction_shadow(&self.mem.frames, f, true);
            self.delete_from_swap_cache(f, shadow);
        } else if fr.owner_kind() == Owner::File {
            let sh = policy.eviction_shadow(&self.mem.frames, f, false);
            let e = if sh != 0 { ENT_SHADOW | sh as u64 } else { 0 };
            self.mem.objects[fr.owner as usize].entries[fr.index as usize] = e;
        } else if fr.owner_kind() == Owner::Shmem {
            self.mem.objects[fr.owner as usize].entries[fr.index as usize] = 0;
        }
        self.free_frame(f);
    }
}

#[cfg(test)]
mod rmap_tests {
    //! The rmap walk of a folio shared by fork: what `folio_referenced` and `try_to_unmap`
    //! visit, and so what reclaim charges (one `rmap_walk_ns` per VMA visited).
    use crate::engine::Sim;
    use crate::mm::*;

    /// A zygote's 2 MiB heap shared with three renderers; all stay alive after the run.
    const FAMILY: &str = include_str!("../../tests/data/fork-family.toml");

    /// The family after the run, and the zygote's heap VMA and its three copies.
    fn family() -> (Sim, Vec<u32>) {
        let r = crate::config::load(FAMILY, "rmap.toml", &[]).expect("loads");
        let mut sim = Sim::new(&r);
        sim.run(&mut |_| true);
        let heap: Vec<u32> = sim.tasks.iter().filter(|t| t.name == "zygote" || t.name == "renderer").map(|t| t.vmas[0]).collect();
        assert_eq!(heap.len(), 4);
        (sim, heap)
    }

    /// Page `i` of the heap: the one folio all four map.
    fn shared_folio(sim: &Sim, heap: &[u32], i: usize) -> u32 {
        let f = pte_frame(sim.mem.vmas[heap[0] as usize].ptes[i]);
        assert!(heap.iter().all(|&v| sim.mem.maps(v, i as u32, f)), "page {i} is shared by fork");
        f
    }

    #[test]
    fn the_rmap_walk_of_a_forked_folio_visits_every_vma_of_its_anon_vma_and_any_young_pte_makes_it_young() {
        let (mut sim, heap) = family();
        let f = shared_folio(&sim, &heap, 7);
        for &v in &heap {
            sim.mem.vmas[v as usize].ptes[7] &= !PTE_ACCESSED;
        }
        let r = sim.folio_referenced(f);
        assert_eq!((r.walks, r.ptes), (4, 0), "four VMAs visited, none young");
        // Only the last child touched it: still one walk per VMA, and the folio is young.
        sim.mem.vmas[heap[3] as usize].ptes[7] |= PTE_ACCESSED;
        let r = sim.folio_referenced(f);
        assert_eq!((r.walks, r.ptes), (4, 1));
        assert_eq!(sim.mem.vmas[heap[3] as usize].ptes[7] & PTE_ACCESSED, 0, "the walk cleared the young bit it found");
    }

    #[test]
    fn try_to_unmap_visits_and_unmaps_every_mapping_of_a_forked_folio() {
        let (mut sim, heap) = family();
        let f = shared_folio(&sim, &heap, 3);
        assert!(sim.add_to_swap(f, 0), "a swap slot");
        let (dev, slot) = (sim.mem.frames[f as usize].swap_dev(), sim.mem.frames[f as usize].slot);
        assert_eq!(sim.try_to_unmap(f), (4, 4, 0), "four VMAs visited, four mappings removed");
        for &v in &heap {
            assert_eq!(sim.mem.vmas[v as usize].ptes[3], swp_entry(dev, slot), "VMA {v} holds the swap entry");
        }
        assert_eq!(sim.swap.areas[dev].count(slot), 4, "one swap reference per mapping");
        assert_eq!(sim.mem.frames[f as usize].owner_kind(), Owner::None, "mapped nowhere");
    }

    /// A launcher and three renderers mapped the 2 MiB executable `app`; the renderers stay
    /// alive after the run, the launcher has exited.
    const SHARED_BINARY: &str = include_str!("../../tests/data/shared-binary.toml");

    /// The three renderers' VMAs of the shared binary, after the run.
    fn renderers_of_app() -> (Sim, Vec<u32>) {
        let r = crate::config::load(SHARED_BINARY, "shared-binary.toml", &[]).expect("loads");
        let mut sim = Sim::new(&r);
        sim.run(&mut |_| true);
        let text: Vec<u32> = sim.tasks.iter().filter(|t| t.name == "renderer").map(|t| t.vmas[0]).collect();
        assert_eq!(text.len(), 3);
        (sim, text)
    }

    /// Page `i` of the binary: the one page-cache folio every renderer maps.
    fn shared_text_folio(sim: &Sim, text: &[u32], i: usize) -> u32 {
        let f = pte_frame(sim.mem.vmas[text[0] as usize].ptes[i]);
        assert!(text.iter().all(|&v| sim.mem.vmas[v as usize].ptes[i] & PTE_PRESENT != 0 && pte_frame(sim.mem.vmas[v as usize].ptes[i]) == f), "page {i} is mapped by every renderer");
        assert_eq!(sim.mem.frames[f as usize].owner_kind(), Owner::File);
        f
    }

    #[test]
    fn a_file_folio_mapped_by_three_processes_costs_three_vma_visits_in_folio_referenced_and_counts_each_young_mapping() {
        let (mut sim, text) = renderers_of_app();
        let f = shared_text_folio(&sim, &text, 9);
        for &v in &text {
            sim.mem.vmas[v as usize].ptes[9] &= !PTE_ACCESSED;
        }
        let r = sim.folio_referenced(f);
        assert_eq!((r.walks, r.ptes, r.exec), (3, 0, false), "three VMAs visited, none young");
        for &v in &text[1..] {
            sim.mem.vmas[v as usize].ptes[9] |= PTE_ACCESSED;
        }
        let r = sim.folio_referenced(f);
        assert_eq!((r.walks, r.ptes, r.exec), (3, 2, true), "two young mappings, of an executable VMA");
        assert!(text.iter().all(|&v| sim.mem.vmas[v as usize].ptes[9] & PTE_ACCESSED == 0), "the walk cleared the young bits it found");
    }

    #[test]
    fn the_rmap_walk_of_a_file_folio_stops_at_its_last_mapping_and_skips_a_folio_no_process_maps() {
        let (mut sim, text) = renderers_of_app();
        let f = shared_text_folio(&sim, &text, 11);
        let unmap = |sim: &mut Sim, v: u32| {
            sim.mem.vmas[v as usize].ptes[11] = 0;
            sim.mem.vmas[v as usize].rss -= 1;
        };
        unmap(&mut sim, text[2]);
        assert_eq!(sim.mem.file_mappings(f), Mappings { mapcount: 2, visits: 2 });
        assert_eq!(sim.folio_referenced(f).walks, 2, "the walk ends once both mappings are found");
        unmap(&mut sim, text[0]);
        unmap(&mut sim, text[1]);
        assert_eq!(sim.mem.file_mappings(f), Mappings::default());
        assert_eq!(sim.folio_referenced(f).walks, 0, "a folio only the page cache holds is not walked");
    }

    #[test]
    fn try_to_unmap_of_a_shared_file_folio_clears_every_mapper_and_leaves_it_in_the_page_cache() {
        let (mut sim, text) = renderers_of_app();
        let f = shared_text_folio(&sim, &text, 5);
        let rss: Vec<u64> = text.iter().map(|&v| sim.mem.vmas[v as usize].rss).collect();
        assert_eq!(sim.try_to_unmap(f), (3, 3, 0), "three VMAs visited, three mappings removed");
        for (k, &v) in text.iter().enumerate() {
            assert_eq!(sim.mem.vmas[v as usize].ptes[5], 0, "VMA {v} no longer maps it");
            assert_eq!(sim.mem.vmas[v as usize].rss, rss[k] - 1);
        }
        assert!(!sim.folio_mapped(f), "mapped nowhere");
        let fr = sim.mem.frames[f as usize];
        assert_eq!(sim.mem.objects[fr.owner as usize].entries[5], PTE_PRESENT | f as u64, "still the file's page 5");
    }
}
