//! Backing-device write congestion and `congestion_wait` (2.6.28–5.15 block layer,
//! `blk_queue_congestion_threshold`, `clear_bdi_congested`, `congestion_wait`).
//!
//! A request queue is *congested* once its allocated requests reach `nr_congestion_on` =
//! nr_requests − nr_requests/8 + 1 (113 of 128) and stays so until they drop below
//! `nr_congestion_off` = nr_requests − nr_requests/8 − nr_requests/16 − 1 (103 of 128): the
//! hysteresis keeps the flag from flickering with each completion. Allocated requests are the
//! model's `in_flight` (queued plus in service).
//!
//! `congestion_wait(WRITE, timeout)` sleeps (the task gives its CPU up) until *any* queue
//! leaves write congestion or the timeout passes; with no congested queue it sleeps the whole
//! timeout, which is why the naps of 2.6.28 reclaim cost 100 ms each even on an idle disk
//! (KOSAKI, lkml 2010-08-05: "congestion_wait(HZ/10) become almostly equivalent
//! schedule_timeout(HZ/10)"). A task waiting here is woken by `clear_bdi_congested`, which is
//! modelled at the completion that takes a queue below the off threshold.
//!
//! 2.6.32 (the profile's `IoState::wake_on_freed_request`): `freed_request` →
//! `__freed_request` calls `blk_clear_queue_congested` for *every* request freed while the
//! queue's count of its direction is below the off threshold, and `clear_bdi_congested` wakes
//! the direction's waiters whether or not the queue had been congested. So a nap in
//! `congestion_wait(BLK_RW_ASYNC, ..)` ends at the next async (write) request a request-based
//! queue frees: "If no backing_devs are congested then just wait for the next write to be
//! completed" (its kernel-doc). A bio-based driver such as brd allocates no requests and frees
//! none (and frontswap does no I/O), so there the nap lasts its whole timeout. The model's
//! writes are async (reclaim's swap-out and the flusher write WB_SYNC_NONE), its reads sync.
//! 2.6.28 had the same code (with WRITE for BLK_RW_ASYNC); its profile keeps the
//! congestion-transition wake-up until the fidelity work on that profile adopts this.

use super::{DevRef, Sim};

/// The congestion thresholds of a queue of `nr_requests` requests: (on, off).
pub(crate) fn congestion_thresholds(nr_requests: u32) -> (u64, u64) {
    let n = nr_requests as u64;
    let on = (n - n / 8 + 1).min(n);
    let off = (n - n / 8 - n / 16).saturating_sub(1).max(1);
    (on, off)
}

impl Sim {
    fn dev_congestion_thresholds(&self, dev: DevRef) -> Option<(u64, u64, u64)> {
        let d = match dev {
            DevRef::Swap(i) => &self.swap.areas[i].device,
            DevRef::File => &self.io.file_dev,
        };
        if d.params.synchronous {
            return None;
        }
        let (on, off) = congestion_thresholds(d.params.nr_requests);
        Some((d.in_flight(), on, off))
    }

    /// `bdi_write_congested`: is `dev`'s queue marked congested?
    pub(crate) fn bdi_write_congested(&self, dev: DevRef) -> bool {
        self.io.congested.contains(&dev)
    }

    /// After submitting to `dev`: mark it congested once its requests reach the on threshold.
    pub(crate) fn note_submit_congestion(&mut self, dev: DevRef) {
        if let Some((n, on, _)) = self.dev_congestion_thresholds(dev) {
            if n >= on && !self.io.congested.contains(&dev) {
                self.io.congested.push(dev);
            }
        }
    }

    /// After a completion on `dev` (`write`: an async request): below the off threshold the
    /// queue is no longer congested and everyone in `congestion_wait` wakes
    /// (`clear_bdi_congested`); in 2.6.32 every freed async request there wakes them.
    pub(crate) fn note_complete_congestion(&mut self, dev: DevRef, write: bool) {
        let Some((n, _, off)) = self.dev_congestion_thresholds(dev) else { return };
        if n >= off {
            return;
        }
        let was_congested = self.io.congested.contains(&dev);
        if !was_congested && !(write && self.io.wake_on_freed_request) {
            return;
        }
        self.io.congested.retain(|&d| d != dev);
        let now = self.now;
        for w in std::mem::take(&mut self.io.congestion_waiters) {
            self.wake(w, now);
        }
        self.kswapd_congestion_cleared();
    }

    /// `congestion_wait(WRITE, timeout)` for a user task in reclaim: it sleeps, its CPU goes
    /// to others, and the fault that reclaimed is retried (the reclaim continues) when it
    /// wakes.
    pub(crate) fn congestion_wait(&mut self, tid: u32, timeout: u64) {
        // io_schedule_timeout: the sleep is iowait.
        self.io_schedule(tid);
        self.io.congestion_waiters.push(tid);
        self.block_for(tid, timeout);
    }
}

#[cfg(test)]
mod tests {
    use super::congestion_thresholds;

    /// blk_queue_congestion_threshold: 113 on / 103 off for the default 128 requests; tiny
    /// queues stay sane.
    #[test]
    fn congestion_thresholds_match_the_block_layer() {
        assert_eq!(congestion_thresholds(128), (113, 103));
        assert_eq!(congestion_thresholds(4), (4, 3));
        assert_eq!(congestion_thresholds(1), (1, 1));
    }
}
