"""Figures of simulation runs (issue 8): latency CDFs, utilisation over time, KV transfer
time per tier.  Each ``*_figure`` is a pure function returning a matplotlib ``Figure``
(object API on the Agg canvas, no ``pyplot`` global state); each ``plot_*`` writes one
PNG atomically (temp file + ``os.replace``).  Runs are passed as ``{label: SimResult}``
(e.g. one per router) so several overlay on one figure.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from planner.core.atomic import write_bytes_atomic
from planner.sim.metrics import SimMetrics, _columns
from planner.sim.protocol import SimResult

_TIERS = ("node", "rack", "pod", "cross-pod")


def _figure(width: float, height: float) -> Figure:
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def save_png(fig: Figure, path: str | Path, dpi: int = 110) -> Path:
    """Write ``fig`` to ``path`` atomically; no timestamp metadata (reproducible bytes)."""
    write_bytes_atomic(Path(path), png_bytes(fig, dpi))
    return Path(path)


def latency_cdf_figure(runs: Mapping[str, SimResult]) -> Figure:
    """Empirical CDFs of TTFT, TPOT and E2E of the measured requests (arrival ≥ warm-up)
    of every run, one line per run; log-scaled time axes (latencies span decades)."""
    fig = _figure(12, 3.6)
    axes = fig.subplots(1, 3)
    for ax, (key, title) in zip(axes, (("ttft", "TTFT"), ("tpot", "TPOT"), ("e2e", "E2E")),
                                strict=True):
        for label, res in runs.items():
            c = _columns(res)
            x = c[key][(c["arrival"] >= res.warmup_s) & np.isfinite(c[key]) & (c[key] > 0)]
            if x.size == 0:
                continue
            x = np.sort(x)
            ax.step(x, np.arange(1, x.size + 1) / x.size, where="post", label=label)
        ax.set_xscale("log")
        ax.set_xlabel(f"{title} (s)")
        ax.set_ylim(0, 1.02)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("fraction of requests")
    if axes[0].get_legend_handles_labels()[0]:
        axes[0].legend(loc="lower right", fontsize="small")
    return fig


def utilisation_figure(result: SimResult) -> Figure:
    """Busy fraction of every island per time bin as a heat map, islands named on the
    y axis, the warm-up edge dashed."""
    tl = np.asarray(result.util_timeline, dtype=float)
    names = [f"{isl.name} ({isl.role})" for isl in result.cluster.islands]
    n = max(len(names), 1)
    fig = _figure(10, 1.2 + 0.28 * n)
    ax = fig.subplots()
    if tl.ndim == 2 and tl.size:
        t_max = tl.shape[1] * result.util_bin_s
        im = ax.imshow(tl, aspect="auto", interpolation="nearest", cmap="viridis", vmin=0,
                       vmax=1, extent=(0.0, t_max, tl.shape[0] - 0.5, -0.5))
        fig.colorbar(im, ax=ax, label="busy fraction")
        if 0 < result.warmup_s < t_max:
            ax.axvline(result.warmup_s, color="w", ls="--", lw=1)
    ax.set_yticks(range(len(names)), names, fontsize="small" if n < 24 else "x-small")
    ax.set_xlabel("simulated time (s)")
    ax.set_title(f"island utilisation -- {result.router}")
    return fig


def kv_tier_figure(metrics: Mapping[str, SimMetrics]) -> Figure:
    """Mean KV transfer time per locality tier, grouped bars per run, the transfer count
    written above each bar."""
    fig = _figure(7, 3.6)
    ax = fig.subplots()
    k = max(len(metrics), 1)
    width = 0.8 / k
    x = np.arange(4)
    for j, (label, m) in enumerate(metrics.items()):
        y = np.nan_to_num(np.asarray(m.kv_mean_s, dtype=float) * 1e3)
        bars = ax.bar(x - 0.4 + width * (j + 0.5), y, width, label=label)
        for b, cnt in zip(bars, m.kv_count, strict=True):
            if cnt:
                ax.annotate(str(cnt), (b.get_x() + b.get_width() / 2, b.get_height()),
                            ha="center", va="bottom", fontsize="x-small")
    ax.set_xticks(x, _TIERS)
    ax.set_ylabel("mean KV transfer time (ms)")
    if metrics:
        ax.legend(fontsize="small")
    return fig


def png_bytes(fig: Figure, dpi: int = 110) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})
    return buf.getvalue()


def run_pngs(result: SimResult, metrics: SimMetrics) -> dict[str, bytes]:
    """The PNGs of one run by file name (the caller publishes them atomically)."""
    label = result.router
    return {"latency_cdf.png": png_bytes(latency_cdf_figure({label: result})),
            "utilisation.png": png_bytes(utilisation_figure(result)),
            "kv_tiers.png": png_bytes(kv_tier_figure({label: metrics}))}


def plot_latency_cdfs(runs: Mapping[str, SimResult], path: str | Path) -> Path:
    return save_png(latency_cdf_figure(runs), path)


def plot_utilisation(result: SimResult, path: str | Path) -> Path:
    return save_png(utilisation_figure(result), path)


def plot_kv_tiers(metrics: Mapping[str, SimMetrics], path: str | Path) -> Path:
    return save_png(kv_tier_figure(metrics), path)


__all__ = ["kv_tier_figure", "latency_cdf_figure", "plot_kv_tiers", "plot_latency_cdfs",
           "plot_utilisation", "png_bytes", "run_pngs", "save_png", "utilisation_figure"]
