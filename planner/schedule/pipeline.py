"""``planner plan --profile``: from a profile to a schedule held to the promise.

1. Every stream's range tables (:class:`planner.schedule.solve.Columns`).
2. **Correction by the closed loop.**  The busiest slot's islands are closed exactly as a
   fleet's services are (:func:`planner.services.promise.close_solution`, targets: each
   stream's rate in that slot); what simulation measured of them -- each saturated
   island kind's capacity, the fraction of saturation at which the SLO held per phase
   (:func:`planner.services.outcome.corrections`) -- scales the tables, so the schedule
   is planned on rates at which the SLO holds rather than on the perf model's ceiling.
3. The schedule on the corrected tables (stage 1, stage 2, rebalancing) and the two
   baselines on the same tables.
4. Every slot of the busiest day simulated on unseen seeds, slots that miss re-scaled
   (:func:`planner.schedule.promise.hold_schedule`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from planner.core.errors import NoPlanError
from planner.schedule.promise import hold_schedule
from planner.schedule.report_data import schedule_dict
from planner.schedule.run import savings
from planner.schedule.solve import (
    Columns,
    Schedule,
    ScheduleRequest,
    baselines,
    best_schedule,
)
from planner.schedule.startup import startup_source
from planner.sim.closed_loop import ATTAIN_TARGET

Say = Callable[[str], None]


def _peak_solution(cols: Columns, sched: Schedule) -> tuple[Any, dict[str, float]]:
    """The busiest slot's islands as a fleet solution, and each stream's rate there."""
    from planner.schedule.promise import slot_layouts
    from planner.services.solve import FleetSolution

    demand = cols.request.profile.demand()
    t = int(np.argmax(demand.sum(axis=1)))
    lay = slot_layouts(cols, sched, t, preempt=False)
    names = [m.service.name for m in cols.models]
    rates = {n: float(demand[t, k]) for k, n in enumerate(names)}
    # each stream's islands at the inventory's price_per_hour: what its plan's own
    # accounting charges (the tiers' bill is the schedule's, planner.schedule.accounting)
    price = {e.name: e.price_per_hour for e in cols.request.inventory.entries}
    costs = {n: float(sum(price[g] * size for g, size in lay[n])) for n in names}
    sol = FleetSolution(max(rates.values()), lay, costs)
    return sol, rates


def _described(cols: Columns) -> str:
    parts = []
    for name, c in cols.corrections.items():
        phases = ", ".join(f"{ph} {f:.0%} of saturation" for ph, f in c.phases.items())
        parts.append(f"{name}: {phases or 'as planned'}")
    return "; ".join(parts)


def correct(cols: Columns, sched: Schedule, *, seed: int, router: str, say: Say) -> bool:
    """Step 2 of the module docstring; False when the busiest slot has no islands for
    some stream (nothing to measure)."""
    from planner.services.outcome import corrections
    from planner.services.promise import close_solution

    sol, rates = _peak_solution(cols, sched)
    if any(not lay for name, lay in sol.layouts.items() if rates[name] > 0):
        return False
    live = {n: r for n, r in rates.items() if r > 0}
    keep = [m for m in cols.models if m.service.name in live]
    sol.layouts = {n: sol.layouts[n] for n in live}
    sol.costs = {n: sol.costs[n] for n in live}
    out = close_solution(cols.fleet, keep, sol, "busiest slot", seed=seed, router=router,
                         say=say, targets=live)
    cols.corrections = corrections([out])
    return True


def peak_plans(cols: Columns, sched: Schedule) -> dict[str, dict[str, Any]]:
    """Every stream's plan dict for its islands in the busiest slot: what
    ``planner export`` launches (every other slot runs a subset of kinds, or names the
    extra islands; planner.schedule.export)."""
    from planner.schedule.promise import slot_layouts

    t = int(np.argmax(cols.request.profile.demand().sum(axis=1)))
    lay = slot_layouts(cols, sched, t, preempt=False)
    return {m.service.name: m.plan(lay[m.service.name], 0.0).to_dict()
            for m in cols.models if lay[m.service.name]}


def promised(cols: Columns, sched: Schedule, *, seed: int, router: str, say: Say,
             correct_first: bool = True) -> tuple[Schedule, list[dict[str, Any]], int]:
    """Steps 2 and 4 of the module docstring: (the schedule that holds, its checks, the
    rounds run); NoPlanError when no schedule within the caps holds every slot.
    ``correct_first=False``: the tables are already corrected (a scenario of a run)."""
    levels = cols.request.levels
    if correct_first:
        say("closing the busiest slot's islands in simulation (the tables' correction)")
        if correct(cols, sched, seed=seed, router=router, say=say):
            again = best_schedule(cols.problem(), levels=levels, say=say)
            if again is None:
                raise NoPlanError(
                    "at the rates where the SLO holds in simulation (the busiest slot's "
                    "islands closed: " + _described(cols) + "), no schedule within the "
                    "inventory's tier caps serves every slot: raise the counts, "
                    "on_demand_max or spot_max, or lower --peak-rps")
            sched = again
    sched, got, rounds = hold_schedule(cols, sched, seed=seed, router=router, say=say)
    short = sorted({c.slot for c in got if c.attainment < ATTAIN_TARGET})
    if short:
        worst = min(got, key=lambda c: c.attainment)
        raise NoPlanError(
            f"{cols.request.where}: {len(short)} slot(s) of the busiest day miss the SLO in "
            f"simulation after {rounds} round(s) of adding islands where they miss (slot "
            f"{worst.slot}: {100 * worst.attainment:.1f} % at {worst.rate:,.2f} requests/s): "
            "raise on_demand_max or spot_max, relax the SLO, or lower --peak-rps")
    return sched, [c.to_dict() for c in got], rounds


def first_schedule(cols: Columns, say: Say) -> Schedule:
    """Step 3 on the tables as they are (raw, or corrected)."""
    req = cols.request
    say(f"{len(cols.models)} stream(s), {len(req.profile.slots)} slots: solving")
    got = best_schedule(cols.problem(), levels=req.levels, say=say)
    if got is None:
        raise NoPlanError(f"{req.where}: no schedule within the inventory's tier caps serves "
                          "every slot of the profile: raise on_demand_max / spot_max or the "
                          "counts, or lower --peak-rps")
    return got


def run_dict(cols: Columns, sched: Schedule, checks: list[dict[str, Any]], rounds: int, *,
             router: str, seconds: dict[str, float], say: Say) -> dict[str, Any]:
    """schedule.json's content (without the schema line): the request, the schedule,
    the baselines priced on the same tables, the checks."""
    req = cols.request
    t0 = time.perf_counter()
    base = sched.baselines if sched.baselines is not None else \
        baselines(sched.problem, say=say)
    streams = tuple(m.service.name for m in cols.models)
    starts = tuple(s.start for s in req.profile.slots)
    base_d = {k: (schedule_dict(v, streams, starts) if v else None) for k, v in base.items()}
    for v in base_d.values():
        if v is not None:
            v.pop("slots")  # the baselines' bills and fleets; their slots are not read
    seconds = {**seconds, "baselines": time.perf_counter() - t0}
    demand = req.profile.demand().sum(axis=1)
    hours = req.profile.hours
    return {
        "request": {"model": req.model, "workload": req.workload, "ranges": req.ranges,
                    "levels": req.levels, "seed": req.seed, "router": router,
                    "island_granularity": req.island_granularity, "engine": req.engine},
        "model": req.model,
        "slo": {"ttft_ms": req.slo.ttft_ms, "tpot_ms": req.slo.tpot_ms},
        "startup_s": req.startup_s,
        "startup_source": startup_source(req.model, req.startup_s),
        "profile": req.profile.to_dict(),
        "inventory": req.inventory.to_dict(),
        "streams": dict(req.streams()),
        "corrections": {n: {"kinds": dict(c.kinds), "phases": dict(c.phases)}
                        for n, c in cols.corrections.items()},
        "schedule": schedule_dict(sched, streams, starts),
        "baselines": base_d,
        "savings": savings(sched.bill.total, base_d),
        "checks": checks,
        "hold_rounds": rounds,
        "summary": {"peak_rps": float(demand.max()),
                    "mean_rps": float((demand * hours).sum() / hours.sum()),
                    "period_usd": sched.bill.total,
                    "slots": len(req.profile.slots),
                    "lowest_attainment": min((c["attainment"] for c in checks),
                                             default=None)},
        "timings_s": seconds,
    }


def schedule_run(req: ScheduleRequest, *, router: str = "range", verify: bool = True,
                 say: Say | None = None) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The run's content (schedule.json without its schema line) and every stream's
    busiest-slot plan (:func:`peak_plans`)."""
    speak = say or (lambda _m: None)
    t0 = time.perf_counter()
    cols = Columns.build(req)
    seconds: dict[str, float] = {"setup": time.perf_counter() - t0}
    sched = first_schedule(cols, speak)
    seconds["solve"] = time.perf_counter() - t0 - seconds["setup"]
    checks: list[dict[str, Any]] = []
    rounds = 0
    if verify:
        sched, checks, rounds = promised(cols, sched, seed=req.seed, router=router,
                                         say=speak)
    seconds["promise"] = time.perf_counter() - t0 - sum(seconds.values())
    run = run_dict(cols, sched, checks, rounds, router=router, seconds=seconds, say=speak)
    return run, peak_plans(cols, sched)


__all__ = ["correct", "first_schedule", "peak_plans", "promised", "run_dict",
           "schedule_run"]
