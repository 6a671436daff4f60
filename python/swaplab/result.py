"""The result of one run (docs/result-schema.md) with pandas views for analysis."""

from __future__ import annotations

import json
from functools import cached_property
from typing import Any, Dict, List, Optional

from .io import PathLike, write_atomic

LATENCY_KEYS = ("mean", "p50", "p90", "p99", "p99.9", "max")
RECLAIM_PCT_KEYS = ("p50", "p90", "p99", "max")

# Flat per-task columns; latency columns are in nanoseconds (p99.9 is spelled p99_9).
TASK_COLUMNS: List[str] = (
    ["name", "instance", "pid", "start_ns", "end_ns", "elapsed_ns", "elapsed_s", "touches",
     "minor_faults", "major_faults", "throughput_bytes_per_s", "oom_killed"]
    + [f"touch_{k.replace('.', '_')}" for k in LATENCY_KEYS]
    + [f"fault_{k.replace('.', '_')}" for k in LATENCY_KEYS]
    + ["direct_reclaim_calls", "direct_reclaim_stall_ns", "direct_reclaim_pages_reclaimed"]
    + [f"direct_reclaim_stall_{k}" for k in RECLAIM_PCT_KEYS]
    + [f"direct_reclaim_pages_per_call_{k}" for k in RECLAIM_PCT_KEYS]
)


def flatten_task(t: Dict[str, Any]) -> Dict[str, Any]:
    """One task entry of the result as a flat row (see ``TASK_COLUMNS``)."""
    row: Dict[str, Any] = {}
    for key, value in t.items():
        if key == "touch_latency_ns":
            row.update({f"touch_{k.replace('.', '_')}": v for k, v in value.items()})
        elif key == "fault_latency_ns":
            row.update({f"fault_{k.replace('.', '_')}": v for k, v in value.items()})
        elif key == "direct_reclaim":
            for k, v in value.items():
                if k == "stall_ns_pct":
                    row.update({f"direct_reclaim_stall_{p}": x for p, x in v.items()})
                elif k == "pages_per_call_pct":
                    row.update({f"direct_reclaim_pages_per_call_{p}": x for p, x in v.items()})
                else:
                    row[f"direct_reclaim_{k}"] = v
        elif key == "touch_kinds":
            # touch_kind_major_touches, touch_kind_major_p50, ... (latency, ns)
            for kind, stats in (value or {}).items():  # None on the host: not measured
                row[f"touch_kind_{kind}_touches"] = stats["touches"]
                row.update({f"touch_kind_{kind}_{p.replace('.', '_')}": x for p, x in stats["latency_ns"].items()})
        elif key == "requests":
            # requests_ops, requests_ops_per_s, ..., request_p50 (latency, ns)
            for k, v in value.items():
                if k == "latency_ns":
                    row.update({f"request_{p.replace('.', '_')}": x for p, x in v.items()})
                else:
                    row[f"requests_{k}"] = v
        elif isinstance(value, dict):
            row.update({f"{key}_{k}": v for k, v in value.items()})
        elif isinstance(value, list):  # phase_elapsed_ns: phase_elapsed_ns_0, _1, ...
            row.update({f"{key}_{i}": v for i, v in enumerate(value)})
        else:
            row[key] = value
    if "elapsed_ns" in row:
        row["elapsed_s"] = row["elapsed_ns"] / 1e9
    return row


class Result:
    """One run's result.

    ``raw`` is the JSON object of docs/result-schema.md; ``vmstat`` its counters; ``tasks`` and
    ``timeseries`` are pandas DataFrames (latency columns such as ``fault_p99`` are in ns).
    """

    def __init__(self, raw: Dict[str, Any]):
        self.raw = raw

    @classmethod
    def from_json(cls, text: str) -> "Result":
        return cls(json.loads(text))

    @classmethod
    def load(cls, path: PathLike) -> "Result":
        with open(path, encoding="utf-8") as f:
            return cls(json.load(f))

    # -- plain fields -------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.raw.get("name", "")

    @property
    def config(self) -> Dict[str, Any]:
        """The fully resolved configuration the run used."""
        return self.raw.get("config", {})

    @property
    def version(self) -> str:
        return self.raw.get("swaplab_version", "")

    @property
    def interrupted(self) -> bool:
        return bool(self.raw.get("interrupted", False))

    @property
    def vmstat(self) -> Dict[str, int]:
        return dict(self.raw.get("vmstat", {}))

    @property
    def events(self) -> List[Dict[str, Any]]:
        return list(self.raw.get("events", []))

    @property
    def devices(self) -> List[Dict[str, Any]]:
        return list(self.raw.get("devices", []))

    @property
    def summary(self) -> Dict[str, Any]:
        return dict(self.raw.get("summary", {}))

    @property
    def elapsed_s(self) -> float:
        """Virtual seconds until the last task finished."""
        s = self.raw.get("summary", {}).get("elapsed_s")
        if s is None:
            s = self.raw.get("elapsed_ns", 0) / 1e9
        return float(s)

    @property
    def ra_hit_pct(self) -> Optional[float]:
        """100 * swap_ra_hit / swap_ra, None when no page was read ahead."""
        s = self.raw.get("summary", {}).get("ra_hit_pct")
        if s is not None:
            return float(s)
        vm = self.raw.get("vmstat", {})
        ra = vm.get("swap_ra", 0)
        return 100.0 * vm.get("swap_ra_hit", 0) / ra if ra else None

    @property
    def oom_kills(self) -> List[Dict[str, Any]]:
        return [e for e in self.events if e.get("kind") == "oom_kill"]

    # -- DataFrames ---------------------------------------------------------------------
    @cached_property
    def tasks(self):
        """One row per task instance (columns: ``TASK_COLUMNS``, plus any new fields)."""
        import pandas as pd

        rows = [flatten_task(t) for t in self.raw.get("tasks", [])]
        extra = [c for r in rows for c in r if c not in TASK_COLUMNS]
        columns = TASK_COLUMNS + list(dict.fromkeys(extra))
        return pd.DataFrame(rows, columns=columns)

    @cached_property
    def timeseries(self):
        """One row per sample (every ``sim.sample_interval`` of virtual time), with ``t_s``."""
        import pandas as pd

        ts = self.raw.get("timeseries", {}) or {}
        n = max((len(v) for v in ts.values() if isinstance(v, list)), default=0)
        data = {k: (list(v) + [None] * (n - len(v))) for k, v in ts.items() if isinstance(v, list)}
        df = pd.DataFrame(data)
        if "ra_hit_rate" in df:
            df["ra_hit_rate"] = pd.to_numeric(df["ra_hit_rate"], errors="coerce")
        if "t_ns" in df:
            df.insert(1, "t_s", df["t_ns"] / 1e9)
        return df

    # -- output -------------------------------------------------------------------------
    def to_json(self, indent: Optional[int] = None) -> str:
        return json.dumps(self.raw, indent=indent)

    def save(self, path: PathLike, indent: Optional[int] = 2) -> None:
        """Write the result as JSON, atomically."""
        write_atomic(path, self.to_json(indent=indent) + "\n")

    def __repr__(self) -> str:
        return (f"<swaplab.Result {self.name or '(unnamed)'}: {len(self.raw.get('tasks', []))} tasks, "
                f"{self.elapsed_s:.3f} s virtual{', interrupted' if self.interrupted else ''}>")
