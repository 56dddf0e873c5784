"""Memory footprint per GPU: weights, KV cache, and the decode batch that fits."""

from __future__ import annotations

import numpy as np

from perfmodel.calibration import Calibration
from perfmodel.hardware import GPU
from perfmodel.models import ModelSpec


def attention_params_per_gpu(model: ModelSpec, tp):
    """Attention weights one tensor-parallel rank holds.

    GQA: Q and O split tp ways, K and V split min(tp, kv_heads) ways (replicated beyond).
    MLA: the down-projections are replicated, the rest split tp ways.
    """
    if model.is_mla:
        split = model.attn_params - model.attn_replicated_params
        return model.attn_replicated_params + split / tp
    h, hd = model.hidden, model.head_dim
    qo = 2.0 * h * model.heads * hd
    kv = 2.0 * h * model.kv_heads * hd
    return qo / tp + kv / np.minimum(tp, model.kv_heads)


def routed_expert_params_per_gpu(model: ModelSpec, tp, dp, ep):
    """Routed-expert parameters of one MoE layer on each GPU: the island's G = tp x dp
    GPUs shard the experts ep ways by expert and G / ep ways by width (TRT-LLM's
    moe_ep x moe_tp), so every GPU holds 1/G of them."""
    if not model.is_moe:
        return 0.0
    gpus = np.asarray(tp, float) * np.asarray(dp, float)
    return np.ceil(model.routed_experts / np.asarray(ep, float)) * model.expert_params * (
        np.asarray(ep, float) / gpus)


def weight_bytes_per_gpu(model: ModelSpec, tp, dp, ep):
    """Weights resident on each GPU (embedding and LM head kept in bf16, vocab-split;
    an ``ffn``-scoped FP8 checkpoint's attention and edge-layer MLPs in bf16,
    :attr:`perfmodel.models.ModelSpec.fp8_scope`)."""
    wb = model.weight_bytes
    attn = model.layers * attention_params_per_gpu(model, tp) * model.attn_weight_bytes
    dense_layers = model.dense_layers if model.is_moe else model.layers
    mlp = (dense_layers * wb + model.bf16_mlp_layers * (2.0 - wb)) * model.dense_mlp_params / tp
    if model.is_moe:
        mlp = mlp + model.moe_layers * wb * (model.shared_params / tp
                                             + routed_expert_params_per_gpu(model, tp, dp, ep))
    # embedding and LM head in bf16, vocabulary-parallel (perfmodel.layers.vocab_shards)
    shards = np.maximum(np.asarray(tp, float), np.minimum(np.asarray(ep, float), 8.0))
    return attn + mlp + 2.0 * model.embed_params * 2.0 / shards


def kv_bytes_per_token_per_gpu(model: ModelSpec, tp):
    """KV bytes per cached token on each GPU of the attention group, all layers."""
    return model.layers * model.kv_bytes_per_token_layer / model.kv_shards(tp)


#: Bytes per element of the activations (bf16) and of the sampler's logits (fp32).
_ACT_BYTES, _LOGIT_BYTES = 2.0, 4.0


def activation_bytes(gpu: GPU, model: ModelSpec, tp, calib: Calibration):
    """Peak transient memory per GPU of one forward pass at the engine's token budget
    ``T`` -- what vLLM's start-up profiling run and TRT-LLM's activation estimate reserve
    before sizing the KV cache:

        2 B x T x (2 h + max(q + k + v width, 3 I_eff) / tp)  +  4 B x 2 x R x V / tp

    the residual stream and its normed copy, the larger of the attention projections'
    outputs and the MLP's gate, up and activated tensors (``I_eff`` the dense width, or
    for a MoE layer the shared experts plus ``top_k`` routed experts' width a token
    occupies), and the sampler's fp32 logits and probabilities for ``R`` = min(max
    running on ``gpu``, T) sequences over the vocabulary ``V`` (engines sample one row
    per running request).  Zero for the thesis's rule (seed 002 models no activations)."""
    prof = calib.profile
    if prof.memory_rule == "thesis" or not prof.prefill_token_budget:
        return 0.0 * np.asarray(tp, float)
    tp = np.asarray(tp, float)
    tokens = float(prof.prefill_token_budget)
    if model.is_mla:
        qkv: float = model.heads * (model.qk_nope_dim + model.qk_rope_dim + model.v_head_dim)
    else:
        qkv = (model.heads + 2.0 * model.kv_heads) * model.head_dim
    width = float(model.intermediate) if (model.dense_layers or not model.is_moe) else 0.0
    if model.is_moe:
        width = max(width, model.shared_intermediate
                    + model.experts_per_token * model.moe_intermediate)
    layer = _ACT_BYTES * tokens * (2.0 * model.hidden + np.maximum(qkv, 3.0 * width) / tp)
    rows = min(float(prof.max_running_on(gpu)), tokens)
    return layer + _LOGIT_BYTES * 2.0 * rows * model.vocab / tp


def usable_bytes(gpu: GPU, calib: Calibration, model: ModelSpec, tp=1.0):
    """HBM per GPU the engine fills with weights and KV cache, by its memory rule
    (``EngineProfile.memory_rule``):

    * "total" (vLLM): ``fraction x HBM - activations - overheads``;
    * "static", "thesis" (SGLang, seed 002): ``fraction x HBM`` (activations and
      overheads live in the rest);
    * "free" (TRT-LLM): ``HBM - activations - overheads`` (the fraction applies to
      what remains after the weights, :func:`kv_pool_bytes`).
    """
    prof = calib.profile
    # seed 002's rule reads the datasheet figure as decimal GB, as the thesis did
    hbm = gpu.hbm_gb * 1e9 if prof.memory_rule == "thesis" else gpu.visible_bytes
    tp = np.asarray(tp, float)
    runtime = activation_bytes(gpu, model, tp, calib) + prof.overhead_bytes(tp)
    if prof.memory_rule == "free":
        return hbm - runtime
    fraction = prof.memory_fraction_on(gpu, tp)
    return fraction * hbm - (runtime if prof.memory_rule == "total" else 0.0)


def kv_pool_bytes(gpu: GPU, model: ModelSpec, tp, dp, ep, calib: Calibration):
    """KV-cache bytes per GPU: the engine's share (``kv_free_fraction``; TRT-LLM's
    ``free_gpu_memory_fraction``) of the usable HBM the weights leave."""
    prof = calib.profile
    free = np.maximum(usable_bytes(gpu, calib, model, tp)
                      - weight_bytes_per_gpu(model, tp, dp, ep), 0.0)
    return free * (prof.memory_fraction_on(gpu, tp) if prof.memory_rule == "free" else 1.0)


def kv_capacity_tokens(gpu: GPU, model: ModelSpec, tp, dp, ep, calib: Calibration):
    """KV-cache tokens one attention group holds (:func:`kv_pool_bytes` per token's
    bytes)."""
    return kv_pool_bytes(gpu, model, tp, dp, ep, calib) / kv_bytes_per_token_per_gpu(model, tp)


def kv_per_sequence(calib: Calibration, s, d, held):
    """KV tokens a running sequence of ``s`` prompt tokens takes when the engine sizes
    its batch: ``s + held`` (the tokens it holds on average, ``held``) -- or, for an
    engine that reserves a request's whole output at admission
    (``EngineProfile.reserves_output``: TRT-LLM), ``s + max(d, held)`` with ``d`` its
    output tokens (the client's max_tokens is at least that)."""
    if calib.profile.reserves_output:
        return s + np.maximum(d, held)
    return s + held


def engine_batch_cap(gpu: GPU, model: ModelSpec, calib: Calibration) -> float:
    """The most sequences one scheduler (attention group) runs: the engine's
    ``max_running`` on this GPU and, since every decoding sequence is a row of the
    iteration (plus its draft tokens with MTP), its token budget."""
    prof = calib.profile
    cap = float(prof.max_running_on(gpu))
    if prof.memory_rule != "thesis" and prof.prefill_token_budget:
        cap = min(cap, prof.prefill_token_budget / (1.0 + model_draft_rows(model, calib)))
    return float(np.floor(cap))


def model_draft_rows(model: ModelSpec, calib: Calibration) -> float:
    """Draft tokens per sequence and step (MTP), 0 without speculation."""
    return float(calib.mtp_draft_tokens) if calib.mtp_acceptance > 0 and model.mtp_layers else 0.0


def max_decode_batch(gpu: GPU, model: ModelSpec, tp, dp, ep, context_max,
                     calib: Calibration):
    """Largest number of sequences one attention group can hold at ``context_max`` tokens
    each (input + maximum decode length).  Zero where the weights alone do not fit."""
    # tokens / context: one (C, S) division
    context_max = np.asarray(context_max)
    tokens = np.asarray(kv_capacity_tokens(gpu, model, tp, dp, ep, calib))
    if context_max.dtype == np.float32:  # keep (C, S) tables in the caller's precision
        tokens = tokens.astype(np.float32)
    return np.floor(tokens / context_max)


def thesis_batch_rule(max_bs, cap: float = 1024):
    """Seed 002 §4.6.2: round down to a multiple of 8 and clamp to [8, 1024].

    Read literally the clamp raises a memory limit of 1-7 sequences to 8, which does not
    fit; we keep the rule and then cap it at the memory limit (0 = does not fit).  With
    an engine the upper clamp is its :func:`engine_batch_cap` instead of 1024 (the
    multiple of 8 is also how engines capture CUDA graphs).
    """
    # min(.., max_bs) also maps "nothing fits" (0) to 0.
    rule = np.floor(np.asarray(max_bs) * 0.125)  # max_bs - max_bs mod 8, for max_bs >= 0
    rule *= 8.0
    np.clip(rule, 8, max(float(cap), 8.0), out=rule)
    return np.minimum(rule, max_bs, out=rule)
