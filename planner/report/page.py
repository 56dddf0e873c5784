"""The HTML page every report shares: one self-contained file, style inline, plots
embedded as ``data:`` URIs, no script, every string escaped.

The plan report (:mod:`planner.report.html`) and the what-if report
(:mod:`planner.whatif.report`) are both built from these pieces, so they look alike and
a change of style is made once.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from html import escape

Table = tuple[list[str], list[list[str]]]

CSS = """
*{box-sizing:border-box}
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;
 margin:0;background:#f5f6f8;color:#1d2330;line-height:1.45}
main{max-width:1180px;margin:0 auto;padding:24px 28px 60px}
h1{font-size:1.6em;margin:0 0 4px}
h2{font-size:1.25em;margin:34px 0 10px;border-bottom:2px solid #d8dce3;padding-bottom:4px}
h3{font-size:1.05em;margin:18px 0 6px}
.sub{color:#5a6475;margin:0 0 18px}
.card{background:#fff;border:1px solid #d8dce3;border-radius:8px;padding:16px 20px;
 margin:12px 0}
.tiles{display:flex;flex-wrap:wrap;gap:12px;margin:6px 0 14px}
.tile{flex:1 1 150px;background:#eef3fb;border-radius:6px;padding:10px 14px}
.tile .v{font-size:1.45em;font-weight:650;color:#123c7a}
.tile .l{font-size:.85em;color:#4a5568}
ul.answer{margin:4px 0 0;padding-left:20px}
table{border-collapse:collapse;margin:6px 0 10px;background:#fff;font-size:.92em}
th,td{border:1px solid #d8dce3;padding:4px 9px;text-align:left;vertical-align:top}
th{background:#eef0f4}
td.n{text-align:right;font-variant-numeric:tabular-nums}
figure{margin:14px 0 22px;background:#fff;border:1px solid #d8dce3;border-radius:8px;
 padding:10px}
figure img{max-width:100%;height:auto;display:block;margin:0 auto}
figcaption{color:#3d4757;font-size:.92em;margin-top:6px}
code{background:#eef0f4;padding:0 4px;border-radius:3px}
abbr[title]{text-decoration:underline dotted;cursor:help}
.caveats{background:#fff8e6;border:1px solid #e8c96a;border-radius:8px;padding:10px 20px;
 margin:12px 0}
.appendix{color:#3d4757}
dl.terms dt{font-weight:600;margin-top:6px}
dl.terms dd{margin:0 0 0 18px}
"""


def _is_number(text: str) -> bool:
    t = text.replace(",", "").replace("$", "").replace("/h", "").replace("%", "")
    try:
        float(t)
    except ValueError:
        return False
    return True


def term(text: str, explanation: str | None) -> str:
    """``text`` with its plain explanation on hover (dotted underline), if it has one."""
    if not explanation:
        return escape(text)
    return f'<abbr title="{escape(explanation)}">{escape(text)}</abbr>'


def html_table(table: Table, align_numbers: bool = True,
               terms: Mapping[str, str] | None = None) -> str:
    """A table; numeric cells right-aligned unless ``align_numbers`` is off (key-value
    tables read better left-aligned); a header found in ``terms`` explains itself on
    hover."""
    header, rows = table
    head = "".join(f"<th>{term(h, (terms or {}).get(h))}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f'<td class="n">{escape(c)}</td>' if align_numbers and _is_number(c)
                         else f"<td>{escape(c)}</td>" for c in row) + "</tr>"
        for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def figure(name: str, png: bytes, title: str, caption: str) -> str:
    """A plot embedded in the page, with its title and caption."""
    data = base64.b64encode(png).decode("ascii")
    return (f'<figure id="{escape(name)}"><img src="data:image/png;base64,{data}" '
            f'alt="{escape(title)}"><figcaption><b>{escape(title)}.</b> '
            f"{escape(caption)}</figcaption></figure>")


def tiles(items: Sequence[tuple[str, str]]) -> str:
    """Headline figures as tiles: (value, label) pairs."""
    return '<div class="tiles">' + "".join(
        f'<div class="tile"><div class="v">{escape(v)}</div><div class="l">{escape(lab)}'
        "</div></div>" for v, lab in items) + "</div>"


def page(title: str, subtitle: str, body: Sequence[str]) -> str:
    """The whole document around ``body`` (HTML fragments, already escaped)."""
    return "\n".join(["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
                      '<meta name="viewport" content="width=device-width, initial-scale=1">',
                      f"<title>{escape(title)}</title><style>{CSS}</style></head><body><main>",
                      f"<h1>{escape(title)}</h1>", f'<p class="sub">{escape(subtitle)}</p>',
                      *body, "</main></body></html>", ""])


__all__ = ["CSS", "Table", "figure", "html_table", "page", "term", "tiles"]
