"""Discrete-event simulation of a plan serving a request stream (issue 8).

One heap of timed events (ties broken by insertion order, so a run is a pure function
of its inputs and seed) moves requests through

    router queue -> prefill island -> KV transfer (planner.sim.netflow) -> decode island

for disaggregated plans, or router -> ``both`` island for colocated ones.  Arrivals are
not pushed on the heap: they are already sorted, so the loop merges them in.

**Prefill islands** -- FCFS attention groups batching prompts up to a token budget,
or passing in lockstep -- are :mod:`planner.sim.prefill_batching`, which also says where
TTFT and TPOT are measured (the user receives every token, the first included, from the
decode island).

**Decode and colocated islands** -- continuous batching advanced in epochs,
chunked prefill on colocated islands -- are :mod:`planner.sim.decode_batching`.

**Router protocol.**  The engine is the :class:`planner.sim.protocol.ClusterView` the
router reads.  ``HOLD`` on arrival keeps the request in a central FIFO queue whose head
is offered again every ``router.hold_interval_s`` and whenever an island frees capacity
(a prefill batch ends, a decode request completes); later arrivals queue behind it.
``HOLD`` on the decode decision retries that request after ``hold_interval_s``, its KV
staying on the prefill island.  The wall time of every decision is recorded.

Not modelled (stated so nobody reads more into the figures): the KV a prefill island
holds until its transfer ends does not limit its prefill; chunked prefill on prefill
islands (a prompt over the budget runs alone); KV offload.
"""

from __future__ import annotations

import heapq
import math
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, cast

import numpy as np

from perfmodel.timing import STEP_COLUMNS
from planner.core.errors import PlannerError
from planner.sim.cluster import prefill_split, step_time
from planner.sim.decode_batching import DecodeBatching, Decoder, share
from planner.sim.events import DECODE_RETRY, EPOCH, HOLD_RETRY, KICK, NET, PREFILL_DONE
from planner.sim.netflow import FlowNetwork
from planner.sim.prefill_batching import Prefill, PrefillBatching
from planner.sim.prefix_cache import LRUBlockCache
from planner.sim.protocol import HOLD, BaseRouter, Router, SimCluster, SimRequest, SimResult

if TYPE_CHECKING:
    from planner.fleet.network import Location

heappush = heapq.heappush
_perf = time.perf_counter
_INF = math.inf
#: Column of the MoE layer count in a step-coefficient row (perfmodel.timing.STEP_COLUMNS).
_M_COUNT = STEP_COLUMNS.index("m_count")
#: Events between two ``progress`` calls (a power of two: the test is a bit mask).
PROGRESS_EVENTS = 1 << 14
_PROGRESS_MASK = PROGRESS_EVENTS - 1


class Simulation(PrefillBatching, DecodeBatching):
    """One run; also the :class:`ClusterView` the router sees (live state)."""

    def __init__(self, cluster: SimCluster, requests: Sequence[SimRequest], router: Router, *,
                 seed: int = 0, prefix_cache_blocks: int | None = None,
                 fair_sharing: bool = True, prefill_token_budget: int = 8192,
                 oracle_refresh_s: float = 1.0, prefill_lockstep: bool = True) -> None:
        isl = cluster.islands
        n_isl = len(isl)
        if n_isl == 0:
            raise PlannerError("cluster has no islands")
        if prefill_token_budget < 1:
            raise PlannerError("prefill_token_budget must be >= 1")
        self.cluster, self.router, self.seed = cluster, router, seed
        self.islands = isl
        self.now = 0.0
        self._out = [0] * n_isl  # outstanding tokens per island
        self.router_queue = 0
        self.range_edges = cluster.range_edges  # for plan-following routers
        self.budget = int(prefill_token_budget)
        self.oracle_refresh_s = float(oracle_refresh_s)
        self._c_hat: np.ndarray | None = None
        self._c_next = -_INF
        # make_cluster has placed every island (location not None)
        locs = [cast("Location", x.location) for x in isl]
        self._tier = [[cluster.network.tier_between(a, b) for b in locs] for a in locs]
        self.net = FlowNetwork(cluster.network, [x.location for x in isl],
                               fair_sharing=fair_sharing, gpus=[x.size for x in isl],
                               group_gpus=[x.tp for x in isl])
        self._pre: list[Prefill | None] = [None] * n_isl
        self._dec: list[Decoder | None] = [None] * n_isl  # an island's (first) decoder
        self._engines: list[list[Decoder]] = [[] for _ in range(n_isl)]  # all of them
        self._units: list[Decoder] = []  # every decoder, by Decoder.u
        split_cache: dict[int, tuple] = {}
        for x in isl:
            key = id(x.prefill_s)
            if key not in split_cache:
                split_cache[key] = prefill_split(x.prefill_s)
            lin, a, tail = split_cache[key]
            # MoE layers in the step: the attention groups meet in the expert all-to-all
            moe = bool(np.any(np.asarray(x.step_coeffs)[:, _M_COUNT]))
            if x.role == "prefill":
                self._pre[x.index] = Prefill(x.index, x.dp, lin, a, tail,
                                              int(x.token_budget) or self.budget,
                                              lockstep=prefill_lockstep and moe)
            else:
                rows = [tuple(map(float, r)) for r in np.asarray(x.step_coeffs)]
                both = x.role == "both"
                # a layer model (dense or MoE layers in the step): an engine's island, run
                # with chunked prefill; the seed-001 chains (planner.sim.pipeline_cluster)
                # have none and keep the whole-prompt iteration they were built for
                chunked = both and x.chunked_prefill and any(r[1] or r[5] for r in rows)
                # a dense model's data-parallel replicas share no collective: each is an
                # engine of its own; MoE groups step together (the expert all-to-all)
                engines = x.dp if chunked and x.dp > 1 and not moe else 1
                budget = int(x.token_budget) or self.budget
                dp = x.dp if engines == 1 else 1
                units = []
                for e in range(engines):
                    units.append(Decoder(
                        x.index, both, rows, dp, share(x.max_batch, engines, e),
                        share(x.kv_capacity_tokens, engines, e), lin, a, tail,
                        u=len(self._units), chunked=chunked, budget=budget, w=1.0 / engines,
                        mixed=x.mixed_prefill))
                    self._units.append(units[-1])
                self._dec[x.index] = units[0]
                self._engines[x.index] = units
        self._arrival_ok = [x.role in ("prefill", "both") for x in isl]
        self._decode_ok = [x.role == "decode" for x in isl]
        self._kvb = [float(x.kv_bytes_per_token) for x in isl]
        self._tp = [int(x.tp) for x in isl]
        self.caches = None
        if prefix_cache_blocks is not None:

            self.caches = [LRUBlockCache(int(prefix_cache_blocks)) for _ in isl]
        # requests in arrival order; the engine works with positions into this list
        arr = np.fromiter((r.arrival for r in requests), dtype=np.float64,
                          count=len(requests))
        if np.all(arr[1:] >= arr[:-1]):
            self.reqs = list(requests)
        else:
            self.reqs = [requests[k] for k in np.argsort(arr, kind="stable").tolist()]
        n = len(self.reqs)
        for r in self.reqs:
            if r.input_len < 1 or r.output_len < 1:
                raise PlannerError(f"request {r.rid}: input_len and output_len must be >= 1")
            if r.t_routed == r.t_routed or r.tokens_out:  # reused object: clear outcome
                _reset(r)
        self._tok = [0] * n  # tokens generated so far (valid while not running)
        self._adm_step = [0] * n
        self._adm_id = [-1] * n
        self._recompute = [False] * n
        self._pf_hit = [0] * n
        self._pf_at = [0] * n  # chunked prefill: context tokens computed so far
        self._heap: list[tuple] = []
        self._seq = 0
        self._hold: deque[int] = deque()
        self._hold_timer = False
        self._net_due = _INF
        self._next_adm = 0
        self.decisions: list[float] = []
        self.busy: list[tuple[int, float, float, float]] = []
        self.events = 0
        self.completed = 0
        self.dropped = 0
        self._work = 0  # busy prefill groups + active decoders (+ transfers via the net)

    # ----------------------------------------------------------------- ClusterView
    # The per-island figures are kept in plain Python state (numpy element updates cost
    # ~10x a list's in the event loop) and assembled into arrays when a router reads them:
    # always the state at the current event.
    @property
    def queued(self) -> np.ndarray:
        return np.array([len(p.queue) if p is not None else sum(len(d.queue) for d in e)
                         for p, e in zip(self._pre, self._engines, strict=True)],
                        dtype=np.int64)

    @property
    def running(self) -> np.ndarray:
        return np.array([sum(d.n for d in e) for e in self._engines], dtype=np.int64)

    @property
    def outstanding_tokens(self) -> np.ndarray:
        return np.array(self._out, dtype=np.int64)

    @property
    def kv_free_tokens(self) -> np.ndarray:
        return np.array([sum(d.cap - d.ctx for d in e) if e else x.kv_capacity_tokens
                         for e, x in zip(self._engines, self.islands, strict=True)],
                        dtype=np.int64)

    def step_time(self, island: int, batch: int, context: float) -> float:
        d = self._dec[island]
        x = self.islands[island]
        rows = d.rows if d is not None else [tuple(map(float, r)) for r in x.step_coeffs]
        b = -(-int(batch) // x.dp)
        b = min(max(b, 0), len(rows) - 1)
        return step_time(rows[b], float(context))

    def prefill_time(self, island: int, tokens: int) -> float:
        t = self.islands[island].prefill_s
        k = int(tokens)
        if k < len(t):
            return float(t[max(k, 0)])
        return float(t[-1]) * (k / (len(t) - 1)) ** 2  # beyond the table: quadratic growth

    def tier(self, a: int, b: int) -> int:
        return self._tier[a][b]

    def prefix_hit_tokens(self, island: int, hashes: tuple[int, ...]) -> int:
        if self.caches is None or not hashes:
            return 0
        return self.caches[island].hit_tokens(hashes, 1 << 62)

    def congestion_estimate(self) -> np.ndarray:
        if self.now >= self._c_next or self._c_hat is None:
            self._c_hat = self.net.external_utilisation(self.now)
            self._c_next = self.now + self.oracle_refresh_s
        return self._c_hat

    def inflight_transfers(self, src: int) -> np.ndarray:
        return self.net.inflight(src)

    # ----------------------------------------------------------------- helpers
    def _push(self, t: float, kind: int, a: int, b: int) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (t, self._seq, kind, a, b))

    def _route_arrival(self, pos: int) -> int:
        req = self.reqs[pos]
        t = _perf()
        i = self._route_a(req, self)
        self._dt(_perf() - t)
        if i != HOLD and not (0 <= i < len(self._arrival_ok) and self._arrival_ok[i]):
            raise ValueError(f"router {self.router.name!r} sent request {req.rid} to island "
                             f"{i}, which is not a prefill or colocated island")
        return i

    def _arrive(self, pos: int) -> None:
        if self._hold:
            self._hold.append(pos)
            self.router_queue += 1
            self._drain_hold()
            return
        i = self._route_arrival(pos)
        if i == HOLD:
            self._hold.append(pos)
            self.router_queue += 1
            if not self._hold_timer:
                self._hold_timer = True
                self._push(self.now + self.router.hold_interval_s, HOLD_RETRY, 0, 0)
            return
        self._dispatch(pos, i)

    def _drain_hold(self) -> None:
        hold = self._hold
        while hold:
            i = self._route_arrival(hold[0])
            if i == HOLD:
                if not self._hold_timer:
                    self._hold_timer = True
                    self._push(self.now + self.router.hold_interval_s, HOLD_RETRY, 0, 0)
                return
            self.router_queue -= 1
            self._dispatch(hold.popleft(), i)

    def _dispatch(self, pos: int, i: int) -> None:
        req = self.reqs[pos]
        req.prefill_island = i
        req.t_routed = self.now
        p = self._pre[i]
        if p is None:  # colocated: the island prefills it inside an iteration
            req.decode_island = i
            self._recompute[pos] = True
            e = self._engines[i]  # a colocated island has decoders
            d = e[0]
            if len(e) > 1:  # vLLM's data-parallel balancing: least 4 waiting + running
                best = 4 * len(d.queue) + d.n
                for u in e:
                    score = 4 * len(u.queue) + u.n
                    if score < best:
                        d, best = u, score
            if self.caches is not None and req.prefix_hashes:
                self._pf_hit[pos] = self.caches[i].hit_tokens(req.prefix_hashes,
                                                              req.input_len)
            self._out[i] += req.input_len + req.output_len
            self._dec_enqueue(d, pos, req.input_len)
            return
        self._prefill_enqueue(p, pos, i)

    # ----------------------------------------------------------------- KV transfer
    def _route_decode(self, pos: int, src: int) -> bool:
        """Decide and start the KV transfer; False if the router held the request."""
        req = self.reqs[pos]
        t = _perf()
        d = self._route_d(req, src, self)
        self._dt(_perf() - t)
        if d == HOLD:
            self._push(self.now + self.router.hold_interval_s, DECODE_RETRY, pos, src)
            return False
        if not (0 <= d < len(self._decode_ok) and self._decode_ok[d]):
            raise ValueError(f"router {self.router.name!r} sent the KV of request {req.rid} to "
                             f"island {d}, which is not a decode island")
        req.decode_island = d
        cached = 0
        if self.caches is not None and req.prefix_hashes:
            cached = self.caches[d].hit_tokens(req.prefix_hashes, req.input_len)
        per_flow = (req.input_len - cached) * self._kvb[src]
        flows = self._tp[src]
        req.cached_tokens = cached
        req.t_kv_start = self.now
        req.kv_tier = self._tier[src][d]
        req.kv_bytes = per_flow * flows
        if per_flow <= 0:
            self._kv_arrived(pos)
            return True
        f = self.net.start(self.now, pos, src, d, per_flow, flows)
        if f < self._net_due:
            self._net_due = f
            self._seq = seq = self._seq + 1
            heappush(self._heap, (f, seq, NET, 0, 0))
        return True

    def _net_event(self) -> None:
        now = self.now
        if now >= self._net_due:
            self._net_due = _INF
        net = self.net
        for pos in net.pop_finished(now):
            self._kv_arrived(pos)
        f = net.next_finish()
        if f < self._net_due:
            self._net_due = f
            self._push(f, NET, 0, 0)

    def _kv_arrived(self, pos: int) -> None:
        req = self.reqs[pos]
        req.t_kv_end = self.now
        d = cast(Decoder, self._dec[req.decode_island])  # routed to a decode island
        if self.caches is not None and req.prefix_hashes:
            self.caches[d.i].touch(req.prefix_hashes)
        t = self._tok[pos]
        self._out[d.i] += req.output_len - t
        if self._on_transfer is not None:
            self._on_transfer(req, req.prefill_island, d.i)
        self._dec_enqueue(d, pos, req.input_len + t)

    def _complete(self, pos: int) -> None:
        req = self.reqs[pos]
        req.tokens_out = req.output_len
        req.t_done = self.now
        self.completed += 1
        if self._on_complete is not None:
            self._on_complete(req)

    # ----------------------------------------------------------------- loop
    def run(self, *, max_events: int | None = None,
            progress: Callable[[int, int, float], None] | None = None) -> float:
        """Process every event; returns the time of the last one.  ``progress(completed,
        total, now)`` is called every :data:`PROGRESS_EVENTS` events."""
        reqs, heap = self.reqs, self._heap
        self._route_a = self.router.route_arrival
        self._route_d = self.router.route_decode
        self._dt = self.decisions.append
        # skip the hooks a router does not override (BaseRouter's are no-ops)
        cls = type(self.router)
        self._on_complete = (None if getattr(cls, "on_complete", None) is BaseRouter.on_complete
                             else self.router.on_complete)
        self._on_transfer = (None if getattr(cls, "on_transfer_done", None)
                             is BaseRouter.on_transfer_done else self.router.on_transfer_done)
        arrivals = [r.arrival for r in reqs]
        n_req = len(arrivals)
        ai = 0
        events = 0
        limit = max_events if max_events is not None else -1
        pop = heapq.heappop
        dec = self._units
        t_last = 0.0
        hold = self._hold
        while True:
            if ai < n_req and (not heap or arrivals[ai] <= heap[0][0]):
                self.now = t_last = arrivals[ai]
                self._arrive(ai)
                ai += 1
            elif heap:
                t, _, kind, a, b = pop(heap)
                self.now = t_last = t
                if kind == EPOCH:
                    d = dec[a]
                    if b == d.ver:
                        if d.chunked:
                            self._boundary_chunked(d)
                        else:
                            self._boundary(d)
                elif kind == PREFILL_DONE:
                    self._prefill_done(a, b)
                elif kind == NET:
                    self._net_event()
                elif kind == KICK:
                    d = dec[a]
                    d.kick = False
                    if not d.active:
                        if d.chunked:
                            self._boundary_chunked(d)
                        else:
                            self._boundary(d)
                elif kind == HOLD_RETRY:
                    self._hold_timer = False
                    self._drain_hold()
                    if self._hold and ai >= n_req and self._stuck():
                        break  # nothing can free capacity any more: leave them unfinished
                elif not self._route_decode(a, b) and ai >= n_req and self._stuck():
                    break
                # capacity may have been freed: offer the router's queue again
                if hold and (kind == EPOCH or kind == PREFILL_DONE):
                    self._drain_hold()
            else:
                break
            events += 1
            if events == limit:
                break
            if progress is not None and not events & _PROGRESS_MASK:
                progress(self.completed, n_req, self.now)
        self.events = events
        return t_last

    def _stuck(self) -> bool:
        """Nothing in progress could ever free capacity for held requests."""
        return self._work == 0 and len(self.net) == 0 and all(
            e[2] == HOLD_RETRY or e[2] == DECODE_RETRY for e in self._heap)


def _reset(r: SimRequest) -> None:
    nan = float("nan")
    r.prefill_island = r.decode_island = r.kv_tier = -1
    r.t_routed = r.t_prefill_start = r.t_prefill_end = r.t_kv_start = r.t_kv_end = nan
    r.t_first_token = r.t_done = nan
    r.kv_bytes = 0.0
    r.cached_tokens = r.tokens_out = r.preemptions = 0


def _timeline(busy: list[tuple[int, float, float, float]], n_isl: int, t_end: float,
              bin_s: float) -> tuple[np.ndarray, np.ndarray]:
    """Per-island busy seconds and busy fraction per bin, from weighted busy intervals.

    With ``B(t) = sum_j w_j (min(t, e_j) - min(t, s_j))`` the busy time up to ``t``, bin
    ``[t_a, t_b)`` holds ``B(t_b) - B(t_a)``; ``sum_j w_j min(t, x_j)`` for all edges at
    once is a sort, a cumulative sum and a search."""
    bins = max(1, int(math.ceil(t_end / bin_s))) if t_end > 0 else 1
    edges = np.arange(bins + 1, dtype=np.float64) * bin_s
    out = np.zeros((n_isl, bins))
    busy_s = np.zeros(n_isl)
    if not busy:
        return busy_s, out
    arr = np.array(busy, dtype=np.float64)
    isl = arr[:, 0].astype(np.int64)
    for i in np.unique(isl):
        sel = arr[isl == i]
        w = sel[:, 3]
        busy_s[i] = float(np.sum(w * (sel[:, 2] - sel[:, 1])))
        acc = _sum_min(edges, sel[:, 2], w) - _sum_min(edges, sel[:, 1], w)
        out[i] = np.diff(acc) / bin_s
    return busy_s, out


def _sum_min(t: np.ndarray, x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``sum_j w_j min(t, x_j)`` for every ``t``."""
    order = np.argsort(x)
    xs, ws = x[order], w[order]
    cwx = np.concatenate([[0.0], np.cumsum(ws * xs)])
    cw = np.concatenate([[0.0], np.cumsum(ws)])
    k = np.searchsorted(xs, t, side="right")  # x_j <= t contribute w_j x_j
    return cwx[k] + t * (cw[-1] - cw[k])


def simulate(cluster: SimCluster, requests: Sequence[SimRequest], router: Router, *,
             seed: int = 0, warmup_s: float = 0.0, util_bin_s: float = 1.0,
             prefix_cache_blocks: int | None = None, fair_sharing: bool = True,
             max_events: int | None = None,
             progress: Callable[[int, int, float], None] | None = None,
             prefill_token_budget: int = 8192, oracle_refresh_s: float = 1.0,
             prefill_lockstep: bool = True) -> SimResult:
    """Run ``requests`` through ``cluster`` under ``router`` (module docstring).
    ``prefill_lockstep`` runs an MoE model's prefill attention-DP groups in lockstep, as
    the engines do (module docstring); False lets each group run on its own.

    The request objects are filled in place (and returned in ``SimResult.requests`` in the
    order given).  ``seed`` seeds the router's generator (the engine itself draws
    nothing).  ``max_events`` stops early (requests in flight stay unfinished);
    ``progress(completed, total, simulated_time)`` is called every
    :data:`PROGRESS_EVENTS` events.
    """
    if util_bin_s <= 0:
        raise PlannerError("util_bin_s must be > 0")
    sim = Simulation(cluster, requests, router, seed=seed,
                     prefix_cache_blocks=prefix_cache_blocks, fair_sharing=fair_sharing,
                     prefill_token_budget=prefill_token_budget,
                     oracle_refresh_s=oracle_refresh_s, prefill_lockstep=prefill_lockstep)
    wall = time.perf_counter()
    router.reset(sim, np.random.default_rng(seed))
    t_end = sim.run(max_events=max_events, progress=progress)
    wall = time.perf_counter() - wall
    busy_s, timeline = _timeline(sim.busy, len(cluster.islands), t_end, util_bin_s)
    n = len(requests)
    rate = float("nan")
    if n >= 2:
        t = sorted(r.arrival for r in requests)
        if t[-1] > t[0]:
            rate = (n - 1) / (t[-1] - t[0])
    return SimResult(cluster=cluster, requests=list(requests),
                     router=getattr(router, "name", type(router).__name__), seed=seed,
                     t_end=t_end, warmup_s=float(warmup_s), busy_s=busy_s,
                     util_bin_s=float(util_bin_s), util_timeline=timeline,
                     decision_times_s=np.asarray(sim.decisions, dtype=np.float64),
                     wall_s=wall, events=sim.events, offered_rps=rate)


__all__ = ["PROGRESS_EVENTS", "Simulation", "simulate"]
