"""GCA: Greedy Cache Allocation on a given placement (seed 001, §3.1.4, Alg. 2, Thm 3.5).

Starting from ``M^(0)_j = M̃_j`` slots (eq. 3) and the links ``ℰ^(0) = {(i,j) ∈ ℰ_{a,m} :
M^(0)_j ≥ m_ij}``, repeat while the source reaches the sink:

1. ``k_l`` ← shortest source→sink path, link cost ``τ^c_j + τ^p_j m_ij`` (0 into the sink);
2. ``c_{k_l} = min_{(i,j)∈k_l} ⌊M^(l−1)_j / m_ij⌋``;
3. ``M^(l)_j = M^(l−1)_j − m_ij c_{k_l}`` on the chain;
4. drop links that no longer fit.

**Correction applied (reading guide §3.2).**  Read literally, step 4 (Alg. 2 lines
10–12) only re-checks the links *on* ``k_l``; another link ``(i', j)`` into a server
whose residual just shrank can survive with ``M^(l)_j < m_{i'j}`` and the next round then
returns a chain of capacity 0 — it happens in the paper's own Fig. 2 example
(``j_3 → j_2`` after ``j_1 → j_2`` exhausts ``j_2``).  Theorem 3.5's proof assumes the
invariant ``ℰ^(l) = {(i,j) ∈ ℰ_{a,m} : M^(l)_j ≥ m_ij}``, so by default every incoming
link of every updated server is re-checked.  ``literal=True`` reproduces the pseudocode
as printed (zero-capacity chains included) for comparison only.

Shortest paths use one pass over the DAG in order of last hosted block; ties keep the
first path found (source links first, then servers by index), so results are
deterministic.  Complexity O(J⁴) worst case, at most O(J²) chains (paper, §3.1.4).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from planner.inner.chains.placement import (
    SOURCE,
    Chain,
    Placement,
    feasible_links,
    make_chain,
)
from planner.inner.chains.servers import Server, server_time


@dataclass(frozen=True)
class GCAResult:
    """Chains in construction order (non-decreasing ``T_k``), capacities and leftover slots."""

    chains: tuple[Chain, ...]
    capacities: tuple[int, ...]
    residual: tuple[int, ...]

    @property
    def total_rate(self) -> float:
        """``ν = Σ_k μ_k c_k`` (eq. 4)."""
        return sum(c / k.service_time for k, c in zip(self.chains, self.capacities, strict=True))


def _shortest_chain(
    servers: Sequence[Server],
    placement: Placement,
    order: Sequence[int],
    in_links: dict[int, dict[int, int]],
) -> tuple[list[int], list[int]] | None:
    """Shortest source→sink path in the current DAG, or ``None`` when disconnected."""
    dist: dict[int, float] = {SOURCE: 0.0}
    pred: dict[int, tuple[int, int]] = {}
    for j in order:  # increasing last block = topological order
        best, arg = float("inf"), None
        for i, m in in_links[j].items():
            if i in dist:
                d = dist[i] + server_time(servers[j], m)
                if d < best:
                    best, arg = d, (i, m)
        if arg is not None:
            dist[j], pred[j] = best, arg
    L = placement.n_blocks
    ends = [j for j in order if j in dist and placement.end(j) == L]
    if not ends:
        return None
    j = min(ends, key=lambda x: dist[x])  # min() keeps the first on ties
    path, blocks = [], []
    while j != SOURCE:
        i, m = pred[j]
        path.append(j)
        blocks.append(m)
        j = i
    return path[::-1], blocks[::-1]


def gca(
    servers: Sequence[Server],
    placement: Placement,
    slots: Sequence[int],
    *,
    literal: bool = False,
    max_chains: int | None = None,
) -> GCAResult:
    """Alg. 2 on ``placement`` with residual cache slots ``slots`` (``M̃_j``, eq. 3).

    ``max_chains`` optionally stops after that many chains (a guard for huge inputs).
    """
    residual = [int(s) for s in slots]
    used = placement.used()
    order = sorted(used, key=lambda j: (placement.end(j), j))
    in_links: dict[int, dict[int, int]] = {j: {} for j in used}
    for lk in feasible_links(placement):  # source links come first per server
        if residual[lk.dst] >= lk.blocks:
            in_links[lk.dst][lk.src] = lk.blocks

    chains: list[Chain] = []
    caps: list[int] = []
    while max_chains is None or len(chains) < max_chains:
        found = _shortest_chain(servers, placement, order, in_links)
        if found is None:
            break
        path, blocks = found
        cap = min(residual[j] // m for j, m in zip(path, blocks, strict=True))
        chains.append(make_chain(servers, path, blocks))
        caps.append(cap)
        prev = SOURCE
        for j, m in zip(path, blocks, strict=True):
            residual[j] -= m * cap
            if literal:
                if residual[j] < m:
                    in_links[j].pop(prev, None)
            else:
                for i in [i for i, mi in in_links[j].items() if residual[j] < mi]:
                    del in_links[j][i]
            prev = j
    return GCAResult(tuple(chains), tuple(caps), tuple(residual))
