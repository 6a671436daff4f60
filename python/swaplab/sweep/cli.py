"""``swaplab sweep GRID.toml`` and ``swaplab results query|add`` (registered into the
``swaplab`` command by cli._add_plugin_commands)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Optional


def _user_error(msg: str) -> Exception:
    from ..cli import UserError

    return UserError(msg)


def _write_or_print(path: Optional[str], obj: Any) -> None:
    """``--json`` alone prints to stdout; ``--json OUT`` writes OUT atomically."""
    if path in (None, "-"):
        sys.stdout.write(json.dumps(obj, indent=2) + "\n")
    else:
        from ..io import write_json_atomic

        write_json_atomic(path, obj)


def _open_store(path: str, create: bool = False):
    from ..store import Store, StoreError

    try:
        return Store(path, create=create)
    except StoreError as e:
        raise _user_error(str(e)) from None


def cmd_sweep(args: argparse.Namespace) -> int:
    from . import grid as gridmod
    from .engine_ray import RayUnavailable
    from .runner import run_sweep

    if args.jobs is not None and args.jobs < 1:
        raise _user_error(f"--jobs {args.jobs}: expected at least 1")
    if args.scale is not None and not 0 < args.scale < float("inf"):
        raise _user_error(f"--scale {args.scale:g}: expected a positive number")
    if args.address and args.engine != "ray":
        raise _user_error("--address is for --engine ray")
    if args.json not in (None, "-"):
        from ..cli import _check_output

        _check_output(args.json, "--json")
    if args.engine == "ray":
        from .engine_ray import import_ray

        try:
            import_ray()  # before anything is written
        except RayUnavailable as e:
            raise _user_error(str(e)) from None
    try:
        grid = gridmod.load(args.grid, scale=args.scale)
    except gridmod.GridError as e:
        raise _user_error(str(e)) from None
    store = _open_store(args.out, create=True)
    try:
        summary = run_sweep(grid, store, engine=args.engine, jobs=args.jobs, address=args.address,
                            show_progress=not args.quiet)
    except RayUnavailable as e:
        raise _user_error(str(e)) from None
    if args.json is not None:
        _write_or_print(args.json, summary.as_dict())
    if args.json != "-" and not args.quiet:
        _print_summary(summary)
    if args.strict and summary.failed:
        print(f"swaplab sweep: --strict: {summary.failed} point(s) failed", file=sys.stderr)
        return 1
    return 0


def _print_summary(s: Any) -> None:
    shared = f", {s.shared} shared a simulation with another point" if s.shared else ""
    print(f"sweep {s.sweep}: {s.points} points: ran {s.ran}, found {s.cached} in the store, "
          f"{s.failed} failed{shared} ({s.wall_s:.1f} s, engine {s.engine})")
    for f in s.failures[:10]:
        axes = ", ".join(f"{k}={v}" for k, v in f["axes"].items())
        print(f"  failed: point {f['index']} ({axes}): {f['error']}")
    if len(s.failures) > 10:
        print(f"  ... and {len(s.failures) - 10} more failed points (see `swaplab results query`)")
    print(f"store: {s.store}   table: {s.table}")


def cmd_results_query(args: argparse.Namespace) -> int:
    from ..store import StoreError
    from ..store.query import query

    store = _open_store(args.store)
    try:
        df = query(store, args.sql)
    except StoreError as e:
        raise _user_error(str(e)) from None
    if args.format == "csv":
        df.to_csv(sys.stdout, index=False)
    elif args.format == "json":
        sys.stdout.write(df.to_json(orient="records", indent=1) + "\n")
    else:
        import pandas as pd

        with pd.option_context("display.max_rows", 500, "display.max_columns", 50, "display.width", 200):
            print(df.to_string(index=False) if len(df) else "(no rows)")
    return 0


def cmd_results_add(args: argparse.Namespace) -> int:
    """Import results written by ``swaplab run --json`` or ``swaplab host run --json``."""
    from ..store import result_key
    from ..store import table as tbl

    store = _open_store(args.store, create=True)
    added = 0
    for path in args.files:
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
            raw = json.loads(text)
        except FileNotFoundError:
            raise _user_error(f"{path}: no such file") from None
        except (OSError, ValueError) as e:
            raise _user_error(f"{path}: not a JSON result: {e}") from None
        if not isinstance(raw, dict) or not isinstance(raw.get("config"), dict) or "vmstat" not in raw:
            raise _user_error(f"{path}: not a run result (expected the JSON of `swaplab run --json` "
                              "or `swaplab host run --json`, with its config and vmstat)")
        key = result_key(raw["config"], raw.get("swaplab_version", ""), raw.get("kind", "simulation"))
        store.put_ok(key, text, {"kind": raw.get("kind", "simulation"), "swaplab_version": raw.get("swaplab_version"),
                                 "workload_source": os.path.abspath(path)})
        added += 1
        print(f"{path}: {key}")
    tbl.write(store)
    print(f"added {added} result(s) to {store.root}")
    return 0


def add_parser(sub: Any) -> None:
    from ..store import DEFAULT_STORE
    from .runner import ENGINES

    s = sub.add_parser("sweep", help="run a grid of configurations into a results store",
                       description="Run every point of a grid (GRID.toml: a workload and [axes]) that the "
                                   "results store does not hold yet; a failed point is recorded and the others go on.")
    s.add_argument("grid", metavar="GRID.toml")
    s.add_argument("--out", default=DEFAULT_STORE, metavar="STORE", help=f"results store directory (default {DEFAULT_STORE})")
    s.add_argument("--json", nargs="?", const="-", default=None, metavar="OUT",
                   help="the summary as JSON: on stdout, or written to OUT")
    s.add_argument("--jobs", "-j", type=int, default=None, metavar="N",
                   help="points in parallel (local engine; default: the number of CPUs; with --engine ray: CPUs of the local cluster)")
    s.add_argument("--engine", choices=ENGINES, default="local", help="local process pool (default) or a Ray cluster")
    s.add_argument("--address", metavar="HOST:PORT", help="Ray cluster to join (default: start a local one)")
    s.add_argument("--scale", type=float, default=None, metavar="F", help="divide sizes and durations by F (overrides the grid's scale)")
    s.add_argument("--strict", action="store_true", help="exit 1 when any point failed (the others still run)")
    s.add_argument("--quiet", "-q", action="store_true", help="no progress line, no summary (with --json OUT)")
    s.set_defaults(func=cmd_sweep)

    r = sub.add_parser("results", help="query or add to a results store")
    rsub = r.add_subparsers(dest="results_command", metavar="ACTION")
    q = rsub.add_parser("query", help="run SQL (DuckDB) over the table `results`")
    q.add_argument("sql", metavar="SQL", help='e.g. "SELECT kernel_swappiness, avg(elapsed_s) FROM results GROUP BY 1"')
    q.add_argument("--store", default=DEFAULT_STORE, metavar="STORE")
    q.add_argument("--format", choices=("table", "csv", "json"), default="table")
    q.set_defaults(func=cmd_results_query)
    a = rsub.add_parser("add", help="keep run results (swaplab run/host run --json) in the store")
    a.add_argument("files", nargs="+", metavar="RESULT.json")
    a.add_argument("--store", default=DEFAULT_STORE, metavar="STORE")
    a.set_defaults(func=cmd_results_add)
    r.set_defaults(func=lambda args: (r.print_help(sys.stderr), 2)[1])
