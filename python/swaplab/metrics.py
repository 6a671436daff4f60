"""Named figures extracted from a result, as the published tables report them.

A metric is a function of the result's JSON and an optional task-name filter (a glob such as
``"seq"`` or ``"rand*"``, or a list of globs; default: all tasks). Every metric returns a float,
or None when the run has nothing to measure (no task matched, no readahead happened).

==========================  =========================================================
``elapsed_s``               longest elapsed time of the matching tasks, seconds
``elapsed_cs``              the same in centiseconds (the 2012 posting's unit)
``throughput_kbps``         sum over matching tasks of touched bytes / elapsed, KiB/s
``latency_mean_us``         mean page-touch latency of the matching tasks, microseconds
``latency_pNN_us``          touch-latency percentile: p50, p90, p99, p99.9 or max
``fault_latency_mean_us``   the same for page faults (``fault_latency_pNN_us`` too)
``ra_hit_pct``              100 * swap_ra_hit / swap_ra (whole machine, as /proc/vmstat)
``major_faults``            major faults of the matching tasks
``iowait_pct``              share of all CPU time that was iowait (whole machine, as top's wa)
``cpu_iowait_s``            iowait summed over CPUs, seconds (/proc/stat's iowait)
``verify_errors``           reads of verifying phases that found no data (matching tasks)
``vmstat.NAME``             any /proc/vmstat counter of the run
``kswapd_cpu_ms.CAT``       kswapd's reclaim/aging CPU in category CAT (or ``total``), ms
``kswapd_cpu_pct.CAT``      the category's share of kswapd's reclaim CPU, percent
``direct_reclaim_cpu_*``    the same for all direct reclaimers together
``ops_per_s``               requests per second summed over the matching tasks
                            (memtier's Ops/sec, fio's IOPS; ``tasks[].requests``)
``op_kb_per_s``             their bytes per second in KiB/s (memtier's KB/sec)
``op_mib_per_s``            the same in MiB/s (fio's BW)
``memtier_ops_per_s``       memtier's Ops/sec: the matching tasks' measured requests over
                            their mean window (see ``memtier_rate``)
``memtier_kb_per_s``        memtier's KB/sec: their bytes over the same duration, in KiB/s
``op_latency_pNN_us``       request-latency percentile (mean, p50, p90, p99, p99.9,
                            max), weighted by requests
==========================  =========================================================

Percentiles over several tasks are the touch-weighted mean of the per-task percentiles (the
result keeps one histogram per task); for identical instances of one program that is the
percentile of the whole group to within the histogram's resolution.
"""

from __future__ import annotations

import fnmatch
import re
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

TaskFilter = Union[None, str, Sequence[str]]
_PCT = re.compile(r"^(latency|fault_latency|op_latency)_(mean|p50|p90|p99|p99\.9|p999|max)_us$")


class MetricError(ValueError):
    """An unknown metric name (a user's mistake in an experiment file)."""


def select_tasks(raw: Dict[str, Any], tasks: TaskFilter = None) -> List[Dict[str, Any]]:
    all_tasks = raw.get("tasks", []) or []
    if tasks is None:
        return list(all_tasks)
    globs = [tasks] if isinstance(tasks, str) else list(tasks)
    return [t for t in all_tasks if any(fnmatch.fnmatchcase(t.get("name", ""), g) for g in globs)]


def _elapsed_s(ts: List[Dict[str, Any]]) -> Optional[float]:
    if not ts:
        return None
    return max(t.get("elapsed_ns", 0) for t in ts) / 1e9


def _throughput_kbps(ts: List[Dict[str, Any]]) -> Optional[float]:
    if not ts:
        return None
    total = 0.0
    for t in ts:
        bps = t.get("throughput_bytes_per_s")
        if bps is None:
            el = t.get("elapsed_ns", 0)
            bps = t.get("touches", 0) * 4096 / (el / 1e9) if el else 0.0
        total += bps
    return total / 1024.0


def _latency(ts: List[Dict[str, Any]], field: str, key: str) -> Optional[float]:
    weighted, weight = 0.0, 0
    for t in ts:
        lat = ((t.get("requests") or {}).get("latency_ns") if field == "requests" else t.get(field)) or {}
        if key not in lat:
            continue
        if field == "touch_latency_ns":
            n = t.get("touches", 0)
        elif field == "requests":
            n = (t.get("requests") or {}).get("ops", 0)
        else:
            n = t.get("minor_faults", 0) + t.get("major_faults", 0)
        if key == "max":
            weighted = max(weighted, float(lat[key]))
            weight = max(weight, 1)
            continue
        weighted += float(lat[key]) * n
        weight += n
    if not weight:
        return None
    value = weighted if key == "max" else weighted / weight
    return value / 1000.0


def _requests(ts: List[Dict[str, Any]], key: str, div: float) -> Optional[float]:
    """Sum of a request rate over the tasks that made requests (None when none did)."""
    rs = [t["requests"] for t in ts if t.get("requests")]
    return sum(r.get(key, 0.0) for r in rs) / div if rs else None


def memtier_rate(ts: List[Dict[str, Any]], key: str, div: float) -> Optional[float]:
    """A memtier run's total rate: all threads' requests (``key`` = "ops") or bytes ("bytes")
    over one duration. memtier merges its threads' statistics by averaging their start times
    and their end times (``run_stats::merge``, ``timeval_factorial_average``) and divides the
    totals by the difference (``run_stats::summarize``): the mean of the per-thread windows.
    Unlike the sum of per-thread rates, a thread that runs longer (or alone) weighs by its
    share of the requests, not by its own rate. None when no task made requests."""
    rs = [t["requests"] for t in ts if t.get("requests")]
    if not rs:
        return None
    mean_window_s = sum(r.get("window_ns", 0) for r in rs) / len(rs) / 1e9
    if mean_window_s <= 0:
        return None
    return sum(r.get(key, 0) for r in rs) / mean_window_s / div


def ra_hit_pct(raw: Dict[str, Any]) -> Optional[float]:
    vm = raw.get("vmstat", {}) or {}
    ra = vm.get("swap_ra", 0)
    return 100.0 * vm.get("swap_ra_hit", 0) / ra if ra else None


_SIMPLE: Dict[str, Callable[[Dict[str, Any], List[Dict[str, Any]]], Optional[float]]] = {
    "elapsed_s": lambda raw, ts: _elapsed_s(ts),
    "elapsed_cs": lambda raw, ts: None if _elapsed_s(ts) is None else _elapsed_s(ts) * 100.0,
    "throughput_kbps": lambda raw, ts: _throughput_kbps(ts),
    "ra_hit_pct": lambda raw, ts: ra_hit_pct(raw),
    "major_faults": lambda raw, ts: float(sum(t.get("major_faults", 0) for t in ts)) if ts else None,
    "touches": lambda raw, ts: float(sum(t.get("touches", 0) for t in ts)) if ts else None,
    "iowait_pct": lambda raw, ts: _summary(raw, "iowait_pct"),
    "cpu_iowait_s": lambda raw, ts: _summary(raw, "cpu_iowait_s"),
    "verify_errors": lambda raw, ts: float(sum(t.get("verify_errors", 0) for t in ts)) if ts else None,
    "ops_per_s": lambda raw, ts: _requests(ts, "ops_per_s", 1.0),
    "op_kb_per_s": lambda raw, ts: _requests(ts, "bytes_per_s", 1024.0),
    "op_mib_per_s": lambda raw, ts: _requests(ts, "bytes_per_s", 1024.0 * 1024.0),
    "memtier_ops_per_s": lambda raw, ts: memtier_rate(ts, "ops", 1.0),
    "memtier_kb_per_s": lambda raw, ts: memtier_rate(ts, "bytes", 1024.0),
}


def _summary(raw: Dict[str, Any], key: str) -> Optional[float]:
    v = (raw.get("summary") or {}).get(key)
    return None if v is None else float(v)

UNITS = {"elapsed_s": "s", "elapsed_cs": "cs", "throughput_kbps": "KB/s", "ra_hit_pct": "%",
         "major_faults": "", "touches": "", "iowait_pct": "%", "cpu_iowait_s": "s", "verify_errors": "",
         "ops_per_s": "ops/s", "op_kb_per_s": "KB/s", "op_mib_per_s": "MiB/s",
         "memtier_ops_per_s": "ops/s", "memtier_kb_per_s": "KB/s"}


# The categories of `kswapd_cpu_by_category` (crates/core/src/stats/cpu.rs, same order).
CPU_CATEGORIES = ("rmap_walk", "page_table_walk", "bloom_filter", "lru_ops", "lru_lock", "unmap_tlb_flush", "tlb_shootdown",
                  "swap_alloc", "free_page", "compression", "blk_bio_alloc", "blk_plug_merge",
                  "blk_request_alloc", "blk_dispatch", "blk_completion", "memcg_flush", "anon_vma_lock")
# kswapd_cpu_ms.CAT / kswapd_cpu_pct.CAT, and the same for direct_reclaim_cpu_*.
_CPU = re.compile(r"^(kswapd|direct_reclaim)_cpu_(ms|pct)\.(" + "|".join(CPU_CATEGORIES) + r"|total)$")


def _reclaim_cpu(raw: Dict[str, Any], who: str, unit: str, cat: str) -> Optional[float]:
    by = raw.get(f"{who}_cpu_by_category")
    if by is None:
        return None  # a host run: not measured
    total = sum(by.values())
    v = total if cat == "total" else by.get(cat, 0)
    if unit == "ms":
        return v / 1e6
    return 100.0 * v / total if total else None


def known(name: str) -> bool:
    return (name in _SIMPLE or bool(_PCT.match(name)) or bool(_CPU.match(name))
            or (name.startswith("vmstat.") and len(name) > 7))


def unit_of(name: str) -> str:
    if name in UNITS:
        return UNITS[name]
    if _PCT.match(name):
        return "us"
    m = _CPU.match(name)
    if m:
        return "ms" if m.group(2) == "ms" else "%"
    return ""


def check(name: str) -> None:
    if not known(name):
        raise MetricError(
            f"unknown metric {name!r} (expected one of {', '.join(sorted(_SIMPLE))}, "
            "latency_{mean,p50,p90,p99,p99.9,max}_us, fault_latency_..._us, op_latency_..._us, vmstat.COUNTER or "
            "{kswapd,direct_reclaim}_cpu_{ms,pct}.CATEGORY with CATEGORY one of "
            f"{', '.join(CPU_CATEGORIES)}, total)")


def extract(raw: Dict[str, Any], name: str, tasks: TaskFilter = None) -> Optional[float]:
    """The value of metric ``name`` in a result (its JSON object)."""
    check(name)
    if name.startswith("vmstat."):
        v = (raw.get("vmstat") or {}).get(name[7:])
        return None if v is None else float(v)
    c = _CPU.match(name)
    if c:
        return _reclaim_cpu(raw, c.group(1), c.group(2), c.group(3))
    ts = select_tasks(raw, tasks)
    if name in _SIMPLE:
        return _SIMPLE[name](raw, ts)
    m = _PCT.match(name)
    assert m
    field = {"latency": "touch_latency_ns", "fault_latency": "fault_latency_ns", "op_latency": "requests"}[m.group(1)]
    key = {"p999": "p99.9"}.get(m.group(2), m.group(2))
    return _latency(ts, field, key)
