//! One task instance of a workload, replayed on real memory.
//!
//! The worker builds its [`Program`] with [`program_for`] — the simulator's own constructor —
//! so for a given file and seed it performs the very same touches, in the same order, as the
//! simulated task. Each touch is one store (write) or one volatile load (read) of a word in
//! the page, timed with CLOCK_MONOTONIC; the phase's `compute` is spent in a busy loop after
//! each touch, as the simulator charges it.
//!
//! A buffered-I/O phase (`access = "syscall"`) performs each of its touches as one pread() or
//! pwrite() of the whole page at the page's offset in the mapping's data file, through the
//! same open file as the mapping (so the file's readahead state and its `posix_fadvise` advice
//! are shared by faults and read(), as `struct file`'s `f_ra` is in the kernel and as the
//! simulator keeps one readahead state per inode). A written page carries its page number, as
//! the data file's pages do.
//!
//! Faults are counted with getrusage(RUSAGE_THREAD) deltas (exact). Which touches faulted is
//! not observable per touch without a system call per touch, so the fault-latency histogram
//! records the touches whose latency exceeded `fault_threshold_ns` (calibrated: a resident
//! touch on this host takes well under it, the cheapest fault well over it); the result
//! carries both the exact fault counts and the number of touches so classified.

use crate::content::PageFiller;
use crate::sys::{self, now_ns, Region};
use serde::Serialize;
use std::ffi::CString;
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use swaplab_core::config::{self, MappingKind, Resolved, PAGE_SIZE};
use swaplab_core::stats::{Histogram, Percentiles, PhaseTimes};
use swaplab_core::workload::{program_for, Op, Program, Step, Touch};

#[derive(Clone, Debug)]
pub struct WorkerOptions {
    /// Directory (on a disk file system) for file-backed mappings' files.
    pub workdir: PathBuf,
    /// Touches slower than this count as faults in the fault-latency histogram.
    pub fault_threshold_ns: u64,
}

impl Default for WorkerOptions {
    fn default() -> Self {
        WorkerOptions { workdir: std::env::temp_dir(), fault_threshold_ns: 1_000 }
    }
}

struct Mapping {
    region: Region,
    pages: u64,
    file: Option<PathBuf>,
    /// The open data file of a file mapping (for buffered read()/write() phases).
    fd: Option<std::fs::File>,
}

impl Drop for Mapping {
    fn drop(&mut self) {
        if let Some(p) = &self.file {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// The measurements of one task instance (fields of the result schema's `tasks` entries,
/// with absolute CLOCK_MONOTONIC times that the orchestrator rebases).
#[derive(Clone, Debug, Serialize)]
pub struct WorkerResult {
    pub name: String,
    pub instance: u32,
    pub pid: u32,
    pub start_mono_ns: u64,
    pub end_mono_ns: u64,
    pub elapsed_ns: u64,
    pub touches: u64,
    /// Elapsed time of each phase, as the simulator keeps it (swaplab_core::stats::PhaseTimes).
    pub phase_elapsed_ns: Vec<u64>,
    /// The thread's CPU time (CLOCK_THREAD_CPUTIME_ID) over the run, and per phase.
    pub cpu_ns: u64,
    pub phase_cpu_ns: Vec<u64>,
    pub minor_faults: u64,
    pub major_faults: u64,
    pub touch_latency_ns: Percentiles,
    pub fault_latency_ns: Percentiles,
    /// Touches classified as faults by latency (compare with minor_faults + major_faults).
    pub slow_touches: u64,
    pub fault_threshold_ns: u64,
    pub throughput_bytes_per_s: f64,
    /// Pages read with read() and written with write() (buffered-I/O phases).
    pub file_reads: u64,
    pub file_writes: u64,
    /// Stopped by its time limit rather than by finishing its phases.
    pub time_limited: bool,
    /// Total wall time spent in compute busy loops.
    pub compute_ns: u64,
    /// Time runnable but waiting for a CPU (second field of /proc/thread-self/schedstat).
    pub runqueue_wait_ns: u64,
}

/// The byte offset in its mapping of the word a touch of `page` reads or writes: one word per
/// page, at an offset that varies with the page so that resident touches do not all fall into
/// one cache set.
#[inline(always)]
pub(crate) fn word_offset(page: usize) -> usize {
    page * PAGE_SIZE as usize + ((page & 63) << 6)
}

/// One memory touch of the host program: a volatile store of `value` (write) or a volatile
/// load (read, returned so the caller can sink it).
///
/// # Safety
/// `word` lies inside a mapping that is readable, and writable for a write.
#[inline(always)]
pub(crate) unsafe fn touch_word(word: *mut u64, write: bool, value: u64) -> u64 {
    if write {
        std::ptr::write_volatile(word, value);
        0
    } else {
        std::ptr::read_volatile(word)
    }
}

/// Run `access` between two CLOCK_MONOTONIC reads, as the worker times every touch; returns
/// its result and the two clock values.
///
/// The clock reads are part of what the host program costs: each is an ordered `rdtsc` in the
/// vDSO, so no touch overlaps the next as the touches of a bare loop do (on this VM a resident
/// touch costs ~7 ns in a bare loop and ~100 ns timed). `calibrate` measures the resident
/// touch and the faults through this function, so that the simulator's `resident_touch_ns`
/// describes the program the host runner actually runs.
#[inline(always)]
pub(crate) fn timed<R>(access: impl FnOnce() -> R) -> (R, u64, u64) {
    let t0 = now_ns();
    let r = access();
    let t1 = now_ns();
    (r, t0, t1)
}

/// Run-queue wait of the calling thread so far, from schedstat (0 when unavailable).
fn runqueue_wait_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}

/// A prepared task instance: mappings created (not yet touched), program built.
pub struct Worker {
    name: String,
    instance: u32,
    mappings: Vec<Mapping>,
    program: Program,
    /// Per phase: (touches per pass, compute ns per touch).
    phases: Vec<(u64, u64)>,
    time_limit_ns: Option<u64>,
    start_delay_ns: u64,
    opts: WorkerOptions,
    /// Writes each page's content at its first write when the workload has a `[content]`
    /// model (content.rs); without one, pages hold only the words the touches write.
    filler: Option<PageFiller>,
}

fn create_file(path: &Path, pages: u64) -> io::Result<std::fs::File> {
    let mut f = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(path)?;
    // Real data, not holes: a first touch of a file page must read it from the disk, and
    // reclaim must write a dirtied page back (kernel-algorithms.md §3.10).
    let mut chunk = vec![0u8; 1 << 20];
    let mut left = pages * PAGE_SIZE;
    let mut page_no = 0u64;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        for (i, pg) in chunk[..n].chunks_mut(PAGE_SIZE as usize).enumerate() {
            pg[..8].copy_from_slice(&(page_no + i as u64 + 1).to_le_bytes());
        }
        f.write_all(&chunk[..n])?;
        page_no += (n as u64) / PAGE_SIZE;
        left -= n as u64;
    }
    f.sync_all()?;
    // Drop the file's pages from the page cache: the run starts with none of them resident.
    // SAFETY: valid fd.
    unsafe { libc::posix_fadvise(std::os::unix::io::AsRawFd::as_raw_fd(&f), 0, 0, libc::POSIX_FADV_DONTNEED) };
    Ok(f)
}

/// The mapping's `advice` as a program gives it: madvise on the mapping (VM_RAND_READ /
/// VM_SEQ_READ for its faults) and posix_fadvise on the file (FMODE_RANDOM / doubled
/// ra_pages for read()); the mapping holds the same open file, so the fadvise outlives `f`.
fn apply_advice(region: &crate::sys::Region, f: &std::fs::File, advice: swaplab_core::config::pagecache::Advice) {
    use swaplab_core::config::pagecache::Advice;
    let (madv, fadv) = match advice {
        Advice::Normal => return,
        Advice::Random => (libc::MADV_RANDOM, libc::POSIX_FADV_RANDOM),
        Advice::Sequential => (libc::MADV_SEQUENTIAL, libc::POSIX_FADV_SEQUENTIAL),
    };
    // SAFETY: the region is a live mapping of `len` bytes and the fd is open; both calls only
    // set hints and cannot fail on valid arguments.
    unsafe {
        libc::madvise(region.ptr as *mut libc::c_void, region.len, madv);
        libc::posix_fadvise(std::os::unix::io::AsRawFd::as_raw_fd(f), 0, 0, fadv);
    }
}

impl Worker {
    /// Parse `text` (with `overrides`), build task `task_idx` instance `instance`'s program and
    /// create its mappings. Nothing is touched yet, so nothing is charged to any memory
    /// cgroup until [`Worker::run`].
    pub fn prepare(text: &str, source: &str, overrides: &[String], task_idx: usize, instance: u32, opts: WorkerOptions) -> Result<Worker, String> {
        let resolved: Resolved = config::load(text, source, overrides).map_err(|e| e.to_string())?;
        let cfg = &resolved.config;
        let task = cfg.tasks.get(task_idx).ok_or_else(|| format!("no task {task_idx} (the file has {})", cfg.tasks.len()))?;
        if instance >= task.instances {
            return Err(format!("task {:?} has {} instances, asked for instance {instance}", task.name, task.instances));
        }
        let program = program_for(&resolved, task_idx, instance);
        if program.has_messages() {
            // Message channels (engine/ipc.rs) need peers and sockets the host runner does not set up.
            return Err(format!(
                "task {:?}: message phases (pattern = \"send\"/\"recv\") are unavailable on host; run this workload in the simulator",
                task.name
            ));
        }
        if program.has_requests() {
            // The worker touches pages and blocks in pread(); it neither charges a server's
            // CPU per request nor keeps reads in flight, so its timings would not be these.
            return Err(format!(
                "task {:?}: kv phases (pattern = \"kv-set\"/\"kv-get\") and iodepth above 1 are unavailable on host; run this workload in the simulator",
                task.name
            ));
        }
        let phases = task
            .phases
            .iter()
            .map(|ph| {
                let mi = task.mappings.iter().position(|m| m.name == ph.mapping).expect("validated");
                let g = swaplab_core::workload::PhaseGen::new(ph, task.mappings[mi].size.pages());
                (g.total_touches(), ph.compute.0)
            })
            .collect();
        let time_limit_ns = match (task.time_limit, cfg.sim.time_limit) {
            (Some(a), Some(b)) => Some(a.0.min(b.0.saturating_sub(task.start_delay.0))),
            (Some(a), None) => Some(a.0),
            (None, Some(b)) => Some(b.0.saturating_sub(task.start_delay.0)),
            (None, None) => None,
        };
        let mut mappings = Vec::new();
        for m in &task.mappings {
            let pages = m.size.pages();
            let len = (pages * PAGE_SIZE) as usize;
            let mapping = match m.kind {
                MappingKind::Anon => Mapping { region: Region::map(len, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1).map_err(|e| e.to_string())?, pages, file: None, fd: None },
                MappingKind::Shmem => Mapping { region: Region::map(len, libc::MAP_SHARED | libc::MAP_ANONYMOUS, -1).map_err(|e| e.to_string())?, pages, file: None, fd: None },
                MappingKind::File => {
                    let path = opts.workdir.join(format!("swaplab-{}-{}-{}-{}.data", std::process::id(), task_idx, instance, sanitize(&m.name)));
                    let f = create_file(&path, pages).map_err(|e| format!("creating {}: {e}", path.display()))?;
                    // An executable mapping is also writable here, as the simulator's is: the
                    // program may store to it like to any shared file mapping.
                    let prot = libc::PROT_READ | libc::PROT_WRITE | if m.exec { libc::PROT_EXEC } else { 0 };
                    let region = Region::map_prot(len, prot, libc::MAP_SHARED, std::os::unix::io::AsRawFd::as_raw_fd(&f));
                    let region = match region {
                        Ok(r) => r,
                        Err(e) => {
                            let _ = std::fs::remove_file(&path);
                            return Err(e.to_string());
                        }
                    };
                    apply_advice(&region, &f, m.advice);
                    Mapping { region, pages, file: Some(path), fd: Some(f) }
                }
            };
            mappings.push(mapping);
        }
        // File pages hold the file's data, not swapped memory: only anon and shmem are filled.
        let pages: Vec<u64> = mappings.iter().map(|m| if m.file.is_some() { 0 } else { m.pages }).collect();
        let filler = cfg.content.as_ref().map(|spec| PageFiller::new(spec, cfg.seed, task_idx, instance, &pages));
        Ok(Worker {
            name: task.name.clone(),
            instance,
            mappings,
            program,
            phases,
            time_limit_ns,
            start_delay_ns: task.start_delay.0,
            opts,
            filler,
        })
    }

    /// Pages in all mappings (for reporting).
    pub fn mapped_pages(&self) -> u64 {
        self.mappings.iter().map(|m| m.pages).sum()
    }

    /// Perform the program. `t0_mono_ns` is the common start of the run (CLOCK_MONOTONIC);
    /// the task starts at t0 + its start_delay.
    pub fn run(&mut self, t0_mono_ns: u64) -> WorkerResult {
        let start_at = t0_mono_ns + self.start_delay_ns;
        while now_ns() < start_at {
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
        let threshold = self.opts.fault_threshold_ns;
        let bases: Vec<(*mut u8, u64)> = self.mappings.iter().map(|m| (m.region.ptr, m.pages)).collect();
        let mut io = FileIo::default();
        let mut phase = 0usize;
        let mut left_in_phase = self.phases.first().map(|p| p.0).unwrap_or(0);
        let mut compute = self.phases.first().map(|p| p.1).unwrap_or(0);
        let mut tally = Tally::start(self.program.phase_count());
        let deadline = self.time_limit_ns.map(|l| tally.start + l);
        let mut sink = 0u64;
        while let Some(step) = self.program.next_step() {
            if self.program.phase() != tally.phase_times.current() {
                tally.phase_times.enter(self.program.phase(), tally.last, sys::thread_cpu_ns() - tally.cpu0);
            }
            let (mi, t, syscall) = match step {
                Step::Touch(mi, t) => (mi, t, false),
                Step::Op(Op::FileIo { mi, touch }) => (mi, touch, true),
                // Message phases are refused by `prepare`.
                Step::Op(_) => continue,
            };
            if left_in_phase == 0 {
                phase = (phase + 1) % self.phases.len();
                left_in_phase = self.phases[phase].0;
                compute = self.phases[phase].1;
            }
            left_in_phase -= 1;
            let (got, t0, t1) = self.touch(&mut io, bases[mi], mi, t, syscall, tally.touches);
            sink = sink.wrapping_add(got);
            let lat = t1 - t0;
            tally.touch_h.record(lat);
            if lat > threshold {
                tally.fault_h.record(lat);
            }
            tally.touches += 1;
            tally.last = t1;
            if compute > 0 {
                tally.last = spin_until(t1 + compute);
                tally.compute_ns += tally.last - t1;
            }
            if deadline.is_some_and(|d| tally.last >= d) {
                tally.time_limited = true;
                break;
            }
        }
        std::hint::black_box(sink);
        self.result(tally, &io)
    }

    /// One touch of page `t.page` of mapping `mi` (at `base`, of `pages` pages): a pread() or
    /// pwrite() of the page for a buffered-I/O phase, otherwise a load or store of one word
    /// through the page tables. Returns what was read and the touch's start and end time.
    #[inline(always)]
    fn touch(&mut self, io: &mut FileIo, (base, pages): (*mut u8, u64), mi: usize, t: Touch, syscall: bool, touches: u64) -> (u64, u64, u64) {
        debug_assert!((t.page as u64) < pages);
        let off = word_offset(t.page as usize);
        // With a content model, a write stores the value the page's content has in this word.
        let value = match (t.write, self.filler.as_ref()) {
            (true, Some(f)) => f.touch_value(mi, t.page as usize, (off % PAGE_SIZE as usize) / 8).unwrap_or(touches | 1),
            _ => touches | 1,
        };
        let timed_touch = timed(|| {
            if syscall {
                let fd = self.mappings[mi].fd.as_ref().expect("validated: buffered I/O names a file mapping");
                io.page(fd, t)
            } else {
                // SAFETY: page < mapping pages (the generator's contract), so the word lies
                // inside the mapping; the mapping is PROT_READ|PROT_WRITE.
                unsafe {
                    let word = base.add(off) as *mut u64;
                    // A checked store loads the word first (usemem's verify of its last pass).
                    let seen = if t.check { touch_word(word, false, 0) } else { 0 };
                    seen.wrapping_add(touch_word(word, t.write, value))
                }
            }
        });
        if let (true, Some(f)) = (t.write, self.filler.as_mut()) {
            // SAFETY: the page lies inside mapping mi (as above), writable.
            unsafe { f.after_write(mi, t.page as usize, base.add(t.page as usize * PAGE_SIZE as usize)) };
        }
        timed_touch
    }

    fn result(&self, tally: Tally, io: &FileIo) -> WorkerResult {
        let end = tally.last.max(tally.start);
        let cpu = sys::thread_cpu_ns() - tally.cpu0;
        let (min1, maj1) = sys::thread_faults();
        let wait1 = runqueue_wait_ns();
        let elapsed = end - tally.start;
        WorkerResult {
            name: self.name.clone(),
            instance: self.instance,
            pid: std::process::id(),
            start_mono_ns: tally.start,
            end_mono_ns: end,
            elapsed_ns: elapsed,
            touches: tally.touches,
            phase_elapsed_ns: tally.phase_times.until(end),
            cpu_ns: cpu,
            phase_cpu_ns: tally.phase_times.cpu_until(cpu),
            minor_faults: min1 - tally.faults0.0,
            major_faults: maj1 - tally.faults0.1,
            touch_latency_ns: tally.touch_h.percentiles(),
            fault_latency_ns: tally.fault_h.percentiles(),
            slow_touches: tally.fault_h.count(),
            fault_threshold_ns: self.opts.fault_threshold_ns,
            throughput_bytes_per_s: if elapsed == 0 { 0.0 } else { tally.touches as f64 * PAGE_SIZE as f64 / (elapsed as f64 / 1e9) },
            file_reads: io.reads,
            file_writes: io.writes,
            time_limited: tally.time_limited,
            compute_ns: tally.compute_ns,
            runqueue_wait_ns: wait1.saturating_sub(tally.wait0),
        }
    }
}

/// What a worker's run measures as it goes, from the thread's counters at its start.
struct Tally {
    start: u64,
    cpu0: u64,
    faults0: (u64, u64),
    wait0: u64,
    /// The end of the last touch (or of the compute after it).
    last: u64,
    touches: u64,
    compute_ns: u64,
    time_limited: bool,
    touch_h: Histogram,
    fault_h: Histogram,
    phase_times: PhaseTimes,
}

impl Tally {
    fn start(phase_count: usize) -> Self {
        let faults0 = sys::thread_faults();
        let wait0 = runqueue_wait_ns();
        let start = now_ns();
        let cpu0 = sys::thread_cpu_ns();
        Tally {
            start,
            cpu0,
            faults0,
            wait0,
            last: start,
            touches: 0,
            compute_ns: 0,
            time_limited: false,
            touch_h: Histogram::default(),
            fault_h: Histogram::default(),
            phase_times: PhaseTimes::new(phase_count, start, 0),
        }
    }
}

/// Spin on the CPU until CLOCK_MONOTONIC reaches `until` (the phase's `compute` after a
/// touch, charged as the simulator charges it); returns the time it stopped.
fn spin_until(until: u64) -> u64 {
    let mut c = now_ns();
    while c < until {
        std::hint::spin_loop();
        c = now_ns();
    }
    c
}

/// Buffered read()/write() of whole pages, with one page-sized user buffer.
struct FileIo {
    buf: Vec<u8>,
    reads: u64,
    writes: u64,
}

impl Default for FileIo {
    fn default() -> Self {
        FileIo { buf: vec![0u8; PAGE_SIZE as usize], reads: 0, writes: 0 }
    }
}

impl FileIo {
    /// pread() or pwrite() page `t.page` of `fd` whole; returns a word of what was read (for
    /// the sink that keeps the read from being optimised away). An I/O error (the disk file
    /// system failing under the run) aborts the worker: its measurements would be meaningless.
    fn page(&mut self, fd: &std::fs::File, t: Touch) -> u64 {
        use std::os::unix::fs::FileExt;
        let off = t.page as u64 * PAGE_SIZE;
        if t.write {
            self.buf[..8].copy_from_slice(&(t.page as u64 + 1).to_le_bytes());
            fd.write_all_at(&self.buf, off).unwrap_or_else(|e| panic!("pwrite of page {}: {e}", t.page));
            self.writes += 1;
            0
        } else {
            fd.read_exact_at(&mut self.buf, off).unwrap_or_else(|e| panic!("pread of page {}: {e}", t.page));
            self.reads += 1;
            u64::from_le_bytes(self.buf[..8].try_into().expect("8 bytes"))
        }
    }
}

fn sanitize(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect()
}

/// Check that `dir` is on a disk file system (not tmpfs/ramfs): used for swap files, loop
/// device backing files and file-backed mappings. Returns the f_type magic.
pub fn fs_magic(dir: &Path) -> io::Result<i64> {
    let c = CString::new(dir.as_os_str().as_bytes()).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path with NUL"))?;
    // SAFETY: zeroed statfs is a valid out-parameter.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    sys::check(unsafe { libc::statfs(c.as_ptr(), &mut st) }, "statfs")?;
    Ok(st.f_type as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: &str = r#"
seed = 7
[machine]
ram = "256MiB"
[[task]]
name = "t"
instances = 2
[[task.mapping]]
name = "a"
kind = "anon"
size = "1MiB"
[[task.mapping]]
name = "s"
kind = "shmem"
size = "1MiB"
[[task.mapping]]
name = "f"
kind = "file"
size = "256KiB"
[[task.phase]]
mapping = "a"
pattern = "sequential"
cycles = 2
[[task.phase]]
mapping = "s"
pattern = "random"
write_ratio = 0.5
[[task.phase]]
mapping = "f"
pattern = "sequential"
write_ratio = 0.0
compute = "1us"
"#;

    #[test]
    fn performs_every_touch_of_the_program() {
        let dir = std::env::temp_dir();
        let mut w = Worker::prepare(W, "w.toml", &[], 0, 1, WorkerOptions { workdir: dir, fault_threshold_ns: 1000 }).unwrap();
        let r = w.run(now_ns());
        assert_eq!(r.touches, 2 * 256 + 256 + 64);
        // every anon page and every file page faults at least once
        assert!(r.minor_faults + r.major_faults >= 256 + 64, "{r:?}");
        assert!(r.compute_ns >= 64 * 1000);
        assert!(!r.time_limited);
    }

    #[test]
    fn replays_a_trace_phase_on_real_memory() {
        // 300 accesses over two address ranges 1 GiB apart: two anon mappings on the host too.
        let dir = std::env::temp_dir().join(format!("swaplab-host-trace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let csv: String = (0..300u64).map(|i| format!("{i},{},{}\n", if i % 2 == 0 { 1000 + i % 40 } else { 263_144 + i % 7 }, if i % 3 == 0 { "w" } else { "r" })).collect();
        std::fs::write(dir.join("t.csv"), format!("icount,vpn,op\n{csv}")).unwrap();
        let text = "[machine]\nram = \"256MiB\"\n[[task]]\nname = \"t\"\n[[task.phase]]\npattern = \"trace\"\nfile = \"t.csv\"\n";
        let wl = dir.join("w.toml");
        std::fs::write(&wl, text).unwrap();
        let mut w = Worker::prepare(text, wl.to_str().unwrap(), &[], 0, 0, WorkerOptions { workdir: dir.clone(), fault_threshold_ns: 1000 }).unwrap();
        assert_eq!(w.mappings.len(), 2);
        let r = w.run(now_ns());
        assert_eq!(r.touches, 300);
        // Even accesses touch 20 distinct pages (i % 40 of even i), odd ones 7.
        assert!(r.minor_faults + r.major_faults >= 20 + 7, "{r:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn buffered_io_phases_read_and_write_the_data_file_without_faulting_it() {
        let text = r#"
[machine]
ram = "256MiB"
[[task]]
name = "io"
[[task.mapping]]
name = "f"
kind = "file"
size = "1MiB"
[[task.phase]]
mapping = "f"
pattern = "sequential"
access = "syscall"
write_ratio = 0.0
[[task.phase]]
mapping = "f"
pattern = "sequential"
access = "syscall"
write_ratio = 1.0
"#;
        let dir = std::env::temp_dir().join(format!("swaplab-host-io-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut w = Worker::prepare(text, "io.toml", &[], 0, 0, WorkerOptions { workdir: dir.clone(), fault_threshold_ns: 1000 }).unwrap();
        let r = w.run(now_ns());
        assert_eq!((r.file_reads, r.file_writes, r.touches), (256, 256, 512));
        // read() copies into one buffer: the 256 file pages are never faulted into the mapping.
        assert!(r.minor_faults + r.major_faults < 64, "{r:?}");
        // Every page was written through the page cache with its page number.
        let path = w.mappings[0].file.clone().unwrap();
        let data = std::fs::read(&path).unwrap();
        for page in [0usize, 17, 255] {
            let word = u64::from_le_bytes(data[page * 4096..page * 4096 + 8].try_into().unwrap());
            assert_eq!(word, page as u64 + 1);
        }
        drop(w);
        assert!(!path.exists(), "the data file outlived its worker");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_exec_file_mapping_is_mapped_executable() {
        let text = "[machine]\nram = \"256MiB\"\n[[task]]\nname = \"t\"\n[[task.mapping]]\nname = \"text\"\nkind = \"file\"\nsize = \"64KiB\"\nexec = true\n[[task.mapping]]\nname = \"data\"\nkind = \"file\"\nsize = \"64KiB\"\n[[task.phase]]\nmapping = \"text\"\npattern = \"sequential\"\nwrite_ratio = 0.0\n";
        let w = Worker::prepare(text, "x.toml", &[], 0, 0, WorkerOptions::default()).unwrap();
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let perms = |m: &Mapping| {
            let name = m.file.as_ref().unwrap().to_str().unwrap().to_string();
            maps.lines().find(|l| l.ends_with(&name)).map(|l| l.split_whitespace().nth(1).unwrap().to_string()).expect("mapped")
        };
        assert_eq!(perms(&w.mappings[0]), "rwxs");
        assert_eq!(perms(&w.mappings[1]), "rw-s");
    }

    #[test]
    fn message_phases_are_refused_with_the_reason() {
        let text = "[machine]\nram = \"256MiB\"\n[[channel]]\nname = \"c\"\n[[task]]\nname = \"s\"\n[[task.mapping]]\nname = \"b\"\nkind = \"anon\"\nsize = \"64KiB\"\n[[task.phase]]\nmapping = \"b\"\npattern = \"send\"\nchannel = \"c\"\nmessages = 4\n[[task]]\nname = \"r\"\n[[task.mapping]]\nname = \"b\"\nkind = \"anon\"\nsize = \"64KiB\"\n[[task.phase]]\nmapping = \"b\"\npattern = \"recv\"\nchannel = \"c\"\nmessages = 4\n";
        let err = Worker::prepare(text, "m.toml", &[], 0, 0, WorkerOptions::default()).err().expect("refused");
        assert!(err.contains("message phases") && err.contains("unavailable on host"), "{err}");
    }

    #[test]
    fn request_phases_are_refused_with_the_reason() {
        let kv = "[machine]\nram = \"256MiB\"\n[[task]]\nname = \"m\"\n[[task.mapping]]\nname = \"s\"\nkind = \"anon\"\n[[task.phase]]\nmapping = \"s\"\npattern = \"kv-set\"\nkeys = 100\nvalue_size = 2000\n";
        let fio = "[machine]\nram = \"256MiB\"\n[[task]]\nname = \"f\"\n[[task.mapping]]\nname = \"d\"\nkind = \"file\"\nsize = \"1MiB\"\n[[task.phase]]\nmapping = \"d\"\npattern = \"random\"\naccess = \"syscall\"\nwrite_ratio = 0.0\niodepth = 4\n";
        for text in [kv, fio] {
            let err = Worker::prepare(text, "r.toml", &[], 0, 0, WorkerOptions::default()).err().expect("refused");
            assert!(err.contains("iodepth") && err.contains("unavailable on host"), "{err}");
        }
    }

    #[test]
    fn time_limit_stops_a_repeating_task() {
        let text = W.replace("instances = 2", "instances = 1\nrepeat = true\ntime_limit = \"50ms\"");
        let mut w = Worker::prepare(&text, "w.toml", &[], 0, 0, WorkerOptions::default()).unwrap();
        let r = w.run(now_ns());
        assert!(r.time_limited);
        assert!(r.elapsed_ns >= 50_000_000 && r.elapsed_ns < 500_000_000, "{}", r.elapsed_ns);
    }
}
