"""Exact outer solver: one MILP over integer island counts (the BO's yardstick).

The outer and inner loops of seed 002 together ask: which islands, and which shares of
them serve which input-length ranges, maximise the sustainable request rate T?  With
the perf model's per-(type, size) tables fixed, that is a single MILP once islands of
the same (type t, size g, role r) are aggregated:

    maximise T
    s.t.  sum_j y[t,g,r,j] <= n[t,g,r]                     capacity of the n islands
          sum_{t,g} bP[t,g,j] y[t,g,P,j] >= p_j T   for all j   prefill serves the mix
          sum_{t,g} bD[t,g,j] y[t,g,D,j] >= p_j T   for all j   decode serves the mix
          sum_{g,r} g n[t,g,r] <= available_t       for all t   inventory
          sum_t price_t sum_{g,r} g n[t,g,r] <= B               budget (if any)
          sum_{(t,g): b[t,g,r,j] > 0} n[t,g,r] >= 1     for all r, j   coverage
          n integer >= 0, y >= 0

Aggregation is exact: any split of y[t,g,r,.] over the n identical islands with each
island's shares summing to <= 1 exists (fill islands one after another).  This is the
weight-free inner formulation of planner.inner.max_rate with the island counts made
decision variables, so its optimum is the global optimum of the model; the BO's gap is
measured against it.  With ``target_rps`` the MILP instead minimises $/h with T fixed.

Colocated islands (role A, "both": one island serves both phases of its requests,
perfmodel.colocated) are a third role when the planning context offers them
(``PlanningContext.colocated``): columns n[t,g,A] with shares y[t,g,A,j] and the
evaluator's colocated range rates bA[t,g,j] (``LayoutEvaluator.both_range_table``: no KV
moves, so no network cap), whose service counts in both phases' rows, exactly as in the
inner MILP (planner.inner.max_rate.build_max_rate):

    sum_{t,g} bP[t,g,j] y[t,g,P,j] + bA[t,g,j] y[t,g,A,j] >= p_j T   for all j
    sum_{t,g} bD[t,g,j] y[t,g,D,j] + bA[t,g,j] y[t,g,A,j] >= p_j T   for all j

and the coverage rows count colocated islands for both roles (for integer counts
"P >= 1 and D >= 1, or A >= 1": a range is served colocated or disaggregated).  The
inner MILP the evaluator scores a layout with is this problem with the counts fixed,
so a layout's score is at least the MILP's T for it (to the solvers' gaps), and the
optimum is the model's over prefill, decode and colocated islands.

Dominated sizes are pruned before the MILP is built: size g of type t is dropped for
role r when one smaller island, or two smaller islands g1 + g2 = g, of the same type
give at least its throughput in every range (replacing it by them keeps every
constraint and T: GPUs, and so cost, never increase), and when the island cannot serve
role r at all.  A colocated size is also dropped when a prefill island g1 and a decode
island g2 of the type with g1 + g2 <= g each give at least its colocated rate in every
range (they serve what it served in both rows).  These tests are sufficient, not
necessary, so pruning never removes an optimum.

HiGHS reports its own status: a time-limited incumbent is reported as "time_limit" with
the proven bound and gap, never as optimal.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from planner.inner.backends import solve_model
from planner.inner.model import MILPBuilder
from planner.outer.polish import polish
from planner.outer.protocol import (
    COST_TOL,
    HistoryPoint,
    Layout,
    SearchResult,
    SearchSpace,
    TypeSupply,
    affordable,
)
from planner.outer.tracking import Tracker

ROLES = ("prefill", "decode")
#: The colocated role (both phases on one island), as the inner solver names it.
COLOCATED = "both"

#: (type, size) -> (bP, bD) range tables; (type, size) -> bA colocated range rates.
Tables = Mapping[tuple[str, int], tuple[np.ndarray, np.ndarray]]
BothTables = Mapping[tuple[str, int], np.ndarray]


@dataclass(frozen=True)
class Candidate:
    gpu: str
    size: int
    role: str
    rps: np.ndarray  # (J,) throughput on each range


@dataclass
class ExactResult:
    status: str  # "optimal" | "time_limit" | "infeasible" | "no_solution" | "error"
    layout: Layout
    roles: tuple[str, ...]  # role of each island of ``layout``
    value: float  # T, requests/s (0 if none)
    bound: float  # proven upper bound on T (max mode) or lower bound on cost (target mode)
    gap: float  # relative gap between incumbent and bound
    cost_per_hour: float
    seconds: float
    candidates: int  # (type, size, role) columns after pruning
    pruned: int  # columns removed as dominated or unable to serve
    message: str = ""
    counts: dict[tuple[str, int, str], int] = field(default_factory=dict)
    #: (type, size, role) columns with a non-zero count in the (relaxed) solution
    support: frozenset[tuple[str, int, str]] = frozenset()


#: Above this many GPUs of a type, candidate island sizes thin out geometrically.
LATTICE_FROM = 256


def size_lattice(lo: int, hi: int) -> list[int]:
    """Island sizes lo..hi: every size up to 32, then eight per octave (36, 40, ... 64,
    72, ..., 128, 144, ...).  At 4,096 GPUs of a type that is 88 sizes instead of 4,096
    perf-model tables; any count of GPUs is still reachable as a sum of sizes, and the
    throughput of an island grows near-linearly with its size, so a missing size costs
    a fraction of a per cent (the lattice's spacing relative to the size, 1/8 at most,
    shared over the islands of a plan)."""
    out = []
    g = max(1, lo)
    while g <= hi:
        out.append(g)
        step = 1 if g < 32 else 2 ** (int(np.log2(g)) - 3)
        g = g + step
    return out


def candidate_sizes(space: SearchSpace, max_island: int | None = None) -> dict[str, list[int]]:
    """Island sizes of each type the search may use: what the type allows
    (:meth:`~planner.outer.protocol.TypeSupply.sizes`: min_island .. available, whole
    servers and shares of one at server granularity) within what the budget allows, and
    at most ``max_island`` GPUs when given; a geometric lattice (:func:`size_lattice`,
    over server counts at server granularity) for types with more than
    ``LATTICE_FROM`` GPUs.

    The cap matters when availability is large (e.g. market availability of
    budget / price GPUs in ``planner whatif``): without it every size up to thousands of
    GPUs would be benchmarked.  With a cap the optimum is over islands of at most that
    size, which is a restriction of the model, not a relaxation."""
    out = {}
    for t in space.types:
        top = t.available
        if space.budget is not None and t.price_per_hour > 0:
            top = min(top, affordable(space.budget, t.price_per_hour))
        if max_island is not None:
            top = min(top, int(max_island))
        sizes = t.sizes(top)
        if t.available > LATTICE_FROM:
            node = t.gpus_per_node
            if node:  # whole servers on the lattice of server counts, shares all kept
                keep = {k * node for k in size_lattice(1, top // node)}
                sizes = [g for g in sizes if g < node or g in keep]
            else:
                sizes = size_lattice(max(1, t.min_island), top)
        out[t.name] = sizes
    return out


def _dominated(b: np.ndarray, g: int, options: list[int], allowed: set[int],
               column: Mapping[int, np.ndarray], tol: float) -> bool:
    """Whether an island of size ``g`` with rates ``b`` is matched, within ``tol`` in
    every range, by one smaller island or two smaller ones g1 + (g - g1) of the same
    type and role (``column[size]``: that role's rates)."""
    floor = (1.0 - tol) * b - 1e-12 * b.max()
    # a smaller island alone (the rest of the GPUs unused) ...
    if any(np.all(column[g1] >= floor) for g1 in options if g1 < g):
        return True
    # ... or two smaller islands side by side
    return any(np.all(column[g1] + column[g - g1] >= floor)
               for g1 in options if g1 <= g - g1 and (g - g1) in allowed)


def prune(tables: Tables, sizes: dict[str, list[int]], tol: float = 1e-9,
          both: BothTables | None = None) -> tuple[list[Candidate], int]:
    """Keep (type, size, role) columns that serve the role and are not dominated by one
    or two smaller islands of the same type delivering at least (1 - tol) of their
    throughput in every range.  With tol > 0 the pruned optimum is within a factor
    (1 - tol) of the full one (each dropped island can be replaced by islands giving
    (1 - tol) of its service), so bound / (1 - tol) bounds the full problem.

    ``both``: colocated range rates per (type, size) (role ``"both"``), None when the
    context offers no colocated islands.  A colocated column is pruned like the others
    (by smaller colocated islands), and also when a prefill island g1 and a decode
    island g2 of its type with g1 + g2 <= g each give (1 - tol) of its rate in every
    range: they put at least that into both phases' rows."""
    kept, dropped = [], 0
    for gpu, options in sizes.items():
        allowed = set(options)
        for r, role in enumerate(ROLES):
            column = {g: tables[(gpu, g)][r] for g in options}
            for g in options:
                b = column[g]
                if not np.any(b > 0) or _dominated(b, g, options, allowed, column, tol):
                    dropped += 1
                else:
                    kept.append(Candidate(gpu, g, role, b))
        if both is None:
            continue
        column = {g: np.asarray(both[(gpu, g)], float) for g in options}
        for g in options:
            b = column[g]
            if not np.any(b > 0) or _dominated(b, g, options, allowed, column, tol):
                dropped += 1
                continue
            floor = (1.0 - tol) * b - 1e-12 * b.max()
            # the smallest prefill island and the smallest decode island each covering it
            pre = [g1 for g1 in options if np.all(tables[(gpu, g1)][0] >= floor)]
            dec = [g2 for g2 in options if np.all(tables[(gpu, g2)][1] >= floor)]
            if pre and dec and min(pre) + min(dec) <= g:
                dropped += 1
            else:
                kept.append(Candidate(gpu, g, COLOCATED, b))
    return kept, dropped


def solve_exact(space: SearchSpace, tables: Tables, prob: np.ndarray, *,
                time_limit: float = 600.0, mip_rel_gap: float = 1e-4,
                prune_tol: float = 0.0, max_island: int | None = None,
                node_limit: int | None = None, relax: bool = False,
                keep: set[tuple[str, int, str]] | None = None,
                both: BothTables | None = None) -> ExactResult:
    """Solve the MILP above.  ``tables[(type, size)] = (bP, bD)`` over the ranges;
    ``both[(type, size)] = bA``, the colocated rates, adds colocated columns (role
    ``"both"``; None: none, the disaggregated MILP); ``max_island`` caps island sizes
    (see :func:`candidate_sizes`).  ``relax`` solves the LP relaxation and rounds its
    island counts (:func:`round_counts`): a layout near the optimum for the price of one
    LP (the BO's warm start), reported with status ``"relaxed"``.  ``keep`` restricts
    the columns to those (type, size, role) -- the optimum of that restriction is a
    feasible layout, not the global optimum."""
    t0 = time.perf_counter()
    sizes = candidate_sizes(space, max_island)
    cands, dropped = prune(tables, sizes, tol=prune_tol if prune_tol > 0 else 1e-9,
                           both=both)
    if keep is not None:
        cands = [c for c in cands if (c.gpu, c.size, c.role) in keep]
    price = {t.name: t.price_per_hour for t in space.types}
    avail = {t.name: t.available for t in space.types}
    active = np.flatnonzero(prob > 0)
    n_c, n_j = len(cands), len(active)
    have = {c.role for c in cands}
    if not ({"prefill", "decode"} <= have or COLOCATED in have):
        return ExactResult("infeasible", (), (), 0.0, 0.0, 0.0, 0.0,
                           time.perf_counter() - t0, n_c, dropped,
                           "no island size of any type can serve both prefill and decode"
                           + (" (disaggregated or colocated)" if both is not None else ""))
    # Work in units of the largest throughput so that coefficients are O(1) for HiGHS.
    scale = max(float(c.rps.max()) for c in cands)
    target = space.target_rps / scale if space.target_rps else None
    cost = np.array([price[c.gpu] * c.size for c in cands])
    b = MILPBuilder()
    # Maximise T, or (target mode) maximise -cost with T fixed at the target.
    t_col = b.add_cols("T", 1, cost=0.0 if target else 1.0,
                       lower=target or 0.0, upper=target if target else math.inf)
    n_cols = b.add_cols("n", n_c, cost=-cost if target else 0.0, integer=not relax,
                        upper=np.array([avail[c.gpu] // c.size for c in cands], float))
    y_cols = b.add_cols("y", n_c * n_j).reshape(n_c, n_j)
    # capacity: sum_j y[c, j] - n[c] <= 0
    rows = np.repeat(np.arange(n_c), n_j + 1)
    cols = np.concatenate([np.concatenate([y_cols[c], [n_cols[c]]]) for c in range(n_c)])
    vals = np.tile(np.concatenate([np.ones(n_j), [-1.0]]), n_c)
    b.add_rows(n_c, rows, cols, vals, upper=0.0)
    # service: sum_c b[c, j] y[c, j] - p_j T >= 0, per role and active range; a
    # colocated column serves both roles' rows with its one share
    for role in ROLES:
        idx = [k for k, c in enumerate(cands) if c.role in (role, COLOCATED)]
        bmat = np.array([cands[k].rps[active] for k in idx]) / scale  # (K, J')
        rows = np.concatenate([np.tile(np.arange(n_j), len(idx)), np.arange(n_j)])
        cols = np.concatenate([y_cols[idx].ravel(), np.full(n_j, t_col[0])])
        vals = np.concatenate([bmat.ravel(), -prob[active]])
        b.add_rows(n_j, rows, cols, vals, lower=0.0)
    # coverage: sum n[c] over the islands able to serve range j >= 1, per role and
    # active range (colocated islands count for both roles).  Implied by the service
    # rows for integer n, but not within HiGHS's tolerances: a range with tiny demand is
    # otherwise "served" by a y of 1e-5 under an n that rounds to zero islands, a layout
    # that cannot serve it at all.
    if not relax:
        covers: set[frozenset[int]] | list[tuple[int, ...]]  # a set, then sorted tuples
        covers = set()
        for role in ROLES:
            idx = [k for k, c in enumerate(cands) if c.role in (role, COLOCATED)]
            for j in active:
                cover = frozenset(k for k in idx if cands[k].rps[j] > 0)
                if not cover:  # its service row would hold only within tolerances
                    return ExactResult(
                        "infeasible", (), (), 0.0, 0.0, 0.0, 0.0,
                        time.perf_counter() - t0, n_c, dropped,
                        f"no island size of any type can {role} range {j} "
                        f"(p={prob[j]:.3g})" + (" or serve it colocated"
                                                if both is not None else ""))
                covers.add(cover)
        covers = sorted(tuple(sorted(cv)) for cv in covers if cv)
        if covers:
            rows = np.concatenate([np.full(len(cv), r) for r, cv in enumerate(covers)])
            cols = np.concatenate([n_cols[list(cv)] for cv in covers])
            b.add_rows(len(covers), rows, cols, np.ones(len(cols)), lower=1.0)
    # inventory per type, and its servers: islands of at least q GPUs within what the
    # full servers and the partial one hold of them (planner.fleet.servers, "Packing")
    for t in space.types:
        idx = [k for k, c in enumerate(cands) if c.gpu == t.name]
        if not idx:
            continue
        levels = [(1, t.available)] + ([] if t.shape is None else t.shape.levels())
        for q, cap in levels:
            sel = [k for k in idx if cands[k].size >= q]
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
               if target else "no layout within the inventory and budget serves the workload")
        return ExactResult(out.status, (), (), 0.0, 0.0, math.inf, 0.0, seconds, n_c, dropped,
                           f"{why} ({out.message})")
    n_val = model.block(out.x, "n")
    if relax:
        counts_vec = round_counts(n_val, [c.gpu for c in cands],
                                  np.array([c.size for c in cands]), cost, avail,
                                  space.budget, supply={t.name: t for t in space.types})
    else:
        counts_vec = np.rint(n_val).astype(int)
    layout, roles, counts = [], [], {}
    for c, k in zip(cands, counts_vec, strict=True):
        if k > 0:
            counts[(c.gpu, c.size, c.role)] = int(k)
            layout.extend([(c.gpu, c.size)] * int(k))
            roles.extend([c.role] * int(k))
    order = sorted(range(len(layout)), key=lambda i: layout[i])
    value = float(model.block(out.x, "T")[0]) * scale
    total_cost = float(counts_vec @ cost)
    objective = total_cost if target else value
    gap = out.mip_gap if math.isfinite(out.mip_gap) else math.inf
    bound = objective * (1 - gap) if target else objective * (1 + gap)
    if prune_tol > 0 and not target:
        # the pruned problem's optimum is within (1 - tol) of the full one's
        bound /= 1.0 - prune_tol
        gap = (bound - objective) / objective if objective > 0 else math.inf
    if math.isinf(gap):
        bound = math.nan
    support = frozenset((c.gpu, c.size, c.role) for c, x in zip(cands, n_val, strict=True)
                        if x > 1e-6)
    return ExactResult("relaxed" if relax else out.status, tuple(layout[i] for i in order),
                       tuple(roles[i] for i in order), value, bound, gap, total_cost, seconds,
                       n_c, dropped, out.message, counts, support)


def round_counts(n: np.ndarray, gpus: list[str], sizes: np.ndarray, cost: np.ndarray,
                 available: dict[str, int], budget: float | None,
                 supply: dict[str, TypeSupply] | None = None) -> np.ndarray:
    """Integer island counts from the LP relaxation's fractional ones ``n``.

    Rounding down alone is useless here: the LP likes to spread a type over many sizes
    at fractions below one, so the floor is often the empty layout.  So: floor, then
    round up in order of decreasing fractional part while the type's inventory (and,
    given ``supply``, its servers) and the budget allow -- the islands the LP wanted
    most are bought first."""
    counts = np.floor(n + 1e-6).astype(int)
    used = {g: 0 for g in available}
    held: dict[str, list[int]] = {g: [] for g in available}
    for g, size, k in zip(gpus, sizes, counts, strict=True):
        used[g] += int(size) * int(k)
        held[g].extend([int(size)] * int(k))
    money = float(counts @ cost)
    frac = n - counts
    for i in np.argsort(-frac, kind="stable"):
        if frac[i] <= 1e-6:
            break
        g = gpus[i]
        if used[g] + sizes[i] > available[g]:
            continue
        if supply is not None and not supply[g].holds([*held[g], int(sizes[i])]):
            continue
        if budget is not None and money + cost[i] > budget * (1 + COST_TOL):
            continue
        held[g].append(int(sizes[i]))
        counts[i] += 1
        used[g] += int(sizes[i])
        money += float(cost[i])
    return counts


class ExactSearch:
    """The exact MILP behind the :class:`~planner.outer.protocol.OuterSearch` protocol.

    It needs the per-(type, size) range tables, not just a layout score, so the
    objective must be a :class:`planner.context.evaluate.LayoutEvaluator`.  Its one "history"
    point is the optimum; ``settings`` records the bound, gap and status.  Where the
    evaluator's context offers colocated islands the MILP has colocated columns too
    (the evaluator's ``both_range_table``), so its optimum is over all three roles.
    """

    name = "exact"
    capabilities: frozenset[str] = frozenset()  # needs tables: not a black box

    def __init__(self, time_limit: float = 600.0, mip_rel_gap: float = 1e-4,
                 prune_tol: float = 0.005, max_island: int | None = None,
                 node_limit: int | None = 20_000, polish: int = 0) -> None:
        """``prune_tol``: near-dominated island sizes (within this fraction in every
        range) are pruned too, which speeds HiGHS up several-fold on 3-type inventories;
        the reported bound is widened by 1 / (1 - prune_tol) so it stays proven.
        ``max_island``: largest island size considered (None: up to availability).
        ``node_limit``: branch-and-bound nodes before HiGHS stops with its incumbent and
        proven gap (status ``"work_limit"``): the same answer on any machine at any
        load; ``time_limit`` is only a safety net.  ``polish``: evaluations of local
        refinement (:mod:`planner.outer.polish`) from the MILP's layout, scored by the
        full objective -- for what the MILP leaves out (island sizes pruned within
        ``prune_tol`` or off the size lattice, an incumbent stopped by the node limit)."""
        self.node_limit = node_limit
        self.polish = int(polish)
        self.time_limit = time_limit
        self.mip_rel_gap = mip_rel_gap
        self.prune_tol = prune_tol
        self.max_island = max_island
        self.last: ExactResult | None = None

    def tables(self, space: SearchSpace, evaluator, progress=None
               ) -> dict[tuple[str, int], tuple[np.ndarray, np.ndarray]]:
        """The evaluator's range tables of every candidate island size (the evaluator
        caches them, so a second search over the same space builds nothing)."""
        return self._tables(space, evaluator, progress)[0]

    def colocated_tables(self, space: SearchSpace, evaluator
                         ) -> dict[tuple[str, int], np.ndarray] | None:
        """The evaluator's colocated range rates of every candidate island size, or
        None where its context offers no colocated islands (or it has no such tables)."""
        return self._tables(space, evaluator)[1]

    @staticmethod
    def offers_colocated(evaluator) -> bool:
        """Whether ``evaluator`` scores colocated islands: its context offers them and
        it has their range rates (:meth:`LayoutEvaluator.both_range_table`)."""
        ctx = getattr(evaluator, "context", None)
        return bool(getattr(ctx, "colocated", False)) and hasattr(evaluator,
                                                                  "both_range_table")

    def _tables(self, space: SearchSpace, evaluator, progress=None
                ) -> tuple[dict[tuple[str, int], tuple[np.ndarray, np.ndarray]],
                           dict[tuple[str, int], np.ndarray] | None]:
        """(bP, bD) of every candidate size and, in a colocated context, bA (a size
        whose colocated table is missing serves nothing colocated)."""
        sizes = candidate_sizes(space, self.max_island)
        colocated = self.offers_colocated(evaluator)
        total = sum(len(v) for v in sizes.values()) * (2 if colocated else 1)
        tables: dict[tuple[str, int], tuple[np.ndarray, np.ndarray]] = {}
        both: dict[tuple[str, int], np.ndarray] | None = {} if colocated else None
        done = 0
        for gpu, options in sizes.items():
            for g in options:
                tables[(gpu, g)] = evaluator.range_tables(gpu, g)
                done += 1
                if both is not None:
                    a = evaluator.both_range_table(gpu, g)
                    both[(gpu, g)] = (np.zeros_like(tables[(gpu, g)][0]) if a is None
                                      else np.asarray(a, float))
                    done += 1
                if progress:
                    progress(done, total, 0.0)
        return tables, both

    def solve(self, space: SearchSpace, evaluator, progress=None) -> ExactResult:
        tables, both = self._tables(space, evaluator, progress)
        self.last = solve_exact(space, tables, np.asarray(evaluator.context.ranges.prob),
                                time_limit=self.time_limit, mip_rel_gap=self.mip_rel_gap,
                                prune_tol=self.prune_tol, max_island=self.max_island,
                                node_limit=self.node_limit, both=both)
        return self.last

    def relaxed_layout(self, space: SearchSpace, evaluator, *, reach: int = 2,
                       node_limit: int = 2_000) -> Layout:
        """A warm start for a search, from the LP relaxation: the MILP restricted to the
        (type, size, role) columns the LP uses and sizes within ``reach`` of them.

        The restriction has tens of columns instead of hundreds, so HiGHS solves it in
        about a second where the full MILP's root node alone can take half a minute;
        its optimum is usually within a percent of the global one (the integer optimum
        tends to use the sizes the LP likes, or their neighbours, rounded).  Falls back
        to the rounded LP counts (:func:`round_counts`) if the restriction has no
        solution; empty if the relaxation has none either."""
        tables, both = self._tables(space, evaluator)
        prob = np.asarray(evaluator.context.ranges.prob)
        lp = solve_exact(space, tables, prob, time_limit=self.time_limit,
                         prune_tol=self.prune_tol, max_island=self.max_island, relax=True,
                         both=both)
        if not lp.support:
            return lp.layout
        # the LP's columns +- reach, and the sizes it likes for every type and role: the
        # integer optimum often trades a fractional large island for whole smaller ones
        # of another type
        sizes = candidate_sizes(space, self.max_island)
        keep = {(g, sizes[g][k], r) for g, n, r in lp.support
                for k in range(len(sizes[g])) if abs(k - sizes[g].index(n)) <= reach}
        roles = ROLES if both is None else (*ROLES, COLOCATED)
        keep |= {(t.name, n, r) for t in space.types for _, n, _ in lp.support
                 for r in roles}
        res = solve_exact(space, tables, prob, time_limit=self.time_limit,
                          prune_tol=self.prune_tol, max_island=self.max_island,
                          node_limit=node_limit, keep=keep, both=both)
        return res.layout or lp.layout

    def search(self, space: SearchSpace, objective, *, seed: int = 0, progress=None,
               checkpoint=None, executor=None):
        # One MILP: nothing to checkpoint or to spread over workers.

        t0 = time.perf_counter()
        res = self.solve(space, objective, progress)
        settings = {"status": res.status, "bound": res.bound, "gap": res.gap,
                    "candidates": res.candidates, "pruned": res.pruned,
                    "colocated": self.offers_colocated(objective),
                    "time_limit": self.time_limit, "node_limit": self.node_limit,
                    "prune_tol": self.prune_tol,
                    "message": res.message}
        if self.polish:

            tracker = Tracker(space, objective, planned=self.polish + 1)
            start: Layout | None
            if res.layout:
                first = tracker.evaluate(res.layout, "exact")
                settings["milp_layout"] = [list(i) for i in res.layout]
                settings["milp_value"] = first.value
                settings["milp_cost"] = first.cost_per_hour
                start = res.layout
            else:
                # No disaggregated layout exists (e.g. GPUs for one island only); a
                # colocated one may: start from each type whole, as far as it fits.
                for t in space.types:
                    whole = ((t.name, t.snap_down(t.available)),)
                    if whole[0][1] >= 1 and space.fits(whole):
                        tracker.evaluate(whole, "start")
                start = tracker.best_layout
            if start:
                polish(tracker, start, space, self.polish)
            out = tracker.result(self.name, settings)
            out.wall_time = time.perf_counter() - t0
            return out
        if not res.layout:
            return SearchResult(self.name, None, None, [], settings, 0, 0,
                                time.perf_counter() - t0)
        score = objective(res.layout)
        wall = time.perf_counter() - t0
        point = HistoryPoint(0, wall, res.layout, score.value, score.cost_per_hour,
                             score.feasible, space.merit(score), phase="exact")
        return SearchResult(self.name, res.layout, score, [point], settings, 1, 0, wall)
