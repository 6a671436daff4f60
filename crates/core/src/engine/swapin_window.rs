//! Reading a swap-in's readahead window (`swapin_readahead`: `swap_cluster_readahead` /
//! `swap_vma_readahead`, kernel-algorithms.md §1.2–§1.6), with its pages allocated as the
//! kernel allocates them.
//!
//! **Readahead pages are allocated with the fault's GFP mask** in every era: `do_swap_page`
//! passes `GFP_HIGHUSER_MOVABLE` to `swapin_readahead`, which hands it to
//! `read_swap_cache_async` → `alloc_page_vma(gfp_mask, ..)` for every page of the window
//! (2.6.28–3.x `swapin_readahead(entry, GFP_HIGHUSER_MOVABLE, vma, address)`; 4.14 and 5.x
//! `__read_swap_cache_async(entry, gfp_mask, vma, addr, ..)`; 6.x the same with a mempolicy).
//! No era adds `__GFP_NORETRY` or `__GFP_NOWAIT` there (that is the page cache's
//! `readahead_gfp_mask`, pagecache/), so under pressure each readahead page takes the
//! allocator's slow path like the target: kswapd woken, direct reclaim, and in 2.6.28–2.6.35
//! the `congestion_wait` naps (engine/memory.rs). The fault's task may therefore sleep in the
//! middle of its window; the window's position is kept in the task (`ReadaheadCont`) and the
//! rest is read when it wakes and retries its fault, as the kernel's loop continues after the
//! allocation returns.
//!
//! What is submitted when: the model plugs a window's reads and submits them at its end. When
//! a page of the window needs direct reclaim, what is plugged so far is submitted first: in
//! 2.6.x there was no plug (each `swap_readpage` submitted its bio at once, and brd completed
//! it inside `submit_bio`), and later a task that sleeps in reclaim flushes its plug when it
//! schedules. The model allocates the target before the window (the kernel allocates it in
//! window order), so a task about to sleep mid-window submits the target's read first: a
//! target left locked without a read would hang whoever waits on it. While the task sleeps the
//! target is an ordinary swap-cache page (the kernel holds no reference across the window
//! either); the retried fault finds it, or reads it again if reclaim took it.
//!
//! A readahead page that cannot be had (the memory cgroup's charge, below): 2.6.x ends the
//! window (`if (!page) break;` in 2.6.28–2.6.32 `swapin_readahead`), 3.x and later skip it
//! and go on (`if (!page) continue;` since the aligned-block loop, §1.2.2).
//!
//! Not modelled per era: the memory cgroup's side. The model charges every page when it is
//! allocated; a readahead page over the limit gets one reclaim pass and is otherwise dropped,
//! as before. (Before 5.8 the kernel charged a swapped-in page only when it was mapped, since
//! 5.8 `mem_cgroup_swapin_charge_folio` charges it here with the same GFP mask.)

use super::memory::Alloc;
use super::Sim;
use crate::config::Profile;
use crate::mm::*;
use crate::swap::io::SwapPlugs;
use crate::swap::readahead::{FaultCtx, Window};
use crate::swap::SWAP_HAS_CACHE;

/// A readahead window whose allocation put the task to sleep: where it resumes. The target
/// was read before the task slept.
#[derive(Clone, Debug)]
pub struct ReadaheadCont {
    window: Window,
    /// The next slot (`Window::Slots`) or virtual page (`Window::Virtual`) to read.
    next: u64,
    /// The target's device and slot, and its VMA and virtual page.
    dev: usize,
    slot: u32,
    v: u32,
    fault_vpn: u64,
}

/// How reading a window ended.
pub(crate) enum WindowEnd {
    /// Every page of the window was read or skipped; the reads are submitted.
    Read,
    /// The task sleeps in the allocator; the window resumes when it wakes.
    Blocked,
    /// The task was OOM-killed in the allocator.
    Killed,
}

/// One non-target page of the window.
enum RaPage {
    Read(u32),
    /// A hole, a cached slot, a slot being swapped in through the bypass.
    Skip,
    /// The page could not be had (the memory cgroup's limit).
    NoMemory,
    Stop(WindowEnd),
}

/// A window being read: the continuation, the target while it is still to be read, the
/// relocked target, the CPU of store hits not yet charged, the plugged reads.
struct WindowRead {
    cont: ReadaheadCont,
    target: Option<u32>,
    held: Option<u32>,
    store_cpu: u64,
    plugs: SwapPlugs,
}

impl Sim {
    /// The swap-cache miss after the target `target` was allocated and inserted: choose the
    /// window, read it (the target in its place), submit. Charges the major fault's CPU. A
    /// fault that already read its window and slept finds its target gone only if reclaim
    /// took it meanwhile: it reads the target alone, as the kernel's closing
    /// `read_swap_cache_async(entry)` after the window loop does.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn swapin_readahead(&mut self, tid: u32, cpu: usize, v: u32, (dev, slot): (usize, u32), target: u32, fault_vpn: u64, shmem: bool) -> WindowEnd {
        let window_read = self.tasks[tid as usize].fault_was_major;
        let window = if window_read { Window::TargetOnly } else { self.readahead_window(v, (dev, slot), fault_vpn, shmem) };
        let next = match window {
            Window::TargetOnly => 0,
            Window::Slots { lo, .. } => lo as u64,
            Window::Virtual { start, .. } => start,
        };
        // The fault's own CPU and its target's page work (each readahead page pays its own in
        // `readahead_one`); submitting its device reads is charged when they are flushed
        // (`submit_window_reads`): a window the store served submits nothing.
        self.tasks[tid as usize].clock += self.costs.swapin_fault_cpu() + self.costs.swapin_page_cpu_ns;
        let cont = ReadaheadCont { window, next, dev, slot, v, fault_vpn };
        let plugs = self.window_plugs(tid, cpu);
        self.read_window(tid, cpu, WindowRead { cont, target: Some(target), held: None, store_cpu: 0, plugs })
    }

    /// A task that slept in its window's allocation woke and retried its fault: read the rest.
    pub(crate) fn resume_readahead(&mut self, tid: u32, cpu: usize, cont: ReadaheadCont) -> WindowEnd {
        let plugs = self.window_plugs(tid, cpu);
        self.read_window(tid, cpu, WindowRead { cont, target: None, held: None, store_cpu: 0, plugs })
    }

    /// Empty plugs for task `tid`'s window on `cpu`: the last window's, given back by
    /// `end_window`.
    fn window_plugs(&mut self, tid: u32, cpu: usize) -> SwapPlugs {
        let mut plugs = match self.io.spare_read_plugs.take() {
            Some(mut plugs) => {
                plugs.set_owner(tid);
                plugs
            }
            None => SwapPlugs::for_task(self.swap.areas.len(), tid),
        };
        plugs.set_cpu(cpu as u32);
        plugs
    }

    /// The policy's window for this fault (updating its state).
    fn readahead_window(&mut self, v: u32, (dev, slot): (usize, u32), fault_vpn: u64, shmem: bool) -> Window {
        let vma = &self.mem.vmas[v as usize];
        let ctx = FaultCtx {
            offset: slot,
            map: &self.swap.areas[dev].map,
            page_cluster: self.cfg.config.kernel.page_cluster,
            fault_vpn,
            vma_start: vma.start_vpn,
            vma_end: vma.start_vpn + vma.ptes.len() as u64,
            shmem,
        };
        let mut info = vma.ra_info;
        let w = self.swap.ra.window(&ctx, &mut info);
        self.mem.vmas[v as usize].ra_info = info;
        w
    }

    /// Read the window from `w.cont.next` on, in ascending order.
    fn read_window(&mut self, tid: u32, cpu: usize, mut w: WindowRead) -> WindowEnd {
        let last = match w.cont.window {
            Window::TargetOnly => {
                if let Some(t) = w.target.take() {
                    w.store_cpu += self.swap_read_folio(t, w.cont.dev, w.cont.slot, &mut w.plugs);
                }
                return self.end_window(tid, w, WindowEnd::Read);
            }
            Window::Slots { hi, .. } => hi as u64,
            Window::Virtual { end, .. } => end - 1,
        };
        let mark_cached = self.profile < Profile::V4_14;
        while w.cont.next <= last {
            let pos = w.cont.next;
            let page = match self.window_entry(&w.cont, pos) {
                None => RaPage::Skip,
                Some(None) => {
                    self.read_target(&mut w);
                    RaPage::Skip
                }
                Some(Some((d, s))) => self.readahead_one(tid, cpu, d, s, mark_cached, &mut w),
            };
            match page {
                RaPage::Read(f) => {
                    let (d, s) = self.window_entry(&w.cont, pos).flatten().expect("read a window entry");
                    w.store_cpu += self.swap_read_folio(f, d, s, &mut w.plugs);
                }
                RaPage::Skip => {}
                RaPage::NoMemory if self.profile == Profile::V2_6_28 => break,
                RaPage::NoMemory => {}
                RaPage::Stop(end) => return self.end_window(tid, w, end),
            }
            w.cont.next += 1;
        }
        let end = self.end_window(tid, w, WindowEnd::Read);
        // A window of more than one page ends in lru_add_drain() ("Push any new pages onto
        // the LRU now", every era); a one-page window skips it (reclaim/lru_add.rs).
        self.lru_add_drain_running();
        end
    }

    /// What position `pos` of the window holds: None for nothing to read, Some(None) for the
    /// target, Some(Some((dev, slot))) for a swapped-out page.
    fn window_entry(&self, c: &ReadaheadCont, pos: u64) -> Option<Option<(usize, u32)>> {
        match c.window {
            Window::TargetOnly => None,
            Window::Slots { .. } if pos == c.slot as u64 => Some(None),
            Window::Slots { .. } => Some(Some((c.dev, pos as u32))),
            Window::Virtual { .. } if pos == c.fault_vpn => Some(None),
            Window::Virtual { .. } => {
                let vma = &self.mem.vmas[c.v as usize];
                let e = vma.ptes[(pos - vma.start_vpn) as usize];
                (e & PTE_SWAP != 0).then_some(Some((swp_dev(e), swp_slot(e))))
            }
        }
    }

    /// `swap_read_folio` of the target inside its window, if it is still to be read. A read
    /// that completes at once (a store hit, a synchronous device) unlocks the folio, but the
    /// faulting task holds it until it is mapped (`do_swap_page` locks it and holds a
    /// reference), so reclaim entered by the rest of the window's allocations must not take
    /// it: it stays locked until the window is read.
    fn read_target(&mut self, w: &mut WindowRead) {
        let Some(t) = w.target.take() else { return };
        w.store_cpu += self.swap_read_folio(t, w.cont.dev, w.cont.slot, &mut w.plugs);
        let fr = &mut self.mem.frames[t as usize];
        if !fr.has(PG_LOCKED) {
            fr.flags |= PG_LOCKED;
            w.held = Some(t);
        }
    }

    /// One non-target page of a window (`__read_swap_cache_async` for a slot that is in use
    /// and not cached): a new locked swap-cache page marked PG_readahead, counted in
    /// `swap_ra`, allocated with the fault's GFP mask (module doc).
    fn readahead_one(&mut self, tid: u32, cpu: usize, dev: usize, slot: u32, mark_cached: bool, w: &mut WindowRead) -> RaPage {
        let area = &self.swap.areas[dev];
        if !area.in_use(slot) {
            return RaPage::Skip;
        }
        let cached = area.cache[slot as usize];
        if cached != NONE {
            if mark_cached {
                // Pre-4.14 marking: every non-target page returned, cached or not (§1.2.2).
                self.mem.frames[cached as usize].flags |= PG_READAHEAD;
            }
            return RaPage::Skip;
        }
        if area.map[slot as usize] & SWAP_HAS_CACHE != 0 {
            return RaPage::Skip; // being swapped in through the bypass path
        }
        if self.readahead_over_memcg(tid, cpu) {
            return RaPage::NoMemory;
        }
        if self.nr_free() <= self.mem.wm.min {
            // The slow path will reclaim (and may sleep): submit what is plugged first.
            self.submit_window_reads(tid, w);
        }
        match self.alloc_page(tid, cpu) {
            Alloc::Frame(f) => {
                // `swapcache_prepare` after the allocation: the allocator may have freed this
                // slot (an OOM kill of its owner, reclaim of its cache-only folio) or let
                // another task read it in meanwhile. The kernel's then fails with -ENOENT /
                // -EEXIST and puts the new folio back.
                let area = &self.swap.areas[dev];
                if !area.in_use(slot) || area.map[slot as usize] & SWAP_HAS_CACHE != 0 {
                    self.free_frame(f);
                    return RaPage::Skip;
                }
                self.add_to_swap_cache_for_read(f, dev, slot, true);
                self.tasks[tid as usize].clock += self.costs.swapin_page_cpu_ns;
                self.stats.vm.swap_ra += 1;
                RaPage::Read(f)
            }
            Alloc::Blocked => RaPage::Stop(WindowEnd::Blocked),
            Alloc::Killed => RaPage::Stop(WindowEnd::Killed),
        }
    }

    /// Submit the window's plugged reads now, charging the store hits' and the submission's
    /// CPU to the task: the block layer's stages per request, and `read_submit_cpu_ns` for a
    /// flush that sends the device anything (the driver's submission and completion, which
    /// the measured major-fault CPU contains; a store hit or the zero map sends nothing).
    fn submit_window_reads(&mut self, tid: u32, w: &mut WindowRead) {
        let driver_ns = if w.plugs.is_empty() { 0 } else { self.costs.read_submit_cpu_ns };
        let at = self.tasks[tid as usize].clock + std::mem::take(&mut w.store_cpu) + driver_ns;
        let cpu_ns = w.plugs.submit(self, at).total();
        self.tasks[tid as usize].clock = at + cpu_ns;
    }

    /// The window ends (read, or the task sleeps or was killed in its allocator): the target
    /// is read if it was not yet, everything plugged is submitted, the hold on the target
    /// ends; a sleeping task keeps where its window resumes.
    fn end_window(&mut self, tid: u32, mut w: WindowRead, end: WindowEnd) -> WindowEnd {
        self.read_target(&mut w);
        if let Some(t) = w.held.take() {
            self.mem.frames[t as usize].flags &= !PG_LOCKED;
        }
        self.submit_window_reads(tid, &mut w);
        if let WindowEnd::Blocked = end {
            self.tasks[tid as usize].ra_cont = Some(w.cont);
        }
        self.io.spare_read_plugs = Some(w.plugs);
        end
    }

    /// The memory cgroup's charge of a readahead page: over the limit, one reclaim pass that
    /// does not sleep, and the page is not read if that did not make room.
    fn readahead_over_memcg(&mut self, tid: u32, cpu: usize) -> bool {
        if !self.memcg_over() {
            return false;
        }
        self.direct_reclaim(tid, cpu, true, false);
        self.memcg_over()
    }
}
