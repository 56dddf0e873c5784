"""The perf model's timing interface: what one island configuration costs in time and
holds in memory.

Everything outside the perf model that needs an island's speed -- the planner's SLO
check (``planner.context.feasibility``), the pipeline solvers' server figures
(``planner.inner.pipeline_map``) and the simulator's islands (``planner.sim.cluster``)
-- asks an :class:`IslandTiming` instead of calling the phase models and the memory
model one by one, so the three cannot drift apart: the same configuration gives the
same prefill time, the same decode step and the same KV capacity everywhere.  (The
island tables of :func:`perfmodel.benchmark_island`, which the planner's evaluator
reads, are built from the same functions.)

* :meth:`IslandTiming.prefill_s` -- seconds to prefill one prompt of ``s`` tokens on one
  attention group (seed 002 §4.2.3);
* :meth:`IslandTiming.steps` -- the decode step model at a per-group batch, whose
  ``step_time(context)`` is the time per generated token (§4.2.4), and
  :meth:`IslandTiming.step_coeffs`, its coefficients per batch for an event loop;
* :attr:`IslandTiming.kv_capacity_tokens`, :meth:`IslandTiming.decode_batch` and the
  memory figures behind them (usable HBM, weights and KV bytes per GPU).

``tp``, ``dp`` and ``ep`` may be scalars or arrays of configurations (they broadcast as
in the phase models).  Tables an event loop needs for every length and batch are cached
by what they depend on (GPU physical figures, model, configuration, calibration).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from perfmodel.calibration import DEFAULT_CALIBRATION, Calibration
from perfmodel.decode import StepModel, step_model
from perfmodel.hardware import GPU
from perfmodel.memory import (
    engine_batch_cap,
    kv_bytes_per_token_per_gpu,
    kv_capacity_tokens,
    max_decode_batch,
    thesis_batch_rule,
    usable_bytes,
    weight_bytes_per_gpu,
)
from perfmodel.models import ModelSpec
from perfmodel.prefill import prefill_time

#: Columns of a :meth:`IslandTiming.step_coeffs` row (the fields of
#: :class:`perfmodel.decode.StepModel`).
STEP_COLUMNS = ("lin_fixed", "d_count", "d_fixed", "d_slope", "d_floor",
                "m_count", "m_fixed", "m_slope", "m_floor")

_TABLES: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}


@dataclass(frozen=True, eq=False)
class IslandTiming:
    """One island configuration: ``gpu`` x (``tp`` x ``dp``) running ``model`` with
    ``ep``-way expert parallelism under the engine calibration ``calib``."""

    gpu: GPU
    model: ModelSpec
    tp: Any
    dp: Any
    ep: Any
    calib: Calibration = DEFAULT_CALIBRATION

    # ------------------------------------------------------------------ time
    def prefill_s(self, lengths: Any, hit_rate: float = 0.0) -> Any:
        """Seconds to prefill one prompt of each length alone on one attention group
        (``hit_rate`` of its tokens served from a prefix cache)."""
        return prefill_time(self.gpu, self.model, lengths, self.tp, self.dp, self.ep,
                            hit_rate, self.calib)

    def steps(self, batch: Any) -> StepModel:
        """The decode step model at a per-group ``batch``:
        ``steps(b).step_time(context)`` is the time per generated token."""
        return step_model(self.gpu, self.model, batch, self.tp, self.dp, self.ep,
                          self.calib)

    def tables(self, max_batch: int, max_input: int) -> tuple[np.ndarray, np.ndarray]:
        """(``prefill_s[s]`` for ``s = 0 .. max_input`` -- length 0 evaluated as 1, as
        the island benchmark does --, ``step_coeffs[b]`` for ``b = 0 .. max_batch``),
        read-only and cached.  Scalar configurations only."""
        key = (self.gpu.spec_key(), self.model, int(self.tp), int(self.dp), int(self.ep),
               self.calib.key(), int(max_batch), int(max_input))
        hit = _TABLES.get(key)
        if hit is not None:
            return hit
        col = lambda x: np.array([[float(x)]])  # noqa: E731
        cfg = IslandTiming(self.gpu, self.model, col(self.tp), col(self.dp), col(self.ep),
                           self.calib)
        s = np.maximum(np.arange(max_input + 1, dtype=np.float64), 1.0)[None, :]
        pre = np.asarray(cfg.prefill_s(s), dtype=np.float64)[0]
        sm = cfg.steps(np.arange(max_batch + 1, dtype=np.float64)[None, :])
        coeffs = np.array([sm.row(0, b) for b in range(max_batch + 1)], dtype=np.float64)
        for a in (pre, coeffs):
            a.setflags(write=False)
        _TABLES[key] = (pre, coeffs)
        return pre, coeffs

    # ---------------------------------------------------------------- memory
    @cached_property
    def usable_bytes(self) -> float:
        """HBM per GPU the engine may use (weights + KV cache + activations)."""
        return float(np.ravel(usable_bytes(self.gpu, self.calib, self.model, self.tp))[0])

    @property
    def weight_bytes_per_gpu(self) -> Any:
        return weight_bytes_per_gpu(self.model, self.tp, self.dp, self.ep)

    @property
    def weights_fit(self) -> Any:
        """Whether each GPU holds its share of the weights within the usable HBM."""
        return self.weight_bytes_per_gpu <= self.usable_bytes

    @property
    def kv_bytes_per_token_per_gpu(self) -> Any:
        """Bytes of one token's KV cache on one GPU of a tensor-parallel group (what one
        GPU-pair flow of a KV transfer carries)."""
        return kv_bytes_per_token_per_gpu(self.model, self.tp)

    @property
    def kv_capacity_tokens(self) -> int:
        """KV tokens the island's free HBM holds: ``dp`` groups of the per-group
        capacity (scalar configurations)."""
        per_group = kv_capacity_tokens(self.gpu, self.model, self.tp, self.dp, self.ep,
                                       self.calib)
        return int(float(per_group)) * int(self.dp)

    @property
    def batch_cap(self) -> float:
        """Most sequences one attention group's scheduler runs (the engine's limits,
        :func:`perfmodel.memory.engine_batch_cap`)."""
        return engine_batch_cap(self.gpu, self.model, self.calib)

    def decode_batch(self, context_max: Any) -> Any:
        """Per-group decode batch by seed 002's rule (§4.6.2) for sequences up to
        ``context_max`` tokens: the largest batch whose KV fits, rounded down by
        :func:`thesis_batch_rule`."""
        fit = max_decode_batch(self.gpu, self.model, self.tp, self.dp, self.ep, context_max,
                               self.calib)
        return thesis_batch_rule(np.asarray(fit, float), self.batch_cap)


def clear_cache() -> None:
    """Forget the cached tables (benchmarks timing a cold start)."""
    _TABLES.clear()


__all__ = ["STEP_COLUMNS", "IslandTiming", "clear_cache", "kv_bytes_per_token_per_gpu",
           "thesis_batch_rule"]
