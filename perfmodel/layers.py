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
* MLA (DeepSeek): the q_a and kv_a down-projections as one fused GEMM (replicated over
  tp), q_b, then either
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
    kind = model.attn_gemm_kind
    h = model.hidden
    heads = model.heads / np.asarray(tp, float)
    if model.is_mla:
        qk = model.qk_nope_dim + model.qk_rope_dim
        # q_a and kv_a read the same hidden states and are one fused GEMM in all three
        # engines (SGLang / vLLM ``fused_qkv_a_proj(_with_mqa)``, TRT-LLM's ``fused_a``):
        # one kernel of q_lora + kv_lora + rope outputs, not two.
        a_out = model.kv_lora_rank + model.qk_rope_dim + (model.q_lora_rank or 0)
        shapes: list[tuple[Any, Any]] = [(a_out, h)]  # fused q_a + kv_a
        if model.q_lora_rank:
            shapes += [(heads * qk, model.q_lora_rank)]  # q_b
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


#: How an engine returns expert-TP partial sums to the attention-DP groups when the
#: experts are split by width over the whole island (ep 1, dp > 1): SGLang's DP attention
#: gathers every group's tokens and all-reduces the MoE output before each group takes
#: its slice (``dp_attention.py``: ``dp_gather`` / ``tensor_model_parallel_all_reduce``
#: / ``dp_scatter``); TRT-LLM's attention DP all-gathers and reduce-scatters
#: (``allgather`` + ``reducescatter`` around the MoE), as vLLM's default
#: ``allgather_reducescatter`` all2all backend does.
DP_REDUCE = {"sglang": "allreduce"}
DP_REDUCE_DEFAULT = "reducescatter"


def _ring(ks: KernelSet, kind: str, nbytes, group, domain: int):
    """(seconds, bytes each GPU sends) of a ring collective over ``group`` GPUs whose
    buffer is ``nbytes`` (all-reduce: the reduced vector; all-gather: the gathered one;
    reduce-scatter: the input).  All-gather and reduce-scatter are each half of an
    all-reduce (NCCL's ring all-reduce is a reduce-scatter then an all-gather), on the
    measured all-reduce curves.  A group wider than the NVLink domain runs at the
    scale-out bandwidth and NCCL's network latency (``KernelSet.allreduce(..., nodes)``,
    ``nodes = ceil(group / domain)``); PCIe parts pay their PCIe figure inside a server."""
    group = np.asarray(group, float)
    nbytes = np.asarray(nbytes, float)
    shape = np.broadcast_shapes(np.shape(group), np.shape(nbytes))
    share = 1.0 if kind == "allreduce" else 0.5

    def priced(b, g: float) -> np.ndarray:
        return share * np.asarray(ks.allreduce(b, int(g), nodes=int(np.ceil(g / domain))),
                                  float)

    sizes = np.unique(group)
    wide = sizes[sizes > 1]
    if not len(wide):  # no GPU sends anything
        zero = np.zeros(shape)
        return zero, zero.copy()
    if len(sizes) == 1:  # one group size: no per-size masks
        out = np.broadcast_to(priced(nbytes, wide[0]), shape)
    else:
        out = np.zeros(shape)
        full = np.broadcast_to(nbytes, shape)
        groups = np.broadcast_to(group, shape)
        for g in wide:
            sel = groups == g  # price only the elements of this group size
            out[sel] = priced(full[sel], g)
    sent = nbytes * share * 2.0 * np.maximum(group - 1.0, 0.0) / np.maximum(group, 1.0)
    return out, sent + 0.0 * out


def tp_allreduce(ks: KernelSet, model: ModelSpec, rows, tp, domain: int):
    """Two all-reduces per layer (after attention and after the MLP) of bf16 hidden
    vectors across the tensor-parallel group."""
    nbytes = np.asarray(rows, float) * model.hidden * 2.0
    return 2.0 * _ring(ks, "allreduce", nbytes, tp, domain)[0]


def expert_width(tp, dp, ep):
    """W = G / ep: GPUs each routed expert is split over by width (expert TP)."""
    return np.asarray(tp, float) * np.asarray(dp, float) / np.asarray(ep, float)


def alltoall_bytes(model: ModelSpec, tokens_per_gpu, ep, domain, mode: str,
                   dispatch_bytes: float):
    """(intra-domain, inter-domain) bytes one GPU sends in a dispatch, per element size
    ``dispatch_bytes``; a combine returns the same copies (at 2 bytes per element).

    ``ll`` (decode, DeepEP low-latency): one copy per routed expert held by another GPU;
    copies to other domains go over the scale-out network directly.  ``normal``
    (prefill): one copy per distinct remote GPU inside the domain, and one per remote
    domain that holds one of the token's experts (forwarded inside it over NVLink),
    E = (D - 1)(1 - (1 - 1/D)^k), capped by group-limited routing at the number of
    domains the allowed groups span.  ``domain``: EP ranks per NVLink domain.
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


def _dispatch_elem(model: ModelSpec) -> float:
    return 1.0 if model.weight_dtype in ("fp8", "fp4") else 2.0


def _a2a(ks: KernelSet, model: ModelSpec, rows, tp, ep, domain: int, mode: str, dp=None):
    """Per phase (dispatch, combine): (seconds, bytes sent per GPU, crosses domains);
    zero without attention data parallelism (``dp`` 1: see below)."""
    tokens = np.asarray(rows, float) / tp
    width = 1.0 if dp is None else np.maximum(expert_width(tp, dp, ep), 1.0)
    # With expert TP inside EP (W > 1) each EP rank is W GPUs: a token goes to the W
    # GPUs holding its expert's slices and W partial sums come back, so the bytes scale
    # by W and a domain holds domain / W ranks.
    per_domain = np.maximum(np.floor(domain / width), 1.0)
    # Attention tensor-parallel over the whole island (dp 1): after its all-reduce every
    # GPU holds every token, so each computes its own experts' share in place and the
    # layer's second all-reduce (tp_allreduce) sums the outputs -- TRT-LLM's and
    # SGLang's expert parallelism without attention DP.  No dispatch or combine exists.
    active = np.asarray(ep, float) > 1
    if dp is not None:
        active = active & (np.asarray(dp, float) > 1)
    out = []
    for phase, elem in (("dispatch", _dispatch_elem(model)), ("combine", 2.0)):
        intra, inter = alltoall_bytes(model, tokens, ep, per_domain, mode, elem)
        intra, inter = intra * width, inter * width
        t = np.where(active, ks.alltoall(intra, inter, mode, phase), 0.0)
        out.append((t, np.where(active, intra + inter, 0.0),
                    np.where(active, inter > 0, False)))
    return out


def moe_comm(ks: KernelSet, model: ModelSpec, rows, tp, ep, domain: int, mode: str,
             dp=None):
    """(dispatch, combine) seconds of one MoE layer's expert all-to-all; with ``dp``, an
    expert split W = tp dp / ep > 1 ways by width multiplies the copies by W."""
    (d, _, _), (c, _, _) = _a2a(ks, model, rows, tp, ep, domain, mode, dp)
    return d, c


def dp_gather(ks: KernelSet, model: ModelSpec, rows, tp, dp, ep, domain: int,
              engine: str = ""):
    """(gather, reduce) seconds of one MoE layer when attention is data-parallel and
    the experts are split by width over the whole island (dp > 1, ep = 1, W = G): every
    GPU gathers all dp groups' ``rows`` tokens (element size of the dispatch), then the
    partial sums are reduced across the G GPUs (:data:`DP_REDUCE`), each at the tier the
    G GPUs span."""
    return tuple(t for t, _, _ in _dp_parts(ks, model, rows, tp, dp, ep, domain, engine))


def _dp_parts(ks, model, rows, tp, dp, ep, domain, engine):
    tp, dp, ep = (np.asarray(x, float) for x in (tp, dp, ep))
    g = tp * dp
    active = (dp > 1) & (ep <= 1) & bool(model.is_moe)
    group = np.where(active, g, 1.0)
    total = np.asarray(rows, float) * dp * model.hidden
    gather, gsent = _ring(ks, "allgather", total * _dispatch_elem(model), group, domain)
    kind = DP_REDUCE.get(engine, DP_REDUCE_DEFAULT)
    reduce_, rsent = _ring(ks, kind, total * 2.0, group, domain)
    # an all-gather's sender pushes its own share to every other GPU: (G-1)/G of the
    # gathered buffer passes through each GPU's links, as _ring counts
    return ((gather, gsent, group), (reduce_, rsent, group))


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


def logits_gather(ks: KernelSet, model: ModelSpec, rows, tp, ep, domain: int):
    """Seconds to gather the vocabulary-parallel logits of ``rows`` tokens per attention
    group: the :func:`vocab_shards` GPUs each hold a slice of every token's logits (bf16)
    and all-gather them (vLLM ``LogitsProcessor._gather_logits``, SGLang
    ``LogitsProcessor``: ``tensor_model_parallel_all_gather``); where the shards reach
    beyond the attention group (w > tp) the groups' hidden states are all-gathered
    first."""
    return sum(t for t, _, _ in _head_parts(ks, model, rows, tp, ep, domain))


def _head_parts(ks, model, rows, tp, ep, domain):
    w = vocab_shards(tp, ep)
    rows = np.asarray(rows, float)
    tp = np.asarray(tp, float)
    hidden, hsent = _ring(ks, "allgather", rows * w / tp * model.hidden * 2.0,
                          np.where(w > tp, w, 1.0), domain)
    logits, lsent = _ring(ks, "allgather", rows * model.vocab * 2.0, w, domain)
    return ((hidden, hsent, np.where(w > tp, w, 1.0)), (logits, lsent, w))


def collectives(ks: KernelSet, model: ModelSpec, rows, tp, dp, ep, domain: int, mode: str,
                engine: str = "", head_rows=None, ways: float = 1.0
                ) -> list[dict[str, Any]]:
    """Every collective of one forward pass, for the ``planner perf --json`` listing:
    name, kind, how many times a pass runs it (``per``: every layer, every MoE layer, or
    once), bytes each GPU sends, group size, tier (``node``: inside the NVLink domain /
    server; ``scale-out``: across servers) and seconds each.  ``rows``: tokens per
    attention group through a layer; ``ways``: micro-batches the layer's compute (and
    its tensor-parallel all-reduces) runs in; ``head_rows``: tokens reaching the LM head
    (default ``rows``).  Scalar configurations."""
    tp_, dp_, ep_ = (float(np.ravel(x)[0]) for x in (tp, dp, ep))
    rows_ = float(np.ravel(rows)[0])
    head = rows_ if head_rows is None else float(np.ravel(head_rows)[0])
    out: list[dict[str, Any]] = []

    def add(name, kind, per, count, t, sent, group, scaleout):
        group = float(np.ravel(group)[0])
        if group <= 1:
            return
        out.append({"name": name, "kind": kind, "per": per, "count_per_layer": count,
                    "bytes_per_gpu": float(np.ravel(sent)[0]), "group": int(group),
                    "tier": "scale-out" if bool(np.ravel(scaleout)[0]) else "node",
                    "seconds": float(np.ravel(t)[0])})

    nbytes = rows_ / ways * model.hidden * 2.0
    t, sent = _ring(ks, "allreduce", nbytes, tp_, domain)
    add("tp_allreduce", "allreduce", "layer", int(2 * ways), t, sent, tp_, tp_ > domain)
    if model.is_moe:
        g = tp_ * dp_
        (gt, gs, gg), (rt, rs, rg) = _dp_parts(ks, model, rows_, tp_, dp_, ep_, domain,
                                               engine)
        add("dp_allgather", "allgather", "moe_layer", 1, gt, gs, gg, g > domain)
        add("expert_reduce", DP_REDUCE.get(engine, DP_REDUCE_DEFAULT), "moe_layer", 1, rt,
            rs, rg, g > domain)
        for phase, (at, asent, across) in zip(("dispatch", "combine"),
                                             _a2a(ks, model, rows_, tp_, ep_, domain, mode,
                                                  dp_), strict=True):
            add(f"alltoall_{phase}", "alltoall", "moe_layer", 1, at, asent,
                g if (ep_ > 1 and dp_ > 1) else 1.0, across)
    (ht, hs, hg), (lt, ls, lg) = _head_parts(ks, model, head, tp_, ep_, domain)
    add("lm_head_hidden_allgather", "allgather", "pass", 1, ht, hs, hg,
        float(np.ravel(hg)[0]) > domain)
    add("logits_allgather", "allgather", "pass", 1, lt, ls, lg,
        float(np.ravel(lg)[0]) > domain)
    return out


def lm_head(ks: KernelSet, model: ModelSpec, rows, tp, ep):
    """Logits of ``rows`` tokens per attention group: the vocabulary split over
    :func:`vocab_shards` GPUs, each computing its slice for all their groups' tokens."""
    w = vocab_shards(tp, ep)
    return ks.gemm(np.asarray(rows, float) * w / np.asarray(tp, float), model.vocab / w,
                   model.hidden, "bf16")
