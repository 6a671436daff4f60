"""``swaplab reproduce``: run every cell of published tables and compare the shapes.

Each (row, variant) cell of an experiment is one simulation (cells with identical overrides
share one). The simulations of all requested experiments run together in a process pool; the
published and simulated figures are compared as ratios to the baseline variant of the same row
(see ``experiments.RULE``).
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import _core, metrics, tomlio
from .experiments import RULE, Experiment, verdict
from .scale import scale_overrides, scale_workload
from .workers import imap_unordered


class CellError(ValueError):
    """A cell's configuration was rejected by the simulator (a mistake in the experiment)."""


@dataclass
class Job:
    index: int
    experiment: str
    cells: List[Tuple[str, str]]   # (row, variant) pairs this simulation serves
    text: str
    source: str
    overrides: List[str]
    weight: float = 0.0            # rough cost estimate: bigger machines first
    seed: Optional[int] = None     # the run's seed when the experiment has runs > 1


def _weight(doc: Dict[str, Any]) -> float:
    """A rough cost of a workload (memory touched), to start the longest simulations first so
    that the pool does not end waiting on one big job."""
    from .units import parse_size

    total = 0.0
    try:
        for t in doc.get("task", []):
            pages = sum(parse_size(m.get("size", 0)) for m in t.get("mapping", [])) / 4096
            total += pages * int(t.get("instances", 1)) * (10.0 if t.get("repeat") else 1.0)
    except (ValueError, TypeError, AttributeError):
        return 0.0
    return total


MIN_FREE_FOR_SCALE = 16 << 20  # what a scaled machine must keep beyond the kernel's reserve


def check_scale(exp: Experiment, scale: float) -> None:
    """``--scale`` keeps the kernel's reserve: refuse a factor that leaves no memory to run in,
    and say which factor would do."""
    from .units import parse_size

    machine = exp.workload.get("machine") or {}
    try:
        ram = parse_size(machine.get("ram", 0))
        reserve = parse_size(machine.get("kernel_reserved", "48MiB"))
    except ValueError:
        return  # the core reports the malformed value
    if scale > 1 and ram / scale < reserve + MIN_FREE_FOR_SCALE:
        largest = ram / (reserve + MIN_FREE_FOR_SCALE)
        raise CellError(
            f"experiment {exp.name}: --scale {scale:g} leaves {ram / scale / 2**20:.0f} MiB of RAM, too little beside "
            f"the kernel's reserve of {reserve / 2**20:.0f} MiB (which is not scaled); use --scale {int(largest)} or less")


def plan(exps: Sequence[Experiment], scale: float = 1.0) -> List[Job]:
    """One job per distinct (experiment, overrides) simulation."""
    jobs: List[Job] = []
    for exp in exps:
        check_scale(exp, scale)
        doc = scale_workload(exp.workload, scale)
        text = tomlio.dumps(doc)
        source = exp.workload_source + (f" (scaled 1/{scale:g})" if scale != 1 else "")
        seen: Dict[Tuple[str, ...], Job] = {}
        from .runs import base_seed, seeds

        run_seeds: List[Optional[int]] = [None] if exp.runs == 1 else list(seeds(base_seed(doc), exp.runs))
        for row in exp.rows:
            for var in exp.variants:
                cell_ovs = scale_overrides(exp.overrides(row.name, var.name), scale)
                for s in run_seeds:
                    # runs > 1: one simulation per seed; the seed override comes last and wins.
                    ovs = cell_ovs + ([f"seed={s}"] if s is not None else [])
                    key = tuple(ovs)
                    if key in seen:
                        seen[key].cells.append((row.name, var.name))
                        continue
                    job = Job(len(jobs), exp.name, [(row.name, var.name)], text, source, ovs, _weight(doc), s)
                    seen[key] = job
                    jobs.append(job)
    return jobs


def _compact(out: str) -> Dict[str, Any]:
    raw = json.loads(out)
    raw.pop("timeseries", None)
    return raw


def _worker_init() -> None:
    """A pool worker (which leaves Ctrl-C to the parent: ``workers``) dies with the parent:
    a worker outliving a killed parent would only print BrokenPipe tracebacks."""
    if sys.platform.startswith("linux"):
        _core.host_die_with_parent()


def _run_in_worker(job: Job) -> Tuple[int, Optional[Dict[str, Any]], Optional[str], float]:
    t0 = time.perf_counter()
    try:
        out = _core.simulate(job.text, job.source, job.overrides, None)
    except _core.ConfigError as e:
        return job.index, None, str(e), time.perf_counter() - t0
    return job.index, _compact(out), None, time.perf_counter() - t0


def _run_here(job: Job) -> Tuple[int, Optional[Dict[str, Any]], Optional[str], float]:
    from .api import simulate_text

    t0 = time.perf_counter()
    try:
        res = simulate_text(job.text, job.source, job.overrides)
    except _core.ConfigError as e:
        return job.index, None, str(e), time.perf_counter() - t0
    res.raw.pop("timeseries", None)
    return job.index, res.raw, None, time.perf_counter() - t0


class Progress:
    """One progress line on stderr: rewritten in place on a terminal, one line per finished
    simulation otherwise (CI logs)."""

    def __init__(self, total: int, enabled: bool = True, stream: Any = None):
        self.total, self.done, self.enabled = total, 0, enabled
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.t0 = time.monotonic()

    def update(self, job: Job, wall: float) -> None:
        self.done += 1
        if not self.enabled:
            return
        el = time.monotonic() - self.t0
        cells = ", ".join(f"{r}/{v}" for r, v in job.cells[:2]) + (" ..." if len(job.cells) > 2 else "")
        msg = (f"reproduce [{self.done}/{self.total}] {int(el) // 60}:{int(el) % 60:02d}  "
               f"{job.experiment}: {cells} ({wall:.1f} s)")
        if self.tty:
            width = 100
            self.stream.write("\r" + msg[:width].ljust(width))
            if self.done == self.total:
                self.stream.write("\n")
        else:
            self.stream.write(msg + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled and self.tty and 0 < self.done < self.total:
            self.stream.write("\n")
            self.stream.flush()


def run_jobs(jobs: List[Job], n_jobs: int, progress: Progress) -> Dict[int, Tuple[Dict[str, Any], float]]:
    """Run the simulations; {job index: (result without timeseries, wall seconds)}.
    Raises CellError for a rejected configuration; KeyboardInterrupt stops everything."""
    results: Dict[int, Tuple[Dict[str, Any], float]] = {}
    by_index = {j.index: j for j in jobs}

    def take(item: Tuple[int, Optional[Dict[str, Any]], Optional[str], float]) -> None:
        idx, raw, err, wall = item
        job = by_index[idx]
        if err is not None:
            r, v = job.cells[0]
            raise CellError(f"experiment {job.experiment}, row {r!r}, variant {v!r}: {err}")
        assert raw is not None
        results[idx] = (raw, wall)
        progress.update(job, wall)

    n_jobs = max(1, min(n_jobs, len(jobs)))
    jobs = sorted(jobs, key=lambda j: -j.weight)  # longest first (stable otherwise)
    if n_jobs == 1:
        for job in jobs:
            take(_run_here(job))
        return results
    stream = imap_unordered(_run_in_worker, jobs, n_jobs, initializer=_worker_init)
    try:
        for item in stream:
            take(item)
    finally:
        stream.close()  # a rejected cell or Ctrl-C: terminates the pool
    return results


def _ratio(x: Optional[float], base: Optional[float]) -> Optional[float]:
    if x is None or base is None or base == 0:
        return None
    return x / base


def _clean(x: Optional[float]) -> Optional[float]:
    if x is None or x != x or x in (float("inf"), float("-inf")):
        return None
    return x


def compare(exp: Experiment, jobs: List[Job], results: Dict[int, Tuple[Dict[str, Any], float]],
            scale: float) -> Dict[str, Any]:
    """The experiment's report (the object ``--json`` writes)."""
    from .runs import aggregate, extract as run_extract, split_aggregate

    raw_of: Dict[Tuple[str, str], List[Dict[str, Any]]] = {}
    sims = []
    for job in jobs:
        if job.experiment != exp.name:
            continue
        raw, wall = results[job.index]
        for cell in job.cells:
            raw_of.setdefault(cell, []).append(raw)
        sims.append({
            "seed": job.seed,
            "cells": [{"row": r, "variant": v} for r, v in job.cells],
            "overrides": job.overrides,
            "wall_s": round(wall, 3),
            "interrupted": raw.get("interrupted", False),
            "elapsed_s": raw.get("summary", {}).get("elapsed_s"),
            "iowait_pct": raw.get("summary", {}).get("iowait_pct"),
            "vmstat": raw.get("vmstat", {}),
            "config": raw.get("config"),
        })
    def figure(cell: Tuple[str, str], metric: str, tasks: Any) -> Dict[str, Optional[float]]:
        # One run: the metric itself; several: its mean (or the aggregate the name asks for).
        name, agg = split_aggregate(metric)
        values = [run_extract(raw, name, tasks) for raw in raw_of[cell]]
        out = aggregate(values)
        out["value"] = out[agg]
        return out

    rows = []
    for mr in exp.metric_rows:
        base_pub = mr.published.get(exp.baseline)
        base_sim = _clean(figure((mr.row, exp.baseline), mr.metric, mr.tasks)["value"])
        for var in exp.variants:
            pub = mr.published.get(var.name)
            fig = figure((mr.row, var.name), mr.metric, mr.tasks)
            sim = _clean(fig["value"])
            pr, sr = _clean(_ratio(pub, base_pub)), _clean(_ratio(sim, base_sim))
            row = {
                "variant": var.name, "row": mr.label, "metric": mr.metric, "unit": mr.unit,
                "published": pub, "simulated": sim, "published_ratio": pr, "simulated_ratio": sr,
                "verdict": verdict(pr, sr), "baseline": var.name == exp.baseline,
            }
            if exp.runs > 1:
                row.update({"runs": exp.runs, "simulated_std": _clean(fig["std"]),
                            "simulated_min": _clean(fig["min"]), "simulated_max": _clean(fig["max"])})
            rows.append(row)
    judged = [r for r in rows if r["verdict"] != "n/a" and not r["baseline"]]
    return {
        "experiment": exp.name,
        "title": exp.title,
        "source": exp.source,
        "baseline": exp.baseline,
        "runs": exp.runs,
        "scale": scale,
        "rule": RULE,
        "swaplab_version": _core.version(),
        "rows": rows,
        "cells": len(judged),
        "cells_agree": sum(r["verdict"] == "agrees" for r in judged),
        "agrees": all(r["verdict"] == "agrees" for r in judged),
        "simulations": sims,
    }


def reproduce(exps: Sequence[Experiment], scale: float = 1.0, n_jobs: Optional[int] = None,
              show_progress: bool = True) -> List[Dict[str, Any]]:
    """Run and compare; one report per experiment."""
    jobs = plan(exps, scale)  # raises CellError before anything runs
    progress = Progress(len(jobs), show_progress)
    try:
        results = run_jobs(jobs, n_jobs or os.cpu_count() or 1, progress)
    finally:
        progress.close()
    return [compare(e, jobs, results, scale) for e in exps]


# -- printing ------------------------------------------------------------------------------

def _fmt(x: Optional[float]) -> str:
    if x is None:
        return "-"
    ax = abs(x)
    if ax >= 1000:
        return f"{x:,.0f}"
    if ax >= 100:
        return f"{x:.0f}" if x == int(x) else f"{x:.1f}"
    if ax >= 1:
        return f"{x:.2f}"
    return f"{x:.3g}"


def _fmt_ratio(x: Optional[float]) -> str:
    return "-" if x is None else f"{x:.3f}"


def format_report(rep: Dict[str, Any]) -> str:
    lines = [f"== {rep['experiment']}: {rep['title']}"]
    if rep["source"]:
        lines.append(f"   source: {rep['source']}")
    scale = "published size" if rep["scale"] == 1 else f"sizes and durations / {rep['scale']:g}"
    runs = rep.get("runs", 1)
    lines.append(f"   baseline: {rep['baseline']}   scale: {scale}"
                 + (f"   runs: {runs} (seeds differ; simulated = mean, std/min/max beside it)" if runs > 1 else ""))
    head = ("row", "variant", "published", "simulated", "pub ratio", "sim ratio", "verdict")
    table = [head]
    prev = None
    for r in rep["rows"]:
        label = r["row"] if r["row"] != prev else ""
        prev = r["row"]
        unit = f" {r['unit']}" if r["unit"] else ""
        pub = _fmt(r["published"]) + (unit if r["published"] is not None else "")
        sim = _fmt(r["simulated"]) + (unit if r["simulated"] is not None else "")
        table.append((label, r["variant"], pub, sim,
                      _fmt_ratio(r["published_ratio"]), _fmt_ratio(r["simulated_ratio"]),
                      "(baseline)" if r["baseline"] else r["verdict"]))
    widths = [max(len(str(row[i])) for row in table) for i in range(len(head))]
    for k, row in enumerate(table):
        cells = [str(c).ljust(widths[i]) if i in (0, 1, 6) else str(c).rjust(widths[i]) for i, c in enumerate(row)]
        lines.append("   " + "  ".join(cells).rstrip())
        if k == 0:
            lines.append("   " + "  ".join("-" * w for w in widths))
    lines.append(f"   {rep['cells_agree']}/{rep['cells']} cells agree"
                 + ("" if rep["agrees"] else " -- the shape differs where marked"))
    return "\n".join(lines)


def format_all(reps: List[Dict[str, Any]]) -> str:
    out = [f"Verdict rule: {RULE}", ""]
    for rep in reps:
        out += [format_report(rep), ""]
    total = sum(r["cells"] for r in reps)
    agree = sum(r["cells_agree"] for r in reps)
    if len(reps) > 1:
        out.append(f"All experiments: {agree}/{total} cells agree "
                   f"({sum(r['agrees'] for r in reps)}/{len(reps)} experiments agree in every cell)")
    return "\n".join(out).rstrip() + "\n"


def report_document(reps: List[Dict[str, Any]], all_mode: bool) -> Dict[str, Any]:
    """What ``--json`` writes: one experiment's report, or with ``--all`` an object with the
    list of reports under ``"experiments"`` and the overall ``"agrees"``."""
    if not all_mode and len(reps) == 1:
        return reps[0]
    return {
        "swaplab_version": _core.version(),
        "scale": reps[0]["scale"] if reps else 1.0,
        "rule": RULE,
        "experiments": reps,
        "agrees": all(r["agrees"] for r in reps),
    }


