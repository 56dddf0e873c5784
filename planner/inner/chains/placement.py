"""Block placements, the feasible-link DAG and server chains (seed 001, §2.1.1, eqs. 1–3).

Server ``j`` hosts blocks ``a_j … a_j + m_j − 1`` (``m_j = 0``: unused).  Two dummy
servers close every chain: the source ``j_0`` "hosts" block 0 and the sink ``j_{J+1}``
block ``L + 1``.  Servers ``i → j`` may be consecutive iff ``j`` hosts the first block
``i`` did not process, ``a_j ≤ a_i + m_i ≤ a_j + m_j − 1``; ``j`` then processes
``m_ij = a_j + m_j − a_i − m_i`` blocks (each block runs at the first server of the
chain hosting it) and a job on that link holds ``m_ij`` cache slots at ``j``.

The graph is a DAG because the last hosted block ``a_j + m_j − 1`` strictly increases
along every link, so shortest paths need no Dijkstra: one pass in that order suffices.
Server ``j`` is addressed by its index in the server list; :data:`SOURCE` is ``j_0``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from planner.inner.chains.servers import ChainModel, Server, residual_slots, server_time

SOURCE = -1


@dataclass(frozen=True)
class Placement:
    """``(a, m)``: first block (1-based) and block count per server; ``m_j = 0`` means unused."""

    n_blocks: int
    first_block: tuple[int, ...]
    n_hosted: tuple[int, ...]

    def __post_init__(self) -> None:
        if len(self.first_block) != len(self.n_hosted):
            raise ValueError("first_block and n_hosted differ in length")
        for a, m in zip(self.first_block, self.n_hosted, strict=True):
            if m < 0 or (m > 0 and (a < 1 or a + m - 1 > self.n_blocks)):  # (7c)
                raise ValueError(f"invalid placement a={a}, m={m} for L={self.n_blocks}")

    def end(self, j: int) -> int:
        """Last block hosted by ``j`` (``0`` for the source)."""
        if j == SOURCE:
            return 0
        return self.first_block[j] + self.n_hosted[j] - 1

    def used(self) -> list[int]:
        return [j for j, m in enumerate(self.n_hosted) if m > 0]


@dataclass(frozen=True)
class Link:
    """Feasible consecutive pair ``(i, j)`` with ``m_ij`` blocks processed (and slots held) at j."""

    src: int
    dst: int
    blocks: int


def feasible_links(placement: Placement) -> list[Link]:
    """``ℰ_{a,m}`` without the sink links: every ``(i, j)`` with ``a_j ≤ a_i+m_i ≤ a_j+m_j−1``."""
    used = placement.used()
    links: list[Link] = []
    for j in used:
        a_j, end_j = placement.first_block[j], placement.end(j)
        for i in [SOURCE, *used]:
            if i == j:
                continue
            nxt = placement.end(i) + 1  # first block i did not process
            if a_j <= nxt <= end_j:
                links.append(Link(i, j, end_j - nxt + 1))
    return links


@dataclass(frozen=True)
class Chain:
    """A server chain ``k``: servers in order and blocks each processes (``m_ij`` on its link).

    ``service_time`` is eq. (2), ``T_k = Σ_{(i,j)∈k} (τ^c_j + τ^p_j m_ij)``.
    """

    servers: tuple[int, ...]
    blocks: tuple[int, ...]
    service_time: float

    @property
    def service_rate(self) -> float:
        """``μ_k = 1/T_k``."""
        return 1.0 / self.service_time

    def block_ranges(self) -> tuple[tuple[int, int], ...]:
        """Inclusive 1-based ``(first, last)`` block processed at each server of the chain."""
        out, start = [], 1
        for m in self.blocks:
            out.append((start, start + m - 1))
            start += m
        return tuple(out)

    def slot_usage(self) -> dict[int, int]:
        """Cache slots one job holds at each server of the chain (``m_ij``)."""
        return dict(zip(self.servers, self.blocks, strict=True))


def make_chain(servers: Sequence[Server], path: Sequence[int], blocks: Sequence[int]) -> Chain:
    """Chain from a server path and the blocks each processes, with ``T_k`` from eq. (2)."""
    t = sum(server_time(servers[j], m) for j, m in zip(path, blocks, strict=True))
    return Chain(tuple(path), tuple(blocks), t)


def slots_after_placement(
    servers: Sequence[Server], model: ChainModel, placement: Placement
) -> list[int]:
    """``M̃_j`` (eq. 3) per server; unused servers keep all their memory as slots (unusable)."""
    return [residual_slots(s, model, m) for s, m in zip(servers, placement.n_hosted, strict=True)]


def check_allocation(
    placement: Placement, chains: Sequence[Chain], capacities: Sequence[int], slots: Sequence[int]
) -> None:
    """Assert eq. (3): per-server cache use ``Σ_k m_ij c_k`` fits ``M̃_j`` and chains are valid."""
    use = [0] * len(slots)
    for k, ck in zip(chains, capacities, strict=True):
        prev = SOURCE
        for j, m in zip(k.servers, k.blocks, strict=True):
            nxt = placement.end(prev) + 1
            if not (placement.n_hosted[j] > 0 and placement.first_block[j] <= nxt
                    and m == placement.end(j) - nxt + 1 and m >= 1):
                raise AssertionError(f"chain {k.servers} is not a path of feasible links")
            use[j] += m * ck
            prev = j
        if placement.end(prev) != placement.n_blocks:
            raise AssertionError(f"chain {k.servers} does not reach block L")
    for j, (u, cap) in enumerate(zip(use, slots, strict=True)):
        if u > cap:
            raise AssertionError(f"server {j} uses {u} slots > {cap}")
