"""A what-if study end to end: every scenario of a spec (base first, solved by
:class:`~planner.whatif.solve.WhatIfRunner`), then the marginal-value options
(:mod:`planner.whatif.marginal`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from planner.whatif.marginal import MarginalAnswer, marginal_answer, marginal_count
from planner.whatif.scenarios import MIX, Scenario, expand
from planner.whatif.solve import Outcome, WhatIfRunner
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


def run_whatif(spec: WhatIfSpec, progress: ScenarioProgress | None = None) -> WhatIfResult:
    """Solve every scenario of ``spec`` (base first), then the marginal-value options;
    ``progress(k, n, label)`` is called before each of the n solves."""
    t0 = time.perf_counter()
    runner = WhatIfRunner(spec)
    scenarios = expand(spec)
    total = len(scenarios) + marginal_count(spec)
    done = 0

    def before(sc: Scenario) -> None:
        nonlocal done
        done += 1
        if progress:
            progress(done, total, scenario_label(sc))

    outcomes = []
    for sc in scenarios:
        before(sc)
        outcomes.append(runner.solve(sc))
    answer = None
    if spec.marginal:
        answer = marginal_answer(spec, runner, outcomes[0], before)
        outcomes += [o.outcome for o in answer.options]
        if answer.reference is not None:
            outcomes.append(answer.reference.outcome)
    return WhatIfResult(spec, outcomes, answer, time.perf_counter() - t0,
                        runner.problems_solved)
