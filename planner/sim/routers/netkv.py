"""NetKV: network-aware decode-instance selection (seed 003 Algorithm 1, §III–IV).

After island ``p`` prefills request ``r`` the router picks the decode island

    d* = argmin_{d ∈ F(r)} J(r, p, d),   J = T_xfer + T_queue + T_step        (eq. 5)

* ``F(r) = {d : M_d ≥ L_r + M_res}`` (Alg. 1 line 1): the island's free KV memory
  (tokens, the engine's ``kv_free_tokens``) must hold the whole prompt plus a reserve
  ``M_res`` (default: one more decode step of a full batch, ``max_batch`` tokens; the
  engine's KV capacity already excludes weights and activations).  The paper's
  ``mem_needed`` was lost; the full prompt is the conservative reading (notes §1.7).
  An empty ``F`` makes the paper reject the request; here the router returns ``HOLD``
  and the engine retries, since a simulator that drops requests would hide overload.
* ``T_xfer = ℓ_k + S_eff / B_eff`` (eq. 3), ``S_eff = S_KV(L_r − h(r, d)) / TP`` the
  per-shard bytes of the un-cached suffix (eq. 2, what one GPU-pair flow carries), and
  ``B_eff = B_k (1 − ĉ_k) / (1 + n_k(p))`` (eq. 4) with ``k = τ(p, d)``.
* ``T_queue = 0`` if ``b_d < B_max`` else ``q_d · t_iter(b_d)`` (eq. 6): a request joins
  at once if a slot is free, else waits one iteration per blocked predecessor.  Taken
  literally, a full batch with an empty queue costs 0; we keep the paper's form (the
  ``T_step`` term still sees the full batch).
* ``T_step = t_iter(b_d + 1)`` (eq. 7), from the island's step-time model at the
  request's own context length (the view does not expose the batch's mean context; the
  newcomer's length is the natural proxy and the same for every candidate).
* Load signals count this router's transfers still in flight to ``d`` (``a_d``, see
  :mod:`planner.sim.routers.cache_load`): ``q_d ← q_d + a_d`` in eq. 6 and the batch of
  eq. 7 is ``min(b_d + a_d, B_max)`` -- the batch the request actually joins.  Without
  this, every decision between two KV arrivals sees the same "idle" island and the
  transfers converge on its ingress (``count_inflight=False`` restores the literal
  reading; the validation doc reports both).

State (Alg. 1 line 14, §III-D): ``n[p, k]`` counts this router's KV transfers in flight
from ``p`` on tier ``k``; incremented at dispatch (capped at ``n_cap = 16``), decremented
in :meth:`on_transfer_done` (never below 0).  The oracle's ``ĉ`` is a snapshot refreshed
every ``Δ`` (default 1 s, §III-C) from ``view.congestion_estimate()``; between refreshes
the stale snapshot is used (Prop. 2 bounds the harm).

Variants (Exp. 6's ablation ladder, notes §2.4): ``netkv`` (full: counter and ĉ),
``netkv-static`` (ĉ ≡ 0, counter on), ``topo-only`` (ĉ ≡ 0, n ≡ 0: the static tier
map alone).  Ties (equal ``J``) are broken uniformly at random with the run's seeded
generator (the paper does not say; lowest id would bias load toward low indices).

The pure functions below (:func:`transfer_time`, :func:`queue_time`,
:func:`decode_costs`, :func:`staleness_bound`, :func:`near_beats_far`) carry the maths;
the router only gathers the view's state into arrays.
"""

from __future__ import annotations

import numpy as np

from planner.core.errors import PlannerError
from planner.fleet.network import DEFAULT_NETWORK, NetworkSpec
from planner.sim.protocol import HOLD, KV_PLACEMENT, ClusterView, SimRequest
from planner.sim.routers.cache_load import InflightTracker, feasible_decode, least_work_prefill

_TIE_EPS = 1e-12


# ---------------------------------------------------------------------- the cost model
def transfer_time(latency_s, bandwidth_bytes_s, c_hat, n_self, payload_bytes):
    """Eq. 3 with eq. 4: ``ℓ + S / (B (1 − ĉ) / (1 + n))`` (numpy-broadcast)."""
    b_eff = np.asarray(bandwidth_bytes_s, float) * (1.0 - np.asarray(c_hat, float))
    b_eff = b_eff / (1.0 + np.asarray(n_self, float))
    return np.asarray(latency_s, float) + np.asarray(payload_bytes, float) / b_eff


def queue_time(queued, running, max_batch, t_iter_now):
    """Eq. 6: 0 with a free batch slot (``b < B_max``), else ``q · t_iter(b)``."""
    running = np.asarray(running, float)
    full = running >= np.asarray(max_batch, float)
    return np.where(full, np.asarray(queued, float) * np.asarray(t_iter_now, float), 0.0)


def decode_costs(*, payload_bytes, tiers, bandwidth, latency, c_hat, n_self, queued, running,
                 max_batch, t_iter_now, t_iter_next) -> np.ndarray:
    """``J`` (eq. 5) for every candidate.  ``payload_bytes``, ``tiers``, ``queued``,
    ``running``, ``max_batch``, ``t_iter_*`` are per candidate; ``bandwidth``,
    ``latency``, ``c_hat``, ``n_self`` per tier (``n_self`` is the source's row)."""
    k = np.asarray(tiers, int)
    tx = transfer_time(np.asarray(latency)[k], np.asarray(bandwidth)[k],
                       np.asarray(c_hat)[k], np.asarray(n_self)[k], payload_bytes)
    return tx + queue_time(queued, running, max_batch, t_iter_now) + np.asarray(t_iter_next)


def staleness_bound(rho: float, c_fast: float, c_slow: float) -> float:
    """Prop. 2 (eq. 9): the oracle error ``δ`` below which a stale ``ĉ`` cannot invert the
    ranking of a fast tier over a slow one, ``[ρ(1 − c_fast) − (1 − c_slow)] / (1 + ρ)``
    with ``ρ = B_fast / B_slow``.  Negative: no tolerance (saturated fast tier)."""
    return (rho * (1.0 - c_fast) - (1.0 - c_slow)) / (1.0 + rho)


def near_beats_far(*, h_near: float, h_far: float, rho: float, beta_near: float = 1.0,
                   beta_far: float = 1.0, b_far: float = 1.0, q_far_minus_near: float = 0.0,
                   s_kv: float = 1.0) -> bool:
    """Prop. 1 (eq. 8): the near candidate has the lower ``J`` iff
    ``(1 − h_n)/(ρ β_n) < (1 − h_f)/β_f + B_far (Q_far − Q_near)/S_KV``, with
    ``β = (1 − c)/(1 + n)`` and ``Q`` the non-network terms (latency absorbed)."""
    lhs = (1.0 - h_near) / (rho * beta_near)
    rhs = (1.0 - h_far) / beta_far + b_far * q_far_minus_near / s_kv
    return lhs < rhs


# ---------------------------------------------------------------------- the router
class NetKVRouter(InflightTracker):
    """Seed 003 Algorithm 1 (module docstring).  Arrivals go to the prefill island with
    the least outstanding work (:func:`least_work_prefill`, the same rule as CLA*, so the
    comparison isolates the decode decision)."""

    capabilities = frozenset({KV_PLACEMENT})
    VARIANTS = {"netkv": (True, True), "netkv-static": (True, False),
                "topo-only": (False, False)}  # name -> (self-contention, live oracle)

    def __init__(self, variant: str = "netkv", *, network: NetworkSpec | None = None,
                 refresh_s: float = 1.0, n_cap: int = 16, reserve_tokens: int | None = None,
                 count_inflight: bool = True):
        if variant not in self.VARIANTS:
            raise PlannerError(f"NetKV variant '{variant}' unknown; known: "
                               f"{', '.join(self.VARIANTS)}")
        if refresh_s < 0 or n_cap < 0:
            raise PlannerError(f"NetKV refresh_s and n_cap must be >= 0, got {refresh_s}, "
                               f"{n_cap}")
        self.name = variant
        self.use_counter, self.use_oracle = self.VARIANTS[variant]
        self.network = network
        self.refresh_s = float(refresh_s)
        self.n_cap = int(n_cap)
        self.reserve_tokens = reserve_tokens
        self.count_inflight = bool(count_inflight)

    def reset(self, view: ClusterView, rng: np.random.Generator) -> None:
        super().reset(view, rng)
        # the engine's view carries its cluster (and so the fabric); a bare view does not
        cluster = getattr(view, "cluster", None)
        net = self.network or getattr(cluster, "network", None) or DEFAULT_NETWORK
        self._bw = np.array([t.bandwidth_bytes_s for t in net.tiers], float)
        self._lat = np.array([t.latency_s for t in net.tiers], float)
        isl = view.islands
        self._max_batch = np.array([i.max_batch for i in isl], float)
        n = len(isl)
        self._tier = np.array([[view.tier(a, b) for b in range(n)] for a in range(n)], int)
        self.n_self = np.zeros((n, len(self._bw)), int)
        self._pending: dict[int, tuple[int, int]] = {}
        self._c_hat = np.zeros(len(self._bw))
        self._t_snap = -np.inf

    # -------------------------------------------------------------- arrivals
    def route_arrival(self, req: SimRequest, view: ClusterView) -> int:
        return least_work_prefill(req, view, self.rng)

    # -------------------------------------------------------------- decode choice
    def oracle(self, view: ClusterView) -> np.ndarray:
        """The cached ``ĉ`` (zeros unless the live oracle is on), refreshed every Δ."""
        if not self.use_oracle:
            return np.zeros_like(self._bw)
        if view.now - self._t_snap >= self.refresh_s:
            self._c_hat = np.clip(np.asarray(view.congestion_estimate(), float), 0.0, 0.999)
            self._t_snap = view.now
        return self._c_hat

    def costs(self, req: SimRequest, src: int, view: ClusterView
              ) -> tuple[np.ndarray, np.ndarray]:
        """(feasible decode islands, their ``J``) for ``req`` prefilled on ``src``."""
        d = feasible_decode(req, view, self.reserve_tokens)  # Alg. 1 line 1
        if len(d) == 0:
            return d, np.zeros(0)
        L = req.input_len
        hits = np.array([min(view.prefix_hit_tokens(int(i), req.prefix_hashes), L)
                         for i in d], float)
        payload = (L - hits) * view.islands[src].kv_bytes_per_token
        running = np.asarray(view.running, float)[d]
        queued = self.waiting(view, d)
        # the batch the request joins: in-flight predecessors land first (cache_load doc)
        join = np.minimum(running + (queued - np.asarray(view.queued, float)[d]),
                          self._max_batch[d])
        pairs = zip(d.tolist(), running.astype(int).tolist(), join.astype(int).tolist(),
                    strict=True)
        t_now, t_next = np.array([(view.step_time(i, max(b, 1), L), view.step_time(i, j + 1, L))
                                  for i, b, j in pairs]).T
        n_row = self.n_self[src] if self.use_counter else np.zeros_like(self.n_self[src])
        j = decode_costs(payload_bytes=payload, tiers=self._tier[src, d], bandwidth=self._bw,
                         latency=self._lat, c_hat=self.oracle(view), n_self=n_row,
                         queued=queued, running=running,
                         max_batch=self._max_batch[d], t_iter_now=t_now, t_iter_next=t_next)
        return d, j

    def route_decode(self, req: SimRequest, src: int, view: ClusterView) -> int:
        d, j = self.costs(req, src, view)
        if len(d) == 0:
            return HOLD  # Alg. 1 line 2 rejects; we retry instead (module docstring)
        best = np.flatnonzero(j <= j.min() + _TIE_EPS)
        dst = int(d[best[0] if len(best) == 1 else self.rng.choice(best)])
        k = int(self._tier[src, dst])
        if self.use_counter:  # Alg. 1 line 14
            self.n_self[src, k] = min(self.n_self[src, k] + 1, self.n_cap)
        self._pending[req.rid] = (src, k)
        self._dispatched(req, dst)
        return dst

    def on_transfer_done(self, req: SimRequest, src: int, dst: int) -> None:
        super().on_transfer_done(req, src, dst)
        got = self._pending.pop(req.rid, None)
        if got is not None and self.use_counter:
            p, k = got
            self.n_self[p, k] = max(self.n_self[p, k] - 1, 0)


def make_netkv(**kw) -> NetKVRouter:
    return NetKVRouter("netkv", **kw)


def make_netkv_static(**kw) -> NetKVRouter:
    return NetKVRouter("netkv-static", **kw)


def make_topo_only(**kw) -> NetKVRouter:
    return NetKVRouter("topo-only", **kw)


__all__ = ["NetKVRouter", "decode_costs", "make_netkv", "make_netkv_static", "make_topo_only",
           "near_beats_far", "queue_time", "staleness_bound", "transfer_time"]
