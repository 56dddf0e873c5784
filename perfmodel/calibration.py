"""Efficiency constants of the analytic model, each with the figure it comes from.

A pure roofline (FLOPs / peak, bytes / bandwidth) is 30-50 % optimistic before
calibration (BLIS reports 36-48 % TPOT error for an uncalibrated roofline; see
docs/validation.md).  The constants below turn peaks into achievable rates.  They are
physical (kernel efficiency, link efficiency, fixed latencies), not per-case fudge
factors, and one set serves every GPU and model.  ``docs/validation.md`` lists the
published figures they are checked against.

Sources (figures quoted in the public material named):
- GEMM: DeepGEMM reports up to ~1350-1550 FP8 TFLOPS on H800 (of 1979 dense) for large
  shapes -> 0.70; Hopper wgmma instructions work on 64-row tiles, so a grouped GEMM whose
  expert receives m tokens does ceil(m/64)*64 rows of work (``gemm_tile``).
- Attention: FlashMLA reaches ~660 TFLOPS bf16 on H800 in the compute-bound case and
  ~3000 GB/s in the memory-bound case (of 989 TFLOPS / 3350 GB/s); FlashAttention-3
  reports 600-740 TFLOPS bf16 on H100 -> 0.60 compute, 0.85 memory.
- Links: DeepEP reports ~150-160 GB/s NVLink (of 200 per direction on H800) and
  ~40-47 GB/s RDMA (of 50) -> 0.78 and 0.85.  Its low-latency kernels take ~100-200 us
  per dispatch/combine at 128 tokens, which sets the inter-domain latency floor.
- Runtime reserve: serving engines keep ~10 % of HBM for activations, CUDA graphs and
  communication buffers (vLLM's default gpu_memory_utilization is 0.9).
- Expert imbalance: even with redundant experts (DeepSeek EPLB) the busiest GPU of an
  expert-parallel group carries more than the mean load; 1.25 is a moderate value.
- Production utilisation: sustained throughput as a fraction of the roofline above.  It
  absorbs what the roofline does not see: scheduling gaps and bursty, autoscaled load,
  stragglers between data-parallel attention groups, uneven context lengths within a
  batch, kernel launch gaps.  It is the one constant fitted to production data: the
  log-space least-squares fit to DeepSeek's two published H800 figures (prefill and
  decode, ``perfmodel.validation.fit_production_utilisation``) gives 0.484, and both are
  then reproduced within 10 %.  It scales throughput, not latency.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Calibration:
    gemm_efficiency: float = 0.70
    gemm_tile: int = 64
    attention_compute_efficiency: float = 0.60
    hbm_efficiency: float = 0.85
    scaleup_efficiency: float = 0.78
    scaleout_efficiency: float = 0.85
    allreduce_latency_us: float = 10.0
    a2a_latency_intra_us: float = 15.0
    a2a_latency_inter_us: float = 60.0
    layer_overhead_prefill_us: float = 40.0
    layer_overhead_decode_us: float = 10.0
    expert_imbalance: float = 1.25
    overlap_comm: bool = True
    runtime_reserve_fraction: float = 0.10
    production_utilisation: float = 0.48

    def key(self) -> tuple:
        return tuple(asdict(self).values())


DEFAULT_CALIBRATION = Calibration()
