"""``swaplab compare``: the simulator and the host on the same file, side by side.

Per counter and per task metric: simulated value, host median (min..max over runs) and the
relative error (sim - host) / host. Counters first: on shared machines elapsed times vary by
+-30% between runs while swap counters are stable. For an experiment file (experiments/*.toml)
every (row, variant) cell is run on both, and the *ratios between variants* (each variant over
the baseline, same row) are compared — which is what a simulator's user relies on.
"""

from __future__ import annotations

import json
import os
import statistics
from typing import Any, Dict, List, Optional, Tuple

from .. import _core
from .sim_runs import simulate_runs
from .errors import HostError, PreconditionError
from . import zswap
from .runner import SAMPLER_POLL_NS, HostOptions, run_host

COUNTERS = ("pswpin", "pswpout", "swap_ra", "swap_ra_hit", "pgmajfault", "pgfault", "pgscan_anon", "pgsteal_anon",
            "workingset_refault_anon", "workingset_activate_anon", "pgscan_file", "pgsteal_file",
            "workingset_refault_file", "workingset_activate_file", "pgpgin", "allocstall", "oom_kill")
TASK_METRICS = ("elapsed_ns", "touches", "minor_faults", "major_faults", "touch_latency_ns.p50",
                "touch_latency_ns.p99", "fault_latency_ns.p50", "fault_latency_ns.p99", "throughput_bytes_per_s")


def rel_err(sim: Optional[float], host: Optional[float]) -> Optional[float]:
    if sim is None or host is None:
        return None
    if host == 0:
        return 0.0 if sim == 0 else None
    return (sim - host) / abs(host)


def _get(d: Dict[str, Any], dotted: str) -> Optional[float]:
    for part in dotted.split("."):
        if isinstance(d, list) and part.isdigit() and int(part) < len(d):
            d = d[int(part)]
            continue
        if not isinstance(d, dict) or part not in d:
            return None
        d = d[part]
    return d if isinstance(d, (int, float)) and not isinstance(d, bool) else None


def _runs_of(host: Dict[str, Any]) -> List[Dict[str, Any]]:
    return host["host"].get("per_run") or []


def _zswap_rows(sim: Dict[str, Any], host: Dict[str, Any], per_run: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """zswap's vmstat counters and the pool at the end (host/zswap.py), when both sides ran it."""
    if not (sim.get("store") or {}).get("name") == "zswap" or not host.get("store"):
        return []
    rows = []
    for c in zswap.VMSTAT:
        xs = [r["vmstat"][c] for r in per_run if c in r.get("vmstat", {})]
        s, h = sim["vmstat"].get(c), host["vmstat"].get(c)
        rows.append({"metric": c, "sim": s, "host": h, "host_min": min(xs) if xs else None,
                     "host_max": max(xs) if xs else None, "rel_err": rel_err(s, h)})
    # The pool when the work ended, before the tasks exit: the host reads it while its workers
    # still hold their memory.
    at_end = sim["store"].get("debugfs_at_work_end") or sim["store"]["debugfs"]
    for c in zswap.STORE:
        xs = [r["store"][c] for r in per_run if c in r.get("store", {})]
        s, h = at_end.get(c), host["store"]["debugfs"].get(c)
        rows.append({"metric": c, "sim": s, "host": h, "host_min": min(xs) if xs else None,
                     "host_max": max(xs) if xs else None, "rel_err": rel_err(s, h)})
    return rows


# A note when the swap device's time per read differs by more than this between the sides.
READ_TIME_NOTE = 0.15


def _read_us(result: Dict[str, Any]) -> Optional[float]:
    """Microseconds per read request of the first swap device (diskstats' time spent reading
    / reads completed, queueing included), None without reads or the figures."""
    dev = next((d for d in result.get("devices") or [] if d.get("role") == "swap"), None)
    if not dev or not dev.get("reads") or dev.get("read_ticks_ns") is None:
        return None
    return round(dev["read_ticks_ns"] / dev["reads"] / 1000, 2)


def compare_results(sim: Dict[str, Any], host: Dict[str, Any]) -> Dict[str, Any]:
    """The comparison of one simulated and one (aggregated) host result."""
    rows = []
    per_run = _runs_of(host)

    sim_spread = (sim.get("sim_runs") or {}).get("spread", {})

    def spread(key: str) -> Tuple[Optional[float], Optional[float]]:
        xs = [r["vmstat"].get(key) for r in per_run if key in r.get("vmstat", {})]
        return (min(xs), max(xs)) if xs else (None, None)

    def sim_range(key: str) -> Dict[str, Any]:
        sp = sim_spread.get(key)
        return {"sim_min": sp["min"], "sim_max": sp["max"]} if sp else {"sim_min": None, "sim_max": None}

    for c in COUNTERS:
        s, h = sim["vmstat"].get(c), host["vmstat"].get(c)
        lo, hi = spread(c)
        rows.append({"metric": c, "sim": s, **sim_range(c), "host": h, "host_min": lo, "host_max": hi,
                     "rel_err": rel_err(s, h)})
    rows += _zswap_rows(sim, host, per_run)
    s_ra, h_ra = sim["summary"].get("ra_hit_pct"), host["summary"].get("ra_hit_pct")
    rows.append({"metric": "ra_hit_pct", "sim": s_ra, "host": h_ra, "host_min": None, "host_max": None,
                 "rel_err": rel_err(s_ra, h_ra)})
    s_ipi, h_ipi = sim["summary"].get("tlb_ipis"), host["summary"].get("tlb_ipis")
    if h_ipi is not None:
        # The host's count is the machine's (every origin): meaningful on a quiet machine.
        sp = (host["host"].get("spread") or {}).get("tlb_ipis") or {}
        rows.append({"metric": "tlb_ipis", "sim": s_ipi, "host": h_ipi, "host_min": sp.get("min"), "host_max": sp.get("max"),
                     "rel_err": rel_err(s_ipi, h_ipi)})
    s_read, h_read = _read_us(sim), _read_us(host)
    if s_read is not None and h_read is not None:
        rows.append({"metric": "swap_read_us_per_request", "sim": s_read, "host": h_read, "host_min": None,
                     "host_max": None, "rel_err": rel_err(s_read, h_read)})
    els = [r["elapsed_ns"] for r in per_run] or [host["elapsed_ns"]]
    sim_el = sim_spread.get("elapsed_ns")
    rows.append({"metric": "elapsed_s", "sim": sim["elapsed_ns"] / 1e9,
                 "sim_min": sim_el["min"] / 1e9 if sim_el else None, "sim_max": sim_el["max"] / 1e9 if sim_el else None,
                 "host": statistics.median(els) / 1e9,
                 "host_min": min(els) / 1e9, "host_max": max(els) / 1e9,
                 "rel_err": rel_err(sim["elapsed_ns"], statistics.median(els))})
    tasks = []
    for ht in host["tasks"]:
        st = next((t for t in sim["tasks"] if t["name"] == ht["name"] and t["instance"] == ht["instance"]), None)
        n = len(ht.get("phase_elapsed_ns") or [])
        phases = [f"phase_elapsed_ns.{i}" for i in range(n)] if n > 1 else []
        # CPU beside elapsed: elapsed less CPU is what the task waited (I/O, a CPU, a nap).
        cpu = ["cpu_ns"] + ([f"phase_cpu_ns.{i}" for i in range(n)] if n > 1 else []) if "cpu_ns" in ht else []
        for m in TASK_METRICS[:1] + tuple(phases) + tuple(cpu) + TASK_METRICS[1:]:
            s = _get(st, m) if st else None
            h = _get(ht, m)
            tasks.append({"task": f"{ht['name']}#{ht['instance']}", "metric": m, "sim": s, "host": h, "rel_err": rel_err(s, h)})
    notes = []
    if s_read is not None and h_read is not None and abs(rel_err(s_read, h_read)) > READ_TIME_NOTE:
        notes.append(f"the swap device's reads took {h_read:.1f} us each on the host against {s_read:.1f} us simulated: "
                     "if the workload's reads are alike on both sides, the device is not in the state it was "
                     "calibrated in (recalibrate beside the run)")
    s_ra_mode, h_ra_mode = sim["summary"].get("readahead"), host["summary"].get("readahead")
    if s_ra_mode and h_ra_mode and _ra_family(s_ra_mode) != _ra_family(h_ra_mode):
        notes.append(f"readahead differs: the simulator used {s_ra_mode!r}, the host kernel {h_ra_mode!r} "
                     "(a rotational swap device disables VMA readahead on the host; try --swap-backend loop)")
    return {"counters": rows, "tasks": tasks, "notes": notes,
            "readahead": {"sim": s_ra_mode, "host": h_ra_mode},
            "host_runs": host["host"].get("runs"), "sim_runs": (sim.get("sim_runs") or {}).get("runs", 1),
            "host_device": host["host"].get("swap_device")}


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        if abs(v) >= 1000:
            return f"{v:,.0f}"
        return f"{v:.3g}"
    return f"{v:,}"


def _pct(e: Optional[float]) -> str:
    return "-" if e is None else f"{e * 100:+.0f}%"


def render(cmp: Dict[str, Any], title: str = "") -> str:
    lines = []
    if title:
        lines.append(title)
    lines.append(f"  host: {cmp.get('host_device')}; {cmp.get('host_runs')} run(s); simulated: {cmp.get('sim_runs', 1)} run(s) "
                 f"(seeds differ); readahead sim={cmp['readahead']['sim']} host={cmp['readahead']['host']}")
    lines.append(f"  {'counter':<26} {'sim median':>14} {'sim min..max':>24} {'host median':>14} {'host min..max':>24} {'error':>8}")

    def span(lo: Any, hi: Any) -> str:
        return "" if lo is None else f"{_fmt(lo)}..{_fmt(hi)}"

    for r in cmp["counters"]:
        lines.append(f"  {r['metric']:<26} {_fmt(r['sim']):>14} {span(r.get('sim_min'), r.get('sim_max')):>24} "
                     f"{_fmt(r['host']):>14} {span(r['host_min'], r['host_max']):>24} {_pct(r['rel_err']):>8}")
    if cmp["tasks"]:
        lines.append(f"  {'task metric':<36} {'simulated':>14} {'host':>14} {'error':>8}")
        for r in cmp["tasks"]:
            lines.append(f"  {r['task'] + ' ' + r['metric']:<36} {_fmt(r['sim']):>14} {_fmt(r['host']):>14} {_pct(r['rel_err']):>8}")
    for n in cmp["notes"]:
        lines.append(f"  note: {n}")
    return "\n".join(lines)


def compare_file(path: str, overrides: List[str], opts: HostOptions) -> Dict[str, Any]:
    """A plain workload file: one simulation, opts.runs host runs."""
    with open(path) as f:
        text = f.read()
    return compare_text(text, path, overrides, opts)


def host_cgroup_overrides(overrides: List[str]) -> List[str]:
    """The simulation's side of the comparison runs under the host's cgroup hierarchy (v1 has
    no memcg dirty domain), unless the user chose one."""
    from . import cgroup as cg

    version = cg.detect()
    if version is None or any(o.split("=", 1)[0].strip() == "machine.cgroup_version" for o in overrides):
        return []
    return [f"machine.cgroup_version={version}"]


#: File systems that cache regular files in large folios (``mapping_set_large_folios``), from
#: the kernel release that enabled it: XFS 5.18, ext4 6.16.
LARGE_FOLIO_FS = {"xfs": (5, 18), "ext4": (6, 16)}


def _user_set(overrides: List[str], key: str) -> bool:
    return any(o.split("=", 1)[0].strip() == key for o in overrides)


def fs_type_of(path: str) -> Optional[str]:
    """The file system type of the mount holding ``path`` (longest mount point prefix), or
    that would hold it, for a path that does not exist yet."""
    path = os.path.realpath(path)
    best, fstype = "", None
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            mnt = left.split()[4]
            if (path == mnt or path.startswith(mnt.rstrip("/") + "/")) and len(mnt) >= len(best):
                best, fstype = mnt, right.split()[0]
    return fstype


def release_version(release: str) -> Optional[Tuple[int, ...]]:
    """(major, minor) of a kernel ``release`` (uname -r), or None."""
    try:
        return tuple(int(x) for x in release.split("-")[0].split(".")[:2])
    except ValueError:
        return None


def large_folios_on(fstype: Optional[str], release: str) -> bool:
    """Does a ``fstype`` file on kernel ``release`` (uname -r) get large page-cache folios?"""
    first = LARGE_FOLIO_FS.get(fstype or "")
    version = release_version(release)
    return first is not None and version is not None and version >= first


#: x86 keeps a CPU in an mm's ``mm_cpumask`` after it switches away since 6.12 ("x86/mm/tlb:
#: Update mm_cpumask lazily"); reclaim's batched flush then interrupts every busy CPU in it.
LAZY_MM_CPUMASK = (6, 12)


def host_tlb_overrides(overrides: List[str], machine: str, release: str) -> List[str]:
    """The simulation's side flushes TLBs as the host's kernel does, unless the user chose."""
    version = release_version(release)
    if machine != "x86_64" or version is None or version < LAZY_MM_CPUMASK or _user_set(overrides, "kernel.lazy_mm_cpumask"):
        return []
    return ["kernel.lazy_mm_cpumask=true"]


def host_pagecache_overrides(text: str, source: str, overrides: List[str], opts: HostOptions) -> List[str]:
    """The simulation's side runs with what the host's page cache does and what the runner
    does to it, unless the user chose: large folios when the data files' file system has
    them, and a ``memory.stat`` reader at the runner's sampling interval, each read up to one
    turn of its loop late (each read flushes the cgroup's statistics, which 6.x reclaim
    reads, reclaim/classic/flushed.rs)."""
    out = []
    resolved = json.loads(_core.resolve(text, source, overrides))
    kernel = resolved["kernel"]
    classic_6x = kernel["profile"] == "6.x" and kernel["reclaim"] == "classic"
    has_files = any(m["kind"] == "file" for t in resolved["task"] for m in t["mapping"])
    # The runner creates the work directory if it is missing: its file system is the mount
    # that will hold it (fs_type_of needs no existing path).
    if classic_6x and has_files and not _user_set(overrides, "pagecache.large_folios"):
        if large_folios_on(fs_type_of(opts.workdir), os.uname().release):
            out.append("pagecache.large_folios=true")
    if not _user_set(overrides, "machine.memory_stat_reader"):
        # runner.py samples memory.stat every max(sim.sample_interval, 10 ms)
        reader = max(int(resolved["sim"]["sample_interval"]), SAMPLER_POLL_NS)
        out.append(f"machine.memory_stat_reader={reader}ns")
        if not _user_set(overrides, "machine.memory_stat_reader_jitter"):
            out.append(f"machine.memory_stat_reader_jitter={min(SAMPLER_POLL_NS, reader - 1)}ns")
    return out


def compare_text(text: str, source: str, overrides: List[str], opts: HostOptions) -> Dict[str, Any]:
    cgroup = host_cgroup_overrides(overrides)
    pagecache = host_pagecache_overrides(text, source, overrides, opts)
    tlb = host_tlb_overrides(overrides, os.uname().machine, os.uname().release)
    notes: List[str] = []
    if opts.zswap:
        # Both sides run zswap with the host's settings; the host's workers need the overrides
        # too, to write pages as the content model says (crates/host/src/content.rs).
        p = zswap.params()
        if not p:
            raise PreconditionError("zswap is unavailable on this host (no /sys/module/zswap/parameters)")
        m = json.loads(_core.resolve(text, source, overrides))["machine"]
        zo = zswap.sim_overrides(p, int(m["ram"]) - int(m["kernel_reserved"]), zswap.host_total_bytes())
        overrides = list(overrides) + zo
        notes = zswap.notes(p) + ["zswap on both sides with the host's parameters: " + ", ".join(zo)]
    sim = simulate_runs(text, source, overrides + cgroup + pagecache + tlb, opts.runs)
    host = run_host(text, overrides, opts, source=source)
    if host["host"].get("oom"):
        return {"sim": sim, "host": host, "comparison": None, "error": "every host run was OOM-killed"}
    cmp = compare_results(sim, host)
    cmp["notes"] = notes + cmp["notes"]
    if cgroup:
        cmp["notes"].append(f"simulated with {cgroup[0]}: the host's memory cgroup hierarchy")
    if pagecache:
        cmp["notes"].append(f"simulated with {', '.join(pagecache)}: the host's page cache and the runner's memory.stat reads")
    if tlb:
        cmp["notes"].append(f"simulated with {tlb[0]}: the host's kernel (x86, 6.12+) keeps CPUs in mm_cpumask after a switch")
    return {"sim": _slim(sim), "host": _slim(host), "comparison": cmp}


def _slim(r: Dict[str, Any]) -> Dict[str, Any]:
    """The parts of a result a comparison report keeps (no time series, no config copy)."""
    keep = ("kind", "name", "elapsed_ns", "vmstat", "tasks", "summary", "devices", "store")
    out = {k: r[k] for k in keep if k in r}
    if r.get("host"):
        out["host"] = {k: v for k, v in r["host"].items() if k not in ("vmstat_other",)}
    return out


def is_experiment(path: str) -> bool:
    try:
        import tomllib  # type: ignore
    except ImportError:  # pragma: no cover
        import tomli as tomllib  # type: ignore
    with open(path, "rb") as f:
        return "experiment" in tomllib.load(f)


def compare_experiment(path: str, overrides: List[str], opts: HostOptions, log=None) -> Dict[str, Any]:
    """Every (row, variant) cell on both sides, then variant/baseline ratios per row."""
    from .. import experiments, tomlio

    exp = experiments.load(path)
    wsrc = exp.workload_source
    if os.path.isfile(wsrc):
        with open(wsrc) as f:
            text = f.read()
    else:
        text = tomlio.dumps(exp.workload)
    cells: Dict[str, Dict[str, Any]] = {}
    for row in exp.rows:
        for var in exp.variants:
            key = f"{row.name} / {var.name}"
            ov = exp.overrides(row.name, var.name) + list(overrides)
            if log:
                log(f"compare {key}")
            try:
                cells[key] = {"row": row.name, "variant": var.name, **compare_text(text, wsrc, ov, opts)}
            except PreconditionError as e:
                cells[key] = {"row": row.name, "variant": var.name, "error": f"unavailable on this host: {e}"}
            except HostError as e:
                cells[key] = {"row": row.name, "variant": var.name, "error": str(e)}
    ratios = []
    for row in exp.rows:
        base = cells.get(f"{row.name} / {exp.baseline}")
        for var in exp.variants:
            if var.name == exp.baseline:
                continue
            c = cells.get(f"{row.name} / {var.name}")
            ent = {"row": row.name, "variant": var.name, "baseline": exp.baseline}
            for m in ("elapsed_ns", "pswpin", "pswpout", "swap_ra"):
                def val(cell, side):
                    if not cell or cell.get("error") or not cell.get(side):
                        return None
                    r = cell[side]
                    return r["elapsed_ns"] if m == "elapsed_ns" else r["vmstat"].get(m)
                sb, sv, hb, hv = val(base, "sim"), val(c, "sim"), val(base, "host"), val(c, "host")
                sr = sv / sb if sb and sv is not None else None
                hr = hv / hb if hb and hv is not None else None
                ent[m] = {"sim_ratio": sr, "host_ratio": hr, "rel_err": rel_err(sr, hr)}
            ratios.append(ent)
    return {"experiment": exp.name, "baseline": exp.baseline, "cells": cells, "ratios": ratios}


def render_experiment(rep: Dict[str, Any]) -> str:
    lines = [f"experiment {rep['experiment']} (baseline {rep['baseline']})"]
    for key, c in rep["cells"].items():
        if c.get("error"):
            lines.append(f"{key}: {c['error']}")
        else:
            lines.append(render(c["comparison"], key))
    lines.append("variant ratios (variant / baseline, same row): simulated vs host")
    lines.append(f"  {'row / variant':<34} {'metric':<11} {'sim':>8} {'host':>8} {'error':>8}")
    for r in rep["ratios"]:
        for m in ("elapsed_ns", "pswpin", "pswpout", "swap_ra"):
            e = r[m]
            lines.append(f"  {r['row'] + ' / ' + r['variant']:<34} {m:<11} {_fmt(e['sim_ratio']):>8} "
                         f"{_fmt(e['host_ratio']):>8} {_pct(e['rel_err']):>8}")
    return "\n".join(lines)


def _ra_family(mode: str) -> str:
    """The readahead mechanism behind a policy or host mode name: the offset-based policies
    (fixed, fixed-run, adaptive, adaptive-2012) are the host's "cluster" readahead."""
    word = mode.split()[0].lower()
    if word in ("fixed", "fixed-run", "adaptive", "adaptive-2012", "cluster"):
        return "cluster"
    return word
