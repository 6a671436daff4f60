//! Pages isolated from the LRU by reclaimers in flight (`NR_ISOLATED_ANON` / `_FILE`) and
//! `too_many_isolated`, the throttle that keeps many direct reclaimers from emptying the
//! inactive lists between them (kernel-algorithms.md §3.10, §3.13).
//!
//! A reclaim pass runs atomically in the model, so the pages one reclaimer isolated are back on
//! a list (or freed) before any other reclaimer looks. The kernel holds them off the LRU from
//! `isolate_lru_folios` until `move_folios_to_lru`: through `folio_referenced`, unmapping and
//! the `pageout` submissions of `shrink_folio_list`. So every batch leaves a *hold* here: its
//! pages, counted as isolated from the reclaimer's clock when it took them until its clock when
//! it put them back, and how many of them went back to the inactive list (which the kernel's
//! `NR_INACTIVE_*` did not count while they were away). Another reclaimer whose clock falls
//! inside the hold sees them as isolated. Holds are kept in virtual time, so the outcome is a
//! function of the clocks alone (deterministic), and a hold that ended before `sim.now` (which
//! no task's clock is behind) is dropped.
//!
//! A batch whose `pageout` met a full request queue is held *open*: the kernel's submitter
//! sleeps in the block layer for a free request with the whole batch still isolated, and the
//! model's reclaimer ends its pass there and sleeps (or retries) instead. Such a hold ends when
//! its reclaimer next gets a CPU or starts another reclaim call.
//!
//! The rule per era (all skip kswapd):
//! * 2.6.28: none (`too_many_isolated` arrived in 2.6.32, Rik van Riel's "vmscan: throttle
//!   direct reclaim when too many pages are isolated already").
//! * 2.6.32 .. 3.x: global reclaim only (`scanning_global_lru` / `global_reclaim`); the
//!   reclaimer loops in `congestion_wait(BLK_RW_ASYNC, HZ/10)` while `isolated > inactive`.
//!   3.8+ (3cf23841b4b7) divides `inactive` by 8 for callers that may do I/O and FS, which the
//!   model's page faults and charges are (GFP_HIGHUSER_MOVABLE, GFP_KERNEL).
//! * 4.14 (db73ee0d4637, 4.14-rc1): memcg reclaim too unless it is cgroup v1 (`sane_reclaim`);
//!   one `msleep(100)`, and if still too many, `shrink_inactive_list` returns 0.
//! * 5.16+ / 6.x: the same with `reclaim_throttle(VMSCAN_THROTTLE_ISOLATED)`: HZ/50 at most,
//!   woken by any `too_many_isolated` that finds isolation below the limit.

use crate::config::Profile;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use crate::engine::Sim;
use super::change_sums::ChangeSums;

/// One reclaim batch's pages, off the LRU over `[from, until)` of virtual time.
#[derive(Clone, Copy, Debug)]
struct Hold {
    anon: bool,
    pages: u64,
    /// Of those, the pages put back on the inactive list at `until`.
    back_on_inactive: u64,
    from: u64,
    /// `u64::MAX` while the hold is open.
    until: u64,
}

/// The holds as a timeline of (pages, put back) changes per list type: a hold adds its counts
/// at `from` and takes them away at `until`, so the pages isolated at `t` are the sum of the
/// changes at or before `t`. Many reclaimers (kswapd's clock runs far ahead of the others')
/// leave tens of thousands of live holds; the sums are indexed (reclaim/change_sums.rs), so a
/// query costs O(log n + 64) instead of a walk over the changes up to `t`.
#[derive(Debug, Default)]
struct IsolatedPages {
    changes: [ChangeSums; 2],
}

impl IsolatedPages {
    fn change(&mut self, h: &Hold, at: u64, sign: i64) {
        self.changes[h.anon as usize].add(at, [sign * h.pages as i64, sign * h.back_on_inactive as i64]);
    }

    fn add(&mut self, h: &Hold) {
        self.change(h, h.from, 1);
        if h.until != u64::MAX {
            self.change(h, h.until, -1);
        }
    }

    fn remove(&mut self, h: &Hold) {
        self.change(h, h.from, -1);
        if h.until != u64::MAX {
            self.change(h, h.until, 1);
        }
    }

    fn at(&self, anon: bool, t: u64) -> (u64, u64) {
        let [p, b] = self.changes[anon as usize].sum_to(t);
        (p as u64, b as u64)
    }
}

/// How a direct reclaimer waits in `too_many_isolated` (per era, see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IsolatedWait {
    /// 2.6.32 .. 3.x: `congestion_wait(BLK_RW_ASYNC, HZ/10)`, then check again, for as long
    /// as it takes.
    CongestionWaitLoop,
    /// 4.14: `msleep(100)` once; still too many: this `shrink_inactive_list` returns 0.
    MsleepOnce,
    /// 5.16+: `reclaim_throttle(ISOLATED)` once (HZ/50, woken early); then as 4.14.
    ThrottleOnce,
}

/// The node's isolated pages and the tasks asleep in `reclaim_throttle(ISOLATED)`.
#[derive(Debug, Default)]
pub struct Isolation {
    /// Closed holds, soonest end first, to drop them once they ended before `now`.
    closed: BinaryHeap<Reverse<(u64, u64)>>,
    /// Closed holds by id (the heap's second field).
    by_id: HashMap<u64, Hold>,
    next_id: u64,
    /// Open holds and their reclaimers.
    open_holds: Vec<(u32, Hold)>,
    timeline: IsolatedPages,
    /// 5.16+: tasks in `reclaim_throttle(VMSCAN_THROTTLE_ISOLATED)`.
    pub waiters: Vec<u32>,
    /// Sleeps taken in too_many_isolated (the `mm_vmscan_throttled` ISOLATED events on 6.x).
    pub throttled: u64,
}

impl Isolation {
    /// Record a batch of `pages` isolated from an `anon` or file list over `[from, until)`,
    /// `back_on_inactive` of which were put back on the inactive list. `now` is the event
    /// loop's time: holds that ended before it are no longer visible to anyone.
    pub fn hold(&mut self, anon: bool, pages: u64, back_on_inactive: u64, from: u64, until: u64, now: u64) {
        while let Some(&Reverse((end, id))) = self.closed.peek() {
            if end > now {
                break;
            }
            self.closed.pop();
            let h = self.by_id.remove(&id).expect("every closed hold is indexed");
            self.timeline.remove(&h);
        }
        if pages > 0 && until > from {
            self.close(Hold { anon, pages, back_on_inactive, from, until });
        }
    }

    /// Keep a hold that has an end until it is dropped.
    fn close(&mut self, h: Hold) {
        self.timeline.add(&h);
        let id = self.next_id;
        self.next_id += 1;
        self.by_id.insert(id, h);
        self.closed.push(Reverse((h.until, id)));
    }

    /// A batch that `owner` keeps isolated from `from` until `release`.
    pub fn hold_open(&mut self, owner: u32, anon: bool, pages: u64, back_on_inactive: u64, from: u64) {
        if pages > 0 {
            let h = Hold { anon, pages, back_on_inactive, from, until: u64::MAX };
            self.timeline.add(&h);
            self.open_holds.push((owner, h));
        }
    }

    /// `owner` is running again at `t`: the batches it held open go back to the LRU then.
    pub fn release(&mut self, owner: u32, t: u64) {
        if self.open_holds.is_empty() {
            return;
        }
        let (mine, others): (Vec<_>, Vec<_>) = self.open_holds.drain(..).partition(|&(o, _)| o == owner);
        self.open_holds = others;
        for (_, h) in mine {
            self.timeline.remove(&h);
            self.close(Hold { until: t.max(h.from), ..h });
        }
    }

    /// Holds not yet dropped (open ones included).
    #[cfg(test)]
    fn live(&self) -> usize {
        self.by_id.len() + self.open_holds.len()
    }

    /// Pages of a type isolated at time `t`, and how many of them are on the inactive list in
    /// the model (already put back).
    fn at(&self, anon: bool, t: u64) -> (u64, u64) {
        self.timeline.at(anon, t)
    }
}

impl Sim {
    /// The era's `too_many_isolated` wait for this reclaim, or `None` where the check does
    /// not apply (2.6.28, kswapd, the era's exempt memcg reclaim).
    pub(crate) fn isolated_wait(&self, kswapd: bool, memcg: bool) -> Option<IsolatedWait> {
        if kswapd {
            return None;
        }
        let cgroup_v2 = self.cfg.config.machine.cgroup_version >= 2;
        match self.profile {
            Profile::V2_6_28 if crate::config::era_2_6_32(&self.cfg.config.kernel.profile) && !memcg => Some(IsolatedWait::CongestionWaitLoop),
            Profile::V2_6_28 => None,
            Profile::V3_14 => (!memcg).then_some(IsolatedWait::CongestionWaitLoop),
            Profile::V4_14 => (!memcg || cgroup_v2).then_some(IsolatedWait::MsleepOnce),
            Profile::V6 => (!memcg || cgroup_v2).then_some(IsolatedWait::ThrottleOnce),
        }
    }

    /// `too_many_isolated` at time `t` for the `anon` or file inactive list of `inactive_now`
    /// pages: `isolated > inactive` (inactive / 8 from 3.8 on). On 5.16+ a check that finds
    /// isolation below the limit wakes the ISOLATED waiters (`wake_throttle_isolated`).
    pub(crate) fn too_many_isolated(&mut self, anon: bool, inactive_now: u64, t: u64) -> bool {
        let (isolated, back) = self.reclaim.isolation.at(anon, t);
        let mut inactive = inactive_now.saturating_sub(back);
        if self.profile >= Profile::V3_14 {
            inactive >>= 3; // __GFP_IO | __GFP_FS caller
        }
        let too_many = isolated > inactive;
        if !too_many && !self.reclaim.isolation.waiters.is_empty() {
            for w in std::mem::take(&mut self.reclaim.isolation.waiters) {
                self.wake(w, t);
            }
        }
        too_many
    }

    /// Record a `shrink_inactive_list` batch of `taken` pages isolated from `from` to now
    /// (`sc.clock()`), `back` of them put back on the inactive list; `queue_full`: its
    /// pageout met a full request queue, so the hold stays open until the reclaimer runs again.
    pub(crate) fn hold_isolated_batch(&mut self, anon: bool, taken: u64, back: u64, from: u64, sc: &crate::reclaim::ScanControl, queue_full: bool) {
        let owner = if sc.kswapd { Some(self.kswapd) } else { self.reclaim.current };
        match owner {
            Some(owner) if queue_full => self.reclaim.isolation.hold_open(owner, anon, taken, back, from),
            _ => {
                let now = self.now;
                self.reclaim.isolation.hold(anon, taken, back, from, sc.clock(), now);
            }
        }
    }

    /// Put direct reclaimer `tid` to sleep in too_many_isolated the era's way.
    pub(crate) fn isolated_sleep(&mut self, tid: u32, wait: IsolatedWait) {
        self.reclaim.isolation.throttled += 1;
        match wait {
            IsolatedWait::CongestionWaitLoop => {
                let timeout = self.hz_div_10_ns();
                self.congestion_wait(tid, timeout);
            }
            IsolatedWait::MsleepOnce => {
                // msleep(100): schedule_timeout_uninterruptible(msecs_to_jiffies(100) + 1).
                let hz = self.cfg.config.kernel.hz as u64;
                let jiffies = (100 * hz).div_ceil(1000) + 1;
                self.block_for(tid, jiffies * self.jiffy_ns);
            }
            IsolatedWait::ThrottleOnce => {
                let jiffies = (self.cfg.config.kernel.hz as u64 / 50).max(1);
                self.reclaim.isolation.waiters.push(tid);
                self.block_for(tid, jiffies * self.jiffy_ns);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Isolation;

    /// A batch counts as isolated only inside its window, and an open one (held across a full
    /// request queue) until its reclaimer runs again.
    #[test]
    fn isolated_pages_are_visible_only_while_held() {
        let mut iso = Isolation::default();
        iso.hold(true, 32, 20, 100, 200, 0);
        assert_eq!(iso.at(true, 99), (0, 0));
        assert_eq!(iso.at(true, 150), (32, 20));
        assert_eq!(iso.at(false, 150), (0, 0), "anon and file are counted apart");
        assert_eq!(iso.at(true, 200), (0, 0));
        iso.hold_open(7, true, 16, 0, 150);
        assert_eq!(iso.at(true, 10_000), (16, 0), "open until its reclaimer runs");
        iso.release(7, 300);
        assert_eq!(iso.at(true, 299), (16, 0));
        assert_eq!(iso.at(true, 300), (0, 0));
        iso.hold(true, 1, 0, 400, 500, 250);
        assert_eq!(iso.live(), 2, "holds that ended before now are dropped");
    }
}
