"""Sizes and durations as workload files write them (mirrors crates/core/src/config/units.rs):
``"900MiB"``, ``"1GB"``, ``4096`` (bytes), ``"300s"``, ``"90us"``, ``"N pages"``."""

from __future__ import annotations

import re
from typing import Union

PAGE_SIZE = 4096

_SIZE_UNITS = {
    "": 1, "B": 1,
    "K": 1 << 10, "KiB": 1 << 10, "k": 1 << 10, "KB": 10**3, "kB": 10**3,
    "M": 1 << 20, "MiB": 1 << 20, "MB": 10**6,
    "G": 1 << 30, "GiB": 1 << 30, "GB": 10**9,
    "T": 1 << 40, "TiB": 1 << 40, "TB": 10**12,
    "page": PAGE_SIZE, "pages": PAGE_SIZE, "p": PAGE_SIZE,
}
_DURATION_UNITS = {"": 1, "ns": 1, "us": 10**3, "µs": 10**3, "ms": 10**6, "s": 10**9, "min": 60 * 10**9}
_NUM = re.compile(r"^\s*([0-9_]*\.?[0-9_]*)\s*(.*?)\s*$")


def _parse(value: Union[str, int, float], units: dict, what: str) -> float:
    if isinstance(value, bool):
        raise ValueError(f"expected a {what}, got {value!r}")
    if isinstance(value, (int, float)):
        if value < 0:
            raise ValueError(f"a {what} must not be negative, got {value!r}")
        return float(value)
    m = _NUM.match(str(value))
    if not m or not m.group(1).replace("_", "").strip("."):
        raise ValueError(f"expected a {what}, got {value!r}")
    num = float(m.group(1).replace("_", ""))
    unit = m.group(2)
    if unit not in units:
        raise ValueError(f"unknown {what} unit {unit!r} in {value!r}")
    return num * units[unit]


def parse_size(value: Union[str, int, float]) -> int:
    """Bytes."""
    return int(round(_parse(value, _SIZE_UNITS, "size")))


def parse_duration(value: Union[str, int, float]) -> int:
    """Nanoseconds."""
    return int(round(_parse(value, _DURATION_UNITS, "duration")))


def fmt_bytes(n: float) -> str:
    """Binary units, e.g. ``900 MiB``, ``12.5 GiB``."""
    for unit, mult in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= mult:
            v = n / mult
            return f"{v:.0f} {unit}" if v == int(v) else f"{v:.3g} {unit}"
    return f"{n:.0f} B"


def fmt_ns(ns: float) -> str:
    """A latency or duration: ``85 ns``, ``1.23 us``, ``4.5 ms``, ``12.3 s``."""
    if ns is None:
        return "-"
    ns = float(ns)
    if ns < 1_000:
        return f"{ns:.0f} ns"
    if ns < 1_000_000:
        return f"{ns / 1e3:.3g} us"
    if ns < 1_000_000_000:
        return f"{ns / 1e6:.3g} ms"
    return f"{ns / 1e9:.4g} s"
