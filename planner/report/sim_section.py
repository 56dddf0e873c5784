"""The report's "Simulated latency" section, drawn from ``simulation.json`` records
(:mod:`planner.sim.results`) so that ``planner report`` re-renders it without the
per-request data.

* :func:`latency_cdf_figure` -- TTFT, TPOT and end-to-end latency CDFs, one line per
  simulation run (router, rate), from the records' 101 quantiles;
* :func:`utilisation_figure` -- busy fraction of every island over simulated time for
  the most recent record of the heaviest load.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from planner.report.plots import _PALETTE, _figure, png_bytes

Record = Mapping[str, Any]

SIM_FIGURES = {
    "sim_latency.png": ("Simulated latency CDFs",
                        "TTFT, time per output token and end-to-end latency of every "
                        "request after the warm-up, one line per simulation run "
                        "(planner simulate)."),
    "sim_utilisation.png": ("Island utilisation over time (simulation)",
                            "Busy fraction of each island per time bin in the "
                            "simulation run with the highest offered rate."),
}


def _label(r: Record) -> str:
    s = r["settings"]
    return f"{s['router']} @ {s['rate']} ({r['offered_rps']:,.0f} req/s)"


def latency_cdf_figure(records: Sequence[Record]) -> Figure:
    fig = _figure(10.0, 3.4)
    axes = fig.subplots(1, 3)
    p = np.linspace(0, 1, 101)
    for k, r in enumerate(records):
        q = r.get("quantiles") or {}
        color = _PALETTE[k % len(_PALETTE)]
        for ax, key, scale in zip(axes, ("ttft", "tpot", "e2e"), (1.0, 1e3, 1.0),
                                  strict=True):
            values = np.asarray(q.get(key) or [], dtype=float)
            if values.size == p.size:
                ax.plot(values * scale, p, color=color, label=_label(r))
    for ax, title in zip(axes, ("TTFT (s)", "TPOT (ms)", "end-to-end (s)"), strict=True):
        ax.set_xlabel(title)
        ax.set_xscale("log")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("fraction of requests")
    if records:
        axes[2].legend(fontsize=7, loc="lower right")
    return fig


def utilisation_figure(records: Sequence[Record]) -> Figure:
    fig = _figure(10.0, 3.6)
    ax = fig.subplots()
    if not records:
        return fig
    r = max(records, key=lambda x: x["offered_rps"])
    u = r.get("utilisation") or {}
    tl = np.asarray(u.get("timeline") or [[0.0]], dtype=float)
    bin_s = float(u.get("bin_s") or 1.0)
    im = ax.imshow(tl, aspect="auto", interpolation="nearest", vmin=0, vmax=1,
                   cmap="viridis", extent=(0, tl.shape[1] * bin_s, tl.shape[0] - 0.5, -0.5))
    names = u.get("islands") or []
    if len(names) <= 40:
        ax.set_yticks(range(len(names)), names, fontsize=6)
    ax.set_xlabel("simulated time (s)")
    ax.set_title(_label(r), fontsize=9)
    fig.colorbar(im, ax=ax, label="busy fraction")
    return fig


def sim_pngs(records: Sequence[Record]) -> dict[str, bytes]:
    """The section's PNGs ({} without records)."""
    if not records:
        return {}
    return {"sim_latency.png": png_bytes(latency_cdf_figure(records)),
            "sim_utilisation.png": png_bytes(utilisation_figure(records))}


INTRO = ("The plan's islands replayed in the request-level simulator (`planner simulate`): "
         "prefill batching, KV transfers over the network, continuous-batching decode with "
         "KV limits. *completed req/s* is what the islands delivered; compare it with the "
         "offered rate and the plan's analytic capacity ({capacity} req/s).")


__all__ = ["INTRO", "SIM_FIGURES", "latency_cdf_figure", "sim_pngs", "utilisation_figure"]
