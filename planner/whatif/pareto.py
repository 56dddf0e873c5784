"""The cost/throughput Pareto front of a set of scenarios.

A point (cost c_i, throughput T_i) is *dominated* when another point is at least as
cheap and at least as fast, and strictly better in one of the two:
c_j <= c_i, T_j >= T_i, (c_j < c_i or T_j > T_i).  The front is the set of
non-dominated points; identical points are both on it (neither dominates the other).
"""

from __future__ import annotations

import numpy as np


def pareto_mask(cost: np.ndarray, value: np.ndarray) -> np.ndarray:
    """Boolean mask of the non-dominated points (minimise cost, maximise value)."""
    c = np.asarray(cost, dtype=float)[:, None]
    v = np.asarray(value, dtype=float)[:, None]
    # dom[i, j]: point j dominates point i
    dom = (c.T <= c) & (v.T >= v) & ((c.T < c) | (v.T > v))
    return ~dom.any(axis=1)
