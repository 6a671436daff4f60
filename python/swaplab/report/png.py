"""The report's figures as PNG files (``swaplab report --png DIR``), drawn with matplotlib from
the same specifications as the page's SVG, one file per figure, written atomically."""

from __future__ import annotations

import os
import re
from typing import List

from ..plots import _pyplot, _save
from .figures import BarFigure, ErrorFigure, Figure, HeatmapFigure, LineFigure, Report
from .svg import PALETTE


def _slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:60] or "figure"


def _line(ax, f: LineFigure) -> None:
    for i, s in enumerate(f.series):
        color = PALETTE[i % len(PALETTE)]
        ys = [float("nan") if v is None else v for v in s.y]
        if f.xcats is not None:  # categories: dots and range bars, no connecting line
            if s.band:
                err = [[0.0 if y is None or lo is None else max(0.0, y - lo) for y, lo in zip(s.y, s.band[0])],
                       [0.0 if y is None or hi is None else max(0.0, hi - y) for y, hi in zip(s.y, s.band[1])]]
                ax.errorbar(s.x, ys, yerr=err, fmt="o", color=color, label=s.name or None, capsize=3)
            else:
                ax.plot(s.x, ys, "o", color=color, label=s.name or None)
            continue
        if s.band:
            lo = [float("nan") if v is None else v for v in s.band[0]]
            hi = [float("nan") if v is None else v for v in s.band[1]]
            ax.fill_between(s.x, lo, hi, color=color, alpha=0.16, linewidth=0)
        ax.plot(s.x, ys, color=color, label=s.name or None, drawstyle="steps-post" if s.step else "default",
                marker="o" if f.xcats is not None or len(s.x) <= 12 else None, markersize=3)
    if f.logx:
        ax.set_xscale("log")
    if f.xcats is not None:
        ax.set_xticks(range(len(f.xcats)))
        ax.set_xticklabels(f.xcats, rotation=30 if len(f.xcats) > 8 else 0, ha="right" if len(f.xcats) > 8 else "center")
    if f.yticks:
        ax.set_yticks([v for v, _ in f.yticks])
        ax.set_yticklabels([label for _, label in f.yticks])
    elif f.ymin is not None:
        ax.set_ylim(bottom=f.ymin)
    ax.set_xlabel(f.xlabel)
    ax.set_ylabel(f.ylabel)


def _bars(ax, f: BarFigure) -> None:
    k = max(1, len(f.groups))
    w = 0.8 / k
    for gi, (name, values) in enumerate(f.groups):
        xs = [i - 0.4 + (gi + 0.5) * w for i in range(len(f.categories))]
        ax.bar(xs, [float("nan") if v is None else v for v in values], w, label=name, color=PALETTE[gi % len(PALETTE)])
    if f.ref is not None:
        ax.axhline(f.ref, color="black", linewidth=0.8, linestyle="--")
    ax.set_xticks(range(len(f.categories)))
    ax.set_xticklabels(f.categories, rotation=35 if len(f.categories) > 6 else 0, ha="right" if len(f.categories) > 6 else "center", fontsize=7)
    ax.set_ylabel(f.ylabel)


def _heatmap(ax, fig, f: HeatmapFigure) -> None:
    data = [[float("nan") if v is None else v for v in row] for row in f.values]
    im = ax.imshow(data, cmap="YlGnBu", aspect="auto", origin="upper")
    ax.set_xticks(range(len(f.xcats)))
    ax.set_xticklabels(f.xcats)
    ax.set_yticks(range(len(f.ycats)))
    ax.set_yticklabels(f.ycats)
    ax.set_xlabel(f.xlabel)
    ax.set_ylabel(f.ylabel)
    fig.colorbar(im, ax=ax, label=f.unit)


def _errors(ax, f: ErrorFigure) -> None:
    lo, hi = f.clip
    clamp = lambda v: min(max(v, lo), hi)  # noqa: E731
    for i, c in enumerate(f.categories):
        a, b, v = f.low[i], f.high[i], f.value[i]
        if a is not None and b is not None:
            ax.plot([clamp(a), clamp(b)], [i, i], color=PALETTE[0], alpha=0.45, linewidth=3)
        if v is not None:
            ax.plot([clamp(v)], [i], "o", color=PALETTE[2] if abs(v) > 50 else PALETTE[0])
    ax.axvline(0, color="#444", linewidth=0.8)
    ax.set_xlim(lo, hi)
    ax.set_yticks(range(len(f.categories)))
    ax.set_yticklabels(f.categories, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel(f.xlabel)


def write_figure(f: Figure, path: str) -> None:
    plt = _pyplot()
    tall = isinstance(f, ErrorFigure) and len(f.categories) > 10
    fig, ax = plt.subplots(figsize=(7.2, 4.8 if tall else 3.4))
    if isinstance(f, LineFigure):
        _line(ax, f)
    elif isinstance(f, BarFigure):
        _bars(ax, f)
    elif isinstance(f, HeatmapFigure):
        _heatmap(ax, fig, f)
    else:
        _errors(ax, f)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7)
    ax.set_title(f.title, fontsize=10)
    _save(fig, path)
    plt.close(fig)


def write_all(report: Report, directory: str) -> List[str]:
    os.makedirs(directory, exist_ok=True)
    paths = []
    for i, f in enumerate(report.figures()):
        path = os.path.join(directory, f"{i + 1:02d}-{_slug(f.title)}.png")
        write_figure(f, path)
        paths.append(path)
    return paths
