"""Thesis MILP (seed 002 §4.8.1): constraints hold, objective is the printed one,
back-ends agree, and the weight-free optimum bounds its sustainable rate."""

from __future__ import annotations

import numpy as np
import pytest

from planner.inner import MaxRateMILP, ThesisMILP
from planner.inner.synthetic import problem_from_tables, random_layout, synthetic_problem


def small_problem(seed: int, n_islands: int = 6, n_ranges: int = 8):
    prob, _ = synthetic_problem(random_layout(n_islands, seed), n_ranges, seed=seed)
    return prob


def harmonic(rates, p):
    return 1.0 / float(np.sum(np.asarray(p) / np.asarray(rates)))


def recomputed_objective(res, prob, M):
    rp, rd = np.array(res.prefill_rps), np.array(res.decode_rps)
    p = prob.range_prob
    dev = np.abs(rp - p * rp.sum()) + np.abs(rd - p * rd.sum()) + np.abs(rd - rp)
    return rp.sum() + rd.sum() - float(np.sum(M / (1 + p) * dev))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_constraints_hold_and_objective_is_the_printed_one(seed):
    prob = small_problem(seed)
    solver = ThesisMILP(M=2.0, tau=0.05)
    res = solver.solve(prob)
    assert res.status == "optimal"
    xp, xd = res.shares("prefill"), res.shares("decode")
    for i, isl in enumerate(res.islands):
        if isl.role == "idle":
            continue
        # (1) one unit of capacity per island over phases and ranges; (2) one phase.
        assert xp[i].sum() + xd[i].sum() == pytest.approx(1.0, abs=1e-7)
        assert (xp[i].sum() == 0) != (xd[i].sum() == 0) or xp[i].sum() + xd[i].sum() == 0
    rp, rd = np.array(res.prefill_rps), np.array(res.decode_rps)
    p = prob.range_prob
    # (3) minimum throughput; (4)-(5) per-range tolerance tau.
    assert rp.sum() >= 0.01 and rd.sum() >= 0.01
    assert np.all(np.abs(rp - p * rp.sum()) <= 0.05 * p * rp.sum() + 1e-6)
    assert np.all(np.abs(rd - p * rd.sum()) <= 0.05 * p * rd.sum() + 1e-6)
    # (7) the solver's D_total equals the deviations recomputed from the shares (the
    # objective makes every delta tight), and the objective is the printed one.
    assert res.extra["solver_D_total"] == pytest.approx(res.D_total, rel=1e-5, abs=1e-6)
    assert res.objective == pytest.approx(recomputed_objective(res, prob, 2.0), rel=1e-6)


def test_forced_roles_with_zero_tolerance_give_the_harmonic_rates():
    # With tau = 0 each phase must serve the exact mix, and one island per phase leaves
    # a single assignment: R_prefill and R_decode are the islands' harmonic rates.
    p = [0.25, 0.75]
    bp, bd = [8.0, 2.0], [3.0, 5.0]
    prob = problem_from_tables([bp, [0, 0]], [[0, 0], bd], p)
    res = ThesisMILP(tau=0.0).solve(prob)
    assert res.roles() == ["prefill", "decode"]
    assert res.R_prefill == pytest.approx(harmonic(bp, p), rel=1e-6)
    assert res.R_decode == pytest.approx(harmonic(bd, p), rel=1e-6)
    assert res.R_sustained == pytest.approx(min(harmonic(bp, p), harmonic(bd, p)), rel=1e-6)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_weight_free_rate_bounds_the_thesis_sustained_rate(seed):
    prob = small_problem(seed)
    thesis = ThesisMILP().solve(prob)
    best = MaxRateMILP(mip_rel_gap=1e-7).solve(prob)
    assert best.extra["T"] >= thesis.R_sustained * (1 - 1e-6)
    # and the thesis's min-of-sums R_total overstates what it can sustain.
    assert thesis.R_sustained <= thesis.R_total * (1 + 1e-9)


def test_auto_M_is_just_above_the_balancing_bound():
    prob = small_problem(0)
    solver = ThesisMILP()
    assert solver.M is None
    M = solver.effective_M(prob)
    assert M == pytest.approx(1.05 * (1 + prob.range_prob.max()))
    assert solver.solve(prob).extra["M"] == pytest.approx(M)
    assert ThesisMILP(M=3.0).effective_M(prob) == 3.0


def test_cbc_and_highs_agree():
    prob = small_problem(4, n_islands=4, n_ranges=6)
    a = ThesisMILP(solver="highs", mip_rel_gap=1e-7).solve(prob)
    b = ThesisMILP(solver="cbc", mip_rel_gap=1e-7).solve(prob)
    c = ThesisMILP(solver="pulp-highs", mip_rel_gap=1e-7).solve(prob)
    assert a.status == b.status == c.status == "optimal"
    assert b.objective == pytest.approx(a.objective, rel=1e-5)
    assert c.objective == pytest.approx(a.objective, rel=1e-5)


def test_model_size_matches_the_printed_formulation():
    I, J = 5, 7
    rng = np.random.default_rng(0)
    prob = problem_from_tables(rng.uniform(1, 9, (I, J)), rng.uniform(1, 9, (I, J)),
                               rng.dirichlet(np.ones(J)))
    model = ThesisMILP().build(prob)
    assert model.integer.sum() == I  # z_i
    # x^P, x^D, z, R^P_j, R^D_j, R_P, R_D, three deltas per range, D_total.
    assert model.n_cols == 2 * I * J + I + 2 * J + 2 + 3 * J + 1
    # definitions (2J + 2), (1) I, (2) 2IJ, (4)+(5) 6J, (6) 2J, (7) 1.
    assert model.n_rows == (2 * J + 2) + I + 2 * I * J + 6 * J + 2 * J + 1


def test_time_limit_returns_flagged_incumbent_or_reason():
    prob, _ = synthetic_problem(random_layout(24, 7), 48, seed=7)
    res = ThesisMILP(time_limit=0.3).solve(prob)
    assert res.status != "optimal"
    if res.status == "time_limit":
        assert res.R_total > 0 and "time limit" in res.reason
    else:
        assert "time limit" in res.reason
