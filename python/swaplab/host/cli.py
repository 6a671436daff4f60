"""Command-line entry points of the host runner, registered into the ``swaplab`` CLI by
``add_host_commands(subparsers)``:

* ``swaplab host run FILE [--set K=V ...] [--runs N] [--json OUT] [--allow-foreign-swap] [--retries N]``
* ``swaplab host cleanup`` — undo what a killed host run left behind (from its journal)
* ``swaplab compare FILE [--set ...] [--runs N] [--json OUT]`` — simulator vs host
* ``swaplab calibrate [--device PATH] [--name NAME] [--out FILE]``

Every command returns an exit status: 0 ok, 2 refused (precondition) or bad input, 3 OOM,
1 other failure; 130 on Ctrl-C / SIGTERM (after the machine was restored).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Dict

from .errors import HostError, PreconditionError


def _opts(args) -> "HostOptions":  # noqa: F821
    """Options of a host command, checked before anything runs (PreconditionError: exit 2)."""
    from .runner import HostOptions

    if args.runs < 1:
        raise PreconditionError(f"--runs {args.runs}: expected at least 1")
    if args.retries < 0:
        raise PreconditionError(f"--retries {args.retries}: expected 0 or more")
    if not args.workdir or not args.workdir.strip():
        raise PreconditionError("--workdir: an empty path: name a directory on a disk file system")
    if getattr(args, "json", None) is not None:
        _check_json(args.json)
    return HostOptions(runs=args.runs, retries=args.retries,
                       allow_foreign_swap=getattr(args, "allow_foreign_swap", False),
                       swap_backend=args.swap_backend, workdir=args.workdir, zswap=args.zswap,
                       log=None if getattr(args, "quiet", False) else (lambda m: print(f"swaplab host: {m}", file=sys.stderr)))


def _common(p: argparse.ArgumentParser, runs_default: int) -> None:
    p.add_argument("file", metavar="FILE", help="workload (TOML)" + (" or experiment file" if p.prog.endswith("compare") else ""))
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a setting (repeatable)")
    p.add_argument("--runs", type=int, default=runs_default, metavar="N", help=f"host runs (medians; default {runs_default})")
    p.add_argument("--json", metavar="OUT", help="write the result as JSON to OUT (atomically)")
    p.add_argument("--allow-foreign-swap", action="store_true",
                   help="run even though another swap device is active (its traffic pollutes the counters)")
    p.add_argument("--retries", type=int, default=2, metavar="N", help="retries of an OOM-killed run (default 2)")
    p.add_argument("--swap-backend", choices=("auto", "file", "loop", "zram"), default="auto",
                   help="host swap device: auto (zram for zram, else a swap file on disk), file, loop "
                        "(non-rotational loop device over a disk file) or zram")
    p.add_argument("--workdir", default="/var/tmp/swaplab", metavar="DIR",
                   help="disk directory for swap files and file-backed mappings (never tmpfs)")
    p.add_argument("--zswap", action="store_true", help="enable zswap for the run (default: off)")
    p.add_argument("--quiet", "-q", action="store_true")


def _check_json(path: str) -> None:
    """Refuse an output path before the run (see io.check_output); say when its directory was
    created."""
    from ..io import check_output

    note = check_output(path, "--json")
    if note:
        print(f"swaplab: {note}", file=sys.stderr)


def _write_json(path: str, obj: Any) -> None:
    from ..io import write_json_atomic

    write_json_atomic(path, obj)


def _fail(e: BaseException) -> int:
    kind = "refused" if isinstance(e, PreconditionError) else "failed"
    print(f"swaplab host: {kind}: {e}", file=sys.stderr)
    return 2 if isinstance(e, PreconditionError) else 1


def cmd_host_run(args) -> int:
    from ..table import run_report
    from .runner import run_host

    try:
        opts = _opts(args)
        r = run_host(args.file, args.set, opts)
    except HostError as e:
        return _fail(e)
    if args.json:
        _write_json(args.json, r)
    if not args.quiet:
        h = r["host"]
        if h.get("oom"):
            print(f"OOM: every attempt was killed by the OOM killer ({len(h['oom_attempts'])} attempts); no measurement")
        else:
            print(run_report(r))
            print(f"host: {h['kernel']}; {h['swap_device']}; readahead in effect: {h['readahead_in_effect']}; "
                  f"cgroup v{h['cgroup']['version']} limit {h['cgroup']['limit_bytes'] >> 20} MiB; {h['runs']} run(s)")
            if h["runs"] > 1:
                el = h["spread"]["elapsed_ns"]
                print(f"elapsed: median {el['median'] / 1e9:.3f} s (min {el['min'] / 1e9:.3f}, max {el['max'] / 1e9:.3f})")
            for n in h.get("notes", []):
                print(f"note: {n}")
    return 3 if r["host"].get("oom") else 0


def cmd_host_cleanup(args) -> int:
    from .journal import JOURNAL_DIR, cleanup, leftover_files, remove_leftover
    from .lock import HostLock

    try:
        with HostLock(JOURNAL_DIR):
            log = cleanup()
            if not any(x.startswith("FAILED") for x in log):
                # files no journal names (a power cut empties /run, not the disk)
                for path in leftover_files(args.workdir):
                    try:
                        remove_leftover(path)
                        log.append(f"removed leftover {path}")
                    except OSError as e:
                        log.append(f"FAILED: leftover {path}: {e}")
    except HostError as e:
        return _fail(e)
    for line in log:
        print(line)
    if not log:
        print("nothing to clean up")
    return 1 if any(x.startswith("FAILED") for x in log) else 0


def cmd_compare(args) -> int:
    from . import compare as c

    try:
        opts = _opts(args)
        if c.is_experiment(args.file):
            rep: Dict[str, Any] = c.compare_experiment(args.file, args.set, opts,
                                                       log=None if args.quiet else (lambda m: print(m, file=sys.stderr)))
            text = c.render_experiment(rep)
        else:
            rep = c.compare_file(args.file, args.set, opts)
            text = c.render(rep["comparison"], args.file) if rep.get("comparison") else f"{args.file}: {rep.get('error')}"
    except HostError as e:
        return _fail(e)
    if args.json:
        _write_json(args.json, rep)
    print(text)
    return 0


def cmd_calibrate(args) -> int:
    from .calibrate import calibrate

    try:
        if args.out is not None:
            _check_json(args.out)
        path, preset = calibrate(directory=args.device, name=args.name, out=args.out, quick=args.quick,
                                 log=lambda m: print(f"swaplab calibrate: {m}", file=sys.stderr))
    except (HostError, OSError) as e:
        return _fail(e)
    d, c = preset["device"], preset["costs"]
    print(f"wrote {path}")
    def dist(table: str) -> str:
        t = d[table]
        at = dict(zip(t["p"], t["ns"]))
        return f"{at[0.5] / 1000:.1f} us median, {at[0.99] / 1000:.1f} us p99"

    print(f"  device access: random read {dist('read_access')}, sequential read {dist('read_access_sequential')}, "
          f"read beside writes {dist('read_access_writing')}, write {dist('write_access')}")
    print(f"  device: {d['read_bandwidth'] / 1e6:.0f} / {d['write_bandwidth'] / 1e6:.0f} MB/s read / write, "
          f"parallelism {d['parallelism']}, rotational {d['rotational']}")
    print(f"  costs: resident touch {c['resident_touch_ns']} ns, minor fault {c['minor_fault_ns']} ns, "
          f"cache-hit fault {c['cache_hit_fault_ns']} ns, major fault CPU {c['major_fault_cpu_ns']} ns")
    z = preset.get("compressor")
    if z:
        print(f"  compressor {z['compressor']}: {z['compress_ns']} ns a full compression pass, {z['decompress_ns']} ns "
              f"decompression, less below {z['full_cost_bytes']} compressed bytes (for [zswap]/[zram] using {z['compressor']})")
    r = preset["measured"].get("reclaim")
    if r:
        print(f"  reclaim: {r['host_reclaim_ns_per_page']:.0f} ns per page reclaimed (simulator's defaults "
              f"{r['sim_default_reclaim_ns_per_page']:.0f} ns): reclaim costs x{r['factor']:.2f}")
    s = preset["measured"].get("swapin")
    if s:
        print(f"  swap-in: {s['host_pc0_cpu_ns_per_fault']:.0f} ns of read-pass CPU per synchronous swap-in on the host (the pass's reclaim included); fault "
              f"{c['swapin_fault_cpu_ns']} ns + {c['swapin_page_cpu_ns']} ns per page read + submission "
              f"{c['read_submit_cpu_ns']} ns")
    print(f"  use it with: --set swap.0.device=\"calibrated:{args.name}\"")
    return 0


def add_host_commands(subparsers) -> None:
    """Register ``host run``, ``host cleanup``, ``compare`` and ``calibrate``."""
    h = subparsers.add_parser("host", help="run a workload on this machine's real kernel (root)")
    hs = h.add_subparsers(dest="host_command", metavar="HOST_COMMAND")
    r = hs.add_parser("run", help="run a workload in a memory cgroup with its swap device and knobs")
    _common(r, runs_default=1)
    r.set_defaults(func=cmd_host_run)
    cl = hs.add_parser("cleanup", help="undo what a killed host run left behind (swap, cgroup, knobs, files)")
    cl.add_argument("--workdir", default="/var/tmp/swaplab", metavar="DIR",
                    help="also remove swap files and run directories a run left here with no journal (after a power cut)")
    cl.set_defaults(func=cmd_host_cleanup)
    h.set_defaults(func=lambda a: (h.print_help(sys.stderr), 2)[1])

    c = subparsers.add_parser("compare", help="simulator vs this machine's kernel on the same file")
    _common(c, runs_default=3)
    c.set_defaults(func=cmd_compare)

    k = subparsers.add_parser("calibrate", help="measure this machine and write a calibrated device preset")
    k.add_argument("--device", metavar="PATH", help="a directory on the swap device's file system (default /var/tmp/swaplab)")
    k.add_argument("--name", default="host", help="preset name (default: host)")
    k.add_argument("--out", metavar="FILE", help="write here instead of ~/.config/swaplab/devices/NAME.toml")
    k.add_argument("--quick", action="store_true", help="a shorter measurement")
    k.set_defaults(func=cmd_calibrate)
