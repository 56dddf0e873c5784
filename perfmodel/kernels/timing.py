"""Operation times from fitted kernel models -- the functions both the perf model and
the calibration's held-out validation call, so what is validated is what is used.

Each takes the fitted model, the op's shape, and the *target* GPU's peak FLOP/s,
HBM bytes/s (``perfmodel.kernels.ops.peak_flops`` / ``hbm``) and SM count.  On the GPU
a model was fitted on these are the fitting GPU's own figures and the model reproduces
its measurements; on another GPU the ideal compute and memory times move with the
datasheet and the rest of the measured time is kept, scaled by the SM count
(:meth:`~perfmodel.kernels.models.EfficiencyModel.time_on`).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from perfmodel.kernels import ops
from perfmodel.kernels.grid import LogGrid
from perfmodel.kernels.models import (
    AllToAllModel,
    CurveModel,
    EfficiencyModel,
)


def gemm_time(model: EfficiencyModel, m, n, k, kind: str, peak: float, bandwidth: float,
              sms: float = 0.0):
    flops, nbytes = ops.gemm_work(m, n, k, kind)
    return model.time_on(flops, nbytes, peak, bandwidth, *ops.gemm_coords(m, n, k),
                         sms=sms)


def moe_time(model: EfficiencyModel, tokens, hidden, inter, topk, experts, ep, kind: str,
             peak: float, bandwidth: float, balanced: bool = False, sms: float = 0.0):
    """One MoE layer's grouped GEMMs (with routing and finalize, as measured) on one GPU
    of an ``ep``-GPU expert-parallel group that receives ``tokens`` tokens in all."""
    flops, nbytes = ops.moe_work(tokens, hidden, inter, topk, experts, ep, kind, balanced)
    return model.time_on(flops, nbytes, peak, bandwidth,
                         *ops.moe_coords(tokens, hidden, inter, topk, experts, ep),
                         sms=sms)


def imbalance(grid: LogGrid | None, tokens_per_expert, ep):
    """Busiest expert-parallel rank's slowdown over balanced routing (>= 1)."""
    if grid is None:
        return np.ones_like(np.asarray(tokens_per_expert, float))
    u = np.log2(np.maximum(np.asarray(tokens_per_expert, float), 2.0 ** -8))
    return np.exp(np.maximum(grid(u, np.log2(np.maximum(ep, 1.0))), 0.0))


def context_attention_time(model: EfficiencyModel, batch, seq, pairs, new_tokens, heads,
                           kv_heads, head_dim, kind: str, peak: float, bandwidth: float,
                           sms: float = 0.0):
    flops, nbytes = ops.context_attention_work(batch, pairs, new_tokens, heads, kv_heads,
                                               head_dim, kind)
    coords = ops.context_coords(seq, np.asarray(batch, float) * heads, head_dim)
    return model.time_on(flops, nbytes, peak, bandwidth, *coords, sms=sms)


def mla_context_time(model: EfficiencyModel, batch, seq, pairs, new_tokens, heads,
                     peak: float, bandwidth: float, sms: float = 0.0):
    flops, nbytes = ops.mla_context_work(batch, pairs, new_tokens, heads)
    coords = ops.context_coords(seq, np.asarray(batch, float) * heads, 128.0)[:2]
    return model.time_on(flops, nbytes, peak, bandwidth, *coords, sms=sms)


def decode_attention_time(model: EfficiencyModel, batch, context, heads, kv_heads, head_dim,
                          kv_kind: str, peak: float, bandwidth: float, sms: float = 0.0):
    """A decode step's attention over ``batch`` sequences of ``context`` cached tokens."""
    flops, nbytes = ops.decode_attention_work(batch, context, heads, kv_heads, head_dim,
                                              kv_kind)
    return model.time_on(flops, nbytes, peak, bandwidth,
                         *ops.decode_attention_coords(batch, context, heads, kv_heads,
                                                      head_dim), sms=sms)


def mla_decode_time(model: EfficiencyModel, batch, context, heads, kv_kind: str, peak: float,
                    bandwidth: float, sms: float = 0.0):
    flops, nbytes = ops.mla_decode_work(batch, context, heads, kv_kind)
    return model.time_on(flops, nbytes, peak, bandwidth,
                         *ops.mla_decode_coords(batch, context, heads), sms=sms)


#: NCCL's tuner constants for an all-reduce across servers (``src/graph/tuning.cc``,
#: NVIDIA/nccl at 5067397, 2026-06: ``baseLatencies`` and ``hwLatencies``, tree algorithm,
#: LL protocol -- the lowest-latency choice NCCL has for a small message across nodes):
#: a base latency, and one hop's latency on NVLink and on the network (microseconds).
NCCL_TREE_LL_BASE_US = 6.8
NCCL_NVLINK_LL_HOP_US = 0.6
NCCL_NET_LL_HOP_US = 5.0


def network_allreduce_floor(gpus: int, nodes: int) -> float:
    """Seconds an all-reduce of a small message takes across ``nodes`` servers of
    ``gpus / nodes`` GPUs each, by NCCL's own latency model of its tree algorithm:
    ``base + 2 ((gpus/nodes - 1) nvlink_hop + floor(log2 nodes) net_hop)`` -- 25.2 us for
    16 GPUs on two 8-GPU servers (NCCL issue 1453 logs its tuner's 25.9 us for 4 kB there).

    Why: the measured curves are one server's all-reduce, whose floor (about 3 us on
    H100 under TensorRT-LLM) is an NVLink one-shot kernel that cannot span servers; a
    group wider than the scale-up domain falls back to NCCL over the network, and a
    decode step's small all-reduces then pay that network latency, not the NVLink one.
    """
    if nodes <= 1:
        return 0.0
    per_node = gpus / nodes
    hops = 2.0 * ((per_node - 1.0) * NCCL_NVLINK_LL_HOP_US
                  + int(np.log2(nodes)) * NCCL_NET_LL_HOP_US)
    return (NCCL_TREE_LL_BASE_US + hops) * 1e-6


@lru_cache(maxsize=256)
def _nearest_count(counts: tuple[int, ...], gpus: int) -> int:
    """The measured GPU count nearest ``gpus`` in log2 (the larger on a tie)."""
    return min(counts, key=lambda c: (abs(np.log2(c) - np.log2(gpus)), -c))


def allreduce_time(curves: dict[int, CurveModel], nbytes, gpus: int, link_scale: float = 1.0,
                   nodes: int = 1):
    """All-reduce of ``nbytes`` across ``gpus`` GPUs on ``nodes`` scale-up domains.

    Measured GPU counts use their curve; another count uses the nearest measured one with
    its bandwidth term scaled by the ring factor 2(n-1)/n.  ``link_scale`` (fitting
    link / target link) stretches the bandwidth term for a GPU whose links differ from
    the one measured, or for a group that spans domains (the scale-out link); the latency
    floor stays the measured one inside a domain and is NCCL's network floor across
    domains (:func:`network_allreduce_floor`), whichever is larger.
    """
    if gpus <= 1 or not curves:
        return np.zeros_like(np.asarray(nbytes, float))
    near = _nearest_count(tuple(sorted(curves)), gpus)
    curve = curves[near]
    ring = (2.0 * (gpus - 1) / gpus) / (2.0 * (near - 1) / near)
    t = curve.time(nbytes)
    floor = curve.floor
    base = max(floor, network_allreduce_floor(gpus, nodes))
    return base + np.maximum(t - floor, 0.0) * ring * link_scale


def alltoall_time(model: AllToAllModel, bytes_per_gpu, link: float):
    """Dispatch or combine sending ``bytes_per_gpu`` over links of ``link`` bytes/s."""
    return model.t0_s + np.asarray(bytes_per_gpu, float) / (link * model.eff)
