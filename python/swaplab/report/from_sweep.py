"""The report of a sweep: for each metric, a line plot per axis (the mean over the other axes,
with their min..max as a band) and a heatmap per pair of axes (the mean over the rest), then
the table of points and the failures.

Only axes with more than one value are plotted (a one-value axis is a constant of the sweep);
``seed`` is never an x axis — seeds are what the band and the mean are taken over.
"""

from __future__ import annotations

from itertools import combinations
from typing import Any, Dict, List, Optional, Sequence

from ..store import table as tbl
from .figures import HeatmapFigure, LineFigure, Section, Series, Table

DEFAULT_METRICS = ("elapsed_s", "pswpin", "ra_hit_pct", "latency_p99_us", "allocstall")
MAX_HEATMAPS = 3
MAX_TABLE_ROWS = 200


def _label(v: Any) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def _sorted_values(values: Sequence[Any]) -> List[Any]:
    """The axis's values in the grid's order (as the user wrote them)."""
    return list(dict.fromkeys(values))


def _numeric(values: Sequence[Any]) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


def axis_figure(df, axis: str, values: List[Any], metric: str) -> LineFigure:
    col = tbl.axis_column(axis)
    numeric = _numeric(values)
    xs, mean, lo, hi = [], [], [], []
    for i, v in enumerate(values):
        sel = df[df[col] == v][metric].dropna()
        xs.append(float(v) if numeric else float(i))
        mean.append(float(sel.mean()) if len(sel) else None)
        lo.append(float(sel.min()) if len(sel) else None)
        hi.append(float(sel.max()) if len(sel) else None)
    band = (lo, hi) if any(a != b for a, b in zip(lo, hi)) else None
    return LineFigure(f"{metric} by {axis}", axis, metric,
                      [Series("mean (band: min..max over the other axes)" if band else "", xs, mean, band=band)],
                      xcats=None if numeric else [_label(v) for v in values], ymin=None,
                      note=f"no {metric} in any point")


def heatmap_figure(df, ax_x: str, xv: List[Any], ax_y: str, yv: List[Any], metric: str) -> HeatmapFigure:
    cx, cy = tbl.axis_column(ax_x), tbl.axis_column(ax_y)
    grid: List[List[Optional[float]]] = []
    for y in yv:
        row = []
        for x in xv:
            sel = df[(df[cx] == x) & (df[cy] == y)][metric].dropna()
            row.append(float(sel.mean()) if len(sel) else None)
        grid.append(row)
    return HeatmapFigure(f"{metric}: {ax_y} × {ax_x} (mean over the other axes)", ax_x, ax_y,
                         [_label(v) for v in xv], [_label(v) for v in yv], grid, metric)


def _metrics(df, wanted: Optional[Sequence[str]]) -> List[str]:
    names = list(wanted) if wanted else [m for m in DEFAULT_METRICS if m in df and df[m].notna().any()]
    return [m for m in names if m in df]


def sections(manifest: Dict[str, Any], df, wanted: Optional[Sequence[str]] = None) -> List[Section]:
    ok = df[df["status"] == "ok"]
    axes = {a: _sorted_values(v) for a, v in manifest.get("axes", {}).items() if a != "seed" and len(v) > 1}
    chosen = _metrics(df, wanted)
    text = (f"{len(manifest.get('points', []))} points over {', '.join(f'{a} ({len(v)})' for a, v in manifest.get('axes', {}).items())}"
            f" of {manifest.get('workload')}; {len(ok)} results, {int((df['status'] == 'failed').sum())} failed.")
    out = [Section(f"Sweep {manifest['name']}", text)]
    for metric in chosen:
        figs: List[Any] = [axis_figure(ok, a, v, metric) for a, v in axes.items()]
        for (ax, xv), (ay, yv) in list(combinations(axes.items(), 2))[:MAX_HEATMAPS]:
            figs.append(heatmap_figure(ok, ax, xv, ay, yv, metric))
        if not axes:
            figs.append(LineFigure(f"{metric} per point", "point", metric,
                                   [Series("", [float(i) for i in ok["point"]], list(ok[metric]))], ymin=None))
        out.append(Section(metric, "", figs))
    cols = [tbl.axis_column(a) for a in manifest.get("axes", {})] + chosen
    shown = ok.head(MAX_TABLE_ROWS)
    out.append(Section("Points", f"first {len(shown)} of {len(ok)} results" if len(ok) > len(shown) else "", [],
                       [Table(cols, shown[cols].values.tolist())]))
    failed = df[df["status"] == "failed"]
    if len(failed):
        fcols = [tbl.axis_column(a) for a in manifest.get("axes", {})] + ["error"]
        out.append(Section("Failed points", "", [], [Table(fcols, failed[fcols].values.tolist())]))
    return out
