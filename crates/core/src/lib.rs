//! swaplab-core: a deterministic discrete-event simulator of Linux page reclaim and swap.
pub mod config;
pub mod device;
pub mod rng;
pub mod workload;
