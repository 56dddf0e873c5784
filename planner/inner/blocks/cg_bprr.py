"""Conservative Greedy BPRR, Algorithm 1 of seed 000 (§3.2.3), and its CG-BP part.

Step 1 (line 1): conservative block count ``m_j = min(⌊M_j/(s_m + s_c|R|)⌋, L)`` so
that every server can carry all ``|R|`` sessions through all its blocks.
Step 2 (lines 2–9): greedy contiguous placement in increasing order of the amortised
per-block time (14) ``t̃_j = τ_j + t_*j/m_j``, ``t_*j = max_c t_cj``.
Step 3 (lines 10–13): one shortest feasible chain per client (Lemma 3.4: optimal,
because the conservative counts make memory (16b) non-binding).

Readings applied (reading guide §3.2 and §7.5):

* lines 8–9 run for every server, whichever branch of lines 4–7 was taken;
* line 5 breaks ties towards the smallest start ``a`` (Lemma 3.3 needs it); we compare
  window sums with a relative tolerance so that float round-off cannot break a tie;
* line 7's "argmin" is the first ``a`` in lexicographic order of the *sorted* window
  ``(C_a, …, C_{a+m_j−1})``;
* servers with ``m_j = 0`` cannot serve (``t̃_j = ∞``) and are skipped;
* ``t̃_0`` of the dummy server is ``max_j t̃_j + 1`` as in the authors' code; any value
  above every ``t̃_j`` gives the same placement;
* the optional per-server cap ``max_blocks`` (the code caps MIG slices at 4) is applied
  on top of line 1; the paper has no cap.

Servers with equal ``t̃_j`` are visited in index order (a stable sort), so the
algorithm is deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from planner.inner.blocks.instance import Instance, safe_floor
from planner.inner.blocks.routing import (
    INF,
    Placement,
    Route,
    make_route,
    memory_slots,
    route_times,
    shortest_path,
)

_TIE_RTOL = 1e-12


def conservative_counts(inst: Instance, design_requests: int) -> np.ndarray:
    """Alg. 1 line 1: ``m_j = min(⌊M_j / (s_m + s_c |R|)⌋, L)`` (and the optional cap).

    With a session cap ``b_j`` (``Instance.max_sessions``, our extension) a server
    reserves cache for ``min(|R|, b_j)`` sessions per block: it can never run more, so
    reserving for ``|R|`` would only shrink its block count.
    """
    sessions = np.asarray(float(design_requests))
    if inst.max_sessions is not None:
        sessions = np.minimum(sessions, inst.max_sessions)
    per_block = inst.block_bytes + inst.cache_bytes * sessions
    m = safe_floor(inst.memory / per_block).astype(np.int64)
    return np.minimum(np.minimum(m, inst.n_blocks), cast(np.ndarray, inst.max_blocks))


def amortized_time(inst: Instance, count: np.ndarray) -> np.ndarray:
    """Eq. (14): ``t̃_j = τ_j + t_*j / m_j`` with ``t_*j = max_c t_cj``; ``inf`` if ``m_j = 0``."""
    t_star = inst.comm.max(axis=0)
    count = np.asarray(count, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = inst.tau_eff + t_star / count
    return np.where(count > 0, t, INF)


def session_capacity(inst: Instance, count: np.ndarray) -> np.ndarray:
    """Eq. (15): ``f̄_j = ⌊(M_j − s_m m_j) / (s_c m_j)⌋`` (0 for an unused server)."""
    count = np.asarray(count, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        f = (inst.memory - inst.block_bytes * count) / (inst.cache_bytes * count)
    return np.where(count > 0, safe_floor(np.where(count > 0, f, 0.0)), 0).astype(np.int64)


@dataclass(frozen=True)
class CGBPResult:
    """Output of CG-BP (Alg. 1 lines 1–9).

    ``order`` lists the servers that received blocks, in placement order (increasing
    ``t̃_j``); ``n_cover`` is ``K`` of Theorem 3.5 (servers of ``order`` needed until
    every block is covered), ``None`` if the placement is infeasible.
    """

    placement: Placement
    design_requests: int
    amortized: np.ndarray
    capacity: np.ndarray
    order: tuple[int, ...]
    n_cover: int | None
    block_capacity: np.ndarray

    @property
    def feasible(self) -> bool:
        return self.n_cover is not None


def cg_bp(inst: Instance, design_requests: int | None = None) -> CGBPResult:
    """CG-BP: lines 1–9 of Alg. 1 (= lines 1–9 of Alg. 2) for ``|R| = design_requests``.

    ``design_requests`` defaults to the instance's ``Σ_c |R_c|``.
    """
    r = inst.total_requests if design_requests is None else int(design_requests)
    if r < 1:
        raise ValueError("cg_bp: the design number of requests |R| must be >= 1")
    n_blocks = inst.n_blocks
    m = conservative_counts(inst, r)
    t_tilde = amortized_time(inst, m)
    f_bar = session_capacity(inst, m)
    usable = np.flatnonzero(m > 0)
    order = usable[np.argsort(t_tilde[usable], kind="stable")]
    first = np.zeros(inst.n_servers, dtype=np.int64)
    cap_b = np.zeros(n_blocks, dtype=np.int64)  # C_b
    if order.size:
        t0 = float(np.max(t_tilde[usable])) + 1.0
        time_b = np.full(n_blocks, t0 * r)  # T_b, line 2
    n_cover: int | None = None
    for pos, j in enumerate(order):
        w = int(m[j])
        if np.any(cap_b < r):  # line 4
            sums = sliding_window_view(time_b, w).sum(axis=1)
            short = sliding_window_view(cap_b < r, w).any(axis=1)
            sums = np.where(short, sums, -INF)
            best = sums.max()
            start = int(np.flatnonzero(sums >= best - _TIE_RTOL * abs(best))[0])  # line 5
        else:
            windows = np.sort(sliding_window_view(cap_b, w), axis=1)
            start = int(np.lexsort(windows.T[::-1])[0])  # line 7
        blk = slice(start, start + w)
        time_b[blk] -= (t0 - t_tilde[j]) * np.minimum(np.maximum(r - cap_b[blk], 0), f_bar[j])
        cap_b[blk] += f_bar[j]  # line 9
        first[j] = start + 1
        if n_cover is None and np.all(cap_b >= r):
            n_cover = pos + 1
    placement = Placement(first=first, count=m.copy(), cache_slots=memory_slots(inst, m))
    return CGBPResult(placement, r, t_tilde, f_bar, tuple(int(j) for j in order), n_cover,
                      cap_b)


@dataclass(frozen=True)
class CGBPRRResult:
    """Output of Alg. 1: CG-BP plus one shortest chain per client (lines 10–13).

    ``routes`` pairs each client's chain with its ``|R_c|``; ``mean_cost`` is the
    objective (6a) (or its all-token version) averaged over requests.
    """

    cgbp: CGBPResult
    routes: tuple[tuple[Route, int], ...]
    total_cost: float

    @property
    def feasible(self) -> bool:
        return self.cgbp.feasible and all(n == 0 or r.servers for r, n in self.routes)

    @property
    def mean_cost(self) -> float:
        n = sum(k for _, k in self.routes)
        return self.total_cost / n if n else INF


def route_clients(inst: Instance, placement: Placement) -> list[tuple[Route, int, float]]:
    """Lines 10–13: each client's shortest chain under cost (4)/(8), with its ``|R_c|``."""
    out = []
    for c in range(inst.n_clients):
        if inst.requests[c] <= 0:
            continue
        cost, path = shortest_path(placement, inst.n_blocks, inst.comm[c], inst.tau_eff)
        out.append((make_route(placement, c, path), int(inst.requests[c]), cost))
    return out


def cg_bprr(inst: Instance) -> CGBPRRResult:
    """Algorithm 1 (offline CG-BPRR) for the instance's requests ``|R_c|``."""
    res = cg_bp(inst)
    if not res.feasible:
        return CGBPRRResult(res, (), INF)
    routed = route_clients(inst, res.placement)
    total = float(sum(n * cost for _, n, cost in routed))
    return CGBPRRResult(res, tuple((r, n) for r, n, _ in routed), total)


def mean_route_cost(inst: Instance, routes: tuple[tuple[Route, int], ...]) -> float:
    """Average per-token cost of routed requests, recomputed from eq. (1) (for checks)."""
    n = sum(k for _, k in routes)
    if n == 0:
        return INF
    return sum(k * route_times(inst, r).per_token_s for r, k in routes) / n
