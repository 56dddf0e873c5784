"""The thesis's kernel model: rooflines with constant efficiencies (seed 002 §4.2).

Shallowsim, the model the thesis (seed 002) built its tables with, times every kernel as
its roofline at fixed efficiencies.  This class answers the same questions as the
measured :class:`~perfmodel.kernels.library.KernelSet` that way, so that the thesis's
Table 5.1 can be reproduced on the model it was computed with (``--engine roofline``);
the measured kernels are the default everywhere else.  The constants are the ones this
project used before the kernel database (with their sources):

* GEMM 0.70 of peak (DeepGEMM's ~1350-1550 of 1979 FP8 TFLOPS on H800), rows padded to
  64-row Hopper tensor-core tiles, HBM 0.85 (FlashMLA's ~3000 of 3350 GB/s);
* attention 0.60 of the bf16 peak (FlashAttention-3, FlashMLA);
* NVLink 0.78 and RDMA 0.85 of the link (DeepEP), all-reduce latency 10 us, all-to-all
  latency 15 us within and 60 us across scale-up domains;
* routed experts 1.25x the balanced load (busiest expert-parallel rank);
* 10 us of non-GEMM work per layer.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from perfmodel.hardware import GPU
from perfmodel.kernels import ops

GEMM_EFF = 0.70
ATTENTION_EFF = 0.60
HBM_EFF = 0.85
TILE = 64
SCALEUP_EFF = 0.78
SCALEOUT_EFF = 0.85
ALLREDUCE_LATENCY = 10e-6
A2A_LATENCY_INTRA = 15e-6
A2A_LATENCY_INTER = 60e-6
EXPERT_IMBALANCE = 1.25
LAYER_OVERHEAD = 10e-6


def _tile_rows(m):
    m = np.maximum(np.asarray(m, float), 1e-9)
    return np.ceil(m / TILE) * TILE


@dataclass
class RooflineKernels:
    gpu: GPU
    engine: str = "roofline"
    notes: list[str] = field(default_factory=list)

    @property
    def bandwidth(self) -> float:
        return ops.hbm(self.gpu) * HBM_EFF

    def peak(self, kind: str) -> float:
        return ops.peak_flops(self.gpu, kind)

    def gemm(self, m, n, k, kind: str):
        m = np.asarray(m, float)
        flops = 2.0 * _tile_rows(m) * np.asarray(n, float) * np.asarray(k, float)
        weights = ops.WEIGHT_BYTES[kind] * np.asarray(n, float) * np.asarray(k, float)
        return np.maximum(flops / (self.peak(kind) * GEMM_EFF), weights / self.bandwidth)

    def gemm_sum(self, m, shapes, kind: str):
        total = 0.0 * np.asarray(m, float)
        for n, k in shapes:
            total = total + self.gemm(m, n, k, kind)
        return total

    def moe(self, tokens, hidden, inter, topk, experts, ep, kind: str):
        """Local experts each run a tile-padded GEMM of their tokens; an expert with no
        token is not read (expected weight traffic 1 - e^-m of the local experts')."""
        ep = np.asarray(ep, float)
        per_expert = np.asarray(tokens, float) * topk / experts
        local = np.ceil(experts / ep)
        params = 3.0 * hidden * inter
        compute = local * 2.0 * _tile_rows(per_expert) * params / (self.peak(kind) * GEMM_EFF)
        memory = local * -np.expm1(-per_expert) * params * ops.WEIGHT_BYTES[kind] / (
            self.bandwidth)
        return np.maximum(compute, memory) * EXPERT_IMBALANCE

    def moe_imbalance(self, tokens_per_expert, ep):
        return np.ones_like(np.asarray(tokens_per_expert, float))

    def _attention(self, flops, nbytes):
        return np.maximum(flops / (self.peak("bf16") * ATTENTION_EFF), nbytes / self.bandwidth)

    def context_attention(self, batch, seq, pairs, new_tokens, heads, kv_heads, head_dim,
                          kv: str = "bf16", fp8_attention: bool = False):
        return self._attention(*ops.context_attention_work(batch, pairs, new_tokens, heads,
                                                           kv_heads, head_dim, kv))

    def mla_context(self, batch, seq, pairs, new_tokens, heads, kv: str = "bf16"):
        return self._attention(*ops.mla_context_work(batch, pairs, new_tokens, heads))

    def decode_attention(self, batch, context, heads, kv_heads, head_dim, kv: str = "bf16",
                         fp8_attention: bool = False):
        return self._attention(*ops.decode_attention_work(batch, context, heads, kv_heads,
                                                          head_dim, kv))

    def mla_decode(self, batch, context, heads, kv: str = "bf16",
                   fp8_attention: bool = False):
        return self._attention(*ops.mla_decode_work(batch, context, heads, kv))

    @property
    def kernel_floor(self) -> float:
        # layers.elementwise charges three kernels a layer: 10 us of non-GEMM work in all.
        return LAYER_OVERHEAD / 3.0

    def allreduce(self, nbytes, gpus, nodes: int = 1):
        link = (self.gpu.scaleout_gbps * SCALEOUT_EFF if nodes > 1
                else self.gpu.scaleup_gbps * SCALEUP_EFF) * 1e9
        return 2.0 * (gpus - 1.0) / gpus * np.asarray(nbytes, float) / link + ALLREDUCE_LATENCY

    def alltoall(self, bytes_intra, bytes_inter, mode: str, phase: str):
        intra = np.asarray(bytes_intra, float) / (self.gpu.scaleup_gbps * SCALEUP_EFF * 1e9)
        inter = np.asarray(bytes_inter, float) / (self.gpu.scaleout_gbps * SCALEOUT_EFF * 1e9)
        latency = np.where(np.asarray(bytes_inter) > 0, A2A_LATENCY_INTER, A2A_LATENCY_INTRA)
        return np.maximum(intra, inter) + latency
