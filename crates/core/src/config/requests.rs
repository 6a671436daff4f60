//! Request-level phases: the kv store's `kv-set` / `kv-get` (workload/kv.rs) and buffered
//! reads with an I/O depth. Checks their parameters, one clear message per mistake, and sizes
//! a kv store's slab mapping when the file leaves its size out.

use super::tasks::{Access, MappingKind, PatternKind, PhaseSpec, TaskSpec};
use super::units::Size;
use crate::mm::PAGE_SIZE;
use crate::workload::kv;

type Error = (String, String);

/// The largest pipeline / iodepth accepted (fio caps iodepth at 65536 too).
const MAX_OUTSTANDING: u32 = 65_536;

/// Validate request parameters and set the size of kv mappings given without one.
pub(super) fn resolve_requests(tasks: &mut [TaskSpec]) -> Result<(), Error> {
    check_clients(tasks)?;
    for (ti, t) in tasks.iter_mut().enumerate() {
        let instances = t.instances.max(1) as u64;
        if let Some(r) = t.ramp_time {
            if t.time_limit.is_some_and(|l| r.0 >= l.0) {
                return Err((format!("task.{ti}.ramp_time"), "expected a ramp shorter than the task's time_limit: nothing would be measured".into()));
            }
        }
        for pi in 0..t.phases.len() {
            let key = |f: &str| format!("task.{ti}.phase.{pi}.{f}");
            let ph = &t.phases[pi];
            check_outstanding(ph, &key)?;
            let is_kv = matches!(ph.pattern, PatternKind::KvSet | PatternKind::KvGet);
            if ph.pattern == PatternKind::KvClient {
                continue;
            }
            if !is_kv {
                for (k, set) in [("keys", ph.keys.is_some()), ("value_size", ph.value_size.is_some()), ("key_size", ph.key_size.is_some()), ("key_pattern", ph.key_pattern.is_some()), ("key_stddev", ph.key_stddev.is_some()), ("requests", ph.requests.is_some()), ("pipeline", ph.pipeline.is_some())] {
                    if set {
                        return Err((key(k), format!("`{k}` belongs to kv phases (pattern = \"kv-set\" or \"kv-get\")")));
                    }
                }
                continue;
            }
            let pages = kv_pages(ph, instances, &key)?;
            let Some(mi) = t.mappings.iter().position(|m| m.name == ph.mapping) else { continue };
            let m = &mut t.mappings[mi];
            if m.kind != MappingKind::Anon {
                return Err((key("mapping"), format!("a kv store keeps its slabs in anonymous memory: mapping {:?} must be kind = \"anon\"", m.name)));
            }
            if m.size.0 == 0 {
                m.size = Size(pages * PAGE_SIZE);
            } else if m.size.pages() < pages {
                return Err((format!("task.{ti}.mapping.{mi}.size"), format!("{} bytes cannot hold the slab pages of this task's kv store: it needs {} bytes (leave `size` out to have it computed)", m.size.0, pages * PAGE_SIZE)));
            }
        }
        check_same_store(t, ti)?;
    }
    Ok(())
}

/// kv-client phases: `server` names another task with kv phases and as many instances (one
/// connection per server thread, memcached's round-robin dispatch of memtier's `-t` x `-c 1`
/// connections); only `pipeline` of the kv parameters applies; one client per server.
fn check_clients(tasks: &[TaskSpec]) -> Result<(), Error> {
    let mut served = vec![false; tasks.len()];
    for (ti, t) in tasks.iter().enumerate() {
        for (pi, ph) in t.phases.iter().enumerate() {
            let key = |f: &str| format!("task.{ti}.phase.{pi}.{f}");
            if ph.pattern != PatternKind::KvClient {
                if ph.server.is_some() {
                    return Err((key("server"), "`server` belongs to kv-client phases".into()));
                }
                continue;
            }
            for (k, set) in [("keys", ph.keys.is_some()), ("value_size", ph.value_size.is_some()), ("key_size", ph.key_size.is_some()), ("key_pattern", ph.key_pattern.is_some()), ("key_stddev", ph.key_stddev.is_some()), ("requests", ph.requests.is_some())] {
                if set {
                    return Err((key(k), format!("`{k}` belongs to the server's kv phases: a kv-client sends what its server's phases serve")));
                }
            }
            if t.phases.len() != 1 || t.repeat {
                return Err((key("pattern"), "a kv-client phase is its task's whole program (it ends when its server is done), without `repeat`".into()));
            }
            let Some(name) = &ph.server else {
                return Err((key("server"), "a kv-client phase needs `server`, the task of its kv store".into()));
            };
            let Some(si) = tasks.iter().position(|s| &s.name == name && s.name != t.name) else {
                return Err((key("server"), format!("no other task named {name:?}")));
            };
            let s = &tasks[si];
            if !s.phases.iter().any(|p| matches!(p.pattern, PatternKind::KvSet | PatternKind::KvGet)) {
                return Err((key("server"), format!("task {name:?} has no kv phase to serve requests")));
            }
            if s.instances != t.instances {
                return Err((format!("task.{ti}.instances"), format!("one connection per server thread: expected {} instances as task {name:?}, got {}", s.instances, t.instances)));
            }
            if std::mem::replace(&mut served[si], true) {
                return Err((key("server"), format!("task {name:?} already has a kv-client")));
            }
        }
    }
    Ok(())
}

fn check_outstanding(ph: &PhaseSpec, key: &dyn Fn(&str) -> String) -> Result<(), Error> {
    if let Some(d) = ph.iodepth {
        if ph.access != Access::Syscall || ph.write_ratio > 0.0 {
            return Err((key("iodepth"), "`iodepth` belongs to buffered-read phases (access = \"syscall\", write_ratio = 0)".into()));
        }
        if !(1..=MAX_OUTSTANDING).contains(&d) {
            return Err((key("iodepth"), format!("expected 1..={MAX_OUTSTANDING} outstanding reads, got {d}")));
        }
    }
    if let Some(p) = ph.pipeline {
        if !(1..=MAX_OUTSTANDING).contains(&p) {
            return Err((key("pipeline"), format!("expected 1..={MAX_OUTSTANDING} outstanding requests, got {p}")));
        }
    }
    Ok(())
}

/// Pages of slab memory a kv phase needs per instance, after checking its parameters.
fn kv_pages(ph: &PhaseSpec, instances: u64, key: &dyn Fn(&str) -> String) -> Result<u64, Error> {
    let keys = ph.keys.unwrap_or(0);
    if keys < instances {
        return Err((key("keys"), format!("expected at least one key per instance ({instances}), got {keys}")));
    }
    if kv::partition(keys, instances - 1, instances).is_empty() {
        let range = kv::memtier_range(keys, instances);
        return Err((key("keys"), format!("memtier's P:P split gives each client {range} keys, which leaves the last of {instances} instances none (memtier would give that client an empty range): use at least {} keys", range * (instances - 1) + 1)));
    }
    if keys > 1 << 40 {
        return Err((key("keys"), format!("expected at most 2^40 keys, got {keys}")));
    }
    let Some(value) = ph.value_size else {
        return Err((key("value_size"), "a kv phase needs `value_size` (bytes per value, memtier -d)".into()));
    };
    if value.0 == 0 {
        return Err((key("value_size"), "expected a value of at least 1 byte".into()));
    }
    if ph.key_size == Some(0) || ph.key_size.is_some_and(|k| k > 250) {
        return Err((key("key_size"), format!("expected 1..=250 bytes (memcached's KEY_MAX_LENGTH), got {}", ph.key_size.unwrap_or(0))));
    }
    if ph.requests == Some(0) {
        return Err((key("requests"), "expected at least one request".into()));
    }
    if ph.key_stddev.is_some_and(|s| !(s > 0.0 && s.is_finite())) {
        return Err((key("key_stddev"), "expected a positive standard deviation".into()));
    }
    if ph.key_pattern == Some(super::KeyPattern::Zipf) && !(ph.zipf_theta > 0.0 && ph.zipf_theta < 10.0) {
        return Err((key("zipf_theta"), "expected 0 < zipf_theta < 10".into()));
    }
    if ph.access != Access::Pte {
        return Err((key("access"), "a kv store touches its slabs through page tables: leave `access` out".into()));
    }
    let Some(pages) = kv::kv_mapping_pages(ph, instances) else {
        let item = kv::item_size(kv::longest_key(ph), value.0);
        return Err((key("value_size"), format!("an item of {item} bytes is larger than memcached's largest chunk ({} bytes)", kv::SLAB_PAGE / 2)));
    };
    Ok(pages)
}

/// Phases of one task that share a slab mapping describe the same store.
fn check_same_store(t: &TaskSpec, ti: usize) -> Result<(), Error> {
    let kv: Vec<(usize, &PhaseSpec)> = t.phases.iter().enumerate().filter(|(_, p)| matches!(p.pattern, PatternKind::KvSet | PatternKind::KvGet)).collect();
    for (pi, p) in &kv {
        if let Some((qi, _)) = kv.iter().find(|(_, q)| q.mapping == p.mapping && (q.keys, q.value_size, q.key_size) != (p.keys, p.value_size, p.key_size)) {
            return Err((format!("task.{ti}.phase.{pi}.keys"), format!("phases {qi} and {pi} use mapping {:?} with different keys, value_size or key_size: one store has one layout", p.mapping)));
        }
    }
    Ok(())
}
