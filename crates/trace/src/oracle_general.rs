//! libCacheSim's `oracleGeneral` binary format: packed little-endian records of
//! `u32 clock_time, u64 obj_id, u32 obj_size, i64 next_access_vtime` (24 bytes, no header).
//!
//! Read as page accesses: the object id is the page, every request is a read by thread 0 (the
//! format has neither operation nor thread), the clock time is the record's time. The next
//! access field is ignored on input (swaplab computes next uses itself, [`crate::seq`]), and
//! written on output as libCacheSim defines it: the index of the request's next request for
//! the same object, -1 when there is none. Writing therefore needs the whole page sequence.

use crate::error::{At, TraceError};
use crate::input::{io_message, read_exact_or_end, Input};
use crate::{Access, Kind, Record};
use std::io::Write;

pub const RECORD_BYTES: usize = 24;

pub struct Reader {
    input: Input,
    file: String,
    index: u64,
    done: bool,
}

impl Reader {
    pub fn new(input: Input, file: &str) -> Reader {
        Reader { input, file: file.to_string(), index: 0, done: false }
    }
}

impl Reader {
    /// Append up to `max` accesses to `out`, decoded straight from the input buffer.
    /// `Ok(false)` once the trace ended.
    pub fn read_accesses(&mut self, out: &mut Vec<Access>, max: usize) -> Result<bool, TraceError> {
        use std::io::BufRead;
        let mut n = 0;
        while n < max && !self.done {
            let buf = self.input.fill_buf().map_err(|e| TraceError::new(&self.file, At::Record(self.index + 1), io_message(&e)))?;
            let whole = (buf.len() / RECORD_BYTES).min(max - n);
            if whole == 0 {
                match self.next() {
                    Some(Ok(Record::Access(a))) => {
                        out.push(a);
                        n += 1;
                    }
                    Some(Err(e)) => return Err(e),
                    _ => {}
                }
                continue;
            }
            for r in buf[..whole * RECORD_BYTES].chunks_exact(RECORD_BYTES) {
                let time = u32::from_le_bytes(r[0..4].try_into().expect("4")) as u64;
                let page = u64::from_le_bytes(r[4..12].try_into().expect("8"));
                out.push(Access { time, thread: 0, page, kind: Kind::Read });
            }
            self.input.consume(whole * RECORD_BYTES);
            self.index += whole as u64;
            n += whole;
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
        let mut b = [0u8; RECORD_BYTES];
        let r = match read_exact_or_end(&mut self.input, &mut b) {
            Ok(Ok(true)) => {
                let time = u32::from_le_bytes(b[0..4].try_into().expect("4")) as u64;
                let page = u64::from_le_bytes(b[4..12].try_into().expect("8"));
                self.index += 1;
                Some(Ok(Record::Access(Access { time, thread: 0, page, kind: Kind::Read })))
            }
            Ok(Ok(false)) => None,
            Ok(Err(n)) => Some(Err(TraceError::new(
                &self.file,
                At::Record(self.index + 1),
                format!("truncated record: {n} of {RECORD_BYTES} bytes (oracleGeneral: u32 time, u64 object id, u32 size, i64 next access)"),
            ))),
            Err(e) => Some(Err(TraceError::new(&self.file, At::Record(self.index + 1), io_message(&e)))),
        };
        if !matches!(r, Some(Ok(_))) {
            self.done = true;
        }
        r
    }
}

/// Write `times`/`pages` (same length) as oracleGeneral with object size `page_bytes`.
/// Times above 2^32 - 1 are clamped (the format's clock is 32 bits).
pub fn write<W: Write>(out: &mut W, times: &[u64], pages: &[u64], page_bytes: u32) -> std::io::Result<()> {
    let seq = crate::seq::PageSeq::from_pages(pages);
    let next = seq.next_use();
    let mut buf = Vec::with_capacity(RECORD_BYTES * 4096);
    for i in 0..pages.len() {
        buf.extend_from_slice(&(times[i].min(u32::MAX as u64) as u32).to_le_bytes());
        buf.extend_from_slice(&pages[i].to_le_bytes());
        buf.extend_from_slice(&page_bytes.to_le_bytes());
        let n = if next[i] == crate::seq::NEVER { -1i64 } else { next[i] as i64 };
        buf.extend_from_slice(&n.to_le_bytes());
        if buf.len() >= RECORD_BYTES * 4096 {
            out.write_all(&buf)?;
            buf.clear();
        }
    }
    out.write_all(&buf)?;
    out.flush()
}
