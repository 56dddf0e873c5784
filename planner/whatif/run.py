"""A what-if study end to end: every scenario of a spec (base first, solved by
:class:`~planner.whatif.solve.WhatIfRunner`), then the marginal-value options
(:mod:`planner.whatif.marginal`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from planner.core.execution import Executor
from planner.whatif.marginal import MarginalAnswer, marginal_answer, marginal_count
from planner.whatif.scenarios import MIX, Scenario, expand
from planner.whatif.solve import Cells, Outcome, WhatIfRunner
from planner.whatif.spec import WhatIfSpec

# (k, n, label): scenario k (1-based) of n is about to be solved
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
    problems: int = 0  # distinct MILPs solved

    @property
    def base(self) -> Outcome:
        return self.outcomes[0]

    def study(self, name: str) -> list[Outcome]:
        return [o for o in self.outcomes if o.scenario.study == name]


def run_whatif(spec: WhatIfSpec, progress: ScenarioProgress | None = None,
               executor: Executor | None = None, cells: Cells | None = None
               ) -> WhatIfResult:
    """Solve every scenario of ``spec`` (base first), then the marginal-value options;
    ``progress(k, n, label)`` is called as each of the n is settled.  ``executor``
    spreads the distinct problems of each stage over workers (planner.core.execution; the
    results are the serial ones); ``cells`` saves each as it is solved and supplies
    those of an interrupted run (planner.whatif.cells)."""
    t0 = time.perf_counter()
    runner = WhatIfRunner(spec)
    scenarios = expand(spec)
    total = len(scenarios) + marginal_count(spec)
    settled = 0

    def done(sc: Scenario) -> None:
        nonlocal settled
        settled += 1
        if progress:
            progress(settled, total, scenario_label(sc))

    def solve(batch: list[Scenario]) -> list[Outcome]:
        outs = runner.solve_many(batch, executor, cells, done)
        for o in outs:  # repeats of a problem are settled with it
            if o.cached:
                done(o.scenario)
        return outs

    outcomes = solve(scenarios)
    answer = None
    if spec.marginal:
        answer = marginal_answer(spec, solve, outcomes[0])
        outcomes += [o.outcome for o in answer.options]
        if answer.reference is not None:
            outcomes.append(answer.reference.outcome)
    return WhatIfResult(spec, outcomes, answer, time.perf_counter() - t0,
                        runner.problems_solved)
