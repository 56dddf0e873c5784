"""A fleet through the closed loop: one promise per service, and λ for the fleet.

``planner plan`` promises, for one model, the highest rate at which its SLO holds in
simulation on seeds the search never used (:mod:`planner.sim.closed_loop`).  A fleet is
held to the same promise, service by service:

* **Every service through the one loop.**  The joint MILP's islands of each service are
  solved as a plan of that service and closed exactly as a single-model plan is
  (:func:`planner.closed_plan.close_one`): each gets the highest rate at which *its*
  SLO holds, under its own workload's arrivals.  The services' islands are disjoint (an
  island serves one service) and a router sends a request only to its service's
  islands, so simulating the services one by one is simulating the fleet with every
  service's arrivals at once: nothing a service's requests touch is shared with
  another's.  (A shared network fabric would couple them; the planner prices each
  service's KV transfers on its own islands' tiers, as for one model.)
* **λ is the weakest service's.**  With shares, the fleet promises λ = min over
  services of (its headline / its share): at λ every service gets λ × its share at its
  SLO.  That is re-checked by simulating every service at exactly λ × its share on the
  three unseen seeds (:func:`hold`); a service that falls short there lowers λ.
* **What simulation measured goes back into the MILP.**  The analytic tables do not see
  queueing: a service can hold its SLO at a fraction of what its islands sustain (a
  tight TPOT on cheap decode islands), leaving the other services with slack λ cannot
  use.  So the first round's measurements -- each island kind's measured capacity, and
  the fraction of saturation at which the SLO held, charged to every island of the
  phase whose ceiling broke first (:func:`planner.services.outcome.measured`) -- correct
  the tables of a second solve (``ROUNDS``).  The joint MILP and the best split learn
  from the same measurements (both first rounds' islands), so the second joint solve
  sees what the split's islands revealed; on the corrected tables every split is again
  a feasible point of the joint MILP.
* **The answer is the joint choice of measured islands.**  Every round of the joint
  plan and of the best independent split (:func:`planner.services.solve.best_split`)
  gives each service islands with a measured headline; the answer takes, for every
  service, one of them, chosen together within the inventory and budget for the highest
  λ (targets: the cheapest that holds every target;
  :func:`planner.services.outcome.combine`).  It is at least the best round, joint or
  split.  It is then held at λ × share on the unseen seeds; if the best split still
  beats it by that promise, the split is the answer and the run says so.
  With targets the loop re-plans a service that falls short for a target raised by its
  shortfall (as :mod:`planner.closed_plan` does for one model) until every target holds
  on every seed, or says which service cannot be served.
"""

from __future__ import annotations

import copy
import hashlib
import json
import multiprocessing
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from planner.closed_plan import _in_background, close_one
from planner.core.errors import NoPlanError
from planner.plan import Plan
from planner.services.outcome import (
    FleetOutcome,
    Outcome,
    combine,
    corrections,
    rate_of,
)
from planner.services.solve import (
    Correction,
    FleetRequest,
    FleetSolution,
    ServiceModel,
    alone,
    best_split,
    service_plans,
    solo_ceiling,
    solve_fleet,
    weights,
)
from planner.sim.closed_loop import ATTAIN_TARGET, simulate_at, verify_seeds

Say = Callable[[str], None]
#: Rounds with budget shares: the perf model's, then one on tables corrected by what
#: the first round's simulations measured.
ROUNDS = 2
#: Re-plans in target mode, and the most one re-plan raises a service's asked rate by.
TARGET_ROUNDS, GROWTH = 5, 2.0
#: λ is lowered by this factor while a service misses its SLO at λ × share.
BACKOFF, BACKOFFS = 0.95, 4


#: Service plans closed in the open fleet run (:func:`closure_memo`); None outside one,
#: so a caller that closes plans on its own (a schedule's busiest slot) keeps nothing.
_CLOSED: dict[tuple[str, int, str], tuple[Any, dict[str, Any]]] | None = None


@contextmanager
def closure_memo(memo: dict | None = None) -> Iterator[None]:
    """Open a closure memo for the block (:func:`_closed`): ``memo``, or a fresh one;
    the one open before (usually none) is back after it, so memory lives as long as one
    fleet run (or, in a split worker, as long as its request: :func:`_worker`)."""
    global _CLOSED
    outer, _CLOSED = _CLOSED, ({} if memo is None else memo)
    try:
        yield
    finally:
        _CLOSED = outer


def _closed(plan: Plan, seed: int, router: str) -> dict[str, Any]:
    """:func:`planner.closed_plan.close_one`, once per distinct service plan of a run.

    Rounds often give a service the same islands: the second round's corrections leave
    its layout where it was, or the best split and the joint MILP agree on it (on the
    fleet tests' fleet all four closures of each service were of one plan).  A closure
    is a function of the plan alone -- its request, islands, solved ranges and planning
    context; the fleet's corrections steer the MILP, not the service plan it returns
    (:meth:`planner.services.solve.ServiceModel.plan`) -- and of the seed and router.
    So a plan whose dict (less its creation time) and context are those of one already
    closed gets that closure again, copied.  The memo is open only inside
    :func:`closure_memo` (:func:`close_fleet`, and a split worker's request:
    :func:`_worker`): two runs of one request each simulate their own, and a
    closure outside a run is simulated and forgotten."""
    if _CLOSED is None:
        return close_one(plan, seed=seed, router=router)
    d = plan.to_dict()
    d.pop("created_utc", None)
    text = json.dumps(d, sort_keys=True, default=repr)
    key = (hashlib.sha256(text.encode()).hexdigest(), int(seed), router)
    hit = _CLOSED.get(key)
    if hit is None or hit[0] is not plan.context:
        hit = _CLOSED[key] = (plan.context, close_one(plan, seed=seed, router=router))
    return copy.deepcopy(hit[1])


def _close_all(models: Sequence[ServiceModel], sol: FleetSolution, seed: int, router: str,
               say: Say, label: str) -> dict[str, dict[str, Any]]:
    plans = service_plans(models, sol)
    out = {}
    for name, plan in plans.items():
        say(f"{label}: service {name}, {len(plan.layout)} island(s), through the closed loop")
        out[name] = _closed(plan, seed, router)
    return out


def close_solution(req: FleetRequest, models: Sequence[ServiceModel], sol: FleetSolution,
                   label: str, *, seed: int = 0, router: str = "range",
                   say: Say | None = None,
                   targets: dict[str, float] | None = None) -> Outcome:
    """Every service of ``sol`` through the closed loop: λ = min headline / share, or
    (``targets``) the largest target when every service holds its own, else 0 with the
    services that fall short."""
    speak = say or (lambda _m: None)
    plans = _close_all(models, sol, seed, router, speak, label)
    heads = {n: float(p["summary"]["requests_per_s"]) for n, p in plans.items()}
    planned = {n: float(p["summary"].get("analytic_requests_per_s") or 0.0)
               for n, p in plans.items()}
    if targets is None:
        share = {s.name: float(s.share or 0.0) for s in req.fleet.services}
        rate = min(heads[n] / share[n] for n in heads)
        analytic = min(planned[n] / share[n] for n in planned)
        speak(f"{label}: λ {rate:,.1f} requests/s for ${sol.cost_per_hour:,.2f}/h (each "
              "service's own headline: " + ", ".join(f"{n} {heads[n]:,.1f}"
                                                     for n in heads) + ")")
        return Outcome(label, sol, plans, rate, analytic)
    short = [n for n in heads if heads[n] < targets[n] * (1 - 1e-9)]
    top = max(targets.values())
    speak(f"{label}: ${sol.cost_per_hour:,.2f}/h; " + (
        f"{', '.join(short)} short of target" if short else "every target holds"))
    return Outcome(label, sol, plans, 0.0 if short else top,
                   min(planned[n] / targets[n] for n in planned) * top, short=short)


def _verify(plans: dict[str, dict[str, Any]], rates: dict[str, float], seed: int,
            router: str) -> tuple[dict[str, list[dict[str, Any]]], list[str]]:
    """Every service simulated at ``rates[name]`` on the unseen seeds: (checks by
    service, the services whose attainment falls below the loop's target)."""
    checks: dict[str, list[dict[str, Any]]] = {}
    short = []
    for name, plan in plans.items():
        checks[name] = []
        if rates[name] <= 0:
            continue
        for s in verify_seeds(seed):
            c = simulate_at(plan, rates[name], s, router=router)
            checks[name].append(c.to_dict())
            if c.attainment < ATTAIN_TARGET:
                short.append(name)
                break
    return checks, short


def hold(req: FleetRequest, out: Outcome, *, seed: int = 0, router: str = "range",
         say: Say | None = None) -> None:
    """Simulate every service at exactly the rate the fleet promises it (λ × share, or
    its target) on the unseen seeds, lowering λ while one misses (each service's own
    headline was verified on those seeds, but at its own rate); the checks are kept as
    the promise's evidence.  A target that misses sets the rate to 0."""
    speak = say or (lambda _m: None)
    for _ in range(BACKOFFS):
        if out.rate <= 0:
            return
        rates = {n: rate_of(req, out, n) for n in out.plans}
        out.checks, short = _verify(out.plans, rates, seed, router)
        if not short:
            return
        if req.targets:
            out.short, out.rate = short, 0.0
            return
        speak(f"{out.label}: {', '.join(short)} miss the SLO at λ {out.rate:,.1f} on an "
              "unseen seed: lowering λ")
        out.rate *= BACKOFF
    out.rate = 0.0


# -- the best split, runnable in a worker process ------------------------------------------

#: (request, its services' planning contexts, its closure memo): one per worker process
_MODELS: list[tuple[FleetRequest, list[ServiceModel], dict]] = []
#: (the models it is for, their solo ceiling): computed once per process and request
_CEILING: list[tuple[Sequence[ServiceModel], float]] = []


@contextmanager
def _worker(req: FleetRequest,
            models: Sequence[ServiceModel] | None) -> Iterator[Sequence[ServiceModel]]:
    """The planning contexts a split round runs on: the caller's (in this process,
    inside :func:`close_fleet`, whose closure memo is open), or -- in a worker given the
    request alone -- ones built once per process and request (a worker runs several
    rounds of one request), with a closure memo that lives as long as they do."""
    if models:
        yield models
        return
    if not (_MODELS and _MODELS[0][0] == req):
        _MODELS[:] = [(req, [ServiceModel.build(req, s) for s in req.fleet.services], {})]
    _, built, memo = _MODELS[0]
    with closure_memo(memo):
        yield built


def split_round(req: FleetRequest, correction: dict[str, Correction] | None, label: str,
                *, seed: int = 0, router: str = "range",
                models: Sequence[ServiceModel] | None = None) -> Outcome | None:
    """One round of the best split (shares), found and closed; None when no split serves
    every service.  Takes the request alone, so a worker process can run it beside the
    joint plan: its contexts and its ceiling (:func:`solo_ceiling`, which needs no joint
    MILP) are built there once."""
    with _worker(req, models) as models:
        if not (_CEILING and _CEILING[0][0] is models):
            _CEILING[:] = [(models, solo_ceiling(req, models))]
        sol = best_split(req, models, _CEILING[0][1], correction=correction)
        if sol is None:
            return None
        return close_solution(req, models, sol, label, seed=seed, router=router)


def split_targets(req: FleetRequest, *, seed: int = 0, router: str = "range",
                  models: Sequence[ServiceModel] | None = None) -> list[Outcome]:
    """Every service alone for its target, re-planned while one falls short."""
    with _worker(req, models) as models:
        return _target_rounds(
            req, lambda asked, fix: alone(req, models, asked, correction=fix), models,
            seed, router, None, "best split")


def _target_rounds(req: FleetRequest,
                   solve: Callable[[dict[str, float], dict[str, Correction] | None],
                                   FleetSolution | None],
                   models: Sequence[ServiceModel], seed: int, router: str,
                   say: Say | None, label: str) -> list[Outcome]:
    """Targets: plan for the asked rates, close, raise the asked rate of every service
    that falls short by its shortfall -- and re-plan on tables corrected by what every
    round so far measured (:func:`planner.services.outcome.corrections`: an island kind
    that missed the SLO in simulation is charged for it, so the next solve does not pick
    it again for the same price) -- until every target holds on every seed (the last
    outcome's rate is then the largest target) or the rounds run out."""
    targets = {s.name: float(s.target_rps or 0.0) for s in req.fleet.services}
    asked = dict(targets)
    outs: list[Outcome] = []
    fix: dict[str, Correction] | None = None
    for r in range(TARGET_ROUNDS):
        sol = solve(dict(asked), fix)
        if sol is None:
            break
        out = close_solution(req, models, sol, f"{label}, round {r + 1}", seed=seed,
                             router=router, say=say, targets=targets)
        if not out.short:
            hold(req, out, seed=seed, router=router, say=say)
        outs.append(out)
        if out.rate > 0:
            break
        heads = out.headlines()
        for n in out.short:
            grow = targets[n] / heads[n] * 1.02 if heads[n] > 0 else GROWTH
            asked[n] *= min(max(grow, 1.02), GROWTH)
        fix = corrections(outs)
    return outs


class _Runner:
    """Runs the split beside the joint plan: in a second process when ``background``
    (spawned: no fork of a process with threads), else in this one, later."""

    def __init__(self, background: bool) -> None:
        self.pool = ProcessPoolExecutor(
            max_workers=1, mp_context=multiprocessing.get_context("spawn")) \
            if background else None

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Callable[[], Any]:
        if self.pool is None:
            return lambda: fn(*args, **kwargs)
        fut: Future = self.pool.submit(fn, *args, **kwargs)
        return fut.result

    def close(self, abort: bool = False) -> None:
        """Shut the second process down; ``abort`` (an error or Ctrl-C here) stops it
        now rather than after its running task (a split round: tens of seconds)."""
        if self.pool is None:
            return
        if abort:
            for proc in list(getattr(self.pool, "_processes", {}).values()):
                proc.terminate()
        self.pool.shutdown(wait=not abort, cancel_futures=True)


def _best(outs: Sequence[Outcome | None], targets: bool) -> Outcome | None:
    ok = [o for o in outs if o is not None and o.rate > 0]
    if not ok:
        return None
    if targets:
        return min(ok, key=lambda o: o.cost_per_hour)
    return max(ok, key=lambda o: o.rate)


def joint_solution(req: FleetRequest, models: Sequence[ServiceModel], *,
                   correction: dict[str, Correction] | None = None,
                   asked: dict[str, float] | None = None) -> FleetSolution:
    """The joint layout on the perf model: the MILP (``req.search`` "exact"), or the
    outer search over joint layouts (:mod:`planner.services.search`)."""
    if req.search == "exact":
        return solve_fleet(req, models, correction=correction, asked=asked)
    from planner.services.search import search_fleet

    plan_for = req
    if asked is not None and req.targets:
        plan_for = replace(req, fleet=replace(req.fleet, services=tuple(
            replace(s, target_rps=asked[s.name]) for s in req.fleet.services)))
    return search_fleet(plan_for, models, req.search, weights(plan_for), seed=req.seed,
                        options=req.search_options, correction=correction)


def _all_rounds(req: FleetRequest, models: Sequence[ServiceModel], runner: _Runner,
                serial: Sequence[ServiceModel] | None, *, seed: int, router: str,
                split: bool, speak: Say) -> tuple[list[Outcome], list[Outcome]]:
    """Every joint and best-split round of :func:`close_fleet`, in that order."""
    if req.targets:
        pending = runner.submit(split_targets, req, seed=seed, router=router,
                                models=serial) if split else (lambda: [])
        joint_outs = _target_rounds(
            req, lambda asked, fix: joint_solution(req, models, asked=asked,
                                                   correction=fix),
            models, seed, router, speak, "joint")
        split_outs: list[Outcome] = pending()
    else:
        joint_outs, split_outs = [], []
        fix: dict[str, Correction] | None = None
        for r in range(1, ROUNDS + 1):
            # the split is found and closed in the second process while the joint
            # MILP is solved and closed here
            next_split: Callable[[], Outcome | None] = runner.submit(
                split_round, req, fix, f"best split, round {r}", seed=seed,
                router=router, models=serial) if split else (lambda: None)
            sol = joint_solution(req, models, correction=fix)
            joint_outs.append(close_solution(req, models, sol, f"joint, round {r}",
                                             seed=seed, router=router, say=speak))
            got = next_split()
            if got is not None:
                split_outs.append(got)
                speak(f"{got.label}: λ {got.rate:,.1f} requests/s for "
                      f"${got.cost_per_hour:,.2f}/h")
            fix = corrections(joint_outs[-1:] + split_outs[-1:])
    return joint_outs, split_outs


def close_fleet(req: FleetRequest, models: Sequence[ServiceModel], *, seed: int = 0,
                router: str = "range", split: bool = True, background: bool | None = None,
                say: Say | None = None) -> FleetOutcome:
    """The fleet's answer by the one promise (module docstring), with the best joint and
    split outcomes and every round.  ``split=False`` closes the joint plan alone;
    ``background`` (default: a second core is there) runs the split in a second process
    -- the result is the same.  Raises NoPlanError, naming the services that cannot be
    served, when no fleet holds every service's SLO."""
    speak = say or (lambda _m: None)
    if background is None:
        background = _in_background()
    runner = _Runner(background and split)
    serial = None if background else models
    if split and background:
        speak("planning the best independent split in a second process")
    try:
        with closure_memo():
            joint_outs, split_outs = _all_rounds(req, models, runner, serial, seed=seed,
                                                 router=router, split=split, speak=speak)
    except BaseException:
        runner.close(abort=True)
        raise
    runner.close()
    rounds = [o.record() for o in joint_outs + split_outs]
    milp = _best(joint_outs, req.targets)
    other = _best(split_outs, req.targets)
    joint = combine(req, joint_outs + split_outs)
    # the promise at the rate the fleet gives each service, on the unseen seeds: the
    # leader first; if holding lowers it below the split, the split must hold too
    if joint is not None:
        hold(req, joint, seed=seed, router=router, say=speak)
    if other is not None and not req.targets and \
            (joint is None or joint.rate < other.rate * (1 - 1e-9)):
        hold(req, other, seed=seed, router=router, say=speak)
    joint, other = (o if o is not None and o.rate > 0 else None for o in (joint, other))
    answer = _best([joint, other], req.targets)
    if answer is None:
        raise NoPlanError(_why_none(req, joint_outs))
    if answer is other:
        speak(f"the best independent split ({other.label}) beats the joint choice by the "
              "one promise: it is the answer")
    else:
        speak(f"{answer.label}: " + ", ".join(f"{n} from {src}"
                                               for n, src in answer.sources.items()))
    return FleetOutcome(answer, joint, other, rounds, milp)


def _why_none(req: FleetRequest, outs: Sequence[Outcome]) -> str:
    """Why no fleet holds: the services that fall short (targets) or the weakest."""
    if not outs:
        return "no fleet within the inventory serves every service"
    last = outs[-1]
    if req.targets:
        who = ", ".join(repr(n) for n in last.short) or "every service"
        return (f"no fleet holds every target at its SLO in simulation: service(s) {who} "
                f"fall short after {len(outs)} plan(s)")
    heads = last.headlines()
    weakest = min(heads, key=lambda n: heads[n])
    return (f"no fleet within the budget holds every service's SLO in simulation: "
            f"service {weakest!r} holds it at {heads[weakest]:,.2f} requests/s")


__all__ = ["close_fleet", "close_solution", "hold", "joint_solution", "split_round",
           "split_targets"]
