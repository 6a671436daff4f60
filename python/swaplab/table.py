"""Readable text tables for ``swaplab run`` and ``swaplab bench``."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from .units import fmt_bytes, fmt_ns

# Always shown (the counters one compares runs by), in this order; others only when nonzero.
IMPORTANT = [
    "pswpin", "pswpout", "swap_ra", "swap_ra_hit", "pgfault", "pgmajfault",
    "pgscan_kswapd", "pgscan_direct", "pgsteal_kswapd", "pgsteal_direct", "pgrefill", "allocstall",
    "workingset_refault_anon", "workingset_refault_file", "workingset_activate_anon",
    "workingset_activate_file", "oom_kill",
]


def render(rows: Sequence[Sequence[Any]], align: str = "", indent: str = "  ") -> List[str]:
    """Columns padded to width; ``align`` has one 'l' or 'r' per column (default: first l)."""
    rows = [[str(c) for c in r] for r in rows]
    if not rows:
        return []
    n = max(len(r) for r in rows)
    rows = [r + [""] * (n - len(r)) for r in rows]
    align = align or ("l" + "r" * (n - 1))
    widths = [max(len(r[i]) for r in rows) for i in range(n)]
    out = []
    for r in rows:
        cells = [c.ljust(widths[i]) if align[i] == "l" else c.rjust(widths[i]) for i, c in enumerate(r)]
        out.append((indent + "  ".join(cells)).rstrip())
    return out


def _int(n: Any) -> str:
    return f"{int(n):,}" if isinstance(n, (int, float)) and n == n else str(n)


def machine_line(raw: Dict[str, Any]) -> str:
    cfg = raw.get("config") or {}
    m = cfg.get("machine") or {}
    k = cfg.get("kernel") or {}
    parts = []
    if m:
        ram = f"{m.get('cpus', '?')} CPU{'s' if m.get('cpus') != 1 else ''}, {fmt_bytes(m.get('ram', 0))} RAM"
        if m.get("kernel_reserved"):
            ram += f" ({fmt_bytes(m['kernel_reserved'])} reserved)"
        if m.get("memcg_limit"):
            ram += f", memcg limit {fmt_bytes(m['memcg_limit'])}"
        parts.append(ram)
    swaps = cfg.get("swap_devices") or []
    if swaps:
        parts.append("swap " + ", ".join(f"{s.get('name')} {fmt_bytes(s.get('size', 0))}" for s in swaps))
    else:
        parts.append("no swap")
    if k:
        ra = (raw.get("summary") or {}).get("readahead") or k.get("readahead")
        parts.append(f"kernel {k.get('profile')} readahead {ra} page-cluster {k.get('page_cluster')} "
                     f"swappiness {k.get('swappiness')} reclaim {k.get('reclaim')}")
    return " | ".join(parts)


def _ra_hit(vm: Dict[str, int]) -> Optional[float]:
    ra = vm.get("swap_ra", 0)
    return 100.0 * vm.get("swap_ra_hit", 0) / ra if ra else None


def vmstat_lines(vm: Dict[str, int]) -> List[str]:
    names = [n for n in IMPORTANT if n in vm] + sorted(n for n, v in vm.items() if v and n not in IMPORTANT)
    pairs = [(n, _int(vm[n])) for n in names]
    hit = _ra_hit(vm)
    pairs.insert(min(4, len(pairs)), ("ra_hit%", "-" if hit is None else f"{hit:.2f}"))
    per_line = 3
    rows = []
    for i in range(0, len(pairs), per_line):
        row: List[str] = []
        for n, v in pairs[i:i + per_line]:
            row += [n, v]
        rows.append(row)
    return render(rows, align="lr" * per_line)


def _group_tasks(tasks: List[Dict[str, Any]], limit: int = 24) -> List[Dict[str, Any]]:
    """Tasks as shown: every instance, or one line per task name when there are many."""
    if len(tasks) <= limit:
        return [dict(t, label=f"{t.get('name')}#{t.get('instance', 0)}") for t in tasks]
    groups: Dict[str, List[Dict[str, Any]]] = {}
    for t in tasks:
        groups.setdefault(t.get("name", "?"), []).append(t)
    out = []
    for name, ts in groups.items():
        touches = sum(t.get("touches", 0) for t in ts)

        def wmean(field: str, key: str) -> float:
            w = sum(t.get("touches", 0) for t in ts) or 1
            return sum((t.get(field) or {}).get(key, 0) * t.get("touches", 0) for t in ts) / w

        agg = {
            "label": f"{name} x{len(ts)}",
            "elapsed_ns": max(t.get("elapsed_ns", 0) for t in ts),
            "touches": touches,
            "minor_faults": sum(t.get("minor_faults", 0) for t in ts),
            "major_faults": sum(t.get("major_faults", 0) for t in ts),
            "throughput_bytes_per_s": sum(t.get("throughput_bytes_per_s", 0.0) for t in ts),
            "oom_killed": any(t.get("oom_killed") for t in ts),
            "direct_reclaim": {
                "calls": sum((t.get("direct_reclaim") or {}).get("calls", 0) for t in ts),
                "stall_ns": sum((t.get("direct_reclaim") or {}).get("stall_ns", 0) for t in ts),
            },
            "touch_latency_ns": {k: wmean("touch_latency_ns", k) for k in ("mean", "p50", "p90", "p99", "p99.9")},
            "fault_latency_ns": {k: wmean("fault_latency_ns", k) for k in ("mean", "p50", "p90", "p99", "p99.9")},
        }
        agg["touch_latency_ns"]["max"] = max((t.get("touch_latency_ns") or {}).get("max", 0) for t in ts)
        agg["fault_latency_ns"]["max"] = max((t.get("fault_latency_ns") or {}).get("max", 0) for t in ts)
        out.append(agg)
    return out


def task_lines(tasks: List[Dict[str, Any]]) -> List[str]:
    shown = _group_tasks(tasks)
    rows: List[List[str]] = [["task", "elapsed", "touches", "minor", "major", "MB/s", "reclaim calls", "stall", ""]]
    for t in shown:
        dr = t.get("direct_reclaim") or {}
        rows.append([t["label"], fmt_ns(t.get("elapsed_ns", 0)), _int(t.get("touches", 0)),
                     _int(t.get("minor_faults", 0)), _int(t.get("major_faults", 0)),
                     f"{t.get('throughput_bytes_per_s', 0.0) / 1e6:,.1f}", _int(dr.get("calls", 0)),
                     fmt_ns(dr.get("stall_ns", 0)), "OOM-killed" if t.get("oom_killed") else ""])
    out = render(rows, align="lrrrrrrrl")
    lat: List[List[str]] = [["latency", "", "mean", "p50", "p90", "p99", "p99.9", "max"]]
    for t in shown:
        for kind, field in (("touch", "touch_latency_ns"), ("fault", "fault_latency_ns")):
            p = t.get(field) or {}
            lat.append([t["label"] if kind == "touch" else "", kind]
                       + [fmt_ns(p.get(k, 0)) for k in ("mean", "p50", "p90", "p99", "p99.9", "max")])
    return out + [""] + render(lat, align="llrrrrrr") + request_lines(tasks)


def request_lines(tasks: List[Dict[str, Any]], limit: int = 24) -> List[str]:
    """Measured requests (kv requests, buffered reads) per task, or per task name when there
    are many: ops/s and KiB/s summed, latency percentiles weighted by requests."""
    with_reqs = [t for t in tasks if t.get("requests")]
    if not with_reqs:
        return []
    groups: Dict[str, List[Dict[str, Any]]] = {}
    for t in with_reqs:
        label = f"{t.get('name')}#{t.get('instance', 0)}" if len(with_reqs) <= limit else f"{t.get('name')} x"
        groups.setdefault(label, []).append(t["requests"])
    rows: List[List[str]] = [["requests", "ops", "ops/s", "KiB/s", "mean", "p50", "p90", "p99", "p99.9", "max"]]
    for label, rs in groups.items():
        n = sum(r["ops"] for r in rs) or 1
        lat = {k: sum(r["latency_ns"][k] * r["ops"] for r in rs) / n for k in ("mean", "p50", "p90", "p99", "p99.9")}
        lat["max"] = max(r["latency_ns"]["max"] for r in rs)
        name = label + (str(len(rs)) if label.endswith(" x") else "")
        rows.append([name, _int(n), f"{sum(r['ops_per_s'] for r in rs):,.0f}", f"{sum(r['bytes_per_s'] for r in rs) / 1024:,.0f}"]
                    + [fmt_ns(lat[k]) for k in ("mean", "p50", "p90", "p99", "p99.9", "max")])
    return [""] + render(rows, align="lrrrrrrrrr")


def reclaim_cpu_lines(raw: Dict[str, Any]) -> List[str]:
    """kswapd's and the direct reclaimers' CPU per category with its share; nothing when
    neither spent any (or the result has no profile: host runs)."""
    k = raw.get("kswapd_cpu_by_category") or {}
    d = raw.get("direct_reclaim_cpu_by_category") or {}
    tk, td = sum(k.values()), sum(d.values())
    if not tk and not td:
        return []

    def share(v: int, total: int) -> str:
        return f"{100.0 * v / total:.1f}%" if total else "-"

    rows: List[List[str]] = [["category", "kswapd", "", "direct", ""]]
    for cat in list(k) + [c for c in d if c not in k]:
        kv, dv = k.get(cat, 0), d.get(cat, 0)
        rows.append([cat, fmt_ns(kv), share(kv, tk), fmt_ns(dv), share(dv, td)])
    rows.append(["total", fmt_ns(tk), "", fmt_ns(td), ""])
    return render(rows, align="lrrrr")


def run_report(raw: Dict[str, Any]) -> str:
    """The table ``swaplab run`` prints."""
    name = raw.get("name") or "(unnamed)"
    host = raw.get("kind") == "host"
    what = f"host run on {(raw.get('host') or {}).get('kernel', '?')}" if host else "simulation"
    lines = [f"swaplab {raw.get('swaplab_version', '?')} {what}: {name} (seed {raw.get('seed', '?')})",
             machine_line(raw)]
    el = (raw.get("summary") or {}).get("elapsed_s")
    if el is None:
        el = raw.get("elapsed_ns", 0) / 1e9
    status = "  (INTERRUPTED: partial result)" if raw.get("interrupted") else ""
    lines.append(f"{'wall-clock time' if host else 'virtual time'} {el:.3f} s{status}")
    lines += ["", "vmstat"] + vmstat_lines(raw.get("vmstat") or {})
    cpu = reclaim_cpu_lines(raw)
    if cpu:
        lines += ["", "reclaim CPU by category (kswapd; direct reclaimers)"] + cpu
    tasks = raw.get("tasks") or []
    lines += [""] + (task_lines(tasks) if tasks else ["  (no task results)"])
    ooms = [e for e in raw.get("events") or [] if e.get("kind") == "oom_kill"]
    if ooms:
        lines += ["", "OOM kills"]
        lines += render([["time", "task", "rss", "swap"]]
                        + [[fmt_ns(e.get("t_ns", 0)), e.get("task", "?"), fmt_bytes(e.get("rss_pages", 0) * 4096),
                            fmt_bytes(e.get("swap_pages", 0) * 4096)] for e in ooms], align="llrr")
    devs = raw.get("devices") or []
    if devs:
        lines += ["", "devices"]
        lines += render([["device", "role", "requests", "pages read", "pages written", "busy"]]
                        + [[d.get("name"), d.get("role"), _int(d.get("requests", 0)), _int(d.get("pages_read", 0)),
                            _int(d.get("pages_written", 0)), fmt_ns(d.get("busy_ns", 0))] for d in devs],
                        align="llrrrr")
    store = raw.get("store")
    if store:
        lines += ["", f"{store.get('name', 'store')} (debugfs; pool {fmt_bytes(store.get('pool_pages_max', 0) * 4096)} at most)"]
        lines += render([[k, _int(v)] for k, v in sorted((store.get("debugfs") or {}).items())], align="lr")
    return "\n".join(lines) + "\n"


# -- bench ---------------------------------------------------------------------------------

TARGETS = {  # the performance contract (issue 2, point 13)
    "resident_touches_per_s": (">=", 50e6),
    "major_faults_per_s": (">=", 1e6),
    "mglru_major_faults_per_s": (">=", 1e6),
    "zswap_stores_per_s": (">=", 1e6),
    "bytes_per_frame": ("<=", 64),
}


def _num(v: Any) -> str:
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if abs(v) >= 1e6:
            return f"{v / 1e6:,.2f} M"
        if abs(v) >= 1000:
            return f"{v:,.0f}"
        return f"{v:.4g}"
    return str(v)


def bench_report(figures: Dict[str, Any]) -> str:
    if not figures:
        return "swaplab bench: the core returned no figures\n"
    rows: List[List[str]] = []

    def walk(d: Dict[str, Any], prefix: str) -> None:
        for k, v in d.items():
            if isinstance(v, dict):
                rows.append([prefix + k, "", ""])
                walk(v, prefix + "  ")
                continue
            note = ""
            if k in TARGETS and isinstance(v, (int, float)):
                op, target = TARGETS[k]
                ok = v >= target if op == ">=" else v <= target
                note = f"(target {op} {_num(float(target)) if target >= 1e6 else target}: {'ok' if ok else 'MISSED'})"
            unit = "/s" if k.endswith("_per_s") else ""
            rows.append([prefix + k, _num(v) + unit, note])

    walk(figures, "")
    return "\n".join(["swaplab bench"] + render(rows, align="lrl")) + "\n"
