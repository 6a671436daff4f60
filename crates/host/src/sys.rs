//! Thin, checked wrappers over the system calls the worker and calibration use.

use std::io;

/// CLOCK_MONOTONIC in nanoseconds: the same clock as Python's `time.monotonic_ns()`, so the
/// orchestrator and its workers share a time origin. Through the vDSO this costs ~20 ns.
#[inline]
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: valid pointer to a timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CPU time of the calling thread in nanoseconds (CLOCK_THREAD_CPUTIME_ID).
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: valid pointer; the thread CPU clock exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// (minor, major) faults of the calling thread so far (getrusage(RUSAGE_THREAD)).
pub fn thread_faults() -> (u64, u64) {
    // SAFETY: zeroed rusage is a valid out-parameter.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    (ru.ru_minflt as u64, ru.ru_majflt as u64)
}

/// The calling thread runs SCHED_FIFO while this lives (calibration's QD1 latencies: a thread
/// woken by its I/O's completion then runs at once instead of queueing behind other load on
/// the machine). Dropping it returns the thread to SCHED_OTHER.
pub struct FifoPriority(());

impl FifoPriority {
    /// None when the kernel refuses (not root, or no real-time budget).
    pub fn acquire() -> Option<FifoPriority> {
        let param = libc::sched_param { sched_priority: 1 };
        // SAFETY: pid 0 is the calling thread; valid param.
        let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
        (rc == 0).then_some(FifoPriority(()))
    }
}

impl Drop for FifoPriority {
    fn drop(&mut self) {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: as above.
        unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER, &param) };
    }
}

pub fn check(rc: libc::c_int, what: &str) -> io::Result<()> {
    if rc < 0 {
        let e = io::Error::last_os_error();
        Err(io::Error::new(e.kind(), format!("{what}: {e}")))
    } else {
        Ok(())
    }
}

/// An mmap'ed region, unmapped on drop.
pub struct Region {
    pub ptr: *mut u8,
    pub len: usize,
}

impl Region {
    /// mmap(NULL, len, PROT_READ|PROT_WRITE, flags, fd, 0) and MADV_NOHUGEPAGE: the
    /// simulator models 4 KiB pages, so transparent huge pages (and mTHP) must not change the
    /// unit of reclaim and swap under it.
    pub fn map(len: usize, flags: libc::c_int, fd: libc::c_int) -> io::Result<Region> {
        Region::map_prot(len, libc::PROT_READ | libc::PROT_WRITE, flags, fd)
    }

    /// [`Region::map`] with the given protection (PROT_EXEC for an executable file mapping:
    /// the VMA gets VM_EXEC, which reclaim reads).
    pub fn map_prot(len: usize, prot: libc::c_int, flags: libc::c_int, fd: libc::c_int) -> io::Result<Region> {
        // SAFETY: a fresh mapping chosen by the kernel; the result is checked.
        let p = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, flags, fd, 0) };
        if p == libc::MAP_FAILED {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(e.kind(), format!("mmap of {len} bytes: {e}")));
        }
        // SAFETY: p..p+len is our mapping. Failure (THP not configured) is harmless.
        unsafe { libc::madvise(p, len, libc::MADV_NOHUGEPAGE) };
        Ok(Region { ptr: p as *mut u8, len })
    }

    pub fn advise(&self, advice: libc::c_int) {
        // SAFETY: our mapping.
        unsafe { libc::madvise(self.ptr as *mut libc::c_void, self.len, advice) };
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly what map() mapped.
        unsafe { libc::munmap(self.ptr as *mut libc::c_void, self.len) };
    }
}

/// Die with the parent: a worker must never outlive the orchestrator that set up (and will
/// tear down) its cgroup and swap device.
pub fn die_with_parent() {
    // SAFETY: plain prctl.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) };
}
