"""``swaplab trace ...``, ``swaplab bounds`` and ``swaplab bench --trace``: real programs'
page traces as workloads (docs/trace-format.md).

* ``trace stats F``: accesses, distinct pages, R/W/X, footprint, reuse distances.
* ``trace convert IN OUT``: between swaplab's format, oracleGeneral and CSV (``.zst`` compresses).
* ``trace mrc F --out PREFIX``: the exact LRU miss-ratio curve, its SHARDS estimate with the
  estimate's error, and the classic kernel policy simulated at a few sizes (PNG and JSON).
* ``trace capture [--out F] -- CMD ARGS``: record a program's page accesses (trace_capture.py).
* ``bounds WORKLOAD_OR_TRACE --ram 64MiB,...``: major faults of OPT, OPT with oracle readahead,
  LRU and CLOCK (misses after each page's first touch) beside the kernel policies simulated
  through the full model, with the gap to OPT (JSON: the difference; table: the ratio).

Every user mistake (a malformed trace, a bad size) is one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, Dict, List, Optional


class TraceCliError(Exception):
    """A user's mistake: printed as one line, exit status 2 (see cli._add_plugin_commands)."""

    exit_status = 2


def _core_call(fn: Any, *args: Any, **kw: Any) -> Any:
    from . import _core

    try:
        return fn(*args, **kw)
    except (_core.TraceError, _core.ConfigError) as e:
        raise TraceCliError(str(e)) from None


def _sizes(spec: str) -> List[int]:
    from .units import parse_size

    out = []
    for part in spec.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            b = parse_size(part)
        except ValueError as e:
            raise TraceCliError(f"--ram {part!r}: {e}") from None
        if b < 4096:
            raise TraceCliError(f"--ram {part!r}: expected at least one page (4096 bytes)")
        out.append(int(b) // 4096)
    if not out:
        raise TraceCliError("--ram: expected sizes such as 64MiB,128MiB")
    return out


def _is_workload(path: str) -> bool:
    return path.endswith(".toml")


def _check_input(path: str) -> None:
    if not os.path.exists(path):
        raise TraceCliError(f"{path}: no such file")


# -- kernel policies through the full model ------------------------------------------------

def kernel_policies() -> List[str]:
    """Every reclaim policy the simulator has (classic; MGLRU once it exists)."""
    from . import _core

    return list(_core.reclaim_policies())


def _trace_workload(path: str, limit_pages: int, policy: str, columns: Optional[str]) -> str:
    """A workload that replays `path` in a memory cgroup of `limit_pages`: the program may keep
    at most that much memory, as the cache of the trace-driven bounds holds that many pages."""
    cols = f"columns = {json.dumps(columns)}\n" if columns else ""
    ram_mib = limit_pages * 4096 // (1 << 20) * 2 + 512
    return (f'name = "bounds"\n[machine]\ncpus = 1\nram = "{ram_mib}MiB"\nmemcg_limit = "{limit_pages * 4096}"\n'
            f'[kernel]\nreclaim = "{policy}"\n[[swap]]\ndevice = "nvme"\nsize = "{ram_mib + 1024}MiB"\n'
            f'[[task]]\nname = "trace"\n[[task.phase]]\npattern = "trace"\nfile = {json.dumps(os.path.abspath(path))}\n{cols}')


def _kernel_majfaults(text: str, source: str, overrides: List[str]) -> int:
    from . import _core

    raw = json.loads(_core_call(_core.simulate, text, source, overrides))
    return int(raw["vmstat"].get("pgmajfault", 0))


def kernel_points(path: str, sizes: List[int], columns: Optional[str] = None) -> Dict[str, List[int]]:
    out: Dict[str, List[int]] = {}
    for policy in kernel_policies():
        if _is_workload(path):
            from .api import load_workload

            text, source = load_workload(path)
            out[policy] = [_kernel_majfaults(text, source, [
                f'machine.memcg_limit="{c * 4096}"', f'kernel.reclaim="{policy}"']) for c in sizes]
        else:
            out[policy] = [_kernel_majfaults(_trace_workload(path, c, policy, columns), "<bounds>", []) for c in sizes]
    return out


# -- commands ------------------------------------------------------------------------------

def cmd_stats(args: argparse.Namespace) -> int:
    from . import _core

    _check_input(args.file)
    s = json.loads(_core_call(_core.trace_stats, args.file, args.columns))
    if args.json:
        sys.stdout.write(json.dumps(s, indent=2) + "\n")
        return 0
    print(f"{args.file}: {s['format']} trace, {s['accesses']:,} accesses "
          f"(r {s['reads']:,}  w {s['writes']:,}  x {s['execs']:,}), {s['distinct_pages']:,} distinct pages "
          f"= {s['footprint_bytes'] / 2**20:.1f} MiB footprint")
    if s["header"].get("command"):
        print(f"command: {' '.join(s['header']['command'])}")
    print(f"threads: {', '.join(f'{t}: {n:,}' for t, n in s['threads'].items())}")
    if s["meta_records"]:
        print(f"meta records: {', '.join(f'{k} {v:,}' for k, v in s['meta_records'].items())}")
    print(f"reuse (LRU stack) distance, pages: cold {s['cold_misses']:,}")
    for b in s["reuse_distance_log2"]:
        if b["accesses"]:
            print(f"  {b['from']:>9,} - {b['to']:<9,} {b['accesses']:>12,}")
    return 0


def cmd_convert(args: argparse.Namespace) -> int:
    from . import _core

    _check_input(args.src)
    w = json.loads(_core_call(_core.trace_convert, args.src, args.dst, args.columns))
    note = f" ({w['meta_dropped']:,} meta records have no form in this format)" if w["meta_dropped"] else ""
    print(f"{args.dst}: {w['accesses']:,} accesses, {w['bytes']:,} bytes{note}")
    return 0


TRACE_POLICIES = (("opt", "OPT (Belady)"), ("oracle_readahead", "OPT + oracle readahead"), ("lru", "LRU"), ("clock", "CLOCK"))


def major_faults(b: Dict[str, Any]) -> Dict[str, List[int]]:
    """Major faults per policy: the trace-driven policies' misses after each page's first touch
    (a first touch is a minor zero-fill fault of anonymous memory, as in the kernel model),
    and the kernel policies' pgmajfault as simulated."""
    out = {k: [m - b["cold_misses"] for m in b[k]] for k, _ in TRACE_POLICIES}
    out.update({f"kernel:{p}": v for p, v in b.get("kernel", {}).items()})
    return out


def _bounds_table(b: Dict[str, Any]) -> str:
    majors = b["major_faults"]
    names = dict(TRACE_POLICIES, oracle_readahead=f"OPT + oracle readahead ({b['readahead_window']} pages)")
    sizes = b["sizes_pages"]
    head = f"{'major faults':42s}" + "".join(f"{c * 4096 / 2**20:>14.1f}M" for c in sizes)
    lines = [head, "-" * len(head)]
    for key, vals in majors.items():
        name = names.get(key) or f"kernel: {key.split(':', 1)[1]} (full model)"
        lines.append(f"{name:42s}" + "".join(f"{v:>15,}" for v in vals))
        if key != "opt":
            gaps = [("=" if v == o else "inf") if o == 0 else f"{v / o:.2f}x" for v, o in zip(vals, majors["opt"])]
            lines.append(f"{'  vs OPT':42s}" + "".join(f"{g:>15}" for g in gaps))
    lines.append(f"(misses minus the {b['cold_misses']:,} first touches, {b['accesses']:,} accesses in all)")
    return "\n".join(lines) + "\n"


def cmd_bounds(args: argparse.Namespace) -> int:
    from . import _core
    from .io import write_json_atomic

    _check_input(args.input)
    sizes = _sizes(args.ram)
    if args.window < 1:
        raise TraceCliError(f"--window {args.window}: expected at least 1 page")
    if _is_workload(args.input):
        from .api import load_workload

        text, source = load_workload(args.input)
        b = json.loads(_core_call(_core.workload_bounds, text, source, [], sizes, args.window))
    else:
        b = json.loads(_core_call(_core.trace_bounds, args.input, sizes, args.window, args.columns))
    if not args.no_kernel:
        b["kernel"] = kernel_points(args.input, sizes, args.columns)
    b["input"] = args.input
    b["major_faults"] = major_faults(b)
    opt = b["major_faults"]["opt"]
    b["gap_to_opt"] = {k: [v - o for v, o in zip(vals, opt)] for k, vals in b["major_faults"].items() if k != "opt"}
    from . import __version__

    b["swaplab_version"] = __version__
    if args.json:
        write_json_atomic(args.json, b)
    sys.stdout.write(_bounds_table(b))
    return 0


def cmd_mrc(args: argparse.Namespace) -> int:
    from . import _core
    from .io import write_json_atomic

    _check_input(args.file)
    m = json.loads(_core_call(_core.trace_mrc, args.file, args.rate, 400, args.columns))
    top = m["distinct_pages"]
    ks = [max(64, int(top * f)) for f in (0.25, 0.5, 0.75)] if not args.no_kernel else []
    m["kernel"] = {"sizes_pages": ks, **(kernel_points(args.file, ks, args.columns) if ks else {})}
    from . import __version__

    m["swaplab_version"] = __version__
    m["trace"] = args.file
    write_json_atomic(args.out + ".json", m)
    _plot_mrc(m, args.out + ".png")
    sh = m["shards"]
    print(f"{args.file}: {m['accesses']:,} accesses, {top:,} pages; exact MRC in {m['exact_wall_s']:.2f} s; "
          f"SHARDS at rate {sh['rate']:.4f} ({sh['sampled_pages']:,} pages): miss-ratio error mean "
          f"{sh['miss_ratio_mean_abs_error']:.5f}, max {sh['miss_ratio_max_abs_error']:.5f}")
    print(f"wrote {args.out}.json and {args.out}.png")
    return 0


def _plot_mrc(m: Dict[str, Any], png: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .io import write_atomic

    n = max(m["accesses"], 1)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    mib = [c * 4096 / 2**20 for c in m["sizes_pages"]]
    ax.plot(mib, [x / n for x in m["exact_misses"]], label="LRU, exact")
    ax.plot(mib, [x / n for x in m["shards"]["misses"]], "--", label=f"LRU, SHARDS rate {m['shards']['rate']:.3g}")
    for policy, vals in m["kernel"].items():
        if policy != "sizes_pages":
            # pgmajfault plus the first touches (zero-fill minor faults) count what LRU's misses count.
            ax.plot([c * 4096 / 2**20 for c in m["kernel"]["sizes_pages"]], [(v + m["distinct_pages"]) / n for v in vals], "o",
                    label=f"kernel {policy}, full model: (major faults + first touches) / accesses")
    ax.set_xlabel("memory (MiB)")
    ax.set_ylabel("miss ratio")
    ax.set_title(os.path.basename(m["trace"]))
    ax.legend()
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    write_atomic(png, buf.getvalue())


def bench_trace(path: str, json_out: Optional[str]) -> int:
    """``swaplab bench --trace F [--json [OUT]]``: swaplab's replay and exact MRC against
    libCacheSim's LRU, all reading the same input: an uncompressed oracleGeneral copy of the
    trace (the format libCacheSim reads fastest), so that neither side pays for decompression.
    JSON on stdout with ``--json``, to OUT with ``--json OUT``."""
    import tempfile

    from . import _core

    _check_input(path)
    with tempfile.TemporaryDirectory() as d:
        og = os.path.join(d, "trace.oracleGeneral")
        _core_call(_core.trace_convert, path, og, None)
        figures = json.loads(_core_call(_core.trace_bench, og))
        figures.update(_libcachesim_lru(og, figures["distinct_pages"]))
    figures["trace"] = path
    figures["input"] = "uncompressed oracleGeneral copy of the trace, read by every measurement"
    figures["load_average"] = os.getloadavg()[0]
    if json_out == "-":
        sys.stdout.write(json.dumps(figures, indent=2) + "\n")
        return 0
    if json_out:
        from .io import write_json_atomic

        write_json_atomic(json_out, figures)
    print(f"trace {path}: {figures['accesses']:,} accesses, {figures['distinct_pages']:,} pages "
          f"(load average {figures['load_average']:.1f}: rates are wall-clock)")
    for k in ("trace_replay_resident_per_s", "trace_replay_swapping_per_s", "exact_mrc_per_s", "libcachesim_lru_per_s"):
        v = figures.get(k)
        print(f"  {k:32s} {v / 1e6:10.1f} M/s" if v else f"  {k:32s} {'-':>10s}   {figures.get('libcachesim_note', '')}")
    return 0


def _libcachesim_lru(og: str, distinct: int) -> Dict[str, Any]:
    """libCacheSim's LRU on the uncompressed oracleGeneral file `og`, at half the footprint."""
    try:
        import libcachesim as lcs  # the optional [bench] extra
    except ImportError:
        return {"libcachesim_lru_per_s": None,
                "libcachesim_note": "libcachesim is not installed (pip install 'swaplab[bench]')"}
    reader = lcs.TraceReader(og, lcs.TraceType.ORACLE_GENERAL_TRACE, lcs.ReaderInitParam(ignore_obj_size=True))
    size = max(distinct // 2, 1)
    t = time.perf_counter()
    miss_ratio, _ = lcs.LRU(cache_size=size).process_trace(reader)
    wall = time.perf_counter() - t
    n = os.path.getsize(og) // 24
    return {"libcachesim_lru_per_s": round(n / wall), "libcachesim_lru_size_pages": size,
            "libcachesim_lru_misses": round(miss_ratio * n), "libcachesim_version": getattr(lcs, "__version__", "?")}


# -- parser --------------------------------------------------------------------------------

def add_parser(sub: Any) -> None:
    t = sub.add_parser("trace", help="page traces: capture, stats, convert, miss-ratio curves")
    ts = t.add_subparsers(dest="trace_command", metavar="TRACE_COMMAND")
    t.set_defaults(func=lambda a: (t.print_help(sys.stderr), 2)[1])

    s = ts.add_parser("stats", help="records, distinct pages, R/W/X, footprint, reuse distances")
    s.add_argument("file", metavar="FILE")
    s.add_argument("--columns", metavar="SPEC", help="CSV columns, e.g. time=icount,page=vpn,op=op")
    s.add_argument("--json", action="store_true", help="print the figures as JSON")
    s.set_defaults(func=cmd_stats)

    c = ts.add_parser("convert", help="convert between swaplab, oracleGeneral and CSV (by OUT's name; .zst compresses)")
    c.add_argument("src", metavar="IN")
    c.add_argument("dst", metavar="OUT")
    c.add_argument("--columns", metavar="SPEC", help="CSV input columns")
    c.set_defaults(func=cmd_convert)

    m = ts.add_parser("mrc", help="exact LRU miss-ratio curve, SHARDS estimate and kernel points (PNG + JSON)")
    m.add_argument("file", metavar="FILE")
    m.add_argument("--out", required=True, metavar="PREFIX", help="writes PREFIX.json and PREFIX.png")
    m.add_argument("--rate", type=float, default=0.01, help="SHARDS sampling rate (default 0.01)")
    m.add_argument("--columns", metavar="SPEC")
    m.add_argument("--no-kernel", action="store_true", help="skip the simulated kernel points")
    m.set_defaults(func=cmd_mrc)

    from .trace_capture import add_capture_parser

    add_capture_parser(ts)

    b = sub.add_parser("bounds", help="major faults of OPT, oracle readahead, LRU, CLOCK and the kernel policies")
    b.add_argument("input", metavar="WORKLOAD_OR_TRACE", help="a workload (.toml) or a trace file")
    b.add_argument("--ram", required=True, metavar="SIZES", help="memory sizes, e.g. 64MiB,128MiB")
    b.add_argument("--json", metavar="OUT", help="write the table as JSON (atomically)")
    b.add_argument("--window", type=int, default=8, metavar="PAGES", help="oracle readahead window (default 8 = page-cluster 3)")
    b.add_argument("--columns", metavar="SPEC", help="CSV trace columns")
    b.add_argument("--no-kernel", action="store_true", help="only the trace-driven policies")
    b.set_defaults(func=cmd_bounds)
