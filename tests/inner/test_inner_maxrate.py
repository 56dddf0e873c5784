"""Weight-free max-rate inner solver: hand-computed optima, exactness, back-end agreement."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from planner.inner import MaxRateMILP
from planner.inner.bnb import branch_and_check, new_lp
from planner.inner.common import usable_islands
from planner.inner.max_rate import build_max_rate
from planner.inner.phase_lp import cut_from_dual, heuristic_dual, phase_rate
from planner.inner.synthetic import problem_from_tables, random_layout, synthetic_problem

BACKENDS = ["bc", "highs", "cbc", "pulp-highs", "bnb"]


def harmonic(rates, p):
    """Rate of one island serving mix p alone: time per request sum_j p_j / b_j."""
    return 1.0 / float(np.sum(np.asarray(p) / np.asarray(rates)))


@pytest.mark.parametrize("solver", BACKENDS)
def test_one_prefill_one_decode_island_is_min_of_harmonic_rates(solver):
    # Island 0 can only prefill, island 1 only decode, so the roles are forced and each
    # island must serve the whole mix: T = min(1/sum(p/bP), 1/sum(p/bD)).
    p = [0.2, 0.5, 0.3]
    bp = [12.0, 6.0, 3.0]
    bd = [5.0, 4.0, 2.5]
    prob = problem_from_tables([bp, [0, 0, 0]], [[0, 0, 0], bd], p)
    res = MaxRateMILP(solver=solver).solve(prob)
    expected = min(harmonic(bp, p), harmonic(bd, p))  # = harmonic(bd) = 3.33...
    assert res.status == "optimal"
    assert res.roles() == ["prefill", "decode"]
    assert res.extra["T"] == pytest.approx(expected, rel=1e-6)
    assert res.R_sustained == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("solver", BACKENDS)
def test_role_choice_picks_the_better_orientation(solver):
    # A prefill / B decode gives min(10, 6) = 6; the other way min(3, 2) = 2.
    prob = problem_from_tables([[10, 10], [3, 3]], [[2, 2], [6, 6]], [0.4, 0.6])
    res = MaxRateMILP(solver=solver).solve(prob)
    assert res.roles() == ["prefill", "decode"]
    assert res.extra["T"] == pytest.approx(6.0, rel=1e-6)


def test_pooled_identical_islands_equal_the_brute_force_optimum():
    # Three identical islands (P=6, D=3 per range) plus a distinct one: enumerate all
    # role vectors, each evaluated by the exact per-phase LP.
    p = np.array([0.3, 0.7])
    bp = np.array([[6.0, 6.0]] * 3 + [[9.0, 2.0]])
    bd = np.array([[3.0, 3.0]] * 3 + [[1.0, 4.0]])
    prob = problem_from_tables(bp, bd, p)
    best = 0.0
    for z in itertools.product([0, 1], repeat=4):
        z = np.array(z)
        if z.all() or not z.any():
            continue
        fp = phase_rate(bp, p, (1 - z).astype(float)).rate
        fd = phase_rate(bd, p, z.astype(float)).rate
        best = max(best, min(fp, fd))
    for solver in ("bc", "highs"):
        res = MaxRateMILP(solver=solver, mip_rel_gap=0.0).solve(prob)
        assert res.extra["T"] == pytest.approx(best, rel=1e-7)
    unpooled = MaxRateMILP(solver="highs", aggregate=False, mip_rel_gap=0.0).solve(prob)
    assert unpooled.extra["T"] == pytest.approx(best, rel=1e-7)


def test_phase_rate_matches_closed_form_and_its_cut_is_valid():
    rng = np.random.default_rng(3)
    p = rng.dirichlet(np.ones(6))
    b = rng.uniform(1, 10, size=(4, 6))
    c = np.array([1.0, 2.0, 0.0, 1.5])
    sol = phase_rate(b, p, c)
    # Served rates per range meet the demand p_j * T, time within capacity.
    assert np.all(np.einsum("gj,gj->j", b, sol.time) >= p * sol.rate * (1 - 1e-7))
    assert np.all(sol.time.sum(axis=1) <= c + 1e-9)
    # LP duality: the cut is tight at c and an upper bound at other counts.
    assert sol.cut @ c == pytest.approx(sol.rate, rel=1e-7)
    for _ in range(20):
        c2 = rng.uniform(0, 3, size=4)
        assert phase_rate(b, p, c2).rate <= sol.cut @ c2 * (1 + 1e-9)
    # One island: harmonic rate.
    one = phase_rate(b[:1], p, np.array([2.0]))
    assert one.rate == pytest.approx(2.0 * harmonic(b[0], p), rel=1e-9)


def test_proportional_tables_are_merged_exactly():
    p = np.array([0.5, 0.25, 0.25])
    base = np.array([4.0, 2.0, 1.0])
    b = np.vstack([base, 3 * base, 0.5 * base])
    c = np.array([1.0, 2.0, 4.0])
    sol = phase_rate(b, p, c)
    # Capacity-weighted sum of the harmonic rates of proportional islands.
    expected = sum(ci * harmonic(bi, p) for ci, bi in zip(c, b, strict=True))
    assert sol.rate == pytest.approx(expected, rel=1e-12)
    assert np.all(np.einsum("gj,gj->j", b, sol.time) >= p * sol.rate * (1 - 1e-9))
    # The heuristic dual is exact for proportional rows.
    assert cut_from_dual(b, heuristic_dual(b, c, p)) @ c == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("seed", [0, 1])
def test_decomposition_agrees_with_monolithic_milp_on_realistic_tables(seed):
    prob, _ = synthetic_problem(random_layout(12, seed), 32, seed=seed, noise=0.05)
    a = MaxRateMILP(solver="bc", mip_rel_gap=1e-7).solve(prob)
    b = MaxRateMILP(solver="highs", mip_rel_gap=1e-7).solve(prob)
    assert a.status == b.status == "optimal"
    assert a.extra["T"] == pytest.approx(b.extra["T"], rel=1e-6)
    # The shares reproduce T: every range is served at p_j * T in both phases.
    assert a.R_sustained >= a.extra["T"] * (1 - 1e-6)


def test_solution_satisfies_role_and_capacity_constraints():
    prob, _ = synthetic_problem(random_layout(10, 5), 24)
    res = MaxRateMILP().solve(prob)
    xp, xd = res.shares("prefill"), res.shares("decode")
    for i, isl in enumerate(res.islands):
        if isl.role == "idle":
            assert sum(isl.shares) == 0
            continue
        assert sum(isl.shares) == pytest.approx(1.0, abs=1e-9)
        other = xd[i] if isl.role == "prefill" else xp[i]
        assert np.all(other == 0)  # one role per island
    assert np.all(xp >= 0) and np.all(xd >= 0)
    # Per-range capacities recomputed from the shares.
    rp = np.einsum("ij,ij->j", prob.prefill_rps, xp)
    assert np.allclose(rp, res.prefill_rps)
    assert np.all(rp >= prob.range_prob * res.extra["T"] * (1 - 1e-6))


def test_branch_and_check_stops_at_node_limit_with_flagged_incumbent():
    prob, _ = synthetic_problem(random_layout(16, 2), 32, noise=0.05, seed=2)
    model, _, _ = build_max_rate(prob, usable_islands(prob))
    icols = np.flatnonzero(model.integer)
    full = branch_and_check(new_lp(model), icols, model.col_lower[icols].copy(),
                            model.col_upper[icols].copy(), gap=0.0)
    assert full.status == "optimal" and full.nodes > 3
    cut = branch_and_check(new_lp(model), icols, model.col_lower[icols].copy(),
                           model.col_upper[icols].copy(), gap=0.0, max_nodes=full.nodes - 1)
    assert cut.status in ("time_limit", "no_solution")
    if cut.status == "time_limit":
        assert cut.value <= full.value * (1 + 1e-9) and cut.gap > 0


def test_time_limit_zero_reports_no_solution_as_infeasible_with_reason():
    prob, _ = synthetic_problem(random_layout(16, 2), 32)
    res = MaxRateMILP(time_limit=0.0).solve(prob)
    assert res.status == "infeasible"
    assert "time limit" in res.reason
