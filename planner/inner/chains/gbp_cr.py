"""GBP-CR: Greedy Block Placement with Cache Reservation (seed 001, §3.1.3, Alg. 1, eqs. 8–14).

For a required per-server capacity ``c`` every server ``j`` gets ``m_j(c)`` blocks
(eq. 8) and an upper-bound time ``t_j(c) = τ^c_j + τ^p_j m_j(c)`` (eq. 9).  Servers are
visited fastest first by amortised per-block time ``t̃_j(c) = t_j(c)/m_j(c)`` (eq. 12)
and packed into consecutive disjoint chains::

    a ← 1; ν ← 0; T ← 0
    for j in increasing t̃_j(c):
        a_j ← min(a, L − m_j + 1)       # last server shifted back to end at L (overlap)
        T ← T + t_j(c);  a ← min(a + m_j − 1, L) + 1
        if a > L:                       # chain complete
            ν ← ν + 1/T
            if ν ≥ λ/(ρ̄ c): break else: a ← 1; T ← 0

``K(c)`` (eq. 13) is the number of chains built when the scaled requirement is met;
``c·K(c)`` is the surrogate minimised by eq. (14) (see :mod:`tuning`).

Gaps the paper leaves open, filled as the reading guide (notes §3.1) recommends:

* servers with ``m_j(c) = 0`` (cannot hold a block with ``c`` slots) are skipped;
* servers after the ``break`` stay unused (``m_j = 0``) — GBP-CR doubles as a "how
  many servers are needed" selector;
* if every server is visited without meeting the requirement, ``K(c) = ∞`` and the
  servers of a trailing incomplete chain keep their line-4 placement (GCA may still
  link them with others);
* ties in ``t̃_j(c)`` keep the input order (stable sort), so results are deterministic.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from planner.inner.chains.placement import Placement
from planner.inner.chains.servers import ChainModel, Server, blocks_per_server, server_time


@dataclass(frozen=True)
class GBPCRResult:
    """Placement plus the disjoint chains Alg. 1 formed, in construction order.

    ``chain_times[k]`` is ``Σ_{j∈k} t_j(c)`` (the upper bound used by Alg. 1, line 5);
    ``scaled_rate`` is the final ``ν`` of Alg. 1 (``Σ 1/T`` over complete chains).
    ``incomplete`` lists the servers of a trailing chain that never reached block ``L``.
    """

    c: int
    placement: Placement
    chains: tuple[tuple[int, ...], ...]
    chain_times: tuple[float, ...]
    scaled_rate: float
    requirement_met: bool
    incomplete: tuple[int, ...]

    @property
    def n_chains(self) -> float:
        """``K(c)`` of eq. (13): chains needed, ``inf`` if the requirement was never met."""
        return float(len(self.chains)) if self.requirement_met else math.inf

    @property
    def surrogate(self) -> float:
        """``c·K(c)``, the objective of eq. (14) (``inf`` when ``K(c) = ∞``)."""
        return self.c * self.n_chains


def gbp_cr(
    servers: Sequence[Server],
    model: ChainModel,
    c: int,
    required_rate: float,
) -> GBPCRResult:
    """Run Alg. 1 for capacity ``c``; ``required_rate`` is ``λ/ρ̄`` (not yet divided by ``c``).

    Pass ``required_rate = math.inf`` to place every usable server (no early break).
    """
    if c < 1:
        raise ValueError(f"c must be >= 1, got {c}")
    L = model.n_blocks
    m = [blocks_per_server(s, model, c) for s in servers]
    t = [server_time(s, mj) for s, mj in zip(servers, m, strict=True)]
    order = sorted((j for j in range(len(servers)) if m[j] > 0), key=lambda j: t[j] / m[j])
    target = required_rate / c

    first = [0] * len(servers)
    hosted = [0] * len(servers)
    chains: list[tuple[int, ...]] = []
    times: list[float] = []
    current: list[int] = []
    a, nu, T, met = 1, 0.0, 0.0, False
    for j in order:
        first[j] = min(a, L - m[j] + 1)
        hosted[j] = m[j]
        current.append(j)
        T += t[j]
        a = min(a + m[j] - 1, L) + 1
        if a > L:
            nu += 1.0 / T
            chains.append(tuple(current))
            times.append(T)
            current = []
            if nu >= target:
                met = True
                break
            a, T = 1, 0.0
    placement = Placement(L, tuple(first), tuple(hosted))
    return GBPCRResult(c, placement, tuple(chains), tuple(times), nu, met, tuple(current))

