"""Decode: step time for a batch, request time over its decode length, and throughput.

One decode step of an attention group holding B sequences at context length L, per layer:
  attention  = GEMM(B, attention weights / tp)
               + core(B L pair_flops / tp FLOPs, B L kv_bytes / kv_shards bytes)
               (MLA absorbed: attention in the 576-wide latent space; FlashMLA)
  dense MLP  = GEMM(B, 3 h I / tp)
  MoE        = GEMM(B, shared / tp) + routed experts, where the island's dp B tokens
               give m = dp B k ep / (E G) tokens per expert instance; an expert with no
               token is not read, so the expected weight traffic is (1 - e^-m) of the
               local experts' weights (Poisson arrivals of tokens at experts)
  comm       = all-to-all of B / tp tokens (overlapped) + tensor-parallel all-reduces.
Only the attention core depends on L and it is linear in L (both its FLOPs and its
bytes are proportional to B L), so a layer's time is max(a + b L, c) with c the
non-overlapped communication.  That gives the request time of seed 002 §4.2.3,
sum_{i=1}^{d} t_step(s + i), in closed form (no loop over tokens): see
:func:`_sum_max_linear`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perfmodel.calibration import Calibration
from perfmodel.comm import allreduce_time, alltoall_time
from perfmodel.hardware import GPU
from perfmodel.memory import attention_params_per_gpu, local_experts
from perfmodel.models import ModelSpec
from perfmodel.roofline import gemm_time, rates


@dataclass(frozen=True)
class StepModel:
    """Decode step time as a function of the context length L:

        t(L) = lin_fixed + lin_slope * L + count * max(fixed + slope * L, floor)

    The first two terms gather every layer without overlapped communication (and the LM
    head); the max is the MoE layers, whose all-to-all (``floor``) overlaps compute.
    Coefficients broadcast: (C, U) for U batch sizes, or gathered to (C, S).
    """

    lin_fixed: np.ndarray
    lin_slope: np.ndarray
    count: float
    fixed: np.ndarray
    slope: np.ndarray
    floor: np.ndarray

    def step_time(self, context):
        """Seconds for one step with every sequence at ``context`` tokens."""
        return (self.lin_fixed + self.lin_slope * context
                + self.count * np.maximum(self.fixed + self.slope * context, self.floor))

    def request_time(self, s, d):
        """Seconds to generate ``d`` tokens after an input of ``s`` tokens:
        sum_{i=1}^{d} step_time(s + i), exactly."""
        linear = self.lin_fixed * d + self.lin_slope * (d * s + 0.5 * d * (d + 1.0))
        if not self.count:
            return linear
        return linear + self.count * _sum_max_linear(self.fixed + self.slope * s, self.slope,
                                                     self.floor, d)

    def astype(self, dtype) -> StepModel:
        c = lambda a: np.asarray(a).astype(dtype)  # noqa: E731
        return StepModel(c(self.lin_fixed), c(self.lin_slope), self.count, c(self.fixed),
                         c(self.slope), c(self.floor))

    def take(self, index: np.ndarray) -> StepModel:
        """Coefficients at per-element batch indices: ``index`` (C, S) into axis 1 of the
        (C, U) coefficient arrays (flat ``np.take``: much faster than take_along_axis)."""
        rows, width = self.fixed.shape
        flat = index + (np.arange(rows, dtype=index.dtype) * width)[:, None]
        pick = lambda a: np.take(np.broadcast_to(a, (rows, width)).ravel(), flat)  # noqa: E731
        return StepModel(pick(self.lin_fixed), pick(self.lin_slope), self.count,
                         pick(self.fixed), pick(self.slope), pick(self.floor))


def _sum_max_linear(u, slope, floor, d):
    """sum_{i=1}^{d} max(u + slope i, floor) for slope >= 0, elementwise, in closed form.

    The first k terms sit on the floor, with k the number of i in [1, d] for which
    u + slope i < floor; the rest form an arithmetic series.  ``d`` may be fractional
    (a mean decode length): the formulas are the natural continuous extension.
    """
    # A decode step always reads KV, so slope > 0 except for an empty batch, whose time
    # is never used; the tiny floor keeps the division finite there.
    k = np.asarray(np.ceil((floor - u) / np.maximum(slope, 1e-30)) - 1.0)
    k = np.clip(k, 0.0, d, out=k if k.ndim else None)
    tail = (d - k) * u + (0.5 * slope) * ((d * (d + 1.0)) - k * (k + 1.0))
    tail += k * floor
    return tail


def step_model(gpu: GPU, model: ModelSpec, batch, tp, dp, ep, calib: Calibration
               ) -> StepModel:
    """Coefficients of the decode step time for ``batch`` sequences per attention group."""
    batch = np.asarray(batch, dtype=float)
    tp, ep = np.asarray(tp, float), np.asarray(ep, float)
    r = rates(gpu, model, ep, calib)
    wb = model.weight_bytes
    attn_fixed = gemm_time(batch, attention_params_per_gpu(model, tp), wb, r)
    flops_slope = batch * model.attn_pair_flops(absorbed=True) / tp / r.attention_flops
    bytes_slope = batch * model.kv_bytes_per_token_layer / model.kv_shards(tp) / r.hbm_bytes
    attn_slope = np.maximum(flops_slope, bytes_slope)
    serial = 2.0 * allreduce_time(batch, tp, gpu, model, calib) + (
        calib.layer_overhead_decode_us * 1e-6)

    dense_layers = model.dense_layers if model.is_moe else model.layers
    lin_fixed = dense_layers * (attn_fixed + serial + gemm_time(
        batch, model.dense_mlp_params / tp, wb, r)) + gemm_time(batch, model.embed_params / tp,
                                                                 2.0, r)
    lin_slope = dense_layers * attn_slope
    zero = np.zeros(np.broadcast_shapes(np.shape(attn_slope), np.shape(lin_fixed)))
    if not model.is_moe:
        return StepModel(lin_fixed + zero, lin_slope + zero, 0.0, zero, zero, zero)
    per_expert = batch * model.experts_per_token * ep / (model.routed_experts * tp)
    touched = 1.0 - np.exp(-per_expert)
    routed = local_experts(model, ep) * gemm_time(per_expert, model.expert_params, wb, r,
                                                  weight_fraction=touched)
    fixed = attn_fixed + gemm_time(batch, model.shared_params / tp, wb, r) + (
        routed * calib.expert_imbalance)
    comm = alltoall_time(batch / tp, ep, gpu, model, calib)
    moe = model.moe_layers
    lin_fixed = lin_fixed + moe * serial
    if calib.overlap_comm:
        return StepModel(lin_fixed + zero, lin_slope + zero, float(moe), fixed + zero,
                         attn_slope + zero, comm + zero)
    return StepModel(lin_fixed + moe * (fixed + comm) + zero,
                     lin_slope + moe * attn_slope + zero, 0.0, zero, zero, zero)
