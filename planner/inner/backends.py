"""Back-ends that solve a :class:`~planner.inner.model.SparseMILP`.

* ``"bnb"`` – our branch-and-bound over HiGHS LP relaxations
  (:mod:`planner.inner.bnb`), fastest on models with few integer columns.
* ``"highs"`` – HiGHS's MIP solver called directly through ``highspy``: the CSR arrays
  are passed in one ``Highs.passModel`` call, with no per-term Python work.
* ``"cbc"`` – the model rebuilt with pulp and solved by the CBC binary shipped with pulp
  (``PULP_CBC_CMD``), as in the thesis (§4.8.2).
* ``"pulp-highs"`` – the same pulp model solved through pulp's in-process HiGHS
  interface (``pulp.HiGHS``, which itself adds columns and rows one by one).

All return a :class:`SolveOutcome` whose ``status`` is one of ``"optimal"``,
``"time_limit"`` (stopped by the time limit with a feasible incumbent),
``"no_solution"`` (stopped before any feasible point was found), ``"infeasible"`` or
``"error"``.  Solver failures are reported, never raised: the outer loop must be able
to keep going.
"""

from __future__ import annotations

import math
import threading
import time
from typing import Any

import numpy as np

from planner.inner.bnb import solve_bnb
from planner.inner.highs import new_highs
from planner.inner.model import SolveOutcome, SparseMILP

BACKENDS = ("bnb", "highs", "cbc", "pulp-highs")


def solve_model(
    model: SparseMILP,
    backend: str = "highs",
    *,
    time_limit: float | None = None,
    mip_rel_gap: float | None = None,
    start: np.ndarray | None = None,
    node_limit: int | None = None,
) -> SolveOutcome:
    """Maximise ``model`` with ``backend``; ``start`` is an optional feasible start point.

    ``node_limit`` (HiGHS only) bounds the branch-and-bound work deterministically: with
    one thread the same model stops at the same node on any machine, at any load, and
    reports ``"work_limit"`` with its proven gap -- unlike ``time_limit``, whose outcome
    depends on how busy the machine is (keep one only as a safety net)."""
    if backend == "highs":
        return _solve_highspy(model, time_limit, mip_rel_gap, start, node_limit)
    if backend == "bnb":

        return solve_bnb(model, gap=1e-4 if mip_rel_gap is None else mip_rel_gap,
                         time_limit=time_limit)
    if backend in ("cbc", "pulp-highs"):
        return _solve_pulp(model, backend, time_limit, mip_rel_gap)
    raise ValueError(f"unknown inner-solver backend {backend!r}; choose from {BACKENDS}")


# --- HiGHS through highspy ---------------------------------------------------------------


#: Set once a HiGHS solve was interrupted: HiGHS's worker threads may then abort the
#: interpreter's teardown (C++ "terminate called"), so the CLI leaves with os._exit
#: after flushing (planner.cli.main.run).
INTERRUPTED = threading.Event()


def _run_interruptible(h: Any) -> None:
    """``h.run()`` in a worker thread, so that Ctrl-C -- and SIGTERM, which the CLI turns
    into one (planner.cli.progress.interrupt_on_sigterm) -- is honoured within a fraction
    of a second instead of when the solve ends: the main thread waits in short joins,
    and on an interrupt asks HiGHS to stop through its MIP interrupt callback, waits for
    it, and re-raises."""
    from highspy import cb

    stop = threading.Event()

    def callback(_kind: Any, _message: Any, _out: Any, data_in: Any, _user: Any) -> None:
        if data_in is not None and stop.is_set():
            data_in.user_interrupt = True

    h.setCallback(callback, None)
    # between branch-and-bound nodes only: the simplex callback runs every iteration
    # (a quarter more time on the README plan's MILP, measured) and one node's LP is short
    h.startCallback(cb.HighsCallbackType.kCallbackMipInterrupt)
    failed: list[BaseException] = []

    def work() -> None:
        try:
            h.run()
        except BaseException as err:  # re-raised in the caller's thread
            failed.append(err)

    worker = threading.Thread(target=work, name="highs", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.2)
    except BaseException:
        stop.set()
        worker.join()
        INTERRUPTED.set()
        raise
    if failed:
        raise failed[0]


def _solve_highspy(
    model: SparseMILP,
    time_limit: float | None,
    mip_rel_gap: float | None,
    start: np.ndarray | None,
    node_limit: int | None = None,
) -> SolveOutcome:
    import highspy

    t0 = time.perf_counter()
    h = new_highs()
    h.setOptionValue("output_flag", False)
    # One thread: the machine and the outer loop's parallel workers share the cores, and
    # HiGHS's MIP search is essentially serial on problems this small.
    h.setOptionValue("threads", 1)
    if time_limit is not None:
        h.setOptionValue("time_limit", float(time_limit))
    if mip_rel_gap is not None:
        h.setOptionValue("mip_rel_gap", float(mip_rel_gap))
    if node_limit is not None:
        h.setOptionValue("mip_max_nodes", int(node_limit))
    # highspy rejects an empty integrality vector, so an LP passes all zeros.
    integrality = model.integer.astype(np.int32)
    passed = h.passModel(
        model.n_cols,
        model.n_rows,
        int(model.value.shape[0]),
        int(highspy.MatrixFormat.kRowwise),
        int(highspy.ObjSense.kMaximize),
        0.0,
        np.ascontiguousarray(model.cost),
        np.ascontiguousarray(model.col_lower),
        np.ascontiguousarray(model.col_upper),
        np.ascontiguousarray(model.row_lower),
        np.ascontiguousarray(model.row_upper),
        model.row_start,
        model.col_index,
        model.value,
        integrality,
    )
    if passed == highspy.HighsStatus.kError:
        return SolveOutcome("error", None, math.nan, time.perf_counter() - t0,
                            "HiGHS rejected the model")
    if start is not None:
        sol = highspy.HighsSolution()
        sol.col_value = list(map(float, start))
        sol.value_valid = True
        h.setSolution(sol)
    if model.is_mip:
        _run_interruptible(h)
    else:  # an LP (the inner solves, thousands per search): no thread, and no callback
        h.run()  # would stop it anyway -- the interrupt is checked between MIP nodes
    seconds = time.perf_counter() - t0
    ms = h.getModelStatus()
    info = h.getInfo()
    S = highspy.HighsModelStatus
    has_point = info.primal_solution_status == 2  # kSolutionStatusFeasible
    gap = float(info.mip_gap) if model.is_mip and has_point else 0.0
    if ms == S.kOptimal:
        status = "optimal"
    elif ms in (S.kInfeasible, S.kUnboundedOrInfeasible):
        return SolveOutcome("infeasible", None, math.nan, seconds, h.modelStatusToString(ms))
    elif ms in (S.kTimeLimit, S.kInterrupt):
        status = "time_limit" if has_point else "no_solution"
    elif ms in (S.kIterationLimit, S.kSolutionLimit):
        status = "work_limit" if has_point else "no_solution"
    else:
        return SolveOutcome("error", None, math.nan, seconds, h.modelStatusToString(ms))
    if status == "no_solution":
        return SolveOutcome(status, None, math.nan, seconds, h.modelStatusToString(ms))
    x = np.asarray(h.getSolution().col_value, dtype=float)
    return SolveOutcome(status, x, float(info.objective_function_value), seconds,
                        h.modelStatusToString(ms), gap if math.isfinite(gap) else math.inf)


# --- pulp (CBC or pulp's HiGHS interface) ----------------------------------------------


def build_pulp(model: SparseMILP):  # -> pulp.LpProblem
    """The same model as a pulp ``LpProblem`` (variables in column order)."""
    import pulp

    prob = pulp.LpProblem("inner", pulp.LpMaximize)
    names = model.col_names()
    # pulp >= 3.3 creates variables through the problem (the PuLP 4.0 API).
    new_var = getattr(prob, "add_variable", None) or pulp.LpVariable
    xs = [
        new_var(
            names[k],
            None if math.isinf(model.col_lower[k]) else float(model.col_lower[k]),
            None if math.isinf(model.col_upper[k]) else float(model.col_upper[k]),
            pulp.LpInteger if model.integer[k] else pulp.LpContinuous,
        )
        for k in range(model.n_cols)
    ]
    nz = np.flatnonzero(model.cost)
    prob.setObjective(pulp.LpAffineExpression([(xs[k], float(model.cost[k])) for k in nz]))
    idx = model.col_index.tolist()
    val = model.value.tolist()
    starts = model.row_start.tolist()
    lo, hi = model.row_lower.tolist(), model.row_upper.tolist()
    for r in range(model.n_rows):
        terms = [(xs[idx[k]], val[k]) for k in range(starts[r], starts[r + 1])]
        if lo[r] == hi[r]:
            prob.addConstraint(
                pulp.LpConstraint(pulp.LpAffineExpression(terms), pulp.LpConstraintEQ,
                                  rhs=lo[r]), name=f"r{r}")
            continue
        if not math.isinf(lo[r]):
            prob.addConstraint(
                pulp.LpConstraint(pulp.LpAffineExpression(terms), pulp.LpConstraintGE,
                                  rhs=lo[r]), name=f"r{r}_lo")
        if not math.isinf(hi[r]):
            prob.addConstraint(
                pulp.LpConstraint(pulp.LpAffineExpression(terms), pulp.LpConstraintLE,
                                  rhs=hi[r]), name=f"r{r}_hi")
    return prob, xs


def _solve_pulp(
    model: SparseMILP, backend: str, time_limit: float | None, mip_rel_gap: float | None
) -> SolveOutcome:
    import pulp

    t0 = time.perf_counter()
    prob, xs = build_pulp(model)
    if backend == "cbc":
        solver = _cbc(time_limit, mip_rel_gap)
    else:
        new_highs()  # pulp builds its Highs before it can turn the output off: the banner
        # would print if this were the process's first (planner.inner.highs)
        solver = pulp.HiGHS(msg=False, timeLimit=time_limit, gapRel=mip_rel_gap, threads=1)
    try:
        prob.solve(solver)
    except pulp.PulpSolverError as err:  # a missing or crashing solver binary
        return SolveOutcome("error", None, math.nan, time.perf_counter() - t0, str(err))
    seconds = time.perf_counter() - t0
    sol = prob.sol_status
    if sol == pulp.LpSolutionOptimal:
        status = "optimal"
    elif sol == pulp.LpSolutionIntegerFeasible:
        status = "time_limit"
    elif sol == pulp.LpSolutionInfeasible or prob.status == pulp.LpStatusInfeasible:
        return SolveOutcome("infeasible", None, math.nan, seconds, "infeasible")
    elif sol == pulp.LpSolutionNoSolutionFound:
        return SolveOutcome("no_solution", None, math.nan, seconds, pulp.LpStatus[prob.status])
    else:
        return SolveOutcome("error", None, math.nan, seconds, pulp.LpStatus[prob.status])
    x = np.array([v.varValue if v.varValue is not None else 0.0 for v in xs], dtype=float)
    return SolveOutcome(status, x, float(model.cost @ x), seconds, pulp.LpStatus[prob.status])


def _cbc(time_limit: float | None, gap: float | None):
    """CBC through pulp: a system ``cbc`` (``COIN_CMD``) if installed, else the binary
    bundled with pulp (``PULP_CBC_CMD``, deprecated for PuLP 4.0 but shipped in 3.x)."""
    import warnings

    import pulp

    kw = {"msg": False, "timeLimit": time_limit, "gapRel": gap}
    coin = pulp.COIN_CMD(**kw)
    if coin.available():
        return coin
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return pulp.PULP_CBC_CMD(**kw)
