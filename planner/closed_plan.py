"""A solved plan through the closed loop: the capacity ``planner plan`` promises.

:func:`planner.plan.make_plan` solves on the perf model; :mod:`planner.sim.closed_loop`
simulates a plan dict and corrects its rates until the headline holds at the SLO.
This module joins the two -- it needs both the planner (to re-plan in target mode)
and the simulator, so it sits above them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, cast

from planner.inner import needs_context
from planner.plan import Plan, make_plan, resolve_plan
from planner.sim.closed_loop import MAX_ROUNDS, close_loop, with_loop


def close_plan(plan: Plan, *, seed: int = 0, progress: Callable[[str], None] | None = None
               ) -> dict[str, Any]:
    """A solved :class:`planner.plan.Plan` through the closed loop: its plan dict with
    the headline that holds in simulation (what ``planner plan`` writes).

    In target mode the promise is the target: while the simulated headline falls short
    of it, the plan is made again for a target raised by the shortfall (the cheapest
    plan whose *simulated* capacity meets the target, at most ``MAX_ROUNDS`` re-plans);
    the plan's request keeps the user's target and ``closed_loop.planned_for_rps``
    records what the search was asked for."""
    target = plan.request.target_rps
    asked = target
    for _ in range(MAX_ROUNDS + 1):
        def resolve(f: dict[str, float], p: Plan = plan) -> Plan | dict[str, Any]:
            solved = resolve_plan(p, f)
            # pipeline plans have no typed deployment: the simulator rebuilds them
            return solved.to_dict() if needs_context(solved.request.inner) else solved

        start = plan.to_dict() if needs_context(plan.request.inner) else plan
        final, loop = close_loop(start, resolve, seed=seed, progress=progress)
        out = with_loop(dict(final), loop)
        if target is None or loop.headline_rps >= target * (1 - 1e-9) or \
                loop.headline_rps <= 0:
            break
        asked = cast(float, asked) * (target / loop.headline_rps) * 1.02  # set: target is
        if progress:
            progress(f"{loop.headline_rps:,.1f} requests/s hold in simulation, short of "
                     f"the target {target:g}: planning for {asked:,.1f}")
        plan = make_plan(replace(plan.request, target_rps=asked))
    if target is not None:
        out["request"] = dict(out["request"], target_rps=target)
        out["summary"]["closed_loop"]["planned_for_rps"] = asked
    return out


__all__ = ["close_plan"]
