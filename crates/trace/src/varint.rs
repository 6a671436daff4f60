//! LEB128 unsigned varints and zigzag signed deltas: the compact integers of the swaplab format.

use std::io::{self, Read, Write};

pub fn put(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

pub fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Read one varint. `Ok(None)` at a clean end of input before its first byte; an error if the
/// input ends inside it or it is longer than 10 bytes.
pub fn get<R: Read>(r: &mut R) -> io::Result<Option<u64>> {
    let mut v = 0u64;
    let mut shift = 0;
    let mut b = [0u8; 1];
    loop {
        if r.read(&mut b)? == 0 {
            if shift == 0 {
                return Ok(None);
            }
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "input ends inside a varint"));
        }
        if shift >= 64 {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "varint longer than 10 bytes"));
        }
        v |= ((b[0] & 0x7f) as u64) << shift;
        if b[0] & 0x80 == 0 {
            return Ok(Some(v));
        }
        shift += 7;
    }
}

/// Decode one varint from `b` at `*pos` (the caller guarantees 10 readable bytes or a
/// terminated varint); None when it runs longer than 10 bytes.
#[inline]
pub fn get_slice(b: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..70).step_by(7) {
        let byte = *b.get(*pos)?;
        *pos += 1;
        v |= ((byte & 0x7f) as u64) << shift;
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

pub fn write_all<W: Write>(w: &mut W, buf: &mut Vec<u8>) -> io::Result<()> {
    w.write_all(buf)?;
    buf.clear();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_extremes() {
        for v in [0u64, 1, 127, 128, 300, u32::MAX as u64, u64::MAX] {
            let mut b = Vec::new();
            put(&mut b, v);
            assert_eq!(get(&mut &b[..]).unwrap(), Some(v));
        }
        for v in [0i64, -1, 1, i64::MIN, i64::MAX] {
            assert_eq!(unzigzag(zigzag(v)), v);
        }
    }
}
