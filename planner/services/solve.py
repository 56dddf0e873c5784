"""Plan a fleet of services on the perf model: one joint MILP, and the best split.

Each service gets its own planning context (model, workload, SLO, engine: its range
tables over every candidate island size, as ``planner plan`` builds them for one model);
:func:`planner.outer.joint.solve_joint` then chooses every service's islands at once
from the shared inventory and budget.  :func:`best_split` answers what a user who plans
each model alone would get -- the yardstick the joint plan must beat.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np

from perfmodel.launch import engine_flag_error, fleet_engine
from planner.context.evaluate import LayoutEvaluator, PlanningContext
from planner.context.request import PlanRequest
from planner.core.errors import NoPlanError, PlannerError
from planner.fleet.inventory import Inventory
from planner.inner import make_inner_solver
from planner.outer.exact import ExactSearch
from planner.outer.joint import JointResult, ServiceColumns, solve_joint
from planner.outer.protocol import Layout, SearchSpace, layout_counts
from planner.plan import Plan, explain_no_plan, solve_layout
from planner.services.spec import FleetSpec, Service


@dataclass(frozen=True)
class Correction:
    """What the closed loop measured of one service's islands, for the next solve:
    ``kinds``, measured / planned capacity per island kind ``"gpu:size:role"`` (the
    islands it saturated), and ``phases``, the share of what its islands of a phase
    sustain at which the SLO still holds ("prefill", "decode", and "both" for colocated
    islands alone; absent: 1)."""

    kinds: Mapping[str, float] = field(default_factory=dict)
    phases: Mapping[str, float] = field(default_factory=dict)

    def factor(self, gpu: str, size: int, role: str) -> float:
        """The factor on the range rates of one (type, size, role) column; a colocated
        island serves both phases, so the smaller phase factor is its."""
        phase = min(self.phases.values(), default=1.0) if role == "both" \
            else self.phases.get(role, 1.0)
        return float(self.kinds.get(f"{gpu}:{size}:{role}", 1.0)) * float(phase)


#: Bisection steps of the best split's common rate (each halves the bracket).
SPLIT_STEPS = 8
#: Relative MILP gap of the fleet solves.  One model's MILP is solved to 1e-4; three
#: services triple its columns and HiGHS spends most of its time closing the last
#: 0.1 %, well below what the closed loop resolves (λ moves by several per cent between
#: its rounds).  The proven bound is reported either way.
FLEET_MIP_GAP = 1e-3


@dataclass(frozen=True)
class FleetRequest:
    """What ``planner plan --fleet`` asks: a fleet, an inventory, a budget (shares) or
    none (targets), and the settings every service shares."""

    fleet: FleetSpec
    inventory: Inventory
    budget: float | None = None
    seed: int = 0
    ranges: int = 32
    plan_at: str = "point"
    colocated: str = "auto"
    island_granularity: str = "server"
    exact_time_limit: float = 600.0
    where: str = "fleet"  # the fleet file, for messages
    #: "exact" (the joint MILP) or an outer search over joint layouts (divider, direct,
    #: random; planner.services.search) with its options
    search: str = "exact"
    search_options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.fleet.mode == "shares" and self.budget is None:
            raise PlannerError(f"{self.where}: the services have shares: give --budget "
                               "(the fleet's $/h); for rates to meet give each service a "
                               "target_rps instead")
        if self.fleet.mode == "targets" and self.budget is not None:
            raise PlannerError(f"{self.where}: the services have targets (target_rps): "
                               "the planner finds the cheapest fleet meeting them, so "
                               "--budget does not apply; give shares to plan for a budget")

    @property
    def targets(self) -> bool:
        return self.fleet.mode == "targets"

    def space(self) -> SearchSpace:
        top = max((s.target_rps or 0.0) for s in self.fleet.services) or None
        return SearchSpace.from_inventory(self.inventory, budget=self.budget,
                                          target_rps=top if self.targets else None,
                                          granularity=self.island_granularity)

    def engine_of(self, svc: Service) -> str:
        gpus = [e.gpu for e in self.inventory.entries]
        if svc.engine is None:
            return fleet_engine(gpus)
        wrong = engine_flag_error(svc.engine, gpus)
        if wrong:
            raise PlannerError(f"{self.where}: service {svc.name!r}: field 'engine': "
                               + wrong.replace("--engine", "engine"))
        return svc.engine

    def request(self, svc: Service) -> PlanRequest:
        """The one-model request of service ``svc`` (the fleet's inventory and budget,
        so its candidate islands are the fleet's)."""
        return PlanRequest(self.inventory, model=svc.model, workload=svc.workload,
                           budget=self.budget, target_rps=None, search="exact",
                           seed=self.seed, ranges=self.ranges, slo=svc.slo,
                           compare_homogeneous=False, compare_exact=False,
                           exact_time_limit=self.exact_time_limit,
                           engine=self.engine_of(svc), plan_at=self.plan_at,
                           colocated=self.colocated,
                           island_granularity=self.island_granularity)


@dataclass
class ServiceModel:
    """One service's planning context, evaluator and range tables."""

    service: Service
    request: PlanRequest
    context: PlanningContext
    evaluator: LayoutEvaluator
    exact: ExactSearch = field(default_factory=ExactSearch)

    @classmethod
    def build(cls, req: FleetRequest, svc: Service) -> ServiceModel:
        request = req.request(svc)
        ctx = PlanningContext.for_request(request)
        ev = LayoutEvaluator(ctx, make_inner_solver("maxrate"), objective="sustained",
                             range_rate="mix")
        return cls(svc, request, ctx, ev)

    @cached_property
    def prob(self) -> np.ndarray:
        return np.asarray(self.context.ranges.prob, float)

    def columns(self, space: SearchSpace, weight: float,
                correction: Correction | None = None) -> ServiceColumns:
        """The service's MILP columns, their range rates scaled by ``correction`` (what
        the closed loop measured)."""
        tables = self.exact.tables(space, self.evaluator)
        both = self.exact.colocated_tables(space, self.evaluator)
        if correction is not None:
            f = correction.factor
            tables = {(gpu, g): (bp * f(gpu, g, "prefill"), bd * f(gpu, g, "decode"))
                      for (gpu, g), (bp, bd) in tables.items()}
            if both is not None:
                both = {(gpu, g): b * f(gpu, g, "both") for (gpu, g), b in both.items()}
        return ServiceColumns(self.service.name, tables, self.prob, weight, both)

    def plan(self, layout: Layout, cost_share: float) -> Plan:
        """This service's islands solved and evaluated as ``planner plan`` solves its
        winner: a :class:`Plan` the closed loop, the report and the exporter take.  Its
        request's budget is what its islands cost (its part of the fleet's money)."""
        solver = self.evaluator.solver
        lay, result, evaluation, op = solve_layout(self.evaluator, solver, layout, "maxrate")
        request = replace(self.request, budget=cost_share if cost_share > 0 else None)
        return Plan(request, lay, result, evaluation, None, [], None, self.context, {}, op)

    def why_not(self) -> str:
        """The single-model explanation, its flags named as the fleet file's fields."""
        text = explain_no_plan(self.request, self.evaluator)
        for flag, fieldname in (("--ttft/--tpot", "the service's slo (ttft_ms, tpot_ms)"),
                                ("another --engine", "another engine (the service's field "
                                                     "'engine')"),
                                ("--target-rps", "target_rps")):
            text = text.replace(flag, fieldname)
        return text


@dataclass
class FleetSolution:
    """Every service's islands from one solve (joint or split) on the perf model."""

    value: float  # λ (shares) or the largest target (targets), requests/s
    layouts: dict[str, Layout]
    costs: dict[str, float]  # $/h of each service's islands

    @property
    def cost_per_hour(self) -> float:
        return sum(self.costs.values())


def weights(req: FleetRequest, asked: dict[str, float] | None = None) -> dict[str, float]:
    """Each service's demand weight (planner.outer.joint): its share, or its (asked)
    target over the largest one."""
    if not req.targets:
        return {s.name: float(s.share or 0.0) for s in req.fleet.services}
    rates = asked or {s.name: float(s.target_rps or 0.0) for s in req.fleet.services}
    top = max(rates.values())
    return {k: v / top for k, v in rates.items()}


def _unservable(models: Sequence[ServiceModel], res: JointResult) -> NoPlanError:
    """The error for a joint MILP without a solution, naming the service that cannot
    be served when one alone cannot (its single-model explanation)."""
    for m in models:
        if f"service {m.service.name!r}" in res.message:
            return NoPlanError(f"service {m.service.name!r} cannot be served: {m.why_not()}")
    return NoPlanError(f"no fleet serves every service: {res.message}")


def _milp(req: FleetRequest, space: SearchSpace, cols: Sequence[ServiceColumns], *,
          target: bool = False) -> JointResult:
    """:func:`planner.outer.joint.solve_joint` with the fleet's settings: the exact
    search's pruning and node limit, :data:`FLEET_MIP_GAP`, the request's time limit."""
    ex = ExactSearch()
    return solve_joint(space, cols, target=target, time_limit=req.exact_time_limit,
                       mip_rel_gap=FLEET_MIP_GAP, prune_tol=ex.prune_tol,
                       node_limit=ex.node_limit)


def solve_fleet(req: FleetRequest, models: Sequence[ServiceModel], *,
                asked: dict[str, float] | None = None,
                correction: Mapping[str, Correction] | None = None) -> FleetSolution:
    """The joint optimum over every service's columns.  ``asked``: per-service target
    rates to plan for instead of the fleet file's (target mode's re-plans);
    ``correction``: what the closed loop measured of each service
    (:class:`Correction`), scaling its columns -- so the money goes where the promise
    is short."""
    space = req.space()
    w = weights(req, asked)
    if req.targets and asked:
        space = replace(space, target_rps=max(asked.values()))
    fix = correction or {}
    cols = [m.columns(space, w[m.service.name], fix.get(m.service.name)) for m in models]
    res = _milp(req, space, cols, target=req.targets)
    if not any(s.layout for s in res.services):
        raise _unservable(models, res)
    pairs = list(zip(models, res.services, strict=True))
    return FleetSolution(res.value, {m.service.name: s.layout for m, s in pairs},
                         {m.service.name: s.cost_per_hour for m, s in pairs})


def _minus(space: SearchSpace, used: dict[str, int], money: float | None
           ) -> SearchSpace | None:
    """``space`` without the GPUs ``used`` and with ``money`` $/h left (None: no budget);
    None when no GPU is left."""
    types = tuple(replace(t, available=t.available - used.get(t.name, 0))
                  for t in space.types)
    left = tuple(t for t in types if t.available > 0)
    return replace(space, types=left, budget=money) if left else None


def alone(req: FleetRequest, models: Sequence[ServiceModel], rates: dict[str, float],
          correction: Mapping[str, Correction] | None = None) -> FleetSolution | None:
    """Each service planned alone, in the fleet file's order, for ``rates[name]`` at the
    least cost from what the services before it left (GPUs and budget); None when one
    cannot be served that way."""
    space = req.space()
    used: dict[str, int] = {}
    money = req.budget
    layouts, costs = {}, {}
    for m in models:
        rest = _minus(space, used, money)
        if rest is None:
            return None
        rest = replace(rest, target_rps=rates[m.service.name])
        fix = (correction or {}).get(m.service.name)
        mine = _milp(req, rest, [m.columns(rest, 1.0, fix)], target=True).services[0]
        if not mine.layout:
            return None
        layouts[m.service.name], costs[m.service.name] = mine.layout, mine.cost_per_hour
        for gpu, n in layout_counts(mine.layout).items():
            used[gpu] = used.get(gpu, 0) + n
        if money is not None:
            money -= mine.cost_per_hour
            if money < -1e-9 * max(1.0, req.budget or 1.0):
                return None
            money = max(money, 1e-9)
    return FleetSolution(0.0, layouts, costs)


def best_split(req: FleetRequest, models: Sequence[ServiceModel], ceiling: float,
               correction: Mapping[str, Correction] | None = None) -> FleetSolution | None:
    """The best the same budget buys when it is split into independent one-model plans.

    Shares: the largest λ at which every service, planned alone for λ·share at least
    cost from what the services before it left, fits the budget -- bisection on λ below
    ``ceiling`` (the joint optimum's bound: every split is a feasible joint point, so
    none can exceed it).  The best split of a budget equalises the services' λ (money
    beyond what the weakest service's λ needs buys nothing), so the search over splits
    is this one-dimensional search.  Targets: each service alone for its own target.
    ``correction``: what the closed loop measured, as in :func:`solve_fleet`.  None
    when no split serves every service."""
    if req.targets:
        out = alone(req, models, {s.name: float(s.target_rps or 0.0)
                                   for s in req.fleet.services})
        if out is not None:
            out.value = max(float(s.target_rps or 0.0) for s in req.fleet.services)
        return out
    share = {s.name: float(s.share or 0.0) for s in req.fleet.services}
    if correction:  # measured capacities above the tables' lift the ceiling with them
        ceiling *= max([1.0] + [f for c in correction.values() for f in c.kinds.values()])
    best: FleetSolution | None = None

    def fits(rate: float) -> bool:
        nonlocal best
        got = alone(req, models, {k: rate * v for k, v in share.items()}, correction)
        if got is not None:
            got.value = rate
            best = got
        return got is not None

    # a feasible rate first (halving from the ceiling), then bisection above it
    lo, hi = ceiling, ceiling
    for _ in range(SPLIT_STEPS):
        lo *= 0.5
        if fits(lo):
            break
        hi = lo
    else:
        return None
    for _ in range(SPLIT_STEPS):
        if hi / lo < 1.005:
            break
        mid = math.sqrt(lo * hi)
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return best


def solo_ceiling(req: FleetRequest, models: Sequence[ServiceModel]) -> float:
    """An upper bound on any split's λ without the joint MILP: no service serves more
    than it would alone with the whole inventory and budget, so λ <= min over services
    of (its solo optimum's proven bound / its share).  0 when one cannot be served."""
    space = replace(req.space(), target_rps=None)
    ceiling = math.inf
    for m in models:
        res = _milp(req, space, [m.columns(space, 1.0)])
        top = res.bound if math.isfinite(res.bound) and res.bound > 0 else res.value
        ceiling = min(ceiling, top / float(m.service.share or 1.0))
    return ceiling if math.isfinite(ceiling) else 0.0


def service_plans(models: Sequence[ServiceModel], sol: FleetSolution) -> dict[str, Plan]:
    """Every service's :class:`Plan` for the islands ``sol`` gives it."""
    return {m.service.name: m.plan(sol.layouts[m.service.name],
                                   sol.costs[m.service.name]) for m in models}


__all__ = ["FleetRequest", "FleetSolution", "ServiceModel", "best_split", "service_plans",
           "solo_ceiling", "solve_fleet", "weights", "alone", "Correction"]
