"""Prefill time of one request (seed 002 §4.2.3: R_prefill = 1000 / t_ms per replica).

For an input of s tokens of which a fraction h hits the prefix cache, n = s (1 - h)
tokens are computed and they attend to all s positions causally, i.e.
sum_{i=hs+1}^{s} i = (s(s+1) - hs(hs+1)) / 2 query-key pairs per layer.

Per layer, on one GPU of an attention group of tp GPUs (dp groups prefill concurrently):
  attention  = GEMM(n tokens, attention weights / tp) + core(pairs * pair_flops / tp)
  dense MLP  = GEMM(n, 3 h I / tp)                              (dense layers)
  MoE        = GEMM(n, shared / tp) + routed experts            (MoE layers)
  comm       = expert all-to-all of n / tp tokens  [overlapped with compute, two
               micro-batches as DeepSeek does]  + tensor-parallel all-reduces.
With dp groups in flight and balanced routing, each GPU's routed-expert work per layer
is dp * n * k / G tokens, i.e. n k / tp per request: the request's routed FLOPs divided
by tp, padded to GEMM tiles at n k ep / (E tp) tokens per expert instance.
MLA prefill is computed non-absorbed (decompressed K/V), as DeepSeek does.

The per-length quantities (n, pairs, tile padding of n) are computed once as (1, S) rows
and combined with (C, 1) per-configuration coefficients, so a whole table costs a few
dozen array operations.
"""

from __future__ import annotations

import numpy as np

from perfmodel.calibration import Calibration
from perfmodel.comm import allreduce_time, alltoall_time
from perfmodel.hardware import GPU
from perfmodel.memory import attention_params_per_gpu, local_experts
from perfmodel.models import ModelSpec
from perfmodel.roofline import rates, tile_efficiency


def prefill_time(gpu: GPU, model: ModelSpec, s, tp, dp, ep, hit_rate: float,
                 calib: Calibration):
    """Seconds to prefill one request of ``s`` tokens on one attention group.

    ``s`` is a (1, S) row (or scalar) and ``tp, dp, ep`` (C, 1) columns; returns (C, S)
    in the dtype of ``s``.  A layer's weight GEMMs are taken as one roofline,
    max(padded rows x FLOPs / rate, weight bytes / bandwidth).
    """
    s = np.asarray(s)
    dtype = s.dtype if s.dtype == np.float32 else np.float64
    col = lambda x: np.asarray(x, dtype=np.float64).astype(dtype)  # noqa: E731
    tp, ep = np.asarray(tp, float), np.asarray(ep, float)
    r = rates(gpu, model, ep, calib)
    wb = model.weight_bytes
    n = s * (1.0 - hit_rate)
    cached = s * hit_rate
    pairs = 0.5 * (s * (s + 1.0) - cached * (cached + 1.0))
    padded_n = n / tile_efficiency(n, r.tile)  # rows a dense GEMM really computes

    attn_params = attention_params_per_gpu(model, tp)
    core = col(model.attn_pair_flops(absorbed=False) / (tp * r.attention_flops))
    ar0 = 2.0 * allreduce_time(0.0, tp, gpu, model, calib)
    ar_slope = col(2.0 * allreduce_time(1.0, tp, gpu, model, calib) - ar0)
    fixed = col(ar0 + calib.layer_overhead_prefill_us * 1e-6)

    def layer_gemms(params):  # all weight GEMMs of a layer over the request's tokens
        return np.maximum(padded_n * col(2.0 * params / r.linear_flops),
                          col(params * wb / r.hbm_bytes))

    attn_core = pairs * core
    serial = n * ar_slope + fixed
    dense_layers = model.dense_layers if model.is_moe else model.layers
    total = dense_layers * (layer_gemms(attn_params + model.dense_mlp_params / tp)
                            + attn_core + serial)
    if model.is_moe:
        per_expert = n * col(model.experts_per_token * ep / (model.routed_experts * tp))
        routed_rows = np.ceil(per_expert / r.tile)
        routed_rows *= r.tile
        routed = np.maximum(routed_rows * col(2.0 * model.expert_params / r.linear_flops),
                            col(model.expert_params * wb / r.hbm_bytes))
        routed *= col(local_experts(model, ep) * calib.expert_imbalance)
        compute = layer_gemms(attn_params + model.shared_params / tp) + attn_core + routed
        a2a_0 = alltoall_time(0.0, ep, gpu, model, calib)
        comm = n * col((alltoall_time(1.0, ep, gpu, model, calib) - a2a_0) / tp) + col(a2a_0)
        layer = np.maximum(compute, comm) if calib.overlap_comm else compute + comm
        total += model.moe_layers * (layer + serial)
    lm_head = col(2.0 * model.embed_params / tp / r.linear_flops)  # last position only
    return total + lm_head
