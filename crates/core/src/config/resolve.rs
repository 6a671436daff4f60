//! Defaults, presets and validation: a parsed [`Config`] becomes the [`Resolved`] configuration
//! a run actually uses.

use super::*;
use crate::device::DeviceParams;
use serde::Serialize;

/// A configuration after defaults, presets and validation: what a run actually used.
#[derive(Clone, Debug, Serialize)]
pub struct Resolved {
    #[serde(flatten)]
    pub config: Config,
    pub swap_devices: Vec<ResolvedSwap>,
    pub file_device_params: DeviceParams,
    pub profile: Profile,
}

#[derive(Clone, Debug, Serialize)]
pub struct ResolvedSwap {
    pub name: String,
    pub size: Size,
    pub priority: i32,
    pub params: DeviceParams,
}


type At<'a> = &'a dyn Fn(&str, String) -> ConfigError;

pub(super) fn resolve(mut cfg: Config, at: At) -> Result<Resolved, ConfigError> {
    super::requests::resolve_requests(&mut cfg.tasks).map_err(|(key, msg)| at(&key, msg))?;
    super::hpl::resolve_hpl(&mut cfg.tasks).map_err(|(key, msg)| at(&key, msg))?;
    super::fork::resolve_forks(&mut cfg.tasks).map_err(|(key, msg)| at(&key, msg))?;
    super::shared_file::check_shared_files(&cfg.tasks).map_err(|(key, msg)| at(&key, msg))?;
    let profile = Profile::parse(&cfg.kernel.profile)
        .ok_or_else(|| at("kernel.profile", format!("unknown kernel profile {:?} (expected \"2.6.28\", \"2.6.32\", \"3.14\", \"4.14\", \"5.15\" .. \"5.19\", \"6.1\" .. \"6.19\" or \"6.x\")", cfg.kernel.profile)))?;
    let (ratio, background) = default_dirty_ratios(profile, &cfg.kernel.profile);
    cfg.kernel.dirty_ratio.get_or_insert(ratio);
    cfg.kernel.dirty_background_ratio.get_or_insert(background);
    if cfg.sim.time_limit == Some(Duration(0)) {
        return Err(at("sim.time_limit", "expected a positive duration: 0 would end the run before anything happens (leave it out for no limit)".into()));
    }
    check_machine(&cfg, profile, at)?;
    check_kernel(&cfg.kernel, at)?;
    if cfg.costs.read_submit_cpu_ns > cfg.costs.major_fault_cpu_ns {
        return Err(at("costs.read_submit_cpu_ns", format!("expected at most costs.major_fault_cpu_ns ({} ns): it is the part of a major fault's CPU that submitting its read costs, got {}", cfg.costs.major_fault_cpu_ns, cfg.costs.read_submit_cpu_ns)));
    }
    // The resolved configuration states the figure a swap-in pays.
    cfg.costs.swapin_fault_cpu_ns = Some(cfg.costs.swapin_fault_cpu());
    check_dirty_knobs(&cfg.kernel).map_err(|(key, msg)| at(key, msg))?;
    cfg.pagecache.validate().map_err(|(key, msg)| at(key, msg))?;
    if cfg.pagecache.large_folios && (profile != Profile::V6 || cfg.kernel.reclaim != "classic") {
        return Err(at("pagecache.large_folios", format!("large page-cache folios are modelled for kernel.profile \"6.x\" with kernel.reclaim = \"classic\" only (got {:?} with {:?})", cfg.kernel.profile, cfg.kernel.reclaim)));
    }
    let (file_device_params, swap_devices) = resolve_devices(&cfg, profile, at)?;
    check_tasks(&cfg, at)?;
    validate_messages(&cfg, at)?;
    if cfg.sim.sample_interval.0 < 1_000_000 {
        return Err(at("sim.sample_interval", "expected at least 1ms".into()));
    }
    if cfg.sim.sync_quantum.0 == 0 || cfg.sim.sched_slice.0 == 0 {
        return Err(at("sim", "sync_quantum and sched_slice must be positive".into()));
    }
    Ok(Resolved { config: cfg, swap_devices, file_device_params, profile })
}

/// `[machine]`: CPUs, RAM above the watermarks, the memory cgroup and its statistics reader.
fn check_machine(cfg: &Config, profile: Profile, at: At) -> Result<(), ConfigError> {
    let m = &cfg.machine;
    if m.cpus == 0 || m.cpus > 1024 {
        return Err(at("machine.cpus", format!("expected 1..=1024 CPUs, got {}", m.cpus)));
    }
    if let Some(online) = m.online_cpus.filter(|&o| o < m.cpus || o > 1024) {
        return Err(at("machine.online_cpus", format!("expected machine.cpus ({})..=1024 CPUs, got {online}", m.cpus)));
    }
    if m.ram.pages() == 0 {
        return Err(at("machine.ram", "RAM must be at least one page".into()));
    }
    if m.ram.0 > (1u64 << 42) {
        return Err(at("machine.ram", "at most 4 TiB of RAM can be simulated (32-bit frame numbers)".into()));
    }
    let managed = m.ram.pages().saturating_sub(m.kernel_reserved.pages());
    let wm = zone_watermarks(cfg, profile);
    if managed <= wm.high * 2 + 64 {
        return Err(at(
            "machine.ram",
            format!(
                "RAM of {} pages leaves {} pages after the kernel's reserve of {} pages: not enough above the high watermark ({} pages)",
                m.ram.pages(), managed, m.kernel_reserved.pages(), wm.high
            ),
        ));
    }
    if let Some(limit) = m.memcg_limit {
        if limit.pages() < 64 {
            return Err(at("machine.memcg_limit", "a memory cgroup limit below 64 pages cannot run a program".into()));
        }
    }
    if let Some(path) = &m.memcg_path {
        if m.memcg_limit.is_none() {
            return Err(at("machine.memcg_path", "a memory cgroup path needs machine.memcg_limit (without one the tasks run in the root cgroup)".into()));
        }
        if memcg_path_depth(path).is_none() {
            return Err(at("machine.memcg_path", format!("expected a path below the cgroup root such as \"user.slice/test\" (names separated by '/', none empty, '.' or '..'), got {path:?}")));
        }
    }
    if m.memory_stat_reader.is_some_and(|d| d.0 < 1_000_000) {
        return Err(at("machine.memory_stat_reader", "expected at least 1ms".into()));
    }
    if m.memory_stat_reader_jitter.0 > 0 && m.memory_stat_reader.is_none_or(|d| m.memory_stat_reader_jitter.0 >= d.0) {
        return Err(at("machine.memory_stat_reader_jitter", "expected less than machine.memory_stat_reader (a read is late by less than one period)".into()));
    }
    if !(1..=2).contains(&m.cgroup_version) {
        return Err(at("machine.cgroup_version", format!("expected 1 (legacy) or 2 (unified), got {}", m.cgroup_version)));
    }
    Ok(())
}

/// How many cgroups a `machine.memcg_path` names below the root ("user.slice/test": 2), which
/// is how many ancestors' lruvecs sit above the group's own, the root's included; None for a
/// path that is not a cgroup's.
pub fn memcg_path_depth(path: &str) -> Option<usize> {
    let parts: Vec<&str> = path.split('/').collect();
    let ok = parts.iter().all(|p| !p.is_empty() && *p != "." && *p != ".." && !p.contains(char::is_whitespace));
    ok.then_some(parts.len())
}

/// `[kernel]`: knobs in their kernel's ranges, policies that exist, MGLRU only where it was merged.
fn check_kernel(k: &Kernel, at: At) -> Result<(), ConfigError> {
    if k.swappiness > 200 {
        return Err(at("kernel.swappiness", format!("expected 0..=200, got {}", k.swappiness)));
    }
    if k.page_cluster > 31 {
        return Err(at("kernel.page_cluster", format!("expected 0..=31, got {}", k.page_cluster)));
    }
    if !(1..=3000).contains(&k.watermark_scale_factor) {
        return Err(at("kernel.watermark_scale_factor", "expected 1..=3000".into()));
    }
    if !READAHEAD_POLICIES.contains(&k.readahead.as_str()) {
        return Err(at("kernel.readahead", format!("unknown readahead policy {:?} (expected one of {})", k.readahead, READAHEAD_POLICIES.join(", "))));
    }
    if !BAILOUT_POLICIES.contains(&k.bailout.as_str()) {
        return Err(at("kernel.bailout", format!("unknown bail-out policy {:?} (expected one of {})", k.bailout, BAILOUT_POLICIES.join(", "))));
    }
    if !RECLAIM_POLICIES.contains(&k.reclaim.as_str()) {
        return Err(at("kernel.reclaim", format!("unknown reclaim policy {:?}: expected one of {}", k.reclaim, RECLAIM_POLICIES.join(", "))));
    }
    if k.lru_gen_enabled > 0x7 {
        return Err(at("kernel.lru_gen_enabled", format!("expected capability bits 0x0..=0x7, got {:#x}", k.lru_gen_enabled)));
    }
    if k.reclaim == "mglru" {
        if Profile::parse(&k.profile) != Some(Profile::V6) || super::version(&k.profile).is_some_and(|v| v < (6, 1)) {
            return Err(at("kernel.reclaim", format!("MGLRU was merged in 6.1: kernel.profile {:?} has no multi-generational LRU (use 6.x)", k.profile)));
        }
        if k.lru_gen_enabled & 0x1 == 0 {
            return Err(at("kernel.lru_gen_enabled", "without bit 0x1 the kernel runs the classic LRU: set kernel.reclaim = \"classic\"".into()));
        }
    }
    if !(100..=1000).contains(&k.hz) {
        return Err(at("kernel.hz", "expected 100..=1000".into()));
    }
    Ok(())
}

/// The file device and the swap devices: presets with their overrides, and each era's default
/// elevator and brd flags.
fn resolve_devices(cfg: &Config, profile: Profile, at: At) -> Result<(DeviceParams, Vec<ResolvedSwap>), ConfigError> {
    let m = &cfg.machine;
    let mut file_device_params = device_with_overrides(&m.file_device, &toml::Table::new()).map_err(|e| match e {
        DeviceError::Preset(m) | DeviceError::Param(_, m) => at("machine.file_device", m),
    })?;
    if profile <= Profile::V3_14 && file_device_params.scheduler == "deadline" {
        file_device_params.scheduler = "cfq".into();
    }
    file_device_params.cfq_low_latency |= era_2_6_32(&cfg.kernel.profile) && file_device_params.scheduler == "cfq";
    xen_pv_blkfront_queue(m, profile, &mut file_device_params, &toml::Table::new());
    let mut swap_devices = Vec::new();
    for (i, s) in cfg.swap.iter().enumerate() {
        let mut params = device_with_overrides(&s.device, &s.params).map_err(|e| match e {
            DeviceError::Preset(m) => at(&format!("swap.{i}.device"), m),
            DeviceError::Param(k, m) => at(&format!("swap.{i}.params.{k}"), m),
        })?;
        if profile <= Profile::V3_14 && params.scheduler == "deadline" && !s.params.contains_key("scheduler") {
            // CFQ was the default elevator from 2.6.18 to the end of the single-queue layer.
            params.scheduler = "cfq".into();
        }
        if era_2_6_32(&cfg.kernel.profile) && params.scheduler == "cfq" && !s.params.contains_key("cfq_low_latency") {
            // 2.6.32 added CFQ's low_latency, on by default (cfq_init_queue: cfq_latency = 1).
            params.cfq_low_latency = true;
        }
        if era_2_6_32(&cfg.kernel.profile) && s.device == "ramdisk" && params.queue_nonrot.is_none() {
            // 2.6.32's brd_alloc did not set QUEUE_FLAG_NONROT: swap saw a disk.
            params.queue_nonrot = Some(false);
        }
        xen_pv_blkfront_queue(m, profile, &mut params, &s.params);
        if s.size.pages() < 2 {
            return Err(at(&format!("swap.{i}.size"), "a swap device needs at least 2 pages (slot 0 holds the header)".into()));
        }
        if s.size.pages() >= (1 << 32) {
            return Err(at(&format!("swap.{i}.size"), "at most 16 TiB per swap device".into()));
        }
        swap_devices.push(ResolvedSwap {
            name: format!("swap{i}:{}", s.device),
            size: s.size,
            priority: s.priority.unwrap_or(-1 - i as i32),
            params,
        });
    }
    if cfg.swap.len() > 32 {
        return Err(at("swap", "at most 32 swap devices".into()));
    }
    Ok((file_device_params, swap_devices))
}

/// A Xen PV guest's disks are blkfront virtual block devices (xvd*), whatever spins behind them
/// in dom0, and blkfront marks its queue `QUEUE_FLAG_VIRT`, which is `QUEUE_FLAG_NONROT` ("paravirt
/// device", include/linux/blkdev.h since 2.6.28): 2.6.32's `xlvbd_init_blk_queue` sets it
/// (drivers/block/xen-blkfront.c, read in a 2.6.32 xen tree), as `blkif_set_queue_limits` does
/// in later kernels. So swapon marks a swap area on it SWP_SOLIDSTATE, and the swap allocator
/// and CFQ treat it as an SSD; the media's own figures (seeks, rotation) stay the device's.
/// Devices inside the guest are not blkfront: brd, zram and pmem are synchronous (they run in
/// the submitter's context, `DeviceParams::synchronous`). A flag stated in the device's own
/// parameters wins.
///
/// A blkfront request is one ring slot of at most `BLKIF_MAX_SEGMENTS_PER_REQUEST` (11)
/// segments of at most a page each (`xlvbd_init_blk_queue`: `blk_queue_max_phys_segments` and
/// `blk_queue_max_hw_segments` 11, `blk_queue_max_segment_size(PAGE_SIZE)`, segment boundary
/// `PAGE_SIZE - 1`; include/xen/interface/io/blkif.h "carefully chosen so that
/// sizeof(blkif_ring_t) <= PAGE_SIZE"), so the block layer merges at most 11 pages into one
/// request. Indirect descriptors (3.11) lifted the limit where the backend offers them; the
/// later profiles keep the device's own limit. A limit stated in the device's parameters wins.
///
/// The ring has `BLK_RING_SIZE` = `__RING_SIZE(struct blkif_sring *, PAGE_SIZE)` slots: the
/// largest power of two of 112-byte `blkif` request/response slots that fits a 4 KiB page
/// after the ring header, 32 (xen-blkfront.c of the same tree; `do_blkif_request` moves
/// requests from the elevator to the ring until `RING_FULL`, then stops the queue until a
/// response frees a slot). So the guest's driver holds up to 32 requests that the elevator can
/// no longer reorder (`DeviceParams::queue_depth`), whatever the backend's disk serves at once;
/// multi-page rings (`max_ring_page_order`, 4.x) are not the default. A depth stated in the
/// device's parameters wins.
fn xen_pv_blkfront_queue(m: &Machine, profile: Profile, params: &mut DeviceParams, stated: &toml::Table) {
    const BLKIF_MAX_SEGMENTS_PER_REQUEST: u32 = 11;
    const BLK_RING_SIZE: u32 = 32;
    if !m.xen_pv || params.synchronous {
        return;
    }
    if params.queue_nonrot.is_none() {
        params.queue_nonrot = Some(true);
    }
    if !stated.contains_key("queue_depth") {
        params.queue_depth = Some(BLK_RING_SIZE.max(params.parallelism));
    }
    if profile == Profile::V2_6_28 && !stated.contains_key("max_request_pages") {
        params.max_request_pages = params.max_request_pages.min(BLKIF_MAX_SEGMENTS_PER_REQUEST);
    }
}

/// `[[task]]`s: instances, mappings and phases that a program can run.
fn check_tasks(cfg: &Config, at: At) -> Result<(), ConfigError> {
    if cfg.tasks.is_empty() {
        return Err(at("task", "a workload needs at least one [[task]]".into()));
    }
    let mut total_instances = 0u64;
    for (ti, t) in cfg.tasks.iter().enumerate() {
        if t.instances == 0 {
            return Err(at(&format!("task.{ti}.instances"), "expected at least 1".into()));
        }
        total_instances += t.instances as u64;
        if t.mappings.is_empty() {
            return Err(at(&format!("task.{ti}"), "a task needs at least one [[task.mapping]]".into()));
        }
        if t.phases.is_empty() {
            return Err(at(&format!("task.{ti}"), "a task needs at least one [[task.phase]]".into()));
        }
        if t.time_limit == Some(Duration(0)) {
            return Err(at(&format!("task.{ti}.time_limit"), "expected a positive duration: 0 would stop the task before it starts (leave it out for no limit)".into()));
        }
        if t.repeat && t.time_limit.is_none() && cfg.sim.time_limit.is_none() {
            return Err(at(&format!("task.{ti}.repeat"), "repeat = true needs a time_limit (on the task or in [sim])".into()));
        }
        for (mi, mp) in t.mappings.iter().enumerate() {
            if mp.size.pages() == 0 {
                return Err(at(&format!("task.{ti}.mapping.{mi}.size"), format!("mapping {:?} has zero pages: expected at least 4096 bytes", mp.name)));
            }
            if mp.size.pages() >= (1 << 31) {
                return Err(at(&format!("task.{ti}.mapping.{mi}.size"), "at most 8 TiB per mapping".into()));
            }
            if t.mappings[..mi].iter().any(|o| o.name == mp.name) {
                return Err(at(&format!("task.{ti}.mapping.{mi}.name"), format!("duplicate mapping name {:?}", mp.name)));
            }
        }
        for (pi, ph) in t.phases.iter().enumerate() {
            let key = |f: &str| format!("task.{ti}.phase.{pi}.{f}");
            if !t.mappings.iter().any(|mp| mp.name == ph.mapping) {
                let names: Vec<&str> = t.mappings.iter().map(|m| m.name.as_str()).collect();
                return Err(at(&key("mapping"), format!("no mapping named {:?} in this task (it has: {})", ph.mapping, names.join(", "))));
            }
            if !(0.0..=1.0).contains(&ph.write_ratio) {
                return Err(at(&key("write_ratio"), format!("expected a fraction in 0..=1, got {}", ph.write_ratio)));
            }
            if !(ph.cycles > 0.0 && ph.cycles.is_finite()) {
                return Err(at(&key("cycles"), format!("expected a positive number of cycles, got {}", ph.cycles)));
            }
            if ph.touches == Some(0) {
                return Err(at(&key("touches"), "expected at least one touch".into()));
            }
            if ph.barrier && t.repeat {
                return Err(at(&key("barrier"), "a barrier between phases needs a program that runs once (no `repeat`)".into()));
            }
            if ph.pattern == PatternKind::Zipf && !(ph.zipf_theta > 0.0 && ph.zipf_theta < 10.0) {
                return Err(at(&key("zipf_theta"), "expected 0 < zipf_theta < 10".into()));
            }
            if ph.stride == 0 {
                return Err(at(&key("stride"), "expected a stride of at least 1 page".into()));
            }
            if ph.block_pages == 0 {
                return Err(at(&key("block_pages"), "expected at least 1 page per block".into()));
            }
        }
    }
    if total_instances > 100_000 {
        return Err(at("task", "at most 100000 task instances".into()));
    }
    Ok(())
}

/// Channels, message phases and buffered-I/O phases: names resolve, channel indices stay in
/// their arrays, and no channel is asked for more messages than are sent to it (a receiver
/// would wait forever).
fn validate_messages(cfg: &Config, at: At) -> Result<(), ConfigError> {
    if cfg.tasks.iter().all(|t| t.background) {
        return Err(at("task", "every task is background: the run needs at least one task to wait for".into()));
    }
    validate_channel_arrays(cfg, at)?;
    let mut traffic = ChannelTraffic::new(cfg);
    for (ti, t) in cfg.tasks.iter().enumerate() {
        if t.group_size == Some(0) {
            return Err(at(&format!("task.{ti}.group_size"), "expected at least 1".into()));
        }
        if let Some((mi, _)) = t.mappings.iter().enumerate().find(|(_, m)| m.exec && m.kind != MappingKind::File) {
            return Err(at(&format!("task.{ti}.mapping.{mi}.exec"), "exec = true needs a mapping of kind \"file\" (the kernel protects executable file pages only)".into()));
        }
        for (pi, ph) in t.phases.iter().enumerate() {
            let key = |f: &str| format!("task.{ti}.phase.{pi}.{f}");
            validate_phase_messages(cfg, t, ph, &key, at, &mut traffic)?;
        }
    }
    traffic.check_balance(cfg, at)
}

/// Each `[[channel]]` array: a unique non-empty name, at least one channel, a capacity and a
/// footprint of at least a byte; at most 10 million channels in all.
fn validate_channel_arrays(cfg: &Config, at: At) -> Result<(), ConfigError> {
    let mut total = 0u64;
    for (ci, c) in cfg.channels.iter().enumerate() {
        if c.name.is_empty() || cfg.channels[..ci].iter().any(|o| o.name == c.name) {
            return Err(at(&format!("channel.{ci}.name"), format!("channel names must be non-empty and unique, got {:?}", c.name)));
        }
        if c.count == 0 {
            return Err(at(&format!("channel.{ci}.count"), "expected at least 1 channel".into()));
        }
        if c.capacity.0 == 0 {
            return Err(at(&format!("channel.{ci}.capacity"), "expected a capacity of at least 1 byte".into()));
        }
        if c.footprint.is_some_and(|f| f.0 == 0) {
            return Err(at(&format!("channel.{ci}.footprint"), "expected a footprint of at least 1 byte per message".into()));
        }
        total += c.count as u64;
    }
    if total > 10_000_000 {
        return Err(at("channel", "at most 10 million channels".into()));
    }
    Ok(())
}

/// Messages sent to and received from each channel of each array, and which arrays a
/// repeating task uses (its traffic has no end, so it cannot be balanced).
struct ChannelTraffic {
    sent: Vec<Vec<u64>>,
    received: Vec<Vec<u64>>,
    repeated: Vec<bool>,
}

impl ChannelTraffic {
    fn new(cfg: &Config) -> Self {
        let sent: Vec<Vec<u64>> = cfg.channels.iter().map(|c| vec![0; c.count as usize]).collect();
        ChannelTraffic { received: sent.clone(), sent, repeated: vec![false; cfg.channels.len()] }
    }

    /// No receiver of a channel that no repeating task uses waits for more messages than
    /// its senders send (it would block forever).
    fn check_balance(&self, cfg: &Config, at: At) -> Result<(), ConfigError> {
        for (ci, c) in cfg.channels.iter().enumerate() {
            if self.repeated[ci] {
                continue;
            }
            let (sent, recvd) = (&self.sent[ci], &self.received[ci]);
            if let Some(k) = (0..c.count as usize).find(|&k| recvd[k] > sent[k]) {
                return Err(at(
                    &format!("channel.{ci}"),
                    format!("channel {:?}[{k}]: receivers wait for {} messages but senders send {}: the receivers would block forever", c.name, recvd[k], sent[k]),
                ));
            }
        }
        Ok(())
    }
}

/// One phase's message fields: only message phases have them, a message phase names a
/// declared channel array and a message count, and every instance's channels lie inside the
/// array. Adds the phase's messages to `traffic`.
fn validate_phase_messages(cfg: &Config, t: &TaskSpec, ph: &PhaseSpec, key: &dyn Fn(&str) -> String, at: At, traffic: &mut ChannelTraffic) -> Result<(), ConfigError> {
    let msg = matches!(ph.pattern, PatternKind::Send | PatternKind::Recv);
    if ph.access == Access::Syscall {
        let kind = t.mappings.iter().find(|m| m.name == ph.mapping).map(|m| m.kind);
        if kind != Some(MappingKind::File) {
            return Err(at(&key("access"), "access = \"syscall\" (buffered read/write) needs a mapping of kind \"file\"".into()));
        }
        if msg {
            return Err(at(&key("access"), "message phases touch their buffer through page tables: use access = \"pte\"".into()));
        }
    }
    if !msg {
        for (k, set) in [("channel", ph.channel.is_some()), ("messages", ph.messages.is_some()), ("bytes", ph.bytes.is_some()), ("fanout", ph.fanout.is_some())] {
            if set {
                return Err(at(&key(k), format!("`{k}` belongs to message phases (pattern = \"send\" or \"recv\")")));
            }
        }
        return Ok(());
    }
    let Some(name) = &ph.channel else {
        return Err(at(&key("pattern"), "a message phase needs `channel`".into()));
    };
    let Some(ci) = cfg.channels.iter().position(|c| &c.name == name) else {
        let names: Vec<&str> = cfg.channels.iter().map(|c| c.name.as_str()).collect();
        return Err(at(&key("channel"), format!("no [[channel]] named {name:?} (declared: {})", if names.is_empty() { "none".into() } else { names.join(", ") })));
    };
    let Some(n) = ph.messages.filter(|&n| n > 0) else {
        return Err(at(&key("messages"), "a message phase needs `messages` >= 1".into()));
    };
    if ph.pattern == PatternKind::Recv && (ph.fanout.is_some() || ph.bytes.is_some()) {
        return Err(at(&key("fanout"), "`fanout` and `bytes` belong to send phases; a receiver takes what arrives".into()));
    }
    if ph.fanout == Some(0) {
        return Err(at(&key("fanout"), "expected at least 1 destination".into()));
    }
    if ph.bytes.is_some_and(|b| b.0 == 0 || b.0 > u32::MAX as u64) {
        return Err(at(&key("bytes"), "expected 1 byte .. 4 GiB per message".into()));
    }
    let count = cfg.channels[ci].count as u64;
    if t.repeat {
        traffic.repeated[ci] = true;
    }
    for inst in 0..t.instances {
        let r = phase_channels(t, ph, inst);
        if r.end > count {
            return Err(at(
                &key("index"),
                format!("instance {inst} of task {:?} uses channels {}..{} of {name:?}, which has {count} (give the channel array `count = {}` or change `index`/`fanout`/`group_size`)", t.name, r.start, r.end, r.end.max(count)),
            ));
        }
        let per_channel = if ph.pattern == PatternKind::Send { &mut traffic.sent[ci] } else { &mut traffic.received[ci] };
        for c in r {
            per_channel[c as usize] += n;
        }
    }
    Ok(())
}

/// `vm_dirty_ratio` / `dirty_background_ratio` as the profile's kernel set them
/// (mm/page-writeback.c): 10 / 5 from 2.6.22 to 2.6.29, 20 / 10 since 2.6.30.
fn default_dirty_ratios(profile: Profile, name: &str) -> (u64, u64) {
    if profile == Profile::V2_6_28 && !super::era_2_6_32(name) {
        (10, 5)
    } else {
        (20, 10)
    }
}

/// The `vm.dirty_*` sysctls' own bounds (kernel/sysctl.c: ratios 0..=100, `dirty_bytes` at
/// least two pages when set).
fn check_dirty_knobs(k: &Kernel) -> Result<(), (&'static str, String)> {
    for (key, ratio) in [("kernel.dirty_ratio", k.dirty_ratio), ("kernel.dirty_background_ratio", k.dirty_background_ratio)] {
        if let Some(r) = ratio.filter(|&r| r > 100) {
            return Err((key, format!("expected a percentage 0..=100, got {r}")));
        }
    }
    if k.dirty_bytes != 0 && k.dirty_bytes < 2 * crate::mm::PAGE_SIZE {
        return Err(("kernel.dirty_bytes", format!("expected 0 or at least 8192, got {}", k.dirty_bytes)));
    }
    // Keep jiffy and nanosecond arithmetic far from overflow: a day is beyond any run.
    for (key, cs) in [("kernel.dirty_expire_centisecs", k.dirty_expire_centisecs), ("kernel.dirty_writeback_centisecs", k.dirty_writeback_centisecs)] {
        if cs > 8_640_000 {
            return Err((key, format!("expected at most 8640000 (a day), got {cs}")));
        }
    }
    Ok(())
}

