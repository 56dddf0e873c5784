"""The inner-solver protocol: layout + benchmark tables + workload ranges -> assignment.

Every inner formulation (the thesis MILP of seed 002 §4.8.1, the weight-free maximum
rate MILP, and later the solvers of seeds 000/001) implements :class:`InnerSolver` so
that the outer loop and the CLI's ``--inner`` flag can swap them freely.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from planner.inner.problem import InnerProblem
from planner.inner.result import InnerResult

#: Capability (``capabilities`` class attribute, read by the registry) of an inner
#: solver that maps islands onto servers itself -- seeds 000/001: it is built with the
#: planning context (``context=``, ``network=``), has no per-island prefill/decode
#: tables, so neither the exact outer MILP nor the simulated objective can use it, and
#: its plans are simulated as the chains it composes.
NEEDS_CONTEXT = "needs-context"


@runtime_checkable
class InnerSolver(Protocol):
    """Assigns each island a role and per-range shares of its time.

    ``solve`` never raises on a bad layout or a solver failure: it returns an
    :class:`InnerResult` with ``status == "infeasible"`` and a ``reason``.  A solver
    may declare ``capabilities`` (e.g. :data:`NEEDS_CONTEXT`) as a class attribute.
    """

    name: str

    def solve(self, problem: InnerProblem) -> InnerResult: ...


__all__ = ["NEEDS_CONTEXT", "InnerSolver"]
