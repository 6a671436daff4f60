//! Memory: page frames with their flags, the LRU lists (intrusive, index-linked), page-table
//! entries, VMAs and the inodes behind shared mappings.
//!
//! Layout is chosen for the performance contract: a frame is 24 bytes, a page-table entry 8,
//! a shared mapping's inode entry 8; a resident touch reads one PTE and sets two bits.

pub mod anon_vma;
pub mod i_mmap;
pub mod lru;
pub mod pcp;

pub use anon_vma::AnonVma;

pub use lru::{LruList, Lrus};

/// "No frame / no link" in u32 index fields.
pub const NONE: u32 = u32::MAX;

/// The base page (x86-64 and every machine the seeds ran on): `PAGE_SHIFT` 12.
pub const PAGE_SHIFT: u32 = 12;
pub const PAGE_SIZE: u64 = 1 << PAGE_SHIFT;
/// `/proc/vmstat`'s pgpgin/pgpgout count KiB: pages * PAGE_KB.
pub const PAGE_KB: u64 = PAGE_SIZE / 1024;
/// Page-table entries per PMD (a 2 MiB region): VMA readahead clips to it (§1.5).
pub const PTRS_PER_PMD: u64 = 512;

/// The machine's memory as the model holds it: page frames and the free list, the VMAs with
/// their page tables, the inodes behind shared and file mappings, the zone watermarks and the
/// memory cgroup's charge.
pub struct Memory {
    pub frames: Vec<Frame>,
    /// The buddy allocator's free pages (`NR_FREE_PAGES`: what the watermarks read).
    pub free_list: Vec<u32>,
    /// 2.6.32's per-CPU page lists (`pcp.rs`), None in the eras whose free count is one list.
    pub pcp: Option<pcp::PerCpuPages>,
    /// The CPU whose code the simulation is running: the per-CPU list a free or an allocation
    /// uses.
    pub cpu: usize,
    pub vmas: Vec<Vma>,
    /// The anon_vmas of VMAs that forked (`anon_vma.rs`).
    pub anon_vmas: Vec<AnonVma>,
    /// Does fork give each child VMA an anon_vma of its own, linked by anon_vma chains (2.6.34
    /// on), or does the child join its parent's anon_vma (the 2.6.28 family)? (`anon_vma.rs`)
    pub anon_vma_chains: bool,
    pub objects: Vec<Object>,
    /// Files mapped by name (`file` on a mapping): the inode of each, shared by every
    /// mapping of that name.
    pub files: std::collections::BTreeMap<String, u32>,
    pub wm: crate::config::Watermarks,
    /// memcg mode: the limit in pages; and the pages charged to the workload's cgroup.
    pub memcg_limit: Option<u64>,
    pub charged: u64,
    /// The fronting store's pool is charged to the memory cgroup (cgroup v2; on v1 zswap
    /// charges nothing: `machine.cgroup_version`).
    pub pool_charged: bool,
    /// Page-cache folios (their first frame) the running task holds a reference on while it
    /// starts readahead from them (`pagecache/held.rs`): reclaim cannot free these.
    pub held: Vec<u32>,
}

impl Memory {
    pub fn new(cfg: &crate::config::Resolved) -> Memory {
        let c = &cfg.config;
        let managed = c.machine.ram.pages() - c.machine.kernel_reserved.pages();
        let wm = crate::config::zone_watermarks(c, cfg.profile);
        Memory {
            frames: vec![Frame::FREE; managed as usize],
            // LIFO free list whose first pops are low frame numbers (deterministic, cache friendly).
            free_list: (0..managed as u32).rev().collect(),
            pcp: crate::config::era_2_6_32(&c.kernel.profile)
                .then(|| pcp::PerCpuPages::new(c.machine.cpus as usize, c.machine.ram.pages())),
            cpu: 0,
            vmas: Vec::new(),
            anon_vmas: Vec::new(),
            anon_vma_chains: cfg.profile != crate::config::Profile::V2_6_28,
            objects: Vec::new(),
            files: Default::default(),
            wm,
            memcg_limit: c.machine.memcg_limit.map(|l| l.pages()),
            charged: 0,
            pool_charged: c.machine.cgroup_version >= 2,
            held: Vec::new(),
        }
    }

    /// The zone's free pages as the watermark checks read them (`NR_FREE_PAGES`: buddy pages,
    /// not those on per-CPU lists).
    pub fn nr_free(&self) -> u64 {
        self.free_list.len() as u64
    }

    /// Free pages anywhere (buddy and per-CPU lists).
    pub fn nr_free_total(&self) -> u64 {
        self.nr_free() + self.pcp.as_ref().map_or(0, |p| p.len() as u64)
    }

    /// Take a free frame on the running CPU (its per-CPU list when there are any).
    pub fn pop_free(&mut self) -> Option<u32> {
        match &mut self.pcp {
            Some(p) => p.alloc(self.cpu, &mut self.free_list),
            None => self.free_list.pop(),
        }
    }

    /// Give a frame back on the running CPU; true when pages reached the buddy lists.
    pub fn push_free(&mut self, f: u32) -> bool {
        match &mut self.pcp {
            Some(p) => p.free(self.cpu, f, &mut self.free_list) > 0,
            None => {
                self.free_list.push(f);
                true
            }
        }
    }
}

// Frame flags (kernel-algorithms.md §9: PG_* bits the reclaim code reads).
pub const PG_ACTIVE: u32 = 1 << 0;
pub const PG_REFERENCED: u32 = 1 << 1;
pub const PG_DIRTY: u32 = 1 << 2;
pub const PG_SWAPBACKED: u32 = 1 << 3;
pub const PG_SWAPCACHE: u32 = 1 << 4;
pub const PG_WRITEBACK: u32 = 1 << 5;
pub const PG_READAHEAD: u32 = 1 << 6;
pub const PG_RECLAIM: u32 = 1 << 7;
pub const PG_WORKINGSET: u32 = 1 << 8;
/// Read I/O in flight: the folio lock a faulting task sleeps on.
pub const PG_LOCKED: u32 = 1 << 9;
pub const PG_LRU: u32 = 1 << 10;
/// Allocated (not on the free list).
pub const PG_INUSE: u32 = 1 << 11;
/// In a CPU's LRU-add batch (`folio_add_lru` before the batch is moved): on no list yet, and
/// not `PG_LRU`, so reclaim cannot isolate it (reclaim/lru_add.rs). The kernel has no such
/// bit (the batch holds a reference to a !PG_lru folio); the model keeps one to find it.
pub const PG_LRU_BATCH: u32 = 1 << 22;
// bits 12..13: owner kind; bits 14..16: LRU list; bits 17..19 MGLRU gen, 20..21 tier (reserved);
// bit 22: PG_LRU_BATCH; bits 24..31: swap device of the swap-cache slot.
pub const OWNER_SHIFT: u32 = 12;
pub const OWNER_MASK: u32 = 3 << OWNER_SHIFT;
pub const LIST_SHIFT: u32 = 14;
pub const LIST_MASK: u32 = 7 << LIST_SHIFT;
pub const DEV_SHIFT: u32 = 24;
/// Page-cache frames (never in the swap cache, so the swap-device byte is free there): the
/// order of the large folio the page belongs to, 0 for a base page (`pagecache/folio.rs`).
pub const FOLIO_ORDER_SHIFT: u32 = DEV_SHIFT;
pub const FOLIO_ORDER_MASK: u32 = 0xf << FOLIO_ORDER_SHIFT;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// Not mapped by anyone (a swap-cache page brought in by readahead, or orphaned).
    None = 0,
    /// Anonymous private page: `owner` is the VMA, `index` the page in it.
    Anon = 1,
    /// shmem page: `owner` is the inode (object), `index` the page in it.
    Shmem = 2,
    /// Page-cache page of a regular file.
    File = 3,
}

#[derive(Clone, Copy, Debug)]
pub struct Frame {
    pub flags: u32,
    pub owner: u32,
    pub index: u32,
    /// Swap slot while PG_SWAPCACHE (device in the flags' top byte).
    pub slot: u32,
    pub prev: u32,
    pub next: u32,
}

impl Frame {
    pub const FREE: Frame = Frame { flags: 0, owner: NONE, index: 0, slot: NONE, prev: NONE, next: NONE };

    #[inline]
    pub fn has(&self, f: u32) -> bool {
        self.flags & f != 0
    }
    #[inline]
    pub fn owner_kind(&self) -> Owner {
        match (self.flags & OWNER_MASK) >> OWNER_SHIFT {
            0 => Owner::None,
            1 => Owner::Anon,
            2 => Owner::Shmem,
            _ => Owner::File,
        }
    }
    #[inline]
    pub fn set_owner(&mut self, kind: Owner, owner: u32, index: u32) {
        self.flags = (self.flags & !OWNER_MASK) | ((kind as u32) << OWNER_SHIFT);
        self.owner = owner;
        self.index = index;
    }
    #[inline]
    pub fn swap_dev(&self) -> usize {
        (self.flags >> DEV_SHIFT) as usize
    }
    #[inline]
    pub fn set_swap(&mut self, dev: usize, slot: u32) {
        self.flags = (self.flags & !(0xff << DEV_SHIFT)) | ((dev as u32) << DEV_SHIFT) | PG_SWAPCACHE;
        self.slot = slot;
    }
    #[inline]
    pub fn clear_swap(&mut self) {
        self.flags &= !(PG_SWAPCACHE | (0xff << DEV_SHIFT));
        self.slot = NONE;
    }
    /// The order of the page-cache folio this page belongs to (0: a base page, or not a
    /// page-cache page).
    #[inline]
    pub fn folio_order(&self) -> u32 {
        if self.owner_kind() == Owner::File && !self.has(PG_SWAPCACHE) {
            (self.flags & FOLIO_ORDER_MASK) >> FOLIO_ORDER_SHIFT
        } else {
            0
        }
    }
    #[inline]
    pub fn set_folio_order(&mut self, order: u32) {
        debug_assert!(self.owner_kind() == Owner::File && order < 16);
        self.flags = (self.flags & !FOLIO_ORDER_MASK) | (order << FOLIO_ORDER_SHIFT);
    }
    /// Do `self` and `other` belong to the same large page-cache folio?
    #[inline]
    pub fn same_large_folio(&self, other: &Frame) -> bool {
        let o = self.folio_order();
        o > 0 && other.folio_order() == o && other.owner == self.owner && (other.index >> o) == (self.index >> o)
    }
    /// Anon and shmem pages are swap-backed; their LRU type is "anon".
    #[inline]
    pub fn is_anon_type(&self) -> bool {
        self.has(PG_SWAPBACKED)
    }
}

// Page-table entry encoding (u64).
pub const PTE_PRESENT: u64 = 1 << 63;
pub const PTE_ACCESSED: u64 = 1 << 62;
pub const PTE_DIRTY: u64 = 1 << 61;
pub const PTE_SWAP: u64 = 1 << 60;
pub const PTE_WRITE: u64 = 1 << 59;
/// Inode entries of file pages that were evicted: a workingset shadow (§4.2).
pub const ENT_SHADOW: u64 = 1 << 58;
/// A present, read-only mapping of the shared zero page (a read fault on never-written
/// private anonymous memory, do_anonymous_page): no frame, no RSS, nothing to reclaim.
pub const PTE_ZERO: u64 = 1 << 57;
/// The zero-page PTE value.
pub const PTE_ZERO_PAGE: u64 = PTE_PRESENT | PTE_ZERO | NONE as u64;

#[inline]
pub fn pte_frame(pte: u64) -> u32 {
    pte as u32
}
#[inline]
pub fn swp_entry(dev: usize, slot: u32) -> u64 {
    PTE_SWAP | ((dev as u64) << 32) | slot as u64
}
#[inline]
pub fn swp_dev(e: u64) -> usize {
    ((e >> 32) & 0xff) as usize
}
#[inline]
pub fn swp_slot(e: u64) -> u32 {
    e as u32
}

/// Where a folio is mapped, as the rmap walk finds it (through an anon_vma tree,
/// `anon_vma.rs`, or a file's i_mmap tree, `i_mmap.rs`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mappings {
    /// PTEs mapping the folio (its mapcount).
    pub mapcount: u32,
    /// VMAs the walk visits before it has found all of them: the position of the last
    /// mapping in the tree, plus one (0 when unmapped: `folio_mapped` is checked first).
    pub visits: u32,
}

/// A virtual memory area of one task.
#[derive(Clone, Debug)]
pub struct Vma {
    pub task: u32,
    pub kind: crate::config::MappingKind,
    /// First virtual page number (2 MiB aligned, so PMD clipping is meaningful, §1.5).
    pub start_vpn: u64,
    pub ptes: Vec<u64>,
    /// shmem / file: the inode whose pages this VMA maps.
    pub object: u32,
    /// VMA readahead state `swap_readahead_info` (§1.5), 0 = fresh.
    pub ra_info: u64,
    /// Resident pages mapped (rss) and swap entries held (swapents), for OOM badness.
    pub rss: u64,
    pub swapents: u64,
    /// VM_EXEC: a file mapped executable (reclaim's executable-page rules).
    pub exec: bool,
    /// The identity of the mapping's pages for the content model (`content::mapping_key`).
    pub content_key: u64,
    /// Anon: `vma->anon_vma`, the anon_vma its new folios go into (`anon_vma.rs`); NONE for
    /// a VMA that never forked (a tree of itself alone).
    pub anon_vma: u32,
    /// Anon: this VMA's position in the tree of `anon_vma` (0 when NONE): where the rmap walk
    /// of a folio that only this VMA can map finds it (`anon_vma.rs`).
    pub tree_pos: u32,
    /// Anon: some VMA was forked from this one, so others may map its folios.
    pub forked: bool,
}

/// An inode: shmem object or regular file. `entries` hold a frame (PTE_PRESENT), a swap entry
/// (shmem, PTE_SWAP) or a shadow (file, ENT_SHADOW), or 0.
#[derive(Clone, Debug)]
pub struct Object {
    pub kind: crate::config::MappingKind,
    pub entries: Vec<u64>,
    /// VMAs mapping this object (`mapping->i_mmap`, the reverse map of its pages), in the
    /// order the rmap walk visits them: mmap order (`i_mmap.rs`).
    pub vmas: Vec<u32>,
    /// File: first page of its extent on the file device.
    pub file_base: u64,
    /// File: the readahead state of the open file (pagecache/readahead.rs) and the mapping's
    /// madvise/fadvise advice.
    pub ra: crate::pagecache::readahead::RaState,
    pub advice: crate::config::pagecache::Advice,
    /// Some VMA maps it for page-table access (`mapping_mapped`); false for a file used only
    /// through read()/write().
    pub mmapped: bool,
}
