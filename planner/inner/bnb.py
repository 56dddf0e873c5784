"""A lean exact branch-and-bound over HiGHS LP relaxations, with optional lazy cuts.

Used in two ways:

* :func:`solve_bnb` solves any :class:`~planner.inner.model.SparseMILP` (backend
  ``"bnb"``); it suits models with few integer columns.
* :func:`branch_and_check` is the engine of the weight-free solver's decomposition
  (:mod:`planner.inner.max_rate_bc`): the LP holds only a *master* model, and at every
  integral node a callback evaluates the candidate exactly and may add globally valid
  cuts (rows), after which the node is re-solved.

Search (maximisation): solve the root LP; dive depth-first, rounding the most
fractional integer column towards its nearest integer, until a first incumbent; then
best-first on the parent's LP bound.  A node is pruned when its bound is at most
``incumbent + gap * |incumbent| + 1e-9``, so a finished search is optimal to relative
``gap``.  One HiGHS instance is kept alive and re-solved after each bound change
(hot-started simplex), which costs ~0.1 ms on a master LP.  On time-out the best
incumbent is returned with status ``"time_limit"`` and the open gap.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from planner.inner.highs import new_highs
from planner.inner.model import SolveOutcome, SparseMILP

INT_TOL = 1e-6

#: evaluate(x) -> (exact value, payload, cuts); cuts = list of (lower, upper, cols, vals)
Evaluate = Callable[[np.ndarray], tuple[float, Any, list[tuple[float, float, np.ndarray,
                                                                 np.ndarray]]]]


@dataclass
class BnBResult:
    status: str  # optimal | time_limit | no_solution | infeasible | error
    x: np.ndarray | None
    value: float
    payload: Any
    nodes: int
    gap: float
    message: str = ""


def new_lp(model: SparseMILP):
    """A silent single-thread HiGHS instance holding ``model``'s LP relaxation."""
    import highspy

    h = new_highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    # Presolve would be redone at every node and would discard the warm basis.
    h.setOptionValue("presolve", "off")
    h.passModel(
        model.n_cols, model.n_rows, int(model.value.shape[0]),
        int(highspy.MatrixFormat.kRowwise), int(highspy.ObjSense.kMaximize), 0.0,
        model.cost, model.col_lower, model.col_upper, model.row_lower, model.row_upper,
        model.row_start, model.col_index, model.value,
        np.zeros(model.n_cols, dtype=np.int32),
    )
    return h


def branch_and_check(
    h,
    icols: np.ndarray,
    lo0: np.ndarray,
    hi0: np.ndarray,
    *,
    gap: float,
    deadline: float = math.inf,
    max_nodes: int = 1_000_000,
    evaluate: Evaluate | None = None,
) -> BnBResult:
    """Maximise the LP in ``h`` with columns ``icols`` integer, from bounds ``lo0..hi0``.

    Without ``evaluate`` an integral LP point is a solution worth its LP value.  With
    it, the point is worth ``evaluate``'s exact value, and the returned cuts are added
    before the node is solved again (they must be valid for every integer point).
    """
    import highspy

    S = highspy.HighsModelStatus
    icols = np.asarray(icols, dtype=np.int32)
    failures: list[str] = []

    def lp(lo: np.ndarray, hi: np.ndarray) -> tuple[float, np.ndarray | None]:
        h.changeColsBounds(len(icols), icols, lo, hi)
        h.run()
        st = h.getModelStatus()
        if st != S.kOptimal:
            if st not in (S.kInfeasible, S.kUnboundedOrInfeasible):
                failures.append(h.modelStatusToString(st))
            return -math.inf, None
        return h.getInfo().objective_function_value, np.asarray(h.getSolution().col_value)

    best_val, best_x, best_payload = -math.inf, None, None
    heap: list[tuple[float, int, int, np.ndarray, np.ndarray]] = []
    counter = 0
    nodes = 0

    def cutoff() -> float:
        return best_val + gap * abs(best_val) + 1e-9 if best_x is not None else -math.inf

    leaf_bound = -math.inf
    pending: tuple[np.ndarray, np.ndarray, int] | None = (lo0, hi0, 0)
    diving = True
    while pending is not None or heap:
        if time.perf_counter() > deadline or nodes >= max_nodes:
            break
        if pending is None:
            while heap and -heap[0][0] <= cutoff():
                heapq.heappop(heap)
            if not heap:
                break
            _, _, depth, lo, hi = heapq.heappop(heap)
        else:
            lo, hi, depth = pending
            pending = None
        nodes += 1
        val, x = lp(lo, hi)
        while x is not None and val > cutoff():
            v = x[icols]
            frac = np.abs(v - np.rint(v))
            k = int(np.argmax(frac)) if frac.size else 0
            if frac.size and frac[k] > INT_TOL:
                down_hi = hi.copy()
                down_hi[k] = math.floor(v[k])
                up_lo = lo.copy()
                up_lo[k] = math.ceil(v[k])
                children = [(lo, down_hi), (up_lo, hi)]
                if v[k] - math.floor(v[k]) > 0.5:  # nearer integer first
                    children.reverse()
                for c_lo, c_hi in children[1:] if diving else children:
                    counter += 1
                    heapq.heappush(heap, (-val, counter, depth + 1, c_lo, c_hi))
                if diving:
                    pending = (*children[0], depth + 1)
                break
            # Integral point.
            xi = x.copy()
            xi[icols] = np.rint(v)
            cuts: list[tuple[float, float, np.ndarray, np.ndarray]]
            if evaluate is None:
                exact, payload, cuts = val, None, []
            else:
                exact, payload, cuts = evaluate(xi)
            if exact > best_val or best_x is None:
                best_val, best_x, best_payload = exact, xi, payload
                diving = False
            if not cuts:
                # A point evaluated before: its cuts are already in the master, so the
                # node bound exceeds its exact value only by LP round-off.  The node is a
                # leaf; its bound still counts towards the reported gap.
                leaf_bound = max(leaf_bound, val)
                break
            for lo_r, hi_r, cols, vals in cuts:
                h.addRow(lo_r, hi_r, len(cols), np.asarray(cols, dtype=np.int32),
                         np.asarray(vals, dtype=float))
            val, x = lp(lo, hi)  # re-solve the node against the new cuts

    open_bound = max([-heap[0][0]] if heap else [], default=-math.inf)
    if pending is not None:
        open_bound = math.inf
    if best_x is None:
        if failures:
            return BnBResult("error", None, math.nan, None, nodes, math.inf, failures[0])
        if heap or pending is not None:
            return BnBResult("no_solution", None, math.nan, None, nodes, math.inf,
                             f"{nodes} nodes")
        return BnBResult("infeasible", None, math.nan, None, nodes, math.inf,
                         "no integer point")
    bound = max(open_bound, best_val, leaf_bound)
    open_gap = (bound - best_val) / max(abs(best_val), 1e-12)
    proven = open_gap <= gap + 1e-12 and not failures
    msg = f"{nodes} nodes"
    if failures:
        msg += f"; {len(failures)} LP failure(s): {failures[0]}"
    return BnBResult("optimal" if proven else "time_limit", best_x, best_val, best_payload,
                     nodes, 0.0 if proven else (open_gap if not failures else math.inf), msg)


def solve_bnb(
    model: SparseMILP, *, gap: float = 1e-4, time_limit: float | None = None
) -> SolveOutcome:
    """Solve ``model`` (maximisation) by :func:`branch_and_check` without cuts."""
    t0 = time.perf_counter()
    h = new_lp(model)
    h.setOptionValue("simplex_strategy", 4)  # primal: the root starts from slacks
    icols = np.flatnonzero(model.integer)
    deadline = math.inf if time_limit is None else t0 + time_limit
    res = branch_and_check(h, icols, model.col_lower[icols].copy(),
                           model.col_upper[icols].copy(), gap=gap, deadline=deadline)
    return SolveOutcome(res.status, res.x, res.value, time.perf_counter() - t0, res.message,
                        res.gap)
