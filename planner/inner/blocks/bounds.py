"""Closed-form guarantees of seed 000: bound (17), feasibility (18)/(19), (22), Lemma B.1.

All functions are cheap (``O(S log S)`` or a binary search over ``|R|``), so the outer
loop can use them as surrogates (reading guide §7.2(a)).

* (17), Theorem 3.5: with servers sorted by ``t̃_j`` and ``K`` the first prefix whose
  blocks cover the model, CG-BPRR's mean per-token time is at most
  ``Σ_{j≤K} t̃_j m_j − τ_K (Σ_{j≤K} m_j − L)``.  The paper writes ``τ̃_j`` for ``t̃_j``
  in the theorem (a typo, reading guide §7.5).  By Corollary 3.6 the bound also holds
  online while at most ``|R|`` requests are active.
* (22), first case: completion time ``≤ l_max · (17)``.
* (18): CG-BP is feasible iff ``Σ_j min(⌊M_j/(s_m + s_c|R|)⌋, L) ≥ L``.  With per-server
  caps (``max_blocks``) the cap joins the ``min``; that is our extension.
* (19): a sufficient condition, ``|R| ≤ ⌊(Σ M_j − s_m (L + |V_s|)) / (s_c (L + |V_s|))⌋``
  (from ``⌊x⌋ > x − 1``).  It ignores caps, so with caps it can overshoot; use
  :func:`max_concurrency_18` for the exact largest feasible ``|R|``.
* (B.8), Lemma B.1: a lower bound on any solution's per-token time for client ``c``,
  from ``m̄_j = min(⌊M_j/(s_m+s_c)⌋, L)`` and ``t̃_{j,c} = τ_j + t_cj/m̄_j``.
"""

from __future__ import annotations

from typing import cast

import numpy as np

from planner.inner.blocks.cg_bprr import CGBPResult, conservative_counts
from planner.inner.blocks.instance import Instance, safe_floor

INF = float("inf")


def bound_17(inst: Instance, cgbp: CGBPResult) -> float:
    """Theorem 3.5 / eq. (17) for a CG-BP result; ``inf`` if the placement is infeasible."""
    if cgbp.n_cover is None:
        return INF
    top = np.asarray(cgbp.order[: cgbp.n_cover], dtype=np.int64)
    m = cgbp.placement.count[top].astype(float)
    t_tilde = cgbp.amortized[top]
    excess = m.sum() - inst.n_blocks
    return float(np.sum(t_tilde * m) - inst.tau_eff[top[-1]] * excess)


def completion_bound_22(inst: Instance, cgbp: CGBPResult) -> float:
    """Eq. (22), first case: ``l_max`` times (17), valid while ``≤ |R|`` requests are active."""
    return inst.output_len * bound_17(inst, cgbp)


def feasible_18(inst: Instance, design_requests: int) -> bool:
    """Condition (18) (with the optional caps): CG-BP places every block."""
    return bool(conservative_counts(inst, design_requests).sum() >= inst.n_blocks)


def max_concurrency_19(inst: Instance) -> int:
    """Right-hand side of (19): a ``|R|`` that (18) is guaranteed to accept (without caps).

    May be negative: then even one session cannot be guaranteed this way.
    """
    n = inst.n_blocks + inst.n_servers
    value = (inst.memory.sum() - inst.block_bytes * n) / (inst.cache_bytes * n)
    return int(safe_floor(value))


def max_concurrency_18(inst: Instance) -> int:
    """Largest ``|R| ≥ 1`` satisfying (18), 0 if none does.

    ``m_j`` is non-increasing in ``|R|``, so (18) is monotone and a binary search is exact.
    """
    if not feasible_18(inst, 1):
        return 0
    lo = 1
    hi = int(inst.memory.max() // inst.cache_bytes) + 2  # m_j = 0 for every j beyond this
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if feasible_18(inst, mid):
            lo = mid
        else:
            hi = mid
    return lo


def lower_bound_b8(inst: Instance) -> np.ndarray:
    """Lemma B.1 / eq. (B.8): per-client lower bound ``T^o_c`` (``inf`` if no cover exists)."""
    m_bar = safe_floor(inst.memory / (inst.block_bytes + inst.cache_bytes)).astype(np.int64)
    m_bar = np.minimum(np.minimum(m_bar, inst.n_blocks), cast(np.ndarray, inst.max_blocks))
    out = np.full(inst.n_clients, INF)
    ok = m_bar > 0
    if not ok.any():
        return out
    for c in range(inst.n_clients):
        t = inst.tau_eff[ok] + inst.comm[c, ok] / m_bar[ok]
        order = np.argsort(t, kind="stable")
        m_sorted = m_bar[ok][order]
        covered = np.cumsum(m_sorted)
        if covered[-1] < inst.n_blocks:
            continue
        k = int(np.searchsorted(covered, inst.n_blocks))  # K_c − 1 (0-based)
        before = covered[k - 1] if k > 0 else 0
        t_sorted = t[order]
        out[c] = float(np.sum(t_sorted[:k] * m_sorted[:k]) + t_sorted[k] *
                       (inst.n_blocks - before))
    return out


def lower_bound_mean(inst: Instance) -> float:
    """``T^o ≥ (1/|R|) Σ_c |R_c| T^o_c`` (Lemma B.1), the request-weighted mean of (B.8)."""
    lb = lower_bound_b8(inst)
    w = inst.requests.astype(float)
    if w.sum() <= 0:
        return float(lb.min())
    if np.any((w > 0) & ~np.isfinite(lb)):
        return INF
    return float(np.sum(w[w > 0] * lb[w > 0]) / w.sum())
