"""Inner problem validation and the "infeasible, because ..." answers for bad layouts."""

from __future__ import annotations

import numpy as np
import pytest

from planner.core.errors import PlannerError
from planner.inner import (
    INNER_SOLVERS,
    InnerProblem,
    IslandSpec,
    MaxRateMILP,
    ThesisMILP,
    layout_violation,
    make_inner_solver,
    solve_within_inventory,
)
from planner.inner.synthetic import problem_from_tables

SOLVERS = [MaxRateMILP(), MaxRateMILP(solver="highs"), ThesisMILP()]


def empty_problem():
    return InnerProblem(islands=(), range_prob=np.array([1.0]), range_start=np.array([0]),
                        range_end=np.array([10]), range_mid=np.array([5]),
                        prefill_rps=np.zeros((0, 1)), decode_rps=np.zeros((0, 1)))


@pytest.mark.parametrize("solver", SOLVERS, ids=lambda s: f"{s.name}-{s.solver}")
@pytest.mark.parametrize(
    ("prob", "words"),
    [
        (empty_problem(), "empty layout"),
        (problem_from_tables([[0, 0], [0, 0]], [[0, 0], [0, 0]], [0.5, 0.5]), "none"),
        (problem_from_tables([[1, 1], [2, 2]], [[0, 0], [0, 0]], [0.5, 0.5]),
         "decode on none"),
        (problem_from_tables([[1, 1], [0, 0]], [[1, 1], [0, 0]], [0.5, 0.5]),
         "one island only"),
        (problem_from_tables([[1, 1], [1, 1]], [[1, 0], [1, 0]], [0.5, 0.5]),
         "no island can decode range 1"),
    ],
    ids=["empty", "fits-nowhere", "no-decode", "single-island", "unserved-range"],
)
def test_bad_layouts_are_infeasible_with_a_reason(solver, prob, words):
    res = solver.solve(prob)
    assert res.status == "infeasible"
    assert words in res.reason
    assert res.R_total == 0 and all(i.role == "idle" for i in res.islands)


def test_range_with_zero_probability_need_not_be_served():
    prob = problem_from_tables([[1, 1], [1, 1]], [[1, 0], [1, 0]], [1.0, 0.0])
    res = MaxRateMILP().solve(prob)
    assert res.status == "optimal" and res.R_sustained == pytest.approx(1.0)


def test_island_that_fits_nowhere_is_idle_and_noted():
    prob = problem_from_tables([[4, 4], [0, 0], [1, 1]], [[0, 0], [0, 0], [2, 2]], [0.5, 0.5])
    for solver in (MaxRateMILP(), ThesisMILP()):
        res = solver.solve(prob)
        assert res.status == "optimal"
        assert res.roles() == ["prefill", "idle", "decode"]
        assert "1 island(s) idle" in res.note


def test_layout_violation():
    isl = (IslandSpec("H200", 16), IslandSpec("H200", 8), IslandSpec("H20", 4))
    assert layout_violation(isl, {"H200": 24, "H20": 4}) is None
    msg = layout_violation(isl, {"H200": 16})
    assert "beyond the inventory" in msg and "H200: layout uses 24" in msg
    assert "H20: layout uses 4 GPUs, inventory has 0" in msg
    assert "empty layout" in layout_violation((), {"H200": 8})


def test_layout_beyond_inventory_is_an_infeasible_result():
    prob = problem_from_tables([[4, 4], [1, 1]], [[0, 0], [2, 2]], [0.5, 0.5])
    res = solve_within_inventory(MaxRateMILP(), prob, {"X0": 1})
    assert res.status == "infeasible" and "X1: layout uses 1 GPUs, inventory has 0" in res.reason
    ok = solve_within_inventory(MaxRateMILP(), prob, {"X0": 1, "X1": 1})
    assert ok.status == "optimal"


def test_problem_validation_rejects_inconsistent_arrays():
    good = dict(islands=(IslandSpec("A", 1),), range_prob=np.array([0.5, 0.5]),
                range_start=np.array([0, 1]), range_end=np.array([1, 2]),
                range_mid=np.array([0, 1]), prefill_rps=np.ones((1, 2)),
                decode_rps=np.ones((1, 2)))
    InnerProblem(**good)
    with pytest.raises(ValueError, match="prefill_rps: shape"):
        InnerProblem(**{**good, "prefill_rps": np.ones((2, 2))})
    with pytest.raises(ValueError, match="sums to"):
        InnerProblem(**{**good, "range_prob": np.array([0.5, 0.6])})
    with pytest.raises(ValueError, match="negative throughput"):
        InnerProblem(**{**good, "decode_rps": -np.ones((1, 2))})
    with pytest.raises(ValueError, match="NaN"):
        InnerProblem(**{**good, "decode_rps": np.array([[np.nan, 1.0]])})


def test_registry():
    assert set(INNER_SOLVERS) >= {"thesis", "maxrate"}
    s = make_inner_solver("thesis", solver="cbc", M=3.0)
    assert isinstance(s, ThesisMILP) and s.M == 3.0 and s.solver == "cbc"
    with pytest.raises(PlannerError, match="unknown inner solver 'nope'"):
        make_inner_solver("nope")
