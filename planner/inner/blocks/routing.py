"""Placements, feasible chains, shortest-path routing (seed 000 §3.1, Lemma 3.1, Alg. 1 l. 10–13).

A placement gives each server ``j`` a first block ``a_j`` (1-based, as in the paper)
and a count ``m_j``; ``m_j = 0`` means the server holds nothing.  With the dummy
S-client (``a = 0, m = 1``) and D-client (``a = L+1, m = 1``), link ``(i, j)`` is
usable iff (3) ``a_j <= a_i + m_i <= a_j + m_j − 1``, and then ``j`` processes
``k_ij = a_j + m_j − a_i − m_i`` blocks.  Writing ``e_j := a_j + m_j`` (the next
block after ``j``), every link strictly increases ``e``, so the feasible graph is a
DAG ordered by ``e`` and a shortest path is one dynamic-programming pass (the guide's
§3.2 note on line 12; no Dijkstra needed).

The D-client links cost 0 (``t_cc' = τ_c' = 0``, §3.1) unless a ``sink`` cost is
given (PETALS weighs the last hop with ``rtt/2``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.inner.blocks.instance import Instance, safe_floor

INF = float("inf")


@dataclass(frozen=True)
class Placement:
    """Block placement ``(a, m)`` plus each server's cache slots (block-sessions).

    ``cache_slots[j]`` is how many (session, block) caches fit beside the blocks:
    ``⌊(M_j − s_m m_j)/s_c⌋`` for the paper's memory model (2), or PETALS's fixed
    reservation for the baseline (§4.1).
    """

    first: np.ndarray
    count: np.ndarray
    cache_slots: np.ndarray

    @property
    def next_block(self) -> np.ndarray:
        return self.first + self.count

    def covered(self, n_blocks: int) -> np.ndarray:
        """Boolean ``(L,)``: block ``b+1`` is held by at least one server."""
        cov = np.zeros(n_blocks + 2, dtype=np.int64)
        used = self.count > 0
        np.add.at(cov, self.first[used], 1)
        np.add.at(cov, self.next_block[used], -1)
        return np.cumsum(cov)[1 : n_blocks + 1] > 0

    def is_complete(self, n_blocks: int) -> bool:
        return bool(self.covered(n_blocks).all())


def memory_slots(inst: Instance, count: np.ndarray) -> np.ndarray:
    """``⌊(M_j − s_m m_j)/s_c⌋`` cache slots left by the blocks (memory model (2)).

    Clipped at 0; whether the blocks themselves fit is the caller's check.  With a
    session cap (``Instance.max_sessions``) at most ``max_sessions · m_j`` slots.
    """
    count = np.asarray(count)
    free = (inst.memory - inst.block_bytes * count) / inst.cache_bytes
    slots = np.maximum(safe_floor(free), 0)
    if inst.max_sessions is not None:
        slots = np.minimum(slots, np.where(np.isfinite(inst.max_sessions),
                                           inst.max_sessions * count, slots))
    return slots.astype(np.int64)


@dataclass(frozen=True)
class Route:
    """One chain for client ``client``: servers in order and blocks processed at each."""

    client: int
    servers: tuple[int, ...]
    blocks: tuple[int, ...]
    first_blocks: tuple[int, ...]


def link_matrix(placement: Placement, n_blocks: int) -> tuple[np.ndarray, np.ndarray]:
    """Feasible links and block counts, rows ``0..S-1`` servers and row ``S`` the S-client.

    Returns ``ok`` (bool ``(S+1, S)``) and ``k`` (int ``(S+1, S)``, blocks at ``j``).
    """
    a, m = placement.first, placement.count
    e_prev = np.concatenate([placement.next_block, [1]])  # S-client: a=0, m=1 -> e=1
    k = (a + m)[None, :] - e_prev[:, None]
    ok = (a[None, :] <= e_prev[:, None]) & (e_prev[:, None] <= (a + m - 1)[None, :])
    ok &= (m > 0)[None, :]
    ok[:-1] &= (m > 0)[:, None]
    return ok, k


def shortest_path(
    placement: Placement,
    n_blocks: int,
    node_cost: np.ndarray,
    per_block: np.ndarray,
    *,
    extra: np.ndarray | None = None,
    sink: np.ndarray | None = None,
) -> tuple[float, tuple[int, ...]]:
    """Cheapest S→D chain with link cost ``node_cost[j] + per_block[j]·k_ij + extra[i, j]``.

    ``extra`` is ``(S+1, S)`` (row ``S`` = from the S-client; ``inf`` forbids a link);
    ``sink[i]`` is the cost of the last hop ``i → c'`` (0 by default).  Ties go to the
    lowest predecessor index, so the result is deterministic.  Returns ``(inf, ())``
    when no feasible chain exists.
    """
    n_s = placement.first.shape[0]
    ok, k = link_matrix(placement, n_blocks)
    cost = node_cost[None, :] + per_block[None, :] * k
    if extra is not None:
        cost = cost + extra
    cost = np.where(ok, cost, INF)
    dist = np.full(n_s + 1, INF)
    dist[n_s] = 0.0
    pred = np.full(n_s, -1, dtype=np.int64)
    e = placement.next_block
    # Links go from smaller to strictly larger e, so processing by e is topological.
    for j in np.argsort(e, kind="stable"):
        if placement.count[j] <= 0:
            continue
        cand = dist + cost[:, j]
        best = int(np.argmin(cand))
        if cand[best] < INF:
            dist[j], pred[j] = cand[best], best
    last = np.where((placement.count > 0) & (e == n_blocks + 1), dist[:n_s], INF)
    if sink is not None:
        last = last + sink
    if not np.isfinite(last).any():
        return INF, ()
    j = int(np.argmin(last))
    total = float(last[j])
    path = []
    while j != n_s:
        path.append(j)
        j = int(pred[j])
    return total, tuple(reversed(path))


def make_route(placement: Placement, client: int, servers: tuple[int, ...]) -> Route:
    """Attach block counts to a server chain (overlap rule of §3.1: first holder processes)."""
    blocks, firsts = [], []
    prev = 1
    for j in servers:
        nxt = int(placement.next_block[j])
        blocks.append(nxt - prev)
        firsts.append(prev)
        prev = nxt
    return Route(client, tuple(servers), tuple(blocks), tuple(firsts))


def is_feasible_route(placement: Placement, n_blocks: int, servers: tuple[int, ...]) -> bool:
    """Condition (3) on every hop, including the dummy S- and D-client ends."""
    prev = 1
    for j in servers:
        a, m = int(placement.first[j]), int(placement.count[j])
        if m <= 0 or not (a <= prev <= a + m - 1):
            return False
        prev = a + m
    return prev == n_blocks + 1


@dataclass(frozen=True)
class RouteTimes:
    """Times of one request on a route, eq. (1): TTFT, time between tokens, total."""

    ttft_s: float
    tbt_s: float
    response_s: float
    per_token_s: float  # the instance's objective (decode or all-token) per token


def route_times(inst: Instance, route: Route) -> RouteTimes:
    """Eq. (1): ``Σ(t^I_cj + k_j τ^I_j) + (l_max − 1) Σ(t_cj + k_j τ_j)``."""
    c = route.client
    js = np.asarray(route.servers, dtype=np.int64)
    ks = np.asarray(route.blocks, dtype=float)
    ttft = float(np.sum(inst.t_in[c, js] + ks * inst.tau_in[js]))
    tbt = float(np.sum(inst.t_tok[c, js] + ks * inst.tau[js]))
    response = ttft + (inst.output_len - 1) * tbt
    per_token = float(np.sum(inst.comm[c, js] + ks * inst.tau_eff[js]))
    return RouteTimes(ttft, tbt, response, per_token)


def route_cache_use(n_servers: int, route: Route) -> np.ndarray:
    """Cache slots one session on ``route`` holds at each server (memory model (5))."""
    use = np.zeros(n_servers, dtype=np.int64)
    use[list(route.servers)] = route.blocks
    return use


def fill_capacity(
    inst: Instance,
    placement: Placement,
    weights: np.ndarray | None = None,
) -> list[tuple[Route, int]]:
    """Saturate the placement with concurrent sessions, cheapest residual chain first.

    Not in the paper: it is how we turn a placement into "pipelines with capacities"
    for the plan.  Each step picks the client furthest below its share ``weights``
    (default: the instance's request mix), finds its cheapest chain whose servers
    still have ``k_ij`` free cache slots, and gives it a batch of sessions (the whole
    bottleneck for a single client, a weighted share of it otherwise).  Stops when no
    client has a feasible chain.  The per-session cost is the instance objective,
    which matches Alg. 1's routing when memory never binds (Lemma 3.4).
    """
    n_s, n_c = inst.n_servers, inst.n_clients
    w = inst.requests.astype(float) if weights is None else np.asarray(weights, dtype=float)
    if w.sum() <= 0:
        w = np.ones(n_c)
    active = w > 0
    free = placement.cache_slots.astype(np.int64).copy()
    assigned = np.zeros(n_c)
    out: dict[tuple[int, tuple[int, ...]], int] = {}
    _, k = link_matrix(placement, inst.n_blocks)
    while active.any():
        ratio = np.where(active, assigned / np.where(w > 0, w, 1.0), INF)
        c = int(np.argmin(ratio))
        extra = np.where(free[None, :] >= np.maximum(k, 1), 0.0, INF)
        cost, path = shortest_path(placement, inst.n_blocks, inst.comm[c], inst.tau_eff,
                                   extra=extra)
        if not path:
            active[c] = False
            continue
        route = make_route(placement, c, path)
        use = route_cache_use(n_s, route)
        on = use > 0
        bottleneck = int(np.min(free[on] // use[on]))
        share = w[c] / w[active].sum()
        batch = bottleneck if active.sum() == 1 else max(1, int(bottleneck * share))
        free -= batch * use
        assigned[c] += batch
        out[(c, path)] = out.get((c, path), 0) + batch
    return [(make_route(placement, c, p), n) for (c, p), n in out.items()]
