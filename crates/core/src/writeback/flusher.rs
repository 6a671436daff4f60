//! The flusher: the writeback worker of the file device (`wb_workfn` → `wb_do_writeback`,
//! fs/fs-writeback.c), a kernel thread (engine/kthread.rs).
//!
//! Its work, in the order `wb_do_writeback` takes it:
//! 1. pages asked for by reclaim (`wakeup_flusher_threads(WB_REASON_VMSCAN)`: all that is
//!    dirty when reclaim met a batch of nothing but unqueued dirty file folios);
//! 2. background writeback (`wb_check_background_flush`) while the dirty pages are above a
//!    domain's background threshold, started by a writer in `balance_dirty_pages`;
//! 3. kupdate (`wb_check_old_data_flush`): every `dirty_writeback_centisecs`, the inodes whose
//!    first dirty page is older than `dirty_expire_centisecs`.
//!
//! Inodes are taken in the order they were first dirtied (`b_dirty` → `b_io`), each for one
//! chunk (`writeback_chunk_size`: half a second of the measured write bandwidth, at most an
//! eighth of the dirty limit, rounded to 4 MiB and at least that) and then, if still dirty,
//! requeued behind the others (`requeue_io`). Within an inode pages go in index order from
//! where the last chunk stopped (`range_cyclic`, `mapping->writeback_index`), skipping pages
//! already under writeback (WB_SYNC_NONE), so a file's pages merge into large requests.
//!
//! A step submits what the device's request queue takes (`nr_requests` outstanding); when it
//! is full the flusher sleeps until a write completes, as it sleeps for a request tag. With no
//! work left it sleeps; it is woken by a writer, by reclaim, or by its periodic timer, armed
//! while dirty inodes exist (`wb_wakeup_delayed`).

use crate::device::Plug;
use crate::engine::{DevRef, KernelThread, KthreadStep, Sim, TState};
use crate::mm::*;

/// `MIN_WRITEBACK_PAGES`: 4 MiB in pages.
const MIN_WRITEBACK_PAGES: u64 = 4096 >> (PAGE_SHIFT - 10);
/// `DIRTY_SCOPE`: a chunk is at most this fraction of the dirty limit.
const DIRTY_SCOPE: u64 = 8;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Work {
    Vmscan,
    Background,
    /// Inodes dirtied before this time (ns).
    Kupdate(u64),
}

/// The flusher thread: the inode it is writing and what is left of its chunk.
#[derive(Default)]
pub struct Flusher {
    current: Option<(u32, u64)>,
    kupdate: bool,
    /// Inodes picked in a row that had nothing writable (every dirty page locked or still
    /// under writeback from an earlier pass).
    fruitless: usize,
}

impl KernelThread for Flusher {
    fn name(&self) -> &'static str {
        "kworker/u:flush"
    }

    fn step(&mut self, sim: &mut Sim, tid: u32) -> KthreadStep {
        sim.wb.flusher_timer = None;
        let now = sim.tasks[tid as usize].clock;
        let Some(work) = self.next_work(sim, now) else {
            self.current = None;
            return sim.flusher_idle(now);
        };
        let Some(room) = sim.file_queue_room() else {
            sim.wb.flusher_wants_slots = true;
            return KthreadStep::Sleep;
        };
        let Some((obj, left)) = self.pick_inode(sim, work) else {
            if let Work::Kupdate(_) = work {
                self.kupdate = false;
            }
            return KthreadStep::Continue;
        };
        let written = sim.writeback_inode(tid, obj as usize, left.min(room));
        self.fruitless = if written == 0 { self.fruitless + 1 } else { 0 };
        if let Work::Vmscan = work {
            sim.wb.flush_all = sim.wb.flush_all.saturating_sub(written.max(1));
        }
        let left = left.saturating_sub(written);
        let still_dirty = sim.wb.inodes[obj as usize].nr_dirty > 0;
        if left == 0 || written == 0 || !still_dirty {
            self.current = None;
            if still_dirty {
                sim.requeue_io(obj);
            }
        } else {
            self.current = Some((obj, left));
        }
        if self.fruitless > sim.wb.dirty_list.len() {
            return self.no_progress(sim, now);
        }
        let jiffies = sim.tasks[tid as usize].clock / sim.jiffy_ns;
        if jiffies >= sim.wb.bw_time_stamp + (sim.cfg.config.kernel.hz as u64 / 5).max(1) {
            sim.update_bandwidth(jiffies, None);
        }
        KthreadStep::Continue
    }

    fn timer(&mut self, sim: &mut Sim, _tid: u32) -> bool {
        sim.wb.flusher_timer = None;
        true
    }
}

impl Flusher {
    /// A round over every dirty inode wrote nothing (`wb_writeback` with no progress): wait
    /// for the writeback in flight to end (`inode_sleep_on_writeback`), or, with none in
    /// flight, end the work and sleep until the periodic timer — never spin at one instant.
    fn no_progress(&mut self, sim: &mut Sim, now: u64) -> KthreadStep {
        self.fruitless = 0;
        self.current = None;
        if sim.io.file_dev.in_flight() > 0 {
            sim.wb.flusher_wants_slots = true;
            return KthreadStep::Sleep;
        }
        sim.wb.flush_all = 0;
        sim.wb.background = false;
        self.kupdate = false;
        sim.flusher_idle(now)
    }

    /// The work `wb_do_writeback` would do now, if any.
    fn next_work(&mut self, sim: &mut Sim, now: u64) -> Option<Work> {
        if sim.wb.nr_dirty == 0 {
            sim.wb.flush_all = 0;
            sim.wb.background = false;
            self.kupdate = false;
            return None;
        }
        if sim.wb.flush_all > 0 {
            return Some(Work::Vmscan);
        }
        if sim.wb.background {
            if sim.wb_over_bg_thresh() {
                return Some(Work::Background);
            }
            sim.wb.background = false;
        }
        let interval = sim.wb.interval_ns;
        if !self.kupdate && interval > 0 && now >= sim.wb.last_old_flush + interval {
            sim.wb.last_old_flush = now;
            self.kupdate = true;
        }
        self.kupdate.then(|| Work::Kupdate(now.saturating_sub(sim.wb.expire_ns)))
    }

    /// The inode to write and the pages left of its chunk: the current one, or the first on
    /// the dirty list that the work covers.
    fn pick_inode(&mut self, sim: &Sim, work: Work) -> Option<(u32, u64)> {
        if let Some((obj, left)) = self.current {
            let ino = &sim.wb.inodes[obj as usize];
            let eligible = match work {
                Work::Kupdate(before) => ino.dirtied_when <= before,
                _ => true,
            };
            if ino.nr_dirty > 0 && eligible {
                return Some((obj, left));
            }
        }
        let obj = sim.wb.dirty_list.iter().copied().find(|&o| match work {
            Work::Kupdate(before) => sim.wb.inodes[o as usize].dirtied_when <= before,
            _ => true,
        })?;
        let nr_pages = if work == Work::Vmscan { sim.wb.flush_all } else { u64::MAX };
        Some((obj, sim.writeback_chunk_size(nr_pages)))
    }
}

impl Sim {
    /// Pages the file device's request queue can take now (free request slots × the largest
    /// request); None when every slot is taken.
    pub(crate) fn file_queue_room(&self) -> Option<u64> {
        let dev = &self.io.file_dev;
        let (held, slots) = (self.requests_held(crate::engine::DevRef::File, true), dev.params.nr_requests as u64);
        (held < slots).then(|| (slots - held) * dev.params.max_request_pages as u64)
    }

    /// `requeue_io`: a still-dirty inode goes behind the other dirty inodes.
    pub(crate) fn requeue_io(&mut self, obj: u32) {
        self.wb.dirty_list.retain(|&o| o != obj);
        self.wb.dirty_list.push_back(obj);
    }

    /// `writeback_chunk_size` for WB_SYNC_NONE work of `nr_pages`.
    fn writeback_chunk_size(&self, nr_pages: u64) -> u64 {
        let pages = (self.wb.avg_write_bandwidth / 2).min(self.wb.global_limit / DIRTY_SCOPE).min(nr_pages);
        (pages + MIN_WRITEBACK_PAGES) / MIN_WRITEBACK_PAGES * MIN_WRITEBACK_PAGES
    }

    /// `write_cache_pages` of inode `obj`: up to `max` dirty folios from its writeback index
    /// (wrapping once), cleaned and sent to the file device in one plug. Returns the number
    /// written; their CPU goes to the flusher's clock.
    pub(crate) fn writeback_inode(&mut self, tid: u32, obj: usize, max: u64) -> u64 {
        let len = self.mem.objects[obj].entries.len() as u64;
        let start = self.wb.inodes[obj].writeback_index.min(len);
        let base = self.mem.objects[obj].file_base;
        let max_req = self.io.file_dev.params.max_request_pages;
        let mut plug = Plug::default();
        let mut written = 0;
        let mut next = start;
        for index in (start..len).chain(0..start) {
            if written == max {
                break;
            }
            let ent = self.mem.objects[obj].entries[index as usize];
            if ent & PTE_PRESENT == 0 {
                continue;
            }
            let f = pte_frame(ent);
            let fr = self.mem.frames[f as usize];
            if !fr.has(PG_DIRTY) || fr.has(PG_WRITEBACK) || fr.has(PG_LOCKED) {
                continue;
            }
            self.folio_clean_for_writeback(f);
            plug.add(base + index, true, f, max_req);
            written += 1;
            next = index + 1;
        }
        self.wb.inodes[obj].writeback_index = if next >= len { 0 } else { next };
        if written > 0 {
            let at = self.tasks[tid as usize].clock + written * self.costs.writeback_page_ns;
            let cpu = self.submit_plug(DevRef::File, plug, at);
            self.tasks[tid as usize].clock = at + cpu;
        }
        written
    }

    /// Nothing to write now: sleep, with the periodic timer armed while dirty inodes exist.
    fn flusher_idle(&mut self, now: u64) -> KthreadStep {
        if self.wb.nr_dirty == 0 || self.wb.interval_ns == 0 {
            return KthreadStep::Sleep;
        }
        let at = (self.wb.last_old_flush + self.wb.interval_ns).max(now + 1);
        self.wb.flusher_timer = Some(at);
        KthreadStep::SleepUntil(at)
    }

    /// Is the flusher asleep (not running, not waiting for request slots)?
    fn flusher_asleep(&self) -> bool {
        let t = &self.tasks[self.wb.flusher as usize];
        matches!(t.state, TState::Sleeping | TState::Blocked) && !self.wb.flusher_wants_slots
    }

    /// Wake the flusher at `at`: the clock of the task that asks (a writer running ahead of
    /// the event clock by up to the sync quantum must not have its dirty pages written
    /// before it dirtied them).
    fn wake_flusher(&mut self, at: u64) {
        if self.flusher_asleep() {
            self.wb.flusher_timer = None;
            let f = self.wb.flusher;
            self.wake(f, at);
        }
    }

    /// `wb_wakeup_delayed`: the first dirty inode of an idle device arms the periodic timer.
    pub(crate) fn wb_wakeup_delayed(&mut self) {
        if self.wb.interval_ns == 0 || !self.flusher_asleep() || self.wb.flusher_timer.is_some() {
            return;
        }
        let at = self.now + self.wb.interval_ns;
        self.wb.flusher_timer = Some(at);
        let f = self.wb.flusher;
        self.sleep_until(f, at);
    }

    /// `wb_start_background_writeback`, by a writer whose clock is `at`.
    pub(crate) fn wb_start_background_writeback(&mut self, at: u64) {
        if !self.wb.background {
            self.wb.background = true;
            self.wake_flusher(at);
        }
    }

    /// `wakeup_flusher_threads(WB_REASON_VMSCAN)`: write everything dirty now.
    pub(crate) fn wakeup_flusher_threads(&mut self) {
        self.wb.flush_all = self.wb.flush_all.max(self.wb.nr_dirty);
        let now = self.now;
        self.wake_flusher(now);
    }
}
