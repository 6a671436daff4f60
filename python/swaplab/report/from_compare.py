"""The report of ``swaplab compare --json``: the simulator against the real kernel.

Per counter, the relative error (simulated - host median) / host median, with a bar over the
host's run-to-run spread (the error against the host's min and max run): an error inside the
bar is within the host's own noise. For an experiment file, one such figure per cell and the
variant/baseline ratios of both sides, which is what a simulator's user relies on.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from .figures import BarFigure, ErrorFigure, Section, Table

RATIO_METRICS = ("elapsed_ns", "pswpin", "pswpout", "swap_ra")


def _pct(sim: Optional[float], host: Optional[float]) -> Optional[float]:
    if sim is None or host is None or host == 0:
        return None
    return 100.0 * (sim - host) / abs(host)


def error_figure(cmp: Dict[str, Any], title: str) -> ErrorFigure:
    rows = [r for r in cmp.get("counters", []) if r.get("host") not in (None, 0) or r.get("sim")]
    value = [None if r.get("rel_err") is None else 100.0 * r["rel_err"] for r in rows]
    # Against the host's extremes: sim vs the max run gives the low end, vs the min run the high end.
    low = [_pct(r.get("sim"), r.get("host_max")) for r in rows]
    high = [_pct(r.get("sim"), r.get("host_min")) for r in rows]
    return ErrorFigure(title, "simulated vs host median (%); bar: against the host's min..max run",
                       [r["metric"] for r in rows], value, low, high)


def _cell_table(cmp: Dict[str, Any]) -> Table:
    return Table(["counter", "sim median", "sim min", "sim max", "host median", "host min", "host max", "error"],
                 [[r["metric"], r.get("sim"), r.get("sim_min"), r.get("sim_max"), r.get("host"), r.get("host_min"), r.get("host_max"),
                   None if r.get("rel_err") is None else f"{100 * r['rel_err']:+.0f}%"] for r in cmp.get("counters", [])])


def sections(doc: Dict[str, Any]) -> List[Section]:
    if "cells" in doc and "ratios" in doc:
        return experiment_sections(doc)
    cmp = doc.get("comparison")
    if not cmp:
        return [Section("Simulator vs host", doc.get("error") or "no comparison (every host run failed)")]
    notes = " ".join(cmp.get("notes", []))
    text = (f"host: {cmp.get('host_device')}, {cmp.get('host_runs')} run(s); readahead simulated "
            f"{cmp['readahead'].get('sim')}, host {cmp['readahead'].get('host')}. {notes}")
    return [Section("Simulator vs host", text, [error_figure(cmp, "Relative error per counter")], [_cell_table(cmp)])]


def experiment_sections(doc: Dict[str, Any]) -> List[Section]:
    ratios = doc.get("ratios", [])
    cats = [f"{r['row']} / {r['variant']}" for r in ratios]
    figs: List[Any] = [BarFigure(f"{m}: variant / {doc.get('baseline')} (same row)", "ratio", cats,
                                 [("simulated", [r[m].get("sim_ratio") for r in ratios]),
                                  ("host", [r[m].get("host_ratio") for r in ratios])], ref=1.0)
                       for m in RATIO_METRICS if ratios and m in ratios[0]]
    out = [Section(f"Simulator vs host: {doc.get('experiment')}", "Ratios between variants on both sides.", figs)]
    for key, cell in doc.get("cells", {}).items():
        if cell.get("error") or not cell.get("comparison"):
            out.append(Section(key, cell.get("error") or "no comparison"))
            continue
        out.append(Section(key, "", [error_figure(cell["comparison"], f"{key}: relative error per counter")],
                           [_cell_table(cell["comparison"])]))
    return out
