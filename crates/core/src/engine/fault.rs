//! Page faults: first touch, write-protect reuse, swap-in through the swap cache with
//! readahead, the synchronous-device bypass and shmem faults (kernel-algorithms.md §1); file
//! faults are the page cache's (pagecache/mod.rs).

use super::memory::Alloc;
use super::Sim;
use crate::config::MappingKind;
use crate::mm::*;
use super::swapin_window::WindowEnd;
use crate::stats::touch_kinds::TouchKind;
use crate::workload::Touch;

pub(crate) enum Outcome {
    /// Handled; the task's clock includes the fault's cost.
    Done,
    /// The task sleeps (I/O, throttle); the touch is retried when it wakes.
    Blocked,
    Killed,
}

macro_rules! alloc_or_return {
    ($sim:expr, $tid:expr, $cpu:expr) => {
        match $sim.alloc_page($tid, $cpu) {
            Alloc::Frame(f) => f,
            Alloc::Blocked => return Outcome::Blocked,
            Alloc::Killed => return Outcome::Killed,
        }
    };
}

impl Sim {
    pub(crate) fn fault(&mut self, tid: u32, cpu: usize, mi: usize, touch: Touch) -> Outcome {
        if let Some(cont) = self.tasks[tid as usize].ra_cont.take() {
            // The fault slept in the allocation of a readahead page: finish its window, then
            // the retried fault finds its target in the swap cache.
            match self.resume_readahead(tid, cpu, cont) {
                WindowEnd::Read => {}
                WindowEnd::Blocked => return Outcome::Blocked,
                WindowEnd::Killed => return Outcome::Killed,
            }
        }
        let v = self.tasks[tid as usize].vmas[mi];
        match self.mem.vmas[v as usize].kind {
            MappingKind::Anon => self.fault_anon(tid, cpu, v, touch),
            MappingKind::Shmem | MappingKind::File => self.fault_shared(tid, cpu, v, touch),
        }
    }

    /// Count a completed file fault: major when this task's fault missed the page cache
    /// (filemap_fault's PGMAJFAULT; pgfault is counted once, when the fault completes).
    pub(crate) fn count_file_fault(&mut self, tid: u32) {
        let major = std::mem::take(&mut self.tasks[tid as usize].fault_was_major);
        self.count_fault(tid, major);
    }

    fn count_fault(&mut self, tid: u32, major: bool) {
        self.stats.vm.pgfault += 1;
        let t = &mut self.tasks[tid as usize];
        if self.cfg.config.machine.xen_pv {
            // The #PF went to Xen first, which bounced it to the guest's handler (once per
            // fault: a 2.6.32 fault that sleeps stays inside the handler), and the fault's
            // set_pte_at of the current mm is HYPERVISOR_update_va_mapping (2.6.32
            // xen_set_pte_at), one hypercall per page mapped.
            t.clock += self.costs.xen_fault_bounce_ns + self.costs.xen_hypercall_ns;
        }
        if major {
            self.stats.vm.pgmajfault += 1;
            t.major_faults += 1;
        } else {
            t.minor_faults += 1;
        }
    }

    /// A new anonymous folio of VMA `v` at `page` (`folio_add_new_anon_rmap` and
    /// `folio_add_lru_vma`): swap-backed, in `v`'s own anon_vma. New anonymous pages start on
    /// the active list before 5.9, inactive since (§1.8).
    pub(super) fn add_new_anon_folio(&mut self, f: u32, v: u32, page: u32) {
        let fr = &mut self.mem.frames[f as usize];
        fr.flags |= PG_SWAPBACKED | if self.profile < crate::config::Profile::V6 { PG_ACTIVE } else { 0 };
        fr.set_owner(Owner::Anon, v, page);
        self.lru_add(f);
    }

    pub(super) fn fault_anon(&mut self, tid: u32, cpu: usize, v: u32, touch: Touch) -> Outcome {
        let page = touch.page as usize;
        let pte = self.mem.vmas[v as usize].ptes[page];
        if pte & PTE_PRESENT != 0 && pte & PTE_ZERO == 0 {
            // Write to a page mapped read-only (after a read swap-in, or shared by fork):
            // reuse or copy it (engine/fork.rs).
            let out = self.do_wp_page(tid, cpu, v, touch);
            if matches!(out, Outcome::Done) {
                self.count_fault(tid, false);
            }
            return out;
        }
        if pte == 0 && !touch.write {
            // Read of never-written memory: map the shared zero page (do_anonymous_page).
            // A verifying phase expected data here.
            let t = &mut self.tasks[tid as usize];
            if t.program.as_ref().is_some_and(|p| p.verifying()) {
                t.verify_errors += 1;
            }
            self.mem.vmas[v as usize].ptes[page] = PTE_ZERO_PAGE | PTE_ACCESSED;
            self.tasks[tid as usize].clock += self.costs.minor_fault_ns;
            self.count_fault(tid, false);
            return Outcome::Done;
        }
        if pte == 0 || pte & PTE_ZERO != 0 {
            // First write: a new zeroed anonymous page (do_anonymous_page, or the copy-on-write
            // break of the zero page).
            self.tasks[tid as usize].touch_kinds.mark(TouchKind::NewPage);
            let f = alloc_or_return!(self, tid, cpu);
            self.add_new_anon_folio(f, v, touch.page);
            let w = if touch.write { PTE_DIRTY } else { 0 };
            let vma = &mut self.mem.vmas[v as usize];
            vma.ptes[page] = PTE_PRESENT | PTE_ACCESSED | PTE_WRITE | w | f as u64;
            vma.rss += 1;
            self.tasks[tid as usize].clock += self.costs.minor_fault_ns;
            self.count_fault(tid, false);
            return Outcome::Done;
        }
        if touch.check {
            return self.checked_write_swapin(tid, cpu, v, touch, pte);
        }
        self.swapin(tid, cpu, v, touch, pte, false)
    }

    /// A store that loads its word first (`Touch::check`) to a swapped-out page: the load takes
    /// the swap-in as a read fault, then the store a write-protect fault on the page the read
    /// fault mapped read-only (do_wp_page's reuse, §1.1), two faults for one touch. A read
    /// fault that sleeps on its read retries the whole touch, which finds the page in the swap
    /// cache.
    fn checked_write_swapin(&mut self, tid: u32, cpu: usize, v: u32, touch: Touch, entry: u64) -> Outcome {
        let load = Touch { write: false, check: false, ..touch };
        match self.swapin(tid, cpu, v, load, entry, false) {
            Outcome::Done => {}
            other => return other,
        }
        let pte = self.mem.vmas[v as usize].ptes[touch.page as usize];
        if pte & PTE_WRITE != 0 {
            // Mapped writable by the read fault (6.x maps an exclusive page writable): the
            // store just dirties it.
            self.mem.vmas[v as usize].ptes[touch.page as usize] = pte | PTE_DIRTY;
            return Outcome::Done;
        }
        let out = self.do_wp_page(tid, cpu, v, touch);
        if matches!(out, Outcome::Done) {
            self.count_fault(tid, false);
        }
        out
    }

    fn fault_shared(&mut self, tid: u32, cpu: usize, v: u32, touch: Touch) -> Outcome {
        let page = touch.page as usize;
        let obj = self.mem.vmas[v as usize].object as usize;
        let kind = self.mem.vmas[v as usize].kind;
        let pte = self.mem.vmas[v as usize].ptes[page];
        if pte & PTE_PRESENT != 0 {
            // A write to a page mapped read-only: a file page after a read fault or after
            // writeback cleaned it (wp_page_shared: the folio is dirtied and the writer may be
            // throttled), a shmem page mapped by fault-around; make it writable.
            self.mem.vmas[v as usize].ptes[page] = pte | PTE_WRITE | PTE_DIRTY | PTE_ACCESSED;
            self.tasks[tid as usize].clock += self.costs.minor_fault_ns;
            self.count_fault(tid, false);
            if kind == MappingKind::File {
                let dirtied = self.folio_mark_dirty(pte_frame(pte));
                self.balance_dirty_pages_ratelimited(tid, dirtied);
            }
            return Outcome::Done;
        }
        if kind == MappingKind::File {
            return self.file_fault(tid, cpu, v as usize, page as u64, touch.write);
        }
        let ent = self.mem.objects[obj].entries[page];
        if ent & PTE_PRESENT != 0 {
            // In the shmem inode: map it (minor fault).
            let f = pte_frame(ent);
            if self.mem.frames[f as usize].has(PG_LOCKED) {
                self.wait_on_frame(tid, f);
                return Outcome::Blocked;
            }
            self.map_shared(tid, v, page, f, touch.write);
            self.tasks[tid as usize].clock += self.costs.cache_hit_fault_ns;
            let major = std::mem::take(&mut self.tasks[tid as usize].fault_was_major);
            self.count_fault(tid, major);
            return Outcome::Done;
        }
        if kind == MappingKind::Shmem && ent & PTE_SWAP != 0 {
            return self.swapin(tid, cpu, v, touch, ent, true);
        }
        // A new shmem page (shmem_alloc_and_add_folio): swap-backed, on the inactive list.
        let f = alloc_or_return!(self, tid, cpu);
        let fr = &mut self.mem.frames[f as usize];
        fr.flags |= PG_SWAPBACKED | PG_DIRTY;
        fr.set_owner(Owner::Shmem, obj as u32, touch.page);
        self.mem.objects[obj].entries[page] = PTE_PRESENT | f as u64;
        self.lru_add(f);
        self.map_shared(tid, v, page, f, touch.write);
        self.tasks[tid as usize].clock += self.costs.minor_fault_ns;
        self.count_fault(tid, false);
        Outcome::Done
    }

    fn map_shared(&mut self, _tid: u32, v: u32, page: usize, f: u32, write: bool) {
        let w = if write { PTE_DIRTY } else { 0 };
        let vma = &mut self.mem.vmas[v as usize];
        vma.ptes[page] = PTE_PRESENT | PTE_ACCESSED | PTE_WRITE | w | f as u64;
        vma.rss += 1;
    }

    /// The frame bits `PageReadahead` tests: before 6.x the PG_readahead bit is the
    /// PG_reclaim bit (PAGEFLAG(Readahead, reclaim)).
    pub(super) fn readahead_bits(&self) -> u32 {
        if self.profile < crate::config::Profile::V6 {
            PG_READAHEAD | PG_RECLAIM
        } else {
            PG_READAHEAD
        }
    }

    /// Swap-in (`do_swap_page` for anon, `shmem_swapin_folio` for shmem), §1.1: a swap-cache
    /// hit maps the folio; a synchronous device reads in place without the cache (§1.7); a miss
    /// reads around the target and sleeps on it.
    fn swapin(&mut self, tid: u32, cpu: usize, v: u32, touch: Touch, entry: u64, shmem: bool) -> Outcome {
        let (dev, slot) = (swp_dev(entry), swp_slot(entry));
        let cached = self.swap.areas[dev].cache[slot as usize];
        if cached != NONE {
            return self.swapin_from_cache(tid, cpu, v, touch, (dev, slot), cached, shmem);
        }
        let area = &self.swap.areas[dev];
        if !shmem && area.device.params.synchronous && self.swap.cache_bypass && area.count(slot) == 1 {
            return self.swapin_bypassing_cache(tid, cpu, v, touch, (dev, slot));
        }
        self.swapin_with_readahead(tid, cpu, v, touch, entry, shmem)
    }

    /// The folio is in the swap cache: account a readahead hit (unless this fault's own read
    /// put it there), sleep on its lock while the read is in flight, else map it.
    #[allow(clippy::too_many_arguments)]
    fn swapin_from_cache(&mut self, tid: u32, cpu: usize, v: u32, touch: Touch, (dev, slot): (usize, u32), f: u32, shmem: bool) -> Outcome {
        let page = touch.page as usize;
        if !self.tasks[tid as usize].fault_was_major {
            self.count_swap_cache_hit(v, f, page, shmem);
        }
        if self.mem.frames[f as usize].has(PG_LOCKED) {
            // Read still in flight: sleep on the folio lock and retry the fault, as
            // folio_lock_or_retry does (PG_readahead is already clear, so the retry's
            // lookup does not count the hit again).
            self.tasks[tid as usize].touch_kinds.mark(TouchKind::CacheHitWaited);
            self.wait_on_frame(tid, f);
            return Outcome::Blocked;
        }
        let major = std::mem::take(&mut self.tasks[tid as usize].fault_was_major);
        self.tasks[tid as usize].touch_kinds.mark(TouchKind::CacheHit);
        self.map_swapped_in(tid, v, page, f, dev, slot, touch.write, shmem);
        // A major fault paid `major_fault_cpu_ns` before it slept on its read; its retry
        // finds the folio in the swap cache and maps it, a cache hit's work, as a file
        // fault's retry does. `swaplab calibrate` measures a major fault's whole CPU (both
        // attempts, thread CPU time), so charging the retry more would count it twice.
        self.tasks[tid as usize].clock += self.costs.cache_hit_fault_ns;
        if touch.write && self.mem.vmas[v as usize].ptes[page] & PTE_WRITE == 0 {
            // Mapped read-only because others share it: the write copies it.
            let out = self.do_wp_page(tid, cpu, v, touch);
            if !matches!(out, Outcome::Done) {
                return out;
            }
        }
        self.count_fault(tid, major);
        Outcome::Done
    }

    /// swap_cache_get_folio's readahead-hit accounting (§1.4): a folio still marked for
    /// immediate reclaim before 6.x also tests (and clears) as a readahead hit - and is then
    /// not rotated at writeback end (`readahead_bits`).
    fn count_swap_cache_hit(&mut self, v: u32, f: u32, page: usize, shmem: bool) {
        let fault_vpn = self.mem.vmas[v as usize].start_vpn + page as u64;
        let bits = self.readahead_bits();
        let was_ra = self.mem.frames[f as usize].flags & bits != 0;
        self.mem.frames[f as usize].flags &= !bits;
        if was_ra {
            self.stats.vm.swap_ra_hit += 1;
        }
        let info = &mut self.mem.vmas[v as usize].ra_info;
        self.swap.ra.on_cache_hit(was_ra, shmem, info, fault_vpn);
    }

    /// SWP_SYNCHRONOUS_IO bypass (§1.7): no swap cache, no readahead; the page is read in
    /// place, mapped, and its slot (count 1, no cache) freed.
    fn swapin_bypassing_cache(&mut self, tid: u32, cpu: usize, v: u32, touch: Touch, (dev, slot): (usize, u32)) -> Outcome {
        let page = touch.page as usize;
        self.tasks[tid as usize].touch_kinds.mark(TouchKind::Major);
        let f = alloc_or_return!(self, tid, cpu);
        self.mem.frames[f as usize].flags |= PG_SWAPBACKED;
        let shadow = self.swap.areas[dev].shadow[slot as usize];
        if shadow != 0 {
            self.refault(f, shadow, true);
        }
        self.lru_add(f);
        let cpu_ns = self.swap_read_folio_sync(dev, slot);
        // Map, then drop the PTE's reference: the slot is freed.
        self.mem.frames[f as usize].set_owner(Owner::Anon, v, touch.page);
        let w = if touch.write { PTE_DIRTY } else { 0 };
        let vma = &mut self.mem.vmas[v as usize];
        vma.ptes[page] = PTE_PRESENT | PTE_ACCESSED | PTE_WRITE | w | f as u64;
        vma.rss += 1;
        vma.swapents -= 1;
        self.mem.frames[f as usize].flags |= PG_DIRTY;
        self.put_swap_ref(dev, slot);
        self.activate_swapped_in(f);
        // Read in place (a store hit, zram, a synchronous device): no block request was
        // submitted, so none of the read-submission CPU. The bypass allocates, charges and
        // maps its page as a swap-cache read does, less the swap-cache insert.
        self.tasks[tid as usize].clock += self.costs.swapin_fault_cpu() + self.costs.swapin_page_cpu_ns + cpu_ns;
        self.count_fault(tid, true);
        Outcome::Done
    }

    /// Swap-cache miss: readahead around the target (§1.2-§1.6), then sleep on the target.
    fn swapin_with_readahead(&mut self, tid: u32, cpu: usize, v: u32, touch: Touch, entry: u64, shmem: bool) -> Outcome {
        let (dev, slot) = (swp_dev(entry), swp_slot(entry));
        let fault_vpn = self.mem.vmas[v as usize].start_vpn + touch.page as u64;
        self.tasks[tid as usize].touch_kinds.mark(TouchKind::Major);
        let target = alloc_or_return!(self, tid, cpu);
        if !shmem {
            // do_swap_page contends for the swap token before the read.
            if let Some(token) = &mut self.swap.token {
                token.grab(tid);
            }
        }
        self.add_to_swap_cache_for_read(target, dev, slot, false);
        // The window reads the target alone if this fault read it before (fault_was_major).
        let end = self.swapin_readahead(tid, cpu, v, (dev, slot), target, fault_vpn, shmem);
        if std::mem::replace(&mut self.tasks[tid as usize].fault_was_major, true) {
            // This fault read the page before, and reclaim freed it before the retry could map
            // it: /proc/vmstat counts that attempt too (do_swap_page and shmem_swapin_folio count
            // PGMAJFAULT for every read they issue, handle_mm_fault PGFAULT per attempt), the
            // task's own counts only the fault that completes (mm_account_fault skips
            // VM_FAULT_RETRY).
            self.stats.vm.pgfault += 1;
            self.stats.vm.pgmajfault += 1;
        }
        match end {
            WindowEnd::Read => {}
            WindowEnd::Blocked => return Outcome::Blocked,
            WindowEnd::Killed => return Outcome::Killed,
        }
        if !self.mem.frames[target as usize].has(PG_LOCKED) {
            // The fronting store had the page, or a synchronous device read it inside
            // submission (engine/io.rs): it is up to date, map it now.
            return self.swapin(tid, cpu, v, touch, entry, shmem);
        }
        self.wait_on_frame(tid, target);
        Outcome::Blocked
    }

    /// Map a swap-cache page into the faulting task and drop the entry's reference (§1.1).
    #[allow(clippy::too_many_arguments)]
    fn map_swapped_in(&mut self, _tid: u32, v: u32, page: usize, f: u32, dev: usize, slot: u32, write: bool, shmem: bool) {
        if shmem {
            // shmem_swapin_folio: the folio moves from the swap cache into the inode, its swap
            // entry is freed and the folio is dirty.
            let obj = self.mem.vmas[v as usize].object;
            self.mem.frames[f as usize].set_owner(Owner::Shmem, obj, page as u32);
            self.mem.objects[obj as usize].entries[page] = PTE_PRESENT | f as u64;
            self.delete_from_swap_cache(f, 0);
            self.put_swap_ref(dev, slot);
            self.mem.frames[f as usize].flags |= PG_DIRTY;
            self.map_shared(_tid, v, page, f, write);
            return;
        }
        // do_swap_page's rmap: a folio another process of the fork family mapped already keeps
        // its anon_vma; else it joins the faulting VMA's own if no other swap entry refers to
        // it (exclusive), or the family's root anon_vma (__page_set_anon_rmap).
        if self.mem.frames[f as usize].owner_kind() != Owner::Anon {
            let exclusive = self.swap.areas[dev].count(slot) == 1;
            let owner = if exclusive { v } else { self.mem.anon_root_owner(v) };
            self.mem.frames[f as usize].set_owner(Owner::Anon, owner, page as u32);
        }
        {
            let vma = &mut self.mem.vmas[v as usize];
            vma.rss += 1;
            vma.swapents -= 1;
        }
        self.put_swap_ref(dev, slot);
        // should_try_to_free_swap: swap more than half full, or a write fault by the only user.
        // A folio someone else still maps or holds a swap entry of is mapped read-only: a write
        // copies it (do_swap_page's do_wp_page).
        let fr = self.mem.frames[f as usize];
        let sole_user = self.mem.anon_mappings(f, fr.owner, fr.index).mapcount == 0 && self.swap.areas[dev].count(slot) == 0;
        let freed = (write || self.vm_swap_full()) && self.try_free_swap(f);
        // A read fault maps an exclusive page writable only from 6.11 on; older kernels map it
        // with vm_page_prot, read-only even when the slot was freed, and the first store takes
        // a write-protect fault (§1.1, `swapin_read_fault_maps_writable`). The model makes it
        // writable only when the slot was freed (the folio then dirty), where 6.11 needs no
        // free: a clean folio under a writable PTE, which the model's PTE has no room for.
        let read_fault_writable = self.swapin_read_fault_writable;
        let writable = sole_user && (write || (freed && read_fault_writable));
        let bits = PTE_PRESENT | PTE_ACCESSED | if writable { PTE_WRITE } else { 0 } | if write { PTE_DIRTY } else { 0 };
        self.mem.vmas[v as usize].ptes[page] = bits | f as u64;
        self.activate_swapped_in(f);
    }
}
