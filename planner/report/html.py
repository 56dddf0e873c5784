"""``report.html``: one self-contained page a person can open without the terminal.

Every plot is embedded as a ``data:image/png;base64`` URI and the style sheet is
inline (the shared page of :mod:`planner.report.page`); the page loads nothing else and
runs no script, so it can be mailed or archived on its own and opens the same offline.
Every string from ``plan.json`` is HTML-escaped.

Order (the reader is buying GPUs): the answer -- what to buy, what it costs, the
capacity with its latency, how sure we are -- then the islands grouped, the
alternatives, assumptions and caveats, the plots, simulation results, the terms used;
search internals and full tables in an appendix.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from planner.report import answer, sections, sim_section
from planner.report.csv_tables import TABLES
from planner.report.facts import fmt, homogeneous_ratio, money, optimum_sentence, search_quality
from planner.report.markdown import title
from planner.report.page import figure, html_table, page, term, tiles
from planner.report.plots import FIGURES
from planner.run.simulations import summary_rows

TERMS = answer.GLOSSARY | {"GPUs": "GPUs in each island", "role": "prefill, decode or "
                           "colocated (both)", "parallelism (tp-dp-ep)":
                           answer.GLOSSARY["parallelism"],
                           "latency (slowest)": "the slowest island of the group: TTFT for "
                           "prefill islands, TPOT for decode islands",
                           "this plan ÷ it": "how many times this plan's requests/s the "
                           "alternative's is"}


def _tiles(plan: Mapping[str, Any]) -> str:
    s = plan["summary"]
    gpus = sum(int(v) for v in (s.get("gpus_used") or {}).values())
    items = [(f"{gpus} GPUs", f"{money(s['cost_per_hour'])}"),
             (fmt(s["requests_per_s"]), "requests/s at the SLO"),
             (fmt(s.get("tokens_per_s")), "tokens/s"),
             (money(s.get("usd_per_million_tokens"), ""), "per million tokens")]
    ratio = homogeneous_ratio(plan)
    if math.isfinite(ratio):
        items.append((f"{fmt(ratio)}×", "vs. the best single GPU type"))
    return tiles(items)


def _target_html(plan: Mapping[str, Any]) -> list[str]:
    tried = sections.target_table(plan)
    return [] if tried is None else ["<h3>The plans tried for the target</h3>",
                                     html_table(tried, terms=TERMS)]


def _figure(name: str, png: bytes) -> str:
    _make, fig_title, caption = FIGURES[name]
    return figure(name, png, fig_title, caption)


def _simulation_html(plan: Mapping[str, Any], sims: Sequence[Mapping[str, Any]],
                     sim_pngs: Mapping[str, bytes]) -> list[str]:
    if not sims:
        return []
    capacity = fmt(plan["summary"].get("requests_per_s"))
    out = ['<h2 id="simulation">Simulated latency</h2>',
           f"<p>{escape(sim_section.INTRO.format(capacity=capacity)).replace('*', '')}</p>",
           html_table(summary_rows(sims))]
    out += [figure(name, sim_pngs[name], fig_title, caption)
            for name, (fig_title, caption) in sim_section.SIM_FIGURES.items()]
    return out


def _optional(heading: str, note: str, table) -> list[str]:
    if not table:
        return []
    return [f"<h3>{escape(heading)}</h3>", f"<p>{escape(note)}</p>",
            html_table(table, terms=TERMS)]


def _answer_list(plan: Mapping[str, Any]) -> str:
    items = "".join(f"<li><b>{escape(label)}:</b> {escape(text)}</li>"
                    for label, text in answer.answer(plan))
    return f'<ul class="answer">{items}</ul>'


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
    subtitle = (f"{plan.get('created_utc', '')} · {tool.get('name', '')} "
                f"{tool.get('version', '')} · budget "
                + (money(req.get("budget")) if req.get("budget") is not None else "none")
                + f" · seed {req.get('seed', '')}")
    body = ['<h2 id="answer">The answer</h2><div class="card">', _tiles(plan),
            _answer_list(plan), "</div>",
            "<h3>GPUs to buy or rent</h3>",
            html_table(sections.gpus_table(plan), terms=TERMS),
            *_optional("Latency", sections.LATENCY_NOTE, sections.latency_table(plan)),
            '<h2 id="islands">Islands</h2>',
            f"<p>Identical {term('islands', TERMS['island'])} are grouped: "
            "“30 × 2 H100” is thirty islands of two GPUs each. Each group serves one "
            f"phase ({term('prefill', TERMS['prefill'])}, {term('decode', TERMS['decode'])}"
            f" or {term('colocated', TERMS['colocated'])}) with one "
            f"{term('parallelism', TERMS['parallelism'])} and "
            f"{term('batch', TERMS['batch'])}.</p>",
            html_table(answer.island_groups(plan), terms=TERMS),
            _figure("islands.png", pngs["islands.png"]),
            '<h2 id="alternatives">Alternatives</h2>',
            f"<p>{escape(sections.ALTERNATIVES_NOTE)} "
            f"{escape(optimum_sentence(plan))}</p>",
            html_table(sections.baselines_table(plan), terms=TERMS),
            *_target_html(plan),
            '<h2 id="caveats">Assumptions and caveats</h2><div class="caveats"><ul>',
            *(f"<li>{escape(c)}</li>" for c in answer.caveats(plan)), "</ul></div>",
            '<h2 id="plots">How the plan uses its GPUs</h2>',
            _figure("per_length.png", pngs["per_length.png"]),
            _figure("assignment.png", pngs["assignment.png"])]
    body += _simulation_html(plan, sims, sim_pngs or {})
    body += ['<h2 id="terms">Terms used</h2><dl class="terms">',
             *(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in answer.GLOSSARY.items()),
             "</dl>",
             '<h2 id="appendix">Appendix: details and search internals</h2>'
             '<div class="appendix">',
             "<h3>Capacity in detail</h3>", html_table(sections.throughput_table(plan)),
             *_optional("Network", sections.NETWORK_NOTE, sections.network_table(plan)),
             "<h3>Every island</h3>", html_table(sections.islands_table(plan), terms=TERMS),
             *_optional("Placement (server → islands)", sections.PLACEMENT_NOTE,
                        sections.placement_table(plan)),
             "<h3>Search</h3>", f"<p>{escape(search_quality(plan))}.</p>",
             _figure("convergence.png", pngs["convergence.png"]),
             html_table(sections.search_table(plan), False),
             "<h3>Inputs</h3>", html_table(sections.request_table(plan), False),
             '<h3 id="prices">Prices and their sources</h3>',
             html_table(sections.prices_table(plan)),
             '<h3 id="files">Files</h3><p>This page is self-contained. The run folder also '
             f"holds <code>plan.json</code> (schema version "
             f"{escape(str(plan['schema_version']))}; <code>planner report &lt;folder&gt;"
             "</code> redraws the report from it), "
             + ", ".join(f"<code>{escape(t)}</code>" for t in TABLES)
             + ", the plots as PNG files and <code>report.md</code>.</p></div>"]
    return page(title(plan), subtitle, body)
