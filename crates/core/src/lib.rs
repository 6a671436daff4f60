//! swaplab-core: a deterministic discrete-event simulator of Linux page reclaim and swap.
pub mod bench;
pub mod config;
pub mod device;
pub mod engine;
pub mod mm;
pub mod pagecache;
pub mod reclaim;
pub mod rng;
pub mod stats;
pub mod swap;
pub mod workload;
pub mod writeback;

pub use engine::{simulate, Progress};

/// The swaplab version, embedded in every result.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
