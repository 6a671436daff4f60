//! Sizes and durations as people write them in workload files: `"900MiB"`, `"1GB"`, `4096`,
//! `"300s"`, `"90us"`. Binary (KiB, MiB, GiB, TiB) and decimal (KB, MB, GB, TB) suffixes are
//! both accepted and mean what they say; a bare integer is bytes (sizes) or nanoseconds
//! (durations). `"N pages"` counts 4 KiB pages.

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use std::fmt;

pub use crate::mm::PAGE_SIZE;

/// A size in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Size(pub u64);

impl Size {
    pub fn pages(self) -> u64 {
        self.0 / PAGE_SIZE
    }
    pub fn mib(n: u64) -> Size {
        Size(n << 20)
    }
}

/// A duration in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Duration(pub u64);

pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let num: f64 = num
        .replace('_', "")
        .parse()
        .map_err(|_| format!("expected a size such as \"900MiB\", \"1GB\" or a byte count, got {s:?}"))?;
    let mult: f64 = match unit.trim() {
        "" | "B" => 1.0,
        "K" | "KiB" | "k" => 1024.0,
        "KB" | "kB" => 1e3,
        "M" | "MiB" => (1u64 << 20) as f64,
        "MB" => 1e6,
        "G" | "GiB" => (1u64 << 30) as f64,
        "GB" => 1e9,
        "T" | "TiB" => (1u64 << 40) as f64,
        "TB" => 1e12,
        "page" | "pages" | "p" => PAGE_SIZE as f64,
        other => {
            return Err(format!(
                "unknown size unit {other:?} in {s:?} (expected B, KiB, MiB, GiB, TiB, KB, MB, GB, TB or pages)"
            ))
        }
    };
    if !num.is_finite() {
        return Err(format!("expected a finite size, got {s:?}"));
    }
    if num < 0.0 {
        return Err(format!("a size must not be negative, got {s:?}"));
    }
    Ok((num * mult).round() as u64)
}

pub fn parse_duration(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let num: f64 = num
        .replace('_', "")
        .parse()
        .map_err(|_| format!("expected a duration such as \"300s\", \"10ms\", \"90us\", got {s:?}"))?;
    let mult = match unit.trim() {
        "" | "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "min" => 60e9,
        other => {
            return Err(format!("unknown duration unit {other:?} in {s:?} (expected ns, us, ms, s or min)"))
        }
    };
    if !num.is_finite() {
        return Err(format!("expected a finite duration, got {s:?}"));
    }
    if num < 0.0 {
        return Err(format!("a duration must not be negative, got {s:?}"));
    }
    Ok((num * mult).round() as u64)
}

struct UnitVisitor {
    what: &'static str,
    parse: fn(&str) -> Result<u64, String>,
}

impl<'de> Visitor<'de> for UnitVisitor {
    type Value = u64;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}", self.what)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<u64, E> {
        if v < 0 {
            return Err(E::custom(format!("{} must not be negative, got {v}", self.what)));
        }
        Ok(v as u64)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<u64, E> {
        Ok(v)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<u64, E> {
        if !v.is_finite() {
            return Err(E::custom(format!("expected {}: a finite number, got {v}", self.what)));
        }
        if v < 0.0 {
            return Err(E::custom(format!("{} must not be negative, got {v}", self.what)));
        }
        if v >= u64::MAX as f64 {
            return Err(E::custom(format!("{} is too large, got {v}", self.what)));
        }
        Ok(v.round() as u64)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<u64, E> {
        (self.parse)(v).map_err(E::custom)
    }
}

impl<'de> Deserialize<'de> for Size {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(UnitVisitor { what: "a size (bytes, or a string such as \"900MiB\")", parse: parse_size })
            .map(Size)
    }
}

impl<'de> Deserialize<'de> for Duration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(UnitVisitor {
            what: "a duration (nanoseconds, or a string such as \"300s\")",
            parse: parse_duration,
        })
        .map(Duration)
    }
}

/// Sizes serialize as exact byte counts so that a resolved configuration re-reads identically.
impl Serialize for Size {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(self.0)
    }
}

impl Serialize for Duration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_binary_and_decimal() {
        assert_eq!(parse_size("900MiB").unwrap(), 900 << 20);
        assert_eq!(parse_size("1GB").unwrap(), 1_000_000_000);
        assert_eq!(parse_size("8 pages").unwrap(), 8 * 4096);
        assert_eq!(parse_size("1.5GiB").unwrap(), 3 << 29);
        assert!(parse_size("-1MiB").is_err());
        assert!(parse_size("12 parsecs").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("300s").unwrap(), 300_000_000_000);
        assert_eq!(parse_duration("90us").unwrap(), 90_000);
        assert_eq!(parse_duration("2.5ms").unwrap(), 2_500_000);
        assert!(parse_duration("3 fortnights").is_err());
    }
}
