//! Signed changes at points of virtual time and their running total at any time: the sum of
//! the changes at or before `t`. The isolated-pages timeline (reclaim/isolation.rs) is one per
//! list type: a hold adds its pages at its start and takes them away at its end.
//!
//! Why an index: kswapd's clock runs far ahead of the event loop, so tens of thousands of
//! holds are live at once, and summing the changes up to `t` one by one (a `BTreeMap` range
//! fold, session 35) took ~98% of the classic memcached simulation once `lru_note_cost`'s
//! ancestor locks were back (session 36: perf on `mglru2022-memcached`). The sums are
//! unchanged: integers, added in any order.
//!
//! The structure: the changes in time order, cut into blocks of at most `2 * BLOCK`, each
//! block's total, and a Fenwick tree over the totals. `sum_to(t)` finds the block holding `t`
//! by binary search, adds the totals before it from the tree (O(log blocks)) and the block's
//! own changes up to `t` (O(BLOCK)). A change at an existing time updates one block and the
//! tree; one that adds a time inserts into one block. The tree is rebuilt (O(blocks)) only
//! when a block splits, empties or merges with its neighbour, which takes `BLOCK / 4`
//! updates or more: amortized a few operations per update. Blocks that shrink below
//! `BLOCK / 4` (holds dropped from the middle) merge with the next, so the block count stays
//! within a few times `n / BLOCK`.

/// Target block size; a block is split in two when it reaches twice this.
const BLOCK: usize = 64;

/// A change: two signed counts (for isolation: pages held, pages already put back).
pub type Delta = [i64; 2];

fn plus(a: Delta, b: Delta) -> Delta {
    [a[0] + b[0], a[1] + b[1]]
}

/// The changes by time, with prefix sums.
#[derive(Debug, Default, Clone)]
pub struct ChangeSums {
    /// Non-empty blocks of `(time, change)`, times unique and increasing across blocks, no
    /// zero change kept.
    blocks: Vec<Vec<(u64, Delta)>>,
    /// Each block's total.
    totals: Vec<Delta>,
    /// Fenwick tree over `totals` (entry `i` sums blocks `(i + 1 - lowbit(i + 1), i]`).
    tree: Vec<Delta>,
}

impl ChangeSums {
    /// Add `d` to the change at `at` (a change that sums to zero is dropped).
    pub fn add(&mut self, at: u64, d: Delta) {
        if d == [0, 0] {
            return;
        }
        if self.blocks.is_empty() {
            self.blocks.push(vec![(at, d)]);
            self.totals.push(d);
            self.rebuild();
            return;
        }
        let b = self.blocks.partition_point(|blk| blk[0].0 <= at).saturating_sub(1);
        self.totals[b] = plus(self.totals[b], d);
        let blk = &mut self.blocks[b];
        match blk.binary_search_by_key(&at, |&(t, _)| t) {
            Ok(i) => {
                blk[i].1 = plus(blk[i].1, d);
                if blk[i].1 == [0, 0] {
                    blk.remove(i);
                    if blk.len() < BLOCK / 4 {
                        return self.merge(b);
                    }
                }
            }
            Err(i) => {
                blk.insert(i, (at, d));
                if blk.len() >= 2 * BLOCK {
                    return self.split(b);
                }
            }
        }
        self.tree_add(b, d);
    }

    /// The sum of the changes at or before `t`.
    pub fn sum_to(&self, t: u64) -> Delta {
        let b = self.blocks.partition_point(|blk| blk[0].0 <= t);
        if b == 0 {
            return [0, 0];
        }
        let before = self.tree_prefix(b - 1);
        self.blocks[b - 1].iter().take_while(|&&(at, _)| at <= t).fold(before, |s, &(_, d)| plus(s, d))
    }

    /// How many times hold a change.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.blocks.iter().map(Vec::len).sum()
    }

    /// Block `b` reached `2 * BLOCK`: its upper half becomes a block of its own.
    fn split(&mut self, b: usize) {
        let tail = self.blocks[b].split_off(BLOCK);
        let tail_total = total(&tail);
        self.totals[b] = total(&self.blocks[b]);
        self.blocks.insert(b + 1, tail);
        self.totals.insert(b + 1, tail_total);
        self.rebuild();
    }

    /// Block `b` fell below `BLOCK / 4`: it and a neighbour become one block (split again if
    /// that makes it full); a lone block stays, and goes when empty.
    fn merge(&mut self, b: usize) {
        let lo = match self.blocks.len() {
            1 if self.blocks[0].is_empty() => {
                *self = Self::default();
                return;
            }
            1 => {
                self.rebuild();
                return;
            }
            n if b + 1 < n => b,
            _ => b - 1,
        };
        let hi = self.blocks.remove(lo + 1);
        let hi_total = self.totals.remove(lo + 1);
        self.blocks[lo].extend(hi);
        self.totals[lo] = plus(self.totals[lo], hi_total);
        if self.blocks[lo].len() >= 2 * BLOCK {
            return self.split(lo);
        }
        self.rebuild();
    }

    fn tree_add(&mut self, b: usize, d: Delta) {
        let mut i = b + 1;
        while i <= self.tree.len() {
            self.tree[i - 1] = plus(self.tree[i - 1], d);
            i += i & i.wrapping_neg();
        }
    }

    /// The totals of blocks `0..k`.
    fn tree_prefix(&self, k: usize) -> Delta {
        let (mut i, mut s) = (k, [0, 0]);
        while i > 0 {
            s = plus(s, self.tree[i - 1]);
            i -= i & i.wrapping_neg();
        }
        s
    }

    /// The Fenwick tree from `totals` in O(blocks).
    fn rebuild(&mut self) {
        self.tree.clone_from(&self.totals);
        let n = self.tree.len();
        for i in 1..=n {
            let j = i + (i & i.wrapping_neg());
            if j <= n {
                self.tree[j - 1] = plus(self.tree[j - 1], self.tree[i - 1]);
            }
        }
    }
}

fn total(blk: &[(u64, Delta)]) -> Delta {
    blk.iter().fold([0, 0], |s, &(_, d)| plus(s, d))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    /// The fold the index replaces (isolation.rs before session 36), kept as the reference.
    #[derive(Default)]
    struct Naive {
        changes: BTreeMap<u64, Delta>,
    }

    impl Naive {
        fn add(&mut self, at: u64, d: Delta) {
            let e = self.changes.entry(at).or_insert([0, 0]);
            *e = plus(*e, d);
            if *e == [0, 0] {
                self.changes.remove(&at);
            }
        }

        fn sum_to(&self, t: u64) -> Delta {
            self.changes.range(..=t).fold([0, 0], |s, (_, &d)| plus(s, d))
        }
    }

    /// Holds `[from, until)` of `pages` (and `back` put back) added, later removed in a
    /// shuffled order as isolation.rs does, with queries at random times after each step.
    fn same_sums(holds: &[(u64, u64, i64, i64)], removal_order: &[usize], queries: &[u64]) -> Result<(), TestCaseError> {
        let (mut c, mut n) = (ChangeSums::default(), Naive::default());
        let mut q = queries.iter().cycle();
        let mut check = |c: &ChangeSums, n: &Naive| -> Result<(), TestCaseError> {
            for _ in 0..3 {
                let t = *q.next().unwrap();
                prop_assert_eq!(c.sum_to(t), n.sum_to(t), "sum_to({})", t);
            }
            prop_assert_eq!(c.len(), n.changes.len());
            Ok(())
        };
        let apply = |c: &mut ChangeSums, n: &mut Naive, &(from, len, p, b): &(u64, u64, i64, i64), sign: i64| {
            for (at, d) in [(from, [sign * p, sign * b]), (from + len, [-sign * p, -sign * b])] {
                c.add(at, d);
                n.add(at, d);
            }
        };
        for h in holds {
            apply(&mut c, &mut n, h, 1);
            check(&c, &n)?;
        }
        for &k in removal_order {
            apply(&mut c, &mut n, &holds[k % holds.len()], -1);
            check(&c, &n)?;
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        /// Many overlapping holds on a small time range (shared times, blocks that split,
        /// shrink, merge and empty), removed in any order, even twice (negative totals).
        #[test]
        fn the_index_sums_as_the_fold(
            holds in prop::collection::vec((0u64..3_000, 1u64..500, 1i64..64, 0i64..64), 1..700),
            removal_order in prop::collection::vec(0usize..700, 0..900),
            queries in prop::collection::vec(0u64..4_000, 1..50),
        ) {
            same_sums(&holds, &removal_order, &queries)?;
        }
    }

    #[test]
    fn sums_across_many_blocks_and_back_to_empty() {
        let mut c = ChangeSums::default();
        for k in 0..1_000u64 {
            c.add(k * 10, [1, 2]);
            c.add(k * 10 + 5, [-1, -2]);
        }
        assert!(c.blocks.len() > 10, "the test spans many blocks");
        assert_eq!(c.sum_to(4), [1, 2]);
        assert_eq!(c.sum_to(5), [0, 0]);
        assert_eq!(c.sum_to(9_990), [1, 2]);
        for k in 0..1_000u64 {
            c.add(k * 10, [-1, -2]);
        }
        assert_eq!(c.sum_to(9_999), [-1_000, -2_000]);
        for k in 0..1_000u64 {
            c.add(k * 10 + 5, [1, 2]);
        }
        assert_eq!((c.len(), c.blocks.len(), c.sum_to(u64::MAX)), (0, 0, [0, 0]));
    }
}
