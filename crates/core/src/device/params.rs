//! Device parameters and presets. Every figure is a named parameter with its default and the
//! source of that default; `swaplab calibrate` replaces them with figures measured on a host.

use super::service::AccessQuantiles;
use serde::{Deserialize, Serialize};

/// What one storage device costs. Times in nanoseconds, bandwidths in bytes per second.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceParams {
    /// Free-form description of where the figures come from (kept in every result).
    pub source: String,
    /// Spinning media: requests pay a seek by distance plus rotational latency, and any
    /// rotational swap device turns VMA readahead off system-wide (kernel-algorithms.md §1.5).
    pub rotational: bool,
    /// What the driver tells the kernel (`QUEUE_FLAG_NONROT`); swapon marks the area
    /// SWP_SOLIDSTATE (per-CPU allocation cursors, no VMA-readahead veto) only when it is set.
    /// Absent: the device's physical nature, `!rotational`. The 2.6.32 profile sets it false
    /// for the ramdisk (brd set no flag then; seed 002 tried adding it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_nonrot: Option<bool>,
    /// `SWP_SYNCHRONOUS_IO` (zram, brd, pmem): the I/O runs in the caller's context; swap-in of
    /// a page with one reference bypasses the swap cache and readahead (§1.7).
    pub synchronous: bool,
    /// Requests go through the block layer, paying its five stages' costs (`bio_alloc_ns` ..
    /// `completion_ns`, device/blk.rs) of the submitter's CPU per request. zram skips it.
    pub block_layer: bool,
    /// zram: the device compresses each page into RAM taken from the machine's frames (a
    /// zsmalloc pool, swap/zram.rs), with `[zram]`'s compressor and `[content]`'s pages; its
    /// CPU per page is the compressor's, not `sync_*_cpu_ns`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub compressed: bool,
    /// Fixed service time of one read request (command overhead + media access at QD1).
    pub read_latency_ns: u64,
    /// Fixed service time of one write request.
    pub write_latency_ns: u64,
    /// Measured access-time distribution of reads (device/service.rs), sampled per request in
    /// place of `read_latency_ns`; absent: every read pays `read_latency_ns`.
    #[serde(default, skip_serializing_if = "AccessQuantiles::is_empty")]
    pub read_access: AccessQuantiles,
    /// Measured access-time distribution of writes, in place of `write_latency_ns`.
    #[serde(default, skip_serializing_if = "AccessQuantiles::is_empty")]
    pub write_access: AccessQuantiles,
    /// Measured access-time distribution of reads that start while the device serves a write
    /// (the write's interference); absent: `read_access` applies whatever is in flight.
    #[serde(default, skip_serializing_if = "AccessQuantiles::is_empty")]
    pub read_access_writing: AccessQuantiles,
    /// Reads that continue where the previous read ended (a virtual disk's backing store reads
    /// ahead for them); absent: `read_access`.
    #[serde(default, skip_serializing_if = "AccessQuantiles::is_empty")]
    pub read_access_sequential: AccessQuantiles,
    /// Sequential reads while the device serves a write; absent: `read_access_sequential`.
    #[serde(default, skip_serializing_if = "AccessQuantiles::is_empty")]
    pub read_access_sequential_writing: AccessQuantiles,
    /// Transfer rate for reads, bytes/s, added per byte of the request.
    pub read_bandwidth: u64,
    /// Transfer rate for writes, bytes/s.
    pub write_bandwidth: u64,
    /// Flash media, random 4 KiB reads per second the device sustains (its command rate):
    /// every read request holds the media for `1e9 / random_read_iops` ns, in the order the
    /// requests start, shared with writes (device/mod.rs "media"). 0: no media limit.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub random_read_iops: u64,
    /// Flash media, steady-state random 4 KiB writes per second: a NAND drive programs and
    /// garbage-collects behind its write cache, so sustained small writes at scattered places
    /// run far below its sequential write rate. Each page of a write that does not continue the
    /// previous write holds the media for `1e9 / random_write_iops` ns, and reads started after
    /// it wait for it. A write that continues the previous one is a sequential stream (bounded
    /// by `write_bandwidth` on the link). 0: no media limit.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub random_write_iops: u64,
    /// Requests the device serves at once (internal channels / NCQ effective depth).
    pub parallelism: u32,
    /// blk-mq hardware queues with their own submission queue (`nr_hw_queues`; device/mod.rs
    /// `Sqs`): a waiting request sits in the queue of its submitting CPU (CPU mod this) and the
    /// controller takes commands from the queues in round robin. 1: one queue in arrival order
    /// (a single-queue device, or the legacy block layer).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub hw_queues: u32,
    /// NVMe Arbitration Burst: commands the controller may take from one submission queue per
    /// round-robin turn (Set Features, Arbitration; the driver leaves it at the controller's
    /// default). Only matters with `hw_queues` > 1.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub arbitration_burst: u32,
    /// Requests the driver takes from the elevator at once (dispatched and not completed):
    /// a Xen PV guest's blkfront ring, 32 (`BLK_RING_SIZE`, one page of `blkif` slots:
    /// `do_blkif_request` takes requests until `RING_FULL`), set by config/resolve.rs. Those
    /// beyond `parallelism` wait in the driver in dispatch order (the backend serves them in
    /// that order here; dom0's own elevator is not modelled), out of the elevator's reach.
    /// Absent: `parallelism` (the driver takes a request only when the device can start it;
    /// the presets' NCQ / SCSI depths are not modelled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_depth: Option<u32>,
    /// Largest merged request in pages (the queue's max_sectors_kb / 4).
    pub max_request_pages: u32,
    /// Rotational only: seek time for a one-track move.
    pub seek_min_ns: u64,
    /// Rotational only: seek time across the whole device; in between it grows with the
    /// square root of the distance (the usual arm-acceleration model).
    pub seek_full_ns: u64,
    /// Rotational only: average rotational delay (half a revolution) paid by a request that
    /// is not contiguous with the previous one.
    pub rotational_latency_ns: u64,
    /// The block layer's CPU per request, stage by stage (device/blk.rs has what each stage
    /// is and where the figures come from). Stage 1: allocating and filling the bio.
    pub bio_alloc_ns: u64,
    /// Stage 2: `submit_bio` into the plug, and the merge attempts there.
    pub plug_merge_ns: u64,
    /// Stage 3: allocating the request and its tag (0 for a bio-based driver such as brd).
    pub request_alloc_ns: u64,
    /// Stage 4: dispatch through the I/O scheduler to the driver (0 for brd: its copy,
    /// `sync_*_cpu_ns`, is its dispatch).
    pub dispatch_ns: u64,
    /// Stage 5: the completion interrupt and block softirq (for brd, `bio_endio` inline).
    pub completion_ns: u64,
    /// Synchronous devices: CPU time per page read in the caller (decompress / memcpy).
    pub sync_read_cpu_ns: u64,
    /// Synchronous devices: CPU time per page written in the caller (compress / memcpy).
    pub sync_write_cpu_ns: u64,
    /// Requests the block layer lets be outstanding (queued + in service): `nr_requests`,
    /// 128 by default (BLKDEV_MAX_RQ). Before blk-mq (2.6.28–4.14) reads and writes each have
    /// a pool of this many (`request_list.count[]`); 6.x's tags are one pool for both
    /// (engine/congestion.rs). A writer that finds its pool empty sleeps in `get_request` /
    /// `blk_mq_get_tag` until one is freed (2.6.28's direct reclaim skips a congested queue
    /// instead, may_write_to_queue).
    pub nr_requests: u32,
    /// I/O scheduler: "deadline" (mq-deadline, device/deadline.rs: merges with queued requests,
    /// sector-sorted batches of `fifo_batch`, reads first, a write batch after `writes_starved`
    /// read batches, FIFO expiry after `read_expire_ns` / `write_expire_ns`), "cfq"
    /// (device/cfq.rs: per-process read queues and a shared write queue in time slices; what a
    /// "deadline" disk gets under the 2.6.28 and 3.14 profiles unless the scheduler is set) or
    /// "none" (FIFO, the blk-mq default for NVMe).
    pub scheduler: String,
    /// mq-deadline read_expire (500 ms): a read waiting this long is dispatched next.
    #[serde(default = "default_read_expire_ns")]
    pub read_expire_ns: u64,
    /// mq-deadline write_expire (5 s).
    pub write_expire_ns: u64,
    /// mq-deadline writes_starved (2).
    pub writes_starved: u32,
    /// mq-deadline fifo_batch (16).
    pub fifo_batch: u32,
    /// CFQ `slice_idle`: how long CFQ keeps the disk for a process whose synchronous queue
    /// just emptied, waiting for its next request (device/cfq.rs). 2.6.x–4.x default HZ/125,
    /// 8 ms at HZ 250 or 1000 (block/cfq-iosched.c `cfq_slice_idle`); 0 turns idling off.
    #[serde(default = "default_cfq_slice_idle_ns")]
    pub cfq_slice_idle_ns: u64,
    /// CFQ `quantum`: requests one queue may have dispatched (in the driver) while other
    /// queues are busy, four times that when it is the only busy queue; 4 in 2.6.2x
    /// (block/cfq-iosched.c `cfq_quantum`; 8 from 2.6.33). Binds only on a driver deeper than
    /// the device (`queue_depth`): otherwise every dispatch finds the driver empty.
    #[serde(default = "default_cfq_quantum")]
    pub cfq_quantum: u32,
    /// CFQ `low_latency` (2.6.32 on, default 1; `cfqd->cfq_latency`): the asynchronous queue
    /// may have at most (time since the last synchronous completion) / `slice_sync` requests
    /// dispatched, and one when that is 0 and it has none (`cfq_may_dispatch`): writes go one
    /// at a time while reads completed within 100 ms. Set for the 2.6.32 profile's CFQ
    /// (config/resolve.rs); binds only on a driver deeper than the device.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cfq_low_latency: bool,
}

const MB: u64 = 1_000_000;

/// One 4 KiB page copied between two frames of the machine's RAM (a `memcpy` of
/// `PAGE_SIZE`): brd's `copy_to_brd` / `copy_from_brd` (the ramdisk preset's
/// `sync_*_cpu_ns`) and Xen tmem's copy to and from the guest's frame in a frontswap put or get
/// (`[frontswap] copy_ns`, config/stores.rs) are the same operation on the same host, so they
/// take one figure. ~0.5 us (8 GB/s) is an estimate for 2010 hardware, not a measurement.
pub const PAGE_COPY_NS: u64 = 500;

/// block/cfq-iosched.c's cfq_slice_idle, HZ / 125 (a preset file written before the field
/// existed gets it).
fn default_cfq_slice_idle_ns() -> u64 {
    8_000_000
}

/// block/cfq-iosched.c's cfq_quantum in 2.6.2x.
fn default_cfq_quantum() -> u32 {
    4
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

fn one() -> u32 {
    1
}

fn is_one(v: &u32) -> bool {
    *v == 1
}

/// Block/mq-deadline.c's read_expire, HZ / 2 (a preset file written before the field existed
/// gets it).
fn default_read_expire_ns() -> u64 {
    500_000_000
}

impl DeviceParams {
    /// What a request queue gets from the kernel rather than from its device: no measured
    /// access distributions, no flash-media or seek limits, 128 requests per pool
    /// (BLKDEV_MAX_RQ) of at most 128 pages (512 KiB max_sectors_kb), mq-deadline's and CFQ's
    /// default tunables. The device figures (source, latencies, bandwidths, parallelism, the
    /// block layer's per-stage CPU, the scheduler) are left empty: every preset sets its own,
    /// and `presets_name_a_source_and_pass_validation` checks that they do.
    fn queue_defaults() -> DeviceParams {
        DeviceParams {
            source: String::new(),
            rotational: false,
            queue_nonrot: None,
            synchronous: false,
            block_layer: true,
            compressed: false,
            read_latency_ns: 0,
            write_latency_ns: 0,
            read_access: AccessQuantiles::default(),
            write_access: AccessQuantiles::default(),
            read_access_writing: AccessQuantiles::default(),
            read_access_sequential: AccessQuantiles::default(),
            read_access_sequential_writing: AccessQuantiles::default(),
            read_bandwidth: 0,
            write_bandwidth: 0,
            random_read_iops: 0,
            random_write_iops: 0,
            parallelism: 0,
            hw_queues: 1,
            arbitration_burst: 1,
            queue_depth: None,
            max_request_pages: 128,
            seek_min_ns: 0,
            seek_full_ns: 0,
            rotational_latency_ns: 0,
            bio_alloc_ns: 0,
            plug_merge_ns: 0,
            request_alloc_ns: 0,
            dispatch_ns: 0,
            completion_ns: 0,
            sync_read_cpu_ns: 0,
            sync_write_cpu_ns: 0,
            nr_requests: 128,
            scheduler: String::new(),
            read_expire_ns: default_read_expire_ns(),
            write_expire_ns: 5_000_000_000,
            writes_starved: 2,
            fifo_batch: 16,
            cfq_slice_idle_ns: default_cfq_slice_idle_ns(),
            cfq_quantum: default_cfq_quantum(),
            cfq_low_latency: false,
        }
    }

    pub fn preset(name: &str) -> Option<DeviceParams> {
        Some(match name {
            // A 7200 rpm SATA disk of the 2010s (e.g. Seagate Barracuda 7200.12 datasheet:
            // 8.5 ms average seek, 4.16 ms average latency, ~125 MB/s sustained).
            "hdd" => DeviceParams {
                source: "7200 rpm SATA disk datasheet figures (avg seek 8.5 ms, 4.16 ms rotational, 125 MB/s)".into(),
                rotational: true,
                read_latency_ns: 100_000,
                write_latency_ns: 100_000,
                read_bandwidth: 125 * MB,
                write_bandwidth: 120 * MB,
                parallelism: 1,
                seek_min_ns: 1_000_000,
                seek_full_ns: 17_000_000,
                rotational_latency_ns: 4_160_000,
                bio_alloc_ns: 300,
                plug_merge_ns: 300,
                request_alloc_ns: 400,
                dispatch_ns: 500,
                completion_ns: 500,
                scheduler: "deadline".into(),
                ..DeviceParams::queue_defaults()
            },
            // A 2010-era SATA SSD (OCZ Vertex 2, the "VertexII" of seed 003): ~90 µs 4 KiB
            // read at QD1 (kernel-algorithms.md §6.3 suggests 80-100 µs), ~250 MB/s, writes
            // absorbed by the controller's cache at a similar per-request cost.
            "sata-ssd" => DeviceParams {
                source: "SATA SSD, OCZ Vertex 2 class: 90 us 4K read, 250/250 MB/s, NCQ depth ~4 effective".into(),
                rotational: false,
                read_latency_ns: 90_000,
                write_latency_ns: 60_000,
                read_bandwidth: 260 * MB,
                write_bandwidth: 250 * MB,
                parallelism: 4,
                bio_alloc_ns: 300,
                plug_merge_ns: 300,
                request_alloc_ns: 400,
                dispatch_ns: 500,
                completion_ns: 500,
                scheduler: "deadline".into(),
                ..DeviceParams::queue_defaults()
            },
            // A datacentre NVMe SSD of 2017, seed 000's "NVMe disk": Intel SSD DC P3700, whose
            // product specification (order 330566-005US) gives 20/20 µs typical read/write
            // latency, sequential 2800/1900 MB/s (the 800 GB and 1.6 TB models; 2 TB: 2000),
            // random 4 KiB up to 460K read / 175K write IOPS (steady state: preconditioned, the
            // whole span) and 265K IOPS for a 70/30 read/write mix. The model's media with
            // these two rates gives 309K for that mix (1 / (0.7/460K + 0.3/175K)): the
            // interference of writes with reads is if anything understated.
            "nvme" => DeviceParams {
                source: "NVMe SSD, Intel SSD DC P3700 specification (330566-005US): 20/20 us 4K read/write, 2800/1900 MB/s, random 4K 460K/175K IOPS, 32 in flight".into(),
                rotational: false,
                read_latency_ns: 20_000,
                write_latency_ns: 20_000,
                read_bandwidth: 2800 * MB,
                write_bandwidth: 1900 * MB,
                random_read_iops: 460_000,
                random_write_iops: 175_000,
                parallelism: 32,
                // blk-mq over NVMe (4.x drivers/nvme/host/pci.c): nvme_setup_io_queues asks the
                // controller for one I/O queue per online CPU and nvme_dev_add makes a hardware
                // context of each; the P3700 grants 32 (its MSI-X vector count, which
                // pci_alloc_irq_vectors caps the queues at; not in the product specification:
                // an assumption, and the seed's 12 writers and kswapd use fewer CPUs than that).
                // The controller arbitrates round robin (NVMe 1.2 §4.11, the mandatory
                // mechanism; Linux sets no other); Arbitration Burst is left at the
                // controller's default, which the specification does not give: 1 assumed.
                hw_queues: 32,
                arbitration_burst: 1,
                bio_alloc_ns: 300,
                plug_merge_ns: 200,
                request_alloc_ns: 300,
                dispatch_ns: 300,
                completion_ns: 400,
                scheduler: "none".into(),
                ..DeviceParams::queue_defaults()
            },
            // brd: RAM behind the block layer. Synchronous (§1.7 lists brd), so the copy runs in
            // the caller; the block layer's per-request cost is what seed 002 measures.
            // brd is bio-based (`DeviceParams::bio_based`): its "requests" are bios, which
            // swap builds one per page and a file's readahead several pages long.
            "ramdisk" => DeviceParams {
                source: "brd ramdisk: 4 KiB memcpy ~0.5 us plus the block layer's per-request cost".into(),
                rotational: false,
                synchronous: true,
                read_latency_ns: 0,
                write_latency_ns: 0,
                read_bandwidth: 8000 * MB,
                write_bandwidth: 8000 * MB,
                parallelism: 64,
                bio_alloc_ns: 500,
                plug_merge_ns: 500,
                request_alloc_ns: 0,
                dispatch_ns: 0,
                completion_ns: 500,
                sync_read_cpu_ns: PAGE_COPY_NS,
                sync_write_cpu_ns: PAGE_COPY_NS,
                scheduler: "none".into(),
                ..DeviceParams::queue_defaults()
            },
            // zram: compression in the caller, no request queue; what each page costs and
            // takes is the compressor's and the content model's (swap/zram.rs).
            "zram" => DeviceParams {
                source: "zram: [zram] compressor's per-page costs (lzbench), pages from [content], zsmalloc pool in the machine's RAM".into(),
                rotational: false,
                synchronous: true,
                block_layer: false,
                compressed: true,
                read_latency_ns: 0,
                write_latency_ns: 0,
                read_bandwidth: 8000 * MB,
                write_bandwidth: 8000 * MB,
                parallelism: 64,
                max_request_pages: 1,
                bio_alloc_ns: 0,
                plug_merge_ns: 0,
                request_alloc_ns: 0,
                dispatch_ns: 0,
                completion_ns: 0,
                scheduler: "none".into(),
                ..DeviceParams::queue_defaults()
            },
            _ => return None,
        })
    }

    pub const PRESETS: [&'static str; 5] = ["hdd", "sata-ssd", "nvme", "ramdisk", "zram"];

    /// A make_request (bio-based) driver: the synchronous devices behind the block layer,
    /// brd (`blk_queue_make_request(q, brd_make_request)` from its first version, 2.6.25;
    /// `submit_bio` in its fops today) and pmem. Every bio goes to the driver alone, which
    /// copies and ends it: merging bios into requests is the request queue's
    /// (`__make_request`'s elevator merge, `blk_attempt_plug_merge`), which such a driver never
    /// reaches. So what reaches it in one piece is one bio: a file's readahead builds bios of
    /// many pages (`mpage_readpages`), swap one bio per page (`get_swap_bio`; swap/io.rs).
    pub fn bio_based(&self) -> bool {
        self.synchronous && self.block_layer
    }

    pub fn validate(&self) -> Result<(), String> {
        if self.parallelism == 0 {
            return Err("parallelism must be at least 1".into());
        }
        if !["deadline", "cfq", "none"].contains(&self.scheduler.as_str()) {
            return Err(format!("unknown I/O scheduler {:?} (expected \"deadline\", \"cfq\" or \"none\")", self.scheduler));
        }
        if self.queue_depth.is_some_and(|d| d < self.parallelism) {
            return Err(format!("queue_depth ({}) must be at least parallelism ({}): the driver holds what the device serves", self.queue_depth.unwrap_or(0), self.parallelism));
        }
        if self.cfq_quantum == 0 {
            return Err("cfq_quantum must be at least 1".into());
        }
        if self.nr_requests == 0 {
            return Err("nr_requests must be at least 1".into());
        }
        if self.max_request_pages == 0 {
            return Err("max_request_pages must be at least 1".into());
        }
        if self.read_bandwidth == 0 || self.write_bandwidth == 0 {
            return Err("bandwidths must be positive (bytes per second)".into());
        }
        self.read_access.validate("read_access")?;
        self.write_access.validate("write_access")?;
        self.read_access_writing.validate("read_access_writing")?;
        self.read_access_sequential.validate("read_access_sequential")?;
        self.read_access_sequential_writing.validate("read_access_sequential_writing")?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_name_a_source_and_pass_validation() {
        for name in DeviceParams::PRESETS {
            let p = DeviceParams::preset(name).unwrap();
            assert!(!p.source.is_empty(), "{name}: a preset says where its figures come from");
            p.validate().unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }

    #[test]
    fn queue_defaults_alone_are_not_a_device() {
        assert!(DeviceParams::queue_defaults().validate().is_err());
    }
}
