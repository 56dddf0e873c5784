"""Convergence statistics and plots across trials (seed 002 §5.3 "Plot Description").

The thesis runs each outer-loop configuration several times (trials) and plots, per
proposal index i, the mean best-so-far throughput across trials with its min-max range
and +-1 standard deviation, plus one line at the maximum over all trials and all
configurations (Figs. 5.5-5.12).  :func:`summarise` computes exactly those series
from :class:`~planner.outer.protocol.SearchResult` histories; :func:`plot_convergence`
draws them (one panel, one colour per configuration) against proposals or wall time.

Trials of unequal length are padded with their last best (a finished search keeps its
best).  In target mode the best-so-far is $/h and +inf until the target is met; those
entries are left out of the statistics (NaN) rather than dragging the mean to inf.
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from planner.core.atomic import write_bytes_atomic
from planner.outer.protocol import SearchResult


@dataclass(frozen=True)
class Summary:
    index: np.ndarray  # proposal number, 1-based
    mean: np.ndarray
    std: np.ndarray
    low: np.ndarray  # min over trials
    high: np.ndarray  # max over trials
    wall_time: np.ndarray  # mean wall time (s) at each proposal
    trials: int


def best_matrix(results: Sequence[SearchResult]) -> tuple[np.ndarray, np.ndarray]:
    """(trials x n) best-so-far and wall-time matrices, padded with each trial's last
    value; non-finite bests become NaN."""
    if not results:
        raise ValueError("no results to summarise")
    n = max(len(r.history) for r in results)
    best = np.full((len(results), n), np.nan)
    wall = np.full((len(results), n), np.nan)
    for i, r in enumerate(results):
        b = np.array([h.best for h in r.history], dtype=float)
        w = np.array([h.wall_time for h in r.history], dtype=float)
        if b.size:
            best[i, :b.size], best[i, b.size:] = b, b[-1]
            wall[i, :w.size], wall[i, w.size:] = w, w[-1]
    best[~np.isfinite(best)] = np.nan
    return best, wall


def summarise(results: Sequence[SearchResult]) -> Summary:
    best, wall = best_matrix(results)
    with warnings.catch_warnings():  # all-NaN columns: nothing met the target yet
        warnings.simplefilter("ignore", RuntimeWarning)
        return Summary(index=np.arange(1, best.shape[1] + 1), mean=np.nanmean(best, 0),
                       std=np.nanstd(best, 0), low=np.nanmin(best, 0),
                       high=np.nanmax(best, 0), wall_time=np.nanmean(wall, 0),
                       trials=len(results))


def plot_convergence(groups: Mapping[str, Sequence[SearchResult]], path: Path, *,
                     x: str = "proposals", title: str = "",
                     ylabel: str = "best R_total (requests/s)") -> None:
    """Mean best-so-far per configuration with min-max and +-1 std bands, and a dashed
    line at the overall maximum; written atomically as PNG (or SVG/PDF by suffix)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if x not in ("proposals", "time"):
        raise ValueError("x must be 'proposals' or 'time'")
    fig, ax = plt.subplots(figsize=(7, 4.2))
    overall = -np.inf
    for k, (label, results) in enumerate(groups.items()):
        s = summarise(results)
        xs = s.index if x == "proposals" else s.wall_time
        colour = f"C{k}"
        ax.plot(xs, s.mean, color=colour, label=f"{label} (mean of {s.trials})")
        ax.fill_between(xs, s.low, s.high, color=colour, alpha=0.12, linewidth=0)
        ax.fill_between(xs, s.mean - s.std, s.mean + s.std, color=colour, alpha=0.25,
                        linewidth=0)
        if np.isfinite(s.high).any():
            overall = max(overall, float(np.nanmax(s.high)))
    if np.isfinite(overall):
        ax.axhline(overall, color="k", linestyle="--", linewidth=0.8,
                   label=f"max over all trials: {overall:.4g}")
    ax.set_xlabel("proposals evaluated" if x == "proposals" else "wall time (s)")
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    path = Path(path)
    buf = io.BytesIO()
    fig.savefig(buf, format=path.suffix.lstrip(".") or "png", dpi=120)
    plt.close(fig)
    write_bytes_atomic(path, buf.getvalue())
