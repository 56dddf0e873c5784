"""One transformer layer on one GPU, operation by operation, from measured kernels.

Every function returns seconds on one GPU of an island running ``tp``-way tensor
parallel attention and ``ep``-way expert parallelism, for ``rows`` tokens passing
through the layer on that GPU's attention group (decode: the batch; prefill: the
prompt tokens of one forward pass).  Arguments broadcast: configuration quantities
are (C, 1) columns, token counts (C, K) or (1, K) rows.  The kernel times come from
:class:`perfmodel.kernels.library.KernelSet`; the shapes are those the serving
engines run:

* GQA / MHA attention: fused QKV projection (KV heads split ``min(tp, kv)`` ways and
  replicated beyond) and the output projection;
* MLA (DeepSeek): q_a and kv_a down-projections (replicated over tp), q_b, then either
  the kv_b up-projection (prefill, non-absorbed) or the absorbed per-head products
  W_UK / W_UV (decode), and the output projection;
* dense MLP and shared experts: fused gate+up and down projections split tp ways;
* routed experts: the measured fused MoE kernel (routing, grouped GEMMs, finalize)
  for all the island's tokens, experts sharded ep ways by expert and G / ep by width;
* element-wise kernels (two fused add+RMSNorm, one activation): memory passes at the
  0.8 of HBM bandwidth that NVIDIA's own system files use for memory-bound ops, plus
  the GPU's kernel launch floor each.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from perfmodel.kernels.library import KernelSet
from perfmodel.models import ModelSpec

#: Share of HBM bandwidth element-wise kernels reach (aiconfigurator-core's system
#: files: ``mem_bw_empirical_scaling_factor: 0.8``).
ELEMENTWISE_BW_SHARE = 0.8
ELEMENTWISE_KERNELS = 3


def kv_heads_per_gpu(model: ModelSpec, tp):
    return np.ceil(model.kv_heads / np.minimum(tp, model.kv_heads))


def attention_projections(ks: KernelSet, model: ModelSpec, rows, tp, absorbed: bool):
    """Weight GEMMs of one attention layer (everything but the attention core)."""
    kind = model.gemm_kind
    h = model.hidden
    heads = model.heads / np.asarray(tp, float)
    if model.is_mla:
        qk = model.qk_nope_dim + model.qk_rope_dim
        shapes: list[tuple[Any, Any]] = [(model.kv_lora_rank + model.qk_rope_dim, h)]  # kv_a
        if model.q_lora_rank:
            shapes += [(model.q_lora_rank, h), (heads * qk, model.q_lora_rank)]  # q_a, q_b
        else:
            shapes += [(heads * qk, h)]
        if not absorbed:
            shapes += [(heads * (model.qk_nope_dim + model.v_head_dim), model.kv_lora_rank)]
        shapes += [(h, heads * model.v_head_dim)]  # o_proj
        t = ks.gemm_sum(rows, shapes, kind)
        if absorbed:  # W_UK and W_UV applied per head to the latent (bf16 batched GEMMs)
            t = t + ks.gemm_sum(rows, [(heads * model.kv_lora_rank, model.qk_nope_dim),
                                       (heads * model.v_head_dim, model.kv_lora_rank)], "bf16")
        return t
    d = model.head_dim
    qkv = (heads + 2.0 * kv_heads_per_gpu(model, tp)) * d
    return ks.gemm_sum(rows, [(qkv, h), (h, heads * d)], kind)


def dense_mlp(ks: KernelSet, model: ModelSpec, rows, tp, width: float):
    """Gated MLP of intermediate ``width`` split tp ways (dense layers, shared experts)."""
    if width <= 0:
        return 0.0 * np.asarray(rows, float)
    tp = np.asarray(tp, float)
    return ks.gemm_sum(rows, [(2.0 * width / tp, model.hidden), (model.hidden, width / tp)],
                       model.gemm_kind)


def router(ks: KernelSet, model: ModelSpec, rows):
    return ks.gemm(rows, model.routed_experts, model.hidden, "bf16")


def routed_experts(ks: KernelSet, model: ModelSpec, rows, tp, dp, ep, eplb_residual):
    """The fused MoE kernel on one GPU, at the busiest rank's load.

    All dp attention groups' tokens, ``rows x dp``, enter the island's MoE, whose
    G = tp x dp GPUs hold the experts ep ways by expert and G / ep ways by width
    (:func:`perfmodel.memory.routed_expert_params_per_gpu`) -- the database's
    ``num_tokens``, ``moe_ep_size`` and ``moe_tp_size``.  The load skew of real routing
    across the ep ranks is the database's power-law / balanced ratio at the same tokens
    per expert and ep, with ``eplb_residual`` of its excess left when the engine
    balances experts.
    """
    tokens = np.asarray(rows, float) * dp
    inter = model.moe_intermediate * np.asarray(ep, float) / (np.asarray(tp, float) * dp)
    t = ks.moe(tokens, model.hidden, inter, model.experts_per_token, model.routed_experts, ep,
               model.gemm_kind)
    tpe = tokens * model.experts_per_token / model.routed_experts
    skew = ks.moe_imbalance(tpe, ep)
    return t * (1.0 + (skew - 1.0) * eplb_residual), skew


def tp_allreduce(ks: KernelSet, model: ModelSpec, rows, tp, domain: int):
    """Two all-reduces per layer (after attention and after the MLP) of bf16 hidden
    vectors across the tensor-parallel group."""
    tp = np.asarray(tp, float)
    nbytes = np.asarray(rows, float) * model.hidden * 2.0
    out = np.zeros(np.broadcast_shapes(np.shape(tp), np.shape(nbytes)))
    for t in np.unique(tp):
        if t <= 1:
            continue
        sel = np.broadcast_to(tp == t, out.shape)
        val = 2.0 * ks.allreduce(np.broadcast_to(nbytes, out.shape), int(t),
                                 scaleout=t > domain)
        out = np.where(sel, val, out)
    return out


def alltoall_bytes(model: ModelSpec, tokens_per_gpu, ep, domain: int, mode: str,
                   dispatch_bytes: float):
    """(intra-domain, inter-domain) bytes one GPU sends in a dispatch, per element size
    ``dispatch_bytes``; a combine returns the same copies (at 2 bytes per element).

    ``ll`` (decode, DeepEP low-latency): one copy per routed expert held by another GPU;
    copies to other domains go over the scale-out network directly.  ``normal``
    (prefill): one copy per distinct remote GPU inside the domain, and one per remote
    domain that holds one of the token's experts (forwarded inside it over NVLink),
    E = (D - 1)(1 - (1 - 1/D)^k), capped by group-limited routing at the number of
    domains the allowed groups span.
    """
    k = model.experts_per_token
    ep = np.asarray(ep, float)
    local = np.minimum(ep, domain)
    domains = np.ceil(ep / domain)
    per = np.asarray(tokens_per_gpu, float) * model.hidden * dispatch_bytes
    if mode == "ll":
        intra = per * k * (local - 1.0) / ep
        inter = per * k * (ep - local) / ep
        return intra, inter
    intra = per * (local - 1.0) * (1.0 - (1.0 - 1.0 / ep) ** k)
    remote = (domains - 1.0) * (1.0 - (1.0 - 1.0 / domains) ** k)
    if model.group_limited_routing:
        span = model.route_groups_limit * np.maximum(domains / model.route_groups, 1.0)
        remote = np.minimum(remote, np.maximum(span - 1.0, 0.0))
    return intra, per * remote


def moe_comm(ks: KernelSet, model: ModelSpec, rows, tp, ep, domain: int, mode: str):
    """(dispatch, combine) seconds of one MoE layer's expert all-to-all."""
    tokens = np.asarray(rows, float) / tp
    dispatch_elem = 1.0 if model.weight_dtype in ("fp8", "fp4") else 2.0
    di, do = alltoall_bytes(model, tokens, ep, domain, mode, dispatch_elem)
    ci, co = alltoall_bytes(model, tokens, ep, domain, mode, 2.0)
    active = np.asarray(ep, float) > 1
    dispatch = np.where(active, ks.alltoall(di, do, mode, "dispatch"), 0.0)
    combine = np.where(active, ks.alltoall(ci, co, mode, "combine"), 0.0)
    return dispatch, combine


def elementwise(ks: KernelSet, model: ModelSpec, rows):
    """Norms and activation of one layer: three kernels, each a read and a write of the
    hidden vectors (the activation reads the gate and up halves: counted as one)."""
    nbytes = np.asarray(rows, float) * model.hidden * 2.0 * 2.0 * ELEMENTWISE_KERNELS
    return ELEMENTWISE_KERNELS * ks.kernel_floor + nbytes / (ks.bandwidth
                                                             * ELEMENTWISE_BW_SHARE)


def vocab_shards(tp, ep):
    """GPUs the embedding and LM head are split over (vocabulary parallel): the tensor-
    parallel group, or -- when attention is data-parallel beside expert parallelism, as
    SGLang and TRT-LLM deploy DeepSeek -- the expert-parallel GPUs of one node."""
    return np.maximum(np.asarray(tp, float), np.minimum(np.asarray(ep, float), 8.0))


def lm_head(ks: KernelSet, model: ModelSpec, rows, tp, ep):
    """Logits of ``rows`` tokens per attention group: the vocabulary split over
    :func:`vocab_shards` GPUs, each computing its slice for all their groups' tokens."""
    w = vocab_shards(tp, ep)
    return ks.gemm(np.asarray(rows, float) * w / np.asarray(tp, float), model.vocab / w,
                   model.hidden, "bf16")
