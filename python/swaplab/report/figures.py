"""What a report draws, independent of how: figure specifications that svg.py renders inline
into the HTML page and png.py renders with matplotlib (``--png DIR``), so that both show the
same data with the same titles and labels.

Four kinds cover every plot of the report: lines over a numeric or categorical x (time series,
CDFs, per-axis sweep plots), grouped bars (published vs simulated), a heatmap (two sweep axes)
and horizontal error bars (simulator-vs-host relative error per counter).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple, Union

Number = Optional[float]
Ticks = Optional[List[Tuple[float, str]]]


@dataclass
class Series:
    name: str
    x: List[float]
    y: List[Number]
    step: bool = False                          # draw as a staircase (CDFs)
    band: Optional[Tuple[List[Number], List[Number]]] = None   # (low, high) around y


@dataclass
class LineFigure:
    title: str
    xlabel: str
    ylabel: str
    series: List[Series]
    logx: bool = False
    xcats: Optional[List[str]] = None           # categorical x: series x are indices into it
    yticks: Ticks = None                        # explicit ticks (a transformed axis such as a CDF tail)
    ymin: Number = 0.0                          # None: from the data
    note: str = ""


@dataclass
class BarFigure:
    title: str
    ylabel: str
    categories: List[str]
    groups: List[Tuple[str, List[Number]]]      # (legend name, one value per category)
    ref: Number = None                          # a reference line (1.0 for ratios)
    marks: List[str] = field(default_factory=list)   # a short label above each category ("differs")
    note: str = ""


@dataclass
class HeatmapFigure:
    title: str
    xlabel: str
    ylabel: str
    xcats: List[str]
    ycats: List[str]
    values: List[List[Number]]                  # values[y][x]
    unit: str = ""
    note: str = ""


@dataclass
class ErrorFigure:
    """One row per category: a dot at ``value`` and a bar from ``low`` to ``high`` (percent)."""

    title: str
    xlabel: str
    categories: List[str]
    value: List[Number]
    low: List[Number]
    high: List[Number]
    clip: Tuple[float, float] = (-100.0, 200.0)
    note: str = ""


Figure = Union[LineFigure, BarFigure, HeatmapFigure, ErrorFigure]


@dataclass
class Table:
    columns: List[str]
    rows: List[Sequence[object]]
    caption: str = ""


@dataclass
class Section:
    title: str
    text: str = ""
    figures: List[Figure] = field(default_factory=list)
    tables: List[Table] = field(default_factory=list)


@dataclass
class Report:
    title: str
    subtitle: List[str]
    sections: List[Section]

    def figures(self) -> List[Figure]:
        return [f for s in self.sections for f in s.figures]
