"""The PETALS baseline of seed 000 (§4 "Benchmarks"; reading guide §4.1).

The paper only says that PETALS servers join in random order and take the most
under-served blocks.  The details follow the guide, which took them from the PETALS
source as replicated in the authors' simulator:

* block count (``_choose_num_blocks``):
  ``m = min(⌊(M − autograd) / (s_m + cache_per_block)⌋, L)`` with
  ``autograd = 2 GiB · d_model / 14336`` and a *fixed* cache reservation
  ``cache_per_block = kv_bytes_per_token · attn_cache_tokens`` (4096 tokens, 16384 with
  grouped KV) whatever the concurrency — e.g. 53 blocks of BLOOM-176B on an A100 at
  ``M = 86.13 GB`` (§4: "PETALS places 53 blocks on A100 and 4 blocks on MIG");
* start block (``_choose_best_start``): the ``a`` whose *sorted* window of per-block
  throughputs is lexicographically smallest (smallest ``a`` on ties);
* server throughput credited to its blocks: ``min(forward_rps / ((1+m)/2), network_rps)``;
* routing: a shortest path with weights ``rtt/2 + 18 ms + τ_j k_ij`` per hop (client→first
  server uses the client RTT, server→server the server RTT), ``+10 s`` when the next
  server already hosts its session capacity ``⌊cache_per_block / s_c⌋``, and
  ``rtt/2`` for the last hop back to the client.  These weights are heuristics that do
  not add up to the real time (footnote 10); the real time is still eq. (1).

Readings and defaults of ours: the code adds the 10 s penalty only when the active
count *equals* the capacity; we add it whenever it is reached or exceeded.  Without
measured ``forward_rps``/``network_rps`` we credit ``l^I / τ^I_j`` (prefill tokens per
second through one block) and an unlimited network.  PETALS's cache slots are its
reservation ``⌊m · cache_per_block / s_c⌋`` (as in the code); the "Optimized Number"
ablation (CG-BP's ``m_j``) uses the real leftover memory instead.  PETALS's rebalancing
is not modelled (neither does the authors' simulator).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np

from planner.inner.blocks.instance import Instance, safe_floor
from planner.inner.blocks.online import OnlineState
from planner.inner.blocks.routing import Placement, link_matrix, memory_slots, shortest_path

GIB = 2**30


@dataclass(frozen=True)
class PetalsConfig:
    """Constants of the PETALS heuristics (defaults from PETALS / the authors' code)."""

    hidden_size: int
    num_kv_groups: int = 1
    kv_bytes_per_token: float | None = None
    attn_cache_tokens: int | None = None
    autograd_bytes: float | None = None
    hop_overhead_s: float = 0.018
    alloc_penalty_s: float = 10.0
    forward_rps: np.ndarray | None = None
    network_rps: np.ndarray | None = None

    def cache_per_block(self) -> float:
        """Fixed attention-cache reservation per hosted block (bytes)."""
        tokens = self.attn_cache_tokens or (16384 if self.num_kv_groups > 1 else 4096)
        if self.kv_bytes_per_token is not None:
            return float(self.kv_bytes_per_token * tokens)
        return float((2 * self.hidden_size * tokens // self.num_kv_groups) * 2)

    def autograd(self) -> float:
        if self.autograd_bytes is not None:
            return float(self.autograd_bytes)
        return 2 * GIB / 14336 * self.hidden_size


def petals_block_count(memory: np.ndarray | float, block_bytes: float, n_blocks: int,
                       config: PetalsConfig, max_blocks: np.ndarray | None = None) -> np.ndarray:
    """PETALS ``_choose_num_blocks``: ``min(⌊(M − autograd)/(s_m + cache_per_block)⌋, L)``."""
    per_block = block_bytes + config.cache_per_block()
    m = safe_floor((np.asarray(memory, dtype=float) - config.autograd()) / per_block)
    m = np.clip(m, 0, n_blocks).astype(np.int64)
    return m if max_blocks is None else np.minimum(m, max_blocks)


def best_start(block_throughput: np.ndarray, count: int) -> int:
    """PETALS ``_choose_best_start``: lexicographically smallest sorted window (0-based)."""
    windows = np.sort(np.lib.stride_tricks.sliding_window_view(block_throughput, count), axis=1)
    return int(np.lexsort(windows.T[::-1])[0])


def server_throughput(count: np.ndarray, forward_rps: np.ndarray,
                      network_rps: np.ndarray) -> np.ndarray:
    """PETALS ``get_server_throughput``: ``min(forward_rps / ((1+m)/2), network_rps)``."""
    return np.minimum(forward_rps / ((1.0 + count) / 2.0), network_rps)


def join_order(n_servers: int, seed: int) -> np.ndarray:
    """The random order in which servers join the swarm (§4.2: "in a random order")."""
    return np.random.default_rng(seed).permutation(n_servers)


@dataclass(frozen=True)
class PetalsPlacement:
    placement: Placement
    order: tuple[int, ...]
    session_capacity: np.ndarray


def petals_placement(
    inst: Instance,
    config: PetalsConfig,
    order: Sequence[int] | np.ndarray,
    *,
    counts: np.ndarray | None = None,
) -> PetalsPlacement:
    """Servers join in ``order``; each takes PETALS's count and best start.

    ``counts`` overrides the block counts (the "Optimized Number" ablation, §4.2);
    passing CG-BP's order as ``order`` gives "Optimized Order".
    """
    n_blocks = inst.n_blocks
    reserve = config.cache_per_block()
    if counts is None:
        m = petals_block_count(inst.memory, inst.block_bytes, n_blocks, config, inst.max_blocks)
        slots = safe_floor(m * reserve / inst.cache_bytes).astype(np.int64)
        session_cap = np.full(inst.n_servers, int(safe_floor(reserve / inst.cache_bytes)))
    else:
        m = np.minimum(np.asarray(counts, dtype=np.int64), cast(np.ndarray, inst.max_blocks))
        slots = memory_slots(inst, m)
        with np.errstate(divide="ignore", invalid="ignore"):
            session_cap = np.where(m > 0, slots // np.maximum(m, 1), 0)
    fwd = config.forward_rps
    if fwd is None:
        with np.errstate(divide="ignore"):
            fwd = np.where(inst.tau_in > 0, max(inst.input_len, 1) / inst.tau_in, np.inf)
    net = np.full(inst.n_servers, np.inf) if config.network_rps is None else config.network_rps
    thr = server_throughput(m.astype(float), np.asarray(fwd, float), np.asarray(net, float))
    block_thr = np.zeros(n_blocks)
    first = np.zeros(inst.n_servers, dtype=np.int64)
    for j in order:
        if m[j] <= 0:
            continue
        start = best_start(block_thr, int(m[j]))
        block_thr[start : start + m[j]] += thr[j]
        first[j] = start + 1
    placement = Placement(first, m.astype(np.int64), slots)
    return PetalsPlacement(placement, tuple(int(j) for j in order), session_cap)


def petals_router(config: PetalsConfig, session_capacity: np.ndarray):
    """PETALS's per-request path choice as a :data:`~.online.Router` for :func:`simulate`."""

    def route(inst: Instance, placement: Placement, client: int, t: float,
              state: OnlineState) -> tuple[int, ...]:
        n_s = inst.n_servers
        ok, _ = link_matrix(placement, inst.n_blocks)
        busy = np.array([state.count(j, t) >= session_capacity[j] for j in range(n_s)])
        # Instance.__post_init__ fills rtt_ss and rtt_cs
        rtt_ss, rtt_cs = cast(np.ndarray, inst.rtt_ss), cast(np.ndarray, inst.rtt_cs)
        hop = np.vstack([rtt_ss, rtt_cs[client][None, :]]) / 2.0
        extra = hop + np.where(busy, config.alloc_penalty_s, 0.0)[None, :]
        extra = np.where(ok, extra, np.inf)
        _, path = shortest_path(placement, inst.n_blocks, np.full(n_s, config.hop_overhead_s),
                                inst.tau, extra=extra, sink=rtt_cs[client] / 2.0)
        return path

    return route
