//! Measurements of the host for `swaplab calibrate`.
//!
//! * Device: O_DIRECT I/O on a file in the swap file's file system — 4 KiB random reads and
//!   writes at queue depth 1 (latency), 1 MiB sequential reads and writes (bandwidth), and
//!   4 KiB random reads at queue depths 1..32 with one thread per outstanding request
//!   (parallelism = peak IOPS x QD1 latency, the model's "requests served at once").
//!   QD1 requests run SCHED_FIFO (a busy machine's run queue would otherwise add its waits to
//!   every latency) and are kept as quantile tables (random and sequential reads, alone and
//!   beside a writer issuing 128 KiB writes; random writes; kinds that go in one table set are
//!   measured interleaved in rounds, so a drifting disk is not read as a difference between
//!   them): the simulator samples access times
//!   from them (crates/core/src/device/service.rs), with the submitting thread's CPU time per
//!   request beside each (the fit takes it out of the read tables: the fault's CPU cost holds it).
//! * CPU costs through the real kernel, as the thread's CPU time (CLOCK_THREAD_CPUTIME_ID: the
//!   simulator models contention for CPUs itself, so a cost must not include waiting for one):
//!   a resident touch, a minor fault (first write to an anonymous page: allocate + zero + map),
//!   a cache-hit fault (a file page in the page cache mapped by a fault with no cached
//!   neighbour), each further page fault-around maps, and a major fault (the same page not
//!   cached: read from the device through the fault path; its wall time is kept too). Every
//!   touch is made as the host worker makes it (`worker::timed`): the costs describe the
//!   program the host runner runs, clock reads included.

use crate::sys::{self, now_ns, thread_cpu_ns, Region};
use crate::worker::{timed, touch_word, word_offset};
use serde::Serialize;
use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use swaplab_core::rng::Rng;
use swaplab_core::stats::{Histogram, Percentiles};

const PAGE: usize = 4096;

#[derive(Clone, Debug, Serialize)]
pub struct QdPoint {
    pub queue_depth: u32,
    pub iops: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct DeviceReport {
    pub file: String,
    pub file_bytes: u64,
    /// How the QD1 measurements were scheduled ("fifo": SCHED_FIFO, so that other load on the
    /// machine does not add run-queue waits to the latencies; "other" when that was refused).
    pub sched: String,
    pub rand_read_ns: Percentiles,
    pub rand_write_ns: Percentiles,
    pub seq_read_ns: Percentiles,
    pub rand_read_writing_ns: Percentiles,
    pub seq_read_writing_ns: Percentiles,
    /// The QD1 4 KiB request times (ns, transfer included) at [`QUANTILE_GRID`], per case.
    pub quantiles: Qd1Quantiles,
    /// The submitting thread's mean CPU time per QD1 request, per case (ns): the part of each
    /// request time the thread spent running rather than waiting for the device.
    pub qd1_cpu_ns: Qd1Cpu,
    pub seq_read_bytes_per_s: f64,
    pub seq_write_bytes_per_s: f64,
    pub read_qd: Vec<QdPoint>,
    /// peak IOPS over the queue depths x mean QD1 read latency.
    pub parallelism: f64,
}

/// Cumulative probabilities at which the QD1 latency tables are taken: the body in steps of
/// 10%, the tail finer, the extremes (fastest and slowest request) included.
pub const QUANTILE_GRID: [f64; 18] = [0.0, 0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995, 0.999, 1.0];

/// The submitter's mean CPU per QD1 request, per case of [`Qd1Quantiles`].
#[derive(Clone, Debug, Serialize)]
pub struct Qd1Cpu {
    pub rand_read: f64,
    pub seq_read: f64,
    pub rand_read_writing: f64,
    pub seq_read_writing: f64,
    pub rand_write: f64,
}

/// QD1 4 KiB request times at [`QUANTILE_GRID`]: random and sequential reads on an idle device
/// and beside a writer, random writes.
#[derive(Clone, Debug, Serialize)]
pub struct Qd1Quantiles {
    pub p: Vec<f64>,
    pub rand_read: Vec<u64>,
    pub seq_read: Vec<u64>,
    pub rand_read_writing: Vec<u64>,
    pub seq_read_writing: Vec<u64>,
    pub rand_write: Vec<u64>,
}

fn grid(h: &Histogram) -> Vec<u64> {
    QUANTILE_GRID.iter().map(|&q| h.quantile(q)).collect()
}

#[derive(Clone, Debug, Serialize)]
pub struct FaultReport {
    pub pages: u64,
    pub resident_touch_ns: f64,
    pub minor_fault_ns: f64,
    /// A cache-hit fault that maps its one page (no cached neighbour for fault-around).
    pub cache_hit_fault_ns: f64,
    /// Each further page a cache-hit fault maps by fault-around, its first touch included.
    pub fault_around_page_ns: f64,
    /// Wall time of a major fault (device read included).
    pub major_fault_ns: f64,
    /// The faulting thread's CPU time per major fault (the read's wait excluded).
    pub major_fault_cpu_ns: f64,
    pub major_fault_pct: Percentiles,
    /// Thread CPU of a buffered 4 KiB read() of a page in the page cache.
    pub cached_read_ns: f64,
    /// Thread CPU of a buffered 4 KiB write() of a page not yet in the file (a new page).
    pub new_page_write_ns: f64,
}

struct Fd(libc::c_int);
impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: our descriptor.
        unsafe { libc::close(self.0) };
    }
}

fn open(path: &Path, flags: libc::c_int) -> io::Result<Fd> {
    let c = CString::new(path.as_os_str().as_bytes()).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in path"))?;
    // SAFETY: valid C string.
    let fd = unsafe { libc::open(c.as_ptr(), flags | libc::O_CLOEXEC, 0o600) };
    sys::check(fd, &format!("open {}", path.display()))?;
    Ok(Fd(fd))
}

fn pio(fd: &Fd, buf: &Region, len: usize, off: u64, write: bool) -> io::Result<()> {
    // SAFETY: buf is a page-aligned mapping of at least len bytes (O_DIRECT alignment).
    let n = unsafe {
        if write {
            libc::pwrite(fd.0, buf.ptr as *const libc::c_void, len, off as libc::off_t)
        } else {
            libc::pread(fd.0, buf.ptr as *mut libc::c_void, len, off as libc::off_t)
        }
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    if n as usize != len {
        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "short transfer"));
    }
    Ok(())
}

fn fill(buf: &Region, seed: u64) {
    let mut r = Rng::new(seed);
    // SAFETY: writing within our mapping, 8-byte aligned.
    for i in 0..buf.len / 8 {
        unsafe { *(buf.ptr as *mut u64).add(i) = r.next_u64() };
    }
}

/// Measure the device under `dir` with a `file_bytes` file (created, then removed).
pub fn device(dir: &Path, file_bytes: u64, seconds: f64) -> io::Result<DeviceReport> {
    let path: PathBuf = dir.join(format!("swaplab-calibrate-{}.data", std::process::id()));
    let res = device_inner(&path, file_bytes, seconds);
    let _ = std::fs::remove_file(&path);
    res
}

fn device_inner(path: &Path, file_bytes: u64, seconds: f64) -> io::Result<DeviceReport> {
    const CHUNK: usize = 1 << 20;
    let file_bytes = (file_bytes / CHUNK as u64).max(8) * CHUNK as u64;
    let fd = open(path, libc::O_RDWR | libc::O_CREAT | libc::O_TRUNC | libc::O_DIRECT)?;
    let big = Region::map(CHUNK, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1)?;
    fill(&big, 1);
    // Sequential write (also gives the file real blocks: reads of unwritten extents would
    // not touch the device).
    let t = now_ns();
    let mut off = 0;
    while off < file_bytes {
        pio(&fd, &big, CHUNK, off, true)?;
        off += CHUNK as u64;
    }
    // SAFETY: valid fd.
    unsafe { libc::fdatasync(fd.0) };
    let seq_write = file_bytes as f64 / ((now_ns() - t) as f64 / 1e9);
    let t = now_ns();
    let mut off = 0;
    while off < file_bytes {
        pio(&fd, &big, CHUNK, off, false)?;
        off += CHUNK as u64;
    }
    let seq_read = file_bytes as f64 / ((now_ns() - t) as f64 / 1e9);
    let pages = file_bytes / PAGE as u64;
    let fifo = sys::FifoPriority::acquire();
    let sched = if fifo.is_some() { "fifo" } else { "other" };
    let kind = |pattern: Pattern, write: bool, seed: u64| Qd1Kind { pattern, write, seed };
    let mut reads = qd1_runs(&fd, pages, 2.0 * seconds, &[kind(Pattern::Random, false, 3), kind(Pattern::Sequential, false, 5)])?;
    let (sr, rr) = (reads.pop().expect("two kinds"), reads.pop().expect("two kinds"));
    // Writes alone after the reads: a write leaves the host's cache dirty behind it, and reads
    // measured beside that would not be "alone".
    let rw = qd1_runs(&fd, pages, seconds, &[kind(Pattern::Random, true, 4)])?.pop().expect("one kind");
    // SAFETY: valid fd.
    unsafe { libc::fdatasync(fd.0) };
    let mut beside = beside_a_writer(path, file_bytes, || qd1_runs(&fd, pages, 2.0 * seconds, &[kind(Pattern::Random, false, 6), kind(Pattern::Sequential, false, 7)]))?;
    let (sr_w, rr_w) = (beside.pop().expect("two kinds"), beside.pop().expect("two kinds"));
    // SAFETY: valid fd.
    unsafe { libc::fdatasync(fd.0) };
    drop(fifo);
    let read_qd = read_iops_by_queue_depth(path, pages, seconds)?;
    let peak = read_qd.iter().map(|p| p.iops).fold(0.0, f64::max);
    let qd1_cpu_ns = Qd1Cpu { rand_read: rr.cpu_ns, seq_read: sr.cpu_ns, rand_read_writing: rr_w.cpu_ns, seq_read_writing: sr_w.cpu_ns, rand_write: rw.cpu_ns };
    let (rr, sr, rw, rr_w, sr_w) = (rr.times, sr.times, rw.times, rr_w.times, sr_w.times);
    let mean_ns = rr.sum() as f64 / rr.count().max(1) as f64;
    Ok(DeviceReport {
        file: path.display().to_string(),
        file_bytes,
        sched: sched.to_string(),
        rand_read_ns: rr.percentiles(),
        rand_write_ns: rw.percentiles(),
        seq_read_ns: sr.percentiles(),
        rand_read_writing_ns: rr_w.percentiles(),
        seq_read_writing_ns: sr_w.percentiles(),
        quantiles: Qd1Quantiles {
            p: QUANTILE_GRID.to_vec(),
            rand_read: grid(&rr),
            seq_read: grid(&sr),
            rand_read_writing: grid(&rr_w),
            seq_read_writing: grid(&sr_w),
            rand_write: grid(&rw),
        },
        qd1_cpu_ns,
        seq_read_bytes_per_s: seq_read,
        seq_write_bytes_per_s: seq_write,
        read_qd,
        parallelism: (peak * mean_ns / 1e9).max(1.0),
    })
}

#[derive(Clone, Copy)]
enum Pattern {
    /// Uniformly random 4 KiB offsets.
    Random,
    /// Consecutive 4 KiB offsets from a random start, wrapping at the end of the file (the
    /// order a page-cluster 0 swap-in of a sequential scan reads its slots).
    Sequential,
}

/// Rounds the QD1 measurements are split into. A virtual disk's speed drifts over seconds
/// (the host's own writeback, its other guests): kinds measured one after the other would
/// each see a different disk, and the drift would read as a difference between the kinds.
/// On 2026-11-27, measured back to back, sequential reads took 34.7 us of access time against
/// random reads' 21.8 us; alternated every 2 s on the same file they were within 3% of each
/// other. Interleaved in rounds, every kind samples the whole measurement window.
const QD1_ROUNDS: usize = 8;

/// One kind of QD1 request: its offsets, its direction, the seed of its offsets.
#[derive(Clone, Copy)]
struct Qd1Kind {
    pattern: Pattern,
    write: bool,
    seed: u64,
}

/// 4 KiB O_DIRECT requests of `kinds`, one at a time, interleaved in [`QD1_ROUNDS`] rounds
/// that each give every kind `seconds / QD1_ROUNDS` (so the whole takes `seconds` per kind): per kind, the request times and the
/// submitting thread's mean CPU time per request (syscall, block layer, the driver's
/// submission and completion: on a virtual disk the exits to the hypervisor dominate it).
fn qd1_runs(fd: &Fd, pages: u64, seconds: f64, kinds: &[Qd1Kind]) -> io::Result<Vec<Qd1Run>> {
    let buf = Region::map(PAGE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1)?;
    fill(&buf, kinds.first().map_or(0, |k| k.seed));
    interleaved_qd1(pages, seconds, kinds, now_ns, |kind, page| pio(fd, &buf, PAGE, page * PAGE as u64, kind.write))
}

/// The measurement loop of [`qd1_runs`] over any `request` (a test drives it with a device
/// whose speed drifts, on a virtual `clock`). Each kind keeps its own offsets across rounds (a
/// sequential kind continues where its last round stopped) and ends with at least 32 requests.
fn interleaved_qd1(pages: u64, seconds: f64, kinds: &[Qd1Kind], clock: impl Fn() -> u64, mut request: impl FnMut(Qd1Kind, u64) -> io::Result<()>) -> io::Result<Vec<Qd1Run>> {
    let mut rngs: Vec<Rng> = kinds.iter().map(|k| Rng::new(k.seed)).collect();
    let mut cursors: Vec<u64> = rngs.iter_mut().map(|r| r.below(pages)).collect();
    let mut runs: Vec<(Histogram, u64)> = kinds.iter().map(|_| (Histogram::default(), 0)).collect();
    let slice_ns = (seconds * 1e9 / QD1_ROUNDS as f64) as u64;
    for round in 0..QD1_ROUNDS {
        // Odd rounds run the kinds in reverse order, so a steady drift within a round
        // favours no kind.
        let order: Vec<usize> = if round % 2 == 0 { (0..kinds.len()).collect() } else { (0..kinds.len()).rev().collect() };
        for k in order {
            let kind = &kinds[k];
            let end = clock() + slice_ns;
            let cpu0 = thread_cpu_ns();
            let (h, cpu) = &mut runs[k];
            loop {
                cursors[k] = match kind.pattern {
                    Pattern::Random => rngs[k].below(pages),
                    Pattern::Sequential => (cursors[k] + 1) % pages,
                };
                let t0 = clock();
                request(*kind, cursors[k])?;
                let t1 = clock();
                h.record(t1 - t0);
                let last_round = round + 1 == QD1_ROUNDS;
                if t1 >= end && (!last_round || h.count() >= 32) {
                    break;
                }
            }
            *cpu += thread_cpu_ns() - cpu0;
        }
    }
    Ok(runs.into_iter().map(|(times, cpu)| Qd1Run { cpu_ns: cpu as f64 / times.count().max(1) as f64, times }).collect())
}

/// One QD1 measurement: the request times and the submitter's mean CPU per request.
struct Qd1Run {
    times: Histogram,
    cpu_ns: f64,
}

/// Run `measure` while another thread writes 128 KiB O_DIRECT requests back to back over the
/// file (a reclaimer's merged swap-out writes): how writes in flight slow reads.
fn beside_a_writer<T>(path: &Path, file_bytes: u64, measure: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    const WRITE: usize = 128 << 10;
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (stop, path) = (stop.clone(), path.to_path_buf());
        std::thread::spawn(move || -> io::Result<()> {
            let fd = open(&path, libc::O_WRONLY | libc::O_DIRECT)?;
            let buf = Region::map(WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1)?;
            fill(&buf, 8);
            let chunks = (file_bytes / WRITE as u64).max(1);
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                pio(&fd, &buf, WRITE, (i % chunks) * WRITE as u64, true)?;
                i += 1;
            }
            Ok(())
        })
    };
    let res = measure();
    stop.store(true, Ordering::Relaxed);
    let w = writer.join().map_err(|_| io::Error::other("writer thread panicked"))?;
    let r = res?;
    w?;
    Ok(r)
}

/// 4 KiB random reads at queue depths 1..32, one thread per outstanding request: IOPS.
fn read_iops_by_queue_depth(path: &Path, pages: u64, seconds: f64) -> io::Result<Vec<QdPoint>> {
    let mut read_qd = Vec::new();
    for qd in [1u32, 2, 4, 8, 16, 32] {
        let stop = now_ns() + (seconds * 1e9 / 2.0).max(0.2e9) as u64;
        let handles: Vec<_> = (0..qd)
            .map(|i| {
                let path = path.to_path_buf();
                std::thread::spawn(move || -> io::Result<u64> {
                    let fd = open(&path, libc::O_RDONLY | libc::O_DIRECT)?;
                    let buf = Region::map(PAGE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1)?;
                    let mut r = Rng::new(100 + i as u64);
                    let mut n = 0;
                    while now_ns() < stop {
                        pio(&fd, &buf, PAGE, r.below(pages) * PAGE as u64, false)?;
                        n += 1;
                    }
                    Ok(n)
                })
            })
            .collect();
        let t0 = now_ns();
        let mut total = 0;
        for h in handles {
            total += h.join().map_err(|_| io::Error::other("I/O thread panicked"))??;
        }
        let dt = (now_ns() - t0) as f64 / 1e9;
        read_qd.push(QdPoint { queue_depth: qd, iops: total as f64 / dt });
    }
    Ok(read_qd)
}

/// Every how many pages the lone cache-hit measurement caches one: past fault-around's
/// 64 KiB window, so that no fault finds a cached neighbour to map.
const LONE_STRIDE: usize = 32;

/// Fault costs through the real kernel, with `pages` pages per measurement. The file for the
/// cache-hit and major-fault measurements lives in `dir` (a disk file system).
///
/// Every touch goes through the worker's own timed touch (`worker::timed`, `touch_word`,
/// `word_offset`, one latency recorded per touch), so that each cost is what the host program
/// pays: a bare loop's touches overlap and cost ~7 ns on this VM, the worker's ~100 ns. Fault
/// costs are per fault the kernel counted, less the resident cost of every touch the pass
/// made (fault-around maps neighbours: with ext4's large folios a cache-hit pass made ~220
/// touches per fault on this VM).
pub fn faults(dir: &Path, pages: u64) -> io::Result<FaultReport> {
    let len = pages as usize * PAGE;
    let (minor, resident) = anon_touch_costs(pages)?;
    let mut scratch = Histogram::default();
    // A file with real data, cached.
    let path = dir.join(format!("swaplab-calibrate-faults-{}.data", std::process::id()));
    let result = (|| -> io::Result<((f64, f64), f64, f64, Histogram)> {
        {
            use std::io::Write;
            let mut f = std::fs::File::create(&path)?;
            let chunk = vec![0x5au8; 1 << 20];
            let mut left = len;
            while left > 0 {
                let n = left.min(chunk.len());
                f.write_all(&chunk[..n])?;
                left -= n;
            }
            f.sync_all()?;
        }
        let fd = open(&path, libc::O_RDWR)?;
        // Cache-hit faults: the pages are in the page cache (just written), not mapped here.
        // Fault-around (and large page-cache folios) map several cached neighbours per fault,
        // so the time is per fault the kernel counted, not per page touched.
        let map = Region::map(len, libc::MAP_SHARED, fd.0)?;
        map.advise(libc::MADV_RANDOM);
        let (hit_cpu, hits) = pass(&map, &mut (0..pages as usize), false, &mut scratch);
        drop(map);
        // Major faults: drop the cache, then fault pages in random order, one read each.
        // SAFETY: valid fd.
        unsafe { libc::posix_fadvise(fd.0, 0, 0, libc::POSIX_FADV_DONTNEED) };
        let map = Region::map(len, libc::MAP_SHARED, fd.0)?;
        map.advise(libc::MADV_RANDOM);
        let mut order: Vec<usize> = (0..pages as usize).collect();
        let mut r = Rng::new(9);
        for i in (1..order.len()).rev() {
            order.swap(i, r.below(i as u64 + 1) as usize);
        }
        let mut h = Histogram::default();
        let (_, maj0) = sys::thread_faults();
        let (major_cpu, _) = pass(&map, &mut order.iter().copied(), false, &mut h);
        let (_, maj1) = sys::thread_faults();
        if maj1 - maj0 < pages / 2 {
            return Err(io::Error::other(format!("expected ~{pages} major faults, the kernel counted {}", maj1 - maj0)));
        }
        let major = h.sum() as f64 / h.count().max(1) as f64;
        drop(map);
        // A cache hit that maps its page alone: only every LONE_STRIDE-th page cached (read
        // with readahead off), so fault-around finds no neighbour to map. The every-page pass
        // above mapped `pages / hits` per fault: the rest of its cost per fault is theirs.
        // SAFETY: valid fd.
        unsafe {
            libc::posix_fadvise(fd.0, 0, 0, libc::POSIX_FADV_DONTNEED);
            libc::posix_fadvise(fd.0, 0, 0, libc::POSIX_FADV_RANDOM);
        }
        let buf = Region::map(PAGE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1)?;
        let lone_pages: Vec<usize> = (0..pages as usize).step_by(LONE_STRIDE).collect();
        for &p in &lone_pages {
            pio(&fd, &buf, PAGE, (p * PAGE) as u64, false)?;
        }
        let map = Region::map(len, libc::MAP_SHARED, fd.0)?;
        map.advise(libc::MADV_RANDOM);
        let (lone_cpu, lone_faults) = pass(&map, &mut lone_pages.iter().copied(), false, &mut scratch);
        let lone = fault_cost(lone_cpu, lone_faults, lone_pages.len() as u64, resident);
        let per_fault = fault_cost(hit_cpu, hits, pages, resident);
        let mapped_per_fault = pages as f64 / hits.max(1.0);
        let around = if mapped_per_fault > 1.0 { ((per_fault - lone) / (mapped_per_fault - 1.0)).max(0.0) } else { 0.0 };
        Ok(((lone, around), major, fault_cost(major_cpu, (maj1 - maj0) as f64, pages, resident), h))
    })();
    let _ = std::fs::remove_file(&path);
    let ((hit, fault_around_page_ns), major, major_cpu, h) = result?;
    let (new_page_write_ns, cached_read_ns) = buffered_io_costs(dir, pages)?;
    Ok(FaultReport {
        pages,
        resident_touch_ns: resident,
        minor_fault_ns: minor,
        cache_hit_fault_ns: hit,
        fault_around_page_ns,
        major_fault_ns: major,
        major_fault_cpu_ns: major_cpu,
        major_fault_pct: h.percentiles(),
        cached_read_ns,
        new_page_write_ns,
    })
}

/// Buffered I/O as the worker does it (`pwrite`/`pread` of one whole page, through
/// `worker::timed`), thread CPU per call: writes of `pages` new pages in order to a fresh file
/// in `dir` (page-cache allocation, memory-cgroup charge, the file system's write_begin and
/// write_end for a new block, the copy, dirtying), then reads of the same pages, now cached.
/// Returns (new-page write ns, cached read ns).
fn buffered_io_costs(dir: &Path, pages: u64) -> io::Result<(f64, f64)> {
    let path = dir.join(format!("swaplab-calibrate-bufio-{}.data", std::process::id()));
    let result = (|| -> io::Result<(f64, f64)> {
        let fd = open(&path, libc::O_RDWR | libc::O_CREAT | libc::O_TRUNC)?;
        let buf = Region::map(PAGE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1)?;
        // SAFETY: one page, readable and writable.
        unsafe { std::ptr::write_bytes(buf.ptr, 0x5a, PAGE) };
        let mut h = Histogram::default();
        let mut per_call = |write: bool| -> io::Result<f64> {
            let t0 = thread_cpu_ns();
            for p in 0..pages {
                let (r, a, b) = timed(|| pio(&fd, &buf, PAGE, p * PAGE as u64, write));
                r?;
                h.record(b - a);
            }
            Ok((thread_cpu_ns() - t0) as f64 / pages as f64)
        };
        let new_write = per_call(true)?;
        let cached_read = per_call(false)?;
        Ok((new_write, cached_read))
    })();
    let _ = std::fs::remove_file(&path);
    result
}

/// One pass over `r` touching every page in `order` through the worker's timed touch: (thread
/// CPU ns, faults the kernel counted). Every page in `order` lies inside `r`, which is readable
/// and writable.
fn pass(r: &Region, order: &mut dyn Iterator<Item = usize>, write: bool, h: &mut Histogram) -> (f64, f64) {
    let (min0, maj0) = sys::thread_faults();
    let t0 = thread_cpu_ns();
    let mut sink = 0u64;
    for p in order {
        assert!(word_offset(p) + 8 <= r.len, "page {p} outside the mapping");
        // SAFETY: inside the mapping (checked above), which is readable and writable.
        let (got, a, b) = timed(|| unsafe { touch_word(r.ptr.add(word_offset(p)) as *mut u64, write, p as u64 | 1) });
        sink = sink.wrapping_add(got);
        h.record(b - a);
    }
    std::hint::black_box(sink);
    let cpu = (thread_cpu_ns() - t0) as f64;
    let (min1, maj1) = sys::thread_faults();
    (cpu, ((min1 - min0) + (maj1 - maj0)) as f64)
}

/// Anonymous memory, `pages` pages: (minor fault ns: a first write's cost beyond a resident
/// touch, resident touch ns: the cheapest of three passes over the pages once present).
///
/// The pages are first written once in a mapping that is then unmapped, so the measured faults
/// get frames the kernel has handed out before (the page allocator's per-CPU lists give back
/// the most recently freed first). A virtual machine's guest frame that was never used costs its
/// first toucher a fault in the hypervisor as well (measured on this project's VM, 2026-11-27:
/// first writes to 2 GiB cost 4.5 us per page on frames never used since boot, 1.6 us on the
/// same mapping's frames reused); the simulated workloads that swap recycle their frames, and a
/// bare-metal machine has no such cost.
fn anon_touch_costs(pages: u64) -> io::Result<(f64, f64)> {
    {
        let warm = Region::map(pages as usize * PAGE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1)?;
        pass(&warm, &mut (0..pages as usize), true, &mut Histogram::default());
    }
    let anon = Region::map(pages as usize * PAGE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1)?;
    let mut h = Histogram::default();
    let per_touch = |cpu: f64| cpu / pages as f64;
    let first = per_touch(pass(&anon, &mut (0..pages as usize), true, &mut h).0);
    let resident = (0..3).map(|_| per_touch(pass(&anon, &mut (0..pages as usize), true, &mut h).0)).fold(f64::MAX, f64::min);
    Ok((first - resident, resident))
}

/// CPU per fault of a pass that made `touches` touches and `faults` faults: the pass's time
/// less the resident cost of every touch, over the faults (the simulator charges a faulting
/// touch both its fault cost and `resident_touch_ns`).
fn fault_cost(pass_cpu_ns: f64, faults: f64, touches: u64, resident_ns: f64) -> f64 {
    (pass_cpu_ns - touches as f64 * resident_ns).max(0.0) / faults.max(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Guards the device tables against a drifting disk: two kinds of request that cost the
    /// same on a device whose speed changes during the measurement must come out the same
    /// (measured one after the other, the second would carry the drift as its own cost).
    #[test]
    fn kinds_measured_on_a_drifting_device_see_the_same_device() {
        // The device and its clock are virtual (a request advances the clock by its cost), so
        // the machine's load cannot stretch one kind's slice: the test failed under a
        // concurrent `reproduce --all` when it busy-waited on the wall clock (stop 28).
        let clock = std::cell::Cell::new(0u64);
        let seconds = 0.2;
        // 20 us at the start, 60 us at the end of the measurement (two kinds: 2 x seconds).
        let drifting = |_: Qd1Kind, _: u64| {
            let elapsed = clock.get() as f64 / (2.0 * seconds * 1e9);
            let cost = (20_000.0 + 40_000.0 * elapsed.min(1.0)) as u64;
            clock.set(clock.get() + cost);
            Ok(())
        };
        let kinds = [Qd1Kind { pattern: Pattern::Random, write: false, seed: 1 }, Qd1Kind { pattern: Pattern::Sequential, write: false, seed: 2 }];
        let runs = interleaved_qd1(1 << 16, seconds, &kinds, || clock.get(), drifting).unwrap();
        let median = |r: &Qd1Run| r.times.percentiles().p50 as f64;
        let (a, b) = (median(&runs[0]), median(&runs[1]));
        assert!(runs.iter().all(|r| r.times.count() >= 32));
        assert!((a - b).abs() / a.min(b) < 0.10, "medians {a:.0} and {b:.0} ns: the kinds saw different parts of the drift");
    }

    /// Guards the resident touch against being measured in a bare loop, where the touches
    /// overlap and cost a few ns, while the host worker times every touch with two clock reads
    /// (the simulated program would then run faster than the host's).
    #[test]
    fn resident_touch_is_measured_as_the_worker_times_its_touches() {
        let (_, resident) = anon_touch_costs(4096).unwrap();
        let clock_read = (0..5)
            .map(|_| {
                let t0 = thread_cpu_ns();
                let mut sink = 0u64;
                for _ in 0..100_000 {
                    sink = sink.wrapping_add(now_ns());
                }
                std::hint::black_box(sink);
                (thread_cpu_ns() - t0) as f64 / 100_000.0
            })
            .fold(f64::MAX, f64::min);
        assert!(resident >= 1.5 * clock_read, "resident touch {resident:.1} ns, one clock read {clock_read:.1} ns: the touch is not timed as the worker times it");
    }
}
