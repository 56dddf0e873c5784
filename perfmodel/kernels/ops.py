"""Operation shapes -> FLOPs, bytes and roofline time; the one definition shared by the
calibration (which turns measured latencies into efficiencies) and the runtime (which
turns efficiencies back into latencies), so the two can never disagree.

Every kernel model in this package has the form

    t = t_floor + t_roof / eta,    t_roof = max(F / P, B / W)

with F the FLOPs, B the minimum HBM bytes, P the GPU's dense peak for the op's compute
precision and W its HBM bandwidth (datasheet figures, ``perfmodel.hardware``); ``eta``
is the fitted efficiency (``perfmodel.kernels.fit``) and ``t_floor`` the op's launch
floor.  Arguments broadcast (numpy).

Precision kinds: ``bf16``, ``fp8`` (per-tensor scales), ``fp8_block`` (1x128 / 128x128
block scales, DeepSeek-style), ``fp4`` (NVFP4).  Activations enter GEMMs in bf16 (the
measured fp8 GEMMs include quantising them), outputs leave in bf16.
"""

from __future__ import annotations

import numpy as np

from perfmodel.hardware import GPU
from perfmodel.models import DTYPE_BYTES, KV_DTYPES

WEIGHT_BYTES = {"bf16": 2.0, "fp8": 1.0, "fp8_block": 1.0, "fp4": 0.5625}  # fp4: +1/16 scales
KV_BYTES = {kind: DTYPE_BYTES[kind] for kind in KV_DTYPES}
#: Database dtype names of each precision kind (aiconfigurator-core parquet columns).
DB_DTYPE = {"bf16": "bfloat16", "fp8": "fp8", "fp8_block": "fp8_block", "fp4": "nvfp4"}
MLA_KV_DIM = 576  # latent 512 + rope 64 elements cached per token (DeepSeek-V2/V3)
MLA_LATENT = 512


def compute_precision(kind: str) -> str:
    """The tensor-core rate an op of precision ``kind`` runs at."""
    return {"bf16": "fp16", "fp8": "fp8", "fp8_block": "fp8", "fp4": "fp4"}[kind]


def native(gpu: GPU, kind: str) -> bool:
    """Whether the GPU has tensor cores for ``kind`` (else the weights are upcast and
    the GEMM runs as bf16 reading ``kind``-sized weights: weight-only quantisation)."""
    attr = {"bf16": "fp16_tflops", "fp8": "fp8_tflops", "fp8_block": "fp8_tflops",
            "fp4": "fp4_tflops"}[kind]
    return getattr(gpu, attr) > 0


def peak_flops(gpu: GPU, kind: str) -> float:
    return gpu.tflops(compute_precision(kind)) * 1e12


def hbm(gpu: GPU) -> float:
    return gpu.hbm_gbps * 1e9


def ridge(gpu: GPU, kind: str) -> float:
    """FLOPs per byte at which an op of this precision turns compute-bound."""
    return peak_flops(gpu, kind) / hbm(gpu)


# ---------------------------------------------------------------------------- GEMM
def gemm_work(m, n, k, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """y[m, n] = x[m, k] W[n, k]^T: FLOPs and bytes (bf16 x in, weights, bf16 y out)."""
    m, n, k = (np.asarray(v, dtype=float) for v in (m, n, k))
    flops = 2.0 * m * n * k
    nbytes = 2.0 * m * k + WEIGHT_BYTES[kind] * n * k + 2.0 * m * n
    return flops, nbytes


def gemm_coords(m, n, k):
    """log2 (m, n, k) of a GEMM."""
    return (np.log2(np.maximum(np.asarray(m, float), 1.0)), np.log2(n), np.log2(k))


# ---------------------------------------------------------------------------- MoE
def moe_touched(tokens, topk, experts, ep, balanced: bool):
    """Local experts that receive at least one token.  ``balanced``: the database's
    round-robin assignment (min(E, t k) distinct experts); otherwise independent
    uniform routing, E_l (1 - (1 - 1/E)^(t k))."""
    tokens, ep = np.asarray(tokens, float), np.asarray(ep, float)
    local = experts / ep
    if balanced:
        return np.minimum(experts, tokens * topk) / ep
    return local * -np.expm1(tokens * topk * np.log1p(-1.0 / experts))


def moe_work(tokens, hidden, inter, topk, experts, ep, kind: str, balanced: bool = False
             ) -> tuple[np.ndarray, np.ndarray]:
    """One gated MoE layer (w1, w3, w2 per expert) on one GPU of an expert-parallel group
    of ``ep`` GPUs that together receive ``tokens`` tokens: FLOPs and bytes."""
    tokens, ep = np.asarray(tokens, float), np.asarray(ep, float)
    assignments = tokens * topk / ep
    flops = 6.0 * assignments * hidden * inter
    touched = moe_touched(tokens, topk, experts, ep, balanced)
    nbytes = (WEIGHT_BYTES[kind] * 3.0 * hidden * inter * touched
              + assignments * hidden * 2.0 * 2.0)
    return flops, nbytes


def moe_coords(tokens, hidden, inter, topk, experts, ep):
    """Grid coordinates of a MoE layer: tokens per expert, expert size, local experts,
    tokens (routing and permutation scale with the tokens, the GEMMs with the first)."""
    tokens, ep = np.asarray(tokens, float), np.asarray(ep, float)
    return (np.log2(np.maximum(tokens * topk / experts, 1e-6)),
            np.log2(hidden * inter) + 0.0 * tokens,
            np.log2(np.maximum(experts / ep, 1.0)),
            np.log2(np.maximum(tokens, 1.0)))


# ---------------------------------------------------------------------------- attention
def context_attention_work(batch, pairs, new_tokens, heads, kv_heads, head_dim,
                           kind: str = "bf16"):
    """Causal prefill attention over ``pairs`` query-key pairs per sequence (s(s+1)/2
    without a cached prefix): QK^T and PV are 4 d FLOPs per pair and head; bytes are
    Q, O (bf16) and K, V (KV dtype) of the new tokens."""
    batch = np.asarray(batch, float)
    flops = 4.0 * head_dim * heads * batch * np.asarray(pairs, float)
    nbytes = batch * np.asarray(new_tokens, float) * head_dim * (
        4.0 * heads + 2.0 * KV_BYTES.get(kind, 2.0) * kv_heads)
    return flops, nbytes


def mla_context_work(batch, pairs, new_tokens, heads):
    """Non-absorbed MLA prefill (DeepSeek): QK over 192 dims (nope 128 + rope 64), PV over
    128 dims: 2 (192 + 128) FLOPs per pair and head."""
    batch = np.asarray(batch, float)
    flops = 640.0 * heads * batch * np.asarray(pairs, float)
    nbytes = batch * np.asarray(new_tokens, float) * heads * (192.0 * 2 + 128.0 * 2 * 2)
    return flops, nbytes


def context_coords(seq, batch_heads, head_dim):
    """log2 (sequence length, sequences x heads, head dim) of a prefill attention."""
    return (np.log2(np.maximum(seq, 1.0)), np.log2(np.maximum(batch_heads, 1.0)),
            np.log2(head_dim) + 0.0 * np.asarray(seq, float))


def decode_attention_work(batch, context, heads, kv_heads, head_dim, kv_kind: str
                          ) -> tuple[np.ndarray, np.ndarray]:
    """One decode step over ``batch`` sequences of ``context`` cached tokens: QK^T and PV
    FLOPs, and the KV bytes read (plus the query and output vectors)."""
    bc = np.asarray(batch, float) * np.asarray(context, float)
    flops = 4.0 * heads * head_dim * bc
    nbytes = bc * 2.0 * kv_heads * head_dim * KV_BYTES[kv_kind] + (
        np.asarray(batch, float) * heads * head_dim * 4.0)
    return flops, nbytes


def decode_attention_coords(batch, context, heads, kv_heads, head_dim):
    """log2 of the kernel's parallel width (sequences x KV heads), the context, the
    query heads per KV head, and the head dim."""
    b = np.asarray(batch, float)
    ctx = np.asarray(context, float)
    return (np.log2(np.maximum(b * kv_heads, 1.0)), np.log2(np.maximum(ctx, 1.0)),
            np.log2(np.maximum(heads / kv_heads, 1.0)) + 0.0 * ctx,
            np.log2(head_dim) + 0.0 * ctx)


def mla_decode_work(batch, context, heads, kv_kind: str) -> tuple[np.ndarray, np.ndarray]:
    """Absorbed MLA decode (FlashMLA): QK over 576 latent+rope dims and PV over 512, per
    head; one 576-wide latent per cached token, shared by all heads."""
    bc = np.asarray(batch, float) * np.asarray(context, float)
    flops = 2.0 * heads * (MLA_KV_DIM + MLA_LATENT) * bc
    nbytes = bc * MLA_KV_DIM * KV_BYTES[kv_kind] + np.asarray(batch, float) * heads * 2304.0
    return flops, nbytes


def mla_decode_coords(batch, context, heads):
    ctx = np.asarray(context, float)
    return (np.log2(np.maximum(batch, 1.0)) + 0.0 * ctx, np.log2(np.maximum(ctx, 1.0)),
            np.log2(np.maximum(heads, 1.0)) + 0.0 * ctx)


def roofline(flops, nbytes, peak: float, bandwidth: float):
    return np.maximum(np.asarray(flops) / peak, np.asarray(nbytes) / bandwidth)
