"""`make_plan`: inventory + budget + model + workload -> the plan and its comparisons.

Pure orchestration (no files, no terminal): build the planning context, run the outer
search with the chosen inner solver, re-solve the winner, evaluate it at full length
resolution (§5.2.2), and compute what a buyer compares it with — the best homogeneous
plan of each GPU type at the same budget, and the exact optimum of the model (the BO's
optimality gap).  ``planner.report`` turns a :class:`Plan` into files.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

import numpy as np

from perfmodel.launch import vendor_violation
from planner.capacity_band import with_band
from planner.context.evaluate import LayoutEvaluator, PlanningContext
from planner.context.feasibility import served_lengths, unmet_slo
from planner.context.operating import OperatingPoint, operating_point
from planner.context.request import PlanRequest
from planner.core.errors import NoPlanError, PlannerError
from planner.core.execution import Executor
from planner.fleet.network import NetworkSpec, parse_network
from planner.inner import make_inner_solver, needs_context
from planner.inner.evaluator import Evaluation, evaluate, pipeline_evaluation
from planner.inner.pipeline_map import DataCentreNetwork
from planner.inner.result import InnerResult
from planner.outer.exact import ExactResult, ExactSearch, candidate_sizes
from planner.outer.protocol import (
    Layout,
    LayoutObjective,
    SearchResult,
    SearchSpace,
    affordable,
    canonical_layout,
    layout_cost,
    layout_counts,
)
from planner.outer.registry import OUTER_SEARCHES, iterative, make_search, takes_any_objective
from planner.run.deployment import Deployment
from planner.run.plan_json import plan_dict
from planner.sim.objective import SimulatedObjective

# Progress callback: (step name, done, total)
StepProgress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class Baseline:
    """The best plan of one kind (a single GPU type, or the exact optimum)."""

    label: str
    layout: Layout
    value: float  # requests/s
    cost_per_hour: float
    status: str
    bound: float = math.nan
    gap: float = math.nan


@dataclass
class Plan:
    request: PlanRequest
    layout: Layout
    result: InnerResult
    evaluation: Evaluation
    search: SearchResult | None
    homogeneous: list[Baseline]
    exact: Baseline | None
    context: PlanningContext
    seconds: dict[str, float]
    operating: OperatingPoint | None = None  # None for pipeline plans

    @property
    def value(self) -> float:
        return float(self.result.R_sustained)

    @property
    def cost_per_hour(self) -> float:
        return layout_cost(self.layout, {g: gpu.price_per_hour
                                         for g, gpu in self.context.gpus.items()})

    @property
    def gpus_used(self) -> dict[str, int]:
        return layout_counts(self.layout)

    @property
    def best_homogeneous(self) -> Baseline | None:
        ok = [b for b in self.homogeneous if b.value > 0]
        return max(ok, key=lambda b: b.value) if ok else None

    @property
    def deployment(self) -> Deployment:
        """What the plan deploys, typed (planner.run.deployment); plan.json is its
        serialisation.  Pipeline plans (seeds 000/001) describe chains, not islands:
        ``PlannerError``."""
        if needs_context(self.request.inner):
            raise PlannerError("a pipeline plan describes chains of blocks, not islands")
        ctx = self.context
        nodes = {t: s.gpus_per_node for t, s in (ctx.servers or {}).items()}
        return Deployment.from_solution(self.result, self.operating, model=ctx.model,
                                        calibration=ctx.calib, workload=ctx.workload.name,
                                        gpus=ctx.gpus, gpus_per_node=nodes)

    def to_dict(self) -> dict[str, Any]:
        req = self.request
        return with_band(plan_dict(
            request=req.to_dict(), result=self.result, evaluation=self.evaluation,
            ranges_mid=self.context.ranges.mid,
            prices={g: gpu.price_per_hour for g, gpu in self.context.gpus.items()},
            available={e.name: e.count for e in req.inventory.entries}, budget=req.budget,
            search=self.search, homogeneous=self.homogeneous, exact=self.exact,
            timings=self.seconds, operating=self.operating,
            slo_exempt=self.context.slo_exempt))

    @property
    def bo_gap(self) -> float | None:
        """(exact optimum - this plan) / exact optimum, if the exact solve ran."""
        if self.exact is None or not self.exact.value > 0:
            return None
        if needs_context(self.request.inner):
            return None  # the exact MILP is another model, not this search's optimum
        return (self.exact.value - self.value) / self.exact.value


#: Island-size tables above which ``--search auto`` prefers BO to the exact MILP
#: (each table is ~10-40 ms of perf model; the exact search builds them all).
EXACT_TABLE_LIMIT = 4_000


def choose_search(req: PlanRequest, space: SearchSpace, colocated: bool) -> tuple[str, str]:
    """The outer search ``--search auto`` runs, and why (docs/outer.md, "What BO is for").

    The exact MILP over island counts is the global optimum of the analytic model and,
    with the planner's per-length range tables, solves every inventory we ship in
    seconds (benchmarks/bo_vs_exact.py, bench_scale.py) -- faster than the BO; BO is for
    what a MILP cannot express (the simulated objective, pipeline inner solvers), for
    size spaces too large to tabulate, and for the thesis's midpoint tables, on which
    HiGHS needs minutes."""
    if req.search != "auto":
        return req.search, "as asked (--search)"
    if needs_context(req.inner):
        return "divider", (f"--inner {req.inner} has no per-island tables for the exact "
                           "MILP: divider BO")
    if req.objective == "simulated":
        return "divider", ("the simulated objective is no MILP: divider BO, warm-started "
                           "from the exact LP relaxation and polished locally")
    if req.thesis:
        return "divider", ("the thesis's midpoint range tables make the MILP slow (17-300 s "
                           "per Table 5.1 cell against 7-18 s for BO at >= 99.4 % of it, "
                           "docs/bo-vs-exact.md): divider BO with LP warm start")

    tables = sum(len(v) for v in candidate_sizes(space).values())
    if tables > EXACT_TABLE_LIMIT:
        return "divider", (f"{tables:,} island sizes are too many to tabulate for the "
                           "exact MILP: divider BO with LP warm start")
    why = f"exact MILP over {tables:,} island sizes: the optimum of the model"
    if colocated:
        why += " (prefill, decode and colocated columns)"
    return "exact", why


def _exact_baseline(label: str, space: SearchSpace, ev: LayoutEvaluator, limit: float,
                    progress: StepProgress | None, step: str) -> Baseline:
    exact = ExactSearch(time_limit=limit)
    res: ExactResult = exact.solve(space, ev, None if progress is None else
                                   (lambda d, t, _b: progress(step, d, t)))
    if not res.layout:
        return Baseline(label, (), 0.0, 0.0, res.status, res.bound, res.gap)
    score = ev(res.layout)
    # the evaluator's detail is its InnerResult
    paid = tuple((a.gpu, a.size) for a in cast(InnerResult, score.detail).islands
                 if a.role != "idle") \
        if score.detail is not None and score.feasible else res.layout
    return Baseline(label, canonical_layout(paid), score.value, ev.cost(paid), res.status,
                    res.bound, res.gap)


def _smallest_serving(ev: LayoutEvaluator, name: str, sizes: Iterable[int], phase: str
                      ) -> int | None:
    """The smallest of ``sizes`` (ascending) whose island of ``name`` serves ``phase``."""
    for g in sizes:
        if getattr(ev.island(name, g), phase).feasible:
            return g
    return None


def _sizes(req: PlanRequest, name: str, hi: int) -> list[int]:
    """Island sizes of type ``name`` a plan may use, up to ``hi`` GPUs: every size from
    the type's minimum at GPU granularity, whole servers and shares at server
    granularity (planner.fleet.servers)."""
    supply = {t.name: t for t in SearchSpace.from_inventory(
        req.inventory, granularity=req.granularity).types}  # the whole inventory
    return supply[name].sizes(hi) if name in supply else []


#: Largest island size :func:`footprint_space` tries (a type that serves nothing below
#: it keeps its minimum island; no model we know needs more GPUs to hold it).
FOOTPRINT_SEARCH = 128


def footprint_space(space: SearchSpace, ev: LayoutEvaluator) -> SearchSpace:
    """The search space with each type's minimum island raised to the smallest island
    of it that can serve a phase at all (the model's footprint: weights plus a minimal
    KV cache, within the SLO): a prior from the perf model for the BO searches, whose
    divider would otherwise cut leftover GPUs into islands that hold nothing.  The
    exact MILP needs no prior (it never buys an island it cannot use) and the thesis's
    reproduction keeps its own I_min."""
    types = []
    for t in space.types:
        hi = min(t.available, FOOTPRINT_SEARCH)
        fits = [g for g in (_smallest_serving(ev, t.name, t.sizes(hi), phase)
                            for phase in ("prefill", "decode")) if g is not None]
        types.append(replace(t, min_island=min(fits)) if fits and min(fits) > t.min_island
                     else t)
    return replace(space, types=tuple(types))


def check_budget(req: PlanRequest, source: str = "inventory") -> None:
    """Reject up front an SLO no islands of the inventory can meet at input lengths
    carrying more than the miss allowance of the requests (``SLO_EXEMPT_SHARE``; within
    it those lengths are planned best-effort: ``PlanningContext.slo_exempt``) -- exit
    status 1, naming the share of the TTFT a prefill pass gets and the best achievable
    pass and TPOT per GPU type (planner.context.feasibility) --, and a budget below the
    cheapest plan that can serve the model: one prefill island and one decode island,
    each the cheapest that fits (exit status 2, naming the inventory and the flag, and
    saying what would make a plan exist)."""
    ctx = PlanningContext.for_request(req)
    wrong = [vendor_violation(req.engine, e.gpu) for e in req.inventory.entries]
    if all(wrong):  # the engine runs on none of the inventory's GPUs
        raise NoPlanError(f"{source}: {wrong[0]}; plan with an --engine that runs on them")
    ev = LayoutEvaluator(ctx, make_inner_solver("maxrate"))
    unmet = unmet_slo(ev, req.inventory)
    if unmet:
        raise NoPlanError(f"{source}: {unmet}")
    cheapest: dict[str, tuple[float, str]] = {}
    for phase in ("prefill", "decode"):
        options = []
        for e in req.inventory.entries:
            g = _smallest_serving(ev, e.name,
                                  _sizes(req, e.name, min(e.count, FOOTPRINT_SEARCH)), phase)
            if g is not None:
                options.append((g * e.price_per_hour, f"{g} x {e.name}"))
        if not options:
            sizes = ", ".join(f"{e.count} x {e.name}" for e in req.inventory.entries)
            if not any(_sizes(req, e.name, e.count) for e in req.inventory.entries):
                raise NoPlanError(f"{source}: no island can be formed ({sizes}): each type's "
                                  "min_island is above its count; lower min_island or add "
                                  "GPUs")
            raise NoPlanError(f"{source}: {req.model} cannot {phase} on any island of this "
                              f"inventory ({sizes}): "
                              + (ev.island(req.inventory.entries[0].name,
                                           max(1, req.inventory.entries[0].count)).decode.reason
                                 or "not enough memory")
                              + "; add GPUs with more memory or more GPUs per type")
        cheapest[phase] = min(options)
    need = cheapest["prefill"][0] + cheapest["decode"][0]
    split = (f"one prefill island ({cheapest['prefill'][1]}, "
             f"${cheapest['prefill'][0]:,.2f}/h) and one decode island "
             f"({cheapest['decode'][1]}, ${cheapest['decode'][0]:,.2f}/h) need ${need:,.2f}/h")
    cheapest_text = split
    if ctx.colocated:  # or one colocated island
        for e in req.inventory.entries:
            for g in _sizes(req, e.name, min(e.count, FOOTPRINT_SEARCH)):
                t = ev.colocated_table(e.name, g)
                if t is not None and t.feasible:
                    if g * e.price_per_hour < need:  # the message names what costs that
                        need = g * e.price_per_hour
                        cheapest_text = (f"one colocated island ({g} x {e.name}) needs "
                                         f"${need:,.2f}/h; {split}")
                    break
    if req.budget is not None and req.budget < need:
        raise PlannerError(
            f"{source}: --budget {req.budget:g} $/h is below the cheapest plan that can serve "
            f"{req.model}: {cheapest_text}; raise the budget to at least ${need:,.2f}/h")


def explain_no_plan(req: PlanRequest, ev: LayoutEvaluator) -> str:
    """Why no plan exists, and what would make one.  For a target rate above what the
    inventory (within the budget) can serve at all: that figure, from the exact MILP.
    Otherwise the cheapest island that serves the model for both phases, per type."""
    where = f" within ${req.budget:,.2f}/h" if req.budget else ""
    if req.target_rps:
        # the most the inventory serves: throughput mode, within the budget
        best = ExactSearch().solve(replace(req.space(), target_rps=None), ev)
        if best.layout and best.value < req.target_rps:
            return (f"--target-rps {req.target_rps:g} is more than the whole inventory can "
                    f"serve{where}: at most {best.value:,.1f} requests/s of {req.workload} "
                    f"with {req.model} (the exact optimum of the model, {best.status}, "
                    f"with {best.cost_per_hour:,.2f} $/h of GPUs); lower the target or add "
                    "GPUs")
    uncovered = _uncovered(req, ev)
    if uncovered:
        return uncovered
    hints = []
    for e in req.inventory.entries:
        sizes = [_smallest_serving(ev, e.name, _sizes(req, e.name, e.count), phase)
                 for phase in ("prefill", "decode")]
        if None not in sizes:
            g = max(cast("list[int]", sizes))
            short = (f", but the inventory lists {e.count}" if 2 * g > e.count else "")
            hints.append(f"{e.name}: smallest island that serves {req.model} has {g} GPUs "
                         f"(${g * e.price_per_hour:,.2f}/h; a plan needs one for prefill and "
                         f"one for decode, {2 * g} GPUs at ${2 * g * e.price_per_hour:,.2f}/h"
                         f"{short})")
        else:
            t = ev.island(e.name, max(1, e.count))
            hints.append(f"{e.name}: even all {e.count} GPUs cannot serve it "
                         f"({t.decode.reason or t.prefill.reason})")
    target = f" at {req.target_rps:g} requests/s" if req.target_rps else ""
    return (f"no plan serves {req.workload} with {req.model}{target}{where}: "
            + "; ".join(hints))


def _uncovered(req: PlanRequest, ev: LayoutEvaluator) -> str | None:
    """The input lengths no islands the plan may buy (its sizes within the inventory and
    the budget) serve within the SLO: none of them can run one phase there, or those
    that can leave too few GPUs or dollars for an island of the other phase
    (planner.context.feasibility.served_together).  A plan must serve every length, so
    none exists (None when every length has its islands, or when no two islands fit at
    all: the model's footprint, which :func:`explain_no_plan` explains).  Lengths the
    planning context serves best-effort (its ``slo_exempt``, within the miss
    allowance) are served by every island and so never named here."""
    from planner.context.feasibility import (
        ceilings_text,
        pass_share_text,
        served_together,
        within_allowance,
    )
    from planner.core.defaults import SLO_EXEMPT_SHARE

    ctx = ev.context
    pmf = np.asarray(ctx.workload.pmf, float)
    need = pmf > 0
    sizes = candidate_sizes(req.space())
    served = served_lengths(ev, sizes)
    together = served_together(ev, sizes, {e.name: e.count for e in req.inventory.entries},
                               req.budget)
    if not together.any():
        together = served["prefill"] & served["decode"]
    gap = need & ~together
    if not gap.any():
        return None

    def span(mask: np.ndarray) -> str:
        at = np.flatnonzero(mask)
        return f"{int(at.min()):,}-{int(at.max()):,}"

    where = f" within ${req.budget:,.2f}/h" if req.budget else ""
    share = float(pmf[gap].sum())
    limit = pass_share_text(ctx)
    slo = ceilings_text(ctx) + (f"; {limit}" if limit else "")
    exempt = ctx.slo_exempt
    if exempt is not None:
        lo, hi = exempt.lengths
        slo += (f"; prompts of {lo:,}-{hi:,} tokens, {100 * exempt.share:.3g}% of requests, "
                "are already served outside it, as misses within the allowance")
    causes = [f"none can {phase} prompts of {span(need & ~ok)} tokens"
              for phase, ok in served.items() if (need & ~ok).any()]
    if (gap & served["prefill"] & served["decode"]).any():
        causes.append("the islands that serve " + ("the rest" if causes else "them")
                      + f" leave too few GPUs{' or dollars' if req.budget else ''} for an "
                      "island of the other phase")
    why = " and ".join(causes)
    if ctx.slo.ttft_ms is not None or ctx.slo.tpot_ms is not None:
        why += (f" -- more than the {100 * SLO_EXEMPT_SHARE:.3g}% of requests a plan may "
                "serve outside the SLO" if not within_allowance(share) else
                f" -- the {100 * SLO_EXEMPT_SHARE:.3g}% of requests a plan may serve "
                "outside the SLO covers only lengths no island of the inventory serves")
    return (f"no islands this inventory offers{where} serve prompts of {span(gap)} tokens "
            f"({100 * share:.3g}% of {req.workload}'s requests) with {req.model} on "
            f"{ctx.calib.profile.label} within the SLO ({slo}): {why}; a plan must serve "
            "every length: raise --ttft/--tpot, raise the budget, add GPUs, or try another "
            "--engine")


def solve_layout(ev: LayoutEvaluator, solver, layout: Layout, inner: str
                 ) -> tuple[Layout, InnerResult, Evaluation, OperatingPoint | None]:
    """Solve ``layout`` and repair it: islands the solution leaves idle are not bought
    (the layout is re-solved without them, which cannot lower its rate), and every
    island's batch is its operating batch at the plan's capacity
    (:func:`planner.context.operating.operating_point`, returned as well)."""
    problem = ev.problem(layout)
    result = solver.solve(problem)
    op = None
    if result.feasible and not needs_context(inner):
        kept = tuple(spec for spec, a in zip(layout, result.islands, strict=True)
                     if a.role != "idle")
        if kept and len(kept) < len(layout):
            layout = canonical_layout(kept)
            problem = ev.problem(layout)
            result = solver.solve(problem)
        op = operating_point(ev, result)
        islands = tuple(replace(a, batch=int(p.batch)) if a.role != "idle"
                        else a for a, p in zip(result.islands, op.islands, strict=True))
        result = replace(result, islands=islands)
    if needs_context(inner):
        evaluation = pipeline_evaluation(result, problem, ev.full_resolution(layout).pmf)
    else:
        evaluation = evaluate(result, problem, ev.full_resolution(layout))
    return layout, result, evaluation, op


#: A plan whose KV transfers hold its rate below this share of what its GPUs could
#: compute is decided by the network, not the GPUs: the planner refuses it.
NETWORK_BOUND = 0.1


def check_network(ctx: PlanningContext, solver, layout: Layout, rate: float,
                  req: PlanRequest) -> None:
    """Refuse (exit 1) a network that cannot carry the KV traffic: the best layout's rate
    with KV transfer priced is under ``NETWORK_BOUND`` of its rate without; the error
    names the tier the pairs cross and the bandwidth per GPU it would need."""
    free = LayoutEvaluator(replace(ctx, network=None), solver,
                           range_rate="midpoint" if req.thesis else "mix")
    compute = free(layout).value
    if not compute > 0 or rate >= NETWORK_BOUND * compute:
        return
    tier = cast(NetworkSpec, ctx.network).tiers[ctx.kv_tier]  # called with a network
    have = tier.effective_bytes_s
    need = have * compute / max(rate, 1e-12)
    raise NoPlanError(
        f"inventory {req.inventory.name!r}, field network: the {tier.name} tier "
        f"({have * 8 / 1e9:,.3g} Gb/s per GPU) "
        f"cannot carry the KV caches prefill islands send to decode islands: the best "
        f"layout serves {rate:,.3g} requests/s instead of the {compute:,.3g} its GPUs "
        f"compute; it needs about {need * 8 / 1e9:,.3g} Gb/s per GPU on that tier "
        f"(network.tiers[{ctx.kv_tier}].bandwidth_gbps)")


def layout_plan_dict(req: PlanRequest, ctx: PlanningContext, ev: LayoutEvaluator, solver,
                     layout: Layout):
    """(plan dict, analytic score) of one layout solved as a plan is (None if it serves
    nothing): what the simulated objective simulates."""
    score = ev(layout)
    if not score.feasible or score.value <= 0:
        return None, score
    lay, result, evaluation, op = solve_layout(ev, solver, canonical_layout(layout),
                                               req.inner)
    plan = Plan(req, lay, result, evaluation, None, [], None, ctx, {}, op)
    return plan.to_dict(), score


def resolve_plan(plan: Plan, factors: dict[str, float]) -> Plan:
    """``plan``'s layout re-solved with the capacity of the islands of each kind
    ``"gpu:size:role"`` scaled by ``factors[kind]`` (the closed loop's correction from
    simulation); the comparisons are kept as they were."""
    req = plan.request
    solver = make_inner_solver(req.inner)
    ev = LayoutEvaluator(plan.context, solver,
                         objective="thesis" if req.inner == "thesis" else "sustained",
                         range_rate="midpoint" if req.thesis else "mix",
                         capacity_factors=dict(factors))
    layout, result, evaluation, op = solve_layout(ev, solver, plan.layout, req.inner)
    return replace(plan, layout=layout, result=result, evaluation=evaluation, operating=op)


def make_plan(req: PlanRequest, progress: StepProgress | None = None,
              checkpoint: Path | None = None, executor: Executor | None = None,
              resume: bool = False) -> Plan:
    """Search, solve and evaluate; raises :class:`NoPlanError` (exit 1) with an
    explanation when no layout can serve the request.  ``executor`` scores each batch
    of a black-box search's proposals side by side (planner.core.execution); the plan is
    the serial one."""
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    ctx = PlanningContext.for_request(req)
    space = req.space()
    search_name, why = choose_search(req, space, ctx.colocated)
    if resume and not iterative(search_name):
        raise PlannerError(
            f"--resume: this run's search is {search_name} ({why}), which keeps no "
            "checkpoint; resume with the interrupted run's --search (divider, direct or "
            f"random) and flags, or run without --resume"
            + (f" after deleting {checkpoint}" if checkpoint is not None else ""))
    if needs_context(req.inner):
        if not takes_any_objective(search_name):
            raise PlannerError(f"--inner {req.inner} cannot be used with --search "
                               f"{search_name}: that search needs per-island prefill/decode "
                               "tables, which pipeline solvers do not have; use a BO search")
        net = DataCentreNetwork.from_spec(parse_network(req.inventory.network))
        solver = make_inner_solver(req.inner, context=ctx, network=net)
    else:
        solver = make_inner_solver(req.inner)
    ev = LayoutEvaluator(ctx, solver,
                         objective="thesis" if req.inner == "thesis" else "sustained",
                         range_rate="midpoint" if req.thesis else "mix")
    objective: LayoutObjective = ev
    if req.objective == "simulated":
        if not takes_any_objective(search_name) or needs_context(req.inner):
            raise PlannerError("--objective simulated needs a BO or random search and the "
                               "maxrate or thesis inner solver")

        objective = SimulatedObjective(
            lambda lay: layout_plan_dict(req, ctx, ev, solver, lay), seed=req.seed,
            analytic=ev)
    elif req.objective != "analytic":
        raise PlannerError(f"--objective must be analytic or simulated, got {req.objective!r}")
    seconds["setup"] = time.perf_counter() - t0

    if takes_any_objective(search_name) and not req.thesis:
        space = footprint_space(space, ev)
    t0 = time.perf_counter()
    options = dict(req.search_options)
    if req.search == "auto":  # drop options the chosen search does not take
        import inspect

        search_cls: Any = OUTER_SEARCHES.lookup(search_name)  # a class: its __init__
        known = set(inspect.signature(search_cls.__init__).parameters)
        options = {k: v for k, v in options.items() if k in known}
    if search_name == "exact":
        options.setdefault("time_limit", req.exact_time_limit)
    search = make_search(search_name, **options)
    found = search.search(space, objective, seed=req.seed, checkpoint=checkpoint,
                          executor=executor, progress=None if progress is None else
                          (lambda d, t, _b: progress("search", d, t)))
    found.settings["chosen"] = why
    seconds["search"] = time.perf_counter() - t0
    if found.best_layout is None or found.best_score is None or not found.best_score.value > 0:
        if search_name == "exact" and found.settings.get("status") in ("no_solution",
                                                                        "time_limit"):
            # the MILP stopped on its time limit before finding any layout: the flag
            # decided, not the inventory
            raise NoPlanError(f"--exact-time-limit {req.exact_time_limit:g}: the exact MILP "
                              "found no layout within that many seconds; allow more time")
        raise NoPlanError(explain_no_plan(req, ev))
    layout = found.best_layout

    t0 = time.perf_counter()
    layout, result, evaluation, op = solve_layout(ev, solver, layout, req.inner)
    seconds["evaluate"] = time.perf_counter() - t0
    if ctx.network is not None and not needs_context(req.inner):
        check_network(ctx, solver, layout, float(result.R_sustained), req)

    # The baselines are exact MILPs over the perf-model tables; next to a pipeline plan
    # they answer "what would the disaggregated MILP plan give", so their labels say so.
    tag, base_ev = "", ev
    if needs_context(req.inner):
        tag = " (MILP)"
        base_ev = LayoutEvaluator(ctx, make_inner_solver("maxrate"), objective="sustained",
                                  range_rate="midpoint" if req.thesis else "mix")
    homogeneous: list[Baseline] = []
    if req.compare_homogeneous and len(space.types) > 1:
        t0 = time.perf_counter()
        # The same money spent on one type: as many GPUs of it as the budget (or the
        # inventory's total $/h) buys, up to what the inventory has available.  The
        # thesis's homogeneous alternative ignores availability (Table 5.1 (c): 128 H200
        # for 512 $/h); in thesis mode that is what is computed, labelled "if unlimited".
        money = req.budget if req.budget is not None else space.full_cost
        for t in space.types:
            afford = affordable(money, t.price_per_hour) if t.price_per_hour \
                else t.available
            count = afford if req.thesis else min(afford, t.available)
            label = f"{count} x {t.name} only{tag}"
            if count > t.available:
                label += f" (if unlimited: {t.available} available)"
            single = replace(space, types=(replace(t, available=count),))
            homogeneous.append(_exact_baseline(label, single, base_ev,
                                               req.exact_time_limit, progress,
                                               f"homogeneous {t.name}"))
        seconds["homogeneous"] = time.perf_counter() - t0
    exact = None
    if req.compare_exact and search_name != "exact":
        t0 = time.perf_counter()
        exact = _exact_baseline(f"exact optimum{tag}", space, base_ev, req.exact_time_limit,
                                progress, "exact")
        seconds["exact"] = time.perf_counter() - t0
    elif search_name == "exact":
        st = found.settings
        if "milp_layout" in st:  # polished: the baseline is the MILP's own layout
            exact = Baseline("exact optimum (before the local polish)",
                             canonical_layout(tuple(x) for x in st["milp_layout"]),
                             float(st["milp_value"]), float(st["milp_cost"]),
                             st.get("status", ""), st.get("bound", math.nan),
                             st.get("gap", math.nan))
        else:  # the MILP's layout is the plan's (colocated columns included)
            exact = Baseline("exact optimum", layout, found.best_score.value,
                             found.best_score.cost_per_hour, st.get("status", ""),
                             st.get("bound", math.nan), st.get("gap", math.nan))
    return Plan(req, layout, result, evaluation, found, homogeneous, exact, ctx, seconds, op)
