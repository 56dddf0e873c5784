"""Inner loop (seed 002 §4.8): assign prefill/decode roles and per-range shares to the
islands of a given layout so that the served mix matches the workload.

Inputs are plain arrays (:class:`InnerProblem`), so any performance model can feed it;
solvers follow the :class:`InnerSolver` protocol and are registered by name in
:data:`INNER_SOLVERS` (the CLI's ``--inner``; :mod:`planner.inner.registry`):

* ``"maxrate"`` -- :class:`MaxRateMILP`, the weight-free exact maximum-rate MILP
  (default; fastest);
* ``"thesis"`` -- :class:`ThesisMILP`, the MILP of §4.8.1 as printed;
* ``"seed000"`` / ``"seed001"`` -- :class:`BlocksSolver` / :class:`ChainsSolver`, the
  pipeline solvers of seeds 000/001 (they need the planning context).
"""

from __future__ import annotations

from planner.inner.common import solve_within_inventory
from planner.inner.evaluator import Evaluation, evaluate
from planner.inner.max_rate import MaxRateMILP
from planner.inner.pipeline_solvers import BlocksSolver, ChainsSolver
from planner.inner.problem import FullResolution, InnerProblem, IslandSpec, layout_violation
from planner.inner.protocol import NEEDS_CONTEXT, InnerSolver
from planner.inner.registry import DEFAULT_INNER, INNER_SOLVERS, make_inner_solver, needs_context
from planner.inner.result import InnerResult, IslandAssignment, infeasible_result
from planner.inner.thesis_milp import ThesisMILP

__all__ = [
    "NEEDS_CONTEXT",
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
    "needs_context",
    "solve_within_inventory",
]
