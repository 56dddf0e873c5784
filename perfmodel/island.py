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
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache, partial
from typing import Any

import numpy as np

from perfmodel.calibration import DEFAULT_CALIBRATION, Calibration
from perfmodel.decode import StepModel, step_model
from perfmodel.hardware import GIB, GPU
from perfmodel.launch import vendor_violation
from perfmodel.memory import (
    engine_batch_cap,
    kv_bytes_per_token_per_gpu,
    kv_per_sequence,
    max_decode_batch,
    thesis_batch_rule,
    usable_bytes,
    weight_bytes_per_gpu,
)
from perfmodel.models import ModelSpec
from perfmodel.parallel import ConfigGrid, ParallelConfig, enumerate_configs, launch_reason
from perfmodel.prefill import batched_prompts, prefill_chunks, prefill_pass_time


@dataclass(frozen=True)
class SLO:
    """Optional latency ceilings: TTFT excludes slow prefill configurations per length;
    TPOT caps the decode batch.

    ``best_effort``: inclusive input-length intervals ``(lo, hi)`` the ceilings do not
    apply to -- lengths no island can serve within them, which a plan still serves
    (planner.context.feasibility).  There prefill keeps its shortest pass but is not
    cut off at the TTFT ceiling, decode batches are not capped for TPOT (the largest
    batch that fits) and colocated islands run their highest-rate batch that fits.  The
    configuration of each table is still chosen under the ceilings alone
    (:attr:`strict`), so every other length is tabulated exactly as without them."""

    ttft_ms: float | None = None
    tpot_ms: float | None = None
    best_effort: tuple[tuple[int, int], ...] = field(default=(), kw_only=True)

    @property
    def strict(self) -> SLO:
        """The same ceilings with no best-effort lengths."""
        return SLO(self.ttft_ms, self.tpot_ms) if self.best_effort else self

    def exempt(self, s: np.ndarray) -> np.ndarray | bool:
        """Whether each input length of ``s`` is served best-effort (False if none)."""
        if not self.best_effort:
            return False
        s = np.asarray(s)
        out = np.zeros(s.shape, bool)
        for lo, hi in self.best_effort:
            out |= (s >= lo) & (s <= hi)
        return out


@dataclass(frozen=True)
class PhaseTable:
    phase: str  # "prefill" | "decode" | "both" (perfmodel.colocated)
    config: ParallelConfig | None  # chosen configuration (None: the model fits nowhere)
    rps: np.ndarray  # (S,) requests/s of the whole island at each input length
    latency_ms: np.ndarray  # (S,) TTFT (prefill) or mean TPOT (decode)
    batch: np.ndarray  # (S,) sequences per attention group (prefill: prompts per pass)
    configs: tuple[ParallelConfig, ...] = ()
    deviation: np.ndarray = field(default_factory=lambda: np.zeros(0))  # (C,) weighted delta
    reason: str = ""  # why the phase cannot run here, if it cannot
    ttft_ms: np.ndarray | None = None  # (S,) colocated tables: TTFT (latency_ms is TPOT)

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
    #: Generated tokens a sequence of a running decode batch holds on average, ``g``.
    #: None is the thesis's rule (§4.6.2): KV sized for ``s + decode_max`` and every
    #: sequence of a batch at the same stage (time per request = sum of its steps).  A
    #: number is a steady batch of sequences at all stages of their lives: the batch is
    #: sized for ``s + g`` tokens per sequence and every step runs at that context, so
    #: the time per request is ``d x step(s + g)``.  The planner passes
    #: ``Workload.decode_residence / 2`` (the inspection paradox: ``E[d^2] / 2E[d]``).
    kv_reserve: float | None = None
    #: Per input length (same length as ``pmf``): ``E[d | s]`` and the generated tokens
    #: a running sequence of length ``s`` holds, ``E[d^2 | s] / 2E[d | s]``; when given
    #: they replace ``decode_mean`` and ``kv_reserve`` length by length (real traces
    #: answer long prompts at length).
    decode_by_length: np.ndarray | None = None
    held_by_length: np.ndarray | None = None

    @property
    def steady(self) -> bool:
        """A steady batch of sequences at all stages (False: the thesis's cohort)."""
        return self.kv_reserve is not None or self.held_by_length is not None

    @property
    def reserve(self) -> float:
        """Tokens of KV per sequence beyond its prompt when sizing the batch (scalar)."""
        return float(self.decode_max if self.kv_reserve is None else self.kv_reserve)

    def decode_at(self, s: np.ndarray) -> np.ndarray | float:
        """Output tokens per request at input lengths ``s``."""
        if self.decode_by_length is None:
            return float(self.decode_mean)
        return self.decode_by_length[_as_index(s, len(self.pmf))].astype(s.dtype)

    def held_at(self, s: np.ndarray) -> np.ndarray | float:
        """Generated tokens per sequence in a steady batch (``reserve`` if no table)."""
        if self.held_by_length is None:
            return self.reserve
        return self.held_by_length[_as_index(s, len(self.pmf))].astype(s.dtype)

    def key(self) -> tuple:
        def digest(a):
            if a is None:
                return None
            return hashlib.blake2b(np.ascontiguousarray(a, float).tobytes(),
                                   digest_size=16).hexdigest()
        return (digest(self.pmf), len(self.pmf), self.decode_mean, self.decode_max,
                self.prefix_hit_rate, self.kv_reserve, digest(self.decode_by_length),
                digest(self.held_by_length))


def _as_index(s: np.ndarray, n: int) -> np.ndarray:
    return np.clip(np.asarray(s).astype(np.int64), 0, n - 1)


_CACHE: dict[tuple, IslandTable] = {}


def _choose(rps_all: np.ndarray, pmf: np.ndarray, cover: bool = False
            ) -> tuple[int, np.ndarray]:
    """Index of c* = argmin_c sum_s delta(c, s) p(s), and the weighted deviations.

    sum_s delta(c, s) p(s) = sum_{s: R*>0} p(s) - sum_s R(s, c) p(s) / R*(s), so one
    (C, S) product with w(s) = p(s) / R*(s) gives every configuration's deviation.

    ``cover``: only configurations that serve every length some configuration serves
    are candidates (then the least deviation among them).  The thesis's rule (§4.6.1)
    weighs a length a configuration cannot serve (a long prompt past the TTFT ceiling,
    say) by its small probability only, and so may pick a configuration that leaves the
    long prompts to nobody: under an SLO, a fleet of one GPU type then serves nothing.
    """
    best = rps_all.max(axis=0)
    served = best > 0
    w = np.divide(pmf, best, out=np.zeros_like(pmf), where=served)
    weighted = pmf[served].sum() - rps_all @ w
    if cover:
        coverage = (rps_all > 0) @ np.where(served, pmf, 0.0)
        ok = coverage >= coverage.max() * (1 - 1e-9)
        return int(np.argmin(np.where(ok, weighted, np.inf))), weighted
    return int(np.argmin(weighted)), weighted


def _fit_reason(gpu: GPU, size: int, model: ModelSpec, grid: ConfigGrid, calib: Calibration,
                phase: str) -> str:
    need = float(np.min(weight_bytes_per_gpu(model, grid.tp, grid.dp, grid.ep)))
    have = float(np.max(usable_bytes(gpu, calib, model, grid.tp)))
    if need > have:
        return (f"{model.name} does not fit on {size}x{gpu.name} for {phase}: it needs at least "
                f"{need / GIB:.1f} GiB of weights per GPU, {have / GIB:.1f} GiB usable of "
                f"{gpu.hbm_gb:g} GiB")  # the catalog's unit (hardware.GIB)
    return (f"{model.name} on {size}x{gpu.name}: weights fit but no {phase} configuration "
            "leaves room for the KV cache (or meets the SLO) at any input length")


def _lengths(shape: WorkloadShape) -> np.ndarray:
    # float32 halves the memory traffic of the (C, S) tables; lengths <= 128k and times
    # of ms to s are well inside its 7 significant digits.  Length 0 is evaluated as 1.
    return np.maximum(np.arange(len(shape.pmf), dtype=np.float32), 1.0)[None, :]


@lru_cache(maxsize=64)
def _samples(n: int, count: int = 48) -> np.ndarray:
    """Sample points 1 .. n-1 (log-spaced, integers, always including both ends) at which
    the kernel models are evaluated; tables interpolate between them in log-log (the
    models are smooth in the length: 48 points stay within 0.5 % of 96 on a 64-GPU
    DeepSeek-V3 table over 8,192 lengths).  Memoised (read-only): every island of a
    workload asks for the same points."""
    pts = np.unique(np.round(np.geomspace(1.0, max(n - 1, 1), count))).astype(float)
    pts.flags.writeable = False
    return pts


def _interp_rows(x_samples, values, x):
    """Row-wise linear interpolation of (C, K) ``values`` at sample points to (C, S) at
    ``x`` (shared sample points: one searchsorted, then a gather and a lerp)."""
    xs = np.asarray(x_samples, float)
    x = np.asarray(x, float).ravel()
    i = np.clip(np.searchsorted(xs, x, side="right") - 1, 0, len(xs) - 2) if len(xs) > 1 \
        else np.zeros(len(x), dtype=np.intp)
    if len(xs) == 1:
        return np.repeat(values[:, :1], len(x), axis=1)
    w = ((x - xs[i]) / (xs[i + 1] - xs[i])).astype(values.dtype)
    lo = values[:, i]
    return lo + (values[:, i + 1] - lo) * w


def _selection_lengths(shape: WorkloadShape) -> tuple[np.ndarray, np.ndarray]:
    """Lengths at which the configurations are compared, and the workload mass each
    stands for (every length is assigned to the sample at or below it).

    Choosing c* needs every configuration's throughput; the full-resolution table needs
    only c*'s.  Comparing on ~500 lengths (every length up to 256, then evenly and
    log-spaced points) instead of all of them makes an island table ~30x cheaper and
    picks the same configuration unless two are within a fraction of a percent.
    """
    pts, idx = _selection_points(len(shape.pmf))
    return pts, np.bincount(idx, weights=shape.pmf, minlength=pts.shape[1])


@lru_cache(maxsize=64)
def _selection_points(n: int) -> tuple[np.ndarray, np.ndarray]:
    """(the (1, K) comparison lengths of a workload of ``n`` lengths, the sample each
    length is assigned to) -- a function of ``n`` alone, memoised (read-only)."""
    if n <= 512:
        pts = np.arange(1, n, dtype=float)
    else:
        pts = np.unique(np.concatenate([np.arange(1, 257, dtype=float),
                                        np.round(np.linspace(256, n - 1, 192)),
                                        np.round(np.geomspace(256, n - 1, 64))]))
    idx = np.clip(np.searchsorted(pts, np.arange(n), side="right") - 1, 0, len(pts) - 1)
    out = pts.astype(np.float32)[None, :]
    out.flags.writeable = idx.flags.writeable = False
    return out, idx


#: Token budgets a prefill island may run under a TTFT ceiling, as fractions of the
#: engine's (an operator lowers ``max_num_batched_tokens`` until the pass meets it).
BUDGET_FRACTIONS = (1.0, 0.5, 0.25, 0.125, 0.0625, 0.03125)


#: Passes a prompt of a lockstep prefill island may wait for before its own: one, the
#: pass under way when it arrives (:func:`is_lockstep`).
LOCKSTEP_WAIT_PASSES = 1.0


def is_lockstep(model: ModelSpec, dp, calib: Calibration):
    """Where an MoE model's attention-DP groups run their prefill passes in lockstep
    (dp > 1, a measured engine): there the slowest prompt's TTFT is its own pass(es) plus
    :data:`LOCKSTEP_WAIT_PASSES` of the pass under way (boolean array of ``dp``'s shape).

    Why: the engines run such groups together so that the expert layers' collectives
    meet (TensorRT-LLM pads an idle rank with a dummy request, SGLang runs an idle
    batch), and a pass lasts as long as the fullest group's.  A prompt that arrives
    just after a pass began waits for all of it, even when its own group is idle, and
    then runs its own pass: up to two pass times, where independent groups would start
    it at once.  The pass under way is one budget's chunk, so a prompt chunked into m
    passes waits 1 / m of its own time more (``_prefill_rps``).  The simulator plays
    this out (``planner.sim.prefill_batching``, prefill lockstep on by default); without it in
    the tables, the search chose budgets whose passes met
    the TTFT ceiling only without the wait, and the closed loop cut the README plan's
    promise from the model's 417 to 270 requests/s (docs/simulation.md).  The worst
    arrival, not the mean (half a pass), because the ceiling is the slowest request's.

    This is not the queueing margin the planner already keeps (``TTFT_PASS_SHARE`` in
    ``planner.core.defaults``: a pass may take half the ceiling, the other half left for
    waiting behind a busy group): groups on their own wait only when their own group is
    busy, and then often behind a short pass, while lockstep groups wait whenever *any*
    of the dp groups is busy -- nearly always, at 24 groups -- and behind a full one.
    The wait is part of a lockstep prompt's latency at any load; the margin stays for
    the queue on top.  With both, the README plan's closed loop promises 361 requests/s
    where the model says 394 (x0.92; it was x0.65).  The thesis's roofline engine
    keeps its own reading (no lockstep)."""
    return (np.asarray(dp, float) > 1) & bool(model.is_moe) & (calib.engine != "roofline")


class _SharedRows:
    """Per-configuration rows of a phase's kernel evaluations, shared by the two calls
    of :func:`_phase_table`: every configuration at the selection lengths, then the
    chosen one at all lengths.  Both evaluate the kernels at the same sample points
    (prefill: ``_samples`` of the longest length, which both length sets share; decode:
    a prefix of ``_BATCH_LATTICE``), and each element depends on its own configuration
    and sample only, so the chosen configuration's rows are read from the first call
    rather than recomputed.  The values are exactly those a fresh evaluation gives;
    the store lives for one ``_phase_table`` call (gpu, model, calibration fixed)."""

    def __init__(self, configs: int, source: _SharedRows | None = None,
                 pick: int = 0) -> None:
        self._configs = configs
        self._arrays: dict[tuple, np.ndarray] = {}
        self._steps: tuple[np.ndarray, StepModel] | None = None
        self._source = source  # the store a chosen() view reads from
        self._pick = pick

    def chosen(self, i: int) -> _SharedRows:
        """A view that serves configuration ``i``'s rows of what this store holds."""
        return _SharedRows(self._configs, self, i)

    def array(self, key: tuple, compute: Callable[[], np.ndarray]) -> np.ndarray:
        """``compute()`` (a (C, K) array), stored; or, for a :meth:`chosen` view, row
        ``i`` of what the store holds under ``key``."""
        if self._source is None:
            self._arrays[key] = value = compute()
            return value
        full = self._source._arrays.get(key)
        if full is None:
            return compute()
        full = np.broadcast_to(full, (self._configs,) + np.shape(full)[1:])
        return full[self._pick:self._pick + 1]

    def steps(self, samples: np.ndarray, compute: Callable[[], StepModel]) -> StepModel:
        """``compute()`` (a step model at lattice ``samples``), stored; or, for a
        :meth:`chosen` view, configuration ``i``'s coefficients at the first
        ``len(samples)`` stored samples (a prefix of the lattice: the same batches)."""
        if self._source is None:
            self._steps = (samples, compute())
            return self._steps[1]
        stored, k = self._source._steps, len(samples)
        if stored is None or not np.array_equal(stored[0][:k], samples):
            return compute()
        shape, i = (self._configs, len(stored[0])), self._pick
        return stored[1]._map(lambda a: np.broadcast_to(a, shape)[i:i + 1, :k])


def _rows(rows: _SharedRows | None) -> _SharedRows:
    return rows if rows is not None else _SharedRows(0)


def _prefill_rps(gpu, model, grid, shape, slo, calib, s_all,
                 rows: _SharedRows | None = None):
    """Prefill throughput per length: dp attention groups each run forward passes that
    fill a token budget (``perfmodel.prefill``); TTFT is the pass time, times the
    lockstep wait of an MoE model's attention-DP groups (:func:`is_lockstep`).

    The budget is the engine's unless a TTFT ceiling is set; then, per length, the
    largest of ``BUDGET_FRACTIONS`` of it whose pass meets the ceiling (smaller passes
    amortise the weights and overheads over fewer prompts, so the fastest budget that
    meets the ceiling is the largest).  The batch returned is prompts per pass."""
    samples = _samples(int(s_all.max()) + 1)
    h = shape.prefix_hit_rate
    fractions = BUDGET_FRACTIONS if slo.ttft_ms is not None else BUDGET_FRACTIONS[:1]
    # the slowest prompt's TTFT: its own pass(es), plus on a lockstep island the pass
    # under way -- one budget's chunk, so a prompt of m chunks waits 1/m of its own time
    lock = is_lockstep(model, grid.dp, calib).astype(np.float32)  # (C, 1)
    wait = None
    if lock.any():
        per_chunk = LOCKSTEP_WAIT_PASSES / prefill_chunks(s_all, h, calib)
        wait = 1.0 + lock * per_chunk.astype(np.float32)
    limit = None
    if slo.ttft_ms is not None:  # the ceiling on a pass, the wait taken off it
        limit = slo.ttft_ms * 1e-3 / wait if wait is not None else slo.ttft_ms * 1e-3
    best_t: Any = None
    best_k: Any = None
    for f in fractions:
        k = batched_prompts(samples, h, calib, f)[None, :]
        t = _rows(rows).array(
            ("pass", f, samples.size, samples[-1]),
            partial(prefill_pass_time, gpu, model, samples[None, :], grid.tp, grid.dp,
                    grid.ep, h, calib, k))
        per_request = np.exp(_interp_rows(samples, np.log(t / k), s_all[0])).astype(np.float32)
        k_all = batched_prompts(s_all, h, calib, f).astype(np.float32)
        k_all = np.broadcast_to(k_all, per_request.shape)
        if best_t is None:
            best_t, best_k = per_request, k_all
            continue
        # a smaller budget replaces the larger one only where the larger misses TTFT
        miss = best_t * best_k > limit
        best_t = np.where(miss, per_request, best_t)
        best_k = np.where(miss, k_all, best_k)
    t_all, k_all = best_t, best_k
    ttft = t_all * k_all
    if wait is not None:
        ttft *= wait
    rps = grid.dp.astype(np.float32) / t_all
    # The request's own KV cache must fit beside the weights (chunked prefill keeps
    # activations small); beyond that length, and beyond the TTFT ceiling, nothing.
    room = (usable_bytes(gpu, calib, model, grid.tp)
            - weight_bytes_per_gpu(model, grid.tp, grid.dp, grid.ep))
    longest = room / kv_bytes_per_token_per_gpu(model, grid.tp)
    np.multiply(rps, s_all <= longest, out=rps)  # a mask multiply beats masked assignment
    if slo.ttft_ms is not None:
        np.multiply(rps, (ttft <= slo.ttft_ms * 1e-3) | slo.exempt(s_all), out=rps)
    return rps, ttft * 1e3, np.ascontiguousarray(k_all)


#: Batch sizes at which decode steps are evaluated: every size up to 16, then four per
#: octave up to 4096.  A fixed lattice, so a configuration's table does not depend on
#: which other configurations were evaluated beside it; coefficients are interpolated
#: between lattice points (within 0.6 % of the exact step time).
_BATCH_LATTICE = np.unique(np.concatenate([np.arange(0, 17, dtype=float),
                                           np.round(16 * 2.0 ** (np.arange(1, 33) / 4))]))


def _batch_samples(max_batch: int) -> np.ndarray:
    i = int(np.searchsorted(_BATCH_LATTICE, max_batch))
    return _BATCH_LATTICE[: min(i + 1, len(_BATCH_LATTICE))]


class _BatchSteps:
    """Step-model coefficients at lattice batch sizes (C, K), read at any batch by
    linear interpolation between the two neighbouring lattice points."""

    def __init__(self, gpu, model, grid, calib, max_batch: int, dtype,
                 rows: _SharedRows | None = None):
        self.samples = _batch_samples(max_batch).astype(dtype)
        sm = _rows(rows).steps(self.samples, lambda: step_model(
            gpu, model, self.samples.astype(float)[None, :], grid.tp, grid.dp, grid.ep,
            calib))
        self.rows, self.k = len(grid), len(self.samples)
        shape = (self.rows, self.k)
        self.flat = sm._map(lambda a: np.ascontiguousarray(
            np.broadcast_to(np.asarray(a, dtype), shape)).ravel())

    def at(self, batch: np.ndarray) -> StepModel:
        """Coefficients at per-element batch sizes ``batch`` (C, S)."""
        xs = self.samples
        j = np.searchsorted(xs, batch, side="right") - 1
        np.clip(j, 0, max(self.k - 2, 0), out=j)
        w = (batch - xs[j]) / (xs[np.minimum(j + 1, self.k - 1)] - xs[j] + 1e-30)
        j += (np.arange(self.rows, dtype=j.dtype) * self.k)[:, None]
        j1 = np.minimum(j + 1, self.rows * self.k - 1)

        def lerp(a):
            lo = np.take(a, j)
            return lo + (np.take(a, j1) - lo) * w
        return self.flat._map(lerp)


def _decode_rps(gpu, model, grid, shape, slo, calib, s, rows: _SharedRows | None = None):
    """Decode requests/s, TPOT (ms) and batch per (configuration, length).

    Steady batch (the planner): each sequence of length ``s`` holds ``s + g(s)`` tokens
    on average (``WorkloadShape.held_at``; an engine that reserves a request's whole
    output, TRT-LLM, ``s + max(d, g)``: :func:`perfmodel.memory.kv_per_sequence`), the
    batch is the largest whose KV fits at
    that context (and whose step meets the TPOT ceiling), every step runs at it, and a
    request takes ``d(s)`` steps.  Thesis cohort: KV for ``s + decode_max``, a request's
    steps summed from ``s`` to ``s + d``."""
    d = shape.decode_at(s)
    steady = shape.steady
    held = shape.held_at(s) if steady else shape.reserve
    sized = kv_per_sequence(calib, s, d, held) if steady else s + held
    batch = thesis_batch_rule(max_decode_batch(gpu, model, grid.tp, grid.dp, grid.ep,
                                               sized, calib),
                              engine_batch_cap(gpu, model, calib))
    # The step model depends on the batch only through per-batch coefficients, so it is
    # built once on a lattice of batch sizes and read per (configuration, length).
    per_batch = _BatchSteps(gpu, model, grid, calib, int(batch.max()), s.dtype, rows)
    context = s + (held if steady else 0.5 * d)
    if slo.tpot_ms is not None:
        batch = np.where(slo.exempt(s), batch,
                         _cap_batch_for_tpot(per_batch, batch, context, slo.tpot_ms))
    steps = per_batch.at(batch)
    t = steps.step_time(context) * d if steady else steps.request_time(s, d)
    rps = batch * grid.dp.astype(s.dtype)
    rps /= t  # batch 0 -> 0
    return rps, t * (1e3 / np.maximum(d, 1.0)), batch


def _cap_batch_for_tpot(per_batch, batch, context, tpot_ms):
    """Largest batch <= ``batch`` whose step time at ``context`` meets the TPOT ceiling,
    by a vectorised bisection over integers (step time increases with the batch)."""
    lo = np.zeros_like(batch)  # always feasible (empty)
    hi = batch.copy()
    for _ in range(11):  # 2^11 > 1024, the largest batch the thesis rule allows
        mid = np.ceil(0.5 * (lo + hi))
        t = per_batch.at(mid).step_time(context)
        ok = t * 1e3 <= tpot_ms
        lo = np.where(ok, mid, lo)
        hi = np.where(ok, hi, mid - 1.0)
    return lo


def _phase_table(phase, compute, gpu, size, model, grid, shape, slo, calib,
                 selection: tuple[np.ndarray, np.ndarray] | None = None) -> PhaseTable:
    """Evaluate the configurations whose weights fit, choose c*, keep c*'s rows.
    ``selection``: :func:`_selection_lengths` of ``shape``, if already computed."""
    weights = weight_bytes_per_gpu(model, grid.tp, grid.dp, grid.ep)
    fits = (weights <= usable_bytes(gpu, calib, model, grid.tp))[:, 0]
    deviation = np.ones(len(grid))  # a configuration that does not fit serves nothing
    n = len(shape.pmf)
    if fits.any():
        sub = ConfigGrid.of([c for c, ok in zip(grid.configs, fits, strict=True) if ok])
        s_all = _lengths(shape)
        rows = None
        if len(sub) > 1:
            s_sel, weights = selection or _selection_lengths(shape)
            shared = _SharedRows(len(sub))
            # chosen under the ceilings alone: best-effort lengths change no choice
            rps_sel = compute(gpu, model, sub, shape, slo.strict, calib, s_sel, shared)[0]
            i, weighted = _choose(rps_sel, weights, cover=shape.steady)
            deviation[fits] = weighted
            chosen = ConfigGrid.of([sub.configs[i]])
            rows = shared.chosen(i)
        else:
            deviation[fits] = 0.0
            chosen = sub
        rps, latency, batch = compute(gpu, model, chosen, shape, slo, calib, s_all, rows)
        rps[:, 0] = 0.0
        if np.any(rps[0] > 0):
            return PhaseTable(phase, chosen.configs[0], rps[0].astype(float),
                              latency[0].astype(float), batch[0].astype(float), grid.configs,
                              deviation)
    return PhaseTable(phase, None, np.zeros(n), np.zeros(n), np.zeros(n), grid.configs,
                      deviation, _fit_reason(gpu, size, model, grid, calib, phase))


def island_configs(gpu: GPU, size: int, model: ModelSpec, calib: Calibration,
                   gpus_per_node: int | None = None) -> list[ParallelConfig]:
    """The layouts the engine of ``calib`` launches on ``size`` GPUs of ``gpu``
    (``perfmodel.launch``), servers of ``gpus_per_node`` GPUs (default: the GPU's
    NVLink domain)."""
    return enumerate_configs(size, model, calib.engine, gpus_per_node or gpu.gpus_per_domain)


def _no_layout(gpu: GPU, size: int, model: ModelSpec, shape: WorkloadShape, reason: str
               ) -> IslandTable:
    n = len(shape.pmf)
    phases = [PhaseTable(p, None, np.zeros(n), np.zeros(n), np.zeros(n), reason=reason)
              for p in ("prefill", "decode")]
    return IslandTable(gpu.name, size, model.name, phases[0], phases[1])


def benchmark_island(gpu: GPU, size: int, model: ModelSpec, shape: WorkloadShape,
                     slo: SLO = SLO(), calib: Calibration = DEFAULT_CALIBRATION,
                     configs: list[ParallelConfig] | None = None,
                     gpus_per_node: int | None = None) -> IslandTable:
    """Prefill and decode tables of an island; cached by everything they depend on.

    Without ``configs``, the layouts the engine of ``calib`` launches
    (:func:`island_configs`); where it launches none, both tables are infeasible with
    the rule as their ``reason``."""
    key = (gpu.spec_key(), size, model, shape.key(), slo, calib.key(),
           tuple(configs) if configs is not None else None, gpus_per_node)
    hit = _CACHE.get(key)
    if hit is not None:
        return hit
    if configs is None:
        wrong_vendor = vendor_violation(calib.engine, gpu)
        if wrong_vendor:
            table = _no_layout(gpu, size, model, shape, wrong_vendor)
            _CACHE[key] = table
            return table
        configs = island_configs(gpu, size, model, calib, gpus_per_node)
        if not configs:
            table = _no_layout(gpu, size, model, shape, launch_reason(
                size, model, calib.engine, gpus_per_node or gpu.gpus_per_domain))
            _CACHE[key] = table
            return table
    elif not configs:
        raise ValueError("benchmark_island: configs must not be empty")
    grid = ConfigGrid.of(configs)
    # The phases are built one after the other: their kernel evaluations are many small
    # array operations, for which a second thread only adds contention on the GIL.
    selection = _selection_lengths(shape) if len(grid) > 1 else None
    prefill = _phase_table("prefill", _prefill_rps, gpu, size, model, grid, shape, slo, calib,
                           selection)
    decode = _phase_table("decode", _decode_rps, gpu, size, model, grid, shape, slo, calib,
                          selection)
    table = IslandTable(gpu.name, size, model.name, prefill, decode)
    _CACHE[key] = table
    return table


def clear_cache() -> None:
    _CACHE.clear()
