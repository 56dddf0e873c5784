"""Inner solvers by name (the CLI's ``--inner``): one :class:`~perfmodel.registry.Registry`.

Each solver declares what it needs (``capabilities``, e.g.
:data:`~planner.inner.protocol.NEEDS_CONTEXT`); callers ask the registry, never the
name.
"""

from __future__ import annotations

from typing import Any, TypeGuard, cast

from perfmodel.registry import Registry
from planner.core.errors import PlannerError
from planner.inner.max_rate import MaxRateMILP
from planner.inner.pipeline_solvers import BlocksSolver, ChainsSolver
from planner.inner.protocol import NEEDS_CONTEXT, InnerSolver
from planner.inner.thesis_milp import ThesisMILP

INNER_SOLVERS: Registry[type] = Registry("inner solver", "--inner")
INNER_SOLVERS.add("maxrate", MaxRateMILP,
                  "the exact maximum-rate MILP over per-island tables (default; fastest)")
INNER_SOLVERS.add("thesis", ThesisMILP, "seed 002's MILP of §4.8.1 as printed")
INNER_SOLVERS.add("seed000", BlocksSolver,
                  "seed 000's pipeline block placement over servers (BO searches only)")
INNER_SOLVERS.add("seed001", ChainsSolver,
                  "seed 001's chain composition and cache allocation (BO searches only)")

DEFAULT_INNER = "maxrate"


def needs_context(name: str | None) -> TypeGuard[str]:
    """Whether the inner solver ``name`` maps islands to servers itself
    (:data:`~planner.inner.protocol.NEEDS_CONTEXT`)."""
    # a plan may record no inner (None): no registered name, so ``can`` answers False
    return INNER_SOLVERS.can(cast(str, name), NEEDS_CONTEXT)


def make_inner_solver(name: str = DEFAULT_INNER, **params: Any) -> InnerSolver:
    """Instantiate a registered inner solver; unknown names raise ``PlannerError``."""
    factory = INNER_SOLVERS.lookup(name)
    if needs_context(name) and params.get("context") is None:
        raise PlannerError(f"--inner {name}: the pipeline solver needs the planning context "
                           "(model, workload, GPUs) to map islands to servers")
    return factory(**params)


__all__ = ["DEFAULT_INNER", "INNER_SOLVERS", "make_inner_solver", "needs_context"]
