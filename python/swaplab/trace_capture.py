"""``swaplab trace capture [--out F] -- CMD ARGS``: record a real program's page accesses.

The program runs under QEMU user mode (``qemu-x86_64`` from Debian's ``qemu-user`` package)
with swaplab's TCG plugin (``plugin/pagetrace.c``), which this module compiles with the system C
compiler at first use into ``~/.cache/swaplab/`` (keyed by the source's hash, so an upgraded
swaplab rebuilds it). The plugin writes a raw stream; the core converts it to swaplab's format
(``.zst`` compresses). The per-thread filter (``--filter K``, ``--filter-code KX``, ``--epoch``)
drops touches of a thread's last K distinct pages; docs/trace-format.md gives its measured error.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Any, List

from .trace_cli import TraceCliError, _core_call

QEMU = "qemu-x86_64"
QEMU_PACKAGE = "qemu-user"
PLUGIN_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "plugin", "pagetrace.c")


def find_qemu() -> str:
    path = shutil.which(QEMU)
    if path is None:
        raise TraceCliError(f"trace capture needs {QEMU} (QEMU user mode with plugin support): "
                            f"install Debian's {QEMU_PACKAGE} package (apt-get install {QEMU_PACKAGE})")
    return path


def plugin_path() -> str:
    """The compiled plugin, built from PLUGIN_SOURCE with `cc` on first use."""
    with open(PLUGIN_SOURCE, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:16]
    cache = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "swaplab")
    so = os.path.join(cache, f"pagetrace-{digest}.so")
    if os.path.exists(so):
        return so
    cc = shutil.which(os.environ.get("CC", "cc"))
    if cc is None:
        raise TraceCliError("trace capture builds its QEMU plugin with a C compiler: install gcc (apt-get install gcc)")
    os.makedirs(cache, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=".so", dir=cache)
    os.close(fd)
    r = subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", tmp, PLUGIN_SOURCE], capture_output=True, text=True)
    if r.returncode != 0:
        os.unlink(tmp)
        raise TraceCliError(f"building the QEMU plugin failed: {' '.join(r.stderr.split())[:400]}")
    os.replace(tmp, so)
    return so


def capture(command: List[str], out: str, k: int = 16, kx: int = 64, epoch: int = 1_000_000) -> dict:
    """Run `command` under QEMU with the plugin; write the trace to `out`. Returns the
    conversion summary plus the program's exit status."""
    import json

    from . import _core

    if not command:
        raise TraceCliError("trace capture: give the program to run after --, e.g. swaplab trace capture -- ls /")
    qemu = find_qemu()
    so = plugin_path()
    if shutil.which(command[0]) is None and not os.path.exists(command[0]):
        raise TraceCliError(f"trace capture: {command[0]}: no such program")
    program = shutil.which(command[0]) or command[0]
    with tempfile.TemporaryDirectory() as d:
        raw = os.path.join(d, "raw")
        args = f"{so},out={raw},k={k},kx={kx},epoch={epoch}"
        proc = subprocess.run([qemu, "-plugin", args, program, *command[1:]])
        if not os.path.exists(raw):
            raise TraceCliError(f"trace capture: {QEMU} did not load the plugin (exit status {proc.returncode})")
        w = json.loads(_core_call(_core.trace_convert, raw, out, None, True, command))
    w["exit_status"] = proc.returncode
    return w


def cmd_capture(args: argparse.Namespace) -> int:
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    for name, v in (("--filter", args.filter), ("--filter-code", args.filter_code)):
        if not 0 <= v <= 256:
            raise TraceCliError(f"{name} {v}: expected 0..256 pages")
    if args.epoch < 1:
        raise TraceCliError(f"--epoch {args.epoch}: expected at least 1 instruction")
    w = capture(command, args.out, args.filter, args.filter_code, args.epoch)
    print(f"{args.out}: {w['accesses']:,} accesses, {w['bytes']:,} bytes; the program exited with status {w['exit_status']}",
          file=sys.stderr)
    return 0


def add_capture_parser(ts: Any) -> None:
    c = ts.add_parser("capture", help="record a program's page accesses under QEMU user mode")
    c.add_argument("--out", default="trace.swpt.zst", metavar="FILE", help="output (default trace.swpt.zst)")
    c.add_argument("--filter", type=int, default=16, metavar="K",
                   help="skip touches of a thread's last K distinct data pages (0: record all; default 16)")
    c.add_argument("--filter-code", type=int, default=64, metavar="KX", help="the same for code pages (default 64)")
    c.add_argument("--epoch", type=int, default=1_000_000, metavar="N", help="empty the filter every N instructions")
    c.add_argument("command", nargs=argparse.REMAINDER, metavar="-- CMD ARGS")
    c.set_defaults(func=cmd_capture)
