//! Storage devices: a queueing model per device.
//!
//! A device serves requests on `parallelism` channels in FIFO order; a request's service time
//! is a fixed per-request latency plus its transfer time at the device's bandwidth, plus, for
//! rotating disks, a seek whose time grows with the square root of the distance and an average
//! rotational delay unless the request continues where the previous one ended. Contiguous
//! pages submitted together are merged into one request by [`Plug`], as the block layer's plug
//! does, up to `max_request_pages`. The submitter pays `block_layer_cpu_ns` per request.
//! Synchronous devices (zram, brd) have no queue: the caller does the copy or (de)compression
//! in its own context (kernel-algorithms.md §1.7, §6.3).

pub mod params;

pub use params::DeviceParams;

const PAGE_BYTES: u64 = 4096;

#[derive(Clone, Debug)]
pub struct Device {
    pub name: String,
    pub params: DeviceParams,
    capacity_pages: u64,
    channel_free_at: Vec<u64>,
    /// Rotational: the page just after the last request served (where the head is).
    head: u64,
    pub requests: u64,
    pub pages_read: u64,
    pub pages_written: u64,
    pub busy_ns: u64,
}

/// One request as the device sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    pub start: u64,
    pub pages: u32,
    pub write: bool,
}

impl Device {
    pub fn new(name: &str, params: DeviceParams, capacity_pages: u64) -> Device {
        let channels = params.parallelism.max(1) as usize;
        Device {
            name: name.to_string(),
            params,
            capacity_pages: capacity_pages.max(1),
            channel_free_at: vec![0; channels],
            head: 0,
            requests: 0,
            pages_read: 0,
            pages_written: 0,
            busy_ns: 0,
        }
    }

    /// Time the device needs for `req` once it starts, excluding queueing.
    pub fn service_ns(&self, req: Request) -> u64 {
        let p = &self.params;
        let (lat, bw) = if req.write { (p.write_latency_ns, p.write_bandwidth) } else { (p.read_latency_ns, p.read_bandwidth) };
        let transfer = (req.pages as u128 * PAGE_BYTES as u128 * 1_000_000_000u128 / bw.max(1) as u128) as u64;
        let mut t = lat + transfer;
        if p.rotational && req.start != self.head {
            let distance = req.start.abs_diff(self.head);
            let frac = (distance as f64 / self.capacity_pages as f64).min(1.0);
            let seek = p.seek_min_ns as f64 + (p.seek_full_ns.saturating_sub(p.seek_min_ns)) as f64 * frac.sqrt();
            t += seek as u64 + p.rotational_latency_ns;
        }
        t
    }

    /// Queue `req` at time `now`; returns its completion time.
    pub fn submit(&mut self, now: u64, req: Request) -> u64 {
        let service = self.service_ns(req);
        let (idx, free_at) = self
            .channel_free_at
            .iter()
            .copied()
            .enumerate()
            .min_by_key(|&(i, t)| (t, i))
            .expect("a device has at least one channel");
        let start = now.max(free_at);
        let done = start + service;
        self.channel_free_at[idx] = done;
        self.head = req.start + req.pages as u64;
        self.requests += 1;
        self.busy_ns += service;
        if req.write {
            self.pages_written += req.pages as u64;
        } else {
            self.pages_read += req.pages as u64;
        }
        done
    }

    /// CPU the caller spends on a synchronous transfer of `pages` (zram, brd).
    pub fn sync_cpu_ns(&self, pages: u64, write: bool) -> u64 {
        let per = if write { self.params.sync_write_cpu_ns } else { self.params.sync_read_cpu_ns };
        per * pages
    }
}

/// The block layer's plug: pages submitted in one batch are merged into requests when they
/// are contiguous on the device and in the same direction (a back-merge), up to the device's
/// maximum request size. Pages keep their submission order; nothing is sorted, as a plug
/// flushed by one task in submission order does not reorder non-contiguous requests.
#[derive(Default, Debug)]
pub struct Plug {
    pub requests: Vec<(Request, Vec<u32>)>,
}

impl Plug {
    /// Add one page at device offset `page` for frame/token `token`.
    pub fn add(&mut self, page: u64, write: bool, token: u32, max_pages: u32) {
        if let Some((last, tokens)) = self.requests.last_mut() {
            if last.write == write && last.start + last.pages as u64 == page && last.pages < max_pages {
                last.pages += 1;
                tokens.push(token);
                return;
            }
        }
        self.requests.push((Request { start: page, pages: 1, write }, vec![token]));
    }

    pub fn is_empty(&self) -> bool {
        self.requests.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contiguous_pages_merge_and_holes_split() {
        let mut plug = Plug::default();
        for (i, p) in [10u64, 11, 12, 20, 21].iter().enumerate() {
            plug.add(*p, false, i as u32, 128);
        }
        assert_eq!(plug.requests.len(), 2);
        assert_eq!(plug.requests[0].0, Request { start: 10, pages: 3, write: false });
        assert_eq!(plug.requests[1].1, vec![3, 4]);
    }

    #[test]
    fn merge_respects_max_request_size() {
        let mut plug = Plug::default();
        for p in 0..10u64 {
            plug.add(p, true, p as u32, 4);
        }
        assert_eq!(plug.requests.len(), 3);
    }

    #[test]
    fn queue_serialises_on_one_channel_and_overlaps_on_many() {
        let mut ssd = Device::new("ssd", DeviceParams::preset("sata-ssd").unwrap(), 1 << 18);
        let one = ssd.service_ns(Request { start: 5, pages: 1, write: false });
        let mut done = vec![];
        for i in 0..4 {
            done.push(ssd.submit(0, Request { start: 100 * i, pages: 1, write: false }));
        }
        assert!(done.iter().all(|&d| d == one), "4 channels serve 4 requests at once");
        let fifth = ssd.submit(0, Request { start: 999, pages: 1, write: false });
        assert_eq!(fifth, 2 * one);
    }

    #[test]
    fn hdd_pays_for_distance_but_not_for_continuing() {
        let mut hdd = Device::new("hdd", DeviceParams::preset("hdd").unwrap(), 1 << 20);
        let t1 = hdd.submit(0, Request { start: 0, pages: 8, write: false });
        let cont = hdd.service_ns(Request { start: 8, pages: 8, write: false });
        let near = hdd.service_ns(Request { start: 1000, pages: 8, write: false });
        let far = hdd.service_ns(Request { start: 900_000, pages: 8, write: false });
        assert!(t1 > 0 && cont < near && near < far);
    }
}
