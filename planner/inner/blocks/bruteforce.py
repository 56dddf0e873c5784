"""Exhaustive BPRR (6) for tiny instances: the oracle the MILP (13) is tested against.

Enumerates every contiguous placement ``(a_j, m_j)`` (``m_j ≥ 1`` as in (6e), or
``m_j ≥ 0`` with ``allow_idle``), every feasible chain of Lemma 3.1 per client, and
every multiset of chains for each client's identical requests, keeping the cheapest
assignment that respects memory (6b).  Exponential; guarded by ``max_states``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import cast

import numpy as np

from planner.inner.blocks.instance import Instance
from planner.inner.blocks.routing import INF, Placement, Route, make_route, memory_slots


def feasible_chains(placement: Placement, n_blocks: int) -> list[tuple[int, ...]]:
    """All S→D chains satisfying (3), by depth-first search on the DAG of feasible links."""
    a, m = placement.first, placement.count
    out: list[tuple[int, ...]] = []

    def extend(prefix: tuple[int, ...], nxt: int) -> None:
        if nxt == n_blocks + 1:
            out.append(prefix)
            return
        for j in range(a.shape[0]):
            if m[j] > 0 and a[j] <= nxt <= a[j] + m[j] - 1:
                extend(prefix + (j,), int(a[j] + m[j]))

    extend((), 1)
    return out


def _options(inst: Instance, j: int, allow_idle: bool) -> list[tuple[int, int]]:
    opts = [(0, 0)] if allow_idle else []
    top = int(min(inst.n_blocks, cast(np.ndarray, inst.max_blocks)[j]))
    for cnt in range(1, top + 1):
        if inst.block_bytes * cnt > inst.memory[j]:
            break
        opts += [(start, cnt) for start in range(1, inst.n_blocks - cnt + 2)]
    return opts


@dataclass(frozen=True)
class BruteForceResult:
    placement: Placement | None
    routes: tuple[Route, ...]
    total_cost: float

    @property
    def mean_cost(self) -> float:
        return self.total_cost / len(self.routes) if self.routes else INF


def brute_force(inst: Instance, *, allow_idle: bool = False,
                max_states: int = 2_000_000) -> BruteForceResult:
    """Optimal solution of (6) by enumeration (ties: first found in enumeration order)."""
    n_s = inst.n_servers
    options = [_options(inst, j, allow_idle) for j in range(n_s)]
    n_place = int(np.prod([len(o) for o in options], dtype=float))
    if n_place > max_states:
        raise ValueError(f"brute_force: {n_place} placements exceed max_states={max_states}")
    best: tuple[float, Placement | None, tuple[Route, ...]] = (INF, None, ())
    clients = [c for c in range(inst.n_clients) if inst.requests[c] > 0]
    for combo in itertools.product(*options):
        first = np.array([o[0] for o in combo], dtype=np.int64)
        count = np.array([o[1] for o in combo], dtype=np.int64)
        pl = Placement(first, count, memory_slots(inst, count))
        chains = feasible_chains(pl, inst.n_blocks)
        if not chains:
            continue
        use = np.zeros((len(chains), n_s), dtype=np.int64)
        cost = np.zeros((inst.n_clients, len(chains)))
        for p, ch in enumerate(chains):
            rt = make_route(pl, 0, ch)
            use[p, list(ch)] = rt.blocks
            idx = list(ch)
            cost[:, p] = inst.comm[:, idx].sum(axis=1) + (inst.tau_eff[idx] * rt.blocks).sum()
        # Per client: every multiset of chains for its identical requests.
        per_client = []
        for c in clients:
            sets = []
            for ms in itertools.combinations_with_replacement(range(len(chains)),
                                                              int(inst.requests[c])):
                sets.append((float(cost[c, list(ms)].sum()), use[list(ms)].sum(axis=0), ms))
            per_client.append(sets)
        for pick in itertools.product(*per_client):
            total = sum(p[0] for p in pick)
            if total >= best[0]:
                continue
            load = np.sum([p[1] for p in pick], axis=0)
            if np.all(inst.block_bytes * count + inst.cache_bytes * load
                      <= inst.memory * (1 + 1e-12)):
                routes = tuple(make_route(pl, c, chains[p])
                               for c, (_, _, ms) in zip(clients, pick, strict=True) for p in ms)
                best = (total, pl, routes)
    return BruteForceResult(best[1], best[2], best[0])
