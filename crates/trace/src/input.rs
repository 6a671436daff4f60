//! Opening a trace file: transparent zstd decompression (detected by the zstd frame magic, not
//! by the file name, so a renamed file still reads) and buffered, streaming input.

use crate::error::{At, TraceError};
use std::fs::File;
use std::io::{BufRead, BufReader, Read};

const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// A trace's bytes, decompressed on the fly.
pub type Input = Box<dyn BufRead + Send>;

/// Open `path` for reading; zstd-compressed files are decompressed as they are read.
pub fn open_bytes(path: &str) -> Result<Input, TraceError> {
    let file = File::open(path).map_err(|e| TraceError::new(path, At::File, io_message(&e)))?;
    if file.metadata().map(|m| m.is_dir()).unwrap_or(false) {
        return Err(TraceError::new(path, At::File, "is a directory, expected a trace file"));
    }
    let mut buf = BufReader::with_capacity(1 << 16, file);
    let head = buf.fill_buf().map_err(|e| TraceError::new(path, At::File, io_message(&e)))?;
    if head.starts_with(&ZSTD_MAGIC) {
        let dec = zstd::stream::read::Decoder::with_buffer(buf).map_err(|e| TraceError::new(path, At::File, format!("zstd: {e}")))?;
        Ok(Box::new(BufReader::with_capacity(1 << 16, dec)))
    } else {
        Ok(Box::new(buf))
    }
}

pub fn io_message(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => e.to_string(),
    }
}

/// Read exactly `buf.len()` bytes. `Ok(false)` at a clean end of input before the first byte;
/// `Err(n)` with the bytes read when the input ends inside.
pub fn read_exact_or_end<R: Read>(r: &mut R, buf: &mut [u8]) -> std::io::Result<Result<bool, usize>> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => return Ok(if got == 0 { Ok(false) } else { Err(got) }),
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(Ok(true))
}
