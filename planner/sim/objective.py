"""The outer search's objective measured in simulation (``--objective simulated``).

The analytic objective scores a layout by its inner solution's capacity: steady-state
rates, no queueing, no bursts, no network contention.  :class:`SimulatedObjective`
scores it by what a short seeded simulation of the solved plan delivers *at the SLO*:

.. math::  v(L) = \\frac{\\text{goodput at } 0.9\\,C(L)}{0.9}

where ``C(L)`` is the layout's analytic capacity and goodput the rate of requests
completed within both the TTFT and TPOT ceilings.  A layout whose capacity the
simulation confirms at the SLO scores ``C(L)`` (up to its attainment); one whose islands
queue, whose bursts overflow a small prefill island, or whose KV transfers crowd a tier
scores what it really delivers.  Reading the rate at 90 % keeps the measurement in
the regime a plan is operated in (the closed loop's SLO check uses the same point), and
dividing by 0.9 keeps values in requests/s comparable with the analytic objective.

Each evaluation is one simulation of ``WARMUP_S + MEASURE_S`` simulated seconds
(about a second of wall time for a few hundred requests/s): seconds per layout instead
of milliseconds, so a search of a few hundred layouts takes minutes.  The exact optimum
and the homogeneous baselines stay analytic (docs/objective-simulated.md compares).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from planner.outer.protocol import Layout, Score, canonical_layout
from planner.sim.closed_loop import simulate_at

#: Shorter than the closed loop's check: the search compares layouts, the loop
#: certifies one.
WARMUP_S, MEASURE_S = 20.0, 30.0
LOAD = 0.9


@dataclass
class SimulatedObjective:
    """Layout -> :class:`Score` whose value is the simulated goodput at the SLO (module
    docstring).  ``make_plan_dict(layout)`` solves a layout and returns its plan dict
    (``None`` when infeasible); ``cost`` and feasibility come from it."""

    make_plan_dict: Any  # Callable[[Layout], tuple[dict | None, Score]]
    seed: int = 0
    analytic: Any = None  # the analytic LayoutEvaluator (range tables for warm starts)
    evaluations: int = 0
    _cache: dict[Layout, Score] = field(default_factory=dict, repr=False)

    def __call__(self, layout: Layout) -> Score:

        layout = canonical_layout(layout)
        hit = self._cache.get(layout)
        if hit is not None:
            return hit
        self.evaluations += 1
        plan, analytic = self.make_plan_dict(layout)
        if plan is None or not analytic.feasible or analytic.value <= 0:
            score = analytic
        else:
            check = simulate_at(plan, LOAD * analytic.value, self.seed, warmup_s=WARMUP_S,
                                measure_s=MEASURE_S)
            goodput = check.completed_rps * check.attainment
            value = min(goodput / LOAD, analytic.value * 1.05)
            score = Score(float(value), analytic.cost_per_hour, True, analytic.detail)
        self._cache[layout] = score
        return score


__all__ = ["SimulatedObjective"]
