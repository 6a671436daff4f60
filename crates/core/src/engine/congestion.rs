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
//! 2.6.28 and 2.6.32 (`IoState::wake_on_freed_request`): `freed_request` →
//! `__freed_request(q, rw)` calls `blk_clear_queue_congested` for *every* request freed while
//! the queue's count of its direction is below the off threshold, and `clear_bdi_congested`
//! (mm/backing-dev.c) wakes the direction's waiters whether or not the queue had been
//! congested. So a nap in `congestion_wait(WRITE, ..)` (2.6.32: `BLK_RW_ASYNC`) ends at the
//! next write request a request-based queue frees: "If no backing_devs are congested then
//! just wait for the next write to be completed" (its kernel-doc). A bio-based driver such as
//! brd allocates no requests and frees none (and frontswap does no I/O), so there the nap
//! lasts its whole timeout. The model's writes are async (reclaim's swap-out and the flusher
//! write WB_SYNC_NONE), its reads sync. Checked in the 2.6.2x block/blk-core.c
//! (`__freed_request(struct request_queue *q, int rw)`) and mm/backing-dev.c. 3.x and 4.x
//! kept the wake-up (`__freed_request(rl, sync)`, `clear_wb_congested`); their profiles keep
//! the congestion-transition wake-up until their fidelity work adopts this.
//!
//! **Two request pools, 2.6.28–4.14** (the legacy single-queue block layer: v4.14
//! block/blk-core.c `__get_request`, `get_request`, `__freed_request`; 2.6.28 the same in
//! ll_rw_blk's successor blk-core.c). A queue's `struct request_list` counts its requests in
//! two pools, `count[BLK_RW_SYNC]` and `count[BLK_RW_ASYNC]` (2.6.28: `count[READ]` and
//! `count[WRITE]`, the same split for the model, whose reads are sync and writes async), each
//! limited to `nr_requests` and each with its own congestion flag: so reads in flight never
//! take a write's request nor make the queue *write*-congested, and only a freed write request
//! clears write congestion or wakes a writer asleep in `get_request` (`rl->wait[is_sync]`;
//! `__freed_request` wakes once `count + 1 <= nr_requests`). blk-mq (the 6.x profile) has one
//! tag set that reads and writes share (`blk_mq_get_tag`'s sbitmap): there the pool is the
//! queue's whole `in_flight`. Not modelled: 4.14's NVMe driver was already blk-mq; mq-deadline's
//! `async_depth` (5.14+) reserving a quarter of the tags for sync requests; the legacy
//! "batching" allowance (`ioc_batching`: a task woken from `get_request` may take up to
//! BLK_BATCH_REQ more requests within BLK_BATCH_TIME, to 3/2 × nr_requests).

use super::{DevRef, Sim};
use crate::config::Profile;
use crate::device::Device;

/// The congestion thresholds of a queue of `nr_requests` requests: (on, off).
pub(crate) fn congestion_thresholds(nr_requests: u32) -> (u64, u64) {
    let n = nr_requests as u64;
    let on = (n - n / 8 + 1).min(n);
    let off = (n - n / 8 - n / 16).saturating_sub(1).max(1);
    (on, off)
}

impl Sim {
    pub(crate) fn device(&self, dev: DevRef) -> &Device {
        match dev {
            DevRef::Swap(i) => &self.swap.areas[i].device,
            DevRef::File => &self.io.file_dev,
        }
    }

    /// Does this era's block layer keep separate read and write request pools (the legacy
    /// `request_list`, 2.6.28–4.14), rather than one blk-mq tag set (6.x)?
    fn split_request_pools(&self) -> bool {
        self.profile <= Profile::V4_14
    }

    /// The requests a new request of direction `write` on `dev` competes with for one of
    /// `nr_requests` slots: its own direction's pool (2.6.28–4.14 `rl->count[is_sync]`), or
    /// every request the queue holds (6.x blk-mq tags).
    pub(crate) fn requests_held(&self, dev: DevRef, write: bool) -> u64 {
        let d = self.device(dev);
        if self.split_request_pools() { d.allocated(write) } else { d.in_flight() }
    }

    /// Would a write to `dev` need a request slot that is not there, with `plugged` more
    /// requests already taken by the submitter's plug? (`__get_request` fails and `get_request`
    /// sleeps; a write that merges into the plug needs none, which the caller checks.)
    pub(crate) fn write_request_pool_full(&self, dev: DevRef, plugged: u64) -> bool {
        let d = self.device(dev);
        !d.params.synchronous && self.requests_held(dev, true) + plugged >= d.params.nr_requests as u64
    }

    /// Does a request of direction `write` completing on `dev` free a slot a writer asleep in
    /// `get_request` can take? With split pools only a freed write request does.
    pub(crate) fn freed_request_wakes_writers(&self, write: bool) -> bool {
        write || !self.split_request_pools()
    }

    /// Write congestion is the async pool's (`blk_set_congested(rl, BLK_RW_ASYNC)`).
    fn dev_congestion_thresholds(&self, dev: DevRef) -> Option<(u64, u64, u64)> {
        let d = self.device(dev);
        if d.params.synchronous {
            return None;
        }
        let (on, off) = congestion_thresholds(d.params.nr_requests);
        Some((self.requests_held(dev, true), on, off))
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
    /// With split pools a read's completion leaves the write pool, and its flag, as they were.
    pub(crate) fn note_complete_congestion(&mut self, dev: DevRef, write: bool) {
        if !write && self.split_request_pools() {
            return;
        }
        let Some((n, _, off)) = self.dev_congestion_thresholds(dev) else { return };
        if n >= off {
            return;
        }
        let was_congested = self.io.congested.contains(&dev);
        let freed_request_wakes = write && self.io.wake_on_freed_request;
        if !was_congested && !freed_request_wakes {
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
        let nap = self.nap_ns(self.tasks[tid as usize].clock, timeout);
        self.block_for(tid, nap);
    }
}

#[cfg(test)]
mod tests {
    use super::congestion_thresholds;
    use crate::device::Plug;
    use crate::engine::{test_machine, DevRef, Sim};

    /// Submit `n` one-page requests of direction `write` to the swap disk, far enough apart
    /// that neither the plug nor the scheduler merges them.
    fn submit_scattered(s: &mut Sim, n: u64, write: bool) {
        let mut plug = Plug::default();
        for i in 0..n {
            plug.add(i * 1024, write, 0, 128);
        }
        s.submit_plug(DevRef::Swap(0), plug, 0);
    }

    /// The legacy block layer's separate sync and async request pools (2.6.28–4.14
    /// `__get_request`'s `rl->count[is_sync]`): a queue holding `nr_requests` reads has every
    /// write request still free and is not write-congested, and only a freed write wakes a
    /// writer asleep in `get_request`; 6.x blk-mq's one tag set is full either way.
    #[test]
    fn reads_in_flight_take_no_write_request_before_blk_mq() {
        for profile in ["2.6.28", "3.14", "4.14", "6.x"] {
            let mut s = test_machine(profile);
            let nr_requests = s.device(DevRef::Swap(0)).params.nr_requests as u64;
            submit_scattered(&mut s, nr_requests, false);
            assert_eq!(s.device(DevRef::Swap(0)).allocated(false), nr_requests, "{profile}");
            let split = profile != "6.x";
            assert_eq!(!s.write_request_pool_full(DevRef::Swap(0), 0), split, "{profile}: a write finds a free request");
            assert_eq!(!s.bdi_write_congested(DevRef::Swap(0)), split, "{profile}: reads do not make the queue write-congested");
            assert_eq!(!s.freed_request_wakes_writers(false), split, "{profile}: a freed read wakes no writer");
            submit_scattered(&mut s, nr_requests, true);
            assert!(s.write_request_pool_full(DevRef::Swap(0), 0), "{profile}: nr_requests writes fill the write pool");
            assert!(s.bdi_write_congested(DevRef::Swap(0)), "{profile}");
        }
    }

    /// Guards `__freed_request` → `clear_bdi_congested` in 2.6.28 and 2.6.32: a write request
    /// freed below the off threshold wakes `congestion_wait(WRITE, ..)` whether or not the queue
    /// was congested ("just wait for the next write to be completed"); a freed read does not
    /// (it wakes `congestion_wqh[READ]`). The 3.x profiles here wake only when a congested
    /// queue clears.
    #[test]
    fn a_freed_write_ends_a_2_6_2x_congestion_wait_on_an_uncongested_queue() {
        for (profile, wakes) in [("2.6.28", true), ("2.6.32", true), ("3.14", false)] {
            let mut s = test_machine(profile);
            s.congestion_wait(0, 100_000_000);
            assert!(!s.bdi_write_congested(DevRef::Swap(0)));
            s.note_complete_congestion(DevRef::Swap(0), false);
            assert!(s.io.congestion_waiters.contains(&0), "{profile}: a freed read wakes no writer's nap");
            s.note_complete_congestion(DevRef::Swap(0), true);
            assert_eq!(!s.io.congestion_waiters.contains(&0), wakes, "{profile}: a freed write ends the nap");
        }
    }

    /// blk_queue_congestion_threshold: 113 on / 103 off for the default 128 requests; tiny
    /// queues stay sane.
    #[test]
    fn congestion_thresholds_match_the_block_layer() {
        assert_eq!(congestion_thresholds(128), (113, 103));
        assert_eq!(congestion_thresholds(4), (4, 3));
        assert_eq!(congestion_thresholds(1), (1, 1));
    }
}
