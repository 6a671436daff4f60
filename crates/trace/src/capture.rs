//! The raw stream written by swaplab's QEMU plugin (`crates/trace/plugin/pagetrace.c`), read
//! as records. The plugin keeps its output trivial to write from C — fixed little-endian
//! fields, no compression — and `swaplab trace capture` converts it to the swaplab format:
//!
//! ```text
//! file   := "SWPRAW01" record*
//! record := u8 tag, u32 thread (QEMU's vCPU index = guest thread), u64 icount, body
//! tag 0/1/2 (read/write/exec access):  u64 page
//! tag 16 mmap:    u64 addr, len, prot, flags, offset; u16 n; n bytes file
//! tag 17 munmap:  u64 addr, len          tag 18 brk:     u64 old, new
//! tag 19 mremap:  u64 old_addr, old_len, new_addr, new_len
//! tag 20 madvise: u64 addr, len, advice
//! tag 21/22 read/write of a regular file: u64 offset, len; u16 n; n bytes file
//! ```

use crate::error::{At, TraceError};
use crate::input::{read_exact_or_end, Input};
use crate::{Access, Kind, Meta, Record};
use std::io::Read;

pub const RAW_MAGIC: &[u8; 8] = b"SWPRAW01";

pub struct RawReader {
    input: Input,
    file: String,
    index: u64,
    done: bool,
}

impl RawReader {
    pub fn new(mut input: Input, file: &str) -> Result<RawReader, TraceError> {
        let mut m = [0u8; 8];
        let ok = matches!(read_exact_or_end(&mut input, &mut m), Ok(Ok(true)));
        if !ok || &m != RAW_MAGIC {
            return Err(TraceError::new(file, At::Header, "expected the plugin's magic `SWPRAW01` (did the plugin load?)"));
        }
        Ok(RawReader { input, file: file.to_string(), index: 0, done: false })
    }

    fn u64(&mut self) -> Result<u64, TraceError> {
        let mut b = [0u8; 8];
        self.input.read_exact(&mut b).map_err(|_| self.truncated())?;
        Ok(u64::from_le_bytes(b))
    }

    fn truncated(&self) -> TraceError {
        TraceError::new(&self.file, At::Record(self.index + 1), "truncated raw record (the traced program was killed?)")
    }

    fn name(&mut self) -> Result<String, TraceError> {
        let mut n = [0u8; 2];
        self.input.read_exact(&mut n).map_err(|_| self.truncated())?;
        let mut b = vec![0u8; u16::from_le_bytes(n) as usize];
        self.input.read_exact(&mut b).map_err(|_| self.truncated())?;
        Ok(String::from_utf8_lossy(&b).into_owned())
    }

    fn read(&mut self) -> Result<Option<Record>, TraceError> {
        let mut h = [0u8; 13];
        match read_exact_or_end(&mut self.input, &mut h) {
            Ok(Ok(true)) => {}
            Ok(Ok(false)) => return Ok(None),
            _ => return Err(self.truncated()),
        }
        let tag = h[0];
        let thread = u32::from_le_bytes(h[1..5].try_into().expect("4"));
        let time = u64::from_le_bytes(h[5..13].try_into().expect("8"));
        if let Some(kind) = Kind::from_code(tag) {
            return Ok(Some(Record::Access(Access { time, thread, page: self.u64()?, kind })));
        }
        let meta = match tag {
            16 => {
                let (addr, len, prot, flags, offset) = (self.u64()?, self.u64()?, self.u64()? as u32, self.u64()? as u32, self.u64()?);
                Meta::Mmap { addr, len, prot, flags, offset, file: self.name()? }
            }
            17 => Meta::Munmap { addr: self.u64()?, len: self.u64()? },
            18 => Meta::Brk { old: self.u64()?, new: self.u64()? },
            19 => Meta::Mremap { old_addr: self.u64()?, old_len: self.u64()?, new_addr: self.u64()?, new_len: self.u64()? },
            20 => Meta::Madvise { addr: self.u64()?, len: self.u64()?, advice: self.u64()? as u32 },
            21 | 22 => {
                let (offset, len) = (self.u64()?, self.u64()?);
                Meta::FileIo { write: tag == 22, file: self.name()?, offset, len }
            }
            t => return Err(TraceError::new(&self.file, At::Record(self.index + 1), format!("unknown raw tag {t}"))),
        };
        Ok(Some(Record::Meta { time, thread, meta }))
    }
}

impl Iterator for RawReader {
    type Item = Result<Record, TraceError>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let r = self.read().transpose();
        self.index += 1;
        if !matches!(r, Some(Ok(_))) {
            self.done = true;
        }
        r
    }
}
