"""The solve pipeline shared by the MILP formulations: pre-check, build, solve, report.

A formulation supplies two pure functions -- ``build(problem, usable)`` returning a
:class:`~planner.inner.model.SparseMILP` plus whatever it needs to decode a solution,
and ``extract(model, x, ctx)`` returning ``(x_prefill, x_decode, roles)`` over all
islands -- and :func:`solve_formulation` does the rest identically for all of them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from planner.inner.backends import solve_model
from planner.inner.model import SparseMILP
from planner.inner.problem import InnerProblem
from planner.inner.result import InnerResult, assemble_result, infeasible_result

Build = Callable[[InnerProblem, np.ndarray], tuple[SparseMILP, Any]]
Extract = Callable[[SparseMILP, np.ndarray, Any], tuple[np.ndarray, np.ndarray, list[str]]]


def usable_islands(problem: InnerProblem) -> np.ndarray:
    """Islands with positive throughput, in some phase, on some range of positive
    probability.  The others can serve nothing: they are reported idle and left out
    of the model (for the thesis MILP this is a no-op on the objective: their ``x``
    multiply zero coefficients everywhere)."""
    active = problem.range_prob > 0
    return (problem.prefill_rps[:, active].max(axis=1, initial=0.0) > 0) | (
        problem.decode_rps[:, active].max(axis=1, initial=0.0) > 0
    )


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
    t0 = time.perf_counter()
    reason = problem.infeasibility()
    if reason is not None:
        return infeasible_result(problem, name, reason, wall_time_s=time.perf_counter() - t0)
    usable = usable_islands(problem)
    n_idle = int((~usable).sum())
    note = (
        f"{n_idle} island(s) idle: the model fits on them for neither phase" if n_idle else ""
    )
    model, ctx = build(problem, usable)
    out = solve_model(model, backend, time_limit=time_limit, mip_rel_gap=mip_rel_gap)
    if out.x is None:
        if out.status == "no_solution":
            why = (f"solver time limit ({time_limit} s) reached before any feasible "
                   "solution was found (not proven infeasible)")
        elif out.status == "infeasible":
            why = f"the {name} model is infeasible for this layout ({out.message})"
        else:
            why = f"solver failure: {out.message}"
        return infeasible_result(problem, name, why, wall_time_s=time.perf_counter() - t0,
                                 solve_time_s=out.seconds)
    x_prefill, x_decode, roles = extract(model, out.x, ctx)
    for i in np.flatnonzero(~usable):
        roles[i] = "idle"
    status = "optimal" if out.status == "optimal" else "time_limit"
    return assemble_result(
        problem,
        solver=name,
        status=status,
        reason="" if status == "optimal" else f"time limit ({time_limit} s) reached; "
        f"best solution found, relative gap {out.mip_gap:.3g}",
        x_prefill=x_prefill,
        x_decode=x_decode,
        roles=roles,
        objective=out.objective,
        mip_gap=out.mip_gap,
        solve_time_s=out.seconds,
        wall_time_s=time.perf_counter() - t0,
        note=note,
        extra=extra(model, out.x, ctx) if extra is not None else None,
    )
