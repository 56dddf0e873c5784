"""A what-if study end to end: every scenario of a spec (base first, solved by
:class:`~planner.whatif.solve.WhatIfRunner`), then the marginal-value options
(:mod:`planner.whatif.marginal`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from planner.whatif.marginal import MarginalAnswer, marginal_answer
from planner.whatif.scenarios import expand
from planner.whatif.solve import Outcome, StepProgress, WhatIfRunner
from planner.whatif.spec import WhatIfSpec


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


def run_whatif(spec: WhatIfSpec, progress: StepProgress | None = None) -> WhatIfResult:
    """Solve every scenario of ``spec`` (base first), then the marginal-value options."""
    t0 = time.perf_counter()
    runner = WhatIfRunner(spec)
    scenarios = expand(spec)
    outcomes = []
    for k, sc in enumerate(scenarios):
        outcomes.append(runner.solve(sc))
        if progress:
            progress("scenarios", k + 1, len(scenarios))
    answer = None
    if spec.marginal:
        answer = marginal_answer(spec, runner, outcomes[0], progress)
        outcomes += [o.outcome for o in answer.options]
        if answer.reference is not None:
            outcomes.append(answer.reference.outcome)
    return WhatIfResult(spec, outcomes, answer, time.perf_counter() - t0,
                        runner.problems_solved)
