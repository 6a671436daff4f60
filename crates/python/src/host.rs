//! Host-runner functions of `swaplab._core` (owned by the host runner; see
//! docs/host-runner.md). The worker object lives in a dedicated worker process started by
//! `python -m swaplab.host.worker`; calibration runs in the caller.

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use std::path::PathBuf;
use swaplab_host::{calibrate, Worker, WorkerOptions};

/// A prepared task instance: mappings created, program built, nothing touched yet.
#[pyclass(unsendable, module = "swaplab._core")]
struct HostWorker {
    inner: Worker,
}

#[pymethods]
impl HostWorker {
    #[new]
    #[pyo3(signature = (text, source, overrides, task, instance, workdir, fault_threshold_ns=1000))]
    fn new(text: &str, source: &str, overrides: Vec<String>, task: usize, instance: u32, workdir: PathBuf, fault_threshold_ns: u64) -> PyResult<Self> {
        let opts = WorkerOptions { workdir, fault_threshold_ns };
        let inner = Worker::prepare(text, source, &overrides, task, instance, opts).map_err(PyValueError::new_err)?;
        Ok(HostWorker { inner })
    }

    /// Pages in all of this instance's mappings.
    fn mapped_pages(&self) -> u64 {
        self.inner.mapped_pages()
    }

    /// Perform the program (starting at t0_mono_ns + start_delay); returns its stats as JSON.
    /// Holds the GIL: the worker process has no other Python thread to run.
    fn run(&mut self, t0_mono_ns: u64) -> String {
        serde_json::to_string(&self.inner.run(t0_mono_ns)).expect("worker result serializes")
    }
}

/// Kill this process when its parent dies (PR_SET_PDEATHSIG SIGKILL).
#[pyfunction]
fn host_die_with_parent() {
    swaplab_host::sys::die_with_parent();
}

/// CLOCK_MONOTONIC now, in ns (the workers' clock).
#[pyfunction]
fn host_now_ns() -> u64 {
    swaplab_host::sys::now_ns()
}

/// The simulator's vmstat counter names, in its order (the host result reports exactly these).
#[pyfunction]
fn host_counter_names() -> Vec<&'static str> {
    swaplab_core::stats::VmStat::NAMES.to_vec()
}

/// f_type of the file system holding `path` (statfs), to refuse tmpfs/ramfs.
#[pyfunction]
fn host_fs_magic(path: PathBuf) -> PyResult<i64> {
    swaplab_host::worker::fs_magic(&path).map_err(|e| PyOSError::new_err(e.to_string()))
}

/// O_DIRECT device measurements on a file under `directory`; returns JSON.
#[pyfunction]
#[pyo3(signature = (directory, file_bytes=256<<20, seconds=2.0))]
fn host_calibrate_device(py: Python<'_>, directory: PathBuf, file_bytes: u64, seconds: f64) -> PyResult<String> {
    let r = py.allow_threads(|| calibrate::device(&directory, file_bytes, seconds)).map_err(|e| PyOSError::new_err(e.to_string()))?;
    Ok(serde_json::to_string(&r).expect("serializes"))
}

/// Fault costs through the real kernel (minor, cache hit, major); returns JSON.
#[pyfunction]
#[pyo3(signature = (directory, pages=16384))]
fn host_calibrate_faults(py: Python<'_>, directory: PathBuf, pages: u64) -> PyResult<String> {
    let r = py.allow_threads(|| calibrate::faults(&directory, pages)).map_err(|e| PyOSError::new_err(e.to_string()))?;
    Ok(serde_json::to_string(&r).expect("serializes"))
}

/// TLB-flush IPI costs (crates/host/src/tlb_probe.rs); JSON, or None where the probe does not
/// apply (one CPU, or no TLB-flush IPIs on this architecture).
#[pyfunction]
#[pyo3(signature = (iters=20000, rounds=8))]
fn host_calibrate_tlb(py: Python<'_>, iters: u64, rounds: usize) -> PyResult<Option<String>> {
    let r = py.allow_threads(|| swaplab_host::tlb_probe::tlb_shootdown(iters, rounds)).map_err(|e| PyOSError::new_err(e.to_string()))?;
    Ok(r.map(|r| serde_json::to_string(&r).expect("serializes")))
}

/// TLB-shootdown interrupts per CPU from /proc/interrupts' text (x86's "TLB:" line), None
/// where the line is absent: the probe's parser, shared with the host runner's count.
#[pyfunction]
fn host_tlb_interrupts(text: &str) -> Option<Vec<u64>> {
    swaplab_host::tlb_probe::tlb_interrupts(text)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<HostWorker>()?;
    m.add_function(wrap_pyfunction!(host_die_with_parent, m)?)?;
    m.add_function(wrap_pyfunction!(host_now_ns, m)?)?;
    m.add_function(wrap_pyfunction!(host_counter_names, m)?)?;
    m.add_function(wrap_pyfunction!(host_fs_magic, m)?)?;
    m.add_function(wrap_pyfunction!(host_calibrate_device, m)?)?;
    m.add_function(wrap_pyfunction!(host_calibrate_faults, m)?)?;
    m.add_function(wrap_pyfunction!(host_calibrate_tlb, m)?)?;
    m.add_function(wrap_pyfunction!(host_tlb_interrupts, m)?)?;
    Ok(())
}
