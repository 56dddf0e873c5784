"""The report's figures, each a pure function ``plan dict -> Figure``.

* :func:`convergence_figure` — the search's best-so-far against proposal index and
  wall time (the style of thesis Figs. 5.5-5.12 for one trial), every proposal as a
  dot, the exact optimum as a dashed line when it was computed.
* :func:`layout_figure` — one bar per island, length = GPUs, colour = GPU type,
  hatching = role, labelled with its parallel configuration and batch.
* :func:`assignment_figure` — islands × ranges heatmaps of the time shares
  ``x_ij`` for the prefill and the decode islands (thesis Fig. 5.2), under the
  workload's range probabilities p_j.
* :func:`per_length_figure` — prefill and decode requests/s per input length, the
  solver's *model* view vs the *evaluated* one, against the demand ``p(s)·T``
  (thesis Fig. 5.4).

matplotlib's object API on the Agg canvas, never ``pyplot``: no global state, no GUI.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from planner.report.facts import (
    arr,
    fmt,
    gpu_types,
    island_name,
    length,
    money,
    num,
    target_mode,
)

Plan = Mapping[str, Any]

_PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
            "#7f7f7f", "#bcbd22", "#17becf")
_PHASE_COLORS = ("#2ca02c", "#1f77b4", "#9467bd", "#17becf")  # never red: red is "exact"
_HATCH = {"prefill": "///", "decode": "", "both": "..", "idle": "xx"}
_ROLE_ORDER = ("prefill", "both", "decode", "idle")
# Above this many lengths the per-length curves are averaged over bins: 8,000 points per
# line is illegible at report width and bloats the PNG.
_MAX_POINTS = 800


def gpu_colors(plan: Plan) -> dict[str, str]:
    """A fixed colour per GPU type (inventory order), the same in every figure."""
    return {t: _PALETTE[k % len(_PALETTE)] for k, t in enumerate(gpu_types(plan))}


def _figure(width: float, height: float) -> Figure:
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def png_bytes(fig: Figure, dpi: int = 100) -> bytes:
    buf = io.BytesIO()
    # no timestamp/software metadata: the same plan gives byte-identical PNGs
    fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})
    return buf.getvalue()


# --- convergence ------------------------------------------------------------------------

def _exact_line(plan: Plan) -> float:
    if target_mode(plan):
        exact = plan["baselines"].get("exact") or {}
        return num(exact.get("cost_per_hour"))
    exact = plan["summary"].get("exact") or {}
    return num(exact.get("requests_per_s"))


def convergence_figure(plan: Plan) -> Figure:
    search = plan["search"]
    hist = search["history"]
    target = target_mode(plan)
    fig = _figure(11, 4.2)
    ax_i, ax_t = fig.subplots(1, 2, sharey=True)
    ylabel = "$/h (lower is better)" if target else "requests/s sustained"
    fig.suptitle(f"Search convergence: {search.get('name', '?')}, "
                 f"{len(hist)} proposals" + (f", {search.get('cache_hits')} cached"
                                             if search.get("cache_hits") else ""))
    if not hist:
        for ax in (ax_i, ax_t):
            ax.text(0.5, 0.5, "no search history recorded", ha="center", va="center",
                    transform=ax.transAxes)
        return fig
    idx = arr([h.get("index") for h in hist])
    wall = arr([h.get("wall_time") for h in hist])
    best = arr([h.get("best") for h in hist])
    seen = arr([h.get("cost" if target else "value") for h in hist])
    feasible = np.array([bool(h.get("feasible")) for h in hist])
    phases = [str(h.get("phase") or "search") for h in hist]
    exact = _exact_line(plan)
    for ax, x, xlabel in ((ax_i, idx, "proposal index"), (ax_t, wall, "wall time (s)")):
        for k, phase in enumerate(dict.fromkeys(phases)):
            sel = np.array([p == phase for p in phases]) & feasible
            ax.scatter(x[sel], seen[sel], s=14, alpha=0.6, color=_PHASE_COLORS[k % 4],
                       label=f"proposal ({phase})", zorder=2)
        bad = ~feasible
        if bad.any():
            ax.scatter(x[bad], np.where(np.isfinite(seen[bad]), seen[bad], 0.0), s=16,
                       marker="x", color="0.55", label="infeasible", zorder=2)
        ax.step(x, best, where="post", color="black", linewidth=1.8, label="best so far",
                zorder=3)
        if math.isfinite(exact):
            ax.axhline(exact, color="tab:red", linestyle="--", linewidth=1.2,
                       label=f"exact optimum ({fmt(exact)})", zorder=1)
        ax.set_xlabel(xlabel)
        ax.grid(alpha=0.3)
    ax_i.set_ylabel(ylabel)
    ax_i.legend(fontsize=8, loc="lower right" if not target else "upper right")
    return fig


# --- island layout ----------------------------------------------------------------------

def _island_order(plan: Plan) -> list[int]:
    isl = plan["islands"]
    return sorted(range(len(isl)), key=lambda i: (_ROLE_ORDER.index(isl[i]["role"]), i))


def layout_figure(plan: Plan) -> Figure:
    islands = plan["islands"]
    colors = gpu_colors(plan)
    order = _island_order(plan)
    n = max(1, len(order))
    fig = _figure(11, min(14.0, 1.6 + 0.42 * n))
    ax = fig.subplots()
    total = sum(int(islands[i]["size"]) for i in order)
    fig.suptitle(f"Island layout: {total} GPUs in {len(order)} islands, "
                 f"{money(plan['summary']['cost_per_hour'])}")
    if not order:
        ax.text(0.5, 0.5, "no islands", ha="center", va="center", transform=ax.transAxes)
        return fig
    sizes = np.array([num(islands[i]["size"]) for i in order])
    y = np.arange(len(order))[::-1]  # first island on top
    for yk, i, size in zip(y, order, sizes, strict=True):
        isl = islands[i]
        face = to_rgba(colors[str(isl["gpu"])], 0.35 if isl["role"] == "idle" else 0.85)
        ax.barh(yk, size, color=face, hatch=_HATCH[isl["role"]], edgecolor="black",
                linewidth=0.8)
        if len(order) <= 60:
            what = (f"{isl['role']}: {isl['config']} · batch {isl['batch']}"
                    if isl["role"] != "idle" else "idle")
            ax.text(size + sizes.max() * 0.01, yk, what, va="center", fontsize=8)
    ax.set_yticks(y, [island_name(i, islands[i]) for i in order],
                  fontsize=9 if len(order) <= 30 else 6)
    ax.set_xlim(0, sizes.max() * 1.4)
    ax.set_xlabel("GPUs in the island")
    ax.grid(axis="x", alpha=0.3)
    used = [t for t in colors if any(str(islands[i]["gpu"]) == t for i in order)]
    roles = [r for r in _ROLE_ORDER if any(islands[i]["role"] == r for i in order)]
    handles = ([Patch(facecolor=colors[t], edgecolor="black", label=t) for t in used]
               + [Patch(facecolor="white", edgecolor="black", hatch=_HATCH[r], label=r)
                  for r in roles])
    ax.legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


# --- assignment heatmap -----------------------------------------------------------------

def _range_ticks(ax, plan: Plan) -> None:  # noqa: ANN001
    start = arr(plan["ranges"]["start"])
    J = len(start)
    step = max(1, math.ceil(J / 16))
    ticks = np.arange(0, J, step)
    ax.set_xticks(ticks, [length(start[j]) for j in ticks], rotation=60, fontsize=7)


def assignment_figure(plan: Plan) -> Figure:
    islands = plan["islands"]
    J = len(plan["ranges"]["prob"])
    # colocated ("both") islands take requests at arrival, beside the prefill islands
    rows = {ph: [i for i, isl in enumerate(islands)
                 if isl["role"] == ph or (ph == "prefill" and isl["role"] == "both")]
            for ph in ("prefill", "decode")}
    heights = [1.4] + [max(1, len(rows[ph])) * 0.36 + 0.6 for ph in rows]
    fig = _figure(11, min(16.0, sum(heights) + 1.4))
    axes = fig.subplots(3, 1, height_ratios=heights, sharex=True)
    fig.suptitle("Assignment: share of each island's time per input-length range")
    prob = arr(plan["ranges"]["prob"])
    axes[0].bar(np.arange(J), prob, width=0.9, color="0.45")
    axes[0].set_ylabel("p_j", rotation=0, labelpad=14)
    axes[0].set_title("workload probability of each range", fontsize=9, loc="left")
    shares = {ph: np.array([arr(islands[i]["shares"]) for i in rows[ph]]).reshape(-1, J)
              for ph in rows}
    vmax = max([1e-9] + [float(np.nanmax(m)) for m in shares.values() if m.size])
    image = None
    for ax, ph in zip(axes[1:], rows, strict=True):
        m = shares[ph]
        ax.set_title("prefill and colocated islands" if ph == "prefill" and any(
            islands[i]["role"] == "both" for i in rows[ph]) else f"{ph} islands",
            fontsize=9, loc="left")
        if not m.size:
            ax.text(0.5, 0.5, f"no {ph} islands", ha="center", va="center",
                    transform=ax.transAxes)
            ax.set_yticks([])
            continue
        image = ax.imshow(m, aspect="auto", cmap="Blues", vmin=0.0, vmax=vmax,
                          interpolation="nearest")
        ax.set_yticks(np.arange(len(rows[ph])),
                      [island_name(i, islands[i]) for i in rows[ph]], fontsize=8)
    if image is not None:
        fig.colorbar(image, ax=list(axes[1:]), label="share of the island's time",
                     shrink=0.9)
    _range_ticks(axes[-1], plan)
    axes[-1].set_xlabel("input-length range (first length of the range)")
    return fig


# --- per-length throughput --------------------------------------------------------------

def _binned(xs: np.ndarray, cols: list[np.ndarray], max_points: int
            ) -> tuple[np.ndarray, list[np.ndarray], int]:
    """Mean of each column over consecutive bins of ``width`` lengths (x: bin centre)."""
    width = max(1, math.ceil(len(xs) / max_points))
    if width == 1:
        return xs, cols, 1
    n = len(xs) // width * width  # the ragged tail bin is dropped (< width lengths)
    x = xs[:n].reshape(-1, width).mean(axis=1)
    return x, [c[:n].reshape(-1, width).mean(axis=1) for c in cols], width


def per_length_figure(plan: Plan, max_points: int = _MAX_POINTS) -> Figure:
    pl = plan["per_length"]
    rate = num(plan["summary"]["requests_per_s"])
    lengths = arr(pl["length"])
    if len(lengths) < 2:
        fig = _figure(11, 2.0)
        fig.text(0.5, 0.5, "no per-length evaluation in this plan", ha="center")
        return fig
    pmf = np.nan_to_num(arr(pl["pmf"]))
    demand = pmf * (rate if math.isfinite(rate) else 0.0)
    # Crop the empty tail: lengths past the 99.9th percentile of the demand carry <0.1%
    # of it and would squeeze the informative part into the left edge.
    cdf = np.cumsum(pmf)
    top = len(lengths) if cdf[-1] <= 0 else int(np.searchsorted(cdf, 0.999 * cdf[-1])) + 1
    top = min(len(lengths), max(top, 2))
    cols = [np.nan_to_num(arr(pl[k]))[:top] for k in
            ("model_prefill", "eval_prefill", "model_decode", "eval_decode")]
    x, (mp, ep, md, ed, dm), width = _binned(lengths[:top], cols + [demand[:top]], max_points)
    fig = _figure(11, 6.2)
    axes = fig.subplots(2, 1, sharex=True)
    fig.suptitle(f"Throughput per input length vs. demand at {fmt(rate)} requests/s")
    ends = arr(plan["ranges"]["end"])
    for ax, phase, model, ev in ((axes[0], "prefill", mp, ep), (axes[1], "decode", md, ed)):
        for e in ends[ends < x[-1]]:
            ax.axvline(e, color="0.85", linewidth=0.6, zorder=0)
        ax.plot(x, dm, color="black", linestyle="--", linewidth=1.3,
                label="workload demand p(s)·T", zorder=3)
        ax.plot(x, model, color="tab:blue", linewidth=1.1, label="model (solver, per range)")
        ax.plot(x, ev, color="tab:orange", linewidth=1.1, alpha=0.9,
                label="evaluated (per length)")
        ax.set_title(f"{phase}", fontsize=10, loc="left")
        ax.set_ylabel("requests/s per length")
        ax.grid(alpha=0.3)
        ax.set_ylim(bottom=0)
    axes[0].legend(fontsize=8, loc="upper right")
    note = f", mean over {width}-length bins" if width > 1 else ""
    axes[1].set_xlabel(f"input length (tokens){note}; grey lines: range boundaries")
    return fig


FIGURES: dict[str, tuple[Callable[[Plan], Figure], str, str]] = {
    # file name: (figure, title, one-line caption saying how to read it)
    "islands.png": (layout_figure, "Island layout",
                    "One bar per island: length = GPUs, colour = GPU type, hatched = "
                    "prefill, solid = decode; the label gives its parallel configuration "
                    "(tp-dp-ep) and batch."),
    "assignment.png": (assignment_figure, "Which island serves which lengths",
                       "Each row is an island, each column an input-length range; darker "
                       "= more of that island's time goes to that range (top: how likely "
                       "each range is)."),
    "per_length.png": (per_length_figure, "Throughput per input length",
                       "Where the coloured lines sit on the dashed demand curve the plan "
                       "serves that length as often as it arrives; above = spare capacity, "
                       "below = the bottleneck."),
    "convergence.png": (convergence_figure, "Search convergence",
                        "Black: best plan found so far after each proposal (left) and over "
                        "time (right); dots: every proposal; red dashed: the exact optimum, "
                        "when computed."),
}


def render_pngs(plan: Plan) -> dict[str, bytes]:
    """File name -> PNG bytes for every figure in :data:`FIGURES`."""
    return {name: png_bytes(make(plan)) for name, (make, _t, _c) in FIGURES.items()}
