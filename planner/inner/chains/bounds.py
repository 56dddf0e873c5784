"""Closed-form bounds on the JFFC mean response time (seed 001, §3.2.2, Thm 3.7, eqs. 24–32).

Chains are sorted by rate, ``μ_1 ≥ … ≥ μ_K``, with capacities ``c_l``; ``C = Σ c_l``,
``ν = Σ c_l μ_l``, ``ρ = λ/ν``.  The total occupancy of the JFFC CTMC has the same mean
as a birth–death chain with birth rate ``λ`` and death rates ``ν_n`` (eqs. 25–27); those
are bracketed by (eqs. 28–29)

    ν̄_n = Σ_l μ_l min(c_l, (n − Σ_{l'<l} c_{l'})_+)    (jobs on the fastest chains)
    ν̲_n = Σ_l μ_l min(c_l, (n − Σ_{l'>l} c_{l'})_+)    (jobs on the slowest chains)

i.e. the sum of the ``n`` fastest (resp. slowest) job-server rates when every chain is
expanded into ``c_l`` job servers — computed here as cumulative sums of that expansion.
A birth–death mean decreases in every death rate (eqs. 43–45), so with
``b_n = Π_{i≤n} λ/ν_i`` for ``n ≤ C`` and the geometric tail ``b_n = b_C ρ^{n−C}`` (eq. 39):

    E = [Σ_{n<C} n b_n + b_C (ρ/(1−ρ)² + C/(1−ρ))] / [Σ_{n<C} b_n + b_C/(1−ρ)]

is a lower bound on ``E_π[ΣZ]`` with ``ν̄`` (eq. 31) and an upper bound with ``ν̲``
(eq. 32); the normaliser is eq. (30)/(40) since ``1/(1−ρ) = ν/(ν−λ)``.  Little's law
(eq. 24) gives ``T̄ = E/λ``.  Products are formed in log space so ``C`` in the
thousands does not underflow.  At ``λ → 0`` the bounds tend to ``1/μ_1`` and ``1/μ_K``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from planner.inner.chains.jffc import fastest_first


@dataclass(frozen=True)
class ResponseTimeBounds:
    """Theorem 3.7 bounds on ``T̄`` (and on the mean number in system ``E_π[ΣZ]``)."""

    lower: float
    upper: float
    occupancy_lower: float
    occupancy_upper: float
    total_rate: float
    load: float


def sort_by_rate(
    rates: Sequence[float] | np.ndarray, capacities: Sequence[int] | np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Chains with ``c_l > 0`` sorted fastest first (stable), as the analysis requires."""
    mu = np.asarray(rates, dtype=float)
    c = np.asarray(capacities, dtype=np.int64)
    if mu.shape != c.shape:
        raise ValueError("rates and capacities differ in length")
    if np.any(c < 0) or np.any(mu <= 0):
        raise ValueError("capacities must be >= 0 and rates > 0")
    keep = c > 0
    mu, c = mu[keep], c[keep]
    order = fastest_first(mu)
    return mu[order], c[order]


def death_rate_bounds(rates: Sequence[float] | np.ndarray, capacities: Sequence[int] | np.ndarray
                      ) -> tuple[np.ndarray, ...]:
    """``(ν̄_n, ν̲_n)`` for ``n = 1..C`` (eqs. 28–29) as two arrays of length ``C``."""
    mu, c = sort_by_rate(rates, capacities)
    slots = np.repeat(mu, c)  # one entry per job server, fastest first
    return np.cumsum(slots), np.cumsum(slots[::-1])


def birth_death_occupancy(arrival_rate: float, death: np.ndarray, total_rate: float) -> float:
    """Stationary mean of a birth–death chain: rates ``death[n−1]`` for ``n ≤ C``, ``ν`` beyond."""
    lam, C = arrival_rate, len(death)
    rho = lam / total_rate
    log_b = np.concatenate(([0.0], np.cumsum(np.log(lam) - np.log(death))))  # n = 0..C
    shift = log_b.max()
    b = np.exp(log_b - shift)
    n = np.arange(C)
    num = float(np.dot(n, b[:C]) + b[C] * (rho / (1 - rho) ** 2 + C / (1 - rho)))
    den = float(b[:C].sum() + b[C] / (1 - rho))
    return num / den


def jffc_bounds(
    rates: Sequence[float], capacities: Sequence[int], arrival_rate: float
) -> ResponseTimeBounds:
    """Theorem 3.7 bounds on the JFFC mean response time; ``inf`` when ``λ ≥ ν`` (unstable)."""
    mu, c = sort_by_rate(rates, capacities)
    if len(mu) == 0:
        return ResponseTimeBounds(math.inf, math.inf, math.inf, math.inf, 0.0, math.inf)
    nu = float(np.dot(mu, c))
    lam = float(arrival_rate)
    if lam < 0:
        raise ValueError("arrival rate must be >= 0")
    if lam >= nu:
        return ResponseTimeBounds(math.inf, math.inf, math.inf, math.inf, nu, lam / nu)
    if lam == 0:
        return ResponseTimeBounds(1 / mu[0], 1 / mu[-1], 0.0, 0.0, nu, 0.0)
    fast, slow = death_rate_bounds(mu, c)
    e_lo = birth_death_occupancy(lam, fast, nu)
    e_hi = birth_death_occupancy(lam, slow, nu)
    return ResponseTimeBounds(e_lo / lam, e_hi / lam, e_lo, e_hi, nu, lam / nu)
