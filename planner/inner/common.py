"""The solve pipeline shared by the inner formulations: pre-check, solve, report.

:func:`run_inner` does the parts every solver shares -- the layout pre-check of
:meth:`InnerProblem.infeasibility`, leaving islands that can serve nothing out of the
model, turning a solver failure into an ``"infeasible"`` result with a reason, and
assembling the :class:`InnerResult` -- around a formulation-specific ``core`` that
returns a :class:`CoreOutcome`.  :func:`solve_formulation` is the ``core`` for
formulations written as a :class:`~planner.inner.model.SparseMILP`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from planner.inner.backends import solve_model
from planner.inner.model import SparseMILP
from planner.inner.problem import InnerProblem, layout_violation
from planner.inner.result import InnerResult, assemble_result, infeasible_result


@dataclass
class CoreOutcome:
    """What a formulation's core returns; ``status`` as in :class:`SolveOutcome`."""

    status: str
    seconds: float
    message: str = ""
    objective: float | None = None
    mip_gap: float = 0.0
    x_prefill: np.ndarray | None = None  # (I, J) over all islands
    x_decode: np.ndarray | None = None
    roles: list[str] | None = None
    extra: dict[str, float] = field(default_factory=dict)
    x_both: np.ndarray | None = None  # (I, J) colocated shares, if the model had them


Core = Callable[[InnerProblem, np.ndarray], CoreOutcome]


def usable_islands(problem: InnerProblem) -> np.ndarray:
    """Islands with positive throughput, in some phase, on some range of positive
    probability.  The others can serve nothing: they are reported idle and left out
    of the model (for the thesis MILP this is a no-op on the objective: their ``x``
    multiply zero coefficients everywhere)."""
    active = problem.range_prob > 0
    return (problem.prefill_rps[:, active].max(axis=1, initial=0.0) > 0) | (
        problem.decode_rps[:, active].max(axis=1, initial=0.0) > 0
    ) | (problem.colocated[:, active].max(axis=1, initial=0.0) > 0)


def run_inner(problem: InnerProblem, *, name: str, core: Core,
              time_limit: float | None) -> InnerResult:
    t0 = time.perf_counter()
    reason = problem.infeasibility()
    if reason is not None:
        return infeasible_result(problem, name, reason, wall_time_s=time.perf_counter() - t0)
    usable = usable_islands(problem)
    n_idle = int((~usable).sum())
    note = (
        f"{n_idle} island(s) idle: the model fits on them for neither phase" if n_idle else ""
    )
    try:
        out = core(problem, usable)
    except RuntimeError as err:  # a solver-level failure (e.g. an LP not solved)
        out = CoreOutcome("error", time.perf_counter() - t0, str(err))
    if out.x_prefill is None or out.x_decode is None or out.roles is None:
        if out.status == "no_solution":
            why = (f"solver time limit ({time_limit} s) reached before any feasible "
                   "solution was found (not proven infeasible)")
        elif out.status == "infeasible":
            why = f"the {name} model is infeasible for this layout ({out.message})"
        else:
            why = f"solver failure: {out.message}"
        return infeasible_result(problem, name, why, wall_time_s=time.perf_counter() - t0,
                                 solve_time_s=out.seconds)
    roles = list(out.roles)
    for i in np.flatnonzero(~usable):
        roles[i] = "idle"
    status = "optimal" if out.status == "optimal" else "time_limit"
    return assemble_result(
        problem,
        solver=name,
        status=status,
        reason="" if status == "optimal" else f"time limit ({time_limit} s) reached; "
        f"best solution found, relative gap {out.mip_gap:.3g}",
        x_prefill=out.x_prefill,
        x_decode=out.x_decode,
        roles=roles,
        x_both=out.x_both,
        objective=out.objective,
        mip_gap=out.mip_gap,
        solve_time_s=out.seconds,
        wall_time_s=time.perf_counter() - t0,
        note=note,
        extra=out.extra,
    )


Build = Callable[[InnerProblem, np.ndarray], tuple[SparseMILP, Any]]
Extract = Callable[[SparseMILP, np.ndarray, Any], tuple[np.ndarray, np.ndarray, list[str]]]


def solve_formulation(
    problem: InnerProblem,
    *,
    name: str,
    build: Build,
    extract: Extract,
    backend: str,
    time_limit: float | None,
    mip_rel_gap: float | None,
    extra: Callable[[SparseMILP, np.ndarray, Any], dict[str, float]] | None = None,
) -> InnerResult:
    """:func:`run_inner` for a formulation given as a SparseMILP ``build``/``extract``."""

    def core(prob: InnerProblem, usable: np.ndarray) -> CoreOutcome:
        model, ctx = build(prob, usable)
        out = solve_model(model, backend, time_limit=time_limit, mip_rel_gap=mip_rel_gap)
        if out.x is None:
            return CoreOutcome(out.status, out.seconds, out.message)
        both: list[Any]
        xp, xd, roles, *both = extract(model, out.x, ctx)
        return CoreOutcome(out.status, out.seconds, out.message, out.objective, out.mip_gap,
                           xp, xd, roles, extra(model, out.x, ctx) if extra else {},
                           both[0] if both else None)

    return run_inner(problem, name=name, core=core, time_limit=time_limit)


def solve_within_inventory(solver, problem: InnerProblem,
                           inventory: Mapping[str, int] | None) -> InnerResult:
    """``solver.solve(problem)``, unless the layout exceeds ``inventory`` (GPU type ->
    count), in which case the result is ``"infeasible"`` with the reason."""
    if inventory is not None:
        why = layout_violation(problem.islands, inventory)
        if why is not None:
            return infeasible_result(problem, solver.name, why)
    return solver.solve(problem)
