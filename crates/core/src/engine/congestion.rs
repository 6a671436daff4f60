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

    /// After a completion on `dev`: below the off threshold the queue is no longer congested
    /// and everyone in `congestion_wait` wakes (`clear_bdi_congested`).
    pub(crate) fn note_complete_congestion(&mut self, dev: DevRef) {
        let Some((n, _, off)) = self.dev_congestion_thresholds(dev) else { return };
        if n >= off || !self.io.congested.contains(&dev) {
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
