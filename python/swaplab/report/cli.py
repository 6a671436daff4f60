"""``swaplab report RESULT [-o OUT.html] [--png DIR]`` (registered into the ``swaplab``
command by cli._add_plugin_commands)."""

from __future__ import annotations

import argparse
import os
from typing import Any


def cmd_report(args: argparse.Namespace) -> int:
    from .. import __version__
    from ..cli import UserError, _check_output
    from . import html, png
    from .sources import ReportError, build

    out = args.output or _default_output(args.result)
    _check_output(out, "-o")
    try:
        report = build(args.result, sweep=args.sweep, metrics=args.metric)
    except ReportError as e:
        raise UserError(str(e)) from None
    html.write(report, out, __version__)
    if not args.quiet:
        print(f"report: {out} ({len(report.figures())} plots)")
    if args.png:
        try:
            paths = png.write_all(report, args.png)
        except OSError as e:
            raise UserError(f"--png {args.png}: {e.strerror or e}") from None
        if not args.quiet:
            print(f"png: {len(paths)} files in {args.png}")
    return 0


def _default_output(result: str) -> str:
    base = result.rstrip(os.sep)
    if os.path.isdir(base):
        return os.path.join(base, "report.html")
    return os.path.splitext(base)[0] + ".html"


def add_parser(sub: Any) -> None:
    r = sub.add_parser("report", help="one self-contained HTML page of plots from a run, sweep, reproduce or compare result",
                       description="Draw a result as one HTML page that needs no network to view: memory, LRU "
                                   "lists, swap and readahead over time and latency CDFs (a run); heatmaps and "
                                   "per-axis plots (a sweep: a store directory or its manifest); published vs "
                                   "simulated bars (reproduce); simulator-vs-host errors per counter (compare).")
    r.add_argument("result", metavar="RESULT", help="a result JSON or a results store directory")
    r.add_argument("-o", "--output", metavar="OUT.html", help="where to write the page (default: beside RESULT)")
    r.add_argument("--png", metavar="DIR", help="also write every plot as a PNG into DIR")
    r.add_argument("--sweep", metavar="NAME", help="which sweep of a store (default: the latest)")
    r.add_argument("--metric", action="append", metavar="NAME",
                   help="sweep metrics to plot, table columns such as elapsed_s, pswpin (repeatable)")
    r.add_argument("--quiet", "-q", action="store_true")
    r.set_defaults(func=cmd_report)



