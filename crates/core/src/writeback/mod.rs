//! Dirty file pages and their writeback (kernel-algorithms.md §3.10; `mm/page-writeback.c`,
//! `fs/fs-writeback.c` of 6.x): who dirties a page, how many may be dirty, who writes them.
//!
//! * **Dirtying** (`folio_mark_dirty` → `folio_account_dirtied`): a `write()` into the page
//!   cache, or the write fault of a shared file mapping (the kernel maps such pages read-only
//!   until written — `vma_wants_writenotify` — so every first write after a clean state is a
//!   fault that dirties the folio). The folio counts in `nr_dirty`, the task's `nr_dirtied`
//!   and the device's `WB_DIRTIED`; an inode that had no dirty page goes on the tail of the
//!   device's dirty list with `dirtied_when = now` and, if the flusher is idle, arms its
//!   periodic wake-up (`wb_wakeup_delayed`).
//! * **Throttling** (`balance_dirty_pages_ratelimited` → `balance_dirty_pages`, throttle.rs):
//!   after `nr_dirtied_pause` pages a writer looks at the global and memcg domains; above
//!   the background threshold it starts background writeback; above the freerun ceiling it
//!   sleeps for `pages_dirtied / task_ratelimit`, at most `max_pause`. The kernel loops inside
//!   `balance_dirty_pages` while the hard limit is exceeded; here the pause ends and the
//!   writer's next dirtied page enters again (`nr_dirtied_pause` is then 0), which differs by
//!   one page per pause.
//! * **Writeback** (flusher.rs): the flusher kernel thread writes inodes in the order they
//!   were first dirtied, a chunk each, pages in index order from where the last pass stopped.
//!   `folio_clear_dirty_for_io` write-protects the mapping PTEs again (`folio_mkclean`).
//! * **Reclaim** (reclaim/pageout.rs) writes a dirty file page itself only as the era allows,
//!   and otherwise marks it for immediate reclaim and wakes the flusher.
//!
//! Counters: `nr_dirty` and `nr_writeback` are gauges (the time series), `pgpgout` is counted
//! at submission by the block layer (engine/io.rs), `nr_vmscan_write` and
//! `nr_vmscan_immediate_reclaim` by reclaim.

pub mod flusher;
pub mod legacy;
pub mod throttle;

use crate::config::Config;
use crate::engine::Sim;
use crate::mm::*;
use std::collections::VecDeque;
use throttle::{DirtyKnobs, Domain};

/// Per-inode writeback state (`inode->dirtied_when`, `mapping->writeback_index`).
#[derive(Clone, Copy, Debug, Default)]
pub struct InodeWb {
    /// Dirty pages of the inode (the xarray's DIRTY tag count).
    pub nr_dirty: u64,
    /// When its first dirty page was dirtied (ns); meaningful while `nr_dirty > 0`.
    pub dirtied_when: u64,
    /// Where the next cyclic writeback of the inode starts.
    pub writeback_index: u64,
}

/// The written-back device's state (`struct bdi_writeback` and its `wb_domain`s).
#[derive(Clone, Debug)]
pub struct WbState {
    pub knobs: DirtyKnobs,
    /// `dirty_expire_centisecs` and `dirty_writeback_centisecs` in ns (0 = off).
    pub expire_ns: u64,
    pub interval_ns: u64,
    pub inodes: Vec<InodeWb>,
    /// Inodes with dirty pages, in the order the flusher takes them (`b_dirty` / `b_io`).
    pub dirty_list: VecDeque<u32>,
    /// `NR_FILE_DIRTY`.
    pub nr_dirty: u64,
    /// `WB_DIRTIED` / `WB_WRITTEN`: pages dirtied, pages whose writeback completed.
    pub dirtied: u64,
    pub written: u64,
    /// Bandwidth estimation (pages/s) and its stamps (jiffies).
    pub write_bandwidth: u64,
    pub avg_write_bandwidth: u64,
    pub dirty_ratelimit: u64,
    pub bw_time_stamp: u64,
    pub dirtied_stamp: u64,
    pub written_stamp: u64,
    /// `dom->dirty_limit` of the global and the memcg domain.
    pub global_limit: u64,
    pub memcg_limit: u64,
    pub dirty_exceeded: bool,
    /// 2.6.28's `ratelimit_pages` (legacy.rs).
    pub legacy_ratelimit_pages: u64,
    /// Background writeback requested (`wb_start_background_writeback`), and pages asked
    /// for by `wakeup_flusher_threads` (reclaim).
    pub background: bool,
    pub flush_all: u64,
    /// The flusher's task id, whether it sleeps waiting for request slots, and when its
    /// periodic timer fires (None: asleep without one, or running).
    pub flusher: u32,
    pub flusher_wants_slots: bool,
    pub flusher_timer: Option<u64>,
    /// Kupdate-style writeback last ran (ns).
    pub last_old_flush: u64,
}

impl WbState {
    pub fn new(c: &Config) -> WbState {
        let k = &c.kernel;
        WbState {
            knobs: DirtyKnobs { ratio: k.dirty_ratio.unwrap_or(20), background_ratio: k.dirty_background_ratio.unwrap_or(10), bytes: k.dirty_bytes, background_bytes: k.dirty_background_bytes },
            expire_ns: k.dirty_expire_centisecs * 10_000_000,
            interval_ns: k.dirty_writeback_centisecs * 10_000_000,
            inodes: Vec::new(),
            dirty_list: VecDeque::new(),
            nr_dirty: 0,
            dirtied: 0,
            written: 0,
            write_bandwidth: throttle::INIT_BW,
            avg_write_bandwidth: throttle::INIT_BW,
            dirty_ratelimit: throttle::INIT_BW,
            bw_time_stamp: 0,
            dirtied_stamp: 0,
            written_stamp: 0,
            global_limit: 0,
            memcg_limit: 0,
            dirty_exceeded: false,
            legacy_ratelimit_pages: legacy::ratelimit_pages(c.machine.ram.0 / crate::mm::PAGE_SIZE, c.machine.cpus as u64),
            background: false,
            flush_all: 0,
            flusher: 0,
            flusher_wants_slots: false,
            flusher_timer: None,
            last_old_flush: 0,
        }
    }

    fn inode(&mut self, obj: usize) -> &mut InodeWb {
        if self.inodes.len() <= obj {
            self.inodes.resize(obj + 1, InodeWb::default());
        }
        &mut self.inodes[obj]
    }
}

impl Sim {
    /// `folio_mark_dirty` of a page-cache folio: true when it was clean (newly dirtied and
    /// accounted). Swap-backed folios are not the flusher's and only get the flag.
    pub(crate) fn folio_mark_dirty(&mut self, f: u32) -> bool {
        let fr = self.mem.frames[f as usize];
        if fr.has(PG_DIRTY) {
            return false;
        }
        if fr.folio_order() > 0 {
            // The model's dirty and writeback state is per page (pagecache/folio.rs).
            self.split_folio(f);
        }
        self.mem.frames[f as usize].flags |= PG_DIRTY;
        if fr.owner_kind() != Owner::File || fr.has(PG_SWAPBACKED) {
            return false;
        }
        let now = self.now;
        let wb = &mut self.wb;
        wb.nr_dirty += 1;
        wb.dirtied += 1;
        let ino = wb.inode(fr.owner as usize);
        ino.nr_dirty += 1;
        if ino.nr_dirty == 1 {
            ino.dirtied_when = now;
            wb.dirty_list.push_back(fr.owner);
            self.wb_wakeup_delayed();
        }
        true
    }

    /// `folio_clear_dirty_for_io` + `folio_start_writeback` of a dirty page-cache folio: the
    /// mapping PTEs lose their write and dirty bits (`folio_mkclean`), the folio goes under
    /// writeback.
    pub(crate) fn folio_clean_for_writeback(&mut self, f: u32) {
        let fr = self.mem.frames[f as usize];
        debug_assert!(fr.has(PG_DIRTY) && fr.owner_kind() == Owner::File);
        let obj = fr.owner as usize;
        for k in 0..self.mem.objects[obj].vmas.len() {
            let v = self.mem.objects[obj].vmas[k] as usize;
            let pte = &mut self.mem.vmas[v].ptes[fr.index as usize];
            if *pte & PTE_PRESENT != 0 && pte_frame(*pte) == f {
                *pte &= !(PTE_WRITE | PTE_DIRTY);
            }
        }
        let fr = &mut self.mem.frames[f as usize];
        fr.flags = (fr.flags & !PG_DIRTY) | PG_WRITEBACK;
        self.io.nr_writeback += 1;
        self.wb.nr_dirty -= 1;
        let ino = self.wb.inode(obj);
        ino.nr_dirty -= 1;
        if ino.nr_dirty == 0 {
            self.wb.dirty_list.retain(|&o| o as usize != obj);
        }
    }

    /// The inode's pages leave the page cache unwritten (`truncate_inode_pages` →
    /// `folio_cancel_dirty`): its dirty pages are no longer accounted.
    pub(crate) fn wb_cancel_inode(&mut self, obj: usize) {
        let Some(ino) = self.wb.inodes.get_mut(obj) else { return };
        let n = std::mem::take(&mut ino.nr_dirty);
        if n > 0 {
            self.wb.nr_dirty -= n;
            self.wb.dirty_list.retain(|&o| o as usize != obj);
        }
    }

    /// A dirtier's share of the throttling, after each page written (`dirtied`: the page was
    /// newly dirtied, counted in the task's `nr_dirtied`): every `nr_dirtied_pause` pages, run
    /// `balance_dirty_pages`, which may ask the task to sleep (`Task::dirty_wait`).
    pub(crate) fn balance_dirty_pages_ratelimited(&mut self, tid: u32, dirtied: bool) {
        let mut ratelimit = self.tasks[tid as usize].nr_dirtied_pause;
        if self.profile < crate::config::Profile::V3_14 {
            ratelimit = self.legacy_ratelimit(tid);
        } else if self.wb.dirty_exceeded {
            ratelimit = ratelimit.min(throttle::DIRTY_EXCEEDED_RATELIMIT);
        }
        let t = &mut self.tasks[tid as usize];
        t.nr_dirtied += dirtied as u64;
        if t.nr_dirtied >= ratelimit {
            let pages = t.nr_dirtied;
            self.balance_dirty_pages(tid, pages);
        }
    }

    /// The global domain and, when the tasks run in a memory cgroup of the unified hierarchy
    /// (cgroup writeback: 4.2+, cgroup v2 only), the memcg's.
    pub(crate) fn dirty_domains(&self) -> (Domain, Option<(Domain, u64)>) {
        let [inactive_anon, active_anon, inactive_file, active_file] = self.reclaim.lru_sizes();
        let file_lru = inactive_file + active_file;
        let dirty = self.wb.nr_dirty + self.io.nr_writeback;
        let avail = if self.profile < crate::config::Profile::V3_14 {
            throttle::dirtyable_2_6_28(self.nr_free(), inactive_anon + active_anon + file_lru)
        } else {
            throttle::global_dirtyable(self.nr_free(), self.mem.wm.high, file_lru)
        };
        let mut g = Domain { avail, dirty, ..Domain::default() };
        (g.thresh, g.bg_thresh) = throttle::domain_dirty_limits(&self.wb.knobs, g.avail, None);
        let memcg_domain = self.profile >= crate::config::Profile::V4_14 && self.cfg.config.machine.cgroup_version == 2;
        let m = self.mem.memcg_limit.filter(|_| memcg_domain).map(|limit| {
            let headroom = limit.saturating_sub(self.mem.charged);
            let mut m = Domain { avail: throttle::memcg_avail(file_lru, headroom, dirty, &g), dirty, ..Domain::default() };
            (m.thresh, m.bg_thresh) = throttle::domain_dirty_limits(&self.wb.knobs, m.avail, Some(g.avail));
            (m, headroom)
        });
        (g, m)
    }

    /// `balance_dirty_pages` (6.x, throttle.rs): start background writeback when due, and put a
    /// writer above the freerun ceiling to sleep in proportion to what it dirtied.
    fn balance_dirty_pages(&mut self, tid: u32, pages_dirtied: u64) {
        if self.profile < crate::config::Profile::V3_14 {
            return self.balance_dirty_pages_2_6_28(tid);
        }
        let hz = self.cfg.config.kernel.hz as u64;
        let clock = self.tasks[tid as usize].clock;
        let now = clock / self.jiffy_ns;
        let (mut g, m) = self.dirty_domains();
        if self.wb.nr_dirty > g.bg_thresh {
            self.wb_start_background_writeback(clock);
        }
        let free_g = g.dirty <= throttle::freerun_ceiling(g.thresh, g.bg_thresh);
        let free_m = m.is_none_or(|(m, _)| m.dirty <= throttle::freerun_ceiling(m.thresh, m.bg_thresh));
        if free_g && free_m {
            let intv = throttle::poll_interval(g.dirty, g.thresh);
            let m_intv = m.map_or(u64::MAX, |(m, _)| throttle::poll_interval(m.dirty, m.thresh));
            let t = &mut self.tasks[tid as usize];
            t.dirty_paused_when = now;
            t.nr_dirtied = 0;
            t.nr_dirtied_pause = intv.min(m_intv);
            return;
        }
        self.wb_start_background_writeback(clock);
        let bw = self.wb.avg_write_bandwidth;
        g.pos_ratio = throttle::position_ratio(&g, self.wb.global_limit.max(g.thresh), bw);
        let mut exceeded = g.dirty > g.thresh;
        let mut sdtc = g;
        let mut m = m.map(|(m, _)| m);
        if let Some(md) = m.as_mut() {
            md.pos_ratio = throttle::position_ratio(md, self.wb.memcg_limit.max(md.thresh), bw);
            exceeded |= md.dirty > md.thresh;
            if md.pos_ratio < g.pos_ratio {
                sdtc = *md;
            }
        }
        self.wb.dirty_exceeded = exceeded;
        if now >= self.wb.bw_time_stamp + (hz / 5).max(1) {
            self.update_bandwidth(now, Some((&g, m.as_ref())));
        }
        let dirty_ratelimit = self.wb.dirty_ratelimit;
        let task_ratelimit = (dirty_ratelimit * sdtc.pos_ratio) >> throttle::RATELIMIT_CALC_SHIFT;
        let max_pause = throttle::max_pause(sdtc.dirty, self.wb.avg_write_bandwidth, hz);
        let (min_pause, nr_dirtied_pause) = throttle::min_pause(max_pause, task_ratelimit, dirty_ratelimit, self.wb.avg_write_bandwidth, hz);
        let t = &mut self.tasks[tid as usize];
        let mut start = now;
        let pause = if let Some(period) = (hz * pages_dirtied).checked_div(task_ratelimit) {
            let mut pause = period as i64;
            if t.dirty_paused_when != 0 {
                pause -= now as i64 - t.dirty_paused_when as i64;
            }
            if pause < min_pause as i64 {
                // Think time already paid for it: account it in the next periods.
                if pause < -(hz as i64) {
                    t.dirty_paused_when = now;
                    t.nr_dirtied = 0;
                } else if period > 0 {
                    t.dirty_paused_when += period;
                    t.nr_dirtied = 0;
                } else if t.nr_dirtied_pause <= pages_dirtied {
                    t.nr_dirtied_pause += pages_dirtied;
                }
                return;
            }
            let mut pause = pause as u64;
            if pause > max_pause {
                start += (pause - max_pause).min(max_pause);
                pause = max_pause;
            }
            pause
        } else {
            max_pause
        };
        t.dirty_paused_when = start + pause;
        t.nr_dirtied = 0;
        t.nr_dirtied_pause = nr_dirtied_pause;
        t.dirty_wait = crate::engine::DirtyWait::Pause(pause * self.jiffy_ns);
    }

    /// `__wb_update_bandwidth`: the write bandwidth from the pages written since the last
    /// update, and (from a throttled writer, with its domains) the domains' dirty limits and
    /// the dirty ratelimit.
    pub(crate) fn update_bandwidth(&mut self, now: u64, domains: Option<(&Domain, Option<&Domain>)>) {
        let hz = self.cfg.config.kernel.hz as u64;
        let wb = &mut self.wb;
        let elapsed = now.saturating_sub(wb.bw_time_stamp).max(1);
        if let Some((g, m)) = domains {
            wb.global_limit = throttle::follow_dirty_limit(wb.global_limit, g.thresh, g.dirty);
            let dirty_rate = (wb.dirtied - wb.dirtied_stamp) * hz / elapsed;
            wb.dirty_ratelimit = throttle::balanced_ratelimit(wb.dirty_ratelimit, g.pos_ratio, wb.avg_write_bandwidth, dirty_rate);
            if let Some(m) = m {
                wb.memcg_limit = throttle::follow_dirty_limit(wb.memcg_limit, m.thresh, m.dirty);
                wb.dirty_ratelimit = throttle::balanced_ratelimit(wb.dirty_ratelimit, m.pos_ratio, wb.avg_write_bandwidth, dirty_rate);
            }
        }
        let written = wb.written - wb.written.min(wb.written_stamp);
        (wb.write_bandwidth, wb.avg_write_bandwidth) = throttle::update_write_bandwidth(wb.write_bandwidth, wb.avg_write_bandwidth, written, elapsed, hz);
        wb.dirtied_stamp = wb.dirtied;
        wb.written_stamp = wb.written;
        wb.bw_time_stamp = now;
    }

    /// `wb_over_bg_thresh`: dirty pages above a domain's background threshold.
    pub(crate) fn wb_over_bg_thresh(&self) -> bool {
        let (g, m) = self.dirty_domains();
        self.wb.nr_dirty > g.bg_thresh || m.is_some_and(|(m, _)| self.wb.nr_dirty > m.bg_thresh)
    }

    /// A request to the file device completed, writing `pages` folios (`WB_WRITTEN`; 0 for a
    /// read): a flusher waiting for request slots can go on.
    pub(crate) fn wb_io_done(&mut self, pages: u64) {
        self.wb.written += pages;
        if std::mem::take(&mut self.wb.flusher_wants_slots) {
            let (f, now) = (self.wb.flusher, self.now);
            self.wake(f, now);
        }
    }
}
