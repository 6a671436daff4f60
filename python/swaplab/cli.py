"""The ``swaplab`` command.

Exit status: 0 success; 1 ``reproduce --strict`` found a differing shape; 2 a user's mistake
(bad workload or experiment, missing file, bad ``--set``); 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, Dict, List, Optional, Sequence


class UserError(Exception):
    """A mistake on the command line or in an input file: one line on stderr, exit 2."""


def _one_line(msg: Any) -> str:
    return " ".join(str(msg).split())


# -- progress bar --------------------------------------------------------------------------

class ProgressBar:
    """A bar on stderr, only on a terminal and only once a run has taken more than a second."""

    def __init__(self, enabled: bool, stream: Any = None, delay: float = 1.0):
        self.stream = stream or sys.stderr
        self.enabled = enabled and self.stream.isatty()
        self.t0 = time.monotonic()
        self.delay = delay
        self.drawn = False

    def __call__(self, virtual_ns: int, fraction: float) -> bool:
        if not self.enabled:
            return True
        wall = time.monotonic() - self.t0
        if wall < self.delay:
            return True
        frac = min(max(fraction, 0.0), 1.0)
        width = 30
        fill = int(frac * width)
        self.stream.write(f"\r[{'#' * fill}{'.' * (width - fill)}] {frac * 100:5.1f}%  "
                          f"virtual {virtual_ns / 1e9:8.2f} s  wall {wall:6.1f} s")
        self.stream.flush()
        self.drawn = True
        return True

    def close(self) -> None:
        if self.drawn:
            self.stream.write("\r" + " " * 72 + "\r")
            self.stream.flush()


# -- commands ------------------------------------------------------------------------------

def _check_sets(sets: Sequence[str]) -> List[str]:
    out = []
    for s in sets:
        key, eq, _ = s.partition("=")
        if not eq or not key.strip() or any(not seg for seg in key.strip().split(".")):
            raise UserError(f"--set {s!r}: expected key=value, e.g. --set kernel.page_cluster=0")
        out.append(s)
    return out


def _check_output(path: Optional[str], what: str) -> None:
    """Refuse an output path before a long run (io.check_output); an empty path is refused,
    not ignored, and a created directory is announced."""
    if path is None:
        return
    from .io import check_output

    note = check_output(path, what)
    if note:
        print(f"swaplab: {note}", file=sys.stderr)


def cmd_run(args: argparse.Namespace) -> int:
    from .api import load_workload, simulate_text
    from .table import run_report

    sets = _check_sets(args.set or [])
    _check_output(args.json, "--json")
    _check_output(args.plot, "--plot")
    text, source = load_workload(args.file)
    if args.runs is not None and args.runs < 1:
        raise UserError(f"--runs {args.runs}: expected at least 1")
    from .expruns import is_experiment, run_experiment_file

    if is_experiment(_toml_or_none(text)):
        return run_experiment_file(args, sets, UserError)
    if args.all_variants:
        raise UserError(f"{args.file}: --all-variants is for experiment files (experiments/*.toml)")
    if args.runs is not None and args.runs > 1:
        if args.lru_gen_dump:
            raise UserError("--lru-gen-dump shows one run: it cannot be combined with --runs")
        return _run_many(args, text, source, sets)
    if args.lru_gen_dump:
        from . import _core

        reclaim = json.loads(_core.resolve(text, source, sets))["kernel"]["reclaim"]
        if reclaim != "mglru":
            raise UserError(f"{args.file}: --lru-gen-dump needs kernel.reclaim = \"mglru\" (the {reclaim} LRU has no generations)")
    bar = ProgressBar(enabled=not args.quiet)
    try:
        result = simulate_text(text, source, sets, bar)
    finally:
        bar.close()
    if args.json is not None:
        result.save(args.json)
    if args.plot is not None:
        from .plots import plot_run

        plot_run(result, args.plot)
    if args.lru_gen_dump:
        from .lru_gen import dump_samples

        sys.stdout.write(dump_samples(result.raw))
    if not args.quiet:
        sys.stdout.write(run_report(result.raw))
    return 0


def _toml_or_none(text: str) -> Any:
    """The parsed document, or None when it is not valid TOML (the core then reports where)."""
    from .experiments import tomllib

    try:
        return tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError):  # RecursionError: arrays nested too deeply
        return None


def _run_many(args: argparse.Namespace, text: str, source: str, sets: List[str]) -> int:
    """``--runs N``: seeds seed, seed+1, ...; mean/std/min/max of elapsed and key counters."""
    from . import runs as rn
    from .api import simulate_text
    from .experiments import tomllib

    if args.plot:
        raise UserError("--plot draws one run; use it without --runs")
    try:
        doc = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError):
        doc = {}  # the core reports the malformed file
    base = rn.base_seed(doc)
    for s in sets:  # a --set seed=N moves the base
        k, _, v = s.partition("=")
        if k.strip() == "seed":
            try:
                base = int(v.strip())
            except ValueError:
                raise UserError(f"--set {s!r}: seed must be an integer") from None
    sets = [s for s in sets if s.partition("=")[0].strip() != "seed"]

    def one(t: str, src: str, ovs: List[str]) -> Dict[str, Any]:
        res = simulate_text(t, src, ovs)
        res.raw.pop("timeseries", None)
        return res.raw

    def progress(i: int, n: int) -> None:
        if not args.quiet and sys.stderr.isatty():
            sys.stderr.write(f"\rrun {i}/{n}")
            sys.stderr.flush()

    raws = rn.run_many(text, source, sets, args.runs, base, one, progress)
    if not args.quiet and sys.stderr.isatty():
        sys.stderr.write("\r" + " " * 20 + "\r")
    summary = rn.summarise(raws)
    seed_list = rn.seeds(base, args.runs)
    if args.json is not None:
        from .io import write_json_atomic

        write_json_atomic(args.json, {
            "kind": "runs", "runs": args.runs, "seeds": seed_list, "summary": summary,
            "results": [{"seed": r.get("seed"), "elapsed_s": (r.get("summary") or {}).get("elapsed_s"),
                         "vmstat": r.get("vmstat"), "interrupted": r.get("interrupted", False)} for r in raws],
        })
    if not args.quiet:
        sys.stdout.write(rn.format_summary(summary, args.runs, seed_list))
    return 0


def cmd_resolve(args: argparse.Namespace) -> int:
    from . import _core
    from .api import load_workload

    sets = _check_sets(args.set or [])
    text, source = load_workload(args.file)
    out = json.loads(_core.resolve(text, source, sets))
    sys.stdout.write(json.dumps(out, indent=2) + "\n")
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from . import _core
    from .table import bench_report

    if args.json not in (None, "-"):
        _check_output(args.json, "--json")
    if args.trace:
        from .trace_cli import bench_trace

        return bench_trace(args.trace, args.json)
    figures = json.loads(_core.bench(args.quick))
    if args.json == "-":
        sys.stdout.write(json.dumps(figures, indent=2) + "\n")
    elif args.json:
        from .io import write_json_atomic

        write_json_atomic(args.json, figures)
    else:
        sys.stdout.write(bench_report(figures))
    return 0


def _write_reproduce_outputs(path: str, reps: List[Dict[str, Any]], document: Dict[str, Any]) -> None:
    """The JSON and one PNG per table, all rendered first and then written together, so that
    Ctrl-C never leaves the old JSON replaced by a half set of outputs (io.write_all_atomic)."""
    from .io import write_all_atomic
    from .plots import plot_experiment

    files: List[Any] = [(path, json.dumps(document, indent=2, allow_nan=False) + "\n")]
    base, _ = os.path.splitext(path)
    for rep in reps:
        png = f"{base}.png" if len(reps) == 1 else f"{base}-{rep['experiment']}.png"
        _check_output(png, "--json (its plot)")
        files.append((png, plot_experiment(rep)))
    note = write_all_atomic(files)
    if note:
        print(f"swaplab: {note}", file=sys.stderr)


def cmd_reproduce(args: argparse.Namespace) -> int:
    from . import experiments as ex

    skipped: List[str] = []
    from .reproduce import CellError, format_all, report_document, reproduce

    if not (args.scale > 0 and args.scale == args.scale and args.scale != float("inf")):
        raise UserError(f"--scale {args.scale:g}: expected a positive number")
    if args.jobs is not None and args.jobs < 1:
        raise UserError(f"--jobs {args.jobs}: expected at least 1")
    _check_output(args.json, "--json")
    try:
        if args.list:
            d = ex.find_dir(args.dir)
            for p in ex.discover(d):
                e = ex.load(p)
                note = "" if e.has_published else "  (no published numbers: not in --all)"
                print(f"{e.name:24s} {e.title}{note}")
            return 0
        if args.all:
            if args.names:
                raise UserError("give experiment names or --all, not both")
            paths = ex.discover(ex.find_dir(args.dir))
            exps = [ex.load(p) for p in paths]
            skipped = [e.name for e in exps if not e.has_published]
            exps = [e for e in exps if e.has_published]
            if not exps:
                raise UserError("no experiments with published numbers found")
        else:
            if not args.names:
                raise UserError("name an experiment (see --list) or give --all")
            exps = [ex.load(ex.find(n, args.dir)) for n in args.names]
    except ex.ExperimentError as e:
        raise UserError(str(e)) from None
    if args.all and skipped and not args.quiet:
        print(f"reproduce: --all skips {', '.join(skipped)} (no published numbers; run them by name)",
              file=sys.stderr)
    try:
        reps = reproduce(exps, scale=args.scale, n_jobs=args.jobs, show_progress=not args.quiet)
    except CellError as e:
        raise UserError(str(e)) from None
    sys.stdout.write(format_all(reps))
    if args.json is not None:
        _write_reproduce_outputs(args.json, reps, report_document(reps, args.all or len(reps) > 1))
    if args.strict and not all(r["agrees"] for r in reps):
        print("swaplab reproduce: --strict: some shapes differ", file=sys.stderr)
        return 1
    return 0


# -- parser --------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    p = argparse.ArgumentParser(prog="swaplab", description="A simulator and lab for Linux page reclaim and swap.")
    p.add_argument("--version", action="version", version=f"swaplab {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    r = sub.add_parser("run", help="simulate a workload file and print its counters and latencies")
    r.add_argument("file", metavar="FILE", help="workload (TOML), or an experiment file: runs its baseline variant of every row")
    r.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a setting, e.g. --set kernel.page_cluster=0 (repeatable)")
    r.add_argument("--json", metavar="OUT", help="write the full result (JSON) to OUT, atomically")
    r.add_argument("--plot", metavar="OUT.png", help="plot memory, swap traffic and readahead hits over time")
    r.add_argument("--quiet", "-q", action="store_true", help="print nothing (no table, no progress)")
    r.add_argument("--lru-gen-dump", action="store_true",
                   help="MGLRU: print /sys/kernel/debug/lru_gen as it read at each time-series sample")
    r.add_argument("--runs", type=int, default=None, metavar="N",
                   help="run N times with seeds seed, seed+1, ...; print mean/std/min/max of elapsed and key counters")
    r.add_argument("--all-variants", action="store_true",
                   help="FILE is an experiment: run every (row, variant) cell, not only the baseline of each row")
    r.set_defaults(func=cmd_run)

    s = sub.add_parser("resolve", help="validate a workload and print its fully resolved configuration")
    s.add_argument("file", metavar="FILE")
    s.add_argument("--set", action="append", metavar="KEY=VALUE")
    s.set_defaults(func=cmd_resolve)

    b = sub.add_parser("bench", help="measure the simulator's speed")
    b.add_argument("--json", nargs="?", const="-", default=None, metavar="OUT",
                   help="the figures as JSON: written to OUT (atomically), or on stdout without OUT")
    b.add_argument("--quick", action="store_true", help="a shorter measurement")
    b.add_argument("--trace", metavar="FILE", help="replay speed on a trace, beside libCacheSim's LRU (trace_cli.py)")
    b.set_defaults(func=cmd_bench)

    rp = sub.add_parser("reproduce", help="reproduce published tables (experiments/*.toml)",
                        description="Run every cell of published tables and compare the shapes. An experiment "
                                    "is named (hugh2012-ssd: experiments/hugh2012-ssd.toml, see --list) or given "
                                    "as a path to its file (any directory).")
    rp.add_argument("names", nargs="*", metavar="NAME|PATH",
                    help="experiment name (see --list) or path to an experiment file, e.g. experiments/hugh2012-ssd.toml")
    rp.add_argument("--all", action="store_true", help="every experiment in experiments/")
    rp.add_argument("--list", action="store_true", help="list the experiments")
    rp.add_argument("--scale", type=float, default=1.0, metavar="F",
                    help="divide memory sizes and durations by F (default 1: the published size)")
    rp.add_argument("--json", metavar="OUT", help="write the comparison as JSON (and plots beside it)")
    rp.add_argument("--strict", action="store_true", help="exit 1 when any cell differs")
    rp.add_argument("--jobs", "-j", type=int, default=None, metavar="N",
                    help="simulations in parallel (default: the number of CPUs)")
    rp.add_argument("--dir", metavar="DIR", help="experiments directory (default: ./experiments)")
    rp.add_argument("--quiet", "-q", action="store_true", help="no progress lines")
    rp.set_defaults(func=cmd_reproduce)

    _add_plugin_commands(sub)
    return p


def _add_plugin_commands(sub: Any) -> None:
    """Subcommands owned by other parts of the package: ``swaplab.host.cli`` registers
    ``host run``, ``host cleanup``, ``compare`` and ``calibrate`` with ``add_host_commands``;
    ``swaplab.sweep.cli`` ``sweep`` and ``results``; ``swaplab.report.cli`` ``report``.
    Their functions return their exit status; they may also raise an exception with an
    ``exit_status`` attribute for a clean one-line error."""
    import importlib
    import importlib.util

    for mod in ("swaplab.host.cli", "swaplab.sweep.cli", "swaplab.report.cli", "swaplab.trace_cli"):
        try:
            spec = importlib.util.find_spec(mod)
        except ModuleNotFoundError:
            spec = None
        if spec is None:
            continue
        module = importlib.import_module(mod)
        register = getattr(module, "add_host_commands", None) or getattr(module, "add_parser", None)
        if register is not None:
            register(sub)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """The ``swaplab`` command. Every user mistake is one line on stderr and exit 2 (a
    ``ConfigError``, which covers bad input and output files, or a ``UserError``)."""
    try:
        status = _dispatch(argv)
    except KeyboardInterrupt:
        _ignore_sigint(argv)  # a second Ctrl-C must not interrupt the message
        print("\nswaplab: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 1
    _ignore_sigint(argv)  # done: a late Ctrl-C must not print a traceback at exit
    return status


def _ignore_sigint(argv: Optional[Sequence[str]]) -> None:
    """As the ``swaplab`` program (not when called from Python with explicit arguments), ignore
    SIGINT once the outcome is decided: interpreter shutdown (pool finalizers) is not
    interruptible work, and a Ctrl-C there would print a traceback after the result."""
    import signal
    import threading

    if argv is None and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def _dispatch(argv: Optional[Sequence[str]]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    from . import ConfigError

    try:
        return args.func(args)
    except (ConfigError, UserError) as e:
        print(f"swaplab: error: {_one_line(e)}", file=sys.stderr)
        return 2
    except Exception as e:  # a plugin's user-facing error (see _add_plugin_commands)
        status = getattr(e, "exit_status", None)
        if not isinstance(status, int):
            raise
        print(f"swaplab: error: {_one_line(e)}", file=sys.stderr)
        return status


if __name__ == "__main__":
    sys.exit(main())
