"""Decode: the step time of a batch, its request time over the decode length, and the
per-operation breakdown -- one step time that latency (TPOT) and throughput share.

One decode step of an attention group holding B sequences at context L (per GPU):

    step(L) = head + gap + sum over layers of
        dense layer:  X_d + attn(L)                                  (no overlap)
        MoE layer:    max(X_m + attn(L), comm)   with micro-batch overlap, or
                      X_m + attn(L) + comm       without
with X the layer's non-attention work (projections, norms, all-reduces, MLP or shared
and routed experts at the busiest rank's load), attn(L) the attention kernel, comm the
expert all-to-all (dispatch + combine), head the LM head, gap the engine's unhidden
host time per step (``perfmodel.engines``).  With micro-batch overlap the compute runs
as two half batches and loses the SMs the communication kernels occupy.

The attention kernel time, read from the measured grid at contexts 64, 1024 and
16384, is represented as ``max(A, C + S L)`` -- a floor while the kernel is too short
to fill the GPU, then affine (exact at 1k and 16k).  Every layer is then
``max(fixed + slope L, floor)``, so the request time of seed 002 §4.2.3,
sum_{i=1}^{d} step(s + i), stays a closed form (:func:`_sum_max_linear`).

Attention-DP stragglers (MoE models): the step waits for the slowest of the dp
attention groups, which meet at every MoE layer.  The engines balance the number of
sequences per group (SGLang's DP-attention router, TRT-LLM's ``attention_dp_config``),
but not their contexts: a group's attention work is the sum of its B sequences'
contexts, so with contexts of coefficient of variation cv
the slowest of dp groups carries ``1 + z_dp cv / sqrt(B)`` of the mean, z_dp =
sqrt(2 ln dp) the expected maximum of dp standard normals (``CONTEXT_CV``).

Multi-token prediction (DeepSeek MTP): each step verifies 1 + k tokens per sequence
(k drafts, GEMM rows and attention queries scale by 1 + k) and runs the MTP module k
times; it yields 1 + a + ... + a^k tokens on average for acceptance rate a.  The
StepModel is per generated token (the step divided by that yield), so TPOT, request
time and throughput all use it unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields, replace
from typing import Any, cast

import numpy as np

from perfmodel import layers
from perfmodel.calibration import Calibration
from perfmodel.engines import EAGER_LAYER_S
from perfmodel.hardware import GPU
from perfmodel.kernels.library import kernels_for
from perfmodel.models import ModelSpec

_ANCHORS = (64.0, 1024.0, 16384.0)


@dataclass(frozen=True)
class StepModel:
    """Seconds per generated token as a function of the context L:

        t(L) = lin_fixed + d_count max(d_fixed + d_slope L, d_floor)
                         + m_count max(m_fixed + m_slope L, m_floor)

    (dense layers d, MoE layers m).  Coefficients broadcast: (C, U) for U batch sizes,
    or gathered to (C, S).
    """

    lin_fixed: np.ndarray
    d_count: float
    d_fixed: np.ndarray
    d_slope: np.ndarray
    d_floor: np.ndarray
    m_count: float
    m_fixed: np.ndarray
    m_slope: np.ndarray
    m_floor: np.ndarray

    def step_time(self, context):
        """Seconds per generated token with every sequence at ``context`` tokens."""
        t = self.lin_fixed + self.d_count * np.maximum(self.d_fixed + self.d_slope * context,
                                                       self.d_floor)
        if self.m_count:
            t = t + self.m_count * np.maximum(self.m_fixed + self.m_slope * context,
                                              self.m_floor)
        return t

    def request_time(self, s, d):
        """Seconds to generate ``d`` tokens after an input of ``s`` tokens:
        sum_{i=1}^{d} step_time(s + i), exactly."""
        total = self.lin_fixed * d + self.d_count * _sum_max_linear(
            self.d_fixed + self.d_slope * s, self.d_slope, self.d_floor, d)
        if self.m_count:
            total = total + self.m_count * _sum_max_linear(self.m_fixed + self.m_slope * s,
                                                           self.m_slope, self.m_floor, d)
        return total

    def _map(self, fn) -> StepModel:
        vals = {f.name: (getattr(self, f.name) if f.name.endswith("count")
                         else fn(getattr(self, f.name))) for f in fields(self)}
        return StepModel(**vals)

    def astype(self, dtype) -> StepModel:
        return self._map(lambda a: np.asarray(a).astype(dtype))

    def take(self, index: np.ndarray) -> StepModel:
        """Coefficients at per-element batch indices: ``index`` (C, S) into axis 1 of the
        (C, U) coefficient arrays (flat ``np.take``: much faster than take_along_axis)."""
        rows, width = np.shape(self.lin_fixed)
        flat = index + (np.arange(rows, dtype=index.dtype) * width)[:, None]
        return self._map(lambda a: np.take(np.broadcast_to(a, (rows, width)).ravel(), flat))

    def row(self, c: int, b: int) -> tuple[float, ...]:
        """The 9 coefficients of configuration row ``c`` at batch index ``b`` (the form the
        simulator keeps per batch size)."""
        out = []
        for f in fields(self):
            v = getattr(self, f.name)
            out.append(float(v) if f.name.endswith("count")
                       else float(np.broadcast_to(v, np.shape(self.lin_fixed))[c, b]))
        return tuple(out)


def _sum_max_linear(u, slope, floor, d):
    """sum_{i=1}^{d} max(u + slope i, floor) for slope >= 0, elementwise, in closed form.

    The first k terms sit on the floor, with k the number of i in [1, d] for which
    u + slope i < floor; the rest form an arithmetic series.  ``d`` may be fractional
    (a mean decode length): the formulas are the natural continuous extension.
    """
    k = np.asarray(np.ceil((floor - u) / np.maximum(slope, 1e-30)) - 1.0)
    k = np.clip(k, 0.0, d, out=k if k.ndim else None)
    tail = (d - k) * u + (0.5 * slope) * ((d * (d + 1.0)) - k * (k + 1.0))
    tail += k * floor
    return tail


#: Coefficient of variation of the contexts in a decode batch (serving traces: prompt
#: lengths spread about as much as their mean; a batch mixes requests at all stages).
CONTEXT_CV = 0.3


def straggler_factor(batch, dp, context_cv: float = CONTEXT_CV, moe: bool = True):
    """Slowest of ``dp`` attention groups relative to the mean (see the module doc).

    Only a MoE model's groups wait for each other (every MoE layer exchanges or gathers
    their tokens); a dense model's data-parallel groups are independent replicas behind
    a router, each stepping at its own pace (``moe=False``: no straggler)."""
    dp = np.asarray(dp, float) if moe else np.ones_like(np.asarray(dp, float))
    z = np.sqrt(2.0 * np.log(np.maximum(dp, 1.0)))
    return 1.0 + z * context_cv / np.sqrt(np.maximum(batch, 1.0))


def overlap_on(profile, model: ModelSpec, tokens_per_gpu, ep):
    """Whether a MoE layer runs its all-to-all behind two half batches: the engine
    supports it, experts are spread (ep > 1) and each GPU has enough tokens for the
    split to pay (``EngineProfile.overlap_min_tokens``)."""
    if not (profile.micro_batch_overlap and model.is_moe):
        return np.zeros(np.broadcast_shapes(np.shape(tokens_per_gpu), np.shape(ep)), bool)
    return (np.asarray(ep) > 1) & (np.asarray(tokens_per_gpu) >= profile.overlap_min_tokens)


def mtp_yield(calib: Calibration, model: ModelSpec) -> tuple[int, float]:
    """(draft tokens k, generated tokens per step) of multi-token prediction."""
    if not (model.mtp_layers and calib.mtp_acceptance > 0):
        return 0, 1.0
    k = calib.mtp_draft_tokens
    a = calib.mtp_acceptance
    return k, float(sum(a ** i for i in range(k + 1)))


def decode_components(gpu: GPU, model: ModelSpec, batch, tp, dp, ep, calib: Calibration,
                      context=None, overlap: bool | np.ndarray = True
                      ) -> dict[str, np.ndarray]:
    """Named per-step times (seconds, per step, before dividing by the MTP yield).

    Per-layer items are for one layer; ``attention`` is evaluated at ``context`` if
    given, else at the three anchor contexts (a trailing axis of 3).
    """
    ks = kernels_for(gpu, calib.engine)
    prof = calib.profile
    batch = np.asarray(batch, float)
    tp, dp, ep = (np.asarray(x, float) for x in (tp, dp, ep))
    k_draft, _ = mtp_yield(calib, model)
    on = overlap_on(prof, model, batch * (1 + k_draft) / tp, ep) & overlap
    # With micro-batch overlap every compute op runs twice on half the batch (the
    # roofline model of the thesis overlaps without splitting, as it always did).
    ways = np.where(on & (calib.engine != "roofline"), 2.0, 1.0)
    b = batch / ways
    rows = b * (1 + k_draft)
    heads_q = model.heads / tp * (1 + k_draft)  # MTP verifies 1 + k queries per sequence
    ctx = np.asarray(_ANCHORS if context is None else context, float)
    bb = b[..., None] if context is None else b
    if model.is_mla:
        core = ks.mla_decode(bb, ctx, (heads_q[..., None] if context is None else heads_q),
                             model.kv_dtype, calib.fp8_attention)
    else:
        kvh = layers.kv_heads_per_gpu(model, tp)
        hq = heads_q[..., None] if context is None else heads_q
        core = ks.decode_attention(bb, ctx, hq, kvh[..., None] if context is None else kvh,
                                   model.head_dim, model.kv_dtype, calib.fp8_attention)
    w = ways[..., None] if context is None else ways
    comp = {
        "attention": core * w * straggler_factor(bb, dp[..., None] if context is None else dp,
                                                moe=model.is_moe),
        "attention_projections": layers.attention_projections(ks, model, rows, tp,
                                                              absorbed=True) * ways,
        "elementwise": layers.elementwise(ks, model, rows) * ways,
        "tp_allreduce": layers.tp_allreduce(ks, model, rows, tp, gpu.gpus_per_domain) * ways,
    }
    dense_layers = model.dense_layers if model.is_moe else model.layers
    if dense_layers:
        comp["dense_mlp"] = layers.dense_mlp(ks, model, rows, tp, model.intermediate) * ways
    if model.is_moe:
        comp["shared_experts"] = (layers.dense_mlp(ks, model, rows, tp,
                                                   model.shared_intermediate)
                                  + layers.router(ks, model, rows)) * ways
        experts, skew = layers.routed_experts(ks, model, rows, tp, dp, ep,
                                              calib.eplb_residual(ep))
        comp["routed_experts"] = experts * ways
        comp["expert_skew"] = skew + 0.0 * experts  # a factor, not a time (for display)
        dispatch, combine = layers.moe_comm(ks, model, batch * (1 + k_draft), tp, ep,
                                            gpu.gpus_per_domain, "ll", dp)
        comp["alltoall_dispatch"] = dispatch
        comp["alltoall_combine"] = combine
        # attention DP with experts split by width over the island (ep 1): the groups'
        # tokens gathered to every GPU and the partial sums reduced (not overlapped)
        gather, reduce_ = layers.dp_gather(ks, model, batch * (1 + k_draft), tp, dp, ep,
                                           gpu.gpus_per_domain, calib.engine)
        comp["dp_allgather"] = gather + 0.0 * batch
        comp["expert_reduce"] = reduce_ + 0.0 * batch
        # SMs the communication kernels hold are taken from the overlapped compute.
        comp["comm_sm_share"] = np.where(on, gpu.comm_sms / gpu.sms, 0.0) + 0.0 * batch
    comp["lm_head"] = layers.lm_head(ks, model, batch * (1 + k_draft), tp, ep)
    comp["logits_gather"] = layers.logits_gather(ks, model, batch * (1 + k_draft), tp, ep,
                                                 gpu.gpus_per_domain) + 0.0 * batch
    if k_draft:
        one_layer = (layers.attention_projections(ks, model, batch, tp, absorbed=True)
                     + layers.elementwise(ks, model, batch)
                     + ks.gemm(batch, model.hidden, 2.0 * model.hidden, model.gemm_kind))
        if model.is_moe:
            one_layer = one_layer + layers.dense_mlp(ks, model, batch, tp,
                                                     model.shared_intermediate)
            one_layer = one_layer + layers.routed_experts(ks, model, batch, tp, dp, ep,
                                                          calib.eplb_residual(ep))[0]
        comp["mtp_module"] = k_draft * (one_layer + layers.lm_head(ks, model, batch, tp, ep))
    comp["step_gap"] = prof.step_gap_s + 0.0 * batch
    return comp


def _attention_lines(core):
    """(A, C, S) of max(A, C + S L) through the anchor times (64, 1k, 16k)."""
    t64, t1k, t16k = core[..., 0], core[..., 1], core[..., 2]
    slope = np.maximum((t16k - t1k) / (_ANCHORS[2] - _ANCHORS[1]), 0.0)
    intercept = t1k - slope * _ANCHORS[1]
    return np.minimum(t64, t1k), intercept, slope


def step_from_components(comp: dict[str, np.ndarray], model: ModelSpec, k_yield: float
                         ) -> StepModel:
    floor, intercept, slope = _attention_lines(comp["attention"])
    per_layer = comp["attention_projections"] + comp["elementwise"] + comp["tp_allreduce"]
    zero = 0.0 * per_layer
    dense_layers = model.dense_layers if model.is_moe else model.layers
    inv = 1.0 / k_yield
    x_d = per_layer + comp.get("dense_mlp", zero)
    lin = (comp["lm_head"] + comp.get("logits_gather", zero) + comp["step_gap"]
           + comp.get("mtp_module", zero)) * inv
    d = ((x_d + intercept) * inv, slope * inv, (x_d + floor) * inv)
    if not model.is_moe:
        return StepModel(lin + zero, float(dense_layers), d[0] + zero, d[1] + zero,
                         d[2] + zero, 0.0, zero, zero, zero)
    sm = 1.0 / (1.0 - comp["comm_sm_share"])
    x_m = (per_layer + comp["shared_experts"] + comp["routed_experts"]) * sm + (
        comp.get("dp_allgather", zero) + comp.get("expert_reduce", zero))
    comm = comp["alltoall_dispatch"] + comp["alltoall_combine"]
    overlapped = comp["comm_sm_share"] > 0
    fixed = np.where(overlapped, x_m + intercept * sm, x_m + intercept * sm + comm)
    mfloor = np.where(overlapped, np.maximum(x_m + floor * sm, comm),
                      x_m + floor * sm + comm)
    return StepModel(lin + zero, float(dense_layers), d[0] + zero, d[1] + zero, d[2] + zero,
                     float(model.moe_layers), fixed * inv + zero, slope * sm * inv + zero,
                     mfloor * inv + zero)


def step_model(gpu: GPU, model: ModelSpec, batch, tp, dp, ep, calib: Calibration
               ) -> StepModel:
    """Coefficients of the per-token decode step time for ``batch`` sequences per
    attention group (batch (1, U) or (C, U), configurations (C, 1)).

    Where the engine could overlap the all-to-all with two half batches, a deployment
    does so only where it is faster (judged at a 1k context): both step models are built
    and the faster kept per element."""
    k_yield = mtp_yield(calib, model)[1]
    if model.is_moe and calib.profile.micro_batch_overlap and calib.engine != "roofline":
        # Both readings in one evaluation (a leading axis: overlap allowed, not allowed):
        # the kernel calls are many small array operations, so one call on twice the
        # elements costs about half of two.
        nd = len(np.broadcast_shapes(*(np.shape(x) for x in (batch, tp, dp, ep))))
        both = decode_components(gpu, model, batch, tp, dp, ep, calib,
                                 overlap=np.array([True, False]).reshape((2,) + (1,) * nd))
        stacked = step_from_components(both, model, k_yield)
        sm, plain = (stacked._map(lambda a, j=j: _reading(a, j, nd)) for j in (0, 1))
        overlapped = bool(np.any(_reading(both["comm_sm_share"], 0, nd) > 0))
    else:
        sm = step_from_components(decode_components(gpu, model, batch, tp, dp, ep, calib),
                                  model, k_yield)
        overlapped = False
    if overlapped:
        better = sm.step_time(1024.0) <= plain.step_time(1024.0)
        shape = np.shape(better)
        sm = StepModel(*cast("Iterable[Any]", (
            getattr(sm, f.name) if f.name.endswith("count") else
            np.where(better, np.broadcast_to(getattr(sm, f.name), shape),
                     np.broadcast_to(getattr(plain, f.name), shape))
            for f in fields(StepModel))))
    sm = _eager_floor(sm, gpu, batch, tp, calib, k_yield)
    # a priors-priced GPU's serving stack (perfmodel.serving_stack), then --plan-at p10
    factor = calib.serving_factor(gpu, "decode") * calib.time_factor(gpu, "decode")
    return sm if factor == 1.0 else sm._map(lambda a: a * factor)


def _reading(a, j: int, nd: int):
    """Reading ``j`` of a coefficient evaluated over a leading axis of readings (one that
    does not depend on the reading has no such axis: ``nd`` dims or fewer)."""
    a = np.asarray(a)
    return a[j] if a.ndim > nd else a


def _eager_floor(sm: StepModel, gpu: GPU, batch, tp, calib: Calibration,
                 k_yield: float) -> StepModel:
    """Batches beyond the engine's largest captured CUDA graph run eagerly: each layer
    then takes at least the host time to launch it (``EAGER_LAYER_S``), whatever its
    GPU time -- the per-layer floor of the step model rises to it."""
    eager = np.asarray(batch, float) > calib.profile.graph_max_on(gpu, tp)
    if not np.any(eager):
        return sm
    launch = EAGER_LAYER_S / k_yield
    return replace(sm, d_floor=np.where(eager, np.maximum(sm.d_floor, launch), sm.d_floor),
                   m_floor=np.where(eager, np.maximum(sm.m_floor, launch), sm.m_floor))
