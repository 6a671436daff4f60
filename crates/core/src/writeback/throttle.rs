//! Dirty throttling as `mm/page-writeback.c` has done it since 3.2 (Fengguang Wu's IO-less
//! `balance_dirty_pages`; the form read here is 6.x's, with the memcg domain of cgroup
//! writeback, 4.2+): the dirty limits of a domain, the position control line (`pos_ratio`),
//! the write-bandwidth estimate and the pause of a writer.
//!
//! Everything here is arithmetic on numbers the engine passes in (pages, jiffies, pages per
//! second), in the kernel's fixed point (`RATELIMIT_CALC_SHIFT`), so it can be checked against
//! the kernel's formulas directly.
//!
//! The model has one backing device that is written back (`machine.file_device`), so the
//! per-wb share of a domain's threshold (`__wb_calc_thresh`, the device's fraction of recent
//! writeout completions) is the whole threshold: `wb_thresh = thresh`, `wb_dirty = dirty`.
//! `wb_update_dirty_ratelimit` is used in the direct form its own comment calls safe
//! (`dirty_ratelimit = balanced_dirty_ratelimit`), without the step filter that smooths it.

/// Fixed-point shift of `pos_ratio` (mm/page-writeback.c).
pub const RATELIMIT_CALC_SHIFT: u32 = 10;
/// `INIT_BW`: the write bandwidth assumed before any was measured, 100 MB/s in pages/s.
pub const INIT_BW: u64 = 100 << (20 - crate::mm::PAGE_SHIFT);
/// `DIRTY_POLL_THRESH`: 128 KiB in pages.
pub const DIRTY_POLL_THRESH: u64 = 128 >> (crate::mm::PAGE_SHIFT - 10);
/// A new task's `nr_dirtied_pause` (kernel/fork.c: 128 KiB in pages).
pub const INIT_NR_DIRTIED_PAUSE: u64 = 128 >> (crate::mm::PAGE_SHIFT - 10);
/// `balance_dirty_pages_ratelimited`'s ratelimit while the limit is exceeded (32 KiB).
pub const DIRTY_EXCEEDED_RATELIMIT: u64 = 32 >> (crate::mm::PAGE_SHIFT - 10);

/// The `vm.dirty_*` knobs (sysctl), as set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DirtyKnobs {
    pub ratio: u64,
    pub background_ratio: u64,
    /// Bytes; 0 = use the ratio.
    pub bytes: u64,
    pub background_bytes: u64,
}

/// One domain's numbers (`struct dirty_throttle_control`): the global one, or the memory
/// cgroup's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Domain {
    /// Dirtyable memory (pages).
    pub avail: u64,
    /// Dirty + under writeback (pages).
    pub dirty: u64,
    pub thresh: u64,
    pub bg_thresh: u64,
    /// `pos_ratio`, in 1 << RATELIMIT_CALC_SHIFT units.
    pub pos_ratio: u64,
}

/// `global_dirtyable_memory`: free pages above the reserves plus the file LRU.
pub fn global_dirtyable(free: u64, totalreserve: u64, file_lru: u64) -> u64 {
    free - free.min(totalreserve) + file_lru + 1
}

/// 2.6.28's `determine_dirtyable_memory`: free pages plus `global_lru_pages()`, all four LRU
/// lists, anonymous ones included, and no reserve taken off (x86_64: no highmem to subtract).
/// 2.6.31 counted anon only while swap has room (`global_reclaimable_pages`) and 3.14 ("do
/// not count anon pages as dirtyable memory") left anon out: the form above. With anon
/// counted, a machine full of anonymous memory lets its writers dirty far more page cache.
pub fn dirtyable_2_6_28(free: u64, lru_pages: u64) -> u64 {
    free + lru_pages + 1
}

/// `mdtc_calc_avail`: a memcg's dirtyable memory is its file pages plus its headroom, but no
/// more headroom than the clean memory the rest of the machine could give up.
pub fn memcg_avail(filepages: u64, headroom: u64, m_dirty: u64, global: &Domain) -> u64 {
    let clean = filepages - filepages.min(m_dirty);
    let global_clean = global.avail - global.avail.min(global.dirty);
    let other_clean = global_clean - global_clean.min(clean);
    filepages + headroom.min(other_clean)
}

/// `domain_dirty_limits`: `(thresh, bg_thresh)` for `avail` dirtyable pages. For a memcg
/// domain (`global_avail` given) byte settings become ratios of the global dirtyable memory.
pub fn domain_dirty_limits(k: &DirtyKnobs, avail: u64, global_avail: Option<u64>) -> (u64, u64) {
    let page = crate::mm::PAGE_SIZE;
    // Ratios in per-PAGE_SIZE units, as the kernel keeps them for precision.
    let mut ratio = k.ratio * page / 100;
    let mut bg_ratio = k.background_ratio * page / 100;
    let (mut bytes, mut bg_bytes) = (k.bytes, k.background_bytes);
    if let Some(g) = global_avail {
        if bytes > 0 {
            ratio = bytes.div_ceil(g.max(1)).min(page);
        }
        if bg_bytes > 0 {
            bg_ratio = bg_bytes.div_ceil(g.max(1)).min(page);
        }
        bytes = 0;
        bg_bytes = 0;
    }
    let thresh = if bytes > 0 { bytes.div_ceil(page) } else { ratio * avail / page };
    let mut bg_thresh = if bg_bytes > 0 { bg_bytes.div_ceil(page) } else { bg_ratio * avail / page };
    if bg_thresh >= thresh {
        bg_thresh = thresh / 2;
    }
    (thresh, bg_thresh)
}

/// `dirty_freerun_ceiling`: below this no writer is throttled.
pub fn freerun_ceiling(thresh: u64, bg_thresh: u64) -> u64 {
    (thresh + bg_thresh) / 2
}

/// `dirty_poll_interval`: pages a writer may dirty before looking again, near-sqrt of the
/// distance to the threshold.
pub fn poll_interval(dirty: u64, thresh: u64) -> u64 {
    if thresh > dirty {
        1 << ((thresh - dirty).ilog2() >> 1)
    } else {
        1
    }
}

/// `pos_ratio_polynom`: 1 + ((setpoint - dirty) / (limit - setpoint))^3, clamped to [0, 2].
pub fn pos_ratio_polynom(setpoint: u64, dirty: u64, limit: u64) -> i64 {
    let shift = RATELIMIT_CALC_SHIFT;
    let x = ((setpoint as i64 - dirty as i64) << shift) / ((limit.saturating_sub(setpoint)) | 1) as i64;
    let mut pos = x;
    pos = (pos * x) >> shift;
    pos = (pos * x) >> shift;
    pos += 1 << shift;
    pos.clamp(0, 2 << shift)
}

/// `wb_position_ratio` for the one written-back device: the global control line around the
/// setpoint, scaled by the wb line (`span` = 8 x write bandwidth) and the wb reserve area.
/// `limit` is the domain's `hard_dirty_limit`; `write_bw` is in pages/s.
pub fn position_ratio(d: &Domain, limit: u64, write_bw: u64) -> u64 {
    if d.dirty >= limit {
        return 0;
    }
    let freerun = freerun_ceiling(d.thresh, d.bg_thresh);
    let setpoint = (freerun + limit) / 2;
    let mut pos = pos_ratio_polynom(setpoint, d.dirty, limit) as u64;
    let thresh = d.thresh.max(1);
    let wb_thresh = thresh.max((limit - d.dirty) / 8);
    let x = (wb_thresh << 16) / (thresh | 1);
    let wb_setpoint = (setpoint * x) >> 16;
    let span = ((thresh.saturating_sub(wb_thresh) + 8 * write_bw) * x) >> 16;
    let x_intercept = wb_setpoint + span;
    if d.dirty < x_intercept - span / 4 {
        pos = pos * (x_intercept - d.dirty) / ((x_intercept - wb_setpoint) | 1);
    } else {
        pos /= 4;
    }
    // The wb reserve area keeps the device from idling when its dirty pool runs low.
    let reserve = wb_thresh / 2;
    if d.dirty < reserve {
        if d.dirty > reserve / 8 {
            pos = pos * reserve / d.dirty;
        } else {
            pos *= 8;
        }
    }
    pos
}

/// `update_dirty_limit`: a domain's `dirty_limit` follows its threshold up at once and down
/// by 1/32 of the gap per bandwidth interval, never below the dirty pages.
pub fn follow_dirty_limit(limit: u64, thresh: u64, dirty: u64) -> u64 {
    if limit < thresh {
        return thresh;
    }
    let target = thresh.max(dirty);
    if limit > target {
        limit - ((limit - target) >> 5)
    } else {
        limit
    }
}

/// `wb_update_write_bandwidth`: the measured rate (`written` pages in `elapsed` jiffies)
/// smoothed over a period of roundup_pow_of_two(3 s), then once more for `avg`. Returns the
/// new `(write_bandwidth, avg_write_bandwidth)`.
pub fn update_write_bandwidth(bw_now: u64, avg: u64, written: u64, elapsed: u64, hz: u64) -> (u64, u64) {
    let period = (3 * hz).next_power_of_two();
    let mut bw = written * hz;
    let mut avg = avg;
    if elapsed > period {
        bw /= elapsed.max(1);
        avg = bw;
    } else {
        bw += bw_now * (period - elapsed);
        bw >>= period.ilog2();
        if avg > bw_now && bw_now >= bw {
            avg -= (avg - bw_now) >> 3;
        }
        if avg < bw_now && bw_now <= bw {
            avg += (bw_now - avg) >> 3;
        }
    }
    (bw, avg.max(1))
}

/// `wb_update_dirty_ratelimit` in its direct form: the rate at which N writers together
/// dirty what the device writes (`balanced_dirty_ratelimit`), from the task rate of the last
/// interval and the measured dirty rate (pages/s), capped at the write bandwidth.
pub fn balanced_ratelimit(dirty_ratelimit: u64, pos_ratio: u64, write_bw: u64, dirty_rate: u64) -> u64 {
    let task_ratelimit = ((dirty_ratelimit * pos_ratio) >> RATELIMIT_CALC_SHIFT) + 1;
    (task_ratelimit * write_bw / (dirty_rate | 1)).min(write_bw).max(1)
}

/// `wb_max_pause`: at most HZ/5, and short enough that the device does not run dry of dirty
/// pages while the writer sleeps (in jiffies).
pub fn max_pause(wb_dirty: u64, avg_write_bw: u64, hz: u64) -> u64 {
    let t = wb_dirty / (1 + avg_write_bw / (1 + hz / 8).next_power_of_two()) + 1;
    t.min((hz / 5).max(1))
}

/// `wb_min_pause`: the shortest pause worth sleeping (jiffies) and the pages to dirty before
/// the next `balance_dirty_pages` (`nr_dirtied_pause`).
pub fn min_pause(max_pause: u64, task_ratelimit: u64, dirty_ratelimit: u64, avg_write_bw: u64, hz: u64) -> (u64, u64) {
    let hi = avg_write_bw.max(1).ilog2() as u64;
    let lo = dirty_ratelimit.max(1).ilog2() as u64;
    let hz_pow = hz.next_power_of_two();
    let mut t = (hz / 100).max(1);
    if hi > lo {
        t += (hi - lo) * (10 * hz) / 1024;
    }
    t = t.min(1 + max_pause / 2);
    let mut pages = dirty_ratelimit * t / hz_pow;
    if pages < DIRTY_POLL_THRESH {
        t = max_pause;
        pages = dirty_ratelimit * t / hz_pow;
        if pages > DIRTY_POLL_THRESH {
            pages = DIRTY_POLL_THRESH;
            t = hz * DIRTY_POLL_THRESH / dirty_ratelimit.max(1);
        }
    }
    let pause = hz * pages / (task_ratelimit + 1);
    if pause > max_pause {
        t = max_pause;
        pages = task_ratelimit * t / hz_pow;
    }
    let min = if pages >= DIRTY_POLL_THRESH { 1 + t / 2 } else { t };
    (min, pages)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_follow_the_ratios_and_bytes() {
        // Ratios kept per PAGE_SIZE: 20% is 819/4096, so 100000 pages give 19995.
        let k = DirtyKnobs { ratio: 20, background_ratio: 10, bytes: 0, background_bytes: 0 };
        assert_eq!(domain_dirty_limits(&k, 100_000, None), (19_995, 9_985));
        let k = DirtyKnobs { ratio: 20, background_ratio: 30, bytes: 0, background_bytes: 0 };
        assert_eq!(domain_dirty_limits(&k, 100_000, None), (19_995, 9_997), "bg >= thresh halves");
        // A memcg domain turns bytes into a ratio of the global dirtyable memory.
        let k = DirtyKnobs { ratio: 20, background_ratio: 10, bytes: 40 << 20, background_bytes: 0 };
        assert_eq!(domain_dirty_limits(&k, 10_000, Some(100_000)).0, 10_000 * (40u64 << 20).div_ceil(100_000) / 4096);
        let k = DirtyKnobs { ratio: 20, background_ratio: 10, bytes: 40 << 20, background_bytes: 0 };
        assert_eq!(domain_dirty_limits(&k, 100_000, None).0, 10_240);
    }

    #[test]
    fn the_control_line_is_two_at_freerun_one_at_the_setpoint_zero_at_the_limit() {
        // In the kernel's fixed point (the divisor is `(limit - setpoint) | 1`), so the ends
        // are a few units off 0 and 2.0.
        let one = 1 << RATELIMIT_CALC_SHIFT;
        assert_eq!(pos_ratio_polynom(1000, 1000, 2000), one);
        assert!(pos_ratio_polynom(1000, 2000, 2000) <= 8);
        assert!((2 * one - 8..=2 * one).contains(&pos_ratio_polynom(1000, 0, 2000)));
        let near = pos_ratio_polynom(1000, 1200, 2000);
        assert!(near < one && near > one - one / 64, "flat near the setpoint: {near}");
        assert_eq!(pos_ratio_polynom(1000, 3000, 2000), 0, "clamped beyond the limit");
    }

    #[test]
    fn pauses_stay_within_max_pause() {
        let (hz, bw) = (250, INIT_BW);
        let mp = max_pause(50_000, bw, hz);
        assert_eq!(mp, hz / 5);
        let (minp, pages) = min_pause(mp, bw / 4, bw / 4, bw, hz);
        assert!(minp <= mp && pages >= DIRTY_POLL_THRESH);
        assert_eq!(poll_interval(0, 1 << 16), 1 << 8);
    }
}
