"""``swaplab calibrate``'s swap-in phase: what this kernel's swap-in fault costs in CPU, per
fault and per page read, measured through the swap path rather than borrowed from a file
fault.

Why. Calibrate measures a major fault on a file (``MADV_RANDOM`` faults on an uncached file)
and the CPU of submitting a read as an O_DIRECT ``pread``. A swap-in runs neither the file
system nor a syscall: on this project's VM (2026-11-27) a page-cluster 0 swap-in cost 24.6 us
of thread CPU where the file fault cost 28.5 us, so the simulator charged every synchronous
swap-in ~7 us too much (the read-back pass +28% in CPU). And with readahead, each further
page of the window is a folio allocated, charged, inserted in the swap cache, checked for
its shadow and added to the LRU (``__read_swap_cache_async``); the simulator charged those
nothing, so page-cluster 3 was short.

How. One task writes 256 MiB of anonymous memory in a 64 MiB memory cgroup with a swap file
(the reclaim phase's setup), then reads it back in order; once with page-cluster 0 (a
synchronous 4 KiB read per fault) and once with page-cluster 3 (8-page windows). The read
pass's thread CPU (``phase_cpu_ns[1]``) on the host is set against the simulator's on the same
workload with every cost measured so far (the reclaim phase's included, so the pass's reclaim
is the simulator's to account). The simulated pass is linear in the two figures:

    pass CPU = base + major faults x swapin_fault_cpu_ns + pages swapped in x swapin_page_cpu_ns

so the two runs give two equations in the two unknowns (page-cluster 0 has one page per fault,
page-cluster 3 eight). Only the sum of the fault's own figure and the read's submission is seen
by a swap-in (one submission per fault in both runs): where the fit leaves the fault's own
figure below zero, the O_DIRECT submission (``read_submit_cpu_ns``) holds CPU a swap-in does
not spend (the syscall, the file system's direct-I/O path) and is lowered by that much.

Without root, a memory cgroup or swap, the phase is skipped and the preset keeps a file fault's
figure for swap-ins.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import reclaim_cost

#: The two runs: page-cluster 0 (one page per fault) and 3 (eight).
PAGE_CLUSTERS = (0, 3)

#: The reclaim phase's workload (a 256 MiB write in a 64 MiB memcg) and a read back in order.
READ_BACK = """
[[task.phase]]
mapping = "mem"
pattern = "sequential"
write_ratio = 0.0
"""


def workload(cpus: int, ram_bytes: int, device: str = "sata-ssd") -> str:
    return reclaim_cost.workload(cpus, ram_bytes, device) + READ_BACK


def read_pass(result: Dict[str, Any]) -> Dict[str, float]:
    """The read-back pass of a run of `workload()`: its CPU, major faults and pages swapped in."""
    t = result["tasks"][0]
    phases = t.get("phase_cpu_ns") or []
    if len(phases) < 2:
        raise ValueError("the run has no CPU time for its read-back pass (phase_cpu_ns)")
    majors = t["major_faults"]
    pages = result["vmstat"].get("pswpin", 0)
    if majors <= 0 or pages <= 0:
        raise ValueError(f"the read-back pass swapped nothing in ({majors} major faults, pswpin {pages})")
    return {"cpu_ns": float(phases[1]), "major_faults": float(majors), "pswpin": float(pages)}


def solve(host: Dict[int, Dict[str, float]], sim: Dict[int, Dict[str, float]], start: Dict[str, int]) -> Dict[str, float]:
    """The (swapin_fault_cpu_ns, swapin_page_cpu_ns) that give the host's read-pass CPU in both
    runs, from the simulator's runs at ``start``: two linear equations in the two figures."""
    (a, b), (c, d) = ((sim[pc]["major_faults"], sim[pc]["pswpin"]) for pc in PAGE_CLUSTERS)
    e, f = (host[pc]["cpu_ns"] - sim[pc]["cpu_ns"] for pc in PAGE_CLUSTERS)
    det = a * d - b * c
    if abs(det) < 1e-9 * max(a * d, 1.0):
        raise ValueError("the two runs read the same pages per fault: the figures cannot be told apart")
    d_fault = (e * d - b * f) / det
    d_page = (a * f - e * c) / det
    return {"swapin_fault_cpu_ns": start["swapin_fault_cpu_ns"] + d_fault,
            "swapin_page_cpu_ns": start["swapin_page_cpu_ns"] + d_page}


def pc0_only(host: Dict[int, Dict[str, float]], sim: Dict[int, Dict[str, float]], start: Dict[str, int]) -> Dict[str, float]:
    """The fault's figure from the page-cluster 0 run alone, the per-page figure at its start."""
    d_fault = (host[0]["cpu_ns"] - sim[0]["cpu_ns"]) / sim[0]["major_faults"]
    return {"swapin_fault_cpu_ns": start["swapin_fault_cpu_ns"] + d_fault, "swapin_page_cpu_ns": float(start["swapin_page_cpu_ns"])}


def fit(solved: Dict[str, float], costs: Dict[str, int], fallback: Callable[[], Dict[str, float]]) -> Tuple[Dict[str, int], List[str]]:
    """The costs to write: the solved figures within their physical bounds, and notes on what
    was bounded. A page cannot cost less than nothing: a negative per-page figure (the two runs'
    noise on a busy machine is larger than the readahead pages' cost) gives way to ``fallback``,
    the synchronous run alone with no per-page cost. A fault's own figure below zero is CPU
    the O_DIRECT submission holds and a swap-in does not spend (module doc)."""
    notes: List[str] = []
    if solved["swapin_page_cpu_ns"] < 0:
        notes.append(f"the two runs gave {solved['swapin_page_cpu_ns']:.0f} ns per page read; "
                     "taken as 0, the fault's figure from the page-cluster 0 run alone")
        solved = fallback()
    page = solved["swapin_page_cpu_ns"]
    fault = solved["swapin_fault_cpu_ns"]
    submit = costs.get("read_submit_cpu_ns", 0)
    if fault < 0:
        if submit + fault < 0:
            raise ValueError(f"a swap-in's fault and submission together fit to {submit + fault:.0f} ns: below zero")
        notes.append(f"read_submit_cpu_ns {submit} -> {int(round(submit + fault))} ns: the O_DIRECT read's submission "
                     f"held {-fault:.0f} ns a swap-in does not spend (syscall, file system)")
        submit, fault = submit + fault, 0.0
    fitted = {"swapin_fault_cpu_ns": int(round(fault)), "swapin_page_cpu_ns": int(round(page)),
              "read_submit_cpu_ns": int(round(submit))}
    return fitted, notes


def simulate_run(text: str, pc: int, costs: Dict[str, Any], simulate: Callable[[str, List[str]], Dict[str, Any]]) -> Dict[str, Any]:
    """The simulator's run of WORKLOAD at page-cluster ``pc`` with ``costs``, under the host's
    cgroup hierarchy (as `compare` runs the simulated side)."""
    from .compare import host_cgroup_overrides

    sets = [f"kernel.page_cluster={pc}"] + [f"costs.{k}={v}" for k, v in costs.items()]
    return simulate(text, host_cgroup_overrides([]) + sets)


def calibrate(costs: Dict[str, int], directory: str, runs: int = 3, log: Optional[Callable[[str], None]] = None,
              host_run: Optional[Callable[[str, List[str]], Dict[str, Any]]] = None,
              simulate: Optional[Callable[[str, List[str]], Dict[str, Any]]] = None) -> Optional[Dict[str, Any]]:
    """The phase as `swaplab calibrate` runs it, given the costs measured so far (the reclaim
    phase's included): None (and a note) when the host cannot run it. ``host_run`` and
    ``simulate`` are injectable for tests."""
    import os

    from .. import _core
    from .runner import HostOptions, run_host

    text = workload(os.cpu_count() or 1, os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    host_run = host_run or (lambda t, o: run_host(t, o, HostOptions(runs=runs, workdir=directory, log=log), source="<calibrate-swapin>"))
    simulate = simulate or (lambda t, o: json.loads(_core.simulate(t, "<calibrate-swapin>", o)))
    try:
        host = {}
        for pc in PAGE_CLUSTERS:
            res = host_run(text, [f"kernel.page_cluster={pc}"])
            if any(t.get("oom_killed") for t in res["tasks"]):
                raise ValueError(f"the page-cluster {pc} run was OOM-killed")
            host[pc] = read_pass(res)
    except Exception as e:  # not root, no memory cgroup, no swap: the preset keeps the file fault's figure
        if log:
            log(f"swap-in phase skipped: {e}")
        return None
    start = {"swapin_fault_cpu_ns": max(0, costs["major_fault_cpu_ns"] - costs.get("read_submit_cpu_ns", 0)),
             "swapin_page_cpu_ns": 0}
    sim = {pc: read_pass(simulate_run(text, pc, {**costs, **start}, simulate)) for pc in PAGE_CLUSTERS}
    try:
        fitted, notes = fit(solve(host, sim, start), costs, lambda: pc0_only(host, sim, start))
    except ValueError as e:
        if log:
            log(f"swap-in phase not used: {e}")
        return None
    for n in notes:
        if log:
            log(f"swap-in phase: {n}")
    measured = {f"pc{pc}": {"host_read_pass_cpu_ns": host[pc]["cpu_ns"], "sim_start_read_pass_cpu_ns": sim[pc]["cpu_ns"],
                            "major_faults": host[pc]["major_faults"], "pswpin": host[pc]["pswpin"]} for pc in PAGE_CLUSTERS}
    measured.update({"host_pc0_cpu_ns_per_fault": host[0]["cpu_ns"] / host[0]["major_faults"], "notes": notes, "runs": runs})
    return {"measured": measured, "fit": fitted}
