//! How long each phase of a task's program took.
//!
//! A task's elapsed time says how long the whole program ran; a workload that writes a
//! mapping and then reads it back needs the two passes apart to tell where a model's time
//! goes (a swap-out pass against a swap-in pass). The simulator and the host runner's worker
//! keep the same record, so `compare` can set phase against phase.
//!
//! The boundary between two phases is the end of the earlier phase's last step (its touch and
//! the compute after it): the moment the program hands out the first step of the next phase.
//! A repeating program adds each pass's time to the same phase, so the record has one entry
//! per phase of the program and the entries add up to the task's elapsed time.
//!
//! Beside the elapsed time, each phase keeps the CPU time the task ran in it: on the host the
//! thread's CPU clock (`CLOCK_THREAD_CPUTIME_ID`: the program and the kernel work done in its
//! context — faults, direct reclaim, submitting reads), in the simulator the time the task held
//! a CPU. Elapsed less CPU is what the phase waited (for I/O, a CPU, a lock, a nap), so a
//! phase that is off can be told to be off in its work or in its waiting.

/// Elapsed time per phase index, for one task.
#[derive(Clone, Debug, Default)]
pub struct PhaseTimes {
    elapsed_ns: Vec<u64>,
    cpu_ns: Vec<u64>,
    current: usize,
    since_ns: u64,
    cpu_since_ns: u64,
}

impl PhaseTimes {
    /// A program of `phases` phases that starts its first phase at `start_ns`, when the task
    /// had run `start_cpu_ns` of CPU.
    pub fn new(phases: usize, start_ns: u64, start_cpu_ns: u64) -> PhaseTimes {
        PhaseTimes { elapsed_ns: vec![0; phases], cpu_ns: vec![0; phases], current: 0, since_ns: start_ns, cpu_since_ns: start_cpu_ns }
    }

    /// The phase the record is timing now.
    #[inline]
    pub fn current(&self) -> usize {
        self.current
    }

    /// The program handed out the first step of phase `next` at `now_ns`, the task having run
    /// `cpu_now_ns` of CPU by then. An index past the last phase (the program has ended) is
    /// ignored: `until` and `cpu_until` close the last phase.
    pub fn enter(&mut self, next: usize, now_ns: u64, cpu_now_ns: u64) {
        if next >= self.elapsed_ns.len() {
            return;
        }
        self.elapsed_ns[self.current] += now_ns.saturating_sub(self.since_ns);
        self.cpu_ns[self.current] += cpu_now_ns.saturating_sub(self.cpu_since_ns);
        self.current = next;
        self.since_ns = now_ns.max(self.since_ns);
        self.cpu_since_ns = cpu_now_ns.max(self.cpu_since_ns);
    }

    /// The record with the current phase closed at `end_ns` (the task's end, or the run's).
    pub fn until(&self, end_ns: u64) -> Vec<u64> {
        let mut out = self.elapsed_ns.clone();
        if let Some(e) = out.get_mut(self.current) {
            *e += end_ns.saturating_sub(self.since_ns);
        }
        out
    }

    /// The CPU time per phase with the current phase closed when the task had run
    /// `end_cpu_ns` (at its end, or the run's); the entries add up to the CPU it ran since
    /// its first phase began.
    pub fn cpu_until(&self, end_cpu_ns: u64) -> Vec<u64> {
        let mut out = self.cpu_ns.clone();
        if let Some(c) = out.get_mut(self.current) {
            *c += end_cpu_ns.saturating_sub(self.cpu_since_ns);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::PhaseTimes;

    #[test]
    fn phases_add_up_to_the_span_they_cover() {
        let mut p = PhaseTimes::new(2, 100, 10);
        p.enter(1, 400, 110);
        p.enter(0, 450, 140); // a repeating program's second pass
        p.enter(1, 500, 150);
        assert_eq!(p.until(1_000), vec![300 + 50, 50 + 500]);
        assert_eq!(p.until(1_000).iter().sum::<u64>(), 900);
        assert_eq!(p.cpu_until(400), vec![100 + 10, 30 + 250]);
        assert_eq!(p.cpu_until(400).iter().sum::<u64>(), 390);
    }

    #[test]
    fn the_end_of_the_program_is_closed_by_until_not_by_enter() {
        let mut p = PhaseTimes::new(1, 0, 0);
        p.enter(1, 70, 30);
        assert_eq!(p.current(), 0);
        assert_eq!(p.until(90), vec![90]);
        assert_eq!(p.cpu_until(40), vec![40]);
    }
}
