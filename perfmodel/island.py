"""Island benchmark (seed 002 §4.6.1-4.6.2): per-length prefill and decode throughput of
an island of G GPUs of one type, at the parallel configuration that best fits the workload.

For every valid configuration c (``perfmodel.parallel``) and input length s we compute
R(s, c); the best at each length is R*(s) = max_c R(s, c); configuration c deviates from
it by delta(c, s) = (R*(s) - R(s, c)) / R*(s), and the island uses
c* = argmin_c sum_s delta(c, s) p(s | w).  One configuration per island and phase: an
island cannot run several parallel layouts at once.

Decode throughput follows §4.2.3 with the batch of §4.6.2: bs(s) sequences per attention
group (memory limit at input + maximum decode length, rounded down to a multiple of 8,
clamped to [8, 1024], and capped at what fits), each request generating the mean decode
length d, so R_decode(s) = dp * bs(s) / sum_{i=1}^{d} t_step(s + i).

Results are cached by everything they depend on (GPU, island size, model, workload pmf,
decode lengths, prefix hit rate, SLOs, calibration).
"""

from __future__ import annotations

import hashlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from perfmodel.calibration import DEFAULT_CALIBRATION, Calibration
from perfmodel.decode import step_model
from perfmodel.hardware import GPU
from perfmodel.memory import (
    kv_bytes_per_token_per_gpu,
    max_decode_batch,
    thesis_batch_rule,
    usable_bytes,
    weight_bytes_per_gpu,
)
from perfmodel.models import ModelSpec
from perfmodel.parallel import ConfigGrid, ParallelConfig, enumerate_configs
from perfmodel.prefill import prefill_time


@dataclass(frozen=True)
class SLO:
    """Optional latency ceilings: TTFT excludes slow prefill configurations per length;
    TPOT caps the decode batch."""

    ttft_ms: float | None = None
    tpot_ms: float | None = None


@dataclass(frozen=True)
class PhaseTable:
    phase: str  # "prefill" | "decode"
    config: ParallelConfig | None  # chosen configuration (None: the model fits nowhere)
    rps: np.ndarray  # (S,) requests/s of the whole island at each input length
    latency_ms: np.ndarray  # (S,) TTFT (prefill) or mean TPOT (decode)
    batch: np.ndarray  # (S,) sequences per attention group (prefill: 1)
    configs: tuple[ParallelConfig, ...] = ()
    deviation: np.ndarray = field(default_factory=lambda: np.zeros(0))  # (C,) weighted delta
    reason: str = ""  # why the phase cannot run here, if it cannot

    @property
    def feasible(self) -> bool:
        return bool(np.any(self.rps > 0))


@dataclass(frozen=True)
class IslandTable:
    gpu: str  # type name (the table depends on its physical figures, not its price)
    size: int
    model: str
    prefill: PhaseTable
    decode: PhaseTable


@dataclass(frozen=True)
class WorkloadShape:
    """What the benchmark needs of a workload: p(s) over lengths 0..S-1 and decode lengths."""

    pmf: np.ndarray
    decode_mean: float
    decode_max: int
    prefix_hit_rate: float = 0.0

    def key(self) -> tuple:
        digest = hashlib.blake2b(np.ascontiguousarray(self.pmf, float).tobytes(),
                                 digest_size=16).hexdigest()
        return (digest, len(self.pmf), self.decode_mean, self.decode_max, self.prefix_hit_rate)


_CACHE: dict[tuple, IslandTable] = {}


def _choose(rps_all: np.ndarray, pmf: np.ndarray) -> tuple[int, np.ndarray]:
    """Index of c* = argmin_c sum_s delta(c, s) p(s), and the weighted deviations.

    sum_s delta(c, s) p(s) = sum_{s: R*>0} p(s) - sum_s R(s, c) p(s) / R*(s), so one
    (C, S) product with w(s) = p(s) / R*(s) gives every configuration's deviation.
    """
    best = rps_all.max(axis=0)
    served = best > 0
    w = np.divide(pmf, best, out=np.zeros_like(pmf), where=served)
    weighted = pmf[served].sum() - rps_all @ w
    return int(np.argmin(weighted)), weighted


def _fit_reason(gpu: GPU, size: int, model: ModelSpec, grid: ConfigGrid, calib: Calibration,
                phase: str) -> str:
    need = float(np.min(weight_bytes_per_gpu(model, grid.tp, grid.ep)))
    have = usable_bytes(gpu, calib)
    if need > have:
        return (f"{model.name} does not fit on {size}x{gpu.name} for {phase}: it needs at least "
                f"{need / 1e9:.1f} GB of weights per GPU, {have / 1e9:.1f} GB usable of "
                f"{gpu.hbm_gb:g} GB")
    return (f"{model.name} on {size}x{gpu.name}: weights fit but no {phase} configuration "
            "leaves room for the KV cache (or meets the SLO) at any input length")


def _lengths(shape: WorkloadShape) -> np.ndarray:
    # float32 halves the memory traffic of the (C, S) tables; lengths <= 128k and times
    # of ms to s are well inside its 7 significant digits.  Length 0 is evaluated as 1.
    return np.maximum(np.arange(len(shape.pmf), dtype=np.float32), 1.0)[None, :]


def _prefill_rps(gpu, model, grid, shape, slo, calib):
    s = _lengths(shape)
    t = prefill_time(gpu, model, s, grid.tp, grid.dp, grid.ep, shape.prefix_hit_rate, calib)
    rps = (grid.dp * calib.production_utilisation).astype(s.dtype) / t
    # The request's own KV cache must fit beside the weights (chunked prefill keeps
    # activations small); beyond that length, and beyond the TTFT ceiling, nothing.
    room = usable_bytes(gpu, calib) - weight_bytes_per_gpu(model, grid.tp, grid.ep)
    longest = room / kv_bytes_per_token_per_gpu(model, grid.tp)
    np.multiply(rps, s <= longest, out=rps)  # a mask multiply beats masked assignment
    if slo.ttft_ms is not None:
        np.multiply(rps, t <= slo.ttft_ms * 1e-3, out=rps)
    rps[:, 0] = 0.0
    return rps, t * 1e3, np.ones_like(rps)


def _decode_rps(gpu, model, grid, shape, slo, calib):
    s = _lengths(shape)
    d = float(shape.decode_mean)
    batch = thesis_batch_rule(max_decode_batch(gpu, model, grid.tp, grid.ep,
                                               s + shape.decode_max, calib))
    # The step model depends on the batch only through per-batch coefficients, so it is
    # built once per integer batch size and gathered per (configuration, length).
    sizes = np.arange(int(batch.max()) + 1, dtype=float)[None, :]
    per_batch = step_model(gpu, model, sizes, grid.tp, grid.dp, grid.ep, calib).astype(s.dtype)
    if slo.tpot_ms is not None:
        batch = _cap_batch_for_tpot(per_batch, batch, s + 0.5 * d, slo.tpot_ms)
    t = per_batch.take(batch.astype(np.intp)).request_time(s, d)
    rps = batch * (grid.dp * calib.production_utilisation).astype(s.dtype)
    rps /= t  # batch 0 -> 0
    rps[:, 0] = 0.0
    return rps, t * (1e3 / max(d, 1.0)), batch


def _cap_batch_for_tpot(per_batch, batch, context, tpot_ms):
    """Largest batch <= ``batch`` whose step time at ``context`` meets the TPOT ceiling,
    by a vectorised bisection over integers (step time increases with the batch)."""
    lo = np.zeros_like(batch)  # always feasible (empty)
    hi = batch.copy()
    for _ in range(11):  # 2^11 > 1024, the largest batch the thesis rule allows
        mid = np.ceil(0.5 * (lo + hi))
        t = per_batch.take(mid.astype(np.intp)).step_time(context)
        ok = t * 1e3 <= tpot_ms
        lo = np.where(ok, mid, lo)
        hi = np.where(ok, hi, mid - 1.0)
    return lo


def _phase_table(phase, compute, gpu, size, model, grid, shape, slo, calib) -> PhaseTable:
    """Evaluate the configurations whose weights fit, choose c*, keep c*'s rows."""
    fits = (weight_bytes_per_gpu(model, grid.tp, grid.ep) <= usable_bytes(gpu, calib))[:, 0]
    deviation = np.ones(len(grid))  # a configuration that does not fit serves nothing
    n = len(shape.pmf)
    if fits.any():
        sub = ConfigGrid.of([c for c, ok in zip(grid.configs, fits, strict=True) if ok])
        rps, latency, batch = compute(gpu, model, sub, shape, slo, calib)
        i, weighted = _choose(rps, shape.pmf)
        deviation[fits] = weighted
        if np.any(rps[i] > 0):
            return PhaseTable(phase, sub.configs[i], rps[i].astype(float),
                              latency[i].astype(float), batch[i].astype(float), grid.configs,
                              deviation)
    return PhaseTable(phase, None, np.zeros(n), np.zeros(n), np.zeros(n), grid.configs,
                      deviation, _fit_reason(gpu, size, model, grid, calib, phase))


def benchmark_island(gpu: GPU, size: int, model: ModelSpec, shape: WorkloadShape,
                     slo: SLO = SLO(), calib: Calibration = DEFAULT_CALIBRATION,
                     configs: list[ParallelConfig] | None = None) -> IslandTable:
    """Prefill and decode tables of an island; cached by everything they depend on."""
    key = (gpu.spec_key(), size, model, shape.key(), slo, calib.key(),
           tuple(configs) if configs is not None else None)
    hit = _CACHE.get(key)
    if hit is not None:
        return hit
    grid = ConfigGrid.of(configs if configs is not None else enumerate_configs(size, model))
    # The two phases are independent and numpy releases the GIL inside array
    # operations, so building them on two threads uses both cores of a small machine.
    decode = _pool().submit(_phase_table, "decode", _decode_rps, gpu, size, model, grid, shape,
                            slo, calib)
    prefill = _phase_table("prefill", _prefill_rps, gpu, size, model, grid, shape, slo, calib)
    table = IslandTable(gpu.name, size, model.name, prefill, decode.result())
    _CACHE[key] = table
    return table


_POOL: ThreadPoolExecutor | None = None


def _pool() -> ThreadPoolExecutor:
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=1, thread_name_prefix="perfmodel")
    return _POOL


def clear_cache() -> None:
    _CACHE.clear()
