"""One self-contained HTML page: inline CSS and inline SVG figures, no script, nothing fetched
(viewing it needs no network), written atomically."""

from __future__ import annotations

from html import escape
from typing import Any

from ..io import PathLike, write_atomic
from . import svg
from .figures import Report, Table

CSS = """
:root { color-scheme: light; }
body { margin: 0; background: #f5f6f8; color: #1d2430; font: 14px/1.45 system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif; }
header { background: #1d2430; color: #fff; padding: 22px 32px 18px; }
header h1 { margin: 0 0 6px; font-size: 22px; font-weight: 600; }
header p { margin: 2px 0; color: #c9d1dc; font-size: 13px; }
main { max-width: 1540px; margin: 0 auto; padding: 8px 24px 40px; }
section { margin-top: 22px; }
h2 { font-size: 17px; margin: 0 0 6px; font-weight: 600; }
section > p { margin: 0 0 10px; color: #4a5566; max-width: 110ch; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(560px, 1fr)); gap: 14px; }
.grid.one { grid-template-columns: minmax(0, 960px); }
figure { margin: 0; background: #fff; border-radius: 8px; box-shadow: 0 1px 3px rgba(20,30,50,.12); padding: 6px; }
figure svg { width: 100%; height: auto; display: block; }
table { border-collapse: collapse; background: #fff; border-radius: 8px; box-shadow: 0 1px 3px rgba(20,30,50,.12);
        margin: 12px 0; font-size: 12.5px; font-variant-numeric: tabular-nums; }
caption { text-align: left; color: #4a5566; padding: 4px 0; caption-side: top; }
th, td { padding: 4px 10px; border-bottom: 1px solid #edf0f3; text-align: right; }
th { background: #eef1f5; font-weight: 600; position: sticky; top: 0; }
td:first-child, th:first-child, td.t { text-align: left; }
.tablewrap { max-height: 520px; overflow: auto; display: inline-block; max-width: 100%; }
footer { color: #7a8494; font-size: 12px; padding: 0 32px 24px; }
"""


def _cell(v: Any) -> str:
    if v is None or (isinstance(v, float) and v != v):
        return "-"
    if v == "":
        return ""
    if isinstance(v, float):
        return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    return escape(str(v))


def table_html(t: Table) -> str:
    head = "".join(f"<th>{escape(str(c))}</th>" for c in t.columns)
    body = "".join("<tr>" + "".join(f'<td class="t">{_cell(v)}</td>' if isinstance(v, str) else f"<td>{_cell(v)}</td>"
                                    for v in row) + "</tr>" for row in t.rows)
    cap = f"<caption>{escape(t.caption)}</caption>" if t.caption else ""
    return f'<div class="tablewrap"><table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def page(report: Report, version: str) -> str:
    parts = [f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
             f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
             f"<title>{escape(report.title)}</title><style>{CSS}</style></head><body>",
             f"<header><h1>{escape(report.title)}</h1>" + "".join(f"<p>{escape(s)}</p>" for s in report.subtitle)
             + "</header><main>"]
    for s in report.sections:
        parts.append(f"<section><h2>{escape(s.title)}</h2>")
        if s.text:
            parts.append(f"<p>{escape(s.text)}</p>")
        if s.figures:
            one = " one" if len(s.figures) == 1 else ""
            parts.append(f'<div class="grid{one}">' + "".join(f"<figure>{svg.render(f)}</figure>" for f in s.figures) + "</div>")
        parts.extend(table_html(t) for t in s.tables)
        parts.append("</section>")
    parts.append(f"</main><footer>swaplab {escape(version)} — hover a mark for its value</footer></body></html>\n")
    return "".join(parts)


def write(report: Report, path: PathLike, version: str) -> None:
    write_atomic(path, page(report, version))
