"""A cheap, known layout objective with the shape of the real one (tests, benchmarks).

Each island is either prefill or decode, like the inner loop of seed 002 (§4.8).  For
an island of g GPUs of type t:

    prefill rate  P(t, g) = p_t g^0.85                       (small islands are more
                                                              efficient per GPU)
    decode rate   D(t, g) = d_t g * g / (g + h_t), g >= m_t   (0 below m_t: the weights
                                                              do not fit)

and the layout's value is R_total = max over role splits of min(sum_prefill P,
sum_decode D).  The split is searched over the prefixes of the islands sorted by P / D
(the optimum of the fractional relaxation, so the value is exact for it and a tight
lower bound for the integral split).  A layout without a usable prefill and decode
island is infeasible (value 0).

This reproduces the two facts the thesis's search exploits (§5.3.3): prefill prefers
many small islands, decode prefers fewer large ones, so the best layout mixes sizes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from planner.outer.protocol import Layout, Score, SearchSpace, TypeSupply


@dataclass(frozen=True)
class SyntheticType:
    prefill_per_gpu: float  # p_t
    decode_per_gpu: float  # d_t
    decode_half_size: float  # h_t
    decode_min_size: int  # m_t


# Made-up rates loosely ordered like the real GPUs (H20: little compute, much memory).
DEFAULT_TYPES = {
    "H100": SyntheticType(1.0, 0.8, 8.0, 4),
    "H800": SyntheticType(0.95, 0.75, 8.0, 4),
    "H200": SyntheticType(1.1, 1.2, 6.0, 2),
    "B200": SyntheticType(2.4, 1.9, 6.0, 2),
    "H20": SyntheticType(0.3, 0.6, 4.0, 2),
}


def default_space(budget: float | None = 512.0, target_rps: float | None = None,
                  min_island: int = 1) -> SearchSpace:
    """Three types whose full inventory costs $1120/h (so a $512 budget binds)."""
    return SearchSpace(types=(TypeSupply("H100", 128, 2.5, min_island),
                              TypeSupply("H200", 128, 3.5, min_island),
                              TypeSupply("B200", 64, 5.5, min_island)),
                       budget=budget, target_rps=target_rps)


def thesis_space(budget: float | None = 512.0, target_rps: float | None = None,
                 min_island: int = 2) -> SearchSpace:
    """Seed 002 Table 5.1 inventory (a): 64 H200 ($4), 64 H800 ($2), 128 H20 ($1) —
    $512/h in all, so a $512/h budget uses everything (no procurement)."""
    return SearchSpace(types=(TypeSupply("H200", 64, 4.0, min_island),
                              TypeSupply("H800", 64, 2.0, min_island),
                              TypeSupply("H20", 128, 1.0, min_island)),
                       budget=budget, target_rps=target_rps)


@dataclass
class SyntheticObjective:
    """Callable layout -> :class:`Score`; counts its calls; optional per-call delay."""

    space: SearchSpace
    types: dict[str, SyntheticType] = field(default_factory=lambda: dict(DEFAULT_TYPES))
    delay: float = 0.0  # seconds per call, to mimic an inner-loop solve
    calls: int = 0
    seen: list[Layout] = field(default_factory=list)

    def value(self, layout: Layout) -> float:
        if not layout:
            return 0.0
        spec = [self.types[t] for t, _ in layout]
        g = np.array([s for _, s in layout], dtype=float)
        p = np.array([s.prefill_per_gpu for s in spec]) * g ** 0.85
        h = np.array([s.decode_half_size for s in spec])
        m = np.array([s.decode_min_size for s in spec])
        d = np.where(g >= m, np.array([s.decode_per_gpu for s in spec]) * g * g / (g + h), 0)
        ratio = np.where(d > 0, p / np.where(d > 0, d, 1), np.inf)
        order = np.argsort(-ratio, kind="stable")
        cp = np.cumsum(p[order])[:-1]  # prefill = first k islands, k = 1..n-1
        cd = d.sum() - np.cumsum(d[order])[:-1]
        if cp.size == 0:
            return 0.0
        return float(np.max(np.minimum(cp, cd)))

    def __call__(self, layout: Layout) -> Score:
        self.calls += 1
        self.seen.append(layout)
        if self.delay > 0:
            time.sleep(self.delay)
        v = self.value(layout)
        return Score(value=v, cost_per_hour=self.space.cost(layout), feasible=v > 0,
                     detail={"layout": layout})
