//! swaplab-host: the native half of the host runner (docs/host-runner.md).
//!
//! * [`worker`]: one task instance of a workload on real memory. It maps the task's mappings
//!   with the real system calls and performs exactly the touches the simulator's generator
//!   produces for the same seed ([`swaplab_core::workload::program_for`]), timing each touch.
//! * [`calibrate`]: measurements of this machine (O_DIRECT device latency, bandwidth and
//!   parallelism; minor, cache-hit and major fault costs) that `swaplab calibrate` turns
//!   into a device preset and CPU cost parameters; [`tlb_probe`]: what a TLB-flush IPI costs
//!   its sender and the CPU it interrupts.
//!
//! Everything that changes machine state (cgroups, swap devices, knobs) is in the Python
//! orchestrator (`python/swaplab/host/`), which owns restoring it.

pub mod calibrate;
pub mod content;
pub mod sys;
pub mod tlb_probe;
pub mod worker;

pub use worker::{Worker, WorkerOptions, WorkerResult};
