"""Roofline kernel times: max(FLOPs / achievable FLOP rate, bytes / achievable bandwidth).

All functions broadcast: configuration quantities are (C, 1) columns, lengths or batch
sizes are (1, S) rows or (C, S) arrays.  Times are in seconds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perfmodel.calibration import Calibration
from perfmodel.hardware import GPU
from perfmodel.models import ModelSpec


@dataclass(frozen=True)
class Rates:
    """Achievable rates of one GPU for one model under one set of configurations."""

    linear_flops: np.ndarray  # FLOP/s for the model's weight GEMMs (C, 1)
    attention_flops: np.ndarray  # FLOP/s for attention cores (bf16)
    hbm_bytes: float  # bytes/s
    tile: int


def rates(gpu: GPU, model: ModelSpec, ep: np.ndarray, calib: Calibration) -> Rates:
    """Peak x efficiency; SMs reserved for expert-parallel communication are taken out
    of the compute rate when that communication overlaps computation (DeepSeek reserves
    20 of 132 H800 SMs for its all-to-all kernels)."""
    precision = {"fp4": "fp4", "fp8": "fp8"}.get(model.weight_dtype, "fp16")
    comm_share = np.where((ep > 1) & calib.overlap_comm, gpu.comm_sms / gpu.sms, 0.0)
    sm_factor = 1.0 - comm_share
    return Rates(
        linear_flops=gpu.tflops(precision) * 1e12 * calib.gemm_efficiency * sm_factor,
        attention_flops=gpu.fp16_tflops * 1e12 * calib.attention_compute_efficiency * sm_factor,
        hbm_bytes=gpu.hbm_gbps * 1e9 * calib.hbm_efficiency,
        tile=calib.gemm_tile,
    )


def tile_efficiency(rows: np.ndarray, tile: int) -> np.ndarray:
    """Useful fraction of a GEMM whose row count is padded up to whole tiles."""
    rows = np.maximum(rows, 1e-9)
    return rows / (np.ceil(rows / tile) * tile)


def gemm_time(tokens, params, weight_bytes: float, r: Rates, weight_fraction=1.0):
    """A weight GEMM over ``tokens`` rows with ``params`` weights held by this GPU.

    ``weight_fraction`` is the share of those weights actually read (experts that
    receive no token in a decode step are not loaded).
    """
    compute = 2.0 * tokens * params / (r.linear_flops * tile_efficiency(tokens, r.tile))
    memory = params * weight_bytes * weight_fraction / r.hbm_bytes
    return np.maximum(compute, memory)


def attention_core_time(pair_flops, kv_bytes, r: Rates):
    """Attention over the KV cache: ``pair_flops`` FLOPs and ``kv_bytes`` KV bytes read."""
    return np.maximum(pair_flops / r.attention_flops, kv_bytes / r.hbm_bytes)
