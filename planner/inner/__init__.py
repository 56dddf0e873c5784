"""Inner loop (seed 002 §4.8): assign prefill/decode roles and per-range shares to the
islands of a given layout so that the served mix matches the workload.

Inputs are plain arrays (:class:`InnerProblem`), so any performance model can feed it;
solvers follow the :class:`InnerSolver` protocol and are registered by name in
:data:`INNER_SOLVERS` (the CLI's ``--inner``):

* ``"maxrate"`` -- :class:`MaxRateMILP`, the weight-free exact maximum-rate MILP
  (default; fastest);
* ``"thesis"`` -- :class:`ThesisMILP`, the MILP of §4.8.1 as printed.

Seeds 000/001 solvers are added to the registry by their modules.
"""

from __future__ import annotations

from collections.abc import Callable

from planner.inner.common import solve_within_inventory
from planner.inner.evaluator import Evaluation, evaluate
from planner.inner.max_rate import MaxRateMILP
from planner.inner.pipeline_solvers import PIPELINE_SOLVERS, BlocksSolver, ChainsSolver
from planner.inner.problem import FullResolution, InnerProblem, IslandSpec, layout_violation
from planner.inner.protocol import InnerSolver
from planner.inner.result import InnerResult, IslandAssignment, infeasible_result
from planner.inner.thesis_milp import ThesisMILP

#: name -> factory (keyword arguments are the solver's parameters).
INNER_SOLVERS: dict[str, Callable[..., InnerSolver]] = {
    "maxrate": MaxRateMILP,
    "thesis": ThesisMILP,
    # Seeds 000/001 need the planning context: make_inner_solver(name, context=ctx).
    **PIPELINE_SOLVERS,
}

DEFAULT_INNER = "maxrate"


def make_inner_solver(name: str = DEFAULT_INNER, **params) -> InnerSolver:
    """Instantiate a registered inner solver; unknown names raise ``PlannerError``."""
    from planner.errors import PlannerError

    try:
        factory = INNER_SOLVERS[name]
    except KeyError:
        raise PlannerError(
            f"--inner: unknown inner solver {name!r}; choose from {sorted(INNER_SOLVERS)}"
        ) from None
    if name in PIPELINE_SOLVERS and params.get("context") is None:
        raise PlannerError(f"--inner {name}: the pipeline solver needs the planning context "
                           "(model, workload, GPUs) to map islands to servers")
    return factory(**params)


__all__ = [
    "PIPELINE_SOLVERS",
    "BlocksSolver",
    "ChainsSolver",
    "DEFAULT_INNER",
    "INNER_SOLVERS",
    "Evaluation",
    "FullResolution",
    "InnerProblem",
    "InnerResult",
    "InnerSolver",
    "IslandAssignment",
    "IslandSpec",
    "MaxRateMILP",
    "ThesisMILP",
    "evaluate",
    "infeasible_result",
    "layout_violation",
    "make_inner_solver",
    "solve_within_inventory",
]
