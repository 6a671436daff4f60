//! The swap token (mm/thrash.c, 2.6.20–3.4; removed in 3.5 by "mm: remove swap token code"):
//! token-based thrashing protection after Song Jiang's paper. A process that takes a
//! swap-cache miss contends for the one token before its read (`grab_swap_token` in
//! `do_swap_page`); while its holder is "in the middle of a page fault" (its `mmap_sem`
//! held), every page of the holder that *another* context scans is reported referenced
//! (`page_referenced_one`: `mm != current->mm && has_swap_token(mm) &&
//! rwsem_is_locked(&mm->mmap_sem)`), so reclaim keeps the holder's pages. Reclaim at priority
//! 0 drops the token (`disable_swap_token`), and the holder's exit releases it.
//!
//! Why the model has it: seed 002's fill-and-verify program holds the token from its first
//! swap-in on, and it sleeps inside its page faults (2.6.32 has no fault retry: `mmap_sem`
//! stays held across the allocator's naps and the swap-in read). kswapd, which the program's
//! own allocations wake, then finds every page of the only process referenced: it reclaims
//! nothing until its priority reaches 0, taking its `congestion_wait(HZ/10)` naps on the way,
//! and the program reclaims for itself. Modelled for the "2.6.32" profile (`SwapSystem::new`);
//! 2.6.28 had the same code and is left to the fidelity work on that profile.
//!
//! Contention, as 2.6.32's `grab_swap_token`: the first comer takes it; a contender's
//! priority rises when its faults come closer together than last time and falls otherwise,
//! and it takes the token when its priority exceeds the holder's; each take (and each fault
//! of the holder) adds 2. A process is a task here (the model's tasks do not share an mm).

/// Per-process (`mm_struct`) token bookkeeping.
#[derive(Clone, Copy, Default)]
struct MmToken {
    faultstamp: u64,
    last_interval: u64,
    priority: u64,
}

#[derive(Default)]
pub struct SwapToken {
    holder: Option<u32>,
    global_faults: u64,
    mms: Vec<MmToken>,
}

impl SwapToken {
    fn mm(&mut self, tid: u32) -> &mut MmToken {
        let i = tid as usize;
        if self.mms.len() <= i {
            self.mms.resize(i + 1, MmToken::default());
        }
        &mut self.mms[i]
    }

    /// `grab_swap_token`: task `tid` takes a swap-cache miss.
    pub fn grab(&mut self, tid: u32) {
        self.global_faults += 1;
        let now = self.global_faults;
        let holder = self.holder;
        let holder_priority = holder.map(|h| self.mm(h).priority);
        let mm = self.mm(tid);
        let interval = now - mm.faultstamp;
        match holder_priority {
            None => {
                mm.priority += 2;
                self.holder = Some(tid);
            }
            Some(_) if holder == Some(tid) => mm.priority += 2,
            Some(hp) => {
                if interval < mm.last_interval {
                    mm.priority += 1;
                } else {
                    mm.priority = mm.priority.saturating_sub(1);
                }
                if mm.priority > hp {
                    mm.priority += 2;
                    self.holder = Some(tid);
                }
            }
        }
        let mm = self.mm(tid);
        mm.faultstamp = now;
        mm.last_interval = interval;
    }

    pub fn holder(&self) -> Option<u32> {
        self.holder
    }

    /// `disable_swap_token`: reclaim reached priority 0.
    pub fn disable(&mut self) {
        self.holder = None;
    }

    /// `put_swap_token`: task `tid` exits.
    pub fn put(&mut self, tid: u32) {
        if self.holder == Some(tid) {
            self.holder = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::SwapToken;

    /// First come first served; a contender whose faults keep coming closer together wins
    /// it once its priority passes the holder's; priority 0 reclaim and exit drop it.
    #[test]
    fn token_contention_as_grab_swap_token() {
        let mut t = SwapToken::default();
        t.grab(1);
        assert_eq!(t.holder(), Some(1));
        t.grab(2); // interval 2 vs last 0: priority stays 0
        assert_eq!(t.holder(), Some(1));
        t.grab(2); // interval 1 < 2: priority 1, holder has 2
        t.grab(2); // interval 1, not < 1: back to 0
        assert_eq!(t.holder(), Some(1));
        t.disable();
        assert_eq!(t.holder(), None);
        t.grab(2);
        assert_eq!(t.holder(), Some(2));
        t.put(1);
        assert_eq!(t.holder(), Some(2), "only the holder's exit releases it");
        t.put(2);
        assert_eq!(t.holder(), None);
    }
}
