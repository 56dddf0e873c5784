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
    """Weights resident on each GPU (embedding and LM head kept in bf16, vocab-split)."""
    wb = model.weight_bytes
    per_layer_attn = attention_params_per_gpu(model, tp)
    dense_layers = model.dense_layers if model.is_moe else model.layers
    total = model.layers * per_layer_attn + dense_layers * model.dense_mlp_params / tp
    if model.is_moe:
        total = total + model.moe_layers * (model.shared_params / tp
                                            + routed_expert_params_per_gpu(model, tp, dp, ep))
    # embedding and LM head in bf16, vocabulary-parallel (perfmodel.layers.vocab_shards)
    shards = np.maximum(np.asarray(tp, float), np.minimum(np.asarray(ep, float), 8.0))
    return total * wb + 2.0 * model.embed_params * 2.0 / shards


def kv_bytes_per_token_per_gpu(model: ModelSpec, tp):
    """KV bytes per cached token on each GPU of the attention group, all layers."""
    return model.layers * model.kv_bytes_per_token_layer / model.kv_shards(tp)


def usable_bytes(gpu: GPU, calib: Calibration) -> float:
    return gpu.hbm_gb * 1e9 * (1.0 - calib.runtime_reserve_fraction)


def kv_capacity_tokens(gpu: GPU, model: ModelSpec, tp, dp, ep, calib: Calibration):
    """KV-cache tokens one attention group holds: the engine's share of the HBM left
    after the weights (``EngineProfile.kv_free_fraction``), per token's bytes."""
    free = np.maximum(usable_bytes(gpu, calib) - weight_bytes_per_gpu(model, tp, dp, ep), 0.0)
    return free * calib.profile.kv_free_fraction / kv_bytes_per_token_per_gpu(model, tp)


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


def thesis_batch_rule(max_bs):
    """Seed 002 §4.6.2: round down to a multiple of 8 and clamp to [8, 1024].

    Read literally the clamp raises a memory limit of 1-7 sequences to 8, which does not
    fit; we keep the rule and then cap it at the memory limit (0 = does not fit).
    """
    # min(.., max_bs) also maps "nothing fits" (0) to 0.
    rule = np.floor(np.asarray(max_bs) * 0.125)  # max_bs - max_bs mod 8, for max_bs >= 0
    rule *= 8.0
    np.clip(rule, 8, 1024, out=rule)
    return np.minimum(rule, max_bs, out=rule)
