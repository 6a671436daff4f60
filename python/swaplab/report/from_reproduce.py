"""The report of ``swaplab reproduce --json``: per published table, the published and the
simulated effect of every non-baseline cell as ratios to the baseline (bars side by side, the
baseline at 1), the cells whose shape differs marked, and the full table below."""

from __future__ import annotations

from typing import Any, Dict, List

from .figures import BarFigure, Section, Table


def experiment_section(rep: Dict[str, Any]) -> Section:
    cells = [r for r in rep.get("rows", []) if not r.get("baseline")]
    fig = BarFigure(
        f"{rep['experiment']}: ratio to {rep.get('baseline')}", f"ratio to {rep.get('baseline')}",
        [f"{r['row']} / {r['variant']}" for r in cells],
        [("published", [r.get("published_ratio") for r in cells]),
         ("simulated", [r.get("simulated_ratio") for r in cells])],
        ref=1.0, marks=["differs" if r.get("verdict") == "differs" else "" for r in cells])
    rows = [[r["row"], r["variant"], r.get("published"), r.get("simulated"), r.get("published_ratio"),
             r.get("simulated_ratio"), "(baseline)" if r.get("baseline") else r.get("verdict")]
            for r in rep.get("rows", [])]
    unit = next((r.get("unit") for r in rep.get("rows", []) if r.get("unit")), "")
    table = Table(["row", "variant", f"published {unit}".strip(), f"simulated {unit}".strip(), "pub ratio",
                   "sim ratio", "verdict"], rows)
    scale = "" if rep.get("scale", 1) == 1 else f"; sizes and durations / {rep['scale']:g}"
    text = (f"{rep.get('title', '')}. Source: {rep.get('source', '')}. "
            f"{rep.get('cells_agree', 0)}/{rep.get('cells', 0)} cells agree{scale}.")
    return Section(rep["experiment"], text, [fig], [table])


def sections(doc: Dict[str, Any]) -> List[Section]:
    reps = doc["experiments"] if "experiments" in doc else [doc]
    total, agree = sum(r.get("cells", 0) for r in reps), sum(r.get("cells_agree", 0) for r in reps)
    intro = Section("Published tables", f"{agree}/{total} cells agree in shape. Rule: {doc.get('rule') or reps[0].get('rule', '')}")
    return [intro] + [experiment_section(r) for r in reps]
