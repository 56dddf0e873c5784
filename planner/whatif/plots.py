"""The what-if figures, each a pure function of the result (matplotlib's object API on
the Agg canvas, as planner.report.plots):

* ``throughput_vs_budget.png`` -- requests/s against budget, one line per option (the
  mix and each type alone), budget study;
* ``cost_per_token_vs_budget.png`` -- $ per million output tokens against budget;
* ``pareto.png`` -- every scenario of the base workload as a point ($/h, requests/s),
  coloured by study, the non-dominated ones joined and ringed;
* ``prices.png`` -- requests/s against each swept type's price factor.
"""

from __future__ import annotations

import math

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from planner.report.plots import png_bytes
from planner.whatif.pareto import STUDY_TITLES, pareto_points
from planner.whatif.run import WhatIfResult
from planner.whatif.scenarios import MIX

_PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
            "#7f7f7f", "#bcbd22", "#17becf")


def _figure(width: float, height: float) -> Figure:
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
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
    ax.set_xlabel("budget, $/h")
    ax.set_ylabel(ylabel)
    ax.set_title(f"{title} ({result.spec.availability} availability)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def pareto_figure(result: WhatIfResult) -> Figure | None:
    base = result.base.scenario.components
    pts = [(k, o) for k, o in enumerate(result.outcomes)
           if o.scenario.components == base and o.requests_per_s > 0]
    if not pts:
        return None
    front = set(pareto_points(result))
    fig = _figure(7.5, 5)
    ax = fig.add_subplot()
    studies = [s for s in STUDY_TITLES if any(o.scenario.study == s for _, o in pts)]
    for k, study in enumerate(studies):
        sel = [o for _, o in pts if o.scenario.study == study]
        ax.scatter([o.cost_per_hour for o in sel], [o.requests_per_s for o in sel], s=22,
                   color=_PALETTE[k % len(_PALETTE)], alpha=0.8, label=STUDY_TITLES[study])
    fr = sorted((result.outcomes[k] for k in front), key=lambda o: o.cost_per_hour)
    ax.plot([o.cost_per_hour for o in fr], [o.requests_per_s for o in fr], color="black",
            lw=1.2, drawstyle="steps-post", label="Pareto front")
    ax.scatter([o.cost_per_hour for o in fr], [o.requests_per_s for o in fr], s=90,
               facecolors="none", edgecolors="black", lw=1.4)
    # one label per distinct point: several scenarios are often the same problem
    labels: dict[tuple[float, float], list[str]] = {}
    for o in fr:
        text = o.scenario.name + ("" if o.scenario.option == MIX else f", {o.scenario.option}")
        labels.setdefault((o.cost_per_hour, o.requests_per_s), []).append(text)
    for (x, y), texts in labels.items():
        more = f" (+{len(texts) - 1} more)" if len(texts) > 1 else ""
        ax.annotate(texts[0] + more, (x, y), fontsize=6, xytext=(5, -9),
                    textcoords="offset points")
    ax.set_xlabel("cost of the layout, $/h")
    ax.set_ylabel("sustained throughput, requests/s")
    ax.set_title("Cost/throughput of every scenario (base workload)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def prices_figure(result: WhatIfResult) -> Figure | None:
    rows = result.study("price")
    if not rows:
        return None
    fig = _figure(7, 4.5)
    ax = fig.add_subplot()
    gpus = list(dict.fromkeys(o.scenario.params["gpu"] for o in rows))
    for k, gpu in enumerate(gpus):
        pts = sorted((o.scenario.params["factor"], o.requests_per_s) for o in rows
                     if o.scenario.params["gpu"] == gpu)
        xs, ys = zip(*pts, strict=True)
        ax.plot(xs, ys, marker="o", color=_PALETTE[k % len(_PALETTE)], label=gpu)
    ax.axhline(result.base.requests_per_s, color="grey", ls="--", lw=1, label="base")
    ax.set_xlabel("price ÷ inventory price")
    ax.set_ylabel("sustained throughput, requests/s")
    ax.set_title(f"Price sweep at {result.spec.base_budget:g} $/h")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return fig


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
