"""Identical islands pooled into groups, and their range tables scaled for the solver.

The max-rate formulations (planner.inner.max_rate, its branch-and-cut variant
planner.inner.max_rate_bc) both work on groups of identical islands -- same spec, same
tables -- rather than on islands: the LP has one column per group and range, and the
group's size k multiplies its capacity.  Shared here so neither imports the other.
"""

from __future__ import annotations

import numpy as np

from planner.inner.problem import InnerProblem


def group_islands(problem: InnerProblem, usable: np.ndarray, aggregate: bool) -> list[np.ndarray]:
    """Usable islands partitioned into groups of identical ones (spec and tables)."""
    idx = np.flatnonzero(usable)
    if not aggregate:
        return [np.array([i]) for i in idx]
    groups: dict[tuple, list[int]] = {}
    for i in idx:
        key = (problem.islands[i], problem.prefill_rps[i].tobytes(),
               problem.decode_rps[i].tobytes(), problem.colocated[i].tobytes())
        groups.setdefault(key, []).append(int(i))
    return [np.array(v) for v in groups.values()]


def pooled_tables(problem: InnerProblem, usable: np.ndarray, aggregate: bool):
    """Groups of identical islands and their tables over the active ranges, scaled by the
    largest throughput so that coefficients are O(1) for the LP solver.

    Returns (members, active range indices, group sizes k, scale, bP, bD, p).
    """
    members, active, k, scale, bp, bd, _ba, p = pooled_tables3(problem, usable, aggregate)
    return members, active, k, scale, bp, bd, p


def pooled_tables3(problem: InnerProblem, usable: np.ndarray, aggregate: bool):
    """:func:`pooled_tables` with the colocated table too (zeros without one)."""
    members = group_islands(problem, usable, aggregate)
    active = np.flatnonzero(problem.range_prob > 0)
    first = np.array([m[0] for m in members])
    k = np.array([len(m) for m in members], dtype=float)
    scale = float(max(problem.prefill_rps.max(), problem.decode_rps.max(),
                      problem.colocated.max()))
    bp = problem.prefill_rps[np.ix_(first, active)] / scale
    bd = problem.decode_rps[np.ix_(first, active)] / scale
    ba = problem.colocated[np.ix_(first, active)] / scale
    return members, active, k, scale, bp, bd, ba, problem.range_prob[active]


__all__ = ["group_islands", "pooled_tables", "pooled_tables3"]
