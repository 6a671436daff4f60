//! A memcached-like key-value store driven by a memtier-like client (`pattern = "kv-set"` /
//! `"kv-get"`): where each item lives in slab-allocated anonymous memory, which keys a client
//! asks for, and the pages each request touches.
//!
//! **Slab classes** (memcached 1.6 `slabs_init`): the smallest chunk is `sizeof(item)` (48 B)
//! plus the default `chunk_size` (48 B) = 96 B; each next class is the previous one times the
//! growth factor 1.25 (`-f`), rounded up to 8 bytes (`CHUNK_ALIGN_BYTES`), up to half a slab
//! page (`slab_chunk_max`). An item goes in the smallest class whose chunk holds it; its size
//! is `ITEM_ntotal`: the 48-byte header, 8 bytes of CAS (on by default), the key and its NUL,
//! the client flags when non-zero (memtier sends 0: none) and the value with its "\r\n".
//!
//! **Slab pages**: a class takes 1 MiB pages (`-I`, `settings.slab_page_size`) and packs
//! `1 MiB / chunk` chunks into each, handing them out in order: memcached's free list of a new
//! page yields its chunks in address order, so a fill in key order lays items out in key order.
//! The mapping holding the slabs is sized by the resolver (`kv_mapping_pages`).
//!
//! **Threads**: memcached's worker threads share one slab arena; here each server thread is a
//! task instance holding the keys its client covers in the `P:P` fill (memtier splits the key
//! range into contiguous parts of `(keys - 1) / clients + 1`, the last client taking what is
//! left: [`partition`]) in its own arena. Gets then draw keys from the instance's own part: for
//! uniform (`R:R`) gets every item sees the same request rate as in a shared arena; what the
//! model loses is two threads faulting on one page.
//!
//! **How many**: a phase without `requests` sends what memtier's `-n allkeys` sends per client
//! ([`memtier_allkeys_requests`]): its part once for a `P:P` fill, but `keys - 1` requests for
//! any other pattern, so `R:R` gets make as many passes over the store as there are clients.
//!
//! **Requests**: each request is one [`Step::Op`] (`Op::Request`: the server's CPU per request,
//! and the request's bytes on the wire) followed by the touches of every page the item spans: a set
//! writes them all, a get reads them all (the key compare reads the header and key, the reply
//! is sent from the item's memory). A request's bytes are the binary protocol's: the 24-byte
//! header and the key, plus for a SET 8 bytes of extras and the value. That is what
//! memtier's KB/sec counts in seed 004: Ops/sec times the mean GET request (24 + 15.83 bytes
//! for keys 1..65,000,000) gives the posted KB/sec to seven digits in both rows.
//!
//! Keys are memtier's unless `key_size` is given: "memtier-" and the key's number, so their
//! length grows with the number; the layout sizes items for the longest key of the store.

use crate::config::{KeyPattern, PatternKind, PhaseSpec};
use crate::mm::PAGE_SIZE;
use crate::rng::Rng;
use crate::workload::{Touch, Zipf};

/// memcached's `sizeof(item)` on a 64-bit build (memcached.h: the item header).
pub const ITEM_HEADER: u64 = 48;
/// The CAS value stored with every item unless `-C` (use_cas defaults to on).
pub const ITEM_CAS: u64 = 8;
/// Default `chunk_size` (`-n`): the smallest chunk is the header plus this.
pub const CHUNK_SIZE: u64 = 48;
/// Default growth factor (`-f`).
pub const GROWTH_FACTOR: f64 = 1.25;
/// `CHUNK_ALIGN_BYTES`.
pub const CHUNK_ALIGN: u64 = 8;
/// Default slab page size (`-I`, `settings.slab_page_size`): 1 MiB.
pub const SLAB_PAGE: u64 = 1 << 20;
/// memtier's default key prefix, "memtier-": a key is the prefix and the key's number in
/// decimal (`--key-prefix`).
pub const KEY_PREFIX: u64 = 8;
/// Binary protocol: the request header.
pub const BINARY_HEADER: u64 = 24;
/// Binary protocol: a SET's extras (flags and expiry).
pub const BINARY_SET_EXTRAS: u64 = 8;

/// The length of memtier's key number `k` (1-based): the prefix and its decimal digits.
pub fn memtier_key_len(k: u64) -> u64 {
    KEY_PREFIX + k.max(1).ilog10() as u64 + 1
}

/// The chunk sizes of memcached's slab classes with the default settings, smallest first.
pub fn slab_classes() -> Vec<u64> {
    let chunk_max = SLAB_PAGE / 2;
    let mut size = (ITEM_HEADER + CHUNK_SIZE) as f64;
    let mut out = Vec::new();
    loop {
        let s = (size as u64).next_multiple_of(CHUNK_ALIGN);
        if s as f64 > chunk_max as f64 / GROWTH_FACTOR {
            break;
        }
        out.push(s);
        size = s as f64 * GROWTH_FACTOR;
    }
    out.push(chunk_max);
    out
}

/// `ITEM_ntotal` of an item with this key and value (flags 0, CAS on).
pub fn item_size(key_size: u64, value_size: u64) -> u64 {
    ITEM_HEADER + ITEM_CAS + key_size + 1 + value_size + 2
}

/// Where a store's items live: the chunk of their slab class, chunks per 1 MiB slab page,
/// the item's size, and how many keys the instance holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlabLayout {
    pub chunk: u64,
    pub per_slab: u64,
    pub item: u64,
    pub keys: u64,
}

impl SlabLayout {
    /// The layout for `keys` items of `value_size` bytes with keys of `key_size` bytes; None
    /// when the item is larger than the largest chunk (memcached would chain it).
    pub fn new(keys: u64, key_size: u64, value_size: u64) -> Option<SlabLayout> {
        let item = item_size(key_size, value_size);
        let chunk = slab_classes().into_iter().find(|&c| c >= item)?;
        Some(SlabLayout { chunk, per_slab: SLAB_PAGE / chunk, item, keys })
    }

    /// Pages of anonymous memory the slab pages of all keys occupy.
    pub fn pages(&self) -> u64 {
        self.keys.div_ceil(self.per_slab) * (SLAB_PAGE / PAGE_SIZE)
    }

    /// The first and last page (inclusive) of item `i`.
    pub fn item_pages(&self, i: u64) -> (u64, u64) {
        let at = (i / self.per_slab) * SLAB_PAGE + (i % self.per_slab) * self.chunk;
        (at / PAGE_SIZE, (at + self.item - 1) / PAGE_SIZE)
    }
}

/// Keys per client of memtier's `P` pattern over keys 1..=`keys` split among `n` clients:
/// `(key_maximum - key_minimum) / (clients * threads) + 1` (memtier_benchmark client.cpp,
/// `client::setup_client`).
pub fn memtier_range(keys: u64, n: u64) -> u64 {
    keys.saturating_sub(1) / n.max(1) + 1
}

/// The keys of instance `inst` of `n`: memtier's `P` pattern gives client i the contiguous
/// keys from `i * range` ([`memtier_range`]), and the last client what is left, which is at
/// most `range` keys (`client::setup_client`). The resolver rejects stores where the last
/// client would get none.
pub fn partition(keys: u64, inst: u64, n: u64) -> std::ops::Range<u64> {
    let range = memtier_range(keys, n);
    let start = (range * inst).min(keys);
    let end = if inst + 1 >= n { keys } else { (start + range).min(keys) };
    start..end
}

/// memtier's `-n` when none is given: 10,000 requests per client (`config_init_defaults`).
pub const MEMTIER_DEFAULT_REQUESTS: u64 = 10_000;

/// memtier's `-n allkeys`, the requests of each client when a kv phase gives no `requests`
/// (memtier_benchmark.cpp `config_init_defaults`): `key_maximum - key_minimum`, and for the
/// `P:P` pattern that divided by the clients (`clients * threads`) plus one; a count of 0
/// (one key, random gets) falls back to memtier's default `-n`. The count is per client:
/// `client::finished` ends a client when its own processed requests reach it. So a `P:P` fill
/// sets each client's part once, while `R:R` gets over keys 1..K send K - 1 gets *per client*,
/// `clients` passes over the whole store in all (seed 004: 36 x 64,999,999 gets).
pub fn memtier_allkeys_requests(keys: u64, parallel: bool, clients: u64) -> u64 {
    let span = keys.saturating_sub(1);
    let n = if parallel { memtier_range(keys, clients) } else { span };
    if n == 0 {
        MEMTIER_DEFAULT_REQUESTS
    } else {
        n
    }
}

/// The layout of a kv phase's keys for one instance of its task.
pub fn layout_of(spec: &PhaseSpec, inst: u64, instances: u64) -> Option<SlabLayout> {
    let keys = spec.keys.unwrap_or(0);
    let part = partition(keys, inst, instances);
    SlabLayout::new(part.end - part.start, longest_key(spec), spec.value_size.map_or(0, |s| s.0))
}

/// The longest key of a kv phase's store: `key_size`, or memtier's key for the last number.
pub fn longest_key(spec: &PhaseSpec) -> u64 {
    spec.key_size.unwrap_or_else(|| memtier_key_len(spec.keys.unwrap_or(1)))
}

/// Pages the slab mapping of a task's kv phase needs: its largest instance's keys.
pub fn kv_mapping_pages(spec: &PhaseSpec, instances: u64) -> Option<u64> {
    // The first instance holds the most keys: a full memtier range (the last only what is left).
    layout_of(spec, 0, instances).map(|l| l.pages())
}

#[derive(Clone, Debug)]
enum KeyOrder {
    Parallel,
    Random,
    /// memtier `G`: normal around `median` with `stddev`, clamped to the range.
    Gaussian { median: f64, stddev: f64 },
    Zipf(Zipf, u64),
}

/// What a kv phase yields next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KvStep {
    /// A request begins: the server's CPU, and the request's bytes on the wire.
    Request { bytes: u32 },
    Touch(Touch),
}

/// The requests of one kv phase of one instance.
#[derive(Clone, Debug)]
pub struct KvGen {
    layout: SlabLayout,
    order: KeyOrder,
    write: bool,
    value: u64,
    /// `key_size`, or None for memtier's keys; the number of the instance's first key.
    key_size: Option<u64>,
    first_key: u64,
    requests: u64,
    done: u64,
    /// Pages of the current item still to touch: (next, last).
    pages: Option<(u64, u64)>,
}

impl KvGen {
    pub fn new(spec: &PhaseSpec, inst: u64, instances: u64) -> KvGen {
        let layout = layout_of(spec, inst, instances).expect("validated: the item fits a slab class");
        let n = layout.keys.max(1);
        let write = spec.pattern == PatternKind::KvSet;
        let default = if write { KeyPattern::Parallel } else { KeyPattern::Random };
        let pattern = spec.key_pattern.unwrap_or(default);
        let order = match pattern {
            KeyPattern::Parallel => KeyOrder::Parallel,
            KeyPattern::Random => KeyOrder::Random,
            KeyPattern::Gaussian => KeyOrder::Gaussian { median: (n as f64 - 1.0) / 2.0, stddev: spec.key_stddev.unwrap_or(n as f64 / 6.0) },
            KeyPattern::Zipf => KeyOrder::Zipf(Zipf::new(n, spec.zipf_theta), super::scatter_multiplier(n)),
        };
        let parallel = pattern == KeyPattern::Parallel;
        let requests = spec.requests.unwrap_or_else(|| memtier_allkeys_requests(spec.keys.unwrap_or(0), parallel, instances));
        let first_key = partition(spec.keys.unwrap_or(0), inst, instances).start + 1;
        KvGen { layout, order, write, value: spec.value_size.map_or(0, |s| s.0), key_size: spec.key_size, first_key, requests, done: 0, pages: None }
    }

    pub fn requests(&self) -> u64 {
        self.requests
    }

    pub fn done(&self) -> u64 {
        self.done
    }

    fn next_key(&mut self, rng: &mut Rng) -> u64 {
        let n = self.layout.keys.max(1);
        match &self.order {
            KeyOrder::Parallel => self.done % n,
            KeyOrder::Random => rng.below(n),
            KeyOrder::Gaussian { median, stddev } => {
                // Box-Muller: one normal deviate from two uniforms.
                let (u1, u2) = (rng.unit().max(f64::MIN_POSITIVE), rng.unit());
                let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                (median + z * stddev).round().clamp(0.0, n as f64 - 1.0) as u64
            }
            KeyOrder::Zipf(z, mult) => (z.sample(rng) * mult) % n,
        }
    }

    /// The next request or page touch; None when the phase's requests are done.
    pub fn next(&mut self, rng: &mut Rng) -> Option<KvStep> {
        if let Some((p, last)) = self.pages {
            self.pages = (p < last).then_some((p + 1, last));
            return Some(KvStep::Touch(Touch { page: p as u32, write: self.write, check: false }));
        }
        if self.done >= self.requests || self.layout.keys == 0 {
            return None;
        }
        let key = self.next_key(rng);
        self.done += 1;
        self.pages = Some(self.layout.item_pages(key));
        let key_len = self.key_size.unwrap_or_else(|| memtier_key_len(self.first_key + key));
        let bytes = BINARY_HEADER + key_len + if self.write { BINARY_SET_EXTRAS + self.value } else { 0 };
        Some(KvStep::Request { bytes: bytes as u32 })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_follow_memcached_defaults() {
        let c = slab_classes();
        assert_eq!(&c[..16], &[96, 120, 152, 192, 240, 304, 384, 480, 600, 752, 944, 1184, 1480, 1856, 2320, 2904]);
        assert_eq!(*c.last().unwrap(), 512 * 1024);
    }

    #[test]
    fn a_2000_byte_value_lands_in_the_2320_byte_class() {
        // 48 header + 8 CAS + 16-byte key + NUL + 2000 + "\r\n" = 2075 bytes.
        let l = SlabLayout::new(1000, 16, 2000).unwrap();
        assert_eq!(l.item, 2075);
        assert_eq!(l.chunk, 2320);
        assert_eq!(l.per_slab, 451);
        assert_eq!(l.pages(), 3 * 256);
        // Item 1 starts at 2320 and ends at 4394: pages 0 and 1. Item 451 opens slab page 2.
        assert_eq!(l.item_pages(0), (0, 0));
        assert_eq!(l.item_pages(1), (0, 1));
        assert_eq!(l.item_pages(451), (256, 256));
    }

    #[test]
    fn memtier_keys_grow_with_their_number() {
        assert_eq!((memtier_key_len(1), memtier_key_len(9), memtier_key_len(10)), (9, 9, 10));
        assert_eq!(memtier_key_len(65_000_000), 16);
    }

    #[test]
    fn partitions_are_memtiers_pp_ranges() {
        // memtier: range = (10 - 1) / 3 + 1 = 4; keys 1-4, 5-8 and the last client 9-10.
        let parts: Vec<_> = (0..3).map(|i| partition(10, i, 3)).collect();
        assert_eq!(parts, vec![0..4, 4..8, 8..10]);
        // Seed 004: 64,999,999 / 36 + 1 = 1,805,556 keys per client, the last 1,805,540.
        assert_eq!(partition(65_000_000, 0, 36), 0..1_805_556);
        assert_eq!(partition(65_000_000, 35, 36), 63_194_460..65_000_000);
    }

    #[test]
    fn allkeys_requests_are_memtiers_per_client_counts() {
        // Seed 004's fill (P:P) and gets (R:R) over keys 1..65,000,000, 36 clients.
        assert_eq!(memtier_allkeys_requests(65_000_000, true, 36), 1_805_556);
        assert_eq!(memtier_allkeys_requests(65_000_000, false, 36), 64_999_999);
        // One key: 0 random requests, so memtier's default -n.
        assert_eq!(memtier_allkeys_requests(1, false, 4), MEMTIER_DEFAULT_REQUESTS);
        assert_eq!(memtier_allkeys_requests(1, true, 1), 1);
    }
}
