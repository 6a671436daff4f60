//! Writing a trace in the format its file name asks for ([`Format::for_output`]): `.csv`,
//! `.oracleGeneral`, anything else swaplab's format; `.zst` adds zstd compression. Output is
//! atomic: written to a temporary file beside the target and renamed over it only when
//! complete, so a failed conversion never leaves a partial trace.

use crate::reader::Format;
use crate::swpt::{self, Header};
use crate::{csv, oracle_general, Record, TraceError};
use std::fs::File;
use std::io::{BufWriter, Write};

#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Written {
    pub accesses: u64,
    /// Meta records the output format cannot hold (CSV, oracleGeneral keep accesses only).
    pub meta_dropped: u64,
    pub bytes: u64,
}

/// Why a write failed: the input was malformed, or the output could not be written.
#[derive(Debug)]
pub enum WriteError {
    Input(TraceError),
    Output(String),
}

/// zstd level for `.zst` outputs: level 3, zstd's default (fast, ~3x smaller than level 1's
/// output is not worth 5x the time on a capture).
const ZSTD_LEVEL: i32 = 3;

pub fn write_trace<I: Iterator<Item = Result<Record, TraceError>>>(path: &str, header: &Header, records: I) -> Result<Written, WriteError> {
    let (format, zst) = Format::for_output(path);
    let tmp = format!("{path}.tmp-{}", std::process::id());
    let out_err = |e: std::io::Error| WriteError::Output(format!("{path}: {e}"));
    let file = File::create(&tmp).map_err(out_err)?;
    let result = (|| {
        let sink: Box<dyn Write> = if zst {
            Box::new(zstd::stream::write::Encoder::new(BufWriter::new(file), ZSTD_LEVEL).map_err(out_err)?.auto_finish())
        } else {
            Box::new(BufWriter::new(file))
        };
        write_format(sink, format, header, records)
    })();
    match result {
        Ok(mut w) => {
            w.bytes = std::fs::metadata(&tmp).map(|m| m.len()).unwrap_or(0);
            std::fs::rename(&tmp, path).map_err(out_err)?;
            Ok(w)
        }
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

fn write_format<I: Iterator<Item = Result<Record, TraceError>>>(sink: Box<dyn Write>, format: Format, header: &Header, records: I) -> Result<Written, WriteError> {
    let io = |e: std::io::Error| WriteError::Output(e.to_string());
    let mut w = Written::default();
    match format {
        Format::Swaplab => {
            let mut out = swpt::Writer::new(sink, header).map_err(io)?;
            for r in records {
                let r = r.map_err(WriteError::Input)?;
                if matches!(r, Record::Access(_)) {
                    w.accesses += 1;
                }
                out.write(&r).map_err(io)?;
            }
            drop(out.finish().map_err(io)?);
        }
        Format::Csv => {
            let mut out = csv::Writer::new(sink).map_err(io)?;
            for r in records {
                match r.map_err(WriteError::Input)? {
                    Record::Access(a) => {
                        w.accesses += 1;
                        out.write(&a).map_err(io)?;
                    }
                    Record::Meta { .. } => w.meta_dropped += 1,
                }
            }
            drop(out.finish().map_err(io)?);
        }
        Format::OracleGeneral => {
            let (mut times, mut pages) = (Vec::new(), Vec::new());
            for r in records {
                match r.map_err(WriteError::Input)? {
                    Record::Access(a) => {
                        times.push(a.time);
                        pages.push(a.page);
                    }
                    Record::Meta { .. } => w.meta_dropped += 1,
                }
            }
            w.accesses = pages.len() as u64;
            let mut sink = sink;
            oracle_general::write(&mut sink, &times, &pages, 1 << header.page_shift).map_err(io)?;
            drop(sink);
        }
    }
    Ok(w)
}
