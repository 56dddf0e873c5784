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

import time
from dataclasses import dataclass, field

import numpy as np

from planner.outer.columns import (
    COLOCATED,
    LATTICE_FROM,
    ROLES,
    BothTables,
    Candidate,
    Tables,
    candidate_sizes,
    prune,
    round_counts,
    size_lattice,
)
from planner.outer.joint import ServiceColumns, solve_joint
from planner.outer.polish import polish
from planner.outer.protocol import HistoryPoint, Layout, SearchResult, SearchSpace
from planner.outer.tracking import Tracker


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
    feasible layout, not the global optimum.

    The MILP is :func:`planner.outer.joint.solve_joint`'s for one service of weight 1:
    the same columns and rows, in the same order."""
    service = ServiceColumns("", tables, np.asarray(prob), 1.0, both,
                             None if keep is None else frozenset(keep))
    res = solve_joint(space, [service], target=bool(space.target_rps),
                      time_limit=time_limit, mip_rel_gap=mip_rel_gap, prune_tol=prune_tol,
                      max_island=max_island, node_limit=node_limit, relax=relax)
    mine = res.services[0]
    return ExactResult(res.status, mine.layout, mine.roles, res.value, res.bound, res.gap,
                       res.cost_per_hour, res.seconds, res.candidates, res.pruned,
                       res.message, mine.counts, mine.support)


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


__all__ = ["COLOCATED", "LATTICE_FROM", "ROLES", "BothTables", "Candidate", "ExactResult",
           "ExactSearch", "Tables", "candidate_sizes", "prune", "round_counts",
           "size_lattice", "solve_exact"]
