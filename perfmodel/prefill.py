"""Prefill: the time of a forward pass over prompts, from measured kernels.

For prompts of s tokens of which a fraction h hits the prefix cache, n = s (1 - h)
tokens are computed and attend to all s positions causally:
sum_{i=hs+1}^{s} i = (s(s+1) - hs(hs+1)) / 2 query-key pairs per layer and prompt.

An engine prefills up to its token budget (``EngineProfile.prefill_token_budget``,
chunked-prefill size) in one forward pass: ``prompts`` prompts of n new tokens make a
pass of T = prompts x n rows, run in passes of at most the budget.  Per layer on one
GPU of an attention group of tp GPUs (dp groups prefill concurrently):

  rows-proportional work   projections, norms, all-reduces, dense MLP or shared and
                           routed experts (tokens entering the EP group: rows ep / tp),
                           the expert all-to-all (DeepEP normal mode)  -- per pass
  attention core           the measured prefill attention kernel over the prompts'
                           pairs (MLA non-absorbed, as DeepSeek runs prefill)
MoE layers overlap the all-to-all with computation when the engine splits passes into
two micro-batches (``EngineProfile.micro_batch_overlap``), else add it.

Seed 002 §4.2.3 times every request alone (R_prefill = 1 / t per replica); that is
``prompts = 1``, the TTFT of a lone request.  The island benchmark uses batched passes
(``prompts = budget / n``), which is how engines reach their throughput on short
prompts.
"""

from __future__ import annotations

import numpy as np

from perfmodel import layers
from perfmodel.calibration import Calibration
from perfmodel.decode import overlap_on
from perfmodel.hardware import GPU
from perfmodel.kernels.library import kernels_for
from perfmodel.models import ModelSpec


def prefill_components(gpu: GPU, model: ModelSpec, s, tp, dp, ep, hit_rate: float,
                       calib: Calibration, prompts=1.0) -> dict[str, np.ndarray]:
    """Named seconds of one prefill forward pass over ``prompts`` prompts of ``s`` tokens
    (whole-model totals; broadcasting (C, 1) configurations against (1, K) lengths)."""
    ks = kernels_for(gpu, calib.engine)
    prof = calib.profile
    s = np.maximum(np.asarray(s, float), 1.0)
    tp, dp, ep = (np.asarray(x, float) for x in (tp, dp, ep))
    prompts = np.asarray(prompts, float)
    n = np.maximum(s * (1.0 - hit_rate), 1.0)
    cached = s * hit_rate
    pairs = 0.5 * (s * (s + 1.0) - cached * (cached + 1.0))
    total_rows = prompts * n
    rows = np.minimum(total_rows, prof.prefill_token_budget or np.inf)
    passes = total_rows / rows
    on = overlap_on(prof, model, rows / tp, ep)
    ways = np.where(on & (calib.engine != "roofline"), 2.0, 1.0)
    r = rows / ways  # rows per micro-batch
    dense_layers = model.dense_layers if model.is_moe else model.layers
    heads = model.heads / tp
    if model.is_mla:
        core = ks.mla_context(prompts, s, pairs, n, heads, model.kv_dtype)
    else:
        core = ks.context_attention(prompts, s, pairs, n, heads,
                                    layers.kv_heads_per_gpu(model, tp), model.head_dim,
                                    model.kv_dtype, calib.fp8_attention)
    per_layer = passes * ways * (layers.attention_projections(ks, model, r, tp, absorbed=False)
                                 + layers.elementwise(ks, model, r)
                                 + layers.tp_allreduce(ks, model, r, tp, gpu.gpus_per_domain))
    comp = {"attention": model.layers * core,
            "attention_projections+norms+allreduce": model.layers * per_layer}
    if dense_layers:
        comp["dense_mlp"] = dense_layers * passes * ways * layers.dense_mlp(
            ks, model, r, tp, model.intermediate)
    if model.is_moe:
        sm = np.where(on, 1.0 / (1.0 - gpu.comm_sms / gpu.sms), 1.0)
        shared = passes * ways * (layers.dense_mlp(ks, model, r, tp, model.shared_intermediate)
                                  + layers.router(ks, model, r))
        experts = passes * ways * layers.routed_experts(ks, model, r, tp, dp, ep,
                                                        calib.eplb_residual(ep))[0]
        dispatch, combine = layers.moe_comm(ks, model, rows, tp, ep, gpu.gpus_per_domain,
                                            "normal", dp)
        comm = passes * (dispatch + combine)
        # attention DP with experts split by width over the island (ep 1): gather the
        # groups' tokens, reduce the partial sums -- on the critical path
        gather, reduce_ = layers.dp_gather(ks, model, rows, tp, dp, ep, gpu.gpus_per_domain,
                                           calib.engine)
        dp_comm = passes * (gather + reduce_)
        plain = per_layer + shared + experts + core + comm + dp_comm
        overlapped = np.maximum((per_layer + shared + experts + core) * sm, comm) + dp_comm
        # a deployment splits passes only where it is faster
        layer = np.where(on, np.minimum(overlapped, plain) if calib.engine != "roofline"
                         else overlapped, plain)
        moe = model.moe_layers
        comp["shared_experts+router"] = moe * shared
        comp["routed_experts"] = moe * experts
        comp["alltoall"] = moe * comm
        comp["dp_allgather+expert_reduce"] = moe * dp_comm
        # What micro-batch overlap hides (negative) net of the SMs it takes, so that the
        # items sum to the pass time.
        comp["overlap"] = moe * (layer - plain)
    comp["lm_head"] = layers.lm_head(ks, model, prompts, tp, ep)
    comp["logits_gather"] = layers.logits_gather(ks, model, prompts, tp, ep,
                                                 gpu.gpus_per_domain) + 0.0 * prompts
    comp["step_gap"] = passes * prof.step_gap_s
    stack = calib.serving_factor(gpu, "prefill")
    if stack != 1.0:  # a priors-priced GPU's serving stack (perfmodel.serving_stack)
        comp["serving_stack"] = (stack - 1.0) * sum(comp.values())
    factor = calib.time_factor(gpu, "prefill")
    if factor != 1.0:  # --plan-at p10: the class's pessimistic error, named
        comp["error_band_derate"] = (factor - 1.0) * sum(comp.values())
    return comp


def prefill_pass_time(gpu: GPU, model: ModelSpec, s, tp, dp, ep, hit_rate: float,
                      calib: Calibration, prompts=1.0):
    """Seconds of the forward pass(es) that prefill ``prompts`` prompts of ``s`` tokens."""
    comp = prefill_components(gpu, model, s, tp, dp, ep, hit_rate, calib, prompts)
    return sum(comp.values())


def prefill_time(gpu: GPU, model: ModelSpec, s, tp, dp, ep, hit_rate: float,
                 calib: Calibration):
    """Seconds to prefill one request of ``s`` tokens alone on one attention group (its
    TTFT on an idle island): seed 002's per-request prefill time."""
    s = np.asarray(s)
    t = prefill_pass_time(gpu, model, s, tp, dp, ep, hit_rate, calib, 1.0)
    return t.astype(s.dtype) if s.dtype == np.float32 else t


def prefill_chunks(s, hit_rate: float, calib: Calibration):
    """Passes a prompt of ``s`` tokens takes alone: its uncached rows over the engine's
    token budget (chunked prefill), at least one -- ``passes`` of
    :func:`prefill_components` for a single prompt."""
    n = np.maximum(np.asarray(s, float) * (1.0 - hit_rate), 1.0)
    return np.maximum(n / (calib.profile.prefill_token_budget or np.inf), 1.0)


def batched_prompts(s, hit_rate: float, calib: Calibration, fraction: float = 1.0):
    """Prompts per forward pass when the engine fills its token budget (times
    ``fraction``; at least one prompt)."""
    n = np.maximum(np.asarray(s, float) * (1.0 - hit_rate), 1.0)
    return np.maximum(calib.profile.prefill_token_budget * fraction / n, 1.0)  # 0: alone
