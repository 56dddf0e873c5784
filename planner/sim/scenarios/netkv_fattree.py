"""Seed 003's evaluation cluster: a 64-GPU four-tier fat-tree serving Llama-3-70B (§VI-A,
notes §4.2).

* Topology: 2 pods x 2 racks/pod x 2 servers/rack x 8 H100 = 64 GPUs.  Global numbering:
  pod ``p`` holds racks ``2p, 2p+1``; rack ``r`` holds nodes ``2r, 2r+1``.
* Model: ``llama-3.1-70b`` from the catalog -- the Llama-3-70B architecture (80 layers,
  8 KV heads of 128) with bf16 weights and bf16 KV cache.  bf16 and fp16 are both 2 bytes,
  so the KV cache is the paper's FP16 one: 327,680 B = 320 KB per token in aggregate,
  81,920 B (80 KB) per TP-4 shard (eq. 1).
* 16 TP-4 instances (two per server): 4 *prefill* instances fill rack 0 (nodes 0-1); 4
  *decode* instances fill rack 1 (same pod: tier 2 from every prefill instance) and 8 fill
  pod 1 (tier 3).  This is the placement the paper's Table VI implies (0 % of transfers
  on tiers 0/1; CLA* splits tier 2 : tier 3 ≈ 4 : 8).
* Network: :data:`planner.fleet.network.SEED003_NETWORK`'s per-GPU-pair flow bandwidths (B0 =
  300 GB/s, B1 = 50, B2 = 25, B3 = 12.5 Gb/s; µs latencies), i.e. a 50 Gb/s access link
  with 2:1 oversubscription at the aggregation tier and 4:1 at the core.  Exp. 3's knobs:
  ``cross_pod_oversub`` sets ``B3 = min(B1 / o, B2)`` (4 = the default); ``background`` is the
  external utilisation ``c`` of the *network* tiers 1-3 (NVLink carries none).
* Decode batch ``B_max``: lost from the paper; 64 sequences per instance by default
  (``decode_batch``).  The KV capacity comes from the perf model (H100 80 GB, 35 GB of
  weights per GPU: ≈ 448 K tokens per instance, the paper's "45 GB free").

:func:`analytic_capacity` is the load calibration the validation uses (seed 003 expresses
load as a % of a "per-workload calibrated capacity" without giving the procedure);
:func:`run` runs one (profile, router, seed) cell and :func:`serial_metrics` reduces it
to seed 003's figures.

**TTFT under the serial model.**  Seed 003 measures TTFT at the decode instance:
prefill queueing + prefill + ``T_xfer`` + ``T_queue`` + ``T_step`` (§IV; the first token
comes out of the first decode step after the whole KV has landed).  The engine follows
its own convention (``t_first_token`` = admission on the decode island, no first step), so
:func:`serial_metrics` measures ``t_kv_end − arrival`` (everything up to the landing of
the KV) plus the decode-side wait when the engine records the admission time
(``SimRequest.t_decode_start``, if present), plus one decode step (``T_step``) at half
the island's maximum batch.  Without the admission time the decode-side wait is left
out; at the loads used here decode islands are far from their batch and memory limits,
so it is at most one iteration.  TBT is the decode
phase's mean time per token, ``(t_done − t_kv_end) / (output − 1)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from planner.core.errors import PlannerError
from planner.fleet.network import SEED003_NETWORK, Location, NetworkSpec
from planner.sim.cluster import make_cluster, make_island, step_time
from planner.sim.engine import simulate
from planner.sim.protocol import SimCluster, SimIsland, SimRequest, SimResult
from planner.sim.routers.registry import make_router
from planner.sim.workloads_synth import PROFILES, SynthConfig, generate

MODEL = "llama-3.1-70b"
GPU = "H100-SXM"
TP = 4


def netkv_network(*, background: float = 0.0, cross_pod_oversub: float = 4.0) -> NetworkSpec:
    """The default fat-tree with background ``c`` on tiers 1-3 and
    ``B3 = min(B1 / o, B2)``: a cross-pod flow also crosses its rack's aggregation
    uplinks, so an idle cross-pod path is never faster than a same-pod one."""
    if not 0.0 <= background < 1.0:
        raise PlannerError(f"background utilisation must be in [0, 1), got {background}")
    if cross_pod_oversub <= 0:
        raise PlannerError(f"cross_pod_oversub must be > 0, got {cross_pod_oversub}")
    t = list(SEED003_NETWORK.tiers)
    b3 = min(t[1].bandwidth_bytes_s / cross_pod_oversub, t[2].bandwidth_bytes_s)
    t[3] = replace(t[3], bandwidth_bytes_s=b3)
    for k in (1, 2, 3):
        t[k] = replace(t[k], background=float(background))
    return replace(SEED003_NETWORK, tiers=tuple(t))


def _locations() -> tuple[list[Location], list[Location], list[Location]]:
    """(prefill, tier-2 decode, tier-3 decode) locations, two instances per node."""
    def loc(node: int) -> Location:
        rack = node // 2
        return Location(rack // 2, rack, node)

    pre = [loc(n) for n in (0, 0, 1, 1)]
    near = [loc(n) for n in (2, 2, 3, 3)]
    far = [loc(n) for n in (4, 4, 5, 5, 6, 6, 7, 7)]
    return pre, near, far


def netkv_fattree(*, background: float = 0.0, cross_pod_oversub: float = 4.0,
                  decode_batch: int = 64, max_input: int = 131_072) -> SimCluster:
    """The 16-instance cluster (module docstring).  ``max_input`` bounds the prefill
    table (the Mooncake-like long-context profile reaches 125,546 tokens)."""
    pre, near, far = _locations()
    islands: list[SimIsland] = []
    for k, locn in enumerate(pre):
        islands.append(make_island(len(islands), f"prefill{k}", GPU, TP, "prefill", TP, 1, 1,
                                   MODEL, batch=decode_batch, location=locn,
                                   max_input=max_input))
    for k, locn in enumerate(near + far):
        tag = "pod" if k < len(near) else "xpod"
        islands.append(make_island(len(islands), f"decode{k}-{tag}", GPU, TP, "decode", TP, 1,
                                   1, MODEL, batch=decode_batch, location=locn,
                                   max_input=max_input))
    net = netkv_network(background=background, cross_pod_oversub=cross_pod_oversub)
    return make_cluster(islands, net, MODEL, label="seed003-fattree-64xH100")


def analytic_capacity(cluster: SimCluster, requests: Sequence[SimRequest]) -> float:
    """Requests/s the compute can sustain for this request mix (the load calibration).

    ``min(prefill, decode)`` with prefill ``Σ_p 1 / E[t_pf,p(L)]`` (no prefix discount:
    conservative) and decode ``Σ_d n_d / (E[out] · t_iter,d(n_d, E[L + out/2]))``, where
    ``n_d = min(B_max, KV capacity / E[L + out])`` is the concurrency the island's batch
    and memory allow.  The network is deliberately left out: 100 % is what an ideal
    (infinitely fast) fabric would allow, so the network's cost shows up as lost headroom.
    """
    if not requests:
        raise PlannerError("capacity needs at least one request")
    L = np.array([r.input_len for r in requests], float)
    out = np.array([r.output_len for r in requests], float)
    pre = dec = 0.0
    for isl in cluster.islands:
        if isl.role in ("prefill", "both"):
            idx = np.minimum(L.astype(int), len(isl.prefill_s) - 1)
            pre += 1.0 / float(np.mean(isl.prefill_s[idx]))
        if isl.role in ("decode", "both"):
            n = min(isl.max_batch, isl.kv_capacity_tokens / float(np.mean(L + out)))
            b = max(int(n), 1)
            t = step_time(isl.step_coeffs[min(b, len(isl.step_coeffs) - 1)],
                          float(np.mean(L + out / 2)))
            dec += n / (float(np.mean(out)) * t)
    return min(pre, dec) if pre and dec else max(pre, dec)


def prefix_cache_blocks(cluster: SimCluster, block_tokens: int = 512) -> int:
    """LRU prefix-cache size per island: as many 512-token blocks as its KV memory holds
    (the cache is the HBM's KV pool seen as reusable blocks, seed 003 §VI-B)."""
    return max(min(i.kv_capacity_tokens for i in cluster.islands) // block_tokens, 1)


def run(cluster: SimCluster, profile: str, router: str, *, seed: int = 0,
        n_requests: int = 400, load: float = 0.7, fixed_input: int | None = None,
        router_options: dict | None = None, capacity: float | None = None,
        oracle_refresh_s: float = 1.0) -> tuple[SimResult, float]:
    """One simulation: ``n_requests`` Mooncake-like requests of ``profile`` at ``load`` x
    the analytic capacity of that request mix (computed from a 2,000-request sample of
    seed 10,000 unless ``capacity`` is given).  Returns (result, offered rate)."""
    if load <= 0:
        raise PlannerError(f"load must be > 0, got {load}")
    if capacity is None:
        sample = generate(SynthConfig(profile=profile, n_requests=2000,
                                      fixed_input=fixed_input), seed=10_000)
        capacity = analytic_capacity(cluster, sample)
    rate = load * capacity
    reqs = generate(SynthConfig(profile=profile, n_requests=n_requests, rate=rate,
                                fixed_input=fixed_input), seed=seed)
    res = simulate(cluster, reqs, make_router(router, **(router_options or {})), seed=seed,
                   prefix_cache_blocks=prefix_cache_blocks(cluster),
                   warmup_s=0.1 * reqs[-1].arrival, oracle_refresh_s=oracle_refresh_s)
    return res, rate


def serial_metrics(result: SimResult) -> dict[str, float]:
    """Seed 003's figures of one run (module docstring): TTFT mean/p50/p99, TBT, SLO
    attainment at 2/5/10 s, mean KV-transfer time, tier shares, decode-side prefix hit
    rate, over the requests that arrived after ``warmup_s``; unfinished requests count
    as SLO misses and are reported."""
    reqs = [r for r in result.requests if r.arrival >= result.warmup_s]
    if not reqs:
        raise PlannerError("no request arrived after the warm-up")
    isl = result.cluster.islands
    ttft, tbt, xfer, tiers, hit = [], [], [], [], []
    unfinished = 0
    for r in reqs:
        if not r.t_kv_end == r.t_kv_end or not r.t_done == r.t_done:
            unfinished += 1
            continue
        admit = getattr(r, "t_decode_start", float("nan"))
        d = isl[r.decode_island]
        b = max(1, min(d.max_batch // 2, len(d.step_coeffs) - 1))
        first = (admit if admit == admit else r.t_kv_end) + step_time(d.step_coeffs[b],
                                                                      r.input_len)
        ttft.append(first - r.arrival)
        if r.output_len > 1:
            tbt.append((r.t_done - r.t_kv_end) / (r.output_len - 1))
        xfer.append(r.t_kv_end - r.t_kv_start)
        tiers.append(r.kv_tier)
        hit.append(r.cached_tokens / r.input_len)
    t = np.asarray(ttft)
    n = len(reqs)
    shares = np.bincount(np.asarray(tiers, int), minlength=4) / max(len(tiers), 1)
    out = {"n": float(n), "unfinished": float(unfinished),
           "ttft_mean": float(t.mean()) if len(t) else float("nan"),
           "ttft_p50": float(np.percentile(t, 50)) if len(t) else float("nan"),
           "ttft_p99": float(np.percentile(t, 99)) if len(t) else float("nan"),
           "tbt_ms": 1e3 * float(np.mean(tbt)) if tbt else float("nan"),
           "xfer_ms": 1e3 * float(np.mean(xfer)) if xfer else float("nan"),
           "hit": float(np.mean(hit)) if hit else float("nan")}
    for slo in (2.0, 5.0, 10.0):
        out[f"slo{slo:g}"] = float(np.sum(t <= slo)) / n
    for k in range(4):
        out[f"tier{k}"] = float(shares[k])
    return out


def profile_slo(profile: str) -> float:
    """Seed 003's TTFT SLO of a profile (chatbot 2 s, RAG 5 s, long-context 10 s)."""
    return PROFILES[profile][2]


__all__ = ["GPU", "MODEL", "TP", "analytic_capacity", "netkv_fattree", "netkv_network",
           "prefix_cache_blocks", "profile_slo", "run", "serial_metrics"]
