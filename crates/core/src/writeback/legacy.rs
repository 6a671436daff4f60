//! Dirty throttling before 3.2 (`mm/page-writeback.c` of 2.6.28): the writer writes back
//! itself. Fengguang Wu's IO-less `balance_dirty_pages` (throttle.rs) replaced this in 3.2.
//!
//! `balance_dirty_pages_ratelimited_nr` calls `balance_dirty_pages` after `ratelimit_pages`
//! pages were dirtied (8 while the limit is exceeded). There, while dirty + writeback pages
//! exceed the dirty threshold and at least the midpoint between the background and the
//! dirty threshold, the writer itself runs `writeback_inodes` for `write_chunk` =
//! 1.5 × `ratelimit_pages` pages (WB_SYNC_NONE, range-cyclic, the dirty inodes in the
//! order they were dirtied) and, if that did not bring the total under the threshold and
//! it has not yet written its chunk, sleeps in `congestion_wait(WRITE, HZ/10)` and loops.
//! On leaving, it starts pdflush's background writeout when dirty pages exceed the
//! background threshold and no writeback is in progress.
//!
//! Simplifications, stated: the per-CPU `ratelimits` counter is per task; the device's
//! share of the threshold (`bdi_writeout_fraction`) is all of it (one written-back device)
//! and `task_dirty_limit`'s up-to-1/8 cut for heavy dirtiers is not applied; blocking on a
//! request tag inside `writeback_inodes` is the same `congestion_wait` (woken when the
//! queue drains); after that sleep the writer re-enters with its next dirtied page.

use crate::engine::Sim;

/// `sync_writeback_pages`: what a throttled writer writes back itself.
fn write_chunk(ratelimit_pages: u64) -> u64 {
    ratelimit_pages + ratelimit_pages / 2
}

/// `writeback_set_ratelimit`: total pages / (CPUs × 32), at least 16, at most 4 MiB.
pub fn ratelimit_pages(total_pages: u64, cpus: u64) -> u64 {
    (total_pages / (cpus.max(1) * 32)).clamp(16, (4096 * 1024) / crate::mm::PAGE_SIZE)
}

/// `balance_dirty_pages_ratelimited_nr`'s ratelimit while the limit is exceeded.
const EXCEEDED_RATELIMIT: u64 = 8;

impl Sim {
    /// The 2.6.28 ratelimit of task `tid`: back into the loop at once after its
    /// congestion_wait, else `ratelimit_pages` (8 while the limit is exceeded).
    pub(crate) fn legacy_ratelimit(&self, tid: u32) -> u64 {
        if self.tasks[tid as usize].legacy_loop {
            1
        } else if self.wb.dirty_exceeded {
            EXCEEDED_RATELIMIT
        } else {
            self.wb.legacy_ratelimit_pages
        }
    }

    /// One pass of 2.6.28's `balance_dirty_pages` loop for writer `tid`.
    pub(crate) fn balance_dirty_pages_2_6_28(&mut self, tid: u32) {
        let chunk = write_chunk(self.wb.legacy_ratelimit_pages);
        self.tasks[tid as usize].nr_dirtied = 0;
        let (mut g, _) = self.dirty_domains();
        if g.dirty > g.thresh && g.dirty >= (g.bg_thresh + g.thresh) / 2 {
            self.wb.dirty_exceeded = true;
            if self.wb.nr_dirty > 0 {
                let left = chunk.saturating_sub(self.tasks[tid as usize].legacy_written);
                let written = self.writeback_inodes_by(tid, left);
                self.tasks[tid as usize].legacy_written += written;
                g = self.dirty_domains().0;
            }
            if g.dirty > g.thresh && self.tasks[tid as usize].legacy_written < chunk {
                // congestion_wait(WRITE, HZ/10), then round the loop again.
                let t = &mut self.tasks[tid as usize];
                t.dirty_wait = crate::engine::DirtyWait::CongestionWait;
                t.legacy_loop = true;
                return;
            }
        }
        if g.dirty < g.thresh {
            self.wb.dirty_exceeded = false;
        }
        let t = &mut self.tasks[tid as usize];
        t.legacy_written = 0;
        t.legacy_loop = false;
        if self.wb.nr_dirty > g.bg_thresh {
            let clock = self.tasks[tid as usize].clock;
            self.wb_start_background_writeback(clock);
        }
    }

    /// `writeback_inodes` from a writer's context: up to `nr_to_write` pages of the dirty
    /// inodes, oldest-dirtied first, as far as the file device's request queue has room.
    /// Returns the pages written (their CPU goes to the writer's clock).
    fn writeback_inodes_by(&mut self, tid: u32, nr_to_write: u64) -> u64 {
        let (mut written, mut tried) = (0, 0);
        while written < nr_to_write && tried < self.wb.dirty_list.len() {
            let (Some(room), Some(&obj)) = (self.file_queue_room(), self.wb.dirty_list.front()) else { break };
            written += self.writeback_inode(tid, obj as usize, (nr_to_write - written).min(room));
            tried += 1;
            if self.wb.inodes[obj as usize].nr_dirty > 0 {
                self.requeue_io(obj);
            }
        }
        written
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratelimit_follows_writeback_set_ratelimit() {
        // 1 GiB, 4 CPUs: 262144 / 128 = 2048 pages, capped at 4 MiB = 1024 pages.
        assert_eq!(ratelimit_pages(262_144, 4), 1024);
        // 64 MiB, 2 CPUs: 16384 / 64 = 256.
        assert_eq!(ratelimit_pages(16_384, 2), 256);
        assert_eq!(ratelimit_pages(1_000, 8), 16);
        assert_eq!(write_chunk(1024), 1536);
    }
}
