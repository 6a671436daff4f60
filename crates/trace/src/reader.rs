//! One entry point for every format: [`open`] detects the format (from the decompressed
//! content: the swaplab magic, else text that looks like CSV, else oracleGeneral) unless the
//! caller names it, and returns a streaming [`TraceReader`].

use crate::error::{At, TraceError};
use crate::input::{io_message, open_bytes};
use crate::swpt::{Clock, Header};
use crate::{csv, oracle_general, swpt, Record};
use std::io::BufRead;

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Swaplab,
    #[serde(rename = "oracleGeneral")]
    OracleGeneral,
    Csv,
}

impl Format {
    pub fn parse(s: &str) -> Option<Format> {
        Some(match s.to_ascii_lowercase().as_str() {
            "swaplab" | "swpt" => Format::Swaplab,
            "oraclegeneral" | "oracle" => Format::OracleGeneral,
            "csv" => Format::Csv,
            _ => return None,
        })
    }

    /// The format a file name asks for when writing (`.csv`, `.oracleGeneral`, else swaplab),
    /// and whether to zstd-compress it (`.zst`).
    pub fn for_output(path: &str) -> (Format, bool) {
        let zst = path.ends_with(".zst");
        let base = path.trim_end_matches(".zst").to_ascii_lowercase();
        let f = if base.ends_with(".csv") {
            Format::Csv
        } else if base.ends_with(".oraclegeneral") || base.ends_with(".oracle") {
            Format::OracleGeneral
        } else {
            Format::Swaplab
        };
        (f, zst)
    }
}

#[derive(Clone, Debug, Default)]
pub struct ReadOptions {
    /// Force a format instead of detecting it.
    pub format: Option<Format>,
    /// CSV column spec (see [`crate::csv`]).
    pub columns: Option<String>,
}

enum Inner {
    Swaplab(swpt::Reader),
    Oracle(oracle_general::Reader),
    Csv(csv::Reader),
}

/// A streaming reader of any supported format.
pub struct TraceReader {
    inner: Inner,
    pub format: Format,
    /// The swaplab header, or one describing the other formats (4 KiB pages; oracleGeneral's
    /// clock is its own time field, a CSV's is its time column or the record index).
    pub header: Header,
}

fn detect(head: &[u8]) -> Format {
    if head.starts_with(swpt::MAGIC) {
        return Format::Swaplab;
    }
    let line_end = head.iter().position(|&b| b == b'\n').unwrap_or(head.len());
    let first = &head[..line_end];
    let texty = !first.is_empty() && first.iter().all(|&b| b == b'\r' || b == b'\t' || (0x20..0x7f).contains(&b));
    if texty && (first.contains(&b',') || first.iter().all(|b| b.is_ascii_digit())) {
        Format::Csv
    } else {
        Format::OracleGeneral
    }
}

pub fn open(path: &str, opts: &ReadOptions) -> Result<TraceReader, TraceError> {
    let mut input = open_bytes(path)?;
    let head = input.fill_buf().map_err(|e| TraceError::new(path, At::File, io_message(&e)))?;
    if head.is_empty() {
        return Err(TraceError::new(path, At::File, "empty file: expected a page trace (swaplab, oracleGeneral or CSV)"));
    }
    let format = opts.format.unwrap_or_else(|| detect(head));
    let mut header = Header::default();
    let inner = match format {
        Format::Swaplab => {
            let r = swpt::Reader::new(input, path)?;
            header = r.header.clone();
            Inner::Swaplab(r)
        }
        Format::OracleGeneral => {
            header.clock = Clock::Records;
            Inner::Oracle(oracle_general::Reader::new(input, path))
        }
        Format::Csv => {
            let r = csv::Reader::new(input, path, opts.columns.as_deref(), 12)?;
            header.clock = Clock::Instructions;
            Inner::Csv(r)
        }
    };
    Ok(TraceReader { inner, format, header })
}

impl TraceReader {
    /// Append up to `max` accesses to `out`, skipping meta records: the fast path of replay
    /// and of loading a page sequence (swaplab and oracleGeneral decode in place; CSV goes
    /// record by record). `Ok(false)` once the trace has ended and nothing was appended.
    pub fn read_accesses(&mut self, out: &mut Vec<crate::Access>, max: usize) -> Result<bool, TraceError> {
        match &mut self.inner {
            Inner::Swaplab(r) => r.read_accesses(out, max),
            Inner::Oracle(r) => r.read_accesses(out, max),
            Inner::Csv(r) => {
                let mut n = 0;
                while n < max {
                    match r.next() {
                        Some(Ok(Record::Access(a))) => {
                            out.push(a);
                            n += 1;
                        }
                        Some(Ok(_)) => {}
                        Some(Err(e)) => return Err(e),
                        None => return Ok(n > 0),
                    }
                }
                Ok(true)
            }
        }
    }
}

impl Iterator for TraceReader {
    type Item = Result<Record, TraceError>;
    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.inner {
            Inner::Swaplab(r) => r.next(),
            Inner::Oracle(r) => r.next(),
            Inner::Csv(r) => r.next(),
        }
    }
}
