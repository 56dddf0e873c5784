"""Fitting the kernel models of :mod:`perfmodel.kernels.models` to measured latencies.

Pure functions of arrays (the parquet reading is in ``scripts/calibrate_kernels.py``);
every fit minimises squared *log* error, so a 10 % miss on a 5 us kernel weighs the
same as on a 5 ms one.  Observations are (shape, latency in seconds) rows of one GPU,
one engine and one precision; the roofline of each row is computed with the same
functions the runtime uses (:mod:`perfmodel.kernels.ops`).

Launch floors: ``floor = 0.9 x`` the smallest latency of the table -- the part of a
tiny kernel's time that does not scale with its work (launch, synchronisation); the
efficiency grid then describes the rest.  "The table" is every measured row, including
the cache-resident ones the grid is not fitted on
(:func:`perfmodel.kernels.observations.streaming`): a kernel's launch and
synchronisation cost the same whether its operands sit in L2 or in HBM, and taking the
floor from the streaming rows alone made it the time of the smallest *large* kernel
(B200's absorbed-MLA decode: 32-36 us against 9-13 us measured at batch 1).  Keeping
the floor absolute (in seconds) rather than folding it into the efficiency is what lets
a fit transfer to a faster GPU of the same architecture (the floor does not shrink with
bandwidth).
"""

from __future__ import annotations

import numpy as np

from perfmodel.kernels import ops
from perfmodel.kernels.grid import LogGrid, fit_grid
from perfmodel.kernels.models import (
    AllToAllModel,
    CurveModel,
    EfficiencyModel,
)

FLOOR_SHARE = 0.9
SMOOTH = 0.1


def _efficiency_fit(t_roof, latency, coords, lo, step, shape, peak, bandwidth,
                    fastest: float | None = None) -> EfficiencyModel:
    """``fastest``: the table's fastest measured row in seconds (default: the fastest
    of ``latency``), whose :data:`FLOOR_SHARE` is the launch floor."""
    latency = np.asarray(latency, float)
    floor = FLOOR_SHARE * float(fastest if fastest else latency.min())
    z = np.log(np.asarray(t_roof) / np.maximum(latency - floor, 1e-3 * floor))
    grid = fit_grid(list(coords), z, lo, step, shape, SMOOTH)
    return EfficiencyModel(floor, grid, peak, bandwidth)


# --------------------------------------------------------------------------- GEMM
GEMM_GRID = ((0.0, 5.0, 5.0), (1.0, 1.0, 1.0), (17, 12, 12))  # log2 m 0..16, n, k 32..64k


def fit_gemm(m, n, k, latency, kind: str, peak: float, bandwidth: float,
             fastest: float | None = None) -> EfficiencyModel:
    flops, nbytes = ops.gemm_work(m, n, k, kind)
    t_roof = ops.roofline(flops, nbytes, peak, bandwidth)
    return _efficiency_fit(t_roof, latency, ops.gemm_coords(m, n, k), *GEMM_GRID, peak,
                           bandwidth, fastest)


# --------------------------------------------------------------------------- MoE
# log2 tokens per expert -8..8, log2(hidden x inter) 20..28, log2 local experts 0..8,
# log2 tokens 0..16 (every second power of two)
MOE_GRID = ((-8.0, 20.0, 0.0, 0.0), (1.0, 1.0, 1.0, 2.0), (17, 9, 9, 9))


def fit_moe(tokens, hidden, inter, topk, experts, ep, latency, kind: str, peak: float,
            bandwidth: float, fastest: float | None = None) -> EfficiencyModel:
    """Balanced-routing rows of one precision (``inter`` already divided by moe_tp)."""
    flops, nbytes = ops.moe_work(tokens, hidden, inter, topk, experts, ep, kind,
                                 balanced=True)
    t_roof = ops.roofline(flops, nbytes, peak, bandwidth)
    coords = ops.moe_coords(tokens, hidden, inter, topk, experts, ep)
    return _efficiency_fit(t_roof, latency, coords, *MOE_GRID, peak, bandwidth,
                           fastest)


IMBALANCE_GRID = ((-8.0, 0.0), (1.0, 1.0), (17, 9))  # log2 tokens/expert, log2 ep 0..8


def fit_imbalance(tokens_per_expert, ep, ratio) -> LogGrid:
    """ln of the busiest rank's slowdown under skewed routing, measured as the latency
    ratio of power-law to balanced rows of the same shape; floored at 1 (a rank that
    happens to receive fewer distinct experts is not faster than the step it waits in)."""
    z = np.log(np.maximum(np.asarray(ratio, float), 1.0))
    lo, step, shape = IMBALANCE_GRID
    return fit_grid([np.log2(tokens_per_expert), np.log2(ep)], z, lo, step, shape, 0.3)


# --------------------------------------------------------------------------- attention
CONTEXT_GRID = ((0.0, 0.0, 6.0), (1.0, 1.0, 1.0), (16, 14, 4))  # log2 s, b*h, head_dim


def fit_context_attention(batch, seq, heads, kv_heads, head_dim, latency, kind: str,
                          peak: float, bandwidth: float, fastest: float | None = None
                          ) -> EfficiencyModel:
    seq = np.asarray(seq, float)
    pairs = 0.5 * seq * (seq + 1.0)
    flops, nbytes = ops.context_attention_work(batch, pairs, seq, heads, kv_heads, head_dim,
                                               kind)
    t_roof = ops.roofline(flops, nbytes, peak, bandwidth)
    coords = ops.context_coords(seq, np.asarray(batch) * np.asarray(heads), head_dim)
    return _efficiency_fit(t_roof, latency, coords, *CONTEXT_GRID, peak, bandwidth,
                           fastest)


MLA_CONTEXT_GRID = ((0.0, 0.0), (1.0, 1.0), (16, 14))


def fit_mla_context(batch, seq, heads, latency, peak: float, bandwidth: float,
                    fastest: float | None = None) -> EfficiencyModel:
    seq = np.asarray(seq, float)
    pairs = 0.5 * seq * (seq + 1.0)
    flops, nbytes = ops.mla_context_work(batch, pairs, seq, heads)
    t_roof = ops.roofline(flops, nbytes, peak, bandwidth)
    coords = ops.context_coords(seq, np.asarray(batch) * np.asarray(heads), 128.0)[:2]
    return _efficiency_fit(t_roof, latency, coords, *MLA_CONTEXT_GRID, peak, bandwidth,
                           fastest)


DECODE_GRID = ((0.0, 0.0, 0.0, 6.0), (1.0, 1.0, 1.0, 1.0), (18, 18, 7, 3))


def fit_decode_attention(batch, context, heads, kv_heads, head_dim, latency, kv_kind: str,
                         peak: float, bandwidth: float, fastest: float | None = None
                         ) -> EfficiencyModel:
    flops, nbytes = ops.decode_attention_work(batch, context, heads, kv_heads, head_dim,
                                              kv_kind)
    t_roof = ops.roofline(flops, nbytes, peak, bandwidth)
    coords = ops.decode_attention_coords(batch, context, heads, kv_heads, head_dim)
    return _efficiency_fit(t_roof, latency, coords, *DECODE_GRID, peak, bandwidth,
                           fastest)


MLA_DECODE_GRID = ((0.0, 0.0, 0.0), (1.0, 1.0, 1.0), (12, 18, 8))


def fit_mla_decode(batch, context, heads, latency, kv_kind: str, peak: float,
                   bandwidth: float, fastest: float | None = None) -> EfficiencyModel:
    flops, nbytes = ops.mla_decode_work(batch, context, heads, kv_kind)
    t_roof = ops.roofline(flops, nbytes, peak, bandwidth)
    coords = ops.mla_decode_coords(batch, context, heads)
    return _efficiency_fit(t_roof, latency, coords, *MLA_DECODE_GRID, peak, bandwidth,
                           fastest)


# --------------------------------------------------------------------------- comm
def fit_curve(nbytes, latency) -> CurveModel:
    """Median latency per measured message size (duplicates collapse), in log-log."""
    nbytes = np.asarray(nbytes, float)
    latency = np.asarray(latency, float)
    sizes = np.unique(nbytes)
    med = np.array([np.median(latency[nbytes == s]) for s in sizes])
    med = np.maximum.accumulate(med)  # a larger message never completes sooner
    return CurveModel(np.log2(sizes), np.log(med))


def fit_alltoall(bytes_per_gpu, latency, link: float) -> AllToAllModel:
    """t0 and link efficiency of t = t0 + bytes / (link eff), least squares in log space."""
    from scipy.optimize import least_squares

    x = np.asarray(bytes_per_gpu, float)
    t = np.asarray(latency, float)

    def resid(p):
        t0, eff = np.exp(p)
        return np.log(t0 + x / (link * eff)) - np.log(t)

    sol = least_squares(resid, np.log([t.min(), 0.5]),
                        bounds=(np.log([1e-7, 1e-3]), np.log([1e-2, 2.0])))
    t0, eff = np.exp(sol.x)
    return AllToAllModel(float(t0), float(eff), link)
