"""The what-if figures, each a pure function of the result (matplotlib's object API on
the Agg canvas, as planner.report.plots):

* ``throughput_vs_budget.png`` -- requests/s against budget, one line per option (the
  mix and each type alone), budget study;
* ``cost_per_token_vs_budget.png`` -- $ per million output tokens against budget;
* ``pareto.png`` -- every scenario comparable with the base (its workload and prices,
  planner.whatif.pareto) as a point ($/h, requests/s), coloured by study, the
  non-dominated ones joined and ringed; the others are left out and counted in a note;
* ``prices.png`` -- requests/s at each swept type's sampled price factors, as markers
  only (nothing was computed between them), on an axis from zero.

Honest axes: throughput axes start at zero, so a 6 % change looks like one.  Labels
hold "$" ("$/h") and matplotlib would read a pair of them as mathematics, so every text
of a figure with a "$" in it is drawn with mathtext off (:func:`_no_math`).
"""

from __future__ import annotations

import math
import textwrap

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text

from planner.report.plots import png_bytes
from planner.whatif.pareto import STUDY_TITLES, comparable_points, pareto_points
from planner.whatif.run import WhatIfResult, scenario_label
from planner.whatif.scenarios import MIX

_PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
            "#7f7f7f", "#bcbd22", "#17becf")


def _figure(width: float, height: float) -> Figure:
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _no_math(fig: Figure) -> Figure:
    """Every text of ``fig`` with a "$" in it drawn as written, not as mathtext
    ("+100 $/h: 50 more H800 (2.00 $/h each)" holds two dollars)."""
    for t in fig.findobj(Text):
        if "$" in t.get_text():
            t.set_parse_math(False)
    return fig


def _budget_lines(result: WhatIfResult, metric) -> dict[str, list[tuple[float, float]]]:
    lines: dict[str, list[tuple[float, float]]] = {}
    for o in result.study("budget"):
        y = metric(o)
        if math.isfinite(y) and y > 0:
            lines.setdefault(o.scenario.option, []).append((o.scenario.budget, y))
    return {k: sorted(v) for k, v in lines.items()}


def _budget_figure(result: WhatIfResult, metric, ylabel: str, title: str) -> Figure | None:
    lines = _budget_lines(result, metric)
    if not lines:
        return None
    fig = _figure(7.5, 4.5)
    ax = fig.add_subplot()
    singles = [o for o in lines if o != MIX]
    for k, option in enumerate(singles):
        xs, ys = zip(*lines[option], strict=True)
        ax.plot(xs, ys, marker="o", color=_PALETTE[k % len(_PALETTE)], lw=1.5, label=option)
    if MIX in lines:  # on top, dashed: it often coincides with the best single type
        xs, ys = zip(*lines[MIX], strict=True)
        ax.plot(xs, ys, marker="o", mfc="none", ms=9, color="black", ls="--", lw=2,
                label="mix (all types)", zorder=5)
    budgets = sorted({o.scenario.budget for o in result.study("budget")})
    if max(budgets) >= 4 * min(budgets):
        ax.set_xscale("log", base=2)
        ax.set_xticks(budgets, [f"{b:g}" for b in budgets])
        ax.minorticks_off()
    ax.set_ylim(bottom=0)
    ax.set_xlabel("budget, $/h")
    ax.set_ylabel(ylabel)
    ax.set_title(f"{title} ({result.spec.availability} availability)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _no_math(fig)


def _left_out(result: WhatIfResult) -> str:
    """Which scenarios the front leaves out, e.g. "4 price-sweep, 3 workload"."""
    kept = set(comparable_points(result))
    counts: dict[str, int] = {}
    for k, o in enumerate(result.outcomes):
        if o.requests_per_s > 0 and k not in kept:
            what = {"price": "price-sweep", "workload": "workload"}.get(
                o.scenario.study, STUDY_TITLES.get(o.scenario.study, o.scenario.study))
            counts[what] = counts.get(what, 0) + 1
    return ", ".join(f"{n} {what}" for what, n in counts.items())


def pareto_figure(result: WhatIfResult) -> Figure | None:
    pts = [(k, result.outcomes[k]) for k in comparable_points(result)]
    if not pts:
        return None
    front = set(pareto_points(result))
    fig = _figure(7.5, 5.2)
    ax = fig.add_subplot()
    studies = [s for s in STUDY_TITLES if any(o.scenario.study == s for _, o in pts)]
    for k, study in enumerate(studies):
        sel = [o for _, o in pts if o.scenario.study == study]
        ax.scatter([o.cost_per_hour for o in sel], [o.requests_per_s for o in sel], s=22,
                   color=_PALETTE[k % len(_PALETTE)], alpha=0.8, label=STUDY_TITLES[study])
    fr = sorted((result.outcomes[k] for k in front), key=lambda o: o.cost_per_hour)
    ax.plot([o.cost_per_hour for o in fr], [o.requests_per_s for o in fr], color="black",
            lw=1.2, drawstyle="steps-post",
            label="Pareto front (base prices and workload only)")
    ax.scatter([o.cost_per_hour for o in fr], [o.requests_per_s for o in fr], s=90,
               facecolors="none", edgecolors="black", lw=1.4)
    # one label per distinct point: several scenarios are often the same problem
    labels: dict[tuple[float, float], list[str]] = {}
    for o in fr:
        labels.setdefault((o.cost_per_hour, o.requests_per_s), []).append(
            scenario_label(o.scenario))
    for (x, y), texts in labels.items():
        more = f" (+{len(texts) - 1} more)" if len(texts) > 1 else ""
        ax.annotate(textwrap.fill(texts[0] + more, 36), (x, y), fontsize=6, xytext=(6, -4),
                    textcoords="offset points", va="top")
    ax.set_xlim(0, max(o.cost_per_hour for _, o in pts) * 1.3)  # room for the labels
    ax.set_ylim(0, max(o.requests_per_s for _, o in pts) * 1.08)
    ax.set_xlabel("cost of the layout, $/h")
    ax.set_ylabel("sustained throughput, requests/s")
    ax.set_title("Cost/throughput of the scenarios at the base prices and workload")
    left = _left_out(result)
    if left:
        ax.text(0.99, 0.02, f"not drawn (other prices or workload): {left} scenarios",
                transform=ax.transAxes, ha="right", va="bottom", fontsize=7, color="#555")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    return _no_math(fig)


_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


def prices_figure(result: WhatIfResult) -> Figure | None:
    rows = result.study("price")
    if not rows:
        return None
    fig = _figure(7, 4.5)
    ax = fig.add_subplot()
    base = result.base.requests_per_s
    ax.axhline(base, color="grey", ls="--", lw=1,
               label=f"base plan (inventory prices): {base:,.2f} requests/s")
    gpus = list(dict.fromkeys(o.scenario.params["gpu"] for o in rows))
    top = base
    for k, gpu in enumerate(gpus):
        pts = sorted((o.scenario.params["factor"], o.requests_per_s) for o in rows
                     if o.scenario.params["gpu"] == gpu)
        xs, ys = zip(*pts, strict=True)
        # markers only: these are the prices solved, nothing is known between them
        ax.plot(xs, ys, ls="none", marker=_MARKERS[k % len(_MARKERS)], ms=8,
                color=_PALETTE[k % len(_PALETTE)], label=f"{gpu} price changed")
        for x, y in pts:
            change = f"{y / base - 1:+.1%}" if base > 0 else ""
            below = y < base * (1 - 0.01)  # keep the label off the dashed base line
            ax.annotate(change, (x, y), fontsize=7, textcoords="offset points",
                        xytext=(7, -13 - 9 * k if below else 5 + 9 * k),
                        color=_PALETTE[k % len(_PALETTE)])
        top = max(top, *ys)
    ax.plot([1.0], [base], ls="none", marker="D", ms=6, color="black",
            label="base plan: every type at 1.00x")
    ax.set_ylim(0, top * 1.18)
    factors = sorted({o.scenario.params["factor"] for o in rows} | {1.0})
    span = max(factors[-1] - factors[0], 0.2)
    ax.set_xlim(factors[0] - 0.1 * span, factors[-1] + 0.15 * span)
    ax.set_xlabel("price ÷ inventory price (1.0 = the base)")
    ax.set_ylabel("sustained throughput, requests/s (axis from 0)")
    ax.set_title(f"Price sweep at {result.spec.base_budget:g} $/h: each marker a price solved")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower left")
    return _no_math(fig)


def figure_texts(result: WhatIfResult) -> dict[str, tuple[str, str]]:
    """(title, caption) of each figure, for whatif.html."""
    avail = result.spec.availability
    left = _left_out(result)
    return {
        "throughput_vs_budget.png": (
            "Throughput vs budget",
            "Sustained requests/s at each budget of the sweep, all GPU types mixed (dashed) "
            "and each type alone; the points are the budgets solved, the lines only join "
            f"them. Axis from zero. {avail.capitalize()} availability"
            + (": a budget above the inventory's cost buys nothing more, so the lines go "
               "flat." if avail == "inventory" else ".")),
        "cost_per_token_vs_budget.png": (
            "Cost per output token vs budget",
            "Dollars per million output tokens at the sustained rate, per budget and "
            "option (lower is cheaper per token). Axis from zero."),
        "pareto.png": (
            "Cost/throughput and the Pareto front",
            "Each point is a scenario: the $/h of its layout and the requests/s it serves. "
            "The ringed points joined by the black staircase are the Pareto front: no other "
            "scenario is both cheaper and faster. Only scenarios at the base prices serving "
            "the base workload are compared"
            + (f"; left out: {left} scenarios (their $/h is at other prices or their "
               "requests/s of another workload)." if left else ".")),
        "prices.png": (
            "Price sensitivity",
            "Requests/s of the mixed fleet at each sampled price of one GPU type (as a "
            "factor of its inventory price), at the base budget. Markers are the prices "
            "solved; nothing was computed between them. The axis starts at zero; each "
            "marker is labelled with its change from the base plan (dashed)."),
    }


def figures(result: WhatIfResult) -> dict[str, bytes]:
    """PNG bytes by file name, only the figures the study has data for."""
    made = {
        "throughput_vs_budget.png": _budget_figure(
            result, lambda o: o.requests_per_s, "sustained throughput, requests/s",
            "Throughput vs budget"),
        "cost_per_token_vs_budget.png": _budget_figure(
            result, lambda o: o.usd_per_m_output_tokens, "$ per million output tokens",
            "Cost per output token vs budget"),
        "pareto.png": pareto_figure(result),
        "prices.png": prices_figure(result),
    }
    return {name: png_bytes(fig) for name, fig in made.items() if fig is not None}
