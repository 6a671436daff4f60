//! swaplab's own trace format, version 1 (specified in `docs/trace-format.md`).
//!
//! A fixed header (magic `SWPTRACE`, version, page shift, clock unit, record count, command
//! line) and then a stream of varint-coded records. An access is two varints: the zigzag delta
//! of its page from the previous access's page, shifted left by two with the access kind in the
//! low bits (0 read, 1 write, 2 exec), and the zigzag delta of its time. Low bits 3 mark a meta
//! record whose tag is the rest of that first varint. The current thread is state, changed by a
//! thread-switch record, so a single-threaded trace pays nothing for it. A sequential or local
//! access costs 2-3 bytes before compression.
//!
//! The trace ends with an end record carrying the number of records: a reader that reaches the
//! end of the input without it reports the trace as truncated, so a capture that was killed is
//! never mistaken for a complete one. The header's count is `u64::MAX` when the writer did not
//! know it in advance (capture); the end record always has it.

use crate::error::{At, TraceError};
use crate::input::{io_message, read_exact_or_end, Input};
use crate::varint;
use crate::{Access, Kind, Meta, Record};
use std::io::{BufRead, Read, Write};

pub const MAGIC: &[u8; 8] = b"SWPTRACE";
pub const VERSION: u16 = 1;
pub const UNKNOWN_COUNT: u64 = u64::MAX;

const TAG_THREAD: u64 = 0;
const TAG_MMAP: u64 = 1;
const TAG_MUNMAP: u64 = 2;
const TAG_BRK: u64 = 3;
const TAG_MREMAP: u64 = 4;
const TAG_MADVISE: u64 = 5;
const TAG_READ: u64 = 6;
const TAG_WRITE: u64 = 7;
const TAG_END: u64 = 31;

/// What the time field of a trace counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Clock {
    /// Guest instructions retired (QEMU capture, the CSV's `icount`).
    Instructions,
    Nanoseconds,
    /// No clock of its own: the record index (libCacheSim's virtual time).
    Records,
}

impl Clock {
    fn code(self) -> u8 {
        match self {
            Clock::Instructions => 0,
            Clock::Nanoseconds => 1,
            Clock::Records => 2,
        }
    }
    fn from_code(c: u8) -> Option<Clock> {
        Some(match c {
            0 => Clock::Instructions,
            1 => Clock::Nanoseconds,
            2 => Clock::Records,
            _ => return None,
        })
    }
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Header {
    pub page_shift: u8,
    pub clock: Clock,
    /// Records in the trace (accesses and meta records), or [`UNKNOWN_COUNT`].
    pub records: u64,
    /// The traced program's argv.
    pub command: Vec<String>,
}

impl Default for Header {
    fn default() -> Header {
        Header { page_shift: 12, clock: Clock::Records, records: UNKNOWN_COUNT, command: Vec::new() }
    }
}

/// Streaming writer of the swaplab format. Call [`Writer::finish`] to write the end record.
pub struct Writer<W: Write> {
    out: W,
    buf: Vec<u8>,
    page: u64,
    time: u64,
    thread: u32,
    count: u64,
}

impl<W: Write> Writer<W> {
    pub fn new(mut out: W, header: &Header) -> std::io::Result<Writer<W>> {
        let mut h = Vec::with_capacity(32);
        h.extend_from_slice(MAGIC);
        h.extend_from_slice(&VERSION.to_le_bytes());
        h.push(header.page_shift);
        h.push(header.clock.code());
        h.extend_from_slice(&header.records.to_le_bytes());
        let cmd = header.command.join("\0");
        h.extend_from_slice(&(cmd.len() as u32).to_le_bytes());
        h.extend_from_slice(cmd.as_bytes());
        out.write_all(&h)?;
        Ok(Writer { out, buf: Vec::with_capacity(1 << 16), page: 0, time: 0, thread: 0, count: 0 })
    }

    fn time_delta(&mut self, time: u64) {
        varint::put(&mut self.buf, varint::zigzag(time.wrapping_sub(self.time) as i64));
        self.time = time;
    }

    fn switch(&mut self, thread: u32) {
        if thread != self.thread {
            varint::put(&mut self.buf, (TAG_THREAD << 2) | 3);
            varint::put(&mut self.buf, thread as u64);
            self.thread = thread;
        }
    }

    pub fn write(&mut self, rec: &Record) -> std::io::Result<()> {
        match rec {
            Record::Access(a) => {
                self.switch(a.thread);
                let d = varint::zigzag(a.page.wrapping_sub(self.page) as i64);
                if d >> 62 != 0 {
                    return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("page {:#x} too far from the previous one", a.page)));
                }
                varint::put(&mut self.buf, (d << 2) | a.kind.code() as u64);
                self.page = a.page;
                self.time_delta(a.time);
            }
            Record::Meta { time, thread, meta } => {
                self.switch(*thread);
                self.meta(*time, meta);
            }
        }
        self.count += 1;
        if self.buf.len() >= 1 << 16 {
            varint::write_all(&mut self.out, &mut self.buf)?;
        }
        Ok(())
    }

    fn meta(&mut self, time: u64, meta: &Meta) {
        let (tag, nums, file): (u64, Vec<u64>, Option<&str>) = match meta {
            Meta::Mmap { addr, len, prot, flags, file, offset } => (TAG_MMAP, vec![*addr, *len, *prot as u64, *flags as u64, *offset], Some(file)),
            Meta::Munmap { addr, len } => (TAG_MUNMAP, vec![*addr, *len], None),
            Meta::Brk { old, new } => (TAG_BRK, vec![*old, *new], None),
            Meta::Mremap { old_addr, old_len, new_addr, new_len } => (TAG_MREMAP, vec![*old_addr, *old_len, *new_addr, *new_len], None),
            Meta::Madvise { addr, len, advice } => (TAG_MADVISE, vec![*addr, *len, *advice as u64], None),
            Meta::FileIo { write, file, offset, len } => (if *write { TAG_WRITE } else { TAG_READ }, vec![*offset, *len], Some(file)),
        };
        varint::put(&mut self.buf, (tag << 2) | 3);
        self.time_delta(time);
        for n in nums {
            varint::put(&mut self.buf, n);
        }
        if let Some(f) = file {
            varint::put(&mut self.buf, f.len() as u64);
            self.buf.extend_from_slice(f.as_bytes());
        }
    }

    /// Write the end record and flush; returns the underlying writer.
    pub fn finish(mut self) -> std::io::Result<W> {
        varint::put(&mut self.buf, (TAG_END << 2) | 3);
        varint::put(&mut self.buf, self.count);
        varint::write_all(&mut self.out, &mut self.buf)?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Streaming reader of the swaplab format.
pub struct Reader {
    input: Input,
    file: String,
    pub header: Header,
    page: u64,
    time: u64,
    thread: u32,
    index: u64,
    done: bool,
}

impl Reader {
    /// Parse the header of `input` (already opened and decompressed).
    pub fn new(mut input: Input, file: &str) -> Result<Reader, TraceError> {
        let err = |m: String| TraceError::new(file, At::Header, m);
        let mut fixed = [0u8; 24];
        match read_exact_or_end(&mut input, &mut fixed).map_err(|e| err(io_message(&e)))? {
            Ok(true) => {}
            _ => return Err(err("truncated: expected a 24-byte header after the magic `SWPTRACE`".into())),
        }
        if &fixed[..8] != MAGIC {
            return Err(err(format!("bad magic {:02x?}: expected `SWPTRACE`", &fixed[..8])));
        }
        let version = u16::from_le_bytes([fixed[8], fixed[9]]);
        if version != VERSION {
            return Err(err(format!("unknown version {version}: this swaplab reads version {VERSION}")));
        }
        let page_shift = fixed[10];
        if !(9..=30).contains(&page_shift) {
            return Err(err(format!("page shift {page_shift}: expected 9..=30")));
        }
        let clock = Clock::from_code(fixed[11]).ok_or_else(|| err(format!("unknown clock unit {}: expected 0, 1 or 2", fixed[11])))?;
        let records = u64::from_le_bytes(fixed[12..20].try_into().expect("8 bytes"));
        let cmd_len = u32::from_le_bytes(fixed[20..24].try_into().expect("4 bytes")) as usize;
        if cmd_len > 1 << 20 {
            return Err(err(format!("command line of {cmd_len} bytes: expected at most 1 MiB")));
        }
        let mut cmd = vec![0u8; cmd_len];
        if !matches!(read_exact_or_end(&mut input, &mut cmd).map_err(|e| err(io_message(&e)))?, Ok(true)) && cmd_len > 0 {
            return Err(err("truncated inside the command line".into()));
        }
        let cmd = String::from_utf8(cmd).map_err(|_| err("command line is not UTF-8".into()))?;
        let command = if cmd.is_empty() { Vec::new() } else { cmd.split('\0').map(str::to_string).collect() };
        Ok(Reader { input, file: file.to_string(), header: Header { page_shift, clock, records, command }, page: 0, time: 0, thread: 0, index: 0, done: false })
    }

    fn err(&self, m: impl Into<String>) -> TraceError {
        TraceError::new(&self.file, At::Record(self.index + 1), m)
    }

    fn num(&mut self, what: &str) -> Result<u64, TraceError> {
        match varint::get(&mut self.input) {
            Ok(Some(v)) => Ok(v),
            Ok(None) => Err(self.err(format!("truncated: expected {what}"))),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Err(self.err(format!("truncated inside a varint: expected {what}"))),
            Err(e) => Err(self.err(format!("{e} (expected {what})"))),
        }
    }

    fn string(&mut self) -> Result<String, TraceError> {
        let n = self.num("a file name length")? as usize;
        if n > 1 << 16 {
            return Err(self.err(format!("file name of {n} bytes: expected at most 64 KiB")));
        }
        let mut b = vec![0u8; n];
        self.input.read_exact(&mut b).map_err(|_| self.err("truncated inside a file name"))?;
        String::from_utf8(b).map_err(|_| self.err("file name is not UTF-8"))
    }

    fn time(&mut self) -> Result<u64, TraceError> {
        let d = varint::unzigzag(self.num("a time delta")?);
        self.time = self.time.wrapping_add(d as u64);
        Ok(self.time)
    }

    fn next_record(&mut self) -> Result<Option<Record>, TraceError> {
        loop {
            let first = match varint::get(&mut self.input) {
                Ok(Some(v)) => v,
                Ok(None) => return Err(self.err("truncated: the trace ends without its end record")),
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Err(self.err("truncated inside a varint: expected a record")),
                Err(e) => return Err(self.err(e.to_string())),
            };
            let low = (first & 3) as u8;
            if low != 3 {
                let kind = Kind::from_code(low).expect("0..=2");
                self.page = self.page.wrapping_add(varint::unzigzag(first >> 2) as u64);
                let time = self.time()?;
                return Ok(Some(Record::Access(Access { time, thread: self.thread, page: self.page, kind })));
            }
            let thread = self.thread;
            let meta = match first >> 2 {
                TAG_THREAD => {
                    self.thread = u32::try_from(self.num("a thread id")?).map_err(|_| self.err("thread id above 2^32"))?;
                    continue;
                }
                TAG_END => {
                    let n = self.num("the record count of the end record")?;
                    if n != self.index {
                        return Err(self.err(format!("end record says {n} records, the trace has {}", self.index)));
                    }
                    return Ok(None);
                }
                TAG_MMAP => {
                    let t = self.time()?;
                    let (addr, len, prot, flags, offset) = (self.num("an address")?, self.num("a length")?, self.num("a protection")? as u32, self.num("flags")? as u32, self.num("an offset")?);
                    let file = self.string()?;
                    return Ok(Some(Record::Meta { time: t, thread, meta: Meta::Mmap { addr, len, prot, flags, file, offset } }));
                }
                TAG_MUNMAP => {
                    self.time()?;
                    Meta::Munmap { addr: self.num("an address")?, len: self.num("a length")? }
                }
                TAG_BRK => {
                    self.time()?;
                    Meta::Brk { old: self.num("the old break")?, new: self.num("the new break")? }
                }
                TAG_MREMAP => {
                    self.time()?;
                    Meta::Mremap { old_addr: self.num("an address")?, old_len: self.num("a length")?, new_addr: self.num("an address")?, new_len: self.num("a length")? }
                }
                TAG_MADVISE => {
                    self.time()?;
                    Meta::Madvise { addr: self.num("an address")?, len: self.num("a length")?, advice: self.num("an advice")? as u32 }
                }
                TAG_READ | TAG_WRITE => {
                    let write = first >> 2 == TAG_WRITE;
                    self.time()?;
                    let (offset, len) = (self.num("an offset")?, self.num("a length")?);
                    Meta::FileIo { write, file: self.string()?, offset, len }
                }
                tag => return Err(self.err(format!("unknown record tag {tag}: expected an access or a meta tag 0-7 or 31"))),
            };
            return Ok(Some(Record::Meta { time: self.time, thread, meta }));
        }
    }
}

impl Reader {
    /// Append up to `max` accesses to `out`, skipping meta records (the replay's fast path:
    /// accesses are decoded straight from the input buffer). `Ok(false)` once the trace ended.
    pub fn read_accesses(&mut self, out: &mut Vec<Access>, max: usize) -> Result<bool, TraceError> {
        let mut n = 0;
        while n < max && !self.done {
            let buf = match self.input.fill_buf() {
                Ok(b) => b,
                Err(e) => return Err(TraceError::new(&self.file, At::Record(self.index + 1), io_message(&e))),
            };
            if buf.len() >= 24 && buf[0] & 3 != 3 {
                // Whole accesses in the buffer: at most 20 bytes each, decoded in place.
                let mut pos = 0;
                while n < max && buf.len() - pos >= 24 && buf[pos] & 3 != 3 {
                    let bad = || TraceError::new(&self.file, At::Record(self.index + 1), "varint longer than 10 bytes");
                    let v0 = varint::get_slice(buf, &mut pos).ok_or_else(bad)?;
                    let dt = varint::get_slice(buf, &mut pos).ok_or_else(bad)?;
                    self.page = self.page.wrapping_add(varint::unzigzag(v0 >> 2) as u64);
                    self.time = self.time.wrapping_add(varint::unzigzag(dt) as u64);
                    let kind = Kind::from_code((v0 & 3) as u8).expect("low bits 0..=2");
                    out.push(Access { time: self.time, thread: self.thread, page: self.page, kind });
                    self.index += 1;
                    n += 1;
                }
                self.input.consume(pos);
                continue;
            }
            match self.next() {
                Some(Ok(Record::Access(a))) => {
                    out.push(a);
                    n += 1;
                }
                Some(Ok(Record::Meta { .. })) => {}
                Some(Err(e)) => return Err(e),
                None => {}
            }
        }
        Ok(!self.done || n > 0)
    }
}

impl Iterator for Reader {
    type Item = Result<Record, TraceError>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.next_record() {
            Ok(Some(r)) => {
                self.index += 1;
                Some(Ok(r))
            }
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}
