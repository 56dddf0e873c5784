"""Numerical steady state of the JFFC CTMC (seed 001, §3.2.2, eqs. 17–18, 23–24).

State ``z = (z_0, z_1, …, z_K)``: ``z_0`` queued jobs, ``z_l`` jobs on the ``l``-th
fastest chain.  Rates (eq. 23): an arrival joins the fastest chain with ``z_l < c_l``
or, when all are full, the queue; a chain-``l`` departure with an empty queue has rate
``z_l μ_l``; with a queue every departure pulls the head job, so the queue drains at
``ν = Σ c_l μ_l``.

**Exact reduction of the infinite part (default).**  Above the all-full state ``c`` the
chain is a birth–death process with rates ``λ, ν``, so ``π_{n,c} = ρ^n π_{0,c}`` (as in
eq. 47).  The up-flow ``λ π_{0,c}`` and down-flow ``ν π_{1,c}`` then cancel in the
balance of ``(0, c)``, hence ``π`` restricted to ``𝒵_1`` is proportional to the
stationary law of the *finite* chain on ``𝒵_1`` in which arrivals to ``(0, c)`` are
blocked.  That finite chain is solved by sparse LU and the geometric tail added back in
closed form — no truncation error.  ``queue_cap=N`` instead builds the literally
truncated chain with queue states ``1..N`` (arrivals blocked at ``N``), kept as an
independent cross-check of the reduction.

The state space has ``Π_l (c_l + 1)`` states; callers must keep it small
(``max_states``).  Ties in ``μ`` are broken by input order, as in :mod:`jffc`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from planner.inner.chains.jffc import fastest_first


@dataclass(frozen=True)
class CTMCResult:
    """Steady-state means of the JFFC CTMC; times via Little's law (eq. 24)."""

    mean_in_system: float
    mean_queue: float
    mean_busy: tuple[float, ...]  # E[Z_k] per chain, input order (0 for c_k = 0)
    arrival_rate: float
    n_states: int
    prob_all_busy: float
    # π(0, z_1..z_K) on 𝒵_1, axes ordered fastest chain first (ties: input order).
    distribution: np.ndarray = field(repr=False, compare=False)

    @property
    def response_time(self) -> float:
        return self.mean_in_system / self.arrival_rate

    @property
    def waiting_time(self) -> float:
        return self.mean_queue / self.arrival_rate

    @property
    def service_time(self) -> float:
        return sum(self.mean_busy) / self.arrival_rate


def state_count(capacities: Sequence[int] | np.ndarray) -> int:
    """``|𝒵_1| = Π (c_l + 1)`` over chains with ``c_l > 0``."""
    return math.prod(int(c) + 1 for c in capacities if c > 0)


def _strides(c: np.ndarray) -> np.ndarray:
    """C-order mixed-radix strides of the grid ``Π (c_l + 1)``."""
    dims = c + 1
    return np.append(np.cumprod(dims[::-1])[::-1][1:], 1).astype(np.int64)


def _generator(
    mu: np.ndarray, c: np.ndarray, lam: float, queue_cap: int
) -> tuple[sp.csr_matrix, np.ndarray]:
    """Generator over ``𝒵_1`` (C-order mixed radix) plus ``queue_cap`` queue states."""
    dims = c + 1
    S = int(np.prod(dims))
    strides = _strides(c)
    z = np.stack(np.unravel_index(np.arange(S), tuple(dims)), axis=1)
    idx = np.arange(S)
    rows, cols, vals = [], [], []

    free = z < c
    has_free = free.any(axis=1)
    first_free = np.argmax(free, axis=1)  # fastest chain with a free slot
    rows.append(idx[has_free])
    cols.append(idx[has_free] + strides[first_free[has_free]])
    vals.append(np.full(int(has_free.sum()), lam))
    for l_ in range(len(c)):
        busy = z[:, l_] > 0
        rows.append(idx[busy])
        cols.append(idx[busy] - strides[l_])
        vals.append(z[busy, l_] * mu[l_])
    if queue_cap > 0:
        nu = float(np.dot(mu, c))
        full = S - 1
        q = S + np.arange(queue_cap)  # queue length n = 1..N at index S + n - 1
        below = np.concatenate(([full], q[:-1]))
        rows += [below, q]
        cols += [q, below]
        vals += [np.full(queue_cap, lam), np.full(queue_cap, nu)]
    n = S + queue_cap
    r, cc, v = np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)
    Q = sp.csr_matrix((v, (r, cc)), shape=(n, n))
    Q = Q - sp.diags(np.asarray(Q.sum(axis=1)).ravel())
    return Q.tocsr(), z


def _solve_pinned(A: sp.csc_matrix, pin: int) -> np.ndarray:
    """``π`` with ``π_pin = 1`` from the other balance equations ``(Qᵀπ)_i = 0, i ≠ pin``."""
    keep = np.flatnonzero(np.arange(A.shape[0]) != pin)
    sub = A[keep][:, keep].tocsc()
    lu = spla.splu(sub, permc_spec="MMD_AT_PLUS_A")
    pi = np.empty(A.shape[0])
    pi[pin] = 1.0
    pi[keep] = lu.solve(-A[keep][:, [pin]].toarray().ravel())
    return pi


def _stationary(Q: sp.csr_matrix, guess: int = 0) -> np.ndarray:
    """Solve ``π Q = 0, Σπ = 1`` by pinning one state and dropping its balance equation.

    Replacing an equation by the dense normalisation row instead would wreck the
    sparsity of the LU factors.  The pinned state must be a likely one: pinning a state
    of probability 1e-15 makes the others ~1e15 and the solve ill-conditioned, so
    ``guess`` should be a probable state, and if the solution says another state is
    far more likely the system is re-solved pinned there.  The minimum-degree ordering
    on ``A + Aᵀ`` gave about half the fill of COLAMD on these grid-structured generators.
    """
    n = Q.shape[0]
    if n == 1:
        return np.ones(1)
    A = Q.T.tocsc()
    pi = _solve_pinned(A, guess)
    best = int(np.argmax(pi))
    if not np.all(np.isfinite(pi)) or pi[best] > 1e3:
        pi = _solve_pinned(A, best if np.isfinite(pi[best]) else n - 1)
    pi = np.clip(pi, 0.0, None)
    return pi / pi.sum()


def _likely_state(mu: np.ndarray, c: np.ndarray, lam: float, strides: np.ndarray) -> int:
    """Index of the fastest-first filling with the modal job count of the ν̄ birth–death chain."""
    slots = np.repeat(mu, c)
    log_b = np.concatenate(([0.0], np.cumsum(np.log(lam) - np.log(np.cumsum(slots)))))
    n = int(np.argmax(log_b))
    fill = np.minimum(c, np.maximum(n - np.concatenate(([0], np.cumsum(c)[:-1])), 0))
    return int(fill @ strides)


def solve_jffc_ctmc(
    rates: Sequence[float],
    capacities: Sequence[int],
    arrival_rate: float,
    *,
    queue_cap: int | None = None,
    max_states: int = 200_000,
) -> CTMCResult:
    """Stationary means of the JFFC CTMC; exact tail unless ``queue_cap`` truncates it."""
    mu_in = np.asarray(rates, dtype=float)
    c_in = np.asarray(capacities, dtype=np.int64)
    keep = np.flatnonzero(c_in > 0)
    order = keep[fastest_first(mu_in[keep])]
    mu, c = mu_in[order], c_in[order]
    lam = float(arrival_rate)
    if len(c) == 0:
        raise ValueError("no chain has positive capacity")
    nu = float(np.dot(mu, c))
    if not 0 < lam < nu:
        raise ValueError(f"need 0 < λ < ν = {nu:g}, got λ = {lam:g}")
    S = state_count(c)
    if S + (queue_cap or 0) > max_states:
        raise ValueError(f"state space {S} exceeds max_states={max_states}")

    rho = lam / nu
    Q, z = _generator(mu, c, lam, queue_cap or 0)
    pi = _stationary(Q, _likely_state(mu, c, lam, _strides(c)))
    p1 = pi[:S]
    busy = p1 @ z
    if queue_cap:
        n = np.arange(1, queue_cap + 1)
        tail = pi[S:]
        mean_queue = float(n @ tail)
        busy = busy + c * tail.sum()
        p_full = float(p1[-1] + tail.sum())
        dist = p1
    else:
        # π_Z1 sums to 1 here; the tail adds π_full ρ/(1−ρ) mass, then renormalise.
        pf = p1[-1]
        scale = 1.0 / (1.0 + pf * rho / (1 - rho))
        mean_queue = float(pf * rho / (1 - rho) ** 2 * scale)
        busy = (busy + c * pf * rho / (1 - rho)) * scale
        p_full = float(pf / (1 - rho) * scale)
        dist = p1 * scale
    per_chain = np.zeros(len(c_in))
    per_chain[order] = busy
    return CTMCResult(
        mean_in_system=float(mean_queue + busy.sum()),
        mean_queue=mean_queue,
        mean_busy=tuple(float(x) for x in per_chain),
        arrival_rate=lam,
        n_states=S + (queue_cap or 0),
        prob_all_busy=p_full,
        distribution=dist.reshape(tuple(int(x) + 1 for x in c)),
    )
