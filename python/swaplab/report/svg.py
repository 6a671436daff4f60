"""Figures as inline SVG: no script, no fonts or files to fetch, so a report opens anywhere.

Each figure becomes one ``<svg class="plot">`` with a viewBox (it scales with the page), axes
with "nice" ticks (1, 2, 5 x 10^k; decades on a log axis), a legend under the plot, and a
``<title>`` on every drawn mark so that hovering shows its exact value. Marks that show data
carry ``class="m"`` (what the browser test counts to know a plot was drawn).
"""

from __future__ import annotations

import math
from html import escape
from typing import Iterable, List, Optional, Sequence, Tuple

from .figures import BarFigure, ErrorFigure, Figure, HeatmapFigure, LineFigure, Number

W, H = 720, 300
LEFT, RIGHT, TOP, BOTTOM = 70, 20, 34, 46
PALETTE = ["#4269d0", "#efb118", "#ff725c", "#6cc5b0", "#3ca951", "#ff8ab7", "#a463f2", "#97bbf5",
           "#9c6b4e", "#9498a0"]
FONT = "font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif"


def fmt(v: Optional[float]) -> str:
    """A short human label: 1.5k, 2.3M, 0.012, 120."""
    if v is None or v != v:
        return "-"
    a = abs(v)
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if a >= div * 10 if unit == "k" else a >= div:
            return f"{v / div:.3g}{unit}"
    if a >= 100 or v == int(v):
        return f"{v:.0f}"
    return f"{v:.3g}"


def tick_labels(values: Sequence[float]) -> List[Tuple[float, str]]:
    """Short labels (fmt), or exact ones when short labels would repeat (a narrow range of
    large numbers: 31,398 and 31,402 are both "31.4k")."""
    labels = [fmt(v) for v in values]
    if len(set(labels)) == len(labels):
        return list(zip(values, labels))
    step = min((b - a for a, b in zip(values, values[1:]) if b > a), default=1.0)
    decimals = max(0, -math.floor(math.log10(step))) if step > 0 else 0
    return [(v, f"{v:,.{decimals}f}") for v in values]


def nice_ticks(lo: float, hi: float, n: int = 5) -> List[float]:
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo]
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    return [round(first + i * step, 12) for i in range(int((hi - first) / step + 1e-9) + 1)]


def log_ticks(lo: float, hi: float) -> List[float]:
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    return [10.0 ** k for k in range(a, b + 1) if lo <= 10.0 ** k <= hi]


def _finite(xs: Iterable[Number]) -> List[float]:
    return [float(x) for x in xs if x is not None and x == x and math.isfinite(x)]


class Scale:
    def __init__(self, lo: float, hi: float, a: float, b: float, log: bool = False):
        if log:
            lo, hi = math.log10(lo), math.log10(hi)
        if hi == lo:
            lo, hi = lo - 0.5, hi + 0.5
        self.lo, self.hi, self.a, self.b, self.log = lo, hi, a, b, log

    def __call__(self, v: float) -> float:
        if self.log:
            v = math.log10(v)
        return self.a + (v - self.lo) / (self.hi - self.lo) * (self.b - self.a)


def _text(x: float, y: float, s: str, size: int = 11, anchor: str = "middle", extra: str = "") -> str:
    return f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" {extra}>{escape(s)}</text>'


def _frame(title: str, height: int, body: List[str]) -> str:
    return (f'<svg class="plot" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {height}" role="img" '
            f'aria-label="{escape(title)}" style="{FONT}">'
            f'<rect width="{W}" height="{height}" fill="#fff"/>'
            + _text(W / 2, 20, title, 13, extra='font-weight="600" fill="#222"') + "".join(body) + "</svg>")


def _legend(names: Sequence[str], y0: float, kinds: Optional[Sequence[str]] = None) -> Tuple[List[str], float]:
    """Swatches under the plot, wrapped; returns the elements and the height used."""
    out, x, y = [], LEFT, y0
    for i, name in enumerate(names):
        w = 26 + 6.5 * len(name)
        if x + w > W - RIGHT and x > LEFT:
            x, y = LEFT, y + 16
        color = PALETTE[i % len(PALETTE)]
        out.append(f'<rect x="{x}" y="{y - 8}" width="14" height="8" rx="2" fill="{color}"/>')
        out.append(_text(x + 18, y, name, 11, "start", 'fill="#333"'))
        x += w
    return out, (y - y0 + 16) if names else 0


def _axes(xs: Scale, ys: Scale, xticks: Sequence[Tuple[float, str]], yticks: Sequence[Tuple[float, str]],
          xlabel: str, ylabel: str, rotate: bool = False) -> List[str]:
    out = []
    for v, label in yticks:
        y = ys(v)
        out.append(f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e6e6e6"/>')
        out.append(_text(LEFT - 6, y + 4, label, 10, "end", 'fill="#555"'))
    for v, label in xticks:
        x = xs(v)
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{H - BOTTOM}" y2="{H - BOTTOM + 4}" stroke="#888"/>')
        if rotate:
            out.append(_text(x, H - BOTTOM + 12, label[:28], 9, "end",
                             f'fill="#555" transform="rotate(-30 {x:.1f} {H - BOTTOM + 12})"'))
        else:
            out.append(_text(x, H - BOTTOM + 15, label, 10, extra='fill="#555"'))
    out.append(f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{H - BOTTOM}" y2="{H - BOTTOM}" stroke="#888"/>')
    out.append(f'<line x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{H - BOTTOM}" stroke="#888"/>')
    if xlabel and not rotate:
        out.append(_text((LEFT + W - RIGHT) / 2, H - 12, xlabel, 11, extra='fill="#333"'))
    out.append(_text(16, (TOP + H - BOTTOM) / 2, ylabel, 11, extra=f'fill="#333" transform="rotate(-90 16 {(TOP + H - BOTTOM) / 2})"'))
    return out


def _y_range(values: List[float], ymin: Number) -> Tuple[float, float]:
    lo = ymin if ymin is not None else (min(values) if values else 0.0)
    hi = max(values) if values else 1.0
    if hi <= lo:  # a constant: centre it rather than draw it on the axis
        pad = abs(hi) * 0.1 or 1.0
        return (lo - pad if ymin is None else lo), hi + pad
    return lo, hi + (hi - lo) * 0.05


def _empty(title: str, why: str) -> str:
    return _frame(title, 120, [_text(W / 2, 70, why, 12, extra='fill="#888"')])


def line_svg(f: LineFigure) -> str:
    xs_all = _finite(x for s in f.series for x in s.x)   # the whole x range, measured or not
    ys_all = _finite(y for s in f.series for y in s.y) + _finite(v for s in f.series if s.band for v in s.band[0] + s.band[1])
    if not xs_all or not ys_all:
        return _empty(f.title, f.note or "nothing to draw: no samples")
    if f.logx:
        xs_all = [x for x in xs_all if x > 0] or [1.0]
    if f.xcats is not None:
        xlo, xhi = -0.5, len(f.xcats) - 0.5
    else:
        xlo, xhi = min(xs_all), max(xs_all)
    if f.logx:
        xlo, xhi = 10 ** math.floor(math.log10(xlo)), 10 ** math.ceil(math.log10(max(xhi, xlo * 10)))
    xs = Scale(xlo, xhi, LEFT, W - RIGHT, f.logx)
    ylo, yhi = _y_range(ys_all, f.ymin)
    if f.yticks:
        ylo, yhi = min(ylo, min(v for v, _ in f.yticks)), max(yhi, max(v for v, _ in f.yticks))
    ys = Scale(ylo, yhi, H - BOTTOM, TOP)
    if f.xcats is not None:
        xticks = [(float(i), c) for i, c in enumerate(f.xcats)]
    elif f.logx:
        xticks = [(v, fmt(v)) for v in log_ticks(xlo, xhi)]
    else:
        xticks = tick_labels(nice_ticks(xlo, xhi))
    yticks = f.yticks or tick_labels(nice_ticks(ylo, yhi))
    rotate = f.xcats is not None and (len(f.xcats) > 8 or max(len(c) for c in f.xcats) > 10)
    body = _axes(xs, ys, xticks, yticks, f.xlabel, f.ylabel, rotate)
    for i, s in enumerate(f.series):
        color = PALETTE[i % len(PALETTE)]
        if f.xcats is not None:
            body += _dots(s, xs, ys, color)
        else:
            body += _series(s, xs, ys, color, f.logx, markers=len(s.x) <= 12)
    legend, lh = _legend([s.name for s in f.series], H + 6) if len(f.series) > 1 or f.series[0].name else ([], 0)
    return _frame(f.title, int(H + lh + 4), body + legend)


def _series(s, xs: Scale, ys: Scale, color: str, logx: bool, markers: bool) -> List[str]:
    out = []
    pts = [(x, y) for x, y in zip(s.x, s.y)]
    if s.band:
        lo_hi = [(x, lo, hi) for x, lo, hi in zip(s.x, *s.band) if lo is not None and hi is not None]
        if len(lo_hi) > 1:
            top = " ".join(f"{xs(x):.1f},{ys(hi):.1f}" for x, _, hi in lo_hi)
            bot = " ".join(f"{xs(x):.1f},{ys(lo):.1f}" for x, lo, _ in reversed(lo_hi))
            out.append(f'<polygon class="m" points="{top} {bot}" fill="{color}" fill-opacity="0.16" stroke="none"/>')
    segment: List[Tuple[float, float]] = []
    segments = [segment]
    for x, y in pts:
        if y is None or y != y or (logx and x <= 0):
            segment = []
            segments.append(segment)
        else:
            segment.append((x, y))
    for seg in segments:
        if not seg:
            continue
        coords = []
        for j, (x, y) in enumerate(seg):
            if s.step and j:
                coords.append(f"{xs(x):.1f},{ys(seg[j - 1][1]):.1f}")
            coords.append(f"{xs(x):.1f},{ys(y):.1f}")
        if len(seg) > 1:
            out.append(f'<polyline class="m" points="{" ".join(coords)}" fill="none" stroke="{color}" stroke-width="1.8" '
                       f'stroke-linejoin="round"><title>{escape(s.name)}</title></polyline>')
        if markers or len(seg) == 1:
            for x, y in seg:
                out.append(f'<circle class="m" cx="{xs(x):.1f}" cy="{ys(y):.1f}" r="3" fill="{color}">'
                           f'<title>{escape(s.name)}: {fmt(y)}</title></circle>')
    return out


def _dots(s, xs: Scale, ys: Scale, color: str) -> List[str]:
    """Categories have no order to connect: a dot per category and its band as a range bar."""
    out = []
    lows, highs = s.band if s.band else ([None] * len(s.x), [None] * len(s.x))
    for x, y, lo, hi in zip(s.x, s.y, lows, highs):
        if lo is not None and hi is not None and ys(lo) - ys(hi) >= 0.5:
            out.append(f'<line class="m" x1="{xs(x):.1f}" x2="{xs(x):.1f}" y1="{ys(lo):.1f}" y2="{ys(hi):.1f}" '
                       f'stroke="{color}" stroke-width="6" stroke-opacity="0.25" stroke-linecap="round">'
                       f'<title>{fmt(lo)}..{fmt(hi)}</title></line>')
        if y is not None:
            out.append(f'<circle class="m" cx="{xs(x):.1f}" cy="{ys(y):.1f}" r="4" fill="{color}">'
                       f'<title>{escape(s.name)}: {fmt(y)}</title></circle>')
    return out


def bar_svg(f: BarFigure) -> str:
    vals = _finite(v for _, g in f.groups for v in g)
    if not f.categories or not vals:
        return _empty(f.title, f.note or "nothing to draw")
    lo, hi = min(0.0, min(vals)), max(vals + ([f.ref] if f.ref is not None else []))
    hi += (hi - lo) * 0.12
    ys = Scale(lo, hi, H - BOTTOM, TOP)
    n, k = len(f.categories), len(f.groups)
    xs = Scale(-0.5, n - 0.5, LEFT, W - RIGHT)
    rotate = n > 6 or max(len(c) for c in f.categories) > 14
    body = _axes(xs, ys, [(float(i), c) for i, c in enumerate(f.categories)],
                 tick_labels(nice_ticks(lo, hi)), "", f.ylabel, rotate)
    slot = (W - LEFT - RIGHT) / n * 0.8
    bw = slot / k
    for gi, (name, values) in enumerate(f.groups):
        color = PALETTE[gi % len(PALETTE)]
        for i, v in enumerate(values):
            if v is None or v != v:
                continue
            x = xs(i) - slot / 2 + gi * bw
            y0, y1 = ys(max(v, 0.0)), ys(min(v, 0.0))
            body.append(f'<rect class="m" x="{x:.1f}" y="{y0:.1f}" width="{max(bw - 1, 1):.1f}" height="{max(y1 - y0, 0.5):.1f}" '
                        f'fill="{color}"><title>{escape(f.categories[i])} — {escape(name)}: {fmt(v)}</title></rect>')
    if f.ref is not None:
        y = ys(f.ref)
        body.append(f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" stroke="#222" stroke-dasharray="4 3"/>')
    for i, mark in enumerate(f.marks):
        if mark:
            top = max(_finite(g[i] for _, g in f.groups) or [0.0])
            body.append(_text(xs(i), ys(top) - 4, mark, 9, extra='fill="#c0392b"'))
    legend, lh = _legend([g[0] for g in f.groups], H + (40 if rotate else 6))
    return _frame(f.title, int(H + lh + (44 if rotate else 4)), body + legend)


def _color(t: float) -> str:
    """A perceptually ordered ramp (light yellow -> teal -> dark blue)."""
    stops = [(255, 247, 188), (161, 218, 180), (65, 182, 196), (44, 127, 184), (37, 52, 148)]
    t = min(max(t, 0.0), 1.0) * (len(stops) - 1)
    i = min(int(t), len(stops) - 2)
    a, b, u = stops[i], stops[i + 1], t - i
    return "#%02x%02x%02x" % tuple(int(a[j] + (b[j] - a[j]) * u) for j in range(3))


def heatmap_svg(f: HeatmapFigure) -> str:
    vals = _finite(v for row in f.values for v in row)
    if not vals:
        return _empty(f.title, f.note or "nothing to draw")
    lo, hi = min(vals), max(vals)
    nx, ny = len(f.xcats), len(f.ycats)
    left, right = LEFT + 30, W - RIGHT - 70
    cw, ch = (right - left) / nx, min(36.0, 220.0 / ny)
    height = int(TOP + ch * ny + 60)
    body = []
    for yi, row in enumerate(f.values):
        y = TOP + yi * ch
        body.append(_text(left - 6, y + ch / 2 + 4, f.ycats[yi], 10, "end", 'fill="#555"'))
        for xi, v in enumerate(row):
            x = left + xi * cw
            t = 0.5 if hi == lo or v is None else (v - lo) / (hi - lo)
            fill = "#eee" if v is None else _color(t)
            body.append(f'<rect class="m" x="{x:.1f}" y="{y:.1f}" width="{cw - 1:.1f}" height="{ch - 1:.1f}" fill="{fill}">'
                        f'<title>{escape(f.ylabel)}={escape(f.ycats[yi])}, {escape(f.xlabel)}={escape(f.xcats[xi])}: '
                        f'{fmt(v)} {escape(f.unit)}</title></rect>')
            if nx * ny <= 120 and cw > 34:
                body.append(_text(x + cw / 2, y + ch / 2 + 4, fmt(v), 10, extra=f'fill="{"#fff" if t > 0.55 else "#222"}"'))
    for xi, c in enumerate(f.xcats):
        body.append(_text(left + (xi + 0.5) * cw, TOP + ny * ch + 14, c, 10, extra='fill="#555"'))
    body.append(_text((left + right) / 2, TOP + ny * ch + 32, f.xlabel, 11, extra='fill="#333"'))
    body.append(_text(14, TOP + ny * ch / 2, f.ylabel, 11, extra=f'fill="#333" transform="rotate(-90 14 {TOP + ny * ch / 2})"'))
    bx = W - RIGHT - 50
    for j in range(20):
        body.append(f'<rect x="{bx}" y="{TOP + (19 - j) * ny * ch / 20:.1f}" width="12" height="{ny * ch / 20 + 0.5:.1f}" fill="{_color(j / 19)}"/>')
    (_, lo_label), (_, hi_label) = tick_labels([lo, hi]) if hi > lo else [(lo, fmt(lo))] * 2
    body.append(_text(bx + 16, TOP + 8, hi_label, 9, "start", 'fill="#555"'))
    body.append(_text(bx + 16, TOP + ny * ch, lo_label, 9, "start", 'fill="#555"'))
    body.append(_text(bx + 6, TOP + ny * ch + 14, f.unit, 9, extra='fill="#555"'))
    return _frame(f.title, height, body)


def error_svg(f: ErrorFigure) -> str:
    if not f.categories or not _finite(f.value):
        return _empty(f.title, f.note or "nothing to compare")
    lo, hi = f.clip
    left, right = LEFT + 110, W - RIGHT - 60
    rh = 18
    height = int(TOP + rh * len(f.categories) + 44)
    xs = Scale(lo, hi, left, right)
    body = []
    bottom = TOP + rh * len(f.categories)
    for v in nice_ticks(lo, hi, 6):
        x = xs(v)
        body.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{TOP}" y2="{bottom}" stroke="{"#444" if v == 0 else "#e6e6e6"}"/>')
        body.append(_text(x, bottom + 14, f"{v:+.0f}%" if v else "0", 10, extra='fill="#555"'))
    body.append(_text((left + right) / 2, bottom + 32, f.xlabel, 11, extra='fill="#333"'))
    clamp = lambda v: min(max(v, lo), hi)  # noqa: E731
    for i, c in enumerate(f.categories):
        y = TOP + rh * i + rh / 2
        body.append(_text(left - 8, y + 4, c, 10, "end", 'fill="#333"'))
        v, a, b = f.value[i], f.low[i], f.high[i]
        if a is not None and b is not None and abs(xs(clamp(a)) - xs(clamp(b))) >= 0.5:
            body.append(f'<line class="m" x1="{xs(clamp(a)):.1f}" x2="{xs(clamp(b)):.1f}" y1="{y:.1f}" y2="{y:.1f}" '
                        f'stroke="{PALETTE[0]}" stroke-width="3" stroke-opacity="0.45"/>')
        if v is None:
            body.append(_text(right + 8, y + 4, "n/a", 10, "start", 'fill="#999"'))
            continue
        color = PALETTE[2] if abs(v) > 50 else PALETTE[0]
        body.append(f'<circle class="m" cx="{xs(clamp(v)):.1f}" cy="{y:.1f}" r="4" fill="{color}"><title>{escape(c)}: '
                    f'{v:+.1f}% (host spread {fmt(a)}..{fmt(b)}%)</title></circle>')
        body.append(_text(right + 8, y + 4, f"{v:+.0f}%", 10, "start", f'fill="{color}"'))
    return _frame(f.title, height, body)


def render(f: Figure) -> str:
    if isinstance(f, LineFigure):
        return line_svg(f)
    if isinstance(f, BarFigure):
        return bar_svg(f)
    if isinstance(f, HeatmapFigure):
        return heatmap_svg(f)
    return error_svg(f)
