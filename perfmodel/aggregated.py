"""Aggregated serving: one island runs both phases with in-flight batching and chunked
prefill (what ``trtllm-bench``, vLLM and SGLang do by default, and what most published
throughput figures measure).

Steady state of one attention group holding ``B`` decoding sequences, each request
bringing s input tokens (n = s (1 - h) to compute) and generating d tokens.  Every
iteration is one mixed forward pass:

* each of the B sequences generates one token (MTP: 1 + a + ... per verify step);
* to keep B sequences in flight, B / d requests finish and start per generated token,
  so each pass also prefills c = B n / d' prompt tokens (d' = d / yield) -- chunks of
  the waiting prompts, at most the engine's token budget minus the decode rows;
* GEMMs, norms, all-reduces and MoE see B (1 + k) + c rows; attention is the decode
  kernel over B sequences at the mean context s + d/2 plus the prefill kernel over the
  chunks' query-key pairs (c/n prompts' worth of s(s+1)/2 - h s(h s+1)/2).

Then TPOT = pass time / yield, throughput = dp B / (d' x pass) requests/s, and TTFT =
the passes a prompt's n tokens need at c per pass (at least one), times the pass.  The
batch is the largest the KV cache holds that meets the TTFT and TPOT ceilings, or the
one given; engines page the KV cache, so B sequences spread over their lifetimes
occupy B (s + d/2) tokens on average (``decode_max`` overrides d/2 as the reserve).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np

from perfmodel import layers
from perfmodel.calibration import Calibration
from perfmodel.decode import mtp_yield, straggler_factor
from perfmodel.engines import EAGER_LAYER_S
from perfmodel.hardware import GPU
from perfmodel.kernels.library import kernels_for
from perfmodel.memory import engine_batch_cap, kv_per_sequence, max_decode_batch
from perfmodel.models import ModelSpec


@dataclass(frozen=True)
class AggregatedPoint:
    batch: int  # decoding sequences per attention group
    pass_s: float  # one mixed forward pass
    ttft_s: float
    tpot_s: float
    rps: float  # requests/s of the whole island
    prefill_tokens_per_pass: float
    breakdown: dict[str, float]  # seconds of one pass by operation

    @property
    def feasible(self) -> bool:
        return self.batch > 0 and self.rps > 0


def mixed_pass(gpu: GPU, model: ModelSpec, batch, s, d, tp, dp, ep,
               hit_rate: float, calib: Calibration, held=None) -> dict[str, np.ndarray]:
    """Named seconds of one mixed pass for ``batch`` decoding sequences; ``batch``,
    ``s`` (input length) and ``d`` (output length) broadcast against each other.
    ``held``: generated tokens a sequence holds on average (default d / 2)."""
    ks = kernels_for(gpu, calib.engine)
    prof = calib.profile
    batch = np.asarray(batch, float)
    s = np.asarray(s, float)
    d = np.asarray(d, float)
    k_draft, tokens_per_step = mtp_yield(calib, model)
    n = np.maximum(s * (1.0 - hit_rate), 1.0)
    steps = np.maximum(d / tokens_per_step, 1.0)
    budget = prof.prefill_token_budget or np.inf
    decode_rows = batch * (1 + k_draft)
    chunk = np.minimum(batch * n / steps, np.maximum(budget - decode_rows, 0.0))
    prompts = chunk / n
    rows = decode_rows + chunk
    cached = s * hit_rate
    pairs = prompts * 0.5 * (s * (s + 1.0) - cached * (cached + 1.0))
    context = s + (0.5 * d if held is None else np.asarray(held, float))
    heads = model.heads / tp
    if model.is_mla:
        dec = ks.mla_decode(batch, context, heads * (1 + k_draft), model.kv_dtype,
                            calib.fp8_attention)
        pre = ks.mla_context(np.maximum(prompts, 1e-9), s, pairs / np.maximum(prompts, 1e-9),
                             n, heads, model.kv_dtype)
    else:
        kvh = layers.kv_heads_per_gpu(model, tp)
        dec = ks.decode_attention(batch, context, heads * (1 + k_draft), kvh,
                                  model.head_dim, model.kv_dtype, calib.fp8_attention)
        pre = ks.context_attention(np.maximum(prompts, 1e-9), s,
                                   pairs / np.maximum(prompts, 1e-9), n, heads, kvh,
                                   model.head_dim, model.kv_dtype, calib.fp8_attention)
    pre = np.where(prompts > 0, pre, 0.0)
    comp = {"attention_decode": model.layers * dec * straggler_factor(batch, dp),
            "attention_prefill": model.layers * pre,
            "attention_projections": model.layers * layers.attention_projections(
                ks, model, rows, tp, absorbed=True),
            "elementwise": model.layers * layers.elementwise(ks, model, rows),
            "tp_allreduce": model.layers * layers.tp_allreduce(ks, model, rows, tp,
                                                               gpu.gpus_per_domain)}
    dense_layers = model.dense_layers if model.is_moe else model.layers
    if dense_layers:
        comp["dense_mlp"] = dense_layers * layers.dense_mlp(ks, model, rows, tp,
                                                            model.intermediate)
    if model.is_moe:
        moe = model.moe_layers
        comp["shared_experts"] = moe * (layers.dense_mlp(ks, model, rows, tp,
                                                         model.shared_intermediate)
                                        + layers.router(ks, model, rows))
        comp["routed_experts"] = moe * layers.routed_experts(ks, model, rows, tp, dp, ep,
                                                             calib.eplb_residual(ep))[0]
        dispatch, combine = layers.moe_comm(ks, model, rows, tp, ep, gpu.gpus_per_domain,
                                            "ll", dp)
        comp["alltoall"] = moe * (dispatch + combine)
        gather, reduce_ = layers.dp_gather(ks, model, rows, tp, dp, ep, gpu.gpus_per_domain,
                                           calib.engine)
        comp["dp_allgather+expert_reduce"] = moe * (gather + reduce_)
    comp["lm_head"] = layers.lm_head(ks, model, batch + prompts, tp, ep)
    comp["logits_gather"] = layers.logits_gather(ks, model, batch + prompts, tp, ep,
                                                 gpu.gpus_per_domain) + 0.0 * batch
    comp["step_gap"] = prof.step_gap_s + 0.0 * batch
    # beyond the largest captured CUDA graph a pass runs eagerly: at least the host time
    # to launch every layer (perfmodel.decode._eager_floor)
    gpu_time = cast(np.ndarray, sum(comp.values()))
    eager = rows > prof.graph_max_on(gpu, tp)
    comp["eager_launch"] = np.where(eager, np.maximum(
        model.layers * EAGER_LAYER_S - gpu_time, 0.0), 0.0)
    factor = calib.time_factor(gpu, "aggregated")
    if factor != 1.0:  # --plan-at p10: the class's pessimistic error, named
        comp["error_band_derate"] = (factor - 1.0) * (gpu_time + comp["eager_launch"])
    comp["_chunk"] = chunk
    comp["_yield"] = tokens_per_step + 0.0 * batch
    return comp


def aggregated_point(gpu: GPU, model: ModelSpec, tp: int, dp: int, ep: int, s: int, d: float,
                     hit_rate: float, calib: Calibration, *, batch: int | None = None,
                     decode_max: int | None = None, ttft_ms: float | None = None,
                     tpot_ms: float | None = None) -> AggregatedPoint:
    """The operating point of an aggregated island (module doc)."""
    cap = int(np.asarray(max_decode_batch(gpu, model, np.array([[float(tp)]]),
                                          np.array([[float(dp)]]), np.array([[float(ep)]]),
                                          np.array([[float(kv_per_sequence(
                                              calib, s, d, decode_max or 0.5 * d))]]),
                                          calib)).ravel()[0])
    cap = min(cap, int(engine_batch_cap(gpu, model, calib)))
    if batch is not None:
        cap = min(cap, int(batch))
    if cap < 1:
        return AggregatedPoint(0, 0.0, 0.0, 0.0, 0.0, 0.0, {})
    b = np.arange(1, cap + 1, dtype=float)
    comp = mixed_pass(gpu, model, b, float(s), float(d), float(tp), float(dp), float(ep),
                      hit_rate, calib)
    chunk = comp.pop("_chunk")
    tokens_per_step = comp.pop("_yield")
    t = cast(np.ndarray, sum(comp.values()))
    n = max(s * (1.0 - hit_rate), 1.0)
    steps = max(d, 1.0) / tokens_per_step
    ttft = np.maximum(np.ceil(n / np.maximum(chunk, 1e-9)), 1.0) * t
    tpot = t / tokens_per_step
    rps = dp * b / (steps * t)
    ok = chunk > 0
    if ttft_ms is not None:
        ok &= ttft * 1e3 <= ttft_ms
    if tpot_ms is not None:
        ok &= tpot * 1e3 <= tpot_ms
    if batch is None:
        if not ok.any():
            return AggregatedPoint(0, 0.0, 0.0, 0.0, 0.0, 0.0, {})
        i = int(np.argmax(np.where(ok, rps, -1.0)))
    else:
        i = cap - 1
    return AggregatedPoint(int(b[i]), float(t[i]), float(ttft[i]), float(tpot[i]),
                           float(rps[i]), float(chunk[i]),
                           {k: float(np.ravel(v)[i]) for k, v in comp.items()})
