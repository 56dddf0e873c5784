"""A what-if study end to end: every scenario of a spec (base first) planned as
``planner plan`` plans it (:class:`~planner.whatif.solve.WhatIfRunner`), through the
closed loop for every scenario or for a sample with the others corrected
(:mod:`planner.whatif.correction`), then the marginal-value options
(:mod:`planner.whatif.marginal`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from planner.core.execution import Executor
from planner.whatif.correction import Correction, choose_sample
from planner.whatif.marginal import MarginalAnswer, marginal_answer, marginal_count
from planner.whatif.scenarios import MIX, Scenario, expand
from planner.whatif.solve import CLOSED, PLANNED, Cells, Outcome, WhatIfRunner
from planner.whatif.spec import WhatIfSpec

# (k, n, label): scenario k (1-based) of n is settled
ScenarioProgress = Callable[[int, int, str], None]


def scenario_label(sc: Scenario) -> str:
    """A scenario for people: its name, and the option unless it is the mix."""
    return sc.name if sc.option == MIX else f"{sc.name}, {sc.option}"


@dataclass
class WhatIfResult:
    spec: WhatIfSpec
    outcomes: list[Outcome]
    marginal: MarginalAnswer | None = None
    seconds: float = 0.0
    problems: int = 0  # distinct problems planned
    #: How the capacities were obtained: "every" (each scenario's closed loop), "sample"
    #: (a sample's, the others corrected: ``correction``) or "off" (analytic figures).
    mode: str = "every"
    correction: Correction | None = None
    closed_loops: int = 0  # distinct problems taken through the closed loop

    @property
    def base(self) -> Outcome:
        return self.outcomes[0]

    def study(self, name: str) -> list[Outcome]:
        return [o for o in self.outcomes if o.scenario.study == name]


def _distinct(scenarios: list[Scenario]) -> int:
    return len({sc.key() for sc in scenarios})


def run_whatif(spec: WhatIfSpec, progress: ScenarioProgress | None = None,
               executor: Executor | None = None, cells: Cells | None = None
               ) -> WhatIfResult:
    """Plan every scenario of ``spec`` (base first), then the marginal-value options;
    ``progress(k, n, label)`` is called as each of the n is settled (a sampled study's
    closed loops count too, once the sample is known).  ``executor`` spreads the
    distinct problems of each stage over workers (planner.core.execution; the results
    are the serial ones); ``cells`` saves each as it is solved and supplies those of an
    interrupted run (planner.whatif.cells)."""
    t0 = time.perf_counter()
    runner = WhatIfRunner(spec)
    scenarios = expand(spec)
    mode = spec.closed_loop.resolve(_distinct(scenarios) + marginal_count(spec))
    first = CLOSED if mode == "every" else PLANNED
    total = len(scenarios) + marginal_count(spec)
    settled = 0

    def done(sc: Scenario, prefix: str = "") -> None:
        nonlocal settled
        settled += 1
        if progress:
            progress(settled, total, prefix + scenario_label(sc))

    def solve(batch: list[Scenario], kind: str, prefix: str = "") -> list[Outcome]:
        outs = runner.solve_many(batch, executor, cells, lambda sc: done(sc, prefix), kind)
        for o in outs:  # repeats of a problem are settled with it
            if o.cached:
                done(o.scenario, prefix)
        return outs

    outcomes = solve(scenarios, first)
    correction = None
    closed: dict[tuple, Outcome] = {}  # a sampled study's closed loops, by problem

    def close(batch: list[Scenario]) -> None:
        nonlocal total
        total += len(batch)
        closed.update((o.scenario.key(), o) for o in solve(batch, CLOSED, "closed loop: "))

    if mode == "sample":
        picks = choose_sample(outcomes, spec.closed_loop.sample)
        close([outcomes[i].scenario for i in picks])
        correction = Correction.from_closed(spec.closed_loop.sample, list(closed.values()))
        outcomes = [_settle(o, closed, correction) for o in outcomes]

    answer = None
    if spec.marginal:
        def solve_options(batch: list[Scenario]) -> list[Outcome]:
            outs = solve(batch, first)
            if correction is None:
                return outs
            # an option whose workload's correction is unmeasured is closed instead
            close([o.scenario for o in outs
                   if o.analytic_requests_per_s > 0 and o.scenario.key() not in closed
                   and ((w := correction.for_outcome(o)) is None
                        or math.isnan(w.max_error))])
            return [_settle(o, closed, correction) for o in outs]

        answer = marginal_answer(spec, solve_options, outcomes[0])
        outcomes += [o.outcome for o in answer.options]
        if answer.reference is not None:
            outcomes.append(answer.reference.outcome)
    return WhatIfResult(spec, outcomes, answer, time.perf_counter() - t0,
                        runner.problems_solved, mode, correction, runner.closed_loops)


def _settle(o: Outcome, closed: dict[tuple, Outcome], correction: Correction) -> Outcome:
    """A planned outcome of a sampled study: its closed loop's if its problem was
    closed (keeping whether it is a repeat), else its corrected analytic figure."""
    hit = closed.get(o.scenario.key())
    if hit is not None:
        return replace(hit, scenario=o.scenario, cached=o.cached,
                       seconds=0.0 if o.cached else o.seconds + hit.seconds)
    w = correction.for_outcome(o)
    if w is None or not o.analytic_requests_per_s > 0:
        return o  # no plan: 0 either way
    return w.apply(o)
