//! The event queue: one heap ordered by (virtual time, sequence number). The sequence number
//! makes the order of simultaneous events the order they were posted, so a run is a pure
//! function of its configuration and seed.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Ev {
    /// The task on this CPU continues; the token invalidates events of an earlier occupant.
    Cpu(u32, u64),
    /// An I/O request finished.
    IoDone(u32),
    /// A device's CFQ idle slice timer armed for this time fired (device code: swap area
    /// index, or u32::MAX for the file device).
    IoIdle(u32, u64),
    /// A sleeping task's timer expired (throttle timeout, kswapd nap end).
    Timer(u32, u64),
    /// A task starts (start_delay).
    Start(u32),
    Sample,
}

#[derive(Default)]
pub(crate) struct EventQueue {
    heap: BinaryHeap<Reverse<(u64, u64, Ev)>>,
    seq: u64,
}

impl EventQueue {
    #[inline]
    pub fn push(&mut self, t: u64, ev: Ev) {
        self.seq += 1;
        self.heap.push(Reverse((t, self.seq, ev)));
    }

    #[inline]
    pub fn pop(&mut self) -> Option<(u64, Ev)> {
        self.heap.pop().map(|Reverse((t, _, ev))| (t, ev))
    }

    /// The time of the next event (u64::MAX when none is queued).
    #[inline]
    pub fn peek_time(&self) -> u64 {
        self.heap.peek().map_or(u64::MAX, |Reverse((t, _, _))| *t)
    }

    /// Pop the next event if it is due by `t`, with its sequence number (for `repost`).
    pub fn pop_due(&mut self, t: u64) -> Option<(u64, u64, Ev)> {
        match self.heap.peek() {
            Some(&Reverse((et, _, _))) if et <= t => self.heap.pop().map(|Reverse(e)| e),
            _ => None,
        }
    }

    /// Put back an event taken with `pop_due`, in its original place.
    pub fn repost(&mut self, t: u64, seq: u64, ev: Ev) {
        self.heap.push(Reverse((t, seq, ev)));
    }
}
