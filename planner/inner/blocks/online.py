"""Online seed 000: Algorithm 2 = CG-BP (slow time scale) + WS-RR (per request), §3.3.

Placement is CG-BP (Alg. 1 lines 1–9) for a *design* concurrency ``|R|``
(:func:`design_concurrency` implements the paper's rule of §3.3.1).  Each arriving
request is then routed by WS-RR: a shortest path with link cost
``t^W_ij(t) + l_max · t^c_ij`` (Alg. 2 lines 10–13), where ``t^W_ij(t)`` is the wait of
eq. (20) until server ``j`` has ``k_ij`` free cache slots.  Alg. 2 prints ``t_0`` for
``t̃_0`` and ``f̃_j`` for ``f̄_j`` (reading guide §7.5); :func:`cg_bp` uses the
corrected symbols.  ``t^c_ij`` is the instance's per-token cost: with the all-token
objective ``l_max t^c_ij`` is the request's total time on the link, which is what the
authors' code uses (the guide's corrected (8)).

:func:`simulate` is a request-level simulator in the spirit of the authors' MATLAB one
(§6 of the guide): per-request closed-form service time from eq. (1), the wait of a
chain is the max of its links' (20) waits (as in (A.5)), server state is the list of
(active request completion time, cache slots) pairs.  No compute contention is
modelled, as in the paper.  Optional knobs reproduce the simulator's PETALS retry
back-off (footnote 8: cumulative ``min(2^{n−1}, cap)`` seconds) and its fixed
``initial_delay`` / ``allocation_delay`` constants; they default to off / 0.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from planner.inner.blocks.bounds import feasible_18, max_concurrency_18, max_concurrency_19
from planner.inner.blocks.cg_bprr import CGBPResult, cg_bp, route_clients
from planner.inner.blocks.instance import Instance
from planner.inner.blocks.routing import (
    INF,
    Placement,
    Route,
    link_matrix,
    make_route,
    route_times,
    shortest_path,
)


class OnlineState:
    """Per-server active sessions: (completion time, cache slots held), §3.3.2."""

    def __init__(self, n_servers: int) -> None:
        self._done: list[list[float]] = [[] for _ in range(n_servers)]
        self._held: list[list[int]] = [[] for _ in range(n_servers)]

    def active(self, j: int, t: float) -> tuple[np.ndarray, np.ndarray]:
        """``(T^j_r, M^j_r)`` of requests still running on ``j`` at time ``t``."""
        done = np.asarray(self._done[j])
        held = np.asarray(self._held[j], dtype=np.int64)
        keep = done > t
        if not keep.all():  # forget finished sessions
            self._done[j] = done[keep].tolist()
            self._held[j] = held[keep].tolist()
        return done[keep], held[keep]

    def count(self, j: int, t: float) -> int:
        return int(self.active(j, t)[0].shape[0])

    def add(self, route: Route, completion: float) -> None:
        for j, k in zip(route.servers, route.blocks, strict=True):
            self._done[j].append(completion)
            self._held[j].append(int(k))


def waiting_time(slots: int, done: np.ndarray, held: np.ndarray, t: float,
                 need: np.ndarray) -> np.ndarray:
    """Eq. (20): time until ``slots − Σ_{r>k} M^j_r ≥ need`` after the ``k`` earliest finish.

    ``need`` may be an array (one entry per incoming link); ``inf`` where ``need``
    exceeds the server's total slots.
    """
    need = np.asarray(need, dtype=np.int64)
    order = np.argsort(done, kind="stable")
    done, held = done[order], held[order]
    # free[k] = slots left once the k earliest-finishing sessions are gone, k = 0..R_j
    free = slots - (held.sum() - np.concatenate([[0], np.cumsum(held)]))
    when = np.concatenate([[t], done]) - t  # T^j_0 := 0
    ok = free[None, :] >= need[:, None]
    first = np.argmax(ok, axis=1)
    return np.where(ok.any(axis=1), when[first], INF)


def link_waits(inst: Instance, placement: Placement, state: OnlineState, t: float) -> np.ndarray:
    """``t^W_ij(t)`` for every link, ``(S+1, S)`` (row ``S`` = S-client); ``inf`` if unusable."""
    ok, k = link_matrix(placement, inst.n_blocks)
    # Idle servers (the common case below |R|) need no sort: wait 0 if the slots suffice.
    waits = np.where(ok & (k <= placement.cache_slots[None, :]), 0.0, INF)
    for j in np.flatnonzero(ok.any(axis=0)):
        done, held = state.active(int(j), t)
        rows = np.flatnonzero(ok[:, j])
        if placement.cache_slots[j] - held.sum() >= k[rows, j].max():
            continue  # room for every incoming link right now
        waits[rows, j] = waiting_time(int(placement.cache_slots[j]), done, held, t, k[rows, j])
    return waits


Router = Callable[[Instance, Placement, int, float, OnlineState], tuple[int, ...]]


def ws_rr(inst: Instance, placement: Placement, client: int, t: float,
          state: OnlineState) -> tuple[int, ...]:
    """WS-RR (Alg. 2 lines 11–12): shortest chain under ``t^W_ij(t) + l_max t^c_ij``."""
    l = inst.output_len
    waits = link_waits(inst, placement, state, t)
    _, path = shortest_path(placement, inst.n_blocks, l * inst.comm[client],
                            l * inst.tau_eff, extra=waits)
    return path


def retry_backoff(raw_wait: float, cap_s: float = 60.0) -> float:
    """PETALS retries at cumulative ``Σ min(2^{n−1}, cap)`` s; first retry covering the wait."""
    if raw_wait <= 0:
        return 0.0
    total, n = 0.0, 1
    while total < raw_wait:
        total += min(2.0 ** (n - 1), cap_s)
        n += 1
    return total


@dataclass(frozen=True)
class SimulationResult:
    """Per-request outcome of :func:`simulate` (arrays of length ``N``)."""

    arrival: np.ndarray
    client: np.ndarray
    wait_s: np.ndarray
    ttft_s: np.ndarray
    tbt_s: np.ndarray
    response_s: np.ndarray
    routes: tuple[Route | None, ...]
    max_concurrency: int

    @property
    def served(self) -> np.ndarray:
        return np.isfinite(self.response_s)

    def mean_per_token_s(self, output_len: int) -> float:
        """The paper's metric: ``Σ_r (completion − arrival) / (N l_max)`` (§5.2)."""
        return float(np.mean(self.response_s) / output_len)


def simulate(
    inst: Instance,
    placement: Placement,
    arrival: Sequence[float] | np.ndarray,
    clients: Sequence[int] | np.ndarray,
    *,
    router: Router = ws_rr,
    backoff: bool = False,
    backoff_cap_s: float = 60.0,
    initial_delay_s: float = 0.0,
    allocation_delay_s: float = 0.0,
) -> SimulationResult:
    """Route requests one by one in arrival order and predict their times (eq. (1), (20))."""
    arrival = np.asarray(arrival, dtype=float)
    clients = np.asarray(clients, dtype=np.int64)
    n = arrival.shape[0]
    state = OnlineState(inst.n_servers)
    out = {k: np.full(n, INF) for k in ("wait", "ttft", "tbt", "resp")}
    routes: list[Route | None] = []
    completions: list[float] = []
    peak = 0
    for r in np.argsort(arrival, kind="stable"):
        t, c = float(arrival[r]), int(clients[r])
        peak = max(peak, 1 + sum(1 for x in completions if x > t))
        path = router(inst, placement, c, t, state)
        if not path:
            routes.append(None)
            continue
        route = make_route(placement, c, path)
        # (A.5): the chain starts when its slowest link has room.
        raw = max(float(waiting_time(int(placement.cache_slots[j]), *state.active(j, t), t,
                                     np.array([k]))[0])
                  for j, k in zip(route.servers, route.blocks, strict=True))
        if not np.isfinite(raw):
            routes.append(None)
            continue
        wait = retry_backoff(raw, backoff_cap_s) if backoff else raw
        times = route_times(inst, route)
        fixed = wait + initial_delay_s + allocation_delay_s
        out["wait"][r] = wait
        out["ttft"][r] = fixed + times.ttft_s
        out["tbt"][r] = times.tbt_s
        out["resp"][r] = fixed + times.response_s
        done = t + out["resp"][r]
        state.add(route, done)
        completions.append(done)
        routes.append(route)
    ordered: list[Route | None] = [None] * n
    for pos, r in enumerate(np.argsort(arrival, kind="stable")):
        ordered[r] = routes[pos]
    return SimulationResult(arrival, clients, out["wait"], out["ttft"], out["tbt"],
                            out["resp"], tuple(ordered), peak)


def poisson_arrivals(rate: float, n: int, seed: int,
                     weights: Sequence[float] | np.ndarray | None = None
                     ) -> tuple[np.ndarray, np.ndarray]:
    """``n`` Poisson arrivals at ``rate``/s (first at 0, as in the authors' code) and clients."""
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(1.0 / rate, size=n)
    gaps[0] = 0.0
    if weights is None:
        return np.cumsum(gaps), np.zeros(n, dtype=np.int64)
    p = np.asarray(weights, dtype=float)
    return np.cumsum(gaps), rng.choice(p.shape[0], size=n, p=p / p.sum())


def split_requests(total: int, weights: np.ndarray) -> np.ndarray:
    """Split ``total`` requests over clients in proportion to ``weights`` (largest remainder)."""
    w = np.asarray(weights, dtype=float)
    w = np.ones_like(w) if w.sum() <= 0 else w
    exact = total * w / w.sum()
    base = np.floor(exact).astype(np.int64)
    rest = total - int(base.sum())
    base[np.argsort(-(exact - base), kind="stable")[:rest]] += 1
    return base


def design_concurrency(inst: Instance, arrival_rate: float, *,
                       weights: np.ndarray | None = None,
                       initial_delay_s: float = 0.0) -> int:
    """The paper's choice of ``|R|`` (§3.3.1; details from the authors' code, guide §3.3.1).

    ``T`` = time of one request alone under CG-BPRR with ``|R| = 1`` (request-weighted
    over clients, plus ``initial_delay_s``); new arrivals during it have mean
    ``λT`` and, being Poisson, std ``√(λT)``; ``|R| = min(round(mean + std), (19))``.
    When (19) admits nothing or (with caps) overshoots (18), the exact largest ``|R|``
    of (18) replaces it (our reading: (19) is only sufficient).  Returns 0 if not even
    one session can be guaranteed.
    """
    w = inst.requests.astype(float) if weights is None else np.asarray(weights, dtype=float)
    w = np.ones(inst.n_clients) if w.sum() <= 0 else w
    single = cg_bp(inst, 1)
    if not single.feasible:
        return 0
    resp = np.zeros(inst.n_clients)
    for c in range(inst.n_clients):
        _, path = shortest_path(single.placement, inst.n_blocks, inst.comm[c], inst.tau_eff)
        resp[c] = route_times(inst, make_route(single.placement, c, path)).response_s
    t_one = float(np.dot(w, resp) / w.sum()) + initial_delay_s
    mean = arrival_rate * t_one
    target = max(1, int(np.floor(mean + np.sqrt(mean) + 0.5)))
    cap = max_concurrency_19(inst)
    if cap < 1 or not feasible_18(inst, cap):
        cap = max_concurrency_18(inst)
    return int(min(target, cap))


@dataclass(frozen=True)
class TwoTimeScaleResult:
    """Alg. 2 outcome: the CG-BP placement, the offline routes at ``|R|`` and a simulation."""

    cgbp: CGBPResult
    routes: tuple[tuple[Route, int], ...]
    simulation: SimulationResult | None


def two_time_scale(
    inst: Instance,
    design_requests: int,
    arrival: Sequence[float] | None = None,
    clients: Sequence[int] | None = None,
    **sim_kwargs,
) -> TwoTimeScaleResult:
    """Algorithm 2: CG-BP for ``|R| = design_requests``, then WS-RR on the given arrivals."""
    res = cg_bp(inst, design_requests)
    if not res.feasible:
        return TwoTimeScaleResult(res, (), None)
    design = inst.with_requests(split_requests(design_requests, inst.requests))
    routes = tuple((r, n) for r, n, _ in route_clients(design, res.placement))
    sim = None
    if arrival is not None:
        cl = np.zeros(len(arrival), dtype=np.int64) if clients is None else clients
        sim = simulate(inst, res.placement, arrival, cl, **sim_kwargs)
    return TwoTimeScaleResult(res, routes, sim)
