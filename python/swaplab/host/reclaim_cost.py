"""``swaplab calibrate``'s reclaim phase: what this kernel spends per anonymous page it
reclaims, and the simulator's reclaim costs scaled to it.

Why. The simulator charges reclaim per step (``scan_page_ns``, ``rmap_walk_ns``,
``unmap_ns``, ``free_page_ns``, ``swap_alloc_ns``; the hold under ``lru_lock``,
``lru_lock_folio_ns``), with defaults that are estimates for a bare-metal core. On a virtual
machine every one of those steps can cost several times that (measured 2026-11-27 on this
project's VM with ``perf``: 4.4 us per page reclaimed against the defaults' 1.4 us, spread over
``folio_referenced``, ``try_to_unmap``, ``swap_writeout`` and ``__remove_mapping`` alike,
docs/evidence/host-swapin.md), and a swap-in workload that reclaims a page per page it reads
is then short by that much CPU.

How. One task writes 256 MiB of anonymous memory once, in order, inside a 64 MiB memory cgroup
with a swap file beside the device's directory (the host runner's own setup, cleanup and
journal): every page past the limit makes the memory cgroup reclaim one page, which is dirty
and is written to swap. The worker's thread CPU (``cpu_ns``: the program, its faults and the
reclaim done in its context) less what the faults and touches cost (``minor_fault_ns`` and
``resident_touch_ns``, measured just before by this calibration) is the host's reclaim CPU;
per page, over the ``pgsteal_anon`` the run counted. Three runs: the task of the run with the
median elapsed time, the counters' medians (the host runner's aggregate).

The simulator runs the same workload with the costs measured so far and reports its reclaim
CPU by category (stats/cpu.rs). The categories the reclaim parameters charge (and the wait for
``lru_lock``, whose holds they make) are scaled by one factor so that the simulated CPU per page
reclaimed equals the host's; the block layer's stages (the device's figures) stay as they are. So the split between the
steps is the defaults' and only the machine's speed at reclaim is measured: a measurement of
the split would need a kernel profile (``perf``), which calibrate does not run.

Without root, a memory cgroup or swap, the phase is skipped and the preset keeps the defaults.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, List, Optional

#: The simulator's reclaim parameters the factor scales (config/schema.rs `Costs`).
SCALED = ("scan_page_ns", "rmap_walk_ns", "unmap_ns", "free_page_ns", "swap_alloc_ns", "lru_lock_folio_ns")
#: Reclaim CPU categories (stats/cpu.rs) the scaled parameters charge; `lru_lock` is the wait
#: behind other holds of the lock, whose length is `lru_lock_folio_ns`.
SCALED_CATEGORIES = ("rmap_walk", "lru_ops", "lru_lock", "unmap_tlb_flush", "free_page", "swap_alloc")
#: The factor's bounds: outside them the measurement is taken as broken and not used.
FACTOR_RANGE = (0.2, 50.0)

WORKLOAD = """
name = "calibrate-reclaim"
seed = 1
[machine]
cpus = {cpus}
ram = "{ram}"
memcg_limit = "64MiB"
[kernel]
page_cluster = 0
[[swap]]
device = "{device}"
size = "512MiB"
[[task]]
name = "reclaim"
[[task.mapping]]
name = "mem"
kind = "anon"
size = "256MiB"
[[task.phase]]
mapping = "mem"
pattern = "sequential"
write_ratio = 1.0
"""


def workload(cpus: int, ram_bytes: int, device: str = "sata-ssd") -> str:
    return WORKLOAD.format(cpus=cpus, ram=f"{max(ram_bytes >> 20, 512)}MiB", device=device)


def host_reclaim_ns_per_page(result: Dict[str, Any], costs: Dict[str, int]) -> float:
    """The host's reclaim CPU per page reclaimed in a run of WORKLOAD: the worker's thread CPU
    less its touches' and first-write faults' measured costs, over pgsteal_anon."""
    t = result["tasks"][0]
    stolen = result["vmstat"].get("pgsteal_anon", 0)
    if stolen <= 0:
        raise ValueError("the calibration run reclaimed nothing (pgsteal_anon 0): is the memory cgroup limit applied?")
    fault_cpu = t["touches"] * costs["resident_touch_ns"] + t["minor_faults"] * costs["minor_fault_ns"]
    return (t["cpu_ns"] - fault_cpu) / stolen


def sim_reclaim_split(result: Dict[str, Any]) -> Dict[str, float]:
    """The simulator's direct-reclaim CPU per page reclaimed: the part the scaled parameters
    charge, and the rest (block layer, lock contention, shootdowns)."""
    stolen = result["vmstat"].get("pgsteal_anon", 0)
    if stolen <= 0:
        raise ValueError("the simulated calibration run reclaimed nothing")
    cats = result["direct_reclaim_cpu_by_category"]
    scaled = sum(cats.get(c, 0) for c in SCALED_CATEGORIES)
    return {"scaled": scaled / stolen, "fixed": (sum(cats.values()) - scaled) / stolen}


def fit(host_ns: float, sim: Dict[str, float], defaults: Dict[str, int]) -> Dict[str, Any]:
    """The factor that makes the simulated reclaim CPU per page the host's, and the scaled
    parameters. Raises ValueError when the factor is outside FACTOR_RANGE."""
    if sim["scaled"] <= 0:
        raise ValueError("the simulator charged no scalable reclaim CPU")
    factor = (host_ns - sim["fixed"]) / sim["scaled"]
    if not FACTOR_RANGE[0] <= factor <= FACTOR_RANGE[1]:
        raise ValueError(f"reclaim CPU {host_ns:.0f} ns per page on the host against {sim['scaled'] + sim['fixed']:.0f} ns "
                         f"simulated gives a factor {factor:.2f}, outside {FACTOR_RANGE}")
    return {"factor": factor, "costs": {k: max(1, int(round(defaults[k] * factor))) for k in SCALED}}


def simulate_calibration(text: str, costs: Dict[str, int], simulate: Callable[[str, List[str]], Dict[str, Any]]) -> Dict[str, Any]:
    """The simulator's run of the calibration workload with `costs`, under the host's cgroup
    hierarchy (as `compare` runs the simulated side)."""
    from .compare import host_cgroup_overrides

    return simulate(text, host_cgroup_overrides([]) + [f"costs.{k}={v}" for k, v in costs.items()])


def calibrate(costs: Dict[str, int], directory: str, runs: int = 3, log: Optional[Callable[[str], None]] = None,
              host_run: Optional[Callable[..., Dict[str, Any]]] = None,
              simulate: Optional[Callable[[str, List[str]], Dict[str, Any]]] = None) -> Optional[Dict[str, Any]]:
    """The phase as `swaplab calibrate` runs it, given the costs measured so far: None (and a
    note) when the host cannot run it. ``host_run`` and ``simulate`` are injectable for tests."""
    import os

    from .. import _core
    from .runner import HostOptions, run_host

    text = workload(os.cpu_count() or 1, os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    host_run = host_run or (lambda t: run_host(t, [], HostOptions(runs=runs, workdir=directory, log=log), source="<calibrate-reclaim>"))
    simulate = simulate or (lambda t, o: json.loads(_core.simulate(t, "<calibrate-reclaim>", o)))
    try:
        host = host_run(text)
        if any(t.get("oom_killed") for t in host["tasks"]):
            raise ValueError("the calibration run was OOM-killed")
        host_ns = host_reclaim_ns_per_page(host, costs)
    except Exception as e:  # not root, no memory cgroup, no swap: the preset keeps the defaults
        if log:
            log(f"reclaim phase skipped: {e}")
        return None
    simulated = simulate_calibration(text, costs, simulate)
    # The scaled parameters are not among the costs measured so far: the run used the defaults.
    defaults = simulated["config"]["costs"]
    sim = sim_reclaim_split(simulated)
    try:
        fitted = fit(host_ns, sim, defaults)
    except ValueError as e:
        if log:
            log(f"reclaim phase not used: {e}")
        return None
    measured = {"host_reclaim_ns_per_page": host_ns, "sim_default_reclaim_ns_per_page": sim["scaled"] + sim["fixed"],
                "sim_fixed_ns_per_page": sim["fixed"], "factor": fitted["factor"],
                "pgsteal_anon": host["vmstat"].get("pgsteal_anon", 0), "runs": runs}
    return {"measured": measured, "fit": fitted["costs"]}
