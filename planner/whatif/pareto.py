"""The cost/throughput Pareto front of a set of scenarios.

A point (cost c_i, throughput T_i) is *dominated* when another point is at least as
cheap and at least as fast, and strictly better in one of the two:
c_j <= c_i, T_j >= T_i, (c_j < c_i or T_j > T_i).  The front is the set of
non-dominated points; identical points are both on it (neither dominates the other).

Only *comparable* scenarios share a front: those serving the base workload (a
throughput of another workload is another quantity) at the base prices (a $/h at other
prices is another currency -- a price sweep's cheaper point is not a cheaper choice
open to the buyer).  Every GPU type the base offers must have the base's price; a type
the base does not offer (an added type) brings its own price.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, cast

import numpy as np

if TYPE_CHECKING:
    from planner.whatif.run import WhatIfResult
    from planner.whatif.solve import Outcome

STUDY_TITLES = {
    "base": "Base",
    "budget": "Budget sweep",
    "equal_cost": "Homogeneous vs heterogeneous at equal cost",
    "price": "Price sweep",
    "add": "Adding a GPU type",
    "remove": "Removing a GPU type",
    "workload": "Workload mix",
    "marginal": "Marginal value",
}


def pareto_mask(cost: np.ndarray, value: np.ndarray) -> np.ndarray:
    """Boolean mask of the non-dominated points (minimise cost, maximise value)."""
    c = np.asarray(cost, dtype=float)[:, None]
    v = np.asarray(value, dtype=float)[:, None]
    # dom[i, j]: point j dominates point i
    dom = (c.T <= c) & (v.T >= v) & ((c.T < c) | (v.T > v))
    return cast(np.ndarray, ~dom.any(axis=1))  # (n,) for the (n, 1) inputs


def comparable(result: WhatIfResult, o: Outcome) -> bool:
    """Does ``o`` serve the base workload at the base prices (module docstring)?"""
    base = result.base.scenario
    if o.scenario.components != base.components:
        return False
    prices = {t.name: t.price_per_hour for t in base.supply}
    return all(math.isclose(prices.get(t.name, t.price_per_hour), t.price_per_hour,
                            rel_tol=1e-12) for t in o.scenario.supply)


def comparable_points(result: WhatIfResult) -> list[int]:
    """Indices (into ``result.outcomes``) of the comparable scenarios that serve
    anything: the candidates for the front."""
    return [k for k, o in enumerate(result.outcomes)
            if o.requests_per_s > 0 and comparable(result, o)]


def pareto_points(result: WhatIfResult) -> list[int]:
    """Indices (into ``result.outcomes``) of the Pareto front over the comparable
    scenarios (the base workload at the base prices, module docstring)."""
    idx = comparable_points(result)
    if not idx:
        return []
    mask = pareto_mask(np.array([result.outcomes[k].cost_per_hour for k in idx]),
                       np.array([result.outcomes[k].requests_per_s for k in idx]))
    return [k for k, m in zip(idx, mask, strict=True) if m]
