"""Solve what-if scenarios with the exact outer MILP on shared evaluator contexts.

Why the exact solver and not the BO of ``planner plan``: a procurement study compares
scenarios with each other, and the differences of interest (a 10 % price cut, one more
GPU type) are often a few percent of throughput.  A stochastic search's run-to-run noise
is of that order and would blur them; the MILP of planner.outer.exact returns the global
optimum of the same model for every scenario (up to its proven gap, reported per row),
and is also far cheaper than a full ``make_plan`` (no search, no full-resolution
re-evaluation, no baselines).

Sharing: one :class:`~planner.context.evaluate.LayoutEvaluator` per workload holds every GPU type
any scenario uses; its per-(type, size) range tables do not depend on prices, and
perfmodel caches island tables process-wide by physical GPU figures, so price sweeps and
budget sweeps cost only their MILPs.  Scenarios that are the same problem
(:meth:`Scenario.key`) are solved once.

Reported figures are the MILP's: the sustained request rate T of thesis §4.8 at the
study's range resolution (``ranges``, 16 by default -- coarser than ``planner plan``'s
32, which suits comparisons; re-plan a chosen scenario with ``planner plan`` for the
full-resolution evaluation).
"""

from __future__ import annotations

import hashlib
import math
import pickle
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from planner.context.evaluate import LayoutEvaluator, PlanningContext
from planner.core.execution import Executor
from planner.inner import make_inner_solver
from planner.outer.exact import ExactSearch
from planner.outer.protocol import Layout, SearchSpace, layout_counts
from planner.whatif.scenarios import Scenario
from planner.whatif.spec import WhatIfSpec
from planner.whatif.workloads import load_mix
from planner.workload import Workload


@dataclass
class Outcome:
    """The optimum of one scenario."""

    scenario: Scenario
    status: str  # optimal | time_limit (incumbent, see gap) | no plan | the MILP's other
    requests_per_s: float  # T, the sustained request rate (0 when nothing serves)
    cost_per_hour: float
    layout: Layout
    roles: tuple[str, ...]
    bound: float  # proven upper bound on T
    gap: float
    seconds: float
    decode_mean: float  # output tokens per request of the scenario's workload
    cached: bool = False  # the same problem was solved for an earlier scenario

    @property
    def gpus(self) -> dict[str, int]:
        return layout_counts(self.layout)

    @property
    def output_tokens_per_s(self) -> float:
        return self.requests_per_s * self.decode_mean

    @property
    def usd_per_m_output_tokens(self) -> float:
        """$ per million output tokens at the sustained rate (nan without throughput)."""
        tps = self.output_tokens_per_s
        return self.cost_per_hour / (tps * 3600.0) * 1e6 if tps > 0 else math.nan

    def to_dict(self) -> dict[str, Any]:
        s = self.scenario
        return {
            "study": s.study, "scenario": s.name, "option": s.option, "workload": s.workload,
            "budget": s.budget, "params": dict(s.params),
            "supply": [{"type": t.name, "available": t.available,
                        "price_per_hour": t.price_per_hour, "min_island": t.min_island,
                        "gpus_per_node": t.gpus_per_node}
                       for t in s.supply],
            "status": self.status, "requests_per_s": self.requests_per_s,
            "cost_per_hour": self.cost_per_hour,
            "output_tokens_per_s": self.output_tokens_per_s,
            "usd_per_m_output_tokens": _finite(self.usd_per_m_output_tokens),
            "gpus": self.gpus,
            "islands": [{"gpu": g, "size": n, "role": r}
                        for (g, n), r in zip(self.layout, self.roles, strict=True)],
            "bound": _finite(self.bound), "gap": _finite(self.gap), "seconds": self.seconds,
            "cached": self.cached}


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


class Cells(Protocol):
    """Where finished problems are kept across runs (planner.whatif.cells.CellStore)."""

    def load(self, scenario: Scenario) -> Outcome | None: ...

    def save(self, out: Outcome) -> None: ...


@dataclass
class WhatIfRunner:
    """Solves scenarios of one spec, caching contexts and identical problems."""

    spec: WhatIfSpec
    _evaluators: dict[tuple, LayoutEvaluator] = field(default_factory=dict)
    _workloads: dict[tuple, Workload] = field(default_factory=dict)
    _solved: dict[tuple, Outcome] = field(default_factory=dict)
    _emitted: set[tuple] = field(default_factory=set)  # keys already handed out

    def workload(self, scenario: Scenario) -> Workload:
        key = scenario.components
        if key not in self._workloads:
            self._workloads[key] = load_mix(key, scenario.workload)
        return self._workloads[key]

    def evaluator(self, scenario: Scenario) -> LayoutEvaluator:
        key = scenario.components
        if key not in self._evaluators:
            w = self.workload(scenario)
            gpus = {e.name: e.gpu for e in (*self.spec.inventory.entries, *self.spec.add)}
            ctx = PlanningContext.build(model=self.spec.model, workload=w,
                                        ranges=self.spec.ranges, gpus=gpus, slo=self.spec.slo,
                                        engine=self.spec.engine,
                                        network=self.spec.inventory.network)
            self._evaluators[key] = LayoutEvaluator(ctx, make_inner_solver("maxrate"))
        return self._evaluators[key]

    def solve(self, scenario: Scenario) -> Outcome:
        return self.solve_many([scenario])[0]

    def solve_many(self, scenarios: Sequence[Scenario], executor: Executor | None = None,
                   cells: Cells | None = None,
                   done: Callable[[Scenario], None] | None = None) -> list[Outcome]:
        """The outcomes of ``scenarios``, in order.  Each distinct problem is solved
        once per runner -- the first scenario with a key gets the solve, later ones a
        ``cached`` copy -- whether it is solved here, on the ``executor``'s workers, or
        loaded from the ``cells`` of an interrupted run (which also receive every new
        solve as soon as it finishes).  ``done(scenario)`` runs as each problem is
        settled (completion order)."""
        todo: dict[tuple, Scenario] = {}
        for sc in scenarios:
            key = sc.key()
            if key in self._solved or key in todo:
                continue
            saved = cells.load(sc) if cells is not None else None
            if saved is not None:
                self._solved[key] = saved
                if done:
                    done(sc)
            else:
                todo[key] = sc
        jobs = list(todo.values())

        def finished(i: int, out: Outcome) -> None:
            self._solved[jobs[i].key()] = out
            if cells is not None:
                cells.save(out)
            if done:
                done(jobs[i])

        if executor is None or executor.workers <= 1 or len(jobs) <= 1:
            for i, sc in enumerate(jobs):
                finished(i, self._solve_new(sc))
        else:
            executor.map(ScenarioSolver(self.spec), jobs, done=finished)
        out = []
        for sc in scenarios:
            key = sc.key()
            hit = self._solved[key]
            if key in self._emitted:
                hit = replace(hit, scenario=sc, seconds=0.0, cached=True)
            elif hit.scenario is not sc:
                hit = replace(hit, scenario=sc)
            self._emitted.add(key)
            out.append(hit)
        return out

    def _solve_new(self, scenario: Scenario) -> Outcome:
        """One problem, solved here (no cache)."""
        t0 = time.perf_counter()
        decode_mean = float(self.workload(scenario).decode_mean)
        types = tuple(t for t in scenario.supply if t.snap_down(t.available) >= 1)
        if not types:
            out = Outcome(scenario, "no plan", 0.0, 0.0, (), (), 0.0, math.nan,
                          time.perf_counter() - t0, decode_mean)
        else:
            o = self.spec.solver
            exact = ExactSearch(time_limit=o.time_limit, mip_rel_gap=o.mip_gap,
                                prune_tol=o.prune_tol, max_island=o.max_island)
            res = exact.solve(SearchSpace(types, scenario.budget), self.evaluator(scenario))
            if res.layout and res.value > 0:
                out = Outcome(scenario, res.status, float(res.value), float(res.cost_per_hour),
                              res.layout, res.roles, float(res.bound), float(res.gap),
                              time.perf_counter() - t0, decode_mean)
            else:
                # T = 0 is feasible for any layout: an "optimal" zero means no layout
                # within the supply and budget serves both phases.
                out = Outcome(scenario, "no plan" if res.status in ("optimal", "infeasible")
                              else res.status,
                              0.0, 0.0, (), (), float(res.bound), math.nan,
                              time.perf_counter() - t0, decode_mean)
        return out

    @property
    def problems_solved(self) -> int:
        return len(self._solved)


class ScenarioSolver:
    """``scenario -> Outcome`` as a picklable function for an executor's workers.

    Each worker process builds one :class:`WhatIfRunner` per spec and keeps it (with
    its evaluators and perf-model tables) for every scenario it is sent, so a worker
    pays for a workload's tables once, as the serial runner does."""

    def __init__(self, spec: WhatIfSpec) -> None:
        self.spec = spec
        self.key = hashlib.sha256(pickle.dumps(spec)).hexdigest()

    def __call__(self, scenario: Scenario) -> Outcome:
        runner = _WORKER_RUNNERS.get(self.key)
        if runner is None:
            runner = _WORKER_RUNNERS[self.key] = WhatIfRunner(self.spec)
        return runner._solve_new(scenario)


_WORKER_RUNNERS: dict[str, WhatIfRunner] = {}

__all__ = ["Outcome", "ScenarioSolver", "WhatIfRunner"]
