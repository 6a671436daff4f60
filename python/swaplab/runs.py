"""Repeated runs with different seeds (``swaplab run FILE --runs N``, experiments' ``runs``).

Run ``i`` (0-based) uses seed ``seed + i``, where ``seed`` is the workload's own (default 1), so
the first run is the single run of the file. Figures are summarised as the 2008 postings do:
mean, standard deviation (population, n: the 2008 table's std of its ten runs is the population
figure, e.g. 74.18 for rc6+stream where the sample figure would be 78.20), minimum and maximum.
"""

from __future__ import annotations

import statistics
import re
from typing import Any, Callable, Dict, List, Optional, Sequence

from . import metrics

#: Figures reported for every multi-run: (label, metric name) — metric names as in metrics.py.
KEY_FIGURES = [
    ("elapsed_s", "elapsed_s"),
    ("allocstall", "vmstat.allocstall"),
    ("pgscan_direct", "vmstat.pgscan_direct"),
    ("pgsteal_direct", "vmstat.pgsteal_direct"),
    ("pgscan_kswapd", "vmstat.pgscan_kswapd"),
    ("pswpin", "vmstat.pswpin"),
    ("pswpout", "vmstat.pswpout"),
    ("oom_kill", "vmstat.oom_kill"),
    ("dr_stall_max_s", "dr_stall_max_s"),
    ("dr_pages_per_call_max", "dr_pages_per_call_max"),
]

AGGREGATES = ("mean", "std", "min", "max")
_AGG = re.compile(r"^(.*):(mean|std|min|max)$")


def split_aggregate(name: str) -> "tuple[str, str]":
    """``"elapsed_s:std"`` -> ``("elapsed_s", "std")``; no suffix means the mean."""
    m = _AGG.match(name)
    return (m.group(1), m.group(2)) if m else (name, "mean")


def aggregate(values: Sequence[Optional[float]]) -> Dict[str, Optional[float]]:
    """mean, std (population: divided by n), min, max of the values that exist."""
    xs = [float(v) for v in values if v is not None and v == v]
    if not xs:
        return {k: None for k in AGGREGATES}
    # Exact (rational) arithmetic: identical runs have exactly their value as the mean and a
    # standard deviation of exactly 0, not a rounding residue that a ratio would magnify.
    return {"mean": statistics.mean(xs), "std": statistics.pstdev(xs), "min": min(xs), "max": max(xs)}


def seeds(base: int, runs: int) -> List[int]:
    return [base + i for i in range(runs)]


def base_seed(doc: Dict[str, Any]) -> int:
    s = doc.get("seed", 1)
    return int(s) if isinstance(s, int) and not isinstance(s, bool) else 1


def extract(raw: Dict[str, Any], name: str, tasks: metrics.TaskFilter = None) -> Optional[float]:
    """A metric of one run: the metrics.py names plus the direct-reclaim extremes."""
    if name in ("dr_stall_max_s", "dr_pages_per_call_max"):
        ts = metrics.select_tasks(raw, tasks)
        vals = []
        for t in ts:
            dr = t.get("direct_reclaim") or {}
            if name == "dr_stall_max_s":
                vals.append((dr.get("stall_ns_pct") or {}).get("max", 0) / 1e9)
            else:
                vals.append((dr.get("pages_per_call_pct") or {}).get("max", 0))
        return float(max(vals)) if vals else None
    return metrics.extract(raw, name, tasks)


def summarise(raws: Sequence[Dict[str, Any]], tasks: metrics.TaskFilter = None) -> Dict[str, Any]:
    """{figure: {mean, std, min, max, values}} over the runs."""
    out: Dict[str, Any] = {}
    for label, name in KEY_FIGURES:
        values = [extract(r, name, tasks) for r in raws]
        agg = aggregate(values)
        agg["values"] = values
        out[label] = agg
    return out


def run_many(text: str, source: str, overrides: List[str], runs: int, base: int,
             simulate: Callable[[str, str, List[str]], Any],
             on_run: Optional[Callable[[int, int], None]] = None) -> List[Any]:
    """Run ``runs`` simulations with seeds base, base + 1, ...; ``simulate(text, source,
    overrides)`` returns one result. The seed override comes last, so it wins."""
    results = []
    for i, s in enumerate(seeds(base, runs)):
        results.append(simulate(text, source, list(overrides) + [f"seed={s}"]))
        if on_run is not None:
            on_run(i + 1, runs)
    return results


def _fmt(x: Optional[float]) -> str:
    if x is None:
        return "-"
    if abs(x) >= 1000 or x == int(x):
        return f"{x:,.0f}"
    return f"{x:.3f}" if abs(x) < 100 else f"{x:.1f}"


def format_summary(summary: Dict[str, Any], runs: int, seed_list: Sequence[int]) -> str:
    lines = [f"{runs} runs, seeds {seed_list[0]}..{seed_list[-1]}", ""]
    head = ("figure", "mean", "std", "min", "max")
    rows = [head] + [(k, *(_fmt(v[a]) for a in AGGREGATES)) for k, v in summary.items()]
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(head))]
    for j, r in enumerate(rows):
        lines.append("  " + "  ".join(str(c).ljust(widths[i]) if i == 0 else str(c).rjust(widths[i]) for i, c in enumerate(r)))
        if j == 0:
            lines.append("  " + "  ".join("-" * w for w in widths))
    return "\n".join(lines) + "\n"
