"""Seed 001 §3.2: Thm 3.7 bounds, JFFC CTMC, exact two-chain analysis, JFFC simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from planner.inner.chains.bounds import death_rate_bounds, jffc_bounds
from planner.inner.chains.ctmc import solve_jffc_ctmc
from planner.inner.chains.jffc import JFFCPolicy, simulate_jffc
from planner.inner.chains.two_chain import two_chain_exact


def random_systems(seed: int, n: int) -> list[tuple[list[float], list[int], float]]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        K = int(rng.integers(2, 5))
        mu = rng.uniform(0.1, 2.0, K).tolist()
        c = rng.integers(1, 5, K).tolist()
        nu = float(np.dot(mu, c))
        for frac in (0.1, 0.5, 0.9):
            out.append((mu, c, frac * nu))
    return out


def erlang_c_occupancy(mu: float, c: int, lam: float) -> float:
    """Textbook M/M/c mean number in system (independent of the package's code)."""
    a = lam / mu
    rho = a / c
    p0 = 1.0 / (sum(a**k / math.factorial(k) for k in range(c))
                + a**c / (math.factorial(c) * (1 - rho)))
    lq = p0 * a**c * rho / (math.factorial(c) * (1 - rho) ** 2)
    return lq + a


# ------------------------------------------------------------------ death rates (28)-(29)
def test_death_rate_bounds_match_eqs_28_29_literally() -> None:
    mu, c = [1.0, 0.5, 0.3], [3, 4, 2]
    fast, slow = death_rate_bounds(mu, c)
    C = sum(c)
    for n in range(1, C + 1):
        up = sum(mu[l_] * min(c[l_], max(n - sum(c[:l_]), 0)) for l_ in range(3))
        lo = sum(mu[l_] * min(c[l_], max(n - sum(c[l_ + 1:]), 0)) for l_ in range(3))
        assert fast[n - 1] == pytest.approx(up) and slow[n - 1] == pytest.approx(lo)


# ------------------------------------------------------------------ Theorem 3.7 vs CTMC
def test_notes_example_bounds_and_exact() -> None:
    """Reading-guide check: (μ,c) = (1,3),(0.5,4),(0.3,2), λ = 2 → 1.082 ≤ 1.224 ≤ 2.288."""
    mu, c = [1.0, 0.5, 0.3], [3, 4, 2]
    b = jffc_bounds(mu, c, 2.0)
    exact = solve_jffc_ctmc(mu, c, 2.0).response_time
    assert b.lower == pytest.approx(1.082, abs=5e-4)
    assert exact == pytest.approx(1.224, abs=5e-4)
    assert b.upper == pytest.approx(2.288, abs=5e-4)


@pytest.mark.parametrize("mu,c,lam", random_systems(seed=7, n=8))
def test_thm37_bounds_bracket_ctmc(mu: list[float], c: list[int], lam: float) -> None:
    b = jffc_bounds(mu, c, lam)
    exact = solve_jffc_ctmc(mu, c, lam).response_time
    assert b.lower <= exact * (1 + 1e-9)
    assert exact <= b.upper * (1 + 1e-9)


def test_bounds_are_strict_for_heterogeneous_chains_and_tight_for_one() -> None:
    b = jffc_bounds([1.0, 0.2], [2, 2], 1.0)
    exact = solve_jffc_ctmc([1.0, 0.2], [2, 2], 1.0).response_time
    assert b.lower < exact - 1e-3 and exact < b.upper - 1e-3
    # One chain is an M/M/c queue: both bounds and the CTMC equal the Erlang-C value.
    for lam in (0.5, 2.0, 3.5):
        want = erlang_c_occupancy(0.8, 5, lam) / lam
        one = jffc_bounds([0.8], [5], lam)
        assert one.lower == pytest.approx(want, rel=1e-10)
        assert one.upper == pytest.approx(want, rel=1e-10)
        assert solve_jffc_ctmc([0.8], [5], lam).response_time == pytest.approx(want, rel=1e-9)


def test_bounds_limits_and_large_C() -> None:
    b0 = jffc_bounds([2.0, 0.5], [3, 3], 0.0)
    assert (b0.lower, b0.upper) == (0.5, 2.0)  # 1/μ_1 and 1/μ_K as λ → 0
    assert math.isinf(jffc_bounds([1.0], [2], 2.0).lower)  # λ = ν is unstable
    big = jffc_bounds([1.0, 0.5, 0.25], [2000, 3000, 4000], 0.95 * 4500)  # C = 9000
    assert math.isfinite(big.lower) and math.isfinite(big.upper)
    assert 1.0 <= big.lower <= big.upper  # never faster than the fastest chain


# ------------------------------------------------------------------ CTMC self-consistency
def test_exact_tail_reduction_matches_truncated_chain() -> None:
    mu, c, lam = [1.0, 0.5, 0.3], [3, 4, 2], 3.6  # ρ = 0.8
    exact = solve_jffc_ctmc(mu, c, lam)
    trunc = solve_jffc_ctmc(mu, c, lam, queue_cap=400)
    assert trunc.mean_in_system == pytest.approx(exact.mean_in_system, rel=1e-9)
    assert trunc.mean_queue == pytest.approx(exact.mean_queue, rel=1e-9)
    assert trunc.mean_busy == pytest.approx(exact.mean_busy, rel=1e-9)
    # Little on the servers: per-chain throughput E[Z_k] μ_k sums to λ.
    assert sum(z * m for z, m in zip(exact.mean_busy, mu, strict=True)) == pytest.approx(lam)


def test_ctmc_input_order_does_not_matter() -> None:
    a = solve_jffc_ctmc([0.3, 1.0, 0.5], [2, 3, 4], 2.0)
    b = solve_jffc_ctmc([1.0, 0.5, 0.3], [3, 4, 2], 2.0)
    assert a.mean_in_system == pytest.approx(b.mean_in_system, rel=1e-12)
    assert a.mean_busy == pytest.approx((b.mean_busy[2], b.mean_busy[0], b.mean_busy[1]))


# ------------------------------------------------------------------ Appendix A.3, K = 2
@pytest.mark.parametrize(
    "mu,c,frac",
    [((1.0, 0.4), (3, 4), 0.3), ((1.0, 0.4), (3, 4), 0.9), ((2.0, 1.0), (1, 1), 0.5),
     ((0.7, 0.7), (2, 5), 0.6), ((1.0, 0.1), (6, 2), 0.8), ((1.0, 0.3), (30, 40), 0.95),
     ((1.0, 0.4), (30, 40), 0.05), ((1.0, 0.4), (30, 40), 0.99)],  # conditioning extremes
)
def test_two_chain_recursion_matches_ctmc(mu: tuple, c: tuple, frac: float) -> None:
    lam = frac * (mu[0] * c[0] + mu[1] * c[1])
    rec = two_chain_exact(mu, c, lam)
    ctmc = solve_jffc_ctmc(list(mu), list(c), lam)
    assert rec.mean_in_system == pytest.approx(ctmc.mean_in_system, rel=1e-8)
    # The recursion's π on Z_1 equals the CTMC's (both indexed [z_1, z_2], fastest first).
    assert rec.pi.shape == ctmc.distribution.shape
    assert np.allclose(rec.pi, ctmc.distribution, rtol=1e-7, atol=1e-14)


def test_two_chain_shows_slow_chain_busy_while_fast_has_room() -> None:
    """Remark after Thm 3.7: in steady state z_2 > 0 with z_1 < c_1 has positive mass."""
    rec = two_chain_exact((1.0, 0.4), (3, 4), 2.0)
    assert rec.pi[:3, 1:].sum() > 0.05


# ------------------------------------------------------------------ Alg. 3 and simulation
def test_jffc_policy_picks_fastest_free_chain() -> None:
    pol = JFFCPolicy([0.5, 2.0, 2.0, 1.0], [1, 1, 2, 3])
    assert pol.select([0, 0, 0, 0]) == 1  # fastest, ties by index
    assert pol.select([0, 1, 0, 0]) == 2
    assert pol.select([0, 1, 2, 0]) == 3
    assert pol.select([0, 1, 2, 3]) == 0
    assert pol.select([1, 1, 2, 3]) is None


def test_simulation_is_deterministic_given_seed() -> None:
    kw = dict(n_jobs=5000, seed=11)
    a = simulate_jffc([1.0, 0.5], [2, 3], 1.8, **kw)
    b = simulate_jffc([1.0, 0.5], [2, 3], 1.8, **kw)
    c = simulate_jffc([1.0, 0.5], [2, 3], 1.8, n_jobs=5000, seed=12)
    assert a == b
    assert a.mean_response != c.mean_response


@pytest.mark.parametrize("lam", [1.0, 3.0])
def test_simulation_agrees_with_ctmc(lam: float) -> None:
    mu, c = [1.0, 0.5, 0.3], [3, 4, 2]
    sim = simulate_jffc(mu, c, lam, n_jobs=200_000, seed=3)
    exact = solve_jffc_ctmc(mu, c, lam)
    assert sim.mean_response == pytest.approx(exact.response_time, rel=0.02)
    assert sim.mean_wait == pytest.approx(exact.waiting_time, abs=0.02 * exact.response_time)
    share = np.array(sim.jobs_per_chain) / sim.n_measured
    want = np.array(exact.mean_busy) * np.array(mu) / lam
    assert np.allclose(share, want, atol=0.01)
