"""The tidy table of a store: one row per run, one column per axis and per metric.

Rows come from the sweeps' manifests (a point that belongs to two sweeps appears once in each,
with that sweep's axes) and from records no sweep names (results added with ``swaplab results
add``: their ``sweep`` is null). A point not yet run has no row: the table holds only what was
completed, so an interrupted sweep's table is exact, merely shorter.

Columns:

* ``sweep``, ``point`` (index in the sweep), ``key``, ``status`` (ok/failed), ``error``
* one per axis, named by its key with dots as underscores (``kernel.page_cluster`` ->
  ``kernel_page_cluster``; ``row``, ``variant``, ``seed``), so that SQL needs no quoting
* ``kind`` (simulation/host), ``name``, ``swaplab_version``, ``interrupted``
* metrics: ``elapsed_s``, ``ra_hit_pct``, ``touches``, ``major_faults``, touch- and
  fault-latency percentiles in microseconds over all tasks (``latency_p99_us``,
  ``fault_latency_p99_us``, ...: metrics.py's names), ``oom_kills``
* every /proc/vmstat counter of the run under its own name (``pswpin``, ``allocstall``, ...)
* ``wall_s``, ``cpu_s``: the wall-clock and CPU seconds the point took (informative: they
  depend on the machine and its load, not on the configuration; not part of the result)

An axis column holds numbers when every value is a number, text otherwise. The table is
written as Parquet (atomically) and read back with pandas.
"""

from __future__ import annotations

import io
from typing import Any, Dict, Iterable, List, Optional

from .. import metrics
from ..io import write_atomic
from .points import Store

LATENCY_METRICS = [f"{f}_{p}_us" for f in ("latency", "fault_latency") for p in ("mean", "p50", "p90", "p99", "p99.9", "max")]
TIMING_COLUMNS = ["wall_s", "cpu_s"]
BASE_COLUMNS = ["sweep", "point", "key", "status", "error", "kind", "name", "swaplab_version", "interrupted"]
METRIC_COLUMNS = ["elapsed_s", "ra_hit_pct", "touches", "major_faults", "oom_kills"] + \
    [m.replace("p99.9", "p99_9") for m in LATENCY_METRICS]


def axis_column(axis: str) -> str:
    return axis.replace(".", "_")


def metric_row(raw: Dict[str, Any]) -> Dict[str, Any]:
    """The metric columns of one result."""
    row: Dict[str, Any] = {
        "kind": raw.get("kind"), "name": raw.get("name"), "swaplab_version": raw.get("swaplab_version"),
        "interrupted": bool(raw.get("interrupted", False)),
        "elapsed_s": metrics.extract(raw, "elapsed_s"),
        "ra_hit_pct": metrics.extract(raw, "ra_hit_pct"),
        "touches": metrics.extract(raw, "touches"),
        "major_faults": metrics.extract(raw, "major_faults"),
        "oom_kills": sum(1 for e in raw.get("events", []) or [] if e.get("kind") == "oom_kill"),
    }
    for m in LATENCY_METRICS:
        row[m.replace("p99.9", "p99_9")] = metrics.extract(raw, m)
    for counter, value in (raw.get("vmstat") or {}).items():
        if counter not in row:
            row[counter] = value
    return row


def _record_row(record: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    if record is None:
        return {}
    row = {"key": record.get("key"), "status": record.get("status"), "error": record.get("error"),
           "wall_s": record.get("wall_s"), "cpu_s": record.get("cpu_s")}
    if record.get("status") == "ok":
        row.update(metric_row(record.get("result") or {}))
    return row


def rows(store: Store) -> List[Dict[str, Any]]:
    out: List[Dict[str, Any]] = []
    named = set()
    cache: Dict[str, Dict[str, Any]] = {}
    for sweep in store.sweeps():
        for p in sweep.get("points", []):
            key = p["key"]
            named.add(key)
            if key not in cache:
                rec = store.get(key)
                if rec is None:
                    continue  # not run yet
                cache[key] = _record_row(rec)
            row = {"sweep": sweep["name"], "point": p["index"]}
            row.update({axis_column(a): v for a, v in p["axes"].items()})
            row.update(cache[key])
            out.append(row)
    for key in store.keys():
        rec = store.get(key) if key not in named else None
        if rec is not None:
            out.append({"sweep": None, "point": None, **_record_row(rec)})
    return out


def _uniform(values: Iterable[Any]) -> str:
    """'number', 'bool' or 'text': the type an axis column gets."""
    kinds = set()
    for v in values:
        if v is None:
            continue
        kinds.add("bool" if isinstance(v, bool) else "number" if isinstance(v, (int, float)) else "text")
    return kinds.pop() if len(kinds) == 1 else ("text" if kinds else "number")


def frame(store: Store):
    """The table as a pandas DataFrame (built from the records, not from the Parquet file)."""
    import pandas as pd

    data = rows(store)
    extra = sorted({c for r in data for c in r} - set(BASE_COLUMNS) - set(METRIC_COLUMNS) - set(TIMING_COLUMNS))
    axes = [c for s in store.sweeps() for c in (axis_column(a) for a in s.get("axes", {}))]
    axes = list(dict.fromkeys(axes))
    counters = [c for c in extra if c not in axes]
    columns = BASE_COLUMNS[:2] + axes + BASE_COLUMNS[2:] + METRIC_COLUMNS + counters + TIMING_COLUMNS
    df = pd.DataFrame(data, columns=columns)
    for c in axes:
        kind = _uniform(df[c])
        if kind == "text":
            df[c] = df[c].map(lambda v: None if v is None or v != v else str(v)).astype("string")
        elif kind == "bool":
            df[c] = df[c].astype("boolean")
    for c in ("sweep", "key", "status", "error", "kind", "name", "swaplab_version"):
        df[c] = df[c].astype("string")
    df["point"] = df["point"].astype("Int64")
    df["interrupted"] = df["interrupted"].astype("boolean")
    for c in METRIC_COLUMNS + counters + TIMING_COLUMNS:
        df[c] = pd.to_numeric(df[c], errors="coerce")
    return df


def write(store: Store):
    """Rebuild ``results.parquet`` from the records (atomically); the DataFrame it holds."""
    df = frame(store)
    buf = io.BytesIO()
    df.to_parquet(buf, index=False, engine="pyarrow")
    write_atomic(store.table_path, buf.getvalue())
    return df


def is_stale(store: Store) -> bool:
    """Whether a record or manifest is newer than the table (a sweep killed before its end, or
    still running). Renaming a file into a directory updates the directory's mtime, so the
    directories alone tell — at most 257 stat calls, whatever the store's size."""
    try:
        built = store.table_path.stat().st_mtime_ns
    except FileNotFoundError:
        return True
    dirs = [store.sweeps_dir, store.points_dir] + [d for d in store.points_dir.iterdir() if d.is_dir()]
    return any(d.stat().st_mtime_ns > built for d in dirs)


def load(store: Store, sweep: Optional[str] = None):
    """The table (from ``results.parquet``, rebuilt first when a record is newer), optionally
    one sweep's rows only."""
    import pandas as pd

    if is_stale(store):
        df = write(store)
    else:
        df = pd.read_parquet(store.table_path, engine="pyarrow")
    if sweep is not None:
        if sweep not in set(df["sweep"].dropna()):
            names = ", ".join(sorted(set(df["sweep"].dropna()))) or "none"
            from .points import StoreError

            raise StoreError(f"{store.root}: no sweep named {sweep!r} in the table (sweeps: {names})")
        df = df[df["sweep"] == sweep].reset_index(drop=True)
    return df
