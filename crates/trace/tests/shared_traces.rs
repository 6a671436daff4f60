//! Golden miss counts on the two real traces in `../shared/traces/` (gcc's cc1plus, 5 M
//! records; sqlite over an mmapped database, 10 M records).
//!
//! Where each number comes from:
//! * LRU: libCacheSim 0.3.5's LRU, as listed in `shared/traces/README.md` (ignore_obj_size,
//!   every record one request).
//! * OPT: computed by this crate's `opt` module and cross-checked against libCacheSim's
//!   `Belady` (the `libcachesim` Python package 0.3.x, `[bench]` extra) on the same files: the
//!   two agree at every size listed (tests/python/test_trace_libcachesim.py repeats the check
//!   whenever the package is installed).

use swaplab_trace::{lru, mrc, opt, open, PageSeq, ReadOptions};

const SIZES: [usize; 4] = [256, 1024, 4096, 16384];

fn shared(name: &str) -> String {
    let here = env!("CARGO_MANIFEST_DIR");
    let candidates = [format!("{here}/../../../shared/traces/{name}"), format!("/work/shared/traces/{name}")];
    for c in &candidates {
        if std::path::Path::new(c).exists() {
            return c.clone();
        }
    }
    panic!("shared trace {name} not found (looked in {candidates:?}): these golden tests need ../shared/traces beside the repository");
}

fn load(name: &str) -> PageSeq {
    let path = shared(name);
    let r = open(&path, &ReadOptions::default()).expect("opens");
    PageSeq::load_reader(r, None, &path).expect("reads")
}

fn check(name: &str, records: usize, distinct: usize, lru_golden: [u64; 4], opt_golden: [u64; 4]) {
    let seq = load(name);
    assert_eq!((seq.len(), seq.distinct()), (records, distinct));
    let lru: Vec<u64> = SIZES.iter().map(|&c| lru::misses(&seq, c)).collect();
    assert_eq!(lru, lru_golden, "{name}: LRU misses vs libCacheSim");
    let h = mrc::histogram(&seq);
    let from_mrc: Vec<u64> = SIZES.iter().map(|&c| h.misses(c)).collect();
    assert_eq!(from_mrc, lru_golden, "{name}: exact MRC vs libCacheSim's LRU");
    let next = seq.next_use();
    let opt: Vec<u64> = SIZES.iter().map(|&c| opt::misses(&seq, &next, c)).collect();
    assert_eq!(opt, opt_golden, "{name}: OPT misses");
}

#[test]
fn gcc_lru_and_opt_match_libcachesim() {
    check("gcc-cc1plus-5M.csv.zst", 5_000_000, 4_130, [28_651, 5_788, 4_130, 4_130], [14_084, 4_249, 4_130, 4_130]);
}

#[test]
fn sqlite_lru_and_opt_match_libcachesim() {
    check("sqlite-mmap-10M.oracleGeneral.zst", 10_000_000, 30_294, [449_150, 125_202, 83_644, 48_616], [254_997, 91_041, 56_770, 33_084]);
}
