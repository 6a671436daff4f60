//! Page allocation (watermarks, kswapd wake-up, direct reclaim, throttling, OOM), freeing,
//! swap references and process teardown.

use super::{Sim, TState};
use crate::mm::*;
use crate::swap::{SWAP_COUNT_MASK, SWAP_HAS_CACHE};

/// MAX_RECLAIM_RETRIES (§3.1): allocator loops without progress before OOM.
pub const MAX_RECLAIM_RETRIES: u32 = 16;

pub(crate) enum Alloc {
    Frame(u32),
    /// The task sleeps (throttled); retry the fault when it wakes.
    Blocked,
    /// The task was OOM-killed.
    Killed,
}

impl Sim {
    pub fn nr_free(&self) -> u64 {
        self.free_list.len() as u64
    }

    #[inline]
    fn take_frame(&mut self) -> u32 {
        let f = self.free_list.pop().expect("caller checked free pages");
        self.frames[f as usize] = Frame { flags: PG_INUSE, ..Frame::FREE };
        self.charged += 1;
        self.vm.pgalloc_normal += 1;
        f
    }

    fn memcg_over(&self) -> bool {
        matches!(self.memcg_limit, Some(l) if self.charged >= l)
    }

    /// Allocate a page for task `tid` (running on `cpu`), reclaiming as the kernel's slow path
    /// does (§3.3): fast path above low; wake kswapd; above min; direct reclaim; retry; OOM.
    /// In memcg mode the charge is checked against the limit first (try_charge).
    pub(crate) fn alloc_page(&mut self, tid: u32, cpu: usize) -> Alloc {
        let mut loops = 0;
        loop {
            loops += 1;
            if self.memcg_over() {
                let got = self.direct_reclaim(tid, cpu, true);
                if !self.memcg_over() && self.nr_free() > self.wm.min {
                    self.tasks[tid as usize].no_progress = 0;
                    return Alloc::Frame(self.take_frame());
                }
                match self.after_reclaim(tid, got, loops) {
                    Some(a) => return a,
                    None => continue,
                }
            }
            let free = self.nr_free();
            if free > self.wm.low {
                return Alloc::Frame(self.take_frame());
            }
            self.wakeup_kswapd();
            if free > self.wm.min {
                return Alloc::Frame(self.take_frame());
            }
            let got = self.direct_reclaim(tid, cpu, false);
            if self.nr_free() > self.wm.min {
                self.tasks[tid as usize].no_progress = 0;
                return Alloc::Frame(self.take_frame());
            }
            match self.after_reclaim(tid, got, loops) {
                Some(a) => return a,
                None => continue,
            }
        }
    }

    /// `should_reclaim_retry` and friends after a direct reclaim that did not free enough.
    fn after_reclaim(&mut self, tid: u32, got: u64, loops: u32) -> Option<Alloc> {
        if got == 0 && self.nr_writeback > 0 {
            // Reclaim found pages only under writeback: sleep until writeback progresses
            // (reclaim_throttle WRITEBACK, HZ/10), then retry the fault.
            let t = &mut self.tasks[tid as usize];
            t.dr_throttle_since = Some(t.clock);
            let timeout = self.jiffy_ns * (self.cfg.config.kernel.hz as u64 / 10).max(1);
            self.throttle_on_writeback(tid, timeout);
            return Some(Alloc::Blocked);
        }
        if got > 0 {
            self.tasks[tid as usize].no_progress = 0;
            if loops > 64 {
                // Progress that others keep eating: yield a jiffy rather than spin.
                let t = &mut self.tasks[tid as usize];
                let at = t.clock + self.jiffy_ns;
                t.dr_throttle_since = Some(t.clock);
                self.sleep_until(tid, at);
                return Some(Alloc::Blocked);
            }
            return None;
        }
        let reclaimable = self.reclaimable_pages();
        let t = &mut self.tasks[tid as usize];
        t.no_progress += 1;
        if t.no_progress <= MAX_RECLAIM_RETRIES && reclaimable > 0 {
            return None;
        }
        t.no_progress = 0;
        let victim = self.oom_kill();
        if victim == Some(tid) || victim.is_none() {
            return Some(Alloc::Killed);
        }
        None
    }

    /// Pages reclaim could still free: file LRU, plus anon LRU while swap has room (§3.3).
    pub fn reclaimable_pages(&self) -> u64 {
        let file = self.lru.size(LruList::InactiveFile) + self.lru.size(LruList::ActiveFile);
        let anon = self.lru.size(LruList::InactiveAnon) + self.lru.size(LruList::ActiveAnon);
        let swap_free: u64 = self.swaps.iter().map(|s| s.free_slots()).sum();
        file + if swap_free > 0 { anon } else { 0 }
    }

    /// A page without blocking: used for readahead pages, which are skipped when memory is
    /// short rather than waited for.
    pub(crate) fn try_alloc_nowait(&mut self, tid: u32, cpu: usize) -> Option<u32> {
        if self.memcg_over() {
            self.direct_reclaim(tid, cpu, true);
            if self.memcg_over() {
                return None;
            }
        }
        if self.nr_free() > self.wm.min {
            if self.nr_free() <= self.wm.low {
                self.wakeup_kswapd();
            }
            return Some(self.take_frame());
        }
        None
    }

    pub(crate) fn free_frame(&mut self, f: u32) {
        debug_assert!(!self.frames[f as usize].has(PG_LRU));
        self.frames[f as usize] = Frame::FREE;
        self.free_list.push(f);
        self.charged -= 1;
        self.vm.pgfree += 1;
    }

    /// `folio_add_lru` (§1.8, §3.10): inactive head unless PG_active was set (refault
    /// activation, or a new anonymous page before 5.9).
    pub(crate) fn lru_add(&mut self, f: u32) {
        let fr = &self.frames[f as usize];
        let l = LruList::of(fr.is_anon_type(), fr.has(PG_ACTIVE));
        self.lru.add_head(&mut self.frames, f, l);
    }

    /// Drop one swap-map reference of (dev, slot) held by a PTE or shmem entry
    /// (`free_swap_and_cache`, §2.5): at zero, a cache-only slot's folio is dropped when it is
    /// not busy, and the slot is freed once no cache holds it.
    pub(crate) fn put_swap_ref(&mut self, dev: usize, slot: u32) {
        let area = &mut self.swaps[dev];
        let m = area.map[slot as usize];
        debug_assert!(m & SWAP_COUNT_MASK > 0, "put on slot {slot} with count 0");
        let m = m - 1;
        area.map[slot as usize] = m;
        if m & SWAP_COUNT_MASK != 0 {
            return;
        }
        if m & SWAP_HAS_CACHE != 0 {
            let f = area.cache[slot as usize];
            let fr = &self.frames[f as usize];
            if !fr.has(PG_WRITEBACK) && !fr.has(PG_LOCKED) && fr.owner_kind() == Owner::None {
                // Unmapped cache-only folio: reclaim it now (__try_to_reclaim_swap).
                self.delete_from_swap_cache(f, false);
                if self.frames[f as usize].has(PG_LRU) {
                    self.lru.remove(&mut self.frames, f);
                }
                self.free_frame(f);
            }
            return;
        }
        area.cache[slot as usize] = NONE;
        area.release(slot);
    }

    /// Remove a folio from the swap cache, optionally leaving a workingset shadow (eviction),
    /// and free the slot if nothing references it any more.
    pub(crate) fn delete_from_swap_cache(&mut self, f: u32, shadow: bool) {
        let fr = self.frames[f as usize];
        debug_assert!(fr.has(PG_SWAPCACHE));
        let (dev, slot) = (fr.swap_dev(), fr.slot);
        let sh = if shadow && self.workingset_anon { self.workingset_eviction(f) } else { 0 };
        let area = &mut self.swaps[dev];
        area.cache[slot as usize] = NONE;
        area.map[slot as usize] &= !SWAP_HAS_CACHE;
        self.frames[f as usize].clear_swap();
        if area.map[slot as usize] == 0 {
            area.release(slot);
        } else {
            area.shadow[slot as usize] = sh;
        }
    }

    /// `folio_free_swap`: drop the swap copy of a folio nobody else references; the folio
    /// becomes dirty (its only copy is in memory now).
    pub(crate) fn try_free_swap(&mut self, f: u32) -> bool {
        let fr = self.frames[f as usize];
        if !fr.has(PG_SWAPCACHE) || fr.has(PG_WRITEBACK) {
            return false;
        }
        let count = self.swaps[fr.swap_dev()].count(fr.slot);
        if count != 0 {
            return false;
        }
        self.delete_from_swap_cache(f, false);
        self.frames[f as usize].flags |= PG_DIRTY;
        true
    }

    /// `vm_swap_full()`: more than half of all swap in use (§2.1).
    pub fn vm_swap_full(&self) -> bool {
        let total: u64 = self.swaps.iter().map(|s| s.slots as u64 - 1).sum();
        let free: u64 = self.swaps.iter().map(|s| s.free_slots()).sum();
        free * 2 < total
    }

    /// Unmap and free everything a VMA holds (exit_mmap / OOM reaper).
    pub(crate) fn zap_vma(&mut self, v: u32) {
        let kind = self.vmas[v as usize].kind;
        let n = self.vmas[v as usize].ptes.len();
        for i in 0..n {
            let pte = self.vmas[v as usize].ptes[i];
            if pte == 0 {
                continue;
            }
            self.vmas[v as usize].ptes[i] = 0;
            if pte & PTE_ZERO != 0 {
                continue;
            }
            if pte & PTE_PRESENT != 0 {
                let f = pte_frame(pte);
                if kind == crate::config::MappingKind::Anon {
                    self.frames[f as usize].set_owner(Owner::None, NONE, 0);
                    self.release_unmapped(f);
                }
            } else if pte & PTE_SWAP != 0 {
                self.put_swap_ref(swp_dev(pte), swp_slot(pte));
            }
        }
        let vma = &mut self.vmas[v as usize];
        vma.rss = 0;
        vma.swapents = 0;
        let obj = vma.object;
        if obj != NONE {
            // The last mapping of a shmem object or file goes away: drop its pages.
            let entries = std::mem::take(&mut self.objects[obj as usize].entries);
            let shmem = self.objects[obj as usize].kind == crate::config::MappingKind::Shmem;
            for e in entries.iter().copied() {
                if e & PTE_PRESENT != 0 {
                    let f = pte_frame(e);
                    self.frames[f as usize].set_owner(Owner::None, NONE, 0);
                    self.release_unmapped(f);
                } else if shmem && e & PTE_SWAP != 0 {
                    self.put_swap_ref(swp_dev(e), swp_slot(e));
                }
            }
            self.objects[obj as usize].entries = vec![0; entries.len()];
        }
    }

    /// Free an unmapped folio now if nothing holds it; busy ones (I/O in flight) stay on the
    /// LRU as orphans and are reclaimed later.
    fn release_unmapped(&mut self, f: u32) {
        let fr = self.frames[f as usize];
        if fr.has(PG_WRITEBACK) || fr.has(PG_LOCKED) {
            return;
        }
        if fr.has(PG_SWAPCACHE) {
            let (dev, slot) = (fr.swap_dev(), fr.slot);
            if self.swaps[dev].count(slot) > 0 {
                return; // still referenced by a swap entry elsewhere: keep it cached
            }
            self.delete_from_swap_cache(f, false);
        }
        if self.frames[f as usize].has(PG_LRU) {
            self.lru.remove(&mut self.frames, f);
        }
        self.free_frame(f);
    }

    /// OOM killer (§3.14): the user task with the highest rss + swap entries dies; its
    /// memory is freed at once (the OOM reaper). Returns the victim.
    pub(crate) fn oom_kill(&mut self) -> Option<u32> {
        let mut best: Option<(u64, u32)> = None;
        for (i, t) in self.tasks.iter().enumerate() {
            if t.kind != super::TaskKind::User || t.state == TState::Done || matches!(t.state, TState::New) {
                continue;
            }
            let score: u64 = t.vmas.iter().map(|&v| self.vmas[v as usize].rss + self.vmas[v as usize].swapents).sum();
            if best.map_or(true, |(s, _)| score > s) {
                best = Some((score, i as u32));
            }
        }
        let (_, victim) = best?;
        let (rss, swap): (u64, u64) = {
            let t = &self.tasks[victim as usize];
            (t.vmas.iter().map(|&v| self.vmas[v as usize].rss).sum(), t.vmas.iter().map(|&v| self.vmas[v as usize].swapents).sum())
        };
        self.vm.oom_kill += 1;
        let label = self.tasks[victim as usize].label();
        self.record_event("oom_kill", label, rss, swap);
        // Take it off whatever it waits on.
        self.runq.retain(|&t| t != victim);
        self.writeback_waiters.retain(|&t| t != victim);
        for ws in self.frame_waiters.values_mut() {
            ws.retain(|&t| t != victim);
        }
        let cpu = match self.tasks[victim as usize].state {
            TState::Running(c) => c as usize,
            _ => usize::MAX,
        };
        self.finish_task(victim, cpu, true);
        Some(victim)
    }
}
