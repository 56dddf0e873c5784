"""Exact JFFC steady state for two chains (seed 001, Appendix A.3, eqs. 46–53).

Chains sorted so ``μ_1 ≥ μ_2``; ``α_z = π_z / π_{(0,0,c_2)}``.  With ``ν = c_1μ_1 + c_2μ_2``:

* (46) top row ``z_2 = c_2``:
  ``α_{0,n,c_2} = (c_2μ_2 Σ_{i<n} α_{0,i,c_2} + λ α_{0,n−1,c_2})/(nμ_1)``;
* (47) queue states: ``α_{n,c_1,c_2} = (λ/ν)^n α_{0,c_1,c_2}``;
* for ``z_2 = c_2 − 1, …, 0``: (48) the cut between rows gives
  ``α_{0,c_1,z_2} = ((z_2+1)μ_2/λ) Σ_i α_{0,i,z_2+1}``; the row is affine in
  ``α_{0,0,z_2}``, ``α_{0,n,z_2} = β_n α_{0,0,z_2} + γ_n`` with (50)–(51)
  ``β_n = (z_2μ_2 Σ_{i<n} β_i + λβ_{n−1})/(nμ_1)``,
  ``γ_n = (z_2μ_2 Σ_{i<n} γ_i + λγ_{n−1} − (z_2+1)μ_2 Σ_{i<n} α_{0,i,z_2+1})/(nμ_1)``,
  ``β_0 = 1, γ_0 = 0``, and (52) ``α_{0,0,z_2} = (α_{0,c_1,z_2} − γ_{c_1})/β_{c_1}``;
* (53) ``E[ΣZ] = [Σ α_{0,z}(z_1+z_2) + (λα_{0,c}/(ν−λ))(ν/(ν−λ) + c_1 + c_2)]
  / [Σ α_{0,z} + λα_{0,c}/(ν−λ)]``.

All three balance equations were re-derived from the transition rates (23) and agree
with the paper as printed.  The γ recursion subtracts large terms, so for large
capacities the result can lose precision or overflow; :func:`two_chain_exact` checks
that the recovered distribution is finite and non-negative and raises otherwise (the
caller then falls back to the CTMC or the bounds).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class TwoChainResult:
    """Stationary law on ``𝒵_1`` (``pi[z_1, z_2]``, ``z_0 = 0``) and the mean occupancy."""

    pi: np.ndarray
    mean_in_system: float
    arrival_rate: float

    @property
    def response_time(self) -> float:
        return self.mean_in_system / self.arrival_rate


def two_chain_exact(
    rates: tuple[float, float], capacities: tuple[int, int], arrival_rate: float
) -> TwoChainResult:
    """Eqs. (46)–(53) for two chains with capacities ``>= 1``; chains are re-sorted by rate."""
    (mu1, c1), (mu2, c2) = sorted(zip(rates, capacities, strict=True), key=lambda x: -x[0])
    c1, c2 = int(c1), int(c2)
    lam = float(arrival_rate)
    if c1 < 1 or c2 < 1:
        raise ValueError("both capacities must be >= 1")
    nu = c1 * mu1 + c2 * mu2
    if not 0 < lam < nu:
        raise ValueError(f"need 0 < λ < ν = {nu:g}")

    # Overflow is expected for large capacities and detected below (the caller falls
    # back); silence numpy's warnings about it rather than print them to the user.
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        alpha = _recursion(mu1, c1, mu2, c2, lam)
    if not np.all(np.isfinite(alpha)) or alpha.min() < -1e-9 * alpha.max():
        raise FloatingPointError("two-chain recursion lost precision; use the CTMC instead")
    tail = lam * alpha[c1, c2] / (nu - lam)  # Σ_{n≥1} α_{n,c} (47)
    z1, z2 = np.indices(alpha.shape)
    num = float((alpha * (z1 + z2)).sum() + tail * (nu / (nu - lam) + c1 + c2))
    den = float(alpha.sum() + tail)
    return TwoChainResult(pi=alpha / den, mean_in_system=num / den, arrival_rate=lam)


def _recursion(mu1: float, c1: int, mu2: float, c2: int, lam: float) -> np.ndarray:
    """``α_{0,z}`` on ``𝒵_1`` by (46), (48), (50)-(52)."""
    alpha = np.zeros((c1 + 1, c2 + 1))
    alpha[0, c2] = 1.0
    for n in range(1, c1 + 1):  # (46)
        alpha[n, c2] = (c2 * mu2 * alpha[:n, c2].sum() + lam * alpha[n - 1, c2]) / (n * mu1)
    for z2 in range(c2 - 1, -1, -1):
        above = alpha[:, z2 + 1]
        alpha[c1, z2] = (z2 + 1) * mu2 / lam * above.sum()  # (48)
        beta = np.zeros(c1 + 1)
        gamma = np.zeros(c1 + 1)
        beta[0] = 1.0
        for n in range(1, c1 + 1):  # (50)-(51)
            beta[n] = (z2 * mu2 * beta[:n].sum() + lam * beta[n - 1]) / (n * mu1)
            gamma[n] = (
                z2 * mu2 * gamma[:n].sum()
                + lam * gamma[n - 1]
                - (z2 + 1) * mu2 * above[:n].sum()
            ) / (n * mu1)
        alpha[0, z2] = (alpha[c1, z2] - gamma[c1]) / beta[c1]  # (52)
        alpha[1:c1, z2] = beta[1:c1] * alpha[0, z2] + gamma[1:c1]
    return alpha
