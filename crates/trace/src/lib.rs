//! Page traces: what a real program touched, page by page, and what the best possible memory
//! manager would have done with it.
//!
//! * Formats (one module each): swaplab's own compact format ([`swpt`], documented in
//!   `docs/trace-format.md`), libCacheSim's `oracleGeneral` ([`oracle_general`]) and CSV with
//!   configurable columns ([`csv`]); any of them optionally zstd-compressed ([`input`]). Every
//!   reader streams: it yields [`Record`]s one at a time and never holds the trace.
//! * Capture: [`capture`] turns the raw stream of the QEMU plugin (`plugin/pagetrace.c`) into
//!   swaplab records.
//! * Bounds over the page sequence ([`PageSeq`]): Belady's OPT ([`opt`]), an oracle swap-in
//!   readahead on top of it ([`oracle_ra`]), plain [`lru`] and [`clock`], the exact LRU
//!   miss-ratio curve ([`mrc`]) and its SHARDS estimate ([`shards`]).
//! * [`layout`]: the trace's address space as mappings, for replay through the simulator.
//!
//! Errors ([`TraceError`]) name the file, the record or line, and what was expected: a
//! malformed trace is a user's mistake, never a panic.

pub mod capture;
pub mod clock;
pub mod csv;
pub mod error;
pub mod input;
pub mod layout;
pub mod lru;
pub mod mrc;
pub mod opt;
pub mod oracle_general;
pub mod oracle_ra;
pub mod output;
pub mod reader;
pub mod seq;
pub mod shards;
pub mod stats;
pub mod swpt;
mod varint;

pub use error::TraceError;
pub use reader::{open, Format, ReadOptions, TraceReader};
pub use seq::PageSeq;

/// What an access did to its page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Read,
    Write,
    Exec,
}

impl Kind {
    pub fn code(self) -> u8 {
        match self {
            Kind::Read => 0,
            Kind::Write => 1,
            Kind::Exec => 2,
        }
    }
    pub fn from_code(c: u8) -> Option<Kind> {
        Some(match c {
            0 => Kind::Read,
            1 => Kind::Write,
            2 => Kind::Exec,
            _ => return None,
        })
    }
    pub fn letter(self) -> char {
        match self {
            Kind::Read => 'r',
            Kind::Write => 'w',
            Kind::Exec => 'x',
        }
    }
}

/// One touch of a page: `time` in the trace's clock unit, `page` a virtual page number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    pub time: u64,
    pub thread: u32,
    pub page: u64,
    pub kind: Kind,
}

/// The address-space and I/O events around the accesses (from the capture's syscall hooks).
/// Addresses and lengths are in bytes, as the program passed them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Meta {
    /// mmap() returned `addr`; `file` is empty for anonymous mappings.
    Mmap { addr: u64, len: u64, prot: u32, flags: u32, file: String, offset: u64 },
    Munmap { addr: u64, len: u64 },
    /// The break moved from `old` to `new`.
    Brk { old: u64, new: u64 },
    Mremap { old_addr: u64, old_len: u64, new_addr: u64, new_len: u64 },
    Madvise { addr: u64, len: u64, advice: u32 },
    /// A buffered read() (`write` false) or write() of `len` bytes at `offset` of `file`.
    FileIo { write: bool, file: String, offset: u64, len: u64 },
}

/// A record of a trace, in order. Accesses carry their thread; meta records carry the thread
/// and time at which they happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Record {
    Access(Access),
    Meta { time: u64, thread: u32, meta: Meta },
}

/// mmap() flags and protection bits used to classify mappings (Linux x86-64 values).
pub mod mman {
    pub const MAP_SHARED: u32 = 0x01;
    pub const MAP_PRIVATE: u32 = 0x02;
    pub const MAP_ANONYMOUS: u32 = 0x20;
    pub const PROT_EXEC: u32 = 0x4;
}
