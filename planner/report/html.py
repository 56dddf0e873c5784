"""``report.html``: one self-contained page a person can open without the terminal.

Every plot is embedded as a ``data:image/png;base64`` URI and the style sheet is
inline; the page loads nothing else and runs no script, so it can be mailed or
archived on its own and opens the same offline.  Every string from ``plan.json`` is
HTML-escaped.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from planner.report import sections, sim_section
from planner.report.csv_tables import TABLES
from planner.report.facts import fmt, headline, homogeneous_ratio, money, num, pct
from planner.report.markdown import title
from planner.report.plots import FIGURES
from planner.run.simulations import summary_rows

_CSS = """
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
"""


def _is_number(text: str) -> bool:
    t = text.replace(",", "").replace("$", "").replace("/h", "").replace("%", "")
    try:
        float(t)
    except ValueError:
        return False
    return True


def html_table(table: sections.Table, align_numbers: bool = True) -> str:
    """A table; numeric cells right-aligned unless ``align_numbers`` is off (key-value
    tables read better left-aligned)."""
    header, rows = table
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f'<td class="n">{escape(c)}</td>' if align_numbers and _is_number(c)
                         else f"<td>{escape(c)}</td>" for c in row) + "</tr>"
        for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _tiles(plan: Mapping[str, Any]) -> str:
    s = plan["summary"]
    gpus = sum(int(v) for v in (s.get("gpus_used") or {}).values())
    tiles = [(f"{gpus} GPUs", f"{money(s['cost_per_hour'])}"),
             (fmt(s["requests_per_s"]), "requests/s sustained"),
             (fmt(s.get("tokens_per_s")), "tokens/s"),
             (money(s.get("usd_per_million_tokens"), ""), "per million tokens")]
    ratio = homogeneous_ratio(plan)
    if math.isfinite(ratio):
        tiles.append((f"{fmt(ratio)}×", "vs. best single GPU type"))
    gap = num(s.get("bo_gap"))
    if math.isfinite(gap):
        tiles.append((pct(gap, 2), "below the exact optimum"))
    return '<div class="tiles">' + "".join(
        f'<div class="tile"><div class="v">{escape(v)}</div><div class="l">{escape(lab)}'
        "</div></div>" for v, lab in tiles) + "</div>"


def _figure(name: str, png: bytes) -> str:
    _make, fig_title, caption = FIGURES[name]
    data = base64.b64encode(png).decode("ascii")
    return (f'<figure id="{escape(name)}"><img src="data:image/png;base64,{data}" '
            f'alt="{escape(fig_title)}"><figcaption><b>{escape(fig_title)}.</b> '
            f"{escape(caption)}</figcaption></figure>")


def _simulation_html(plan: Mapping[str, Any], sims: Sequence[Mapping[str, Any]],
                     sim_pngs: Mapping[str, bytes]) -> list[str]:
    if not sims:
        return []

    capacity = fmt(plan["summary"].get("requests_per_s"))
    out = ['<h2 id="simulation">Simulated latency</h2>',
           f"<p>{escape(sim_section.INTRO.format(capacity=capacity)).replace('*', '')}</p>",
           html_table(summary_rows(sims))]
    for name, (fig_title, caption) in sim_section.SIM_FIGURES.items():
        data = base64.b64encode(sim_pngs[name]).decode("ascii")
        out.append(f'<figure id="{escape(name)}"><img src="data:image/png;base64,{data}" '
                   f'alt="{escape(fig_title)}"><figcaption><b>{escape(fig_title)}.</b> '
                   f"{escape(caption)}</figcaption></figure>")
    return out


def _optional(heading: str, note: str, table) -> list[str]:
    if not table:
        return []
    return [f"<h3>{escape(heading)}</h3>", f"<p>{escape(note)}</p>", html_table(table)]


def render_html(plan: Mapping[str, Any], pngs: Mapping[str, bytes],
                sims: Sequence[Mapping[str, Any]] = (),
                sim_pngs: Mapping[str, bytes] | None = None) -> str:
    """The page; ``pngs`` maps each name of :data:`FIGURES` to its PNG bytes; ``sims``
    and ``sim_pngs`` add the simulation section."""
    missing = [n for n in FIGURES if n not in pngs]
    if missing:
        raise ValueError(f"render_html: no PNG for {missing}")
    req = plan["request"]
    tool = plan.get("tool") or {}
    answer = "".join(f"<li><b>{escape(label)}:</b> {escape(text)}</li>"
                     for label, text in headline(plan))
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           f"<title>{escape(title(plan))}</title><style>{_CSS}</style></head><body><main>",
           f"<h1>{escape(title(plan))}</h1>",
           f'<p class="sub">{escape(str(plan.get("created_utc", "")))} · '
           f"{escape(str(tool.get('name', '')))} {escape(str(tool.get('version', '')))} · "
           f"search {escape(str(req.get('search', '')))}, inner solver "
           f"{escape(str(req.get('inner', '')))}, seed {escape(str(req.get('seed', '')))}</p>",
           '<h2 id="answer">The answer</h2><div class="card">', _tiles(plan),
           f'<ul class="answer">{answer}</ul></div>',
           "<h3>GPUs to buy or rent</h3>", html_table(sections.gpus_table(plan)),
           "<h3>Throughput and cost</h3>", html_table(sections.throughput_table(plan)),
           *_optional("Latency", sections.LATENCY_NOTE, sections.latency_table(plan)),
           *_optional("Network", sections.NETWORK_NOTE, sections.network_table(plan)),
           '<h2 id="islands">Islands</h2>',
           "<p>Each island is a group of GPUs of one type serving one phase (prefill or "
           "decode) with one parallel configuration (tensor-, data- and expert-parallel "
           "degrees) and batch size.</p>",
           html_table(sections.islands_table(plan)),
           '<h2 id="plots">Plots</h2>']
    out += [_figure(name, pngs[name]) for name in FIGURES if name != "convergence.png"]
    out += _simulation_html(plan, sims, sim_pngs or {})
    out += ['<h2 id="baselines">Compared with</h2>',
            "<p>The best plan using a single GPU type at the same budget, and the exact "
            "optimum of the same model (how far the search is from it).</p>",
            html_table(sections.baselines_table(plan)),
            '<h2 id="search">Search</h2>', _figure("convergence.png", pngs["convergence.png"]),
            html_table(sections.search_table(plan), False),
            '<h2 id="inputs">Inputs</h2>', html_table(sections.request_table(plan), False),
            '<h2 id="prices">Prices and their sources</h2>',
            html_table(sections.prices_table(plan)),
            '<h2 id="files">Files</h2><p>This page is self-contained. The run folder also '
            f"holds <code>plan.json</code> (schema version {escape(str(plan['schema_version']))}"
            "; <code>planner report &lt;folder&gt;</code> redraws the report from it), "
            + ", ".join(f"<code>{escape(t)}</code>" for t in TABLES)
            + ", the plots as PNG files and <code>report.md</code>.</p>",
            "</main></body></html>", ""]
    return "\n".join(out)
