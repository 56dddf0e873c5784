"""Exact decomposition of the weight-free max-rate MILP (branch-and-check with cuts).

For a choice ``n`` (islands of each group that decode) the best rate is
``T(n) = min(f_P(k - n), f_D(n))`` where ``f_P``/``f_D`` are the phase rates of
:mod:`planner.inner.phase_lp`, so the MILP of :mod:`planner.inner.max_rate` equals

.. math:: \\max_{n \\in \\mathbb{Z}^G,\\, lo \\le n \\le hi} \\min(f_P(k-n), f_D(n)).

Both phase functions are concave and equal to the minimum of the linear cuts
:math:`u^\\top c` over dual-feasible ``y`` (LP duality).  The *master* keeps only some
cuts, so it over-estimates ``T`` everywhere:

.. math:: \\max\\ \\theta \\;\\text{s.t.}\\; \\theta \\le \\alpha_s^\\top (k - n),\\;
          \\theta \\le \\beta_t^\\top n,\\; n \\text{ integer}.

Its branch-and-bound (:func:`planner.inner.bnb.branch_and_check`) evaluates every
integral master point exactly (two phase LPs), keeps the best as incumbent and adds the
two cuts that are tight at that point, then re-solves the node.  A node is discarded
only when its master bound -- an upper bound on ``T`` over the node -- does not exceed
the incumbent by more than the relative ``gap``; hence the result is the MILP optimum
to that gap, the same guarantee as a MILP solver's.  Initial cuts come from
:func:`~planner.inner.phase_lp.heuristic_dual` (exact when a phase's tables are
proportional across islands, as compute-bound prefill nearly is), so typically one or
two exact evaluations settle the answer.

The master has one integer column per group of identical islands and a handful of rows,
so its LPs re-solve in ~0.1 ms, and a phase LP only contains the groups that serve that
phase (a decode LP often has two or three).  This is what brings a 64-range x
32-island solve to ~10 ms, where HiGHS on the monolithic MILP needs ~100 ms.
"""

from __future__ import annotations

import math
import time

import numpy as np

from planner.inner.bnb import branch_and_check, new_lp
from planner.inner.common import CoreOutcome
from planner.inner.model import MILPBuilder
from planner.inner.phase_lp import PhaseLP, PhaseSolution, cut_from_dual, heuristic_dual
from planner.inner.pooling import pooled_tables
from planner.inner.problem import InnerProblem


def solve_max_rate_bc(
    problem: InnerProblem, usable: np.ndarray, *, gap: float, time_limit: float | None
) -> CoreOutcome:
    t0 = time.perf_counter()
    deadline = math.inf if time_limit is None else t0 + time_limit
    members, active, k, scale, bp, bd, p = pooled_tables(problem, usable, aggregate=True)
    G = len(members)
    lo = np.where(bp.max(axis=1) > 0, 0.0, k)
    hi = np.where(bd.max(axis=1) > 0, k, 0.0)

    # Master: column 0 is theta, columns 1..G are n.
    b = MILPBuilder()
    theta = b.add_cols("theta", 1, cost=1.0)[0]
    ncols = b.add_cols("n", G, lower=lo, upper=hi, integer=True)
    alpha = cut_from_dual(bp, heuristic_dual(bp, k, p))
    beta = cut_from_dual(bd, heuristic_dual(bd, k, p))
    idx = np.concatenate([[theta], ncols])
    b.add_rows(1, np.zeros(G + 1), idx, np.concatenate([[1.0], alpha]), upper=float(alpha @ k))
    b.add_rows(1, np.zeros(G + 1), idx, np.concatenate([[1.0], -beta]), upper=0.0)
    master = b.build()
    h = new_lp(master)
    h.setOptionValue("simplex_strategy", 4)

    lp_p, lp_d = PhaseLP(bp, p), PhaseLP(bd, p)
    seen: dict[bytes, float] = {}
    n_evals = 0

    def evaluate(x: np.ndarray):
        nonlocal n_evals
        n = x[ncols]
        key = n.tobytes()
        if key in seen:
            return seen[key], None, []
        n_evals += 1
        sp = lp_p.solve(k - n)
        sd = lp_d.solve(n)
        value = min(sp.rate, sd.rate)
        seen[key] = value
        cuts = [
            (-math.inf, float(sp.cut @ k), idx, np.concatenate([[1.0], sp.cut])),
            (-math.inf, 0.0, idx, np.concatenate([[1.0], -sd.cut])),
        ]
        return value, (n.copy(), sp, sd), cuts

    res = branch_and_check(h, ncols, lo.copy(), hi.copy(), gap=gap, deadline=deadline,
                           evaluate=evaluate)
    seconds = time.perf_counter() - t0
    msg = f"{res.message}, {n_evals} exact evaluations, {G} groups"
    if res.payload is None:
        return CoreOutcome(res.status, seconds, msg)
    n, sp, sd = res.payload
    xp, xd, roles = _per_island(problem, members, active, n, sp, sd)
    return CoreOutcome(
        res.status, seconds, msg, objective=res.value * scale, mip_gap=res.gap,
        x_prefill=xp, x_decode=xd, roles=roles,
        extra={"T": res.value * scale, "groups": float(G), "nodes": float(res.nodes),
               "exact_evaluations": float(n_evals)},
    )


def _per_island(
    problem: InnerProblem, members: list[np.ndarray], active: np.ndarray, n: np.ndarray,
    sp: PhaseSolution, sd: PhaseSolution,
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Split pooled group times over the group's islands; unused time is spread over
    the island's ranges in proportion to its use (or to ``p`` if unused), so that each
    island's shares sum to 1 as in constraint 1 of §4.8.1 -- this only adds capacity."""
    I, J = problem.n_islands, problem.n_ranges
    xp = np.zeros((I, J))
    xd = np.zeros((I, J))
    roles = ["idle"] * I
    p = problem.range_prob
    for g, mem in enumerate(members):
        nd = int(round(n[g]))
        for phase, cnt, sol, out, tab, isl in (
            ("decode", nd, sd, xd, problem.decode_rps, mem[:nd]),
            ("prefill", len(mem) - nd, sp, xp, problem.prefill_rps, mem[nd:]),
        ):
            if cnt == 0:
                continue
            share = np.zeros(J)
            share[active] = sol.time[g] / cnt
            total = share.sum()
            if total > 1e-12:
                share /= total
            else:
                w = np.where(tab[isl[0]] > 0, p, 0.0)
                share = w / w.sum() if w.sum() > 0 else np.full(J, 1.0 / J)
            for i in isl:
                roles[i] = phase
                out[i] = share
    return xp, xd, roles


