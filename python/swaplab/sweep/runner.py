"""Running a grid against a results store: resolve every point, key it, run what is missing.

1. Every point is resolved (the simulator's own validation) and keyed by the hash of its
   resolved configuration, kind and swaplab version (store/keys.py). A point the simulator
   refuses is recorded as failed with its error; the others go on.
2. The sweep's manifest (its grid, every point's axes and key) is written first, so the table
   knows each point's axes even when the sweep is stopped.
3. Points whose key holds an ``ok`` record are not run (``cached``); points of this sweep that
   resolve to the same configuration run once (``shared``).
4. The engine runs the rest; each result is written as its own record the moment it arrives.
5. The table (results.parquet) is rebuilt at the end — also when the sweep is interrupted, so
   that it always describes exactly the records on disk.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from .. import _core
from ..store import Store, request_key, result_key
from ..store import table as tbl
from .grid import Grid
from .progress import SweepProgress

ENGINES = ("local", "ray")


@dataclass
class Summary:
    sweep: str
    store: str
    engine: str
    points: int = 0
    ran: int = 0
    cached: int = 0
    shared: int = 0
    failed: int = 0
    wall_s: float = 0.0
    run_wall_s: float = 0.0           # sum of the simulations' own wall times
    run_cpu_s: float = 0.0            # and of their CPU times (what a less loaded machine would take)
    table: str = ""
    failures: List[Dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> Dict[str, Any]:
        return asdict(self)


def _resolve(grid: Grid, overrides: List[str], version: str) -> Tuple[str, Optional[str]]:
    """(key, error): the key of the resolved configuration, or of the request when refused."""
    try:
        ovs = list(overrides)
        config = json.loads(_core.resolve(grid.text, grid.source, ovs))
    except (_core.ConfigError, ValueError) as e:
        return request_key(grid.text, overrides, version), " ".join(str(e).split())
    return result_key(config, version), None


def manifest(grid: Grid, keyed: List[Tuple[str, Optional[str]]], version: str, engine: str) -> Dict[str, Any]:
    return {
        "kind": "sweep", "name": grid.name, "grid": str(grid.path), "workload": grid.source,
        "experiment": grid.experiment, "scale": grid.scale, "set": grid.base_set,
        "axes": grid.axes, "swaplab_version": version, "engine": engine,
        "written": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "points": [{"index": p.index, "key": k, "axes": p.axes, "overrides": p.overrides}
                   for p, (k, _) in zip(grid.points, keyed)],
    }


def _engine_iter(engine: str, tasks: List[Any], jobs: int, address: Optional[str]):
    if engine == "ray":
        from . import engine_ray

        return engine_ray.run(tasks, jobs, address)
    from . import engine_local

    return engine_local.run(tasks, jobs)


def run_sweep(grid: Grid, store: Store, engine: str = "local", jobs: Optional[int] = None,
              address: Optional[str] = None, show_progress: bool = True) -> Summary:
    """Run the grid's missing points into the store. KeyboardInterrupt propagates after the
    table was brought up to date with what finished."""
    t0 = time.monotonic()
    version = _core.version()
    jobs = jobs or os.cpu_count() or 1
    keyed = [_resolve(grid, p.overrides, version) for p in grid.points]
    summary = Summary(sweep=grid.name, store=str(store.root), engine=engine, points=len(grid.points),
                      table=str(store.table_path))
    store.remove_stale_temporaries()
    store.put_sweep(manifest(grid, keyed, version, engine))

    errors: Dict[str, str] = {}
    tasks, seen = [], set()
    for p, (key, err) in zip(grid.points, keyed):
        if err is not None:
            if key not in errors:
                store.put_failed(key, err, {"kind": "simulation", "swaplab_version": version,
                                            "workload_source": grid.source, "overrides": p.overrides})
            errors[key] = err
        elif key in seen:
            continue
        elif store.status(key) == "ok":
            summary.cached += 1
            seen.add(key)
        else:
            seen.add(key)
            tasks.append((key, grid.text, grid.source, p.overrides))
    overrides_of = {t[0]: t[3] for t in tasks}

    progress = SweepProgress(grid.name, len(tasks), summary.cached, jobs, show_progress)
    stream = _engine_iter(engine, tasks, jobs, address)
    try:
        for key, (out, err, wall, cpu, worker_version) in stream:
            if out is not None and worker_version != version:
                out, err = None, f"the worker runs swaplab {worker_version}, this sweep {version}"
            meta = {"kind": "simulation", "swaplab_version": version, "workload_source": grid.source,
                    "overrides": overrides_of[key], "wall_s": round(wall, 6), "cpu_s": round(cpu, 6)}
            if out is not None:
                store.put_ok(key, out, meta)
                summary.ran += 1
                summary.run_wall_s += wall
                summary.run_cpu_s += cpu
            else:
                store.put_failed(key, err or "unknown error", meta)
                errors[key] = err or "unknown error"
            progress.update(out is not None)
    finally:
        if hasattr(stream, "close"):
            stream.close()
        progress.close()
        store.flush()
        tbl.write(store)
    _count_points(grid, keyed, errors, summary)
    summary.wall_s = time.monotonic() - t0
    return summary


def _count_points(grid: Grid, keyed: List[Tuple[str, Optional[str]]], errors: Dict[str, str], summary: Summary) -> None:
    """Per point: failed (with its error), or shared when its simulation served an earlier
    point of this sweep; ran and cached count simulations."""
    first = set()
    for p, (key, _) in zip(grid.points, keyed):
        if key in errors:
            summary.failed += 1
            summary.failures.append({"index": p.index, "axes": p.axes, "error": errors[key]})
        elif key in first:
            summary.shared += 1
        first.add(key)

