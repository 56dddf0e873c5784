"""Length ranges: the tuple set R of thesis §4.6.3 ("Solver Resolution").

The thesis partitions the sorted lengths into ranges of width ``W``: for
``0 <= k < floor(|S| / W)``, ``start_k = kW``, ``end_k = kW + W`` (exclusive),
``mid_k = start_k + floor(W/2)`` and ``p_k = sum_{start_k <= s < end_k} p(s|w)``; the
inner loop then benchmarks each island once per range at ``mid_k`` and weighs it by
``p_k``.

Deviation, deliberately: ``k < floor(|S|/W)`` drops the last partial range whenever
``W`` does not divide ``|S|``, so the ``p_k`` would not sum to 1 and the longest
requests would have no island -- while the inner MILP of §4.8.1 *assumes*
``sum_j p_j = 1``.  Here the ranges cover every length ``0..max_len``: a final partial
range ``[kW, max_len + 1)`` takes the remainder, with representative
``start + floor((end - start) / 2)`` so it stays inside the range.  Ranges therefore
partition the support and their probabilities sum to 1 (to rounding).

``method="quantile"`` is the alternative equal-probability binning: ``count`` ranges
whose boundaries are quantiles of ``p(s|w)``, so each carries about ``1/count`` of the
traffic (fewer when a single length holds more than ``1/count``: such boundaries
coincide and are merged).  Its representative is also the midpoint.

Both are cached per (pmf fingerprint, width, count, method, drop_empty): the thesis
(§4.8.2) caches "Formulate Ranges" per ``W`` because every inner-loop call re-uses them.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import cast

import numpy as np

from planner.core.errors import PlannerError
from planner.workload.model import Workload

#: Number of ranges when neither ``width`` nor ``count`` is given.
DEFAULT_RANGE_COUNT = 32
METHODS = ("width", "quantile")

_CACHE: OrderedDict[tuple, Ranges] = OrderedDict()
_CACHE_SIZE = 256
_LOCK = threading.Lock()


@dataclass(frozen=True, eq=False)
class Ranges:
    """Ranges as parallel read-only arrays of shape ``(J,)``.

    ``start``/``end`` are integer lengths, ``end`` exclusive; ``mid`` is the
    representative length; ``prob`` the workload probability of the range.
    """

    mid: np.ndarray
    prob: np.ndarray
    start: np.ndarray
    end: np.ndarray
    method: str = "width"
    width: int | None = None

    def __post_init__(self) -> None:
        for name, dtype in (("mid", np.int64), ("prob", np.float64), ("start", np.int64),
                            ("end", np.int64)):
            arr = np.array(getattr(self, name), dtype=dtype)
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)

    def __len__(self) -> int:
        return int(self.mid.size)

    def index_of(self, lengths: np.ndarray | int) -> np.ndarray:
        """Range index of each length; -1 for lengths no range contains."""
        s = np.asarray(lengths)
        idx = np.searchsorted(self.start, s, side="right") - 1
        safe = np.clip(idx, 0, max(len(self) - 1, 0))
        inside = (idx >= 0) & (s < self.end[safe])
        return np.where(inside, idx, -1)

    def as_tuples(self) -> list[tuple[int, float, int, int]]:
        """``[(range_mid, p, range_start, range_end), ...]`` as written in §4.6.3."""
        return [(int(m), float(p), int(s), int(e))
                for m, p, s, e in zip(self.mid, self.prob, self.start, self.end, strict=True)]


def make_ranges(workload: Workload, width: int | None = None, *, count: int | None = None,
                method: str = "width", drop_empty: bool = False) -> Ranges:
    """The ranges of ``workload`` (§4.6.3), cached.

    ``method="width"``: fixed width ``width``, or ``ceil((max_len + 1) / count)`` when only
    ``count`` is given (default ``count`` = :data:`DEFAULT_RANGE_COUNT`).
    ``method="quantile"``: ``count`` equal-probability ranges (``width`` must be None).
    ``drop_empty`` removes zero-probability ranges (then lengths between ranges map to
    -1 in :meth:`Ranges.index_of`); by default every range is kept so the ranges
    partition ``0..max_len``.
    """
    if method not in METHODS:
        raise PlannerError(f"unknown range method {method!r}; use one of {', '.join(METHODS)}")
    for label, value in (("width", width), ("count", count)):
        if value is not None and (isinstance(value, bool) or int(value) != value or value < 1):
            raise PlannerError(f"range {label} must be a positive integer, got {value!r}")
    if method == "quantile" and width is not None:
        raise PlannerError("quantile ranges take a count, not a width")
    if method == "width" and width is not None and count is not None:
        raise PlannerError("give either a range width or a range count, not both")
    n = workload.max_len + 1
    key: tuple[str, str, int | None, int | None, bool]
    if method == "width":
        w = int(width) if width is not None else math.ceil(n / (count or DEFAULT_RANGE_COUNT))
        key = (workload.pmf_fingerprint, "width", w, None, drop_empty)
    else:
        w = None
        key = (workload.pmf_fingerprint, "quantile", None, int(count or DEFAULT_RANGE_COUNT),
               drop_empty)
    with _LOCK:
        if key in _CACHE:
            _CACHE.move_to_end(key)
            return _CACHE[key]
    if method == "width":
        edges = np.append(np.arange(0, n, w, dtype=np.int64), n)
        # A trailing partial range narrower than half a width (e.g. [8000, 8001) for
        # W = 250 over 0..8000) joins the range before it: the thesis's
        # floor(|S| / W) ranges drop those lengths, which would leave them unserved, and
        # a sliver range of probability ~1e-7 makes the MILP numerically fragile.
        if len(edges) > 2 and edges[-1] - edges[-2] < cast(int, w) / 2:  # w set for "width"
            edges = np.delete(edges, -2)
    else:
        edges = quantile_edges(workload.cdf, int(count or DEFAULT_RANGE_COUNT))
    ranges = _from_edges(workload.pmf, edges, method, w, drop_empty)
    with _LOCK:
        _CACHE[key] = ranges
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return ranges


def quantile_edges(cdf: np.ndarray, count: int) -> np.ndarray:
    """Boundaries ``0 = e_0 < ... < e_J = len(cdf)`` with ``P(S < e_k) ~= k / count``.

    ``e_k`` is one past the smallest length whose cdf reaches ``k / count``, so the
    range ending there contains the length that completes the k-th share.
    """
    levels = np.arange(1, count) / count
    inner = np.searchsorted(cdf, levels - 1e-12, side="left") + 1
    edges = np.unique(np.concatenate(([0], inner, [cdf.size])))
    return edges[edges <= cdf.size]


def _from_edges(pmf: np.ndarray, edges: np.ndarray, method: str, width: int | None,
                drop_empty: bool) -> Ranges:
    start, end = edges[:-1], edges[1:]
    csum = np.concatenate(([0.0], np.cumsum(pmf)))
    prob = csum[end] - csum[start]
    prob = np.maximum(prob, 0.0)
    if drop_empty:
        keep = prob > 0
        start, end, prob = start[keep], end[keep], prob[keep]
    mid = start + (end - start) // 2
    return Ranges(mid=mid, prob=prob / prob.sum(), start=start, end=end, method=method,
                  width=width)
