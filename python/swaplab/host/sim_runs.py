"""The simulator's side of a comparison: as many runs as the host's, one seed each.

A host run is one draw from the machine's run-to-run spread (device service times, the phase
of the kernel's periodic statistics flush against the workload, how late each of the runner's
``memory.stat`` reads lands), and ``compare`` takes the host's per-counter medians. The
simulator models those sources from the run's seed, so one simulated run is one draw too:
comparing a single draw with a median of several mixes two kinds of number, and a race that
the host wins in some runs and loses in others (6.x reclaim reading statistics one flush old,
reclaim/classic/flushed.rs) looked like a model error when the single simulated run fell on
the other side. So the simulator runs with seeds ``seed, seed + 1, ...`` (the first run is the
workload's own seed, so one run gives what ``swaplab run`` gives) and is summarised as the
host is: per-counter medians, the median elapsed time, each counter's min and max.
"""

import json
import statistics
from typing import Any, Dict, List

from .. import _core


def simulate_runs(text: str, source: str, overrides: List[str], runs: int) -> Dict[str, Any]:
    """``runs`` simulations of one workload (seeds from its own upward), summarised."""
    seed = int(json.loads(_core.resolve(text, source, overrides))["seed"])
    results = []
    for i in range(max(1, runs)):
        extra = [f"seed={seed + i}"] if i else []
        results.append(json.loads(_core.simulate(text, source, list(overrides) + extra)))
    return summarise(results, [seed + i for i in range(len(results))])


def _median(xs: List[float]) -> float:
    return statistics.median(xs)


def summarise(results: List[Dict[str, Any]], seeds: List[int]) -> Dict[str, Any]:
    """The median-elapsed run, with every vmstat counter (and the zswap pool's debugfs
    values) replaced by its median over the runs; ``sim_runs`` holds the seeds and each
    value's median, min and max."""
    el = [r["elapsed_ns"] for r in results]
    med = sorted(range(len(results)), key=lambda i: el[i])[(len(results) - 1) // 2]
    out = json.loads(json.dumps(results[med]))
    spread: Dict[str, Dict[str, float]] = {}

    def fold(target: Dict[str, Any], per_run: List[Dict[str, Any]], prefix: str) -> None:
        for k, v in target.items():
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                continue
            xs = [r.get(k, 0) for r in per_run]
            target[k] = int(round(_median(xs))) if isinstance(v, int) else _median(xs)
            spread[prefix + k] = {"median": _median(xs), "min": min(xs), "max": max(xs)}

    fold(out["vmstat"], [r["vmstat"] for r in results], "")
    out["elapsed_ns"] = int(_median(el))
    spread["elapsed_ns"] = {"median": _median(el), "min": min(el), "max": max(el)}
    out["summary"]["elapsed_s"] = out["elapsed_ns"] / 1e9
    vm = out["vmstat"]
    if "ra_hit_pct" in out["summary"]:
        out["summary"]["ra_hit_pct"] = round(100.0 * vm["swap_ra_hit"] / vm["swap_ra"], 2) if vm.get("swap_ra") else None
    store = out.get("store") or {}
    for part in ("debugfs", "debugfs_at_work_end"):
        if isinstance(store.get(part), dict):
            fold(store[part], [r["store"][part] for r in results], f"store.{part}.")
    out["sim_runs"] = {"runs": len(results), "seeds": seeds, "median_elapsed_seed": seeds[med], "spread": spread,
                       "aggregate": f"per-counter medians of {len(results)} simulated runs (seeds {seeds[0]}.."
                                    f"{seeds[-1]}); tasks and timeseries from the median-elapsed run"}
    return out
