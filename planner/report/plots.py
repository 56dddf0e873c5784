"""The report's figures, each a pure function ``plan dict -> Figure``.

* :func:`convergence_figure` — the search's best-so-far against proposal index and
  wall time (the style of thesis Figs. 5.5-5.12 for one trial), every proposal as a
  dot, the exact optimum as a dashed line when it was computed.
* :func:`layout_figure` — one bar per group of identical islands, length = GPUs,
  colour = GPU type, hatching = role, labelled with its parallel configuration and
  batch.
* :func:`assignment_figure` — islands × ranges heatmaps of the time shares
  ``x_ij`` for the prefill and the decode islands (thesis Fig. 5.2), under the
  workload's range probabilities p_j.
* :func:`per_length_figure` — per input-length range, its share of the requests and,
  per phase, the plan's capacity there over its demand (1 = full, above = spare); the
  per-length figures of thesis Fig. 5.4 stay in per_length.csv.

matplotlib's object API on the Agg canvas, never ``pyplot``: no global state, no GUI.
"""

from __future__ import annotations

import io
import math
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from planner.report.facts import (
    arr,
    deployment,
    fmt,
    gpu_types,
    island_kinds,
    island_name,
    length,
    money,
    num,
    target_mode,
)
from planner.run.deployment import DeployedIsland

Plan = Mapping[str, Any]

_PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
            "#7f7f7f", "#bcbd22", "#17becf")
_PHASE_COLORS = ("#2ca02c", "#1f77b4", "#9467bd", "#17becf")  # never red: red is "exact"
_HATCH = {"prefill": "///", "decode": "", "both": "..", "idle": "xx"}
_ROLE_ORDER = ("prefill", "both", "decode", "idle")


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

def island_groups(plan: Plan) -> list[tuple[DeployedIsland, int]]:
    """Identical islands (GPU, size, role, parallelism, batch) as (first island, count),
    prefill first, then colocated, decode, idle; inside a role, larger groups first."""
    out = [(members[0], len(members)) for members in island_kinds(plan)]
    return sorted(out, key=lambda g: (_ROLE_ORDER.index(g[0].role), -g[1] * g[0].size))


def layout_figure(plan: Plan) -> Figure:
    """One bar per group of identical islands: length = the group's GPUs, colour = GPU
    type, hatching = role; the label says how many islands of how many GPUs, with their
    parallelism and batch -- readable whether the plan has 3 islands or 300."""
    colors = gpu_colors(plan)
    groups = island_groups(plan)
    n = max(1, len(groups))
    fig = _figure(11, min(12.0, 1.5 + 0.45 * n))
    ax = fig.subplots()
    total = sum(isl.size * k for isl, k in groups)
    count = sum(k for _isl, k in groups)
    fig.suptitle(f"Island layout: {total} GPUs in {count} islands ({len(groups)} kinds), "
                 f"{money(plan['summary']['cost_per_hour'])}")
    if not groups:
        ax.text(0.5, 0.5, "no islands", ha="center", va="center", transform=ax.transAxes)
        return fig
    gpus = np.array([isl.size * k for isl, k in groups], dtype=float)
    y = np.arange(len(groups))[::-1]  # first group on top
    for yk, (isl, _k), width in zip(y, groups, gpus, strict=True):
        face = to_rgba(colors[isl.gpu.name], 0.35 if isl.role == "idle" else 0.85)
        ax.barh(yk, width, color=face, hatch=_HATCH[isl.role], edgecolor="black",
                linewidth=0.8)
        what = (f"{isl.role} · {isl.config} · batch {isl.batch}"
                if isl.role != "idle" else "idle")
        ax.text(width + gpus.max() * 0.01, yk, what, va="center", fontsize=8)
    ax.set_yticks(y, [f"{k} × {isl.size} {isl.gpu.name}" for isl, k in groups],
                  fontsize=9 if len(groups) <= 30 else 7)
    ax.set_xlim(0, gpus.max() * 1.45)
    ax.set_xlabel("GPUs (all islands of the group)")
    ax.grid(axis="x", alpha=0.3)
    used = [t for t in colors if any(isl.gpu.name == t for isl, _k in groups)]
    roles = [r for r in _ROLE_ORDER if any(isl.role == r for isl, _k in groups)]
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
    islands = deployment(plan).every
    J = len(plan["ranges"]["prob"])
    # colocated ("both") islands take requests at arrival, beside the prefill islands
    rows = {ph: [i for i, isl in enumerate(islands)
                 if isl.role == ph or (ph == "prefill" and isl.role == "both")]
            for ph in ("prefill", "decode")}
    heights = [1.4] + [max(1, len(rows[ph])) * 0.36 + 0.6 for ph in rows]
    fig = _figure(11, min(16.0, sum(heights) + 1.4))
    axes = fig.subplots(3, 1, height_ratios=heights, sharex=True)
    fig.suptitle("Assignment: share of each island's time per input-length range")
    prob = arr(plan["ranges"]["prob"])
    axes[0].bar(np.arange(J), prob, width=0.9, color="0.45")
    axes[0].set_ylabel("p_j", rotation=0, labelpad=14)
    axes[0].set_title("workload probability of each range", fontsize=9, loc="left")
    shares = {ph: np.array([np.asarray(islands[i].shares, float) for i in rows[ph]]
                           ).reshape(-1, J)
              for ph in rows}
    vmax = max([1e-9] + [float(np.nanmax(m)) for m in shares.values() if m.size])
    image = None
    for ax, ph in zip(axes[1:], rows, strict=True):
        m = shares[ph]
        ax.set_title("prefill and colocated islands" if ph == "prefill" and any(
            islands[i].role == "both" for i in rows[ph]) else f"{ph} islands",
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


# --- capacity per length range -----------------------------------------------------------

def _range_labels(plan: Plan) -> list[str]:
    def k(v: float) -> str:  # 880, 4,400, 10.6k: distinct for neighbouring ranges
        return f"{round(v):,}" if v < 10_000 else f"{v / 1000:.1f}k"

    start, end = arr(plan["ranges"]["start"]), arr(plan["ranges"]["end"])
    return [f"{k(a)}–{k(b)}" for a, b in zip(start, end, strict=True)]


def range_headroom(plan: Plan) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """(share of requests per range, {phase: capacity ÷ demand per range}).

    A range's capacity in a phase is what the islands' time on it serves at full
    resolution (the evaluated per-length rates summed over the range, planner.inner.
    evaluator); its demand is its share of the requests at the rate the whole plan
    sustains with every range in proportion, ``min`` over phases and ranges of capacity
    ÷ share.  So the fullest range reads exactly 1 and every other range shows its
    headroom; a uniform rescaling of the plan (the closed loop's) leaves it unchanged.
    NaN where a range receives no requests."""
    pl = plan["per_length"]
    lengths = arr(pl["length"])
    pmf = np.nan_to_num(arr(pl["pmf"]))
    start, end = arr(plan["ranges"]["start"]), arr(plan["ranges"]["end"])
    J = len(start)
    j = np.searchsorted(end, lengths, side="right")
    inside = (j < J) & (lengths >= start[np.minimum(j, J - 1)])
    share = np.bincount(j[inside], weights=pmf[inside], minlength=J)[:J]
    caps = {ph: np.bincount(j[inside], weights=np.nan_to_num(arr(pl[f"eval_{ph}"]))[inside],
                            minlength=J)[:J] for ph in ("prefill", "decode")}
    served = share > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        per = {ph: np.where(served, c / np.where(served, share, 1.0), np.nan)
               for ph, c in caps.items()}
    rate = min((float(np.nanmin(v)) for v in per.values() if np.isfinite(v).any()),
               default=math.nan)
    return share, {ph: v / rate for ph, v in per.items()}


def per_length_figure(plan: Plan) -> Figure:
    """Per input-length range: how often it is asked for (top), and in each phase the
    capacity the plan gives it over what it receives (1 = full, above 1 = spare,
    shaded), on every range of the workload (the axis ends where the workload does)."""
    fig = _figure(11, 7.0)
    if len(plan["per_length"]["length"]) < 2 or not len(plan["ranges"]["start"]):
        fig.text(0.5, 0.5, "no per-length evaluation in this plan", ha="center")
        return fig
    share, ratio = range_headroom(plan)
    J = len(share)
    x = np.arange(J)
    axes = fig.subplots(3, 1, sharex=True, height_ratios=[1.0, 1.4, 1.4])
    fig.suptitle(f"Where the plan is full: capacity ÷ demand per input-length range at "
                 f"{fmt(num(plan['summary']['requests_per_s']))} requests/s")
    axes[0].bar(x, 100 * share, width=0.85, color="0.55")
    axes[0].set_ylabel("% of requests")
    axes[0].grid(axis="y", alpha=0.3)
    top = max(1.5, float(np.nanmax(np.concatenate(list(ratio.values())))) * 1.08
              if any(np.isfinite(v).any() for v in ratio.values()) else 1.5)
    for ax, (phase, r) in zip(axes[1:], ratio.items(), strict=True):
        ok = np.isfinite(r)
        ax.bar(x[ok], np.minimum(r[ok], 1.0), width=0.85, color="tab:blue", alpha=0.8,
               label="used by the demand")
        ax.bar(x[ok], np.clip(r[ok] - 1.0, 0.0, None), bottom=1.0, width=0.85,
               color="tab:green", alpha=0.5, label="spare capacity")
        ax.axhline(1.0, color="black", linewidth=1.0, linestyle="--")
        ax.set_ylim(0, top)
        ax.set_ylabel("capacity ÷ demand")
        ax.set_title(f"{phase} islands", fontsize=10, loc="left")
        ax.grid(axis="y", alpha=0.3)
    axes[1].legend(fontsize=8, loc="upper right")
    labels = _range_labels(plan)
    step = max(1, math.ceil(J / 40))
    axes[-1].set_xticks(x[::step], labels[::step], rotation=60, fontsize=7, ha="right")
    axes[-1].set_xlabel("input length (tokens) of each range")
    return fig


FIGURES: dict[str, tuple[Callable[[Plan], Figure], str, str]] = {
    # file name: (figure, title, one-line caption saying how to read it)
    "islands.png": (layout_figure, "Island layout",
                    "One bar per kind of island (“30 × 2 H100”: thirty islands of two "
                    "GPUs): length = GPUs, colour = GPU type, hatched = prefill, solid = "
                    "decode; the label gives the role, parallelism (tp-dp-ep) and batch."),
    "assignment.png": (assignment_figure, "Which island serves which lengths",
                       "Each row is an island, each column an input-length range; darker "
                       "= more of that island's time goes to that range (top: how likely "
                       "each range is)."),
    "per_length.png": (per_length_figure, "Where the plan is full",
                       "Top: how often each range of prompt lengths is asked for. Below, "
                       "per phase: the capacity the plan gives the range over what it "
                       "receives; 1 (dashed) = full, green above it = spare capacity."),
    "convergence.png": (convergence_figure, "Search convergence",
                        "Black: best plan found so far after each proposal (left) and over "
                        "time (right); dots: every proposal; red dashed: the exact optimum, "
                        "when computed."),
}


def render_pngs(plan: Plan) -> dict[str, bytes]:
    """File name -> PNG bytes for every figure in :data:`FIGURES`.

    Overflow warnings are silenced: a plan.json edited to absurd (but finite, checked)
    figures draws absurd axes, which is the honest picture, not a reason to print
    numpy's warnings under ``planner report``."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return {name: png_bytes(make(plan)) for name, (make, _t, _c) in FIGURES.items()}
