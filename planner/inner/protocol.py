"""The inner-solver protocol: layout + benchmark tables + workload ranges -> assignment.

Every inner formulation (the thesis MILP of seed 002 §4.8.1, the weight-free maximum
rate MILP, and later the solvers of seeds 000/001) implements :class:`InnerSolver` so
that the outer loop and the CLI's ``--inner`` flag can swap them freely.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from planner.inner.problem import InnerProblem
from planner.inner.result import InnerResult


@runtime_checkable
class InnerSolver(Protocol):
    """Assigns each island a role and per-range shares of its time.

    ``solve`` never raises on a bad layout or a solver failure: it returns an
    :class:`InnerResult` with ``status == "infeasible"`` and a ``reason``.
    """

    name: str

    def solve(self, problem: InnerProblem) -> InnerResult: ...
