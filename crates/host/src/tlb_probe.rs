//! What a TLB-flush IPI costs on this machine, for `swaplab calibrate` (the model's
//! `tlb_shootdown_ns` and `tlb_ipi_receive_ns`, reclaim/tlb_flush.rs).
//!
//! Reclaim's batched flush (`arch_tlbbatch_flush` → `flush_tlb_multi`) sends an IPI to every
//! CPU that may cache a translation it removed and spins until each has run
//! `flush_tlb_func`. On bare metal that is a microsecond or two; in a VM, sending is an
//! exit to the hypervisor (the x2APIC ICR write) and the target vCPU is kicked out of guest
//! mode to take the interrupt: stop 27's `perf` of four swapping processes on this VM put
//! ~14 us of the sender's CPU on each flush, against the model's bare-metal 2 us.
//!
//! The probe, on two CPUs `a` and `b` of the calling thread's affinity:
//! * a peer thread of this process, pinned to `b` (SCHED_FIFO when allowed, so it is always
//!   the task running there), spins in user mode counting iterations: `b` is then a non-lazy
//!   CPU with this mm loaded, which every flush of this mm must interrupt;
//! * phase "ipi": the calling thread, pinned to `a`, writes one anonymous page and
//!   `MADV_DONTNEED`s it, `iters` times. Each zap flushes this mm's TLB on `b` with an IPI;
//! * phase "local": a forked child (a different mm, never loaded on `b`) runs the same loop
//!   on `a`, which IPIs nobody, while the peer keeps spinning: same work on `a`, same
//!   neighbour on `b` (the two vCPUs may share a core), no IPI.
//!
//! The IPIs are counted, not assumed: the "TLB shootdowns" line of /proc/interrupts for `b`
//! (x86; a kernel may skip some flushes, and RT throttling may leave `b` to another task for a
//! moment). Per IPI then:
//! * initiator = (CPU of the "ipi" loop − CPU of the "local" loop) / IPIs;
//! * receiver = the peer's lost iterations (its rate in "local" less its rate in "ipi", over
//!   the "ipi" phase's wall time) / IPIs, converted to time at the "local" rate.
//!
//! The phases alternate over `rounds` rounds (the machine drifts; see `interleaved_qd1` in
//! calibrate.rs) and the figures are the rounds' medians. The receiver's figure is a spinning
//! loop's loss: a program with a larger TLB footprint also pays refills after reclaim's full
//! flush, which this does not see. Architectures without TLB-flush IPIs (arm64 broadcasts
//! `TLBI`) have no such line: the probe reports nothing and the model keeps its defaults.

use crate::sys::{self, now_ns, thread_cpu_ns, Region};
use serde::Serialize;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

const PAGE: usize = 4096;

/// One round's two phases.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct TlbRound {
    /// Flushes made in each phase (loop iterations).
    pub iters: u64,
    /// IPIs counted on `b` during the "ipi" phase, and during the "local" phase (should be ~0).
    pub ipis: u64,
    pub local_ipis: u64,
    /// The looping thread's CPU time, per phase.
    pub ipi_cpu_ns: u64,
    pub local_cpu_ns: u64,
    /// The "ipi" phase's wall time, and the peer's iterations per phase and the phases' wall.
    pub ipi_wall_ns: u64,
    pub local_wall_ns: u64,
    pub peer_ipi_spins: u64,
    pub peer_local_spins: u64,
}

impl TlbRound {
    /// (initiator ns per IPI, receiver ns per IPI); None when the round saw no IPIs. There is
    /// no receiver's figure when the peer missed more than a tenth of the flushes: it was then
    /// off its CPU part of the phase, and its lost spins are not the IPIs' alone.
    pub fn per_ipi(&self) -> Option<(f64, Option<f64>)> {
        let ipis = self.ipis.saturating_sub(self.local_ipis);
        if ipis == 0 || self.local_wall_ns == 0 || self.peer_local_spins == 0 {
            return None;
        }
        let ipis = ipis as f64;
        let initiator = (self.ipi_cpu_ns as f64 - self.local_cpu_ns as f64) / ipis;
        let local_rate = self.peer_local_spins as f64 / self.local_wall_ns as f64;
        let expected = local_rate * self.ipi_wall_ns as f64;
        let lost_ns = (expected - self.peer_ipi_spins as f64) / local_rate;
        let receiver = (ipis >= 0.9 * self.iters as f64).then_some(lost_ns / ipis);
        Some((initiator, receiver))
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct TlbReport {
    /// The CPUs used: the flusher's and the interrupted peer's.
    pub cpu_flusher: usize,
    pub cpu_peer: usize,
    /// Medians over the rounds, per IPI: the sender's CPU (send, wait for the ack) and the
    /// interrupted CPU's lost time.
    pub initiator_ns: f64,
    pub receiver_ns: Option<f64>,
    /// IPIs per flush in the "ipi" phase (1.0 when every flush interrupted the peer).
    pub ipis_per_flush: f64,
    pub rounds: Vec<TlbRound>,
}

/// The median of the rounds' figures; None when no round saw an IPI.
pub fn summarize(rounds: &[TlbRound]) -> Option<(f64, Option<f64>, f64)> {
    let per: Vec<(f64, Option<f64>)> = rounds.iter().filter_map(TlbRound::per_ipi).collect();
    if per.is_empty() {
        return None;
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(|a, b| a.total_cmp(b));
        let n = v.len();
        if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
    };
    let initiator = median(per.iter().map(|p| p.0).collect());
    let receivers: Vec<f64> = per.iter().filter_map(|p| p.1).collect();
    let receiver = (!receivers.is_empty()).then(|| median(receivers));
    let (ipis, iters) = rounds.iter().fold((0, 0), |(i, n), r| (i + r.ipis, n + r.iters));
    Some((initiator, receiver, ipis as f64 / iters.max(1) as f64))
}

/// The count of TLB-shootdown interrupts per CPU from /proc/interrupts' text ("TLB:" line,
/// one column per CPU in the header's order). None when the line is absent (not x86).
pub fn tlb_interrupts(text: &str) -> Option<Vec<u64>> {
    let mut lines = text.lines();
    let cpus = lines.next()?.split_whitespace().filter(|c| c.starts_with("CPU")).count();
    let line = lines.find(|l| l.trim_start().starts_with("TLB:"))?;
    let counts: Vec<u64> = line.trim_start()["TLB:".len()..].split_whitespace().take(cpus).map_while(|c| c.parse().ok()).collect();
    (counts.len() == cpus).then_some(counts)
}

fn tlb_interrupts_on(cpu_column: usize) -> io::Result<u64> {
    let text = std::fs::read_to_string("/proc/interrupts")?;
    tlb_interrupts(&text)
        .and_then(|c| c.get(cpu_column).copied())
        .ok_or_else(|| io::Error::new(io::ErrorKind::Unsupported, "no TLB shootdowns line in /proc/interrupts"))
}

/// The calling thread's affinity set.
fn affinity() -> io::Result<libc::cpu_set_t> {
    // SAFETY: zeroed cpu_set_t is an empty set; sched_getaffinity fills it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    sys::check(unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) }, "sched_getaffinity")?;
    Ok(set)
}

fn pin_to(cpu: usize) -> io::Result<()> {
    // SAFETY: as in affinity().
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    unsafe { libc::CPU_SET(cpu, &mut set) };
    sys::check(unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) }, "sched_setaffinity")
}

/// The column of `cpu` in /proc/interrupts (its header lists online CPUs only).
fn interrupts_column(cpu: usize) -> io::Result<usize> {
    let text = std::fs::read_to_string("/proc/interrupts")?;
    let header = text.lines().next().unwrap_or_default();
    header
        .split_whitespace()
        .position(|c| c == format!("CPU{cpu}"))
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("CPU{cpu} not in /proc/interrupts")))
}

/// Write then zap one page `iters` times: one TLB flush of this mm per iteration.
fn zap_loop(page: *mut u8, iters: u64) {
    for i in 0..iters {
        // SAFETY: `page` is a PAGE-sized private anonymous mapping owned by the caller.
        unsafe {
            std::ptr::write_volatile(page, i as u8);
            libc::madvise(page as *mut libc::c_void, PAGE, libc::MADV_DONTNEED);
        }
    }
}

/// The "local" phase: the same loop in a forked child on this CPU; returns its thread CPU ns.
/// The child does only system calls and stores (no allocation: this process has threads).
fn zap_loop_in_child(iters: u64) -> io::Result<u64> {
    let mut fds = [0 as libc::c_int; 2];
    sys::check(unsafe { libc::pipe(fds.as_mut_ptr()) }, "pipe")?;
    // SAFETY: fork; the child only runs async-signal-safe calls and _exits.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        unsafe {
            let p = libc::mmap(std::ptr::null_mut(), PAGE, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0);
            let mut cpu: u64 = u64::MAX;
            if p != libc::MAP_FAILED {
                let t0 = thread_cpu_ns();
                zap_loop(p as *mut u8, iters);
                cpu = thread_cpu_ns() - t0;
            }
            libc::write(fds[1], &cpu as *const u64 as *const libc::c_void, 8);
            libc::_exit(0);
        }
    }
    unsafe { libc::close(fds[1]) };
    let mut cpu: u64 = u64::MAX;
    let n = unsafe { libc::read(fds[0], &mut cpu as *mut u64 as *mut libc::c_void, 8) };
    unsafe {
        libc::close(fds[0]);
        if pid > 0 {
            libc::waitpid(pid, std::ptr::null_mut(), 0);
        }
    }
    if pid < 0 || n != 8 || cpu == u64::MAX {
        return Err(io::Error::other("the local-phase child failed"));
    }
    Ok(cpu)
}

/// Restores the calling thread's affinity on drop.
struct AffinityGuard(libc::cpu_set_t);
impl Drop for AffinityGuard {
    fn drop(&mut self) {
        // SAFETY: a set read by sched_getaffinity.
        unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &self.0) };
    }
}

/// Runs the probe. Ok(None) when it cannot apply here: fewer than two CPUs, or no TLB-flush
/// IPIs on this architecture.
pub fn tlb_shootdown(iters: u64, rounds: usize) -> io::Result<Option<TlbReport>> {
    let saved = affinity()?;
    // SAFETY: CPU_ISSET reads a set sched_getaffinity filled.
    let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize).filter(|&c| unsafe { libc::CPU_ISSET(c, &saved) }).collect();
    if cpus.len() < 2 {
        return Ok(None);
    }
    let (a, b) = (cpus[0], cpus[1]);
    let column = interrupts_column(b)?;
    if tlb_interrupts_on(column).is_err() {
        return Ok(None);
    }
    let _restore = AffinityGuard(saved);
    let spins = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let spin = Arc::new(AtomicBool::new(false));
    // The peer is started before this thread pins itself and turns SCHED_FIFO: a thread
    // inherits both, and a FIFO peer on the flusher's CPU would wait behind its spin forever.
    let peer = {
        let (spins, stop, spin) = (spins.clone(), stop.clone(), spin.clone());
        std::thread::spawn(move || -> io::Result<()> {
            pin_to(b)?;
            let _fifo = sys::FifoPriority::acquire();
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                if spin.load(Ordering::Relaxed) {
                    n += 1;
                    spins.store(n, Ordering::Relaxed);
                } else {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
            }
            Ok(())
        })
    };
    pin_to(a)?;
    let _fifo = sys::FifoPriority::acquire();
    let result = run_rounds(iters, rounds, column, &spins, &spin);
    stop.store(true, Ordering::Relaxed);
    let peer_result = peer.join().map_err(|_| io::Error::other("the peer thread panicked"))?;
    let rounds = result?;
    peer_result?;
    Ok(summarize(&rounds).map(|(initiator_ns, receiver_ns, ipis_per_flush)| TlbReport {
        cpu_flusher: a,
        cpu_peer: b,
        initiator_ns,
        receiver_ns,
        ipis_per_flush,
        rounds,
    }))
}

/// The peer spins only through a round's two phases: a SCHED_FIFO task that spins without
/// pause is throttled (the real-time budget, or since 6.12 the fair server, gives other tasks
/// 50 ms of each second), and a throttled peer neither takes IPIs nor spins.
fn run_rounds(iters: u64, rounds: usize, column: usize, spins: &AtomicU64, spin: &AtomicBool) -> io::Result<Vec<TlbRound>> {
    let page = Region::map(PAGE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1)?;
    let mut out = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        spin.store(true, Ordering::Relaxed);
        let before = spins.load(Ordering::Relaxed);
        let deadline = now_ns() + 1_000_000_000;
        while spins.load(Ordering::Relaxed) == before {
            if now_ns() > deadline {
                return Err(io::Error::new(io::ErrorKind::TimedOut, "the peer thread did not start spinning within 1 s"));
            }
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
        let (i0, s0, w0, c0) = (tlb_interrupts_on(column)?, spins.load(Ordering::Relaxed), now_ns(), thread_cpu_ns());
        zap_loop(page.ptr, iters);
        let (c1, w1, s1, i1) = (thread_cpu_ns(), now_ns(), spins.load(Ordering::Relaxed), tlb_interrupts_on(column)?);
        let (s2, w2) = (spins.load(Ordering::Relaxed), now_ns());
        let local_cpu_ns = zap_loop_in_child(iters)?;
        let (w3, s3, i2) = (now_ns(), spins.load(Ordering::Relaxed), tlb_interrupts_on(column)?);
        out.push(TlbRound {
            iters,
            ipis: i1 - i0,
            local_ipis: i2 - i1,
            ipi_cpu_ns: c1 - c0,
            local_cpu_ns,
            ipi_wall_ns: w1 - w0,
            local_wall_ns: w3 - w2,
            peer_ipi_spins: s1 - s0,
            peer_local_spins: s3 - s2,
        });
        spin.store(false, Ordering::Relaxed);
        // As long again asleep: the real-time budget refills.
        std::thread::sleep(std::time::Duration::from_nanos((w3 - w0).max(50_000_000)));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const INTERRUPTS: &str = "            CPU0       CPU1       \n   0:         45          0   IO-APIC    2-edge      timer\n NMI:          0          0   Non-maskable interrupts\n TLB:    6666702    5551423   TLB shootdowns\n";

    #[test]
    fn the_tlb_line_is_read_per_cpu_column() {
        assert_eq!(tlb_interrupts(INTERRUPTS), Some(vec![6_666_702, 5_551_423]));
        assert_eq!(tlb_interrupts("           CPU0\n  0: 1 IO-APIC timer\n"), None);
    }

    fn round(ipis: u64, ipi_cpu: u64, ipi_spins: u64) -> TlbRound {
        TlbRound {
            iters: 1000,
            ipis,
            local_ipis: 0,
            ipi_cpu_ns: ipi_cpu,
            local_cpu_ns: 3_000_000,
            ipi_wall_ns: 13_000_000,
            local_wall_ns: 3_000_000,
            peer_ipi_spins: ipi_spins,
            peer_local_spins: 12_000_000,
        }
    }

    #[test]
    fn costs_are_per_ipi_counted_not_per_flush() {
        // 950 IPIs for 1000 flushes: 9.5 ms more CPU is 10 us per IPI, and a peer that spun
        // 4/ns in the local phase and lost 5.7 ms of its 13 ms is 6 us per IPI.
        let r = round(950, 12_500_000, 4 * (13_000_000 - 5_700_000));
        let (initiator, receiver) = r.per_ipi().unwrap();
        assert!((initiator - 10_000.0).abs() < 1e-6, "{initiator}");
        assert!((receiver.unwrap() - 6_000.0).abs() < 1e-6, "{receiver:?}");
    }

    #[test]
    fn a_round_without_ipis_gives_no_figure_and_the_median_skips_it() {
        let none = round(0, 3_000_000, 52_000_000);
        assert_eq!(none.per_ipi(), None);
        let rounds = [none, round(1000, 13_000_000, 40_000_000), round(1000, 15_000_000, 40_000_000), round(1000, 11_000_000, 40_000_000)];
        let (initiator, receiver, per_flush) = summarize(&rounds).unwrap();
        assert!((initiator - 10_000.0).abs() < 1e-6, "{initiator}");
        assert!((receiver.unwrap() - 3_000.0).abs() < 1e-6, "{receiver:?}");
        assert!((per_flush - 0.75).abs() < 1e-9);
        assert_eq!(summarize(&rounds[..1]), None);
    }

    #[test]
    fn a_peer_that_missed_flushes_gives_no_receiver_figure() {
        // The peer was off its CPU for part of the phase (800 IPIs for 1000 flushes would do;
        // 500 is well below the tenth allowed): its lost spins are not the IPIs' cost.
        let r = round(500, 8_000_000, 20_000_000);
        let (initiator, receiver) = r.per_ipi().unwrap();
        assert!((initiator - 10_000.0).abs() < 1e-6);
        assert_eq!(receiver, None);
        assert_eq!(summarize(&[r]).unwrap().1, None);
    }
}
