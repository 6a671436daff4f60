//! Round trips between the formats, malformed inputs, and the curves against brute force.

use proptest::prelude::*;
use swaplab_trace::error::At;
use swaplab_trace::output::write_trace;
use swaplab_trace::swpt::Header;
use swaplab_trace::{clock, lru, mrc, open, opt, oracle_ra, Access, Kind, Meta, PageSeq, ReadOptions, Record};

fn tmp(name: &str) -> String {
    let d = std::env::temp_dir().join(format!("swaplab-trace-test-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name).to_str().unwrap().to_string()
}

fn sample() -> Vec<Record> {
    let mut v = vec![Record::Meta { time: 0, thread: 0, meta: Meta::Mmap { addr: 0x7000_0000, len: 65536, prot: 3, flags: 0x22, file: String::new(), offset: 0 } }];
    for i in 0..200u64 {
        let kind = [Kind::Read, Kind::Write, Kind::Exec][(i % 3) as usize];
        v.push(Record::Access(Access { time: i * 7, thread: (i % 2) as u32, page: 0x70000 + (i * 13) % 17, kind }));
    }
    v.push(Record::Meta { time: 1400, thread: 1, meta: Meta::FileIo { write: true, file: "/tmp/x".into(), offset: 4096, len: 100 } });
    v.push(Record::Meta { time: 1401, thread: 1, meta: Meta::Munmap { addr: 0x7000_0000, len: 65536 } });
    v
}

fn read_all(path: &str) -> Result<Vec<Record>, swaplab_trace::TraceError> {
    open(path, &ReadOptions::default())?.collect()
}

#[test]
fn swaplab_format_round_trips_every_record_plain_and_zstd() {
    for name in ["a.swpt", "a.swpt.zst"] {
        let p = tmp(name);
        write_trace(&p, &Header { command: vec!["prog".into(), "arg".into()], ..Header::default() }, sample().into_iter().map(Ok)).map_err(|_| ()).unwrap();
        assert_eq!(read_all(&p).unwrap(), sample(), "{name}");
        assert_eq!(open(&p, &ReadOptions::default()).unwrap().header.command, vec!["prog", "arg"]);
    }
}

#[test]
fn csv_and_oracle_general_keep_every_access() {
    let accesses: Vec<Record> = sample().into_iter().filter(|r| matches!(r, Record::Access(_))).collect();
    let csv = tmp("b.csv.zst");
    write_trace(&csv, &Header::default(), sample().into_iter().map(Ok)).map_err(|_| ()).unwrap();
    assert_eq!(read_all(&csv).unwrap(), accesses);
    let og = tmp("b.oracleGeneral");
    write_trace(&og, &Header::default(), read_all(&csv).unwrap().into_iter().map(Ok)).map_err(|_| ()).unwrap();
    let back = read_all(&og).unwrap();
    // oracleGeneral keeps time and page; every access reads as a read of thread 0.
    assert_eq!(back.len(), accesses.len());
    for (a, b) in accesses.iter().zip(&back) {
        let (Record::Access(a), Record::Access(b)) = (a, b) else { panic!() };
        assert_eq!((a.time, a.page), (b.time, b.page));
    }
    // And back to swaplab's format: the same pages in the same order.
    let sw = tmp("b.swpt");
    write_trace(&sw, &Header::default(), back.clone().into_iter().map(Ok)).map_err(|_| ()).unwrap();
    assert_eq!(read_all(&sw).unwrap(), back);
}

fn err_of(bytes: &[u8], name: &str) -> swaplab_trace::TraceError {
    let p = tmp(name);
    std::fs::write(&p, bytes).unwrap();
    read_all(&p).expect_err("malformed input must be an error")
}

#[test]
fn malformed_traces_name_the_place_and_the_expectation() {
    let good = tmp("c.swpt");
    write_trace(&good, &Header::default(), sample().into_iter().map(Ok)).map_err(|_| ()).unwrap();
    let bytes = std::fs::read(&good).unwrap();
    // Truncated: cut inside the records.
    let e = err_of(&bytes[..bytes.len() - 5], "trunc.swpt");
    assert!(matches!(e.at, At::Record(_)) && e.message.contains("truncated"), "{e}");
    // Bad magic (must not be detected as CSV or oracleGeneral when forced).
    let mut bad = bytes.clone();
    bad[0] = b'X';
    let p = tmp("magic.swpt");
    std::fs::write(&p, &bad).unwrap();
    let e = open(&p, &ReadOptions { format: Some(swaplab_trace::Format::Swaplab), ..Default::default() }).err().unwrap();
    assert!(e.at == At::Header && e.message.contains("magic"), "{e}");
    // Unknown version.
    let mut v2 = bytes.clone();
    v2[8] = 9;
    let e = err_of(&v2, "version.swpt");
    assert!(e.at == At::Header && e.message.contains("unknown version 9"), "{e}");
    // oracleGeneral cut inside a record.
    let e = err_of(&[0u8; 24 * 3 + 10], "trunc.oracleGeneral");
    assert_eq!(e.at, At::Record(4));
    assert!(e.message.contains("10 of 24 bytes"), "{e}");
    // CSV: a missing column, a non-number, a header without a page column.
    let e = err_of(b"icount,vpn,op\n1,2,r\n3,4\n", "missing.csv");
    assert!(e.at == At::Line(3) && e.message.contains("missing column 3"), "{e}");
    let e = err_of(b"icount,vpn,op\n1,2,r\n3,zz,w\n", "nan.csv");
    assert!(e.at == At::Line(3) && e.message.contains("\"zz\" is not"), "{e}");
    let e = err_of(b"icount,foo,op\n1,2,r\n", "nopage.csv");
    assert!(e.at == At::Line(1) && e.message.contains("page column"), "{e}");
}

#[test]
fn batch_reading_equals_record_by_record() {
    let many: Vec<Record> = (0..20_000u64)
        .map(|i| if i % 997 == 0 { sample()[0].clone() } else { Record::Access(Access { time: i, thread: (i / 5000) as u32, page: (i * 7919) % 3001, kind: Kind::Write }) })
        .collect();
    for name in ["e.swpt", "e.swpt.zst", "e.oracleGeneral", "e.csv"] {
        let p = tmp(name);
        write_trace(&p, &Header::default(), many.clone().into_iter().map(Ok)).map_err(|_| ()).unwrap();
        let one = PageSeq::load(open(&p, &ReadOptions::default()).unwrap(), Some(&[0, 2]), &p).unwrap();
        let batch = PageSeq::load_reader(open(&p, &ReadOptions::default()).unwrap(), Some(&[0, 2]), &p).unwrap();
        assert_eq!((one.ids, one.pages, one.kinds), (batch.ids, batch.pages, batch.kinds), "{name}");
    }
}

#[test]
fn csv_columns_can_be_named_or_indexed() {
    let p = tmp("d.csv");
    std::fs::write(&p, "5,0x7000,1\n6,0x8fff,2\n").unwrap();
    let r = open(&p, &ReadOptions { columns: Some("time=0,addr=1,thread=2".into()), ..Default::default() }).unwrap();
    let recs: Vec<Record> = r.collect::<Result<_, _>>().unwrap();
    assert_eq!(recs[1], Record::Access(Access { time: 6, thread: 2, page: 8, kind: Kind::Read }));
}

/// Brute force LRU: a Vec stack, most recent first.
fn brute_lru(ids: &[u32], c: usize) -> u64 {
    let mut stack: Vec<u32> = Vec::new();
    let mut m = 0;
    for &id in ids {
        match stack.iter().position(|&x| x == id) {
            Some(p) if p < c => {
                stack.remove(p);
            }
            Some(p) => {
                m += 1;
                stack.remove(p);
            }
            None => m += 1,
        }
        stack.insert(0, id);
    }
    m
}

/// Brute force OPT: evict the cached page whose next use is farthest (scan the future).
fn brute_opt(ids: &[u32], c: usize) -> u64 {
    let mut cache: Vec<u32> = Vec::new();
    let mut m = 0;
    for (i, &id) in ids.iter().enumerate() {
        if cache.contains(&id) {
            continue;
        }
        m += 1;
        if cache.len() == c {
            let far = |p: u32| ids[i + 1..].iter().position(|&x| x == p).unwrap_or(usize::MAX);
            let (k, _) = cache.iter().enumerate().max_by_key(|(_, &p)| far(p)).unwrap();
            cache.remove(k);
        }
        cache.push(id);
    }
    m
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn exact_mrc_equals_brute_force_lru(pages in prop::collection::vec(0u64..40, 1..600), c in 1usize..45) {
        let seq = PageSeq::from_pages(&pages);
        let h = mrc::histogram(&seq);
        let brute = brute_lru(&seq.ids, c);
        prop_assert_eq!(h.misses(c), brute);
        prop_assert_eq!(lru::misses(&seq, c), brute);
        prop_assert_eq!(h.curve()[c.min(seq.distinct())], brute);
    }

    #[test]
    fn opt_equals_brute_force_and_bounds_the_others(pages in prop::collection::vec(0u64..30, 1..300), c in 1usize..32) {
        let seq = PageSeq::from_pages(&pages);
        let next = seq.next_use();
        let o = opt::misses(&seq, &next, c);
        prop_assert_eq!(o, brute_opt(&seq.ids, c));
        prop_assert!(o <= lru::misses(&seq, c));
        prop_assert!(o <= clock::misses(&seq, c));
        prop_assert!(oracle_ra::misses(&seq, &next, c, 8) <= o);
        prop_assert_eq!(oracle_ra::misses(&seq, &next, c, 1), o);
    }

    /// Valid traces with bytes flipped or cut: every reader ends in records or an error.
    #[test]
    fn readers_never_panic_on_damaged_traces(flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8), cut in any::<prop::sample::Index>(), which in 0usize..3) {
        let name = ["m.swpt", "m.csv", "m.oracleGeneral"][which];
        let good = tmp(&format!("good-{name}"));
        write_trace(&good, &Header::default(), sample().into_iter().map(Ok)).map_err(|_| ()).unwrap();
        let mut bytes = std::fs::read(&good).unwrap();
        for (i, b) in &flips {
            let i = i.index(bytes.len());
            bytes[i] ^= b | 1;
        }
        bytes.truncate(cut.index(bytes.len() + 1));
        let p = tmp(&format!("damaged-{}-{name}", bytes.len()));
        std::fs::write(&p, &bytes).unwrap();
        if let Ok(r) = open(&p, &ReadOptions::default()) {
            let _ = r.take(100_000).collect::<Result<Vec<_>, _>>();
        }
        if let Ok(r) = open(&p, &ReadOptions::default()) {
            let _ = PageSeq::load_reader(r, None, &p);
        }
    }

    #[test]
    fn readers_never_panic_on_garbage(bytes in prop::collection::vec(any::<u8>(), 0..300), as_csv in any::<bool>()) {
        let p = tmp(&format!("fuzz-{}.{}", bytes.len(), if as_csv { "csv" } else { "bin" }));
        std::fs::write(&p, &bytes).unwrap();
        for f in [swaplab_trace::Format::Swaplab, swaplab_trace::Format::Csv, swaplab_trace::Format::OracleGeneral] {
            if let Ok(r) = open(&p, &ReadOptions { format: Some(f), ..Default::default() }) {
                for rec in r.take(10_000) {
                    if rec.is_err() { break; }
                }
            }
        }
    }
}

#[test]
fn layout_classifies_pages_by_their_mmap() {
    use swaplab_trace::layout::{infer, RegionKind};
    let acc = |page: u64, kind: Kind| Record::Access(Access { time: 0, thread: 0, page, kind });
    let mmap = |addr: u64, flags: u32, file: &str| Record::Meta { time: 0, thread: 0, meta: Meta::Mmap { addr, len: 16 << 12, prot: 3, flags, file: file.into(), offset: 0 } };
    let recs = vec![
        mmap(0x100 << 12, 0x01, "/db"),        // shared file
        mmap(0x200 << 12, 0x02, "/lib.so"),    // private file, only read: file
        mmap(0x300 << 12, 0x02, "/data.so"),   // private file, written: anon (copy-on-write)
        mmap(0x400 << 12, 0x21, ""),           // shared anonymous: shmem
        acc(0x100, Kind::Read), acc(0x10f, Kind::Write),
        acc(0x200, Kind::Exec), acc(0x201, Kind::Read),
        acc(0x300, Kind::Write),
        acc(0x405, Kind::Write),
        acc(0x9000, Kind::Exec),                // outside every mmap, only executed: program text
        acc(0x9100, Kind::Read), acc(0x9100 + 64 + 1, Kind::Write), // anon, 64 pages apart: one mapping
        acc(0x9100 + 200, Kind::Read),          // too far: a mapping of its own
    ];
    let l = infer(recs.into_iter().map(Ok), None, 12).unwrap();
    let got: Vec<(u64, u64, RegionKind)> = l.regions.iter().map(|r| (r.start_page, r.pages, r.kind)).collect();
    assert_eq!(
        got,
        vec![
            (0x100, 16, RegionKind::File),
            (0x200, 2, RegionKind::File),
            (0x300, 1, RegionKind::Anon),
            (0x405, 1, RegionKind::Shmem),
            (0x9000, 1, RegionKind::File),
            (0x9100, 66, RegionKind::Anon),
            (0x9100 + 200, 1, RegionKind::Anon),
        ]
    );
    assert_eq!(l.regions[0].file, "/db");
    assert_eq!(l.accesses, 10);
    assert_eq!(l.find(0x9100 + 30), Some(5));
    assert_eq!(l.find(0x9100 + 100), None);
}
