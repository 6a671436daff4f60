"""The report of one run (simulated or host): memory over time, LRU list sizes, swap use and
traffic, readahead hit rate over time, and touch- and fault-latency CDFs per task.

The result keeps per-task latency percentiles (p50, p90, p99, p99.9, max), not raw samples, so
a CDF is drawn through those points on a tail-stretched axis (-log10(1 - p): p50, p90, p99,
p99.9 equally spaced), which is where reclaim shows: a median that does not move and a tail
that does. Instances of one program are one curve (touch-weighted, as metrics.py does).
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional

from .. import metrics
from .figures import LineFigure, Section, Series, Table

MIB = 4096 / 2**20
PERCENTILES = [("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p99.9", 0.999)]
MAX_TAIL = 3.5                    # where "max" sits on the -log10(1 - p) axis
LRU = ("nr_active_anon", "nr_inactive_anon", "nr_active_file", "nr_inactive_file")


def _tail(p: float) -> float:
    return -math.log10(1 - p)


def _col(ts: Dict[str, Any], name: str) -> Optional[List[Optional[float]]]:
    v = ts.get(name)
    return list(v) if isinstance(v, list) and v else None


def _pages_mib(values: List[Optional[float]]) -> List[Optional[float]]:
    return [None if v is None else v * MIB for v in values]


def _rate(t: List[float], cumulative: List[Optional[float]]) -> List[Optional[float]]:
    """MiB/s between samples of a cumulative page counter."""
    out: List[Optional[float]] = []
    for i, v in enumerate(cumulative):
        prev_t, prev_v = (t[i - 1], cumulative[i - 1]) if i else (0.0, 0)
        dt = t[i] - prev_t
        out.append(None if v is None or prev_v is None or dt <= 0 else (v - prev_v) * MIB / dt)
    return out


def time_figures(raw: Dict[str, Any]) -> List[LineFigure]:
    ts = raw.get("timeseries") or {}
    t_ns = _col(ts, "t_ns")
    note = "this result keeps no time series (sample_interval, or a host run without samples)"
    if not t_ns:
        return [LineFigure("Memory over time", "virtual time (s)", "MiB", [], note=note)]
    t = [x / 1e9 for x in t_ns]
    mem = [Series(label, t, _pages_mib(_col(ts, c) or [])) for c, label in
           (("nr_free_pages", "free"), ("swap_used_pages", "swap used"))]
    lru = [Series(c.replace("nr_", "").replace("_", " "), t, _pages_mib(_col(ts, c) or [])) for c in LRU if _col(ts, c)]
    swap = [Series(c, t, _rate(t, _col(ts, c) or [])) for c in ("pswpin", "pswpout") if _col(ts, c)]
    ra = _col(ts, "ra_hit_rate")
    ra_pct = [None if v is None else 100.0 * v for v in ra] if ra else []
    return [
        LineFigure("Free memory and swap use", "virtual time (s)", "MiB", mem),
        LineFigure("LRU list sizes", "virtual time (s)", "MiB", lru),
        LineFigure("Swap traffic", "virtual time (s)", "MiB/s", swap),
        LineFigure("Swap readahead hit rate (per sample interval)", "virtual time (s)", "hit %",
                   [Series("readahead hits", t, ra_pct)] if ra_pct else [],
                   note="no page was read ahead in this run"),
    ]


def _task_names(raw: Dict[str, Any]) -> List[str]:
    return list(dict.fromkeys(t.get("name", "") for t in raw.get("tasks", []) or []))


def cdf_figures(raw: Dict[str, Any]) -> List[LineFigure]:
    yticks = [(_tail(p), name) for name, p in PERCENTILES] + [(MAX_TAIL, "max")]
    out = []
    for prefix, title in (("latency", "Touch latency CDF per task"), ("fault_latency", "Fault latency CDF per task")):
        series = []
        for name in _task_names(raw):
            xs = [metrics.extract(raw, f"{prefix}_{p}_us", name) for p, _ in PERCENTILES]
            xs.append(metrics.extract(raw, f"{prefix}_max_us", name))
            ys = [_tail(p) for _, p in PERCENTILES] + [MAX_TAIL]
            pts = [(x, y) for x, y in zip(xs, ys) if x is not None and x > 0]
            if pts:
                series.append(Series(name, [p[0] for p in pts], [p[1] for p in pts], step=True))
        out.append(LineFigure(title, "latency (µs, log scale)", "percentile", series, logx=True, yticks=yticks,
                              ymin=None, note="no task recorded a latency"))
    return out


def task_table(raw: Dict[str, Any]) -> Table:
    rows = []
    for name in _task_names(raw):
        ts = metrics.select_tasks(raw, name)
        rows.append([name, len(ts), metrics.extract(raw, "elapsed_s", name), metrics.extract(raw, "touches", name),
                     metrics.extract(raw, "major_faults", name), metrics.extract(raw, "latency_p50_us", name),
                     metrics.extract(raw, "latency_p99_us", name), metrics.extract(raw, "fault_latency_p99_us", name)])
    return Table(["task", "instances", "elapsed s", "touches", "major faults", "touch p50 µs", "touch p99 µs",
                  "fault p99 µs"], rows)


COUNTER_COLUMNS = 3


def counter_table(raw: Dict[str, Any]) -> Table:
    """The counters that moved, in alphabetical order down three column pairs (a long list
    reads better wide than tall)."""
    moved = sorted((k, v) for k, v in (raw.get("vmstat") or {}).items() if v)
    n = -(-len(moved) // COUNTER_COLUMNS)
    rows = []
    for i in range(n):
        row: List[Any] = []
        for c in range(COUNTER_COLUMNS):
            row += list(moved[c * n + i]) if c * n + i < len(moved) else ["", ""]
        rows.append(row)
    return Table(["/proc/vmstat counter", "value"] * COUNTER_COLUMNS, rows, "counters that moved during the run")


def sections(raw: Dict[str, Any], title: str = "", compact: bool = False) -> List[Section]:
    """The run's sections; ``compact``: one section of its plots (several runs on one page)."""
    elapsed = (raw.get("summary") or {}).get("elapsed_s", raw.get("elapsed_ns", 0) / 1e9)
    ra = metrics.ra_hit_pct(raw)
    text = (f"{raw.get('kind', 'simulation')} of {raw.get('name') or 'an unnamed workload'}, seed {raw.get('seed')}: "
            f"{elapsed:.3f} s virtual, readahead hit rate {'-' if ra is None else f'{ra:.1f}%'}"
            + (" — interrupted before the end" if raw.get("interrupted") else ""))
    if compact:
        return [Section(title, text, time_figures(raw) + cdf_figures(raw), [task_table(raw)])]
    return [
        Section(title or "Memory, LRU lists and swap over time", text, time_figures(raw)),
        Section("Latency", "", cdf_figures(raw), [task_table(raw)]),
        Section("Counters", "", [], [counter_table(raw)]),
    ]
