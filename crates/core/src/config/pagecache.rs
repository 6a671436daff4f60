//! The `[pagecache]` section: the page cache's knobs as a user sets them on a real machine
//! (the file device's `queue/read_ahead_kb`, `/sys/kernel/mm/...fault_around_bytes`), and the
//! per-mapping access advice (`madvise` / `posix_fadvise`). Defaults are the kernel's.

use serde::{Deserialize, Serialize};

fn default_read_ahead_kb() -> u64 {
    128
}
fn default_fault_around_bytes() -> u64 {
    65_536
}

/// Page-cache knobs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PageCacheSpec {
    /// `/sys/block/<file device>/queue/read_ahead_kb`: the largest readahead window of a file
    /// on the file device (`bdi->ra_pages` = read_ahead_kb / 4). Default 128 KiB
    /// (`VM_READAHEAD_PAGES`, include/linux/mm.h). 0 turns file readahead off.
    #[serde(default = "default_read_ahead_kb")]
    pub read_ahead_kb: u64,
    /// `debugfs fault_around_bytes` (mm/memory.c, 3.15+): on a read fault of a file mapping,
    /// the cached pages of the naturally aligned block of this many bytes around the fault are
    /// mapped too. Rounded down to a power of two pages as the kernel does; at most one page
    /// table (2 MiB); one page or less turns it off. Default 64 KiB (16 pages).
    #[serde(default = "default_fault_around_bytes")]
    pub fault_around_bytes: u64,
    /// The file system caches files in large folios (`mapping_large_folio_support`: XFS since
    /// 5.18, ext4 since 6.16, ...): readahead allocates folios of up to the window's size,
    /// fault-around maps whole folios, reclaim isolates, ages and frees them whole
    /// (`pagecache/folio.rs`). Default false: base pages, as every kernel before 5.18 and a
    /// file system without the support cache them. 6.x profile and the classic LRU only.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub large_folios: bool,
}

impl Default for PageCacheSpec {
    fn default() -> Self {
        PageCacheSpec { read_ahead_kb: default_read_ahead_kb(), fault_around_bytes: default_fault_around_bytes(), large_folios: false }
    }
}

impl PageCacheSpec {
    /// `fault_around_pages` as `fault_around_bytes_set` computes it.
    pub fn fault_around_pages(&self) -> u64 {
        let pages = self.fault_around_bytes / crate::mm::PAGE_SIZE;
        if pages <= 1 {
            1
        } else {
            1 << (63 - pages.leading_zeros())
        }
    }

    /// `bdi->ra_pages`.
    pub fn ra_pages(&self) -> u64 {
        self.read_ahead_kb / crate::mm::PAGE_KB
    }

    /// One line naming the key and what was expected, for a bad value.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if self.fault_around_bytes / crate::mm::PAGE_SIZE > crate::mm::PTRS_PER_PMD {
            return Err(("pagecache.fault_around_bytes", format!("expected at most 2097152 (one page table), got {}", self.fault_around_bytes)));
        }
        // The block layer caps read_ahead_kb at what a queue accepts; 1 GiB is far beyond
        // any device's and keeps windows within a u32 page count.
        if self.read_ahead_kb > 1 << 20 {
            return Err(("pagecache.read_ahead_kb", format!("expected at most 1048576 KiB, got {}", self.read_ahead_kb)));
        }
        Ok(())
    }
}

/// How a file mapping's pages are expected to be used: `madvise(MADV_RANDOM /
/// MADV_SEQUENTIAL)` on the mapping for page faults (VM_RAND_READ / VM_SEQ_READ) and
/// `posix_fadvise(POSIX_FADV_RANDOM / POSIX_FADV_SEQUENTIAL)` on the file for read()
/// (FMODE_RANDOM / a doubled `ra_pages`): a program that gives one usually gives both.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Advice {
    #[default]
    Normal,
    Random,
    Sequential,
}

impl Advice {
    pub fn is_normal(&self) -> bool {
        *self == Advice::Normal
    }
}
