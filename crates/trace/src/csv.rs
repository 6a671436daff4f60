//! CSV traces with configurable columns.
//!
//! Columns are chosen by a spec such as `time=icount,page=vpn,op=op` (names from the header
//! line) or `time=0,addr=2` (0-based indexes, for files without a header). Without a spec the
//! header names are recognised: time (`time`, `icount`, `timestamp`, `clock`), page (`page`,
//! `vpn`, `obj_id`), byte address (`addr`, `address`, `vaddr`: divided by the page size), op
//! (`op`, `kind`, `rw`, `type`: `r`/`read`/`0`, `w`/`write`/`1`, `x`/`exec`/`ifetch`/`2`) and
//! thread (`thread`, `tid`). A page or an address column is required; a missing time is the
//! line's record index, a missing op is a read, a missing thread is 0. Numbers are decimal or
//! `0x` hexadecimal. Blank lines and lines starting with `#` are skipped.

use crate::error::{At, TraceError};
use crate::input::{io_message, Input};
use crate::{Access, Kind, Record};
use std::io::{BufRead, Write};

#[derive(Clone, Copy, Debug, Default)]
struct Columns {
    time: Option<usize>,
    page: Option<usize>,
    addr: Option<usize>,
    op: Option<usize>,
    thread: Option<usize>,
}

const FIELDS: [(&str, &[&str]); 5] = [
    ("time", &["time", "icount", "timestamp", "clock"]),
    ("page", &["page", "vpn", "obj_id"]),
    ("addr", &["addr", "address", "vaddr"]),
    ("op", &["op", "kind", "rw", "type"]),
    ("thread", &["thread", "tid"]),
];

impl Columns {
    fn slot(&mut self, field: &str) -> Option<&mut Option<usize>> {
        Some(match field {
            "time" => &mut self.time,
            "page" => &mut self.page,
            "addr" => &mut self.addr,
            "op" => &mut self.op,
            "thread" => &mut self.thread,
            _ => return None,
        })
    }
}

pub struct Reader {
    input: Input,
    file: String,
    cols: Columns,
    page_shift: u32,
    line: u64,
    index: u64,
    buf: String,
    done: bool,
    /// A first data line read while looking for the header.
    pending: Option<String>,
}

fn looks_numeric(s: &str) -> bool {
    let s = s.trim();
    !s.is_empty() && (s.starts_with("0x") || s.chars().all(|c| c.is_ascii_digit()))
}

impl Reader {
    /// `spec`: the column spec (see the module docs) or None to use the header's names.
    pub fn new(input: Input, file: &str, spec: Option<&str>, page_shift: u32) -> Result<Reader, TraceError> {
        let mut r = Reader { input, file: file.to_string(), cols: Columns::default(), page_shift, line: 0, index: 0, buf: String::new(), done: false, pending: None };
        let first = r.read_line()?;
        let header: Option<Vec<String>> = match &first {
            Some(l) if !l.split(',').any(looks_numeric) => Some(l.split(',').map(|s| s.trim().to_ascii_lowercase()).collect()),
            Some(l) => {
                r.pending = Some(l.clone());
                None
            }
            None => None,
        };
        let at = |line: u64, m: String| TraceError::new(file, At::Line(line), m);
        match spec {
            Some(spec) => {
                for item in spec.split(',').filter(|s| !s.trim().is_empty()) {
                    let (field, col) = item.split_once('=').ok_or_else(|| TraceError::new(file, At::File, format!("column spec {item:?}: expected FIELD=COLUMN, e.g. page=vpn")))?;
                    let field = field.trim();
                    let col = col.trim();
                    let index = match (col.parse::<usize>(), &header) {
                        (Ok(i), _) => i,
                        (Err(_), Some(h)) => h.iter().position(|n| n == &col.to_ascii_lowercase()).ok_or_else(|| at(1, format!("no column named {col:?} in the header (it has: {})", h.join(", "))))?,
                        (Err(_), None) => return Err(at(1, format!("column {col:?} named but the file has no header line: give a 0-based index"))),
                    };
                    let slot = r.cols.slot(field).ok_or_else(|| TraceError::new(file, At::File, format!("unknown field {field:?} in the column spec: expected time, page, addr, op or thread")))?;
                    *slot = Some(index);
                }
            }
            None => {
                let h = header.as_ref().ok_or_else(|| at(1, "expected a header line naming the columns (e.g. `icount,vpn,op`), or give the columns explicitly".into()))?;
                for (field, names) in FIELDS {
                    *r.cols.slot(field).expect("known field") = h.iter().position(|n| names.contains(&n.as_str()));
                }
            }
        }
        if r.cols.page.is_none() && r.cols.addr.is_none() {
            let h = header.map(|h| format!(" (the header has: {})", h.join(", "))).unwrap_or_default();
            return Err(at(1, format!("expected a page column (page, vpn, obj_id) or an address column (addr, address, vaddr){h}")));
        }
        Ok(r)
    }

    fn read_line(&mut self) -> Result<Option<String>, TraceError> {
        loop {
            self.buf.clear();
            self.line += 1;
            let n = self.input.read_line(&mut self.buf).map_err(|e| TraceError::new(&self.file, At::Line(self.line), io_message(&e)))?;
            if n == 0 {
                return Ok(None);
            }
            let l = self.buf.trim();
            if l.is_empty() || l.starts_with('#') {
                continue;
            }
            return Ok(Some(l.to_string()));
        }
    }

    fn parse(&self, line: &str) -> Result<Access, TraceError> {
        let fields: Vec<&str> = line.split(',').collect();
        let at = |m: String| TraceError::new(&self.file, At::Line(self.line), m);
        let get = |col: usize, what: &str| -> Result<&str, TraceError> {
            fields.get(col).map(|s| s.trim()).ok_or_else(|| at(format!("missing column {} ({what}): the line has {} columns", col + 1, fields.len())))
        };
        let num = |col: usize, what: &str| -> Result<u64, TraceError> {
            let s = get(col, what)?;
            let v = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
                Some(h) => u64::from_str_radix(h, 16),
                None => s.parse::<u64>(),
            };
            v.map_err(|_| at(format!("{what} {s:?} is not a non-negative integer (decimal or 0x hex)")))
        };
        let page = match (self.cols.page, self.cols.addr) {
            (Some(c), _) => num(c, "page")?,
            (None, Some(c)) => num(c, "address")? >> self.page_shift,
            (None, None) => unreachable!("checked in new"),
        };
        let time = match self.cols.time {
            Some(c) => num(c, "time")?,
            None => self.index,
        };
        let thread = match self.cols.thread {
            Some(c) => u32::try_from(num(c, "thread")?).map_err(|_| at("thread id above 2^32".into()))?,
            None => 0,
        };
        let kind = match self.cols.op {
            None => Kind::Read,
            Some(c) => match get(c, "op")?.to_ascii_lowercase().as_str() {
                "r" | "read" | "0" | "l" | "load" => Kind::Read,
                "w" | "write" | "1" | "s" | "store" => Kind::Write,
                "x" | "exec" | "ifetch" | "2" | "i" => Kind::Exec,
                other => return Err(at(format!("op {other:?}: expected r, w or x"))),
            },
        };
        Ok(Access { time, thread, page, kind })
    }
}

impl Iterator for Reader {
    type Item = Result<Record, TraceError>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let next = match self.pending.take() {
            Some(l) => Ok(Some(l)),
            None => self.read_line(),
        };
        let line = match next {
            Ok(Some(l)) => l,
            Ok(None) => {
                self.done = true;
                return None;
            }
            Err(e) => {
                self.done = true;
                return Some(Err(e));
            }
        };
        let r = self.parse(&line).map(Record::Access);
        self.index += 1;
        if r.is_err() {
            self.done = true;
        }
        Some(r)
    }
}

/// Write accesses as CSV with the header `time,thread,page,op` (meta records have no CSV form).
pub struct Writer<W: Write> {
    out: W,
    buf: Vec<u8>,
}

impl<W: Write> Writer<W> {
    pub fn new(mut out: W) -> std::io::Result<Writer<W>> {
        out.write_all(b"time,thread,page,op\n")?;
        Ok(Writer { out, buf: Vec::with_capacity(1 << 16) })
    }
    pub fn write(&mut self, a: &Access) -> std::io::Result<()> {
        writeln!(self.buf, "{},{},{},{}", a.time, a.thread, a.page, a.kind.letter())?;
        if self.buf.len() >= 1 << 16 {
            self.out.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }
    pub fn finish(mut self) -> std::io::Result<W> {
        self.out.write_all(&self.buf)?;
        self.out.flush()?;
        Ok(self.out)
    }
}
