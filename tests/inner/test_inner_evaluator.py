"""Full-resolution evaluator (seed 002 §5.2.2)."""

from __future__ import annotations

import numpy as np
import pytest

from planner.inner import FullResolution, MaxRateMILP, ThesisMILP, evaluate
from planner.inner.synthetic import (
    problem_from_tables,
    random_layout,
    synthetic_problem,
)


@pytest.mark.parametrize("solver", [MaxRateMILP(), ThesisMILP()], ids=["maxrate", "thesis"])
def test_width_one_ranges_make_model_equal_evaluated(solver):
    # 16 ranges of width 1 over lengths 0..15: the range tables are the exact tables.
    prob, full = synthetic_problem(random_layout(5, 1), 16, width=1, max_len=16)
    res = solver.solve(prob)
    ev = evaluate(res, prob, full)
    assert np.allclose(ev.model_prefill, ev.eval_prefill, rtol=1e-12, atol=1e-12)
    assert np.allclose(ev.model_decode, ev.eval_decode, rtol=1e-12, atol=1e-12)
    assert ev.R_prefill == pytest.approx(res.R_prefill, rel=1e-12)
    assert ev.R_total == pytest.approx(res.R_total, rel=1e-12)
    assert ev.R_sustained == pytest.approx(res.R_sustained, rel=1e-9)
    assert ev.R_pooled == pytest.approx(res.R_sustained, rel=1e-9)
    assert ev.D_total == pytest.approx(res.D_total, rel=1e-9, abs=1e-9)
    assert ev.uncovered_prob == 0.0


def test_hand_computed_two_length_range():
    # One prefill island, one decode island, a single range [0, 2) measured at its
    # midpoint s=1.  p(0)=0.25, p(1)=0.75; exact prefill 8 req/s at s=0, 4 at s=1.
    prob = problem_from_tables([[4.0], [0.0]], [[0.0], [10.0]], [1.0], width=2)
    full = FullResolution(pmf=np.array([0.25, 0.75]),
                          prefill_rps=np.array([[8.0, 4.0], [0.0, 0.0]]),
                          decode_rps=np.array([[0.0, 0.0], [10.0, 10.0]]))
    res = MaxRateMILP().solve(prob)
    assert res.R_prefill == pytest.approx(4.0)  # the model: all time at 4 req/s
    ev = evaluate(res, prob, full)
    # Time split 1/4 : 3/4 -> served 8*0.25 = 2 at s=0 and 4*0.75 = 3 at s=1.
    assert ev.model_prefill == pytest.approx([1.0, 3.0])
    assert ev.eval_prefill == pytest.approx([2.0, 3.0])
    assert ev.R_prefill == pytest.approx(5.0)
    assert ev.R_total == pytest.approx(5.0)  # decode: 10 req/s
    # Bottleneck-consistent: T_prefill = min(2/0.25, 3/0.75) = 4.
    assert ev.T_prefill == pytest.approx(4.0)
    assert ev.R_sustained == pytest.approx(4.0)
    assert ev.prefill_tokens_per_s == pytest.approx(0 * 2.0 + 1 * 3.0)
    # Pooled routing: the island serves the range's mix at its harmonic-mean speed.
    assert ev.R_pooled == pytest.approx(1.0 / (0.25 / 8.0 + 0.75 / 4.0))


def test_coarse_ranges_model_sums_back_and_tail_is_uncovered():
    prob, full = synthetic_problem(random_layout(8, 2), 16, width=64, max_len=1024)
    # Extend the pmf beyond the last range: the tail is reported, not served.
    S = full.pmf.shape[0]
    pmf = np.concatenate([full.pmf * 0.99, np.full(10, 0.001)])
    pad = np.zeros((full.prefill_rps.shape[0], 10))
    full2 = FullResolution(pmf=pmf, prefill_rps=np.hstack([full.prefill_rps, pad + 1.0]),
                           decode_rps=np.hstack([full.decode_rps, pad + 1.0]))
    res = MaxRateMILP().solve(prob)
    ev = evaluate(res, prob, full2)
    assert ev.uncovered_prob == pytest.approx(0.01)
    assert np.all(ev.eval_prefill[S:] == 0)
    # Summing the model over a range gives back the solver's per-range rate.
    per_range = ev.model_prefill[:S].reshape(16, 64).sum(axis=1)
    assert np.allclose(per_range, res.prefill_rps)
    # Lengths below a range's midpoint run faster than the midpoint, above it slower:
    # the evaluated sustained rate can only be lower than the weighted sum.
    assert ev.R_sustained <= ev.R_total
    assert ev.R_sustained < res.R_sustained
    data = ev.plot_data()
    assert set(data) >= {"length", "model_prefill", "eval_prefill", "trace"}
    assert ev.to_json().startswith("{")
