//! A busy timeline in virtual time: disjoint busy intervals `[start, end)` of one resource
//! (an `lru_lock`, a workingset counter's cache line) and the search for the earliest free
//! room of a given length at or after a clock.
//!
//! Why an index: the model processes CPUs out of clock order (kswapd runs far ahead of the
//! event loop), so a timeline holds many short busy intervals with short gaps between them,
//! and an acquisition whose hold does not fit a gap used to walk them one by one (session 34:
//! 74% of the classic memcached simulation in that walk once `lru_note_cost` took every
//! ancestor's lock). The semantics are unchanged: `first_free(at, len)` is the earliest
//! `s >= at` with `[s, s + len)` free, as the walk returned.
//!
//! The structure: the intervals in start order, cut into blocks of at most `2 * BLOCK`, and
//! for each block the largest gap that follows one of its intervals (the gap after the last
//! interval of all is unbounded). A search finds the interval before `at` by binary search,
//! tries the room right there, then looks for the first interval whose following gap holds
//! `len`: the rest of its own block, then block maxima until one fits, then inside that
//! block - O(log n + n / BLOCK + BLOCK) instead of O(n), with the blocks contiguous `Vec`s
//! (cache-friendly) and every update touching one block and its neighbours. A balanced tree
//! augmented with the subtree's max gap would be O(log n) but is far more code for
//! timelines of a few thousand intervals; the blocks keep the block scan at a few hundred
//! comparisons at most.
//!
//! Adjacent intervals are merged on insertion (`occupy`), so a queue of back-to-back holds is
//! one interval; intervals that ended at or before the event loop's time are dropped
//! (`drop_before`): no clock is behind it.

/// Target block size; a block is split in two when it reaches twice this.
const BLOCK: usize = 32;

/// The busy intervals and the per-block maximum following gap.
#[derive(Debug, Default, Clone)]
pub struct Timeline {
    /// Non-empty blocks of `(start, end)`, disjoint, in start order across blocks.
    blocks: Vec<Vec<(u64, u64)>>,
    /// `gap_max[b]`: the largest `next.start - end` over the intervals of block `b`.
    gap_max: Vec<u64>,
}

impl Timeline {
    /// How many busy intervals the timeline holds.
    pub fn len(&self) -> usize {
        self.blocks.iter().map(Vec::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// Drop the intervals that ended at or before `floor` (they are sorted by end too).
    pub fn drop_before(&mut self, floor: u64) {
        while let Some(first) = self.blocks.first_mut() {
            let k = first.partition_point(|&(_, e)| e <= floor);
            if k == 0 {
                return;
            }
            if k < first.len() {
                first.drain(..k);
                self.refresh(0);
                return;
            }
            self.blocks.remove(0);
            self.gap_max.remove(0);
        }
    }

    /// `at`, or the end of the busy interval that contains it.
    pub fn busy_until(&self, at: u64) -> u64 {
        self.locate(at).map_or(at, |p| at.max(self.get(p).1))
    }

    /// The earliest `s >= at` with `[s, s + len)` free.
    pub fn first_free(&self, at: u64, len: u64) -> u64 {
        let pos = self.locate(at);
        // The interval that started last at or before `at` may still run past it.
        let s = pos.map_or(at, |p| at.max(self.get(p).1));
        let Some(next) = self.next(pos) else { return s };
        if self.get(next).0 >= s.saturating_add(len) {
            return s;
        }
        // From `next` on, each interval that overlaps the room pushes it to its end: the
        // answer is the end of the first interval whose following gap holds `len`.
        let q = self.first_gap_from(next, len);
        self.get(q).1
    }

    /// Mark `[start, end)` busy (free before), merged with the intervals it touches.
    pub fn occupy(&mut self, start: u64, end: u64) {
        let pos = self.locate(start);
        let next = self.next(pos);
        let joins_prev = pos.filter(|&p| self.get(p).1 == start);
        let joins_next = next.filter(|&n| self.get(n).0 == end);
        match (joins_prev, joins_next) {
            (Some(p), Some(n)) => {
                let e = self.get(n).1;
                self.blocks[p.0][p.1].1 = e;
                self.remove(n);
                self.refresh_around(p.0);
            }
            (Some(p), None) => {
                self.blocks[p.0][p.1].1 = end;
                self.refresh_around(p.0);
            }
            (None, Some(n)) => {
                self.blocks[n.0][n.1].0 = start;
                self.refresh_around(n.0);
            }
            (None, None) => self.insert_after(pos, (start, end)),
        }
    }

    fn get(&self, (b, i): (usize, usize)) -> (u64, u64) {
        self.blocks[b][i]
    }

    /// The last interval starting at or before `at`.
    fn locate(&self, at: u64) -> Option<(usize, usize)> {
        let b = self.blocks.partition_point(|blk| blk[0].0 <= at).checked_sub(1)?;
        let i = self.blocks[b].partition_point(|&(s, _)| s <= at) - 1;
        Some((b, i))
    }

    /// The interval after `pos` (the first one for `None`).
    fn next(&self, pos: Option<(usize, usize)>) -> Option<(usize, usize)> {
        let (b, i) = match pos {
            None => (0, 0),
            Some((b, i)) if i + 1 < self.blocks[b].len() => (b, i + 1),
            Some((b, _)) => (b + 1, 0),
        };
        (b < self.blocks.len()).then_some((b, i))
    }

    /// The gap after interval `(b, i)`: to the next interval's start, unbounded after the last.
    fn gap_after(&self, b: usize, i: usize) -> u64 {
        match self.next(Some((b, i))) {
            Some(n) => self.get(n).0 - self.blocks[b][i].1,
            None => u64::MAX,
        }
    }

    /// The first interval at or after `from` whose following gap is at least `len` (the last
    /// interval always qualifies).
    fn first_gap_from(&self, from: (usize, usize), len: u64) -> (usize, usize) {
        let scan = |b: usize, i0: usize| (i0..self.blocks[b].len()).find(|&i| self.gap_after(b, i) >= len);
        if let Some(i) = scan(from.0, from.1) {
            return (from.0, i);
        }
        let b = (from.0 + 1..self.blocks.len()).find(|&b| self.gap_max[b] >= len).expect("the last gap is unbounded");
        (b, scan(b, 0).expect("the block's max gap fits"))
    }

    /// Recompute block `b`'s max gap.
    fn refresh(&mut self, b: usize) {
        self.gap_max[b] = (0..self.blocks[b].len()).map(|i| self.gap_after(b, i)).max().unwrap_or(0);
    }

    /// Recompute block `b` and the one before it (whose last gap ends at `b`'s first start).
    fn refresh_around(&mut self, b: usize) {
        if b > 0 {
            self.refresh(b - 1);
        }
        if b < self.blocks.len() {
            self.refresh(b);
        }
    }

    fn remove(&mut self, (b, i): (usize, usize)) {
        self.blocks[b].remove(i);
        if self.blocks[b].is_empty() {
            self.blocks.remove(b);
            self.gap_max.remove(b);
        }
        self.refresh_around(b.min(self.blocks.len()));
    }

    /// Insert a new interval right after `pos` (first for `None`), splitting a full block.
    fn insert_after(&mut self, pos: Option<(usize, usize)>, iv: (u64, u64)) {
        if self.blocks.is_empty() {
            self.blocks.push(vec![iv]);
            self.gap_max.push(u64::MAX);
            return;
        }
        let (b, i) = pos.map_or((0, 0), |(b, i)| (b, i + 1));
        self.blocks[b].insert(i, iv);
        if self.blocks[b].len() >= 2 * BLOCK {
            let tail = self.blocks[b].split_off(BLOCK);
            self.blocks.insert(b + 1, tail);
            self.gap_max.insert(b + 1, 0);
            self.refresh(b + 1);
        }
        self.refresh_around(b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    /// The walk the index replaces (lru_lock.rs before session 35), kept as the reference.
    #[derive(Default)]
    struct Naive {
        busy: BTreeMap<u64, u64>,
    }

    impl Naive {
        fn drop_before(&mut self, floor: u64) {
            while let Some((&s, &e)) = self.busy.first_key_value() {
                if e > floor {
                    break;
                }
                self.busy.remove(&s);
            }
        }

        fn first_free(&self, at: u64, len: u64) -> u64 {
            let mut s = at;
            if let Some((_, &e)) = self.busy.range(..=at).next_back() {
                s = s.max(e);
            }
            for (&b, &e) in self.busy.range(at.saturating_add(1)..) {
                if b >= s.saturating_add(len) {
                    break;
                }
                s = s.max(e);
            }
            s
        }

        fn occupy(&mut self, mut start: u64, mut end: u64) {
            if let Some((&s, &e)) = self.busy.range(..=start).next_back() {
                if e == start {
                    self.busy.remove(&s);
                    start = s;
                }
            }
            if let Some(e) = self.busy.remove(&end) {
                end = e;
            }
            self.busy.insert(start, end);
        }
    }

    /// Run the same acquisitions on both; every start must agree, and the intervals too.
    fn same_starts(ops: &[(u64, u64, u64)]) -> Result<(), TestCaseError> {
        let (mut t, mut n) = (Timeline::default(), Naive::default());
        let mut floor = 0;
        for &(at, len, advance) in ops {
            floor += advance;
            t.drop_before(floor);
            n.drop_before(floor);
            let at = floor + at;
            let (a, b) = (t.first_free(at, len.max(1)), n.first_free(at, len.max(1)));
            prop_assert_eq!(a, b, "first_free({}, {})", at, len);
            if len > 0 {
                t.occupy(a, a + len);
                n.occupy(b, b + len);
            }
            prop_assert_eq!(t.len(), n.busy.len());
        }
        let flat: Vec<(u64, u64)> = t.blocks.iter().flatten().copied().collect();
        prop_assert_eq!(flat, n.busy.into_iter().collect::<Vec<_>>());
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        /// Random clocks ahead of a creeping floor, short and long holds: many small gaps,
        /// block splits and drops.
        #[test]
        fn the_index_returns_the_walks_starts(ops in prop::collection::vec((0u64..5_000, 0u64..120, prop_oneof![4 => Just(0u64), 1 => 0u64..400]), 1..1_500)) {
            same_starts(&ops)?;
        }

        /// Back-to-back and zero holds (merging on both sides), a floor that jumps past all.
        #[test]
        fn merging_and_dropping_agree(ops in prop::collection::vec((0u64..300, 0u64..20, prop_oneof![8 => Just(0u64), 1 => 0u64..2_000]), 1..800)) {
            same_starts(&ops)?;
        }
    }

    #[test]
    fn a_long_hold_skips_the_short_gaps_to_the_first_that_fits() {
        let mut t = Timeline::default();
        // 200 holds of 10 with gaps of 5, then one gap of 100.
        for k in 0..200 {
            t.occupy(k * 15, k * 15 + 10);
        }
        t.occupy(3_100, 3_110);
        assert!(t.blocks.len() > 2, "the test spans several blocks");
        assert_eq!(t.first_free(0, 5), 10);
        assert_eq!(t.first_free(0, 6), 2_995);
        assert_eq!(t.first_free(0, 200), 3_110);
        t.drop_before(3_000);
        assert_eq!(t.len(), 1);
    }
}
