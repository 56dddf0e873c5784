"""The island MILP for several services sharing one inventory and one budget.

:mod:`planner.outer.exact` states the MILP for one model: integer island counts
n[t,g,r], shares y of them on each input-length range, a rate T every range's prefill
and decode rows must carry.  Several services (a model with its workload, SLO and
engine each; :mod:`planner.services`) share the GPUs and the money but not the islands
-- an island serves one service, with that service's range tables -- so the joint
problem stacks one copy of the single-model columns and rows per service s and couples
them only through the inventory, server and budget rows:

    maximise λ
    s.t.  sum_j y[s,c,j] <= n[s,c]                                  every service's columns
          sum_{c of s, role r} b[s,c,j] y[s,c,j] >= p[s,j] d[s] λ   every s, role, range j
          sum_{c of s: b[s,c,j] > 0} n[s,c] >= 1                    coverage, every s, r, j
          sum_{s, c of type t, size >= q} size_c n[s,c] <= cap_t(q)  inventory and servers
          sum_{s,c} price_c size_c n[s,c] <= B                       budget (if any)

where d[s] is service s's *demand weight*: its share of the fleet's traffic in budget
mode (so λ is the fleet's total request rate and service s gets λ·share_s), or its
target rate over the largest target in target mode, with λ then fixed at that largest
target and the objective the fleet's $/h (each service meets exactly its own target).
Writing targets as weights of a fixed λ rather than as right-hand sides keeps the
one-service problem the very model :func:`planner.outer.exact.solve_exact` has always
built (d = 1), row for row and column for column, so single-model plans do not change.

Why the joint optimum is at least the best independent split: a split gives service s
budget B_s (and the GPUs its plan uses); each service's own optimum is a set of its
columns satisfying its rows, and together they satisfy the shared rows because the B_s
and the GPUs sum to at most the fleet's.  So every split is a feasible point here, and
the MILP's optimum is at least as high (up to its proven gap).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from planner.inner.backends import solve_model
from planner.inner.model import MILPBuilder
from planner.outer.columns import (
    COLOCATED,
    ROLES,
    BothTables,
    Tables,
    candidate_sizes,
    prune,
    round_counts,
)
from planner.outer.protocol import Layout, SearchSpace


@dataclass(frozen=True)
class ServiceColumns:
    """One service's input to the joint MILP: its range tables over the candidate
    island sizes, its range probabilities, and its demand weight (see the module)."""

    name: str
    tables: Tables
    prob: np.ndarray
    weight: float = 1.0
    both: BothTables | None = None
    #: restrict this service's columns to these (type, size, role); None: all
    keep: frozenset[tuple[str, int, str]] | None = None


@dataclass
class ServiceSolution:
    """What the joint optimum gives one service."""

    layout: Layout
    roles: tuple[str, ...]
    counts: dict[tuple[str, int, str], int] = field(default_factory=dict)
    support: frozenset[tuple[str, int, str]] = frozenset()
    cost_per_hour: float = 0.0


@dataclass
class JointResult:
    status: str  # HiGHS's, "relaxed", or "infeasible"
    value: float  # λ (budget mode) or the largest target (target mode); 0 if none
    bound: float
    gap: float
    cost_per_hour: float
    seconds: float
    candidates: int
    pruned: int
    services: list[ServiceSolution]
    message: str = ""


def _empty(n: int) -> list[ServiceSolution]:
    return [ServiceSolution((), ()) for _ in range(n)]


def solve_joint(space: SearchSpace, services: Sequence[ServiceColumns], *,
                target: bool = False, time_limit: float = 600.0,
                mip_rel_gap: float = 1e-4, prune_tol: float = 0.0,
                max_island: int | None = None, node_limit: int | None = None,
                relax: bool = False) -> JointResult:
    """Solve the MILP above over ``space`` (the shared inventory and budget).

    ``target``: target mode -- every service's weight is its target rate over the
    largest (``space.target_rps`` is that largest target) and the MILP minimises $/h.
    ``relax``: the LP relaxation with its counts rounded
    (:func:`planner.outer.exact.round_counts`).  Pruning, the size lattice and HiGHS's
    limits are those of :func:`planner.outer.exact.solve_exact`, which is this
    function for one service."""
    t0 = time.perf_counter()
    k_s = len(services)
    sizes = candidate_sizes(space, max_island)
    cands, owner, actives, dropped = [], [], [], 0
    for s, svc in enumerate(services):
        mine, gone = prune(svc.tables, sizes, tol=prune_tol if prune_tol > 0 else 1e-9,
                           both=svc.both)
        if svc.keep is not None:
            mine = [c for c in mine if (c.gpu, c.size, c.role) in svc.keep]
        dropped += gone
        have = {c.role for c in mine}
        if not ({"prefill", "decode"} <= have or COLOCATED in have):
            who = f"service {svc.name!r}: " if k_s > 1 else ""
            return JointResult(
                "infeasible", 0.0, 0.0, 0.0, 0.0, time.perf_counter() - t0, len(mine),
                dropped, _empty(k_s),
                who + "no island size of any type can serve both prefill and decode"
                + (" (disaggregated or colocated)" if svc.both is not None else ""))
        cands.extend(mine)
        owner.extend([s] * len(mine))
        actives.append(np.flatnonzero(np.asarray(svc.prob) > 0))
    owner_arr = np.asarray(owner)
    price = {t.name: t.price_per_hour for t in space.types}
    avail = {t.name: t.available for t in space.types}
    n_c = len(cands)
    # Work in units of the largest throughput so that coefficients are O(1) for HiGHS.
    scale = max(float(c.rps.max()) for c in cands)
    fixed = space.target_rps / scale if target and space.target_rps else None
    cost = np.array([price[c.gpu] * c.size for c in cands])
    b = MILPBuilder()
    # Maximise λ, or (target mode) maximise -cost with λ fixed.
    t_col = b.add_cols("T", 1, cost=0.0 if fixed else 1.0,
                       lower=fixed or 0.0, upper=fixed if fixed else math.inf)
    n_cols = b.add_cols("n", n_c, cost=-cost if fixed else 0.0, integer=not relax,
                        upper=np.array([avail[c.gpu] // c.size for c in cands], float))
    widths = np.array([len(actives[o]) for o in owner], int)
    y_all = b.add_cols("y", int(widths.sum()))
    starts = np.concatenate([[0], np.cumsum(widths)])
    y_of = [y_all[starts[k]:starts[k + 1]] for k in range(n_c)]
    # capacity: sum_j y[c, j] - n[c] <= 0
    rows = np.repeat(np.arange(n_c), widths + 1)
    cols = np.concatenate([np.concatenate([y_of[c], [n_cols[c]]]) for c in range(n_c)])
    vals = np.concatenate([np.concatenate([np.ones(widths[c]), [-1.0]]) for c in range(n_c)])
    b.add_rows(n_c, rows, cols, vals, upper=0.0)
    # service: sum_c b[c, j] y[c, j] - p_j d_s λ >= 0, per service, role and active
    # range; a colocated column serves both roles' rows with its one share
    for s, svc in enumerate(services):
        active = actives[s]
        n_j = len(active)
        demand = np.asarray(svc.prob, float)[active] * float(svc.weight)
        for role in ROLES:
            idx = [int(k) for k in np.flatnonzero(owner_arr == s)
                   if cands[k].role in (role, COLOCATED)]
            bmat = np.array([cands[k].rps[active] for k in idx]) / scale  # (K, J')
            rows = np.concatenate([np.tile(np.arange(n_j), len(idx)), np.arange(n_j)])
            cols = np.concatenate([np.concatenate([y_of[k] for k in idx]) if idx
                                   else np.zeros(0, int), np.full(n_j, t_col[0])])
            vals = np.concatenate([bmat.ravel(), -demand])
            b.add_rows(n_j, rows, cols, vals, lower=0.0)
    # coverage: every (service, role, active range) has an island able to serve it.
    # Implied by the service rows for integer n, but not within HiGHS's tolerances: a
    # range with tiny demand is otherwise "served" by a y of 1e-5 under an n that
    # rounds to zero islands, a layout that cannot serve it at all.
    if not relax:
        covers: set[frozenset[int]] = set()
        for s, svc in enumerate(services):
            own = [int(k) for k in np.flatnonzero(owner_arr == s)]
            for role in ROLES:
                idx = [k for k in own if cands[k].role in (role, COLOCATED)]
                for j in actives[s]:
                    cover = frozenset(k for k in idx if cands[k].rps[j] > 0)
                    if not cover:  # its service row would hold only within tolerances
                        who = f"service {svc.name!r}: " if k_s > 1 else ""
                        return JointResult(
                            "infeasible", 0.0, 0.0, 0.0, 0.0, time.perf_counter() - t0,
                            n_c, dropped, _empty(k_s),
                            f"{who}no island size of any type can {role} range {j} "
                            f"(p={svc.prob[j]:.3g})" + (" or serve it colocated"
                                                        if svc.both is not None else ""))
                    covers.add(cover)
        ordered = sorted(tuple(sorted(cv)) for cv in covers if cv)
        if ordered:
            rows = np.concatenate([np.full(len(cv), r) for r, cv in enumerate(ordered)])
            cols = np.concatenate([n_cols[list(cv)] for cv in ordered])
            b.add_rows(len(ordered), rows, cols, np.ones(len(cols)), lower=1.0)
    # inventory per type, and its servers: islands of at least q GPUs within what the
    # full servers and the partial one hold of them (planner.fleet.servers, "Packing");
    # every service's islands of the type count
    for t in space.types:
        of_type = [k for k, c in enumerate(cands) if c.gpu == t.name]
        if not of_type:
            continue
        levels = [(1, t.available)] + ([] if t.shape is None else t.shape.levels())
        for q, cap in levels:
            sel = [k for k in of_type if cands[k].size >= q]
            if sel:
                b.add_rows(1, np.zeros(len(sel)), n_cols[sel],
                           np.array([cands[k].size for k in sel], float), upper=float(cap))
    if space.budget is not None:
        b.add_rows(1, np.zeros(n_c), n_cols, cost, upper=space.budget)
    model = b.build()
    out = solve_model(model, "highs", time_limit=time_limit, mip_rel_gap=mip_rel_gap,
                      node_limit=node_limit)
    seconds = time.perf_counter() - t0
    if out.x is None:
        why = ("no layout within the inventory and budget serves the target rate"
               if fixed else "no layout within the inventory and budget serves the workload")
        if k_s > 1:
            why = why.replace("the target rate", "every service's target").replace(
                "the workload", "every service")
        return JointResult(out.status, 0.0, 0.0, math.inf, 0.0, seconds, n_c, dropped,
                           _empty(k_s), f"{why} ({out.message})")
    n_val = model.block(out.x, "n")
    if relax:
        counts_vec = round_counts(n_val, [c.gpu for c in cands],
                                  np.array([c.size for c in cands]), cost, avail,
                                  space.budget, supply={t.name: t for t in space.types})
    else:
        counts_vec = np.rint(n_val).astype(int)
    value = float(model.block(out.x, "T")[0]) * scale
    total_cost = float(counts_vec @ cost)
    objective = total_cost if fixed else value
    gap = out.mip_gap if math.isfinite(out.mip_gap) else math.inf
    bound = objective * (1 - gap) if fixed else objective * (1 + gap)
    if prune_tol > 0 and not fixed:
        # the pruned problem's optimum is within (1 - tol) of the full one's
        bound /= 1.0 - prune_tol
        gap = (bound - objective) / objective if objective > 0 else math.inf
    if math.isinf(gap):
        bound = math.nan
    solutions = []
    for s in range(k_s):
        layout, roles, counts = [], [], {}
        money = 0.0
        for k in np.flatnonzero(owner_arr == s):
            c, m = cands[k], int(counts_vec[k])
            if m > 0:
                counts[(c.gpu, c.size, c.role)] = m
                layout.extend([(c.gpu, c.size)] * m)
                roles.extend([c.role] * m)
                money += m * float(cost[k])
        order = sorted(range(len(layout)), key=lambda i: layout[i])
        support = frozenset((cands[k].gpu, cands[k].size, cands[k].role)
                            for k in np.flatnonzero(owner_arr == s) if n_val[k] > 1e-6)
        solutions.append(ServiceSolution(tuple(layout[i] for i in order),
                                         tuple(roles[i] for i in order), counts, support,
                                         money))
    return JointResult("relaxed" if relax else out.status, value, bound, gap, total_cost,
                       seconds, n_c, dropped, solutions, out.message)


__all__ = ["JointResult", "ServiceColumns", "ServiceSolution", "solve_joint"]
