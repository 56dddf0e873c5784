"""Solve what-if scenarios as ``planner plan`` does: each scenario's capacity is the one
``planner plan`` would print for it.

Each distinct problem becomes the request ``planner plan`` builds for it
(:func:`planner.whatif.request.plan_request`), planned by :func:`planner.plan.make_plan`
and -- for a ``closed`` solve -- taken through :func:`planner.closed_plan.close_plan`,
whose headline (the rate that holds the SLO in simulation) is the scenario's capacity;
the perf model's figure for the plan (``summary.analytic_requests_per_s``) is kept
beside it.  A ``planned`` solve stops after :func:`make_plan`: its capacity is the
analytic figure (``planner plan --no-sim-check``), which a sampled study then corrects
(planner.whatif.correction).

Scenarios that are the same problem (:meth:`Scenario.key`) are solved once; solves are
seeded (the spec's ``seed``) and deterministic, so the outcomes are the same whether
they are solved here, on an executor's workers or resumed from an interrupted run.
"""

from __future__ import annotations

import hashlib
import math
import pickle
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from planner.core.errors import NoPlanError
from planner.core.execution import Executor
from planner.outer.protocol import Layout, layout_counts
from planner.whatif.request import plan_request
from planner.whatif.scenarios import Scenario
from planner.whatif.spec import WhatIfSpec
from planner.whatif.workloads import load_mix
from planner.workload import Workload

#: What a solve does: ``make_plan`` and ``close_plan`` (the promise), or ``make_plan``
#: only (the analytic figure).
CLOSED, PLANNED = "closed", "planned"
SOLVES = (CLOSED, PLANNED)

#: Where a reported capacity comes from (``Outcome.capacity``).
CLOSED_LOOP = "closed loop"  # close_plan's headline: what `planner plan` prints
CORRECTED = "corrected"  # the analytic figure x the sample's measured correction
ANALYTIC = "analytic"  # the perf model's figure (`planner plan --no-sim-check`)
NO_PLAN = "no plan"  # nothing serves the scenario

@dataclass
class Outcome:
    """One scenario as ``planner plan`` plans it."""

    scenario: Scenario
    status: str  # the exact search's: optimal | time_limit | work_limit ... | no plan
    requests_per_s: float  # the capacity reported (``capacity`` says which; 0: none)
    cost_per_hour: float
    layout: Layout
    roles: tuple[str, ...]
    bound: float  # the exact search's proven upper bound on the analytic figure
    gap: float
    seconds: float
    decode_mean: float  # output tokens per request of the scenario's workload
    cached: bool = False  # the same problem was solved for an earlier scenario
    #: The perf model's capacity of the plan (``summary.analytic_requests_per_s`` of
    #: ``planner plan``; before the closed loop).
    analytic_requests_per_s: float = math.nan
    capacity: str = ANALYTIC  # CLOSED_LOOP | CORRECTED | ANALYTIC | NO_PLAN
    #: CORRECTED: the factor the analytic figure was multiplied by, and the measured
    #: relative error of that correction (planner.whatif.correction).
    correction: float = math.nan
    correction_error: float = math.nan
    #: The closed loop's answer came from one of ``planner plan``'s single-type
    #: alternatives (``summary.answer_from``): its label.
    answer_from: str = ""
    why: str = ""  # NO_PLAN: planner plan's reason
    #: The headline's error band as factors on ``requests_per_s`` (p10, p90; nan: none):
    #: ``summary.capacity_band`` of the plan (planner.capacity_band).  Factors, so a
    #: corrected figure carries its band.
    band_p10_factor: float = math.nan
    band_p90_factor: float = math.nan
    #: Each island's parallel layout (``"tp1-dp8-ep8"``), parallel to ``layout``; empty
    #: where unknown (a cell saved before it was kept).
    configs: tuple[str, ...] = ()

    def _configs(self) -> tuple[str, ...]:
        return self.configs if len(self.configs) == len(self.layout) else \
            ("",) * len(self.layout)

    def islands(self) -> list[dict[str, str]]:
        """Each island's role and layout (the layout "" where unknown)."""
        return [{"role": r, "config": c} for r, c in zip(self.roles, self._configs(),
                                                          strict=True)]

    @property
    def requests_per_s_p10(self) -> float:
        return self.requests_per_s * self.band_p10_factor

    @property
    def requests_per_s_p90(self) -> float:
        return self.requests_per_s * self.band_p90_factor

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
            "capacity": self.capacity,
            "analytic_requests_per_s": _finite(self.analytic_requests_per_s),
            "correction": _finite(self.correction),
            "correction_error": _finite(self.correction_error),
            "answer_from": self.answer_from or None, "why": self.why or None,
            "cost_per_hour": self.cost_per_hour,
            "output_tokens_per_s": self.output_tokens_per_s,
            "usd_per_m_output_tokens": _finite(self.usd_per_m_output_tokens),
            "gpus": self.gpus,
            "islands": [{"gpu": g, "size": n, "role": r, "config": c or None}
                        for (g, n), r, c in zip(self.layout, self.roles, self._configs(),
                                                strict=True)],
            "bound": _finite(self.bound), "gap": _finite(self.gap), "seconds": self.seconds,
            "cached": self.cached}


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _number(x: Any) -> float:
    return math.nan if x is None else float(x)


def outcome_from_plan(scenario: Scenario, plan: dict[str, Any], solve: str, seconds: float,
                      decode_mean: float) -> Outcome:
    """The outcome of ``scenario`` from the plan dict ``planner plan`` would write for it
    (after ``close_plan`` for a CLOSED solve): its headline, analytic figure, layout,
    cost and the exact search's status, bound and gap."""
    s = plan["summary"]
    rate = float(s["requests_per_s"])
    analytic = float(s.get("analytic_requests_per_s") or rate) if solve == CLOSED else rate
    islands = [i for i in plan["islands"] if i.get("role") != "idle"]
    exact = s.get("exact") or {}
    status = str(exact.get("status") or s.get("status") or "")
    capacity = CLOSED_LOOP if solve == CLOSED else ANALYTIC
    why = ""
    if not rate > 0:
        status, capacity = NO_PLAN, NO_PLAN
        why = "the SLO holds at no rate in simulation" if solve == CLOSED else \
            "the plan serves nothing"
    answer = s.get("answer_from")
    band = s.get("capacity_band") or {}
    return Outcome(scenario, status, max(rate, 0.0), float(s["cost_per_hour"]),
                   tuple((str(i["gpu"]), int(i["size"])) for i in islands),
                   tuple(str(i["role"]) for i in islands), _number(exact.get("bound")),
                   _number(exact.get("gap")), seconds, decode_mean,
                   analytic_requests_per_s=analytic, capacity=capacity,
                   answer_from=str(answer.get("label", "")) if isinstance(answer, dict)
                   else "", why=why, band_p10_factor=_number(band.get("p10_factor")),
                   band_p90_factor=_number(band.get("p90_factor")),
                   configs=tuple(str(i.get("config") or "") for i in islands))


class Cells(Protocol):
    """Where finished problems are kept across runs (planner.whatif.cells.CellStore)."""

    def load(self, scenario: Scenario, solve: str) -> Outcome | None: ...

    def save(self, out: Outcome, solve: str) -> None: ...


@dataclass
class WhatIfRunner:
    """Solves scenarios of one spec, each distinct problem once per kind of solve."""

    spec: WhatIfSpec
    _workloads: dict[tuple, Workload] = field(default_factory=dict)
    _solved: dict[tuple, Outcome] = field(default_factory=dict)
    _emitted: set[tuple] = field(default_factory=set)  # keys already handed out

    def workload(self, scenario: Scenario) -> Workload:
        key = scenario.components
        if key not in self._workloads:
            self._workloads[key] = load_mix(key, scenario.workload)
        return self._workloads[key]

    def solve(self, scenario: Scenario, solve: str = CLOSED) -> Outcome:
        return self.solve_many([scenario], solve=solve)[0]

    def solve_many(self, scenarios: Sequence[Scenario], executor: Executor | None = None,
                   cells: Cells | None = None,
                   done: Callable[[Scenario], None] | None = None,
                   solve: str = CLOSED) -> list[Outcome]:
        """The outcomes of ``scenarios``, in order, each solved as ``solve`` says
        (CLOSED or PLANNED).  Each distinct problem is solved once per runner -- the
        first scenario with a key gets the solve, later ones a ``cached`` copy --
        whether it is solved here, on the ``executor``'s workers, or loaded from the
        ``cells`` of an interrupted run (which also receive every new solve as soon as
        it finishes).  ``done(scenario)`` runs as each problem is settled (completion
        order)."""
        todo: dict[tuple, Scenario] = {}
        for sc in scenarios:
            key = (sc.key(), solve)
            if key in self._solved or key in todo:
                continue
            saved = cells.load(sc, solve) if cells is not None else None
            if saved is not None:
                self._solved[key] = saved
                if done:
                    done(sc)
            else:
                todo[key] = sc
        jobs = list(todo.values())

        def finished(i: int, out: Outcome) -> None:
            self._solved[(jobs[i].key(), solve)] = out
            if cells is not None:
                cells.save(out, solve)
            if done:
                done(jobs[i])

        if executor is None or executor.workers <= 1 or len(jobs) <= 1:
            for i, sc in enumerate(jobs):
                finished(i, self._solve_new(sc, solve))
        else:
            executor.map(ScenarioSolver(self.spec), [(sc, solve) for sc in jobs],
                         done=finished)
        out = []
        for sc in scenarios:
            key = (sc.key(), solve)
            hit = self._solved[key]
            if key in self._emitted:
                hit = replace(hit, scenario=sc, seconds=0.0, cached=True)
            elif hit.scenario is not sc:
                hit = replace(hit, scenario=sc)
            self._emitted.add(key)
            out.append(hit)
        return out

    def _solve_new(self, scenario: Scenario, solve: str = CLOSED) -> Outcome:
        """One problem, solved here (no cache): ``make_plan`` on the request ``planner
        plan`` builds for it, then ``close_plan`` for a CLOSED solve."""
        from planner.closed_plan import close_plan
        from planner.plan import make_plan

        t0 = time.perf_counter()
        decode_mean = float(self.workload(scenario).decode_mean)
        req = plan_request(self.spec, scenario)
        if not any(e.count >= 1 for e in req.inventory.entries):
            return Outcome(scenario, NO_PLAN, 0.0, 0.0, (), (), 0.0, math.nan,
                           time.perf_counter() - t0, decode_mean, capacity=NO_PLAN,
                           why="no GPU is available")
        try:
            plan = make_plan(req)
        except NoPlanError as err:
            # a result, not an error: nothing within the supply and budget serves it
            return Outcome(scenario, NO_PLAN, 0.0, 0.0, (), (), math.nan, math.nan,
                           time.perf_counter() - t0, decode_mean, capacity=NO_PLAN,
                           why=str(err))
        # planner plan also plans each single type through the loop and answers with the
        # best: the base does the same, so it equals planner plan's headline; the other
        # scenarios skip it (the study's own equal-cost options are those alternatives)
        alternatives = None if scenario.study == "base" else False  # None: as planner plan
        d = close_plan(plan, seed=self.spec.seed, alternatives=alternatives) \
            if solve == CLOSED else plan.to_dict()
        return outcome_from_plan(scenario, d, solve, time.perf_counter() - t0, decode_mean)

    @property
    def problems_solved(self) -> int:
        """Distinct problems planned (each once, whatever solves it had)."""
        return len({key for key, _ in self._solved})

    @property
    def closed_loops(self) -> int:
        """Distinct problems taken through the closed loop."""
        return sum(solve == CLOSED for _, solve in self._solved)


class ScenarioSolver:
    """``(scenario, solve) -> Outcome`` as a picklable function for an executor's
    workers.

    Each worker process builds one :class:`WhatIfRunner` per spec and keeps it (with
    its workloads, and the perf model's process-wide island tables) for every scenario
    it is sent."""

    def __init__(self, spec: WhatIfSpec) -> None:
        self.spec = spec
        self.key = hashlib.sha256(pickle.dumps(spec)).hexdigest()

    def __call__(self, item: tuple[Scenario, str]) -> Outcome:
        scenario, solve = item
        runner = _WORKER_RUNNERS.get(self.key)
        if runner is None:
            runner = _WORKER_RUNNERS[self.key] = WhatIfRunner(self.spec)
        return runner._solve_new(scenario, solve)


_WORKER_RUNNERS: dict[str, WhatIfRunner] = {}

__all__ = ["ANALYTIC", "CLOSED", "CLOSED_LOOP", "CORRECTED", "NO_PLAN", "PLANNED", "SOLVES",
           "Outcome", "ScenarioSolver", "WhatIfRunner", "outcome_from_plan"]
