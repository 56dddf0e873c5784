"""InnerResult: JSON round trip, strict JSON, derived totals."""

from __future__ import annotations

import json

import numpy as np
import pytest

from planner.inner import InnerResult, MaxRateMILP, ThesisMILP
from planner.inner.synthetic import problem_from_tables, random_layout, synthetic_problem


@pytest.mark.parametrize("solver", [MaxRateMILP(), ThesisMILP()], ids=["maxrate", "thesis"])
def test_json_round_trip(solver):
    prob, _ = synthetic_problem(random_layout(6, 3), 8)
    res = solver.solve(prob)
    text = res.to_json()
    json.loads(text)  # strict JSON (allow_nan=False when writing)
    back = InnerResult.from_json(text)
    assert back == res
    assert back.islands[0].shares == res.islands[0].shares


def test_infeasible_result_round_trips_and_has_no_nan():
    prob = problem_from_tables([[0, 0], [0, 0]], [[0, 0], [0, 0]], [0.5, 0.5])
    res = MaxRateMILP().solve(prob)
    text = res.to_json()
    assert "NaN" not in text and "Infinity" not in text
    back = InnerResult.from_json(text)
    assert back.status == "infeasible" and back.reason == res.reason
    assert back.objective is None and back.mip_gap == float("inf")


def test_totals_and_token_rates_follow_their_definitions():
    p = np.array([0.25, 0.75])
    prob = problem_from_tables([[8.0, 2.0], [0, 0]], [[0, 0], [3.0, 5.0]], p, decode_mean=50.0)
    res = MaxRateMILP().solve(prob)
    rp, rd = np.array(res.prefill_rps), np.array(res.decode_rps)
    assert res.R_prefill == pytest.approx(rp.sum())
    assert res.R_total == pytest.approx(min(rp.sum(), rd.sum()))
    assert res.R_sustained == pytest.approx(np.min(np.minimum(rp, rd) / p))
    mid = prob.range_mid
    assert res.prefill_tokens_per_s == pytest.approx(rp @ mid)
    assert res.decode_tokens_per_s == pytest.approx(rd.sum() * 50.0)
    assert res.sustained_tokens_per_s == pytest.approx(res.R_sustained * (p @ mid + 50.0))
    dev = np.abs(rp - p * rp.sum()) + np.abs(rd - p * rd.sum()) + np.abs(rd - rp)
    assert res.D_total == pytest.approx(dev.sum())
    assert res.solve_time_s > 0 and res.wall_time_s >= res.solve_time_s
