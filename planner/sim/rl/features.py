"""State of seed 004's routing MDP (§5.3, A.9; notes §1.6), built from what a router sees.

    s_t = ( w_q, p, d̂ ,  [ P_i (n_p), D_i (n_d), C_i, T̂_c,i ]  for i = 1..m )

* ``w_q``: requests held at the router, capped at 4 × max batch = 512;
* ``p``, ``d̂``: the head-of-queue request's prompt tokens and predicted decode bucket;
* ``P_i``: requests at instance i still in their prefill phase (admitted or waiting
  there, no first token yet) per prompt bucket (one bucket by default);
* ``D_i``: requests at instance i in their decode phase per *predicted* decode bucket,
  edges 256 / 2048 tokens (A.9);
* ``C_i``: available capacity, the paper's unspecified g(batch, P, D) read as the
  tighter of the free batch slots and the free KV tokens, each as a fraction of the
  instance's maximum;
* ``T̂_c,i``: estimated time until the earliest of instance i's decode-phase requests
  finishes, (predicted tokens left, at least 1) × the instance's current decode step
  time (generated tokens as the router estimates them, see ``estimated_tokens``).

Dimension ``3 + m (n_p + n_d + 2)``: 27 for m = 4 (the paper's "6 per instance and 4 for
the queue" adds to 28; this split fits its definitions and its stated 27).  C and T̂_c
are rounded to 2 decimals as in the paper.  The network sees the features scaled to
O(1) (counts / max batch, p / 1000, bucket / (n_d − 1), w_q / cap, T̂_c / 10 s) -- an
input scaling the paper does not state; it does not change the information.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from planner.sim.protocol import ClusterView, SimRequest
from planner.sim.rl.estimates import estimated_tokens


@dataclass(frozen=True)
class StateConfig:
    """Shape of the state: instances, bucket edges (tokens), queue cap."""

    n_instances: int
    decode_edges: tuple[int, ...] = (256, 2048)
    prompt_edges: tuple[int, ...] = ()
    w_cap: int = 512
    max_prompt: int = 1000
    t_scale_s: float = 10.0

    @property
    def n_decode_buckets(self) -> int:
        return len(self.decode_edges) + 1

    @property
    def n_prompt_buckets(self) -> int:
        return len(self.prompt_edges) + 1

    @property
    def per_instance(self) -> int:
        return self.n_prompt_buckets + self.n_decode_buckets + 2

    @property
    def dim(self) -> int:
        return 3 + self.n_instances * self.per_instance

    @property
    def n_actions(self) -> int:
        """Route to instance 0..m−1, or a = m: no-op (hold at the router)."""
        return self.n_instances + 1


def decode_bucket(tokens: int, edges: tuple[int, ...]) -> int:
    """Index of the bucket ``[edges[k-1], edges[k])`` holding ``tokens``."""
    k = 0
    for e in edges:
        if tokens < e:
            return k
        k += 1
    return k


@dataclass
class InstanceScan:
    """Per-instance counts from one pass over the requests placed on it."""

    prefill: np.ndarray  # (n_p,)
    decode: np.ndarray  # (n_d,)
    running: int  # requests in decode phase
    min_left: float  # min predicted tokens left among them (inf if none)
    resident: float  # Σ (p + o) over every placed request (eqs. 1-2)
    pending: float  # Σ (1 − f)/T̂ over every placed request (eq. 3 term (a))
    step_s: float  # the instance's current decode step time


def scan_instance(reqs: Iterable[SimRequest], cfg: StateConfig, now: float, step_s: float,
                  t_hat: Mapping[int, float] | None = None) -> InstanceScan:
    """One pass over the (unfinished) requests on an instance; generated tokens are the
    router's estimate (:func:`planner.sim.rl.estimates.estimated_tokens`)."""
    pre = np.zeros(cfg.n_prompt_buckets)
    dec = np.zeros(cfg.n_decode_buckets)
    running, left, resident, pending = 0, math.inf, 0.0, 0.0
    for r in reqs:
        o = estimated_tokens(r, now, step_s)
        resident += r.input_len + o
        d_hat = r.predicted_output if r.predicted_output >= 0 else r.output_len
        if t_hat is not None:
            pending += (1.0 - min(o / max(d_hat, 1), 1.0)) / t_hat[r.rid]
        if r.t_first_token != r.t_first_token:  # NaN: prefill phase
            pre[decode_bucket(r.input_len, cfg.prompt_edges)] += 1
            continue
        dec[decode_bucket(d_hat, cfg.decode_edges)] += 1
        running += 1
        left = min(left, max(d_hat - o, 1.0))
    return InstanceScan(pre, dec, running, left, resident, pending, step_s)


def capacity(view: ClusterView, island: int) -> float:
    """C_i: the tighter of free batch slots and free KV tokens, as fractions."""
    isl = view.islands[island]
    slots = 1.0 - (view.running[island] + view.queued[island]) / max(isl.max_batch, 1)
    kv = view.kv_free_tokens[island] / max(isl.kv_capacity_tokens, 1)
    return round(float(min(max(slots, 0.0), max(kv, 0.0), 1.0)), 2)


def earliest_completion(scan: InstanceScan) -> float:
    """T̂_c,i in seconds (0 when nothing decodes there)."""
    if scan.running == 0:
        return 0.0
    return round(float(scan.min_left * scan.step_s), 2)


def build_state(cfg: StateConfig, view: ClusterView, head: SimRequest, targets: np.ndarray,
                scans: list[InstanceScan]) -> np.ndarray:
    """The raw state vector (paper units) for the head-of-queue request ``head``;
    ``targets[i]`` is the island of instance i and ``scans[i]`` its scan."""
    if len(targets) != cfg.n_instances:
        raise ValueError(f"state built for {cfg.n_instances} instances, got {len(targets)}")
    out = np.empty(cfg.dim, np.float64)
    d_hat = head.predicted_output if head.predicted_output >= 0 else head.output_len
    out[0] = min(view.router_queue, cfg.w_cap)
    out[1] = head.input_len
    out[2] = decode_bucket(d_hat, cfg.decode_edges)
    k = 3
    for i, isl in enumerate(targets):
        sc = scans[i]
        out[k:k + cfg.n_prompt_buckets] = sc.prefill
        k += cfg.n_prompt_buckets
        out[k:k + cfg.n_decode_buckets] = sc.decode
        k += cfg.n_decode_buckets
        out[k] = capacity(view, int(isl))
        out[k + 1] = earliest_completion(sc)
        k += 2
    return out


def feature_scale(cfg: StateConfig, max_batch: int) -> np.ndarray:
    """Per-feature multipliers turning the raw state into the network input."""
    per = np.concatenate([np.full(cfg.n_prompt_buckets + cfg.n_decode_buckets,
                                  1.0 / max(max_batch, 1)), [1.0, 1.0 / cfg.t_scale_s]])
    head = [1.0 / cfg.w_cap, 1.0 / cfg.max_prompt, 1.0 / max(cfg.n_decode_buckets - 1, 1)]
    return np.concatenate([head, np.tile(per, cfg.n_instances)])


__all__ = ["InstanceScan", "StateConfig", "build_state", "capacity", "decode_bucket",
           "earliest_completion", "feature_scale", "scan_instance"]
