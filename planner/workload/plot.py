"""Histogram figure of a workload's input and output lengths (like thesis Fig. 5.13).

Uses matplotlib's object API with the Agg canvas directly, never ``pyplot``: no global
backend switch, no GUI, safe in tests and servers.
"""

from __future__ import annotations

import io
import math
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from planner.core.atomic import write_bytes_atomic
from planner.workload.model import Workload

_BARS = 100


def _binned(pmf: np.ndarray, bars: int = _BARS) -> tuple[np.ndarray, np.ndarray, int]:
    """Sum a pmf over 0..n into ~``bars`` equal-width bins; (left edges, probs, width)."""
    top = int(np.flatnonzero(pmf)[-1])
    width = max(1, math.ceil((top + 1) / bars))
    n_bins = math.ceil((top + 1) / width)
    padded = np.zeros(n_bins * width)
    padded[: top + 1] = pmf[: top + 1]
    return np.arange(n_bins) * width, padded.reshape(n_bins, width).sum(axis=1), width


def _panel(ax, pmf: np.ndarray, title: str, color: str, mean: float) -> None:  # noqa: ANN001
    left, prob, width = _binned(pmf)
    ax.bar(left, prob, width=width, align="edge", color=color, edgecolor="none")
    cdf = np.cumsum(pmf)
    for q, style in ((0.5, ":"), (0.99, "-.")):
        s = int(np.searchsorted(cdf, q - 1e-12))
        ax.axvline(s, color="black", linestyle=style, linewidth=0.9, label=f"p{int(q * 100)} = {s}")
    ax.axvline(mean, color="black", linestyle="--", linewidth=0.9, label=f"mean = {mean:.0f}")
    ax.set_title(title)
    ax.set_xlabel("tokens")
    ax.set_ylabel(f"probability per {width}-token bin")
    ax.legend(fontsize=8, frameon=False)


def plot_workload(workload: Workload, path: str | Path) -> Path:
    """Write a PNG with the input-length and output-length histograms; returns the path."""
    w = workload
    path = Path(path)
    fig = Figure(figsize=(11, 4), layout="constrained")
    FigureCanvasAgg(fig)
    ax_in, ax_out = fig.subplots(1, 2)
    _panel(ax_in, w.pmf, "Context (input) tokens", "tab:blue", w.mean_input)
    if w.decode_pmf is not None:
        _panel(ax_out, w.decode_pmf, "Generated (output) tokens", "tab:orange", w.decode_mean)
    else:
        ax_out.set_axis_off()
        ax_out.text(0.5, 0.5, f"Generated (output) tokens\n\nmean = {w.decode_mean:g}\n"
                    f"max = {w.decode_max}\n(no output-length distribution)",
                    ha="center", va="center", transform=ax_out.transAxes)
    subtitle = []
    if w.rate_rps is not None:
        subtitle.append(f"rate {w.rate_rps:.3g} req/s")
    if w.cv is not None:
        subtitle.append(f"CV {w.cv:.3g}")
    if w.clipped_mass:
        subtitle.append(f"clipped above {w.max_len}: {w.clipped_mass:.3%}")
    fig.suptitle(w.name + (f"  ({', '.join(subtitle)})" if subtitle else ""))
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    write_bytes_atomic(path, buf.getvalue())
    return path
