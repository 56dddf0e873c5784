"""``whatif.html``: a what-if study as one self-contained page, built from the same
pieces as the plan report (:mod:`planner.report.page`: style, tables, tiles, figures).

Order (the reader is buying GPUs): the answer -- the base plan, the marginal answer,
the best scenario of each study -- then one table per study with what it asks, the
Pareto front, the plots, the assumptions and caveats, the terms used.  Every string is
HTML-escaped; plots are embedded as ``data:`` URIs; the page loads nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape

from planner.report.answer import disaggregated_ttft_caveat, wide_ep_decode_caveat
from planner.report.page import figure, html_table, page, term, tiles
from planner.whatif.marginal import MarginalAnswer
from planner.whatif.pareto import STUDY_TITLES
from planner.whatif.plots import figure_texts
from planner.whatif.run import WhatIfResult
from planner.whatif.tables import (
    COLUMN_TERMS,
    GLOSSARY,
    PARETO_RULE,
    STUDY_INTROS,
    availability_text,
    capacity_text,
    front_groups,
    highlights,
    left_out_of_front,
    method_text,
    study_tables,
)

#: Study titles whose words a procurement reader may not know -> the glossary entry.
_TITLE_TERMS = {"budget": "budget sweep", "equal_cost": "equal cost", "price": "price sweep",
                "marginal": "marginal value"}


def _title(study: str) -> str:
    key = _TITLE_TERMS.get(study)
    return term(STUDY_TITLES[study], GLOSSARY[key] if key else None)


def _tiles(result: WhatIfResult) -> str:
    base = result.base
    label = ("requests/s, base plan (analytic)" if result.mode == "off" else
             "requests/s, base plan (`planner plan`'s headline)")
    items = [(f"{base.requests_per_s:,.2f}", label),
             (f"{base.cost_per_hour:,.2f} $/h", "cost of the base layout"),
             (f"{sum(base.gpus.values())} GPUs", "in the base layout"),
             (f"{base.usd_per_m_output_tokens:,.2f} $", "per million output tokens")]
    m = result.marginal
    if m is not None and m.best is not None and m.best.gain > m.tolerance:
        items.append((f"{m.best.gain:+,.2f} requests/s",
                      f"from the next {m.step:g} $/h: {m.best.label}"))
    return tiles(items)


def _answer(result: WhatIfResult) -> list[str]:
    by_title = {v: k for k, v in STUDY_TITLES.items()}
    items = []
    for label, text in highlights(result):
        study = by_title.get(label)
        head = _title(study) if study else escape(label)
        items.append(f"<li><b>{head}:</b> {escape(text)}</li>")
    return ['<h2 id="answer">The answer</h2><div class="card">', _tiles(result),
            f'<ul class="answer">{"".join(items)}</ul></div>']


def _studies(result: WhatIfResult) -> list[str]:
    out = []
    shown = set()
    marginal = result.marginal
    for study, _title_text, header, body in study_tables(result):
        shown.add(study)
        intro = STUDY_INTROS[study]
        if study == "marginal" and marginal is not None:
            intro = intro.replace("X", f"{marginal.step:g}")
        out += [f'<h2 id="{study}">{_title(study)}</h2>', f"<p>{escape(intro)}</p>",
                html_table((header, body), terms=COLUMN_TERMS)]
        if study == "marginal" and marginal is not None:
            out.append(_marginal_note(marginal))
    if marginal is not None and "marginal" not in shown:
        out += ['<h2 id="marginal">' + _title("marginal") + "</h2>",
                f"<p>{escape(STUDY_INTROS['marginal'].replace('X', f'{marginal.step:g}'))}"
                "</p>", _marginal_note(marginal)]
    return out


def _marginal_note(m: MarginalAnswer) -> str:
    return f"<p><b>Answer:</b> {escape(m.sentence)}</p>"


def _front(result: WhatIfResult) -> list[str]:
    groups = front_groups(result)
    if not groups:
        return []
    left = left_out_of_front(result)
    rows = [[f"{value:,.2f}", f"{cost:,.2f}", "; ".join(names)] for value, cost, names in groups]
    return [f'<h2 id="pareto">Cost/throughput {term("Pareto front", GLOSSARY["Pareto front"])}'
            "</h2>",
            "<p>The scenarios no other scenario beats on both cost and throughput: for "
            "each, nothing cheaper serves as many requests/s, so the choice between them "
            "is how much to spend. "
            f"{escape(PARETO_RULE[0].upper() + PARETO_RULE[1:])}"
            + (f"; {left} scenario{'s' if left != 1 else ''} left out" if left else "")
            + ".</p>",
            html_table((["requests/s", "$/h used", "scenarios at this point"], rows),
                       terms=COLUMN_TERMS)]


def _plots(result: WhatIfResult, pngs: Mapping[str, bytes]) -> list[str]:
    if not pngs:
        return []
    texts = figure_texts(result)
    return ['<h2 id="plots">Plots</h2>',
            *(figure(name, png, *texts[name]) for name, png in pngs.items())]


def caveats(result: WhatIfResult) -> list[str]:
    o = result.spec.solver
    out = [
        f"Availability: {availability_text(result)}.",
        method_text(result),
        capacity_text(result),
        "Figures come from the performance model and a simulation of each plan, not "
        "from measurements on GPUs.",
        f"Differences between scenarios below about {o.mip_gap + o.prune_tol:.1%} are "
        "within the solver's tolerances (and a closed-loop headline moves by its own "
        "search's step): treat such scenarios as equal.",
        f"Pareto front: {PARETO_RULE}.",
    ]
    out += disaggregated_ttft_caveat(result.spec.slo.ttft_ms,
                                     {r for x in result.outcomes for r in x.roles})
    out += wide_ep_decode_caveat([i for x in result.outcomes for i in x.islands()],
                                 where="in a scenario's plan")
    if result.study("workload"):
        out.append("The workload study's requests/s are of other workloads: they compare "
                   "with the base only loosely.")
    stopped = [x for x in result.outcomes if x.status == "time_limit"]
    if stopped:
        out.append(f"{len(stopped)} scenario(s) stopped at the time limit "
                   f"({o.time_limit:g} s); their gap to the proven bound is in the status "
                   "column.")
    return out


def whatif_html(result: WhatIfResult, pngs: Mapping[str, bytes]) -> str:
    """The page; ``pngs`` maps figure names (planner.whatif.plots.figures) to PNG bytes."""
    spec = result.spec
    subtitle = (f"model {spec.model} · base workload {spec.workload} · base budget "
                f"{spec.base_budget:g} $/h · {spec.availability} availability · "
                f"{len(result.outcomes)} scenarios, {result.problems} problems solved in "
                f"{result.seconds:.0f}\u00a0s")
    body = [*_answer(result), *_studies(result), *_front(result), *_plots(result, pngs),
            '<h2 id="caveats">Assumptions and caveats</h2><div class="caveats"><ul>',
            *(f"<li>{escape(c)}</li>" for c in caveats(result)), "</ul></div>",
            '<h2 id="terms">Terms used</h2><dl class="terms">',
            *(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in GLOSSARY.items()),
            "</dl>",
            '<h3 id="files">Files</h3><p>This page is self-contained. The study folder also '
            "holds <code>whatif.csv</code> (one row per scenario), <code>whatif.json</code> "
            "(the spec and every scenario with its layout), <code>whatif.md</code> and the "
            "plots as PNG files.</p>"]
    return page(f"What-if study: {spec.inventory.name}", subtitle, body)


__all__ = ["caveats", "whatif_html"]
