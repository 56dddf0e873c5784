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


def allreduce_time(curves: dict[int, CurveModel], nbytes, gpus: int, link_scale: float = 1.0):
    """All-reduce of ``nbytes`` across ``gpus`` GPUs of one scale-up domain.

    Measured GPU counts use their curve; another count uses the nearest measured one with
    its bandwidth term scaled by the ring factor 2(n-1)/n.  ``link_scale`` (fitting
    link / target link) stretches the bandwidth term for a GPU whose links differ from
    the one measured; the latency floor stays.
    """
    if gpus <= 1 or not curves:
        return np.zeros_like(np.asarray(nbytes, float))
    counts = sorted(curves)
    near = min(counts, key=lambda c: (abs(np.log2(c) - np.log2(gpus)), -c))
    curve = curves[near]
    ring = (2.0 * (gpus - 1) / gpus) / (2.0 * (near - 1) / near)
    t = curve.time(nbytes)
    floor = float(np.exp(curve.log_t[0]))
    return floor + np.maximum(t - floor, 0.0) * ring * link_scale


def alltoall_time(model: AllToAllModel, bytes_per_gpu, link: float):
    """Dispatch or combine sending ``bytes_per_gpu`` over links of ``link`` bytes/s."""
    return model.t0_s + np.asarray(bytes_per_gpu, float) / (link * model.eff)
