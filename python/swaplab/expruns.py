"""``swaplab run EXPERIMENT.toml``: an experiment file run as a workload.

An experiment file (experiments/*.toml) names a workload and the overrides of its cells. Run
directly, it runs the baseline variant of every row — the table's reference runs — or, with
``--all-variants``, every cell; each is printed as ``swaplab run`` prints a workload. ``--set``
applies on top of every cell. ``--json OUT`` writes the result itself for a single cell, or
``{"kind": "experiment-runs", "experiment": NAME, "runs": [{"row", "variant", "result"}]}``.
Comparing the cells against the published numbers is ``swaplab reproduce``'s job.
"""

from __future__ import annotations

import os
import sys
from typing import Any, List

from . import experiments as ex
from . import tomlio


def is_experiment(doc: Any) -> bool:
    return isinstance(doc, dict) and isinstance(doc.get("experiment"), dict)


def workload_text(exp: Any) -> str:
    """The experiment's workload as the simulator should read it: its own file when it has one
    (so that an error names the file's real line), else the inline table written as TOML."""
    if os.path.isfile(exp.workload_source):
        with open(exp.workload_source, encoding="utf-8") as f:
            return f.read()
    return tomlio.dumps(exp.workload)


def run_experiment_file(args: Any, sets: List[str], user_error: Any) -> int:
    from .api import simulate_text
    from .io import write_json_atomic
    from .table import run_report

    try:
        exp = ex.load(args.file)
    except ex.ExperimentError as e:
        raise user_error(str(e)) from None
    if args.runs is not None and args.runs > 1:
        raise user_error(f"{args.file}: --runs: an experiment sets its own runs; use `swaplab reproduce {args.file}`")
    variants = [v.name for v in exp.variants] if args.all_variants else [exp.baseline]
    cells = [(r.name, v) for r in exp.rows for v in variants]
    if args.plot and len(cells) > 1:
        raise user_error(f"{args.file}: --plot draws one run and this experiment has {len(cells)} cells "
                         "(use `swaplab report` on the --json output of one cell)")
    text = workload_text(exp)
    runs = []
    for row, variant in cells:
        result = simulate_text(text, exp.workload_source, exp.overrides(row, variant) + list(sets))
        runs.append({"row": row, "variant": variant, "result": result})
        if not args.quiet:
            sys.stdout.write(f"== {exp.name}: row {row!r}, variant {variant!r}\n")
            sys.stdout.write(run_report(result.raw) + "\n")
    if args.json:
        if len(runs) == 1:
            runs[0]["result"].save(args.json)
        else:
            write_json_atomic(args.json, {"kind": "experiment-runs", "experiment": exp.name, "runs": [
                {"row": r["row"], "variant": r["variant"], "result": r["result"].raw} for r in runs]})
    if args.plot:
        from .plots import plot_run

        plot_run(runs[0]["result"], args.plot)
    return 0
