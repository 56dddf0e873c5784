"""Colocated islands: one island serves both phases of a request with in-flight batching
and chunked prefill (``perfmodel.aggregated``), as a third role beside prefill and
decode islands (issue 15: aggregated serving where it wins inside a heterogeneous
fleet -- small dense models, short outputs -- and disaggregation elsewhere).

Per input length ``s`` (output ``d(s)``, a steady batch holding ``g(s)`` generated tokens
per sequence, as the decode tables) and configuration ``c``, every batch ``B`` of a
lattice runs mixed passes (a token for each of the B sequences plus whole waiting prompts,
within the token budget) and decode-only passes, in the share that keeps B sequences in
flight (:mod:`perfmodel.aggregated`: ``n`` new prompt tokens, ``d'`` steps per request,
mean pass ``t``).  Then

    rate = dp min(B / d', chunk / n) / t,   TPOT = t / yield,   TTFT = ceil(n / chunk) t_mix,

and the island runs at the batch of highest rate whose KV fits at ``s + g`` and whose
TTFT and TPOT meet the ceilings.  The configuration is chosen as for the other phases
(least workload-weighted deviation among those that serve every length any serves),
on 24 lengths; the chosen one is evaluated on 48 log-spaced lengths and interpolated in
log space to every length (the rates are smooth in ``s``).
"""

from __future__ import annotations

import numpy as np

from perfmodel.aggregated import mixed_pass, pass_outcome
from perfmodel.calibration import Calibration
from perfmodel.hardware import GPU
from perfmodel.island import (
    SLO,
    PhaseTable,
    WorkloadShape,
    _choose,
    _interp_rows,
    _samples,
)
from perfmodel.launch import vendor_violation
from perfmodel.memory import (
    engine_batch_cap,
    kv_per_sequence,
    max_decode_batch,
    usable_bytes,
    weight_bytes_per_gpu,
)
from perfmodel.models import ModelSpec
from perfmodel.parallel import ParallelConfig, enumerate_configs, launch_reason

#: Batches per attention group evaluated: 1-8, then four per octave to 2048.
BATCHES = np.unique(np.concatenate([np.arange(1, 9, dtype=float),
                                    np.round(8 * 2.0 ** (np.arange(1, 33) / 4))]))

_CACHE: dict[tuple, PhaseTable] = {}


def _points(gpu: GPU, model: ModelSpec, c: ParallelConfig, shape: WorkloadShape, slo: SLO,
            calib: Calibration, s: np.ndarray):
    """(rate, TTFT s, TPOT s, batch) of config ``c`` at lengths ``s`` (1-D)."""
    s2 = s[None, :]
    d = np.asarray(shape.decode_at(s2), float)
    held = np.asarray(shape.held_at(s2), float) if shape.steady else 0.5 * d
    tp, dp, ep = (np.array([[float(x)]]) for x in (c.tp, c.dp, c.ep))
    cap = np.minimum(np.asarray(max_decode_batch(
        gpu, model, tp, dp, ep, kv_per_sequence(calib, s2, d, held), calib), float),
        engine_batch_cap(gpu, model, calib))
    b = BATCHES[:, None]
    comp = mixed_pass(gpu, model, b, s2, d, float(c.tp), float(c.dp), float(c.ep),
                      shape.prefix_hit_rate, calib, held)
    out = pass_outcome(comp, b, s2, d, c.dp, shape.prefix_hit_rate)
    ttft, tpot, rate, chunk = out.ttft_s, out.tpot_s, out.rps, out.chunk
    ok = (chunk > 0) & (b <= cap)
    if slo.ttft_ms is not None:
        ok &= ttft * 1e3 <= slo.ttft_ms
    if slo.tpot_ms is not None:  # per request: with the stalls its tail sees
        ok &= out.tpot_tail_s * 1e3 <= slo.tpot_ms
    score = np.where(ok, rate, -1.0)
    k = np.argmax(score, axis=0)
    cols = np.arange(s.size)
    served = score[k, cols] > 0
    pick = lambda a: np.where(served, np.broadcast_to(a, score.shape)[k, cols], 0.0)  # noqa: E731
    return pick(rate), pick(ttft), pick(tpot), np.where(served, BATCHES[k], 0.0)


def colocated_table(gpu: GPU, size: int, model: ModelSpec, shape: WorkloadShape,
                    slo: SLO = SLO(), calib: Calibration | None = None,
                    gpus_per_node: int | None = None) -> PhaseTable:
    """The ``both`` phase table of an island (module docstring); cached.  ``latency_ms``
    is the TPOT, ``ttft_ms`` the TTFT.  Only layouts the engine of ``calib`` launches
    (``perfmodel.launch``) on servers of ``gpus_per_node`` GPUs (default: the GPU's
    NVLink domain) are candidates."""
    calib = calib or Calibration()
    key = (gpu.spec_key(), size, model, shape.key(), slo, calib.key(), gpus_per_node)
    hit = _CACHE.get(key)
    if hit is not None:
        return hit
    n = len(shape.pmf)
    per_node = gpus_per_node or gpu.gpus_per_domain
    wrong_vendor = vendor_violation(calib.engine, gpu)
    launchable = [] if wrong_vendor else enumerate_configs(size, model, calib.engine,
                                                           per_node)
    if not launchable:
        table = PhaseTable("both", None, np.zeros(n), np.zeros(n), np.zeros(n),
                           reason=wrong_vendor or launch_reason(size, model, calib.engine,
                                                                per_node))
        _CACHE[key] = table
        return table
    configs = [c for c in launchable
               if float(np.asarray(weight_bytes_per_gpu(
                   model, np.array([[float(c.tp)]]), np.array([[float(c.dp)]]),
                   np.array([[float(c.ep)]]))).ravel()[0])
               <= float(np.ravel(usable_bytes(gpu, calib, model, float(c.tp)))[0])]
    empty = PhaseTable("both", None, np.zeros(n), np.zeros(n), np.zeros(n),
                       reason=f"{model.name} does not fit on {size}x{gpu.name} colocated")
    if not configs:
        _CACHE[key] = empty
        return empty
    chosen = configs[0]
    if len(configs) > 1:
        sel = _samples(n, 24)
        mass = np.bincount(np.clip(np.searchsorted(sel, np.arange(n), side="right") - 1, 0,
                                   len(sel) - 1), weights=shape.pmf, minlength=len(sel))
        # chosen under the ceilings alone: best-effort lengths change no choice
        rates = np.array([_points(gpu, model, c, shape, slo.strict, calib, sel)[0]
                          for c in configs])
        chosen = configs[_choose(rates, mass, cover=True)[0]]
    pts = _samples(n, 48)
    s_all = np.arange(n, dtype=float)
    rate = _points(gpu, model, chosen, shape, slo.strict, calib, pts)
    cols = _tabulate(pts, rate, s_all)
    served = rate[0] > 0
    if slo.best_effort:  # those lengths as without the ceilings (perfmodel.island.SLO)
        free = _points(gpu, model, chosen, shape, SLO(), calib, pts)
        mask = np.asarray(slo.exempt(s_all))
        cols = tuple(np.where(mask, f, c)
                     for f, c in zip(_tabulate(pts, free, s_all), cols, strict=True))
        served |= np.asarray(slo.exempt(pts)) & (free[0] > 0)
    if not served.any():
        _CACHE[key] = empty
        return empty
    rps, tpot_ms, batch, ttft_ms = cols
    table = PhaseTable("both", chosen, rps, tpot_ms, batch, tuple(configs), ttft_ms=ttft_ms)
    _CACHE[key] = table
    return table


def _tabulate(pts: np.ndarray, points: tuple[np.ndarray, ...], s_all: np.ndarray
              ) -> tuple[np.ndarray, ...]:
    """(requests/s, TPOT ms, batch, TTFT ms) at every length ``s_all`` from
    :func:`_points` (rate, TTFT s, TPOT s, batch) at sample points ``pts``: interpolated
    in log space; a length is served where both neighbouring samples are."""
    rate, ttft, tpot, batch = points
    served = rate > 0
    logs = np.log(np.where(served, np.stack([rate, ttft, tpot]), 1.0))
    full = np.exp(_interp_rows(pts, logs, np.maximum(s_all, 1.0)))
    idx = np.clip(np.searchsorted(pts, s_all, side="right") - 1, 0, len(pts) - 1)
    nxt = np.minimum(idx + 1, len(pts) - 1)
    ok = served[idx] & served[nxt]
    ok[0] = False
    return (np.where(ok, full[0], 0.0), np.where(ok, full[2] * 1e3, 0.0),
            np.where(ok, batch[idx], 0.0), np.where(ok, full[1] * 1e3, 0.0))


def clear_cache() -> None:
    _CACHE.clear()


__all__ = ["BATCHES", "colocated_table", "clear_cache"]
