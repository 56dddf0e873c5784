"""Input of the inner loop: an island layout with its benchmark tables (seed 002 §4.8).

The inner loop is coded against plain arrays so it needs nothing from the perf
model: whoever benchmarks the islands (the pipeline) fills an :class:`InnerProblem`
with, per island ``i`` and input-length range ``j``,

* ``prefill_rps[i, j]`` = :math:`b^{P}_{ij}`, the requests/s island ``i`` sustains on
  range ``j`` (at the range's representative length) if it does nothing else, and
* ``decode_rps[i, j]`` = :math:`b^{D}_{ij}`, the same for decode (0 where the model does
  not fit on the island for decode at that length),
* optionally ``both_rps[i, j]`` = :math:`b^{A}_{ij}`, the requests/s island ``i`` serves
  *colocated* -- both phases on the island, in-flight batching with chunked prefill
  (perfmodel.colocated); a colocated island's time on range ``j`` counts towards both
  phases' coverage of it,

together with the range probabilities :math:`p_j` of §4.6.3.  :class:`FullResolution`
holds the same tables at every input length, for the evaluator of §5.2.2.

Pre-checks that turn bad layouts into an "infeasible, because ..." answer (never an
exception) live here too, so every solver reports the same reasons.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

#: Tolerance on :math:`\sum_j p_j = 1` (ranges built from a float pmf).
PROB_SUM_TOL = 1e-6


@dataclass(frozen=True)
class IslandSpec:
    """One island of the layout: ``size`` GPUs of type ``gpu`` (§4.8, pair (t_i, s_i)).

    The parallel configurations and batch sizes are informational: they are chosen
    by the perf model (§4.6.1–4.6.2) before the inner solve and copied to the result.
    """

    gpu: str
    size: int
    prefill_config: str = ""
    decode_config: str = ""
    prefill_batch: int = 1
    decode_batch: int = 0
    both_config: str = ""
    both_batch: int = 0


def _as_float_array(name: str, value: object, shape: tuple[int, ...]) -> np.ndarray:
    arr = np.asarray(value, dtype=float)
    if arr.shape != shape:
        raise ValueError(f"InnerProblem.{name}: shape {arr.shape}, expected {shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"InnerProblem.{name}: contains NaN or infinite values")
    return arr


@dataclass(frozen=True)
class InnerProblem:
    """A layout plus its per-range benchmark tables (inputs of the MILP of §4.8.1).

    Shapes: ``I = len(islands)`` islands, ``J = len(range_prob)`` ranges.  Ranges are
    half-open ``[range_start, range_end)`` in tokens; ``range_mid`` is the length at
    which the tables were measured.  Throughputs are requests/s and must be >= 0.
    ``mean_input_tokens`` (mean length inside each range under the workload; defaults
    to ``range_mid``) and ``decode_mean`` only convert request rates to tokens/s.

    Construction validates shapes and values and raises ``ValueError``: these arrays are
    built by code, so a mismatch is a programming error, not a user mistake.
    """

    islands: tuple[IslandSpec, ...]
    range_prob: np.ndarray
    range_start: np.ndarray
    range_end: np.ndarray
    range_mid: np.ndarray
    prefill_rps: np.ndarray
    decode_rps: np.ndarray
    mean_input_tokens: np.ndarray | None = None
    decode_mean: float = 0.0
    note: str = ""
    both_rps: np.ndarray | None = None  # (I, J) colocated throughputs; None: no such role

    def __post_init__(self) -> None:
        islands = tuple(self.islands)
        object.__setattr__(self, "islands", islands)
        p = np.asarray(self.range_prob, dtype=float)
        if p.ndim != 1:
            raise ValueError("InnerProblem.range_prob: must be one-dimensional")
        n_i, n_j = len(islands), p.shape[0]
        object.__setattr__(self, "range_prob", _as_float_array("range_prob", p, (n_j,)))
        for name in ("range_start", "range_end", "range_mid"):
            object.__setattr__(self, name, _as_float_array(name, getattr(self, name), (n_j,)))
        for name in ("prefill_rps", "decode_rps"):
            arr = _as_float_array(name, getattr(self, name), (n_i, n_j))
            if np.any(arr < 0):
                raise ValueError(f"InnerProblem.{name}: negative throughput")
            object.__setattr__(self, name, arr)
        if self.both_rps is not None:
            arr = _as_float_array("both_rps", self.both_rps, (n_i, n_j))
            if np.any(arr < 0):
                raise ValueError("InnerProblem.both_rps: negative throughput")
            object.__setattr__(self, "both_rps", arr if np.any(arr > 0) else None)
        if self.mean_input_tokens is not None:
            arr = _as_float_array("mean_input_tokens", self.mean_input_tokens, (n_j,))
            object.__setattr__(self, "mean_input_tokens", arr)
        if n_j == 0:
            raise ValueError("InnerProblem.range_prob: no ranges")
        if np.any(self.range_prob < 0):
            raise ValueError("InnerProblem.range_prob: negative probability")
        if abs(float(self.range_prob.sum()) - 1.0) > PROB_SUM_TOL:
            raise ValueError(
                f"InnerProblem.range_prob: sums to {self.range_prob.sum():.9f}, expected 1"
            )
        if np.any(self.range_end <= self.range_start):
            raise ValueError("InnerProblem.range_end: every range must end after it starts")
        if self.decode_mean < 0:
            raise ValueError("InnerProblem.decode_mean: negative")
        for k, isl in enumerate(islands):
            if isl.size <= 0:
                raise ValueError(f"InnerProblem.islands[{k}].size: must be positive")

    @property
    def n_islands(self) -> int:
        return len(self.islands)

    @property
    def colocated(self) -> np.ndarray:
        """``both_rps``, or zeros when no island can serve colocated."""
        if self.both_rps is None:
            return np.zeros_like(self.prefill_rps)
        return self.both_rps

    @property
    def n_ranges(self) -> int:
        return int(self.range_prob.shape[0])

    def input_tokens(self) -> np.ndarray:
        """Mean input tokens per request of each range (``range_mid`` if not given)."""
        if self.mean_input_tokens is not None:
            return self.mean_input_tokens
        return self.range_mid

    def infeasibility(self) -> str | None:
        """Why no disaggregated plan can serve this workload, or ``None`` if one may.

        Necessary conditions checked (cheap, and shared by all solvers so they report
        the same reason): a non-empty layout; at least one island that can prefill and
        a *different* one that can decode (prefill and decode islands are disjoint,
        §4.8.1 constraint 2); every range with :math:`p_j > 0` served by some island in
        each phase.  The last condition is what the maximum-rate objective needs; the
        thesis MILP's tolerance constraints (4)-(5) need it too, since they force
        :math:`R_j \\ge (1-\\tau)p_j R > 0`.
        """
        if self.n_islands == 0:
            return "empty layout: no islands to assign"
        if self.both_rps is not None:
            return self._infeasibility_with_colocated()
        can_p = self.prefill_rps.max(axis=1) > 0
        can_d = self.decode_rps.max(axis=1) > 0
        if not np.any(can_p | can_d):
            return "the model fits on none of the islands (all throughputs are zero)"
        if not np.any(can_d):
            return "the model fits for decode on none of the islands"
        if not np.any(can_p):
            return "the model fits for prefill on none of the islands"
        # A prefill island and a distinct decode island must exist.
        if can_p.sum() == 1 and can_d.sum() == 1 and np.array_equal(can_p, can_d):
            return ("one island only can serve the model; disaggregated serving needs a "
                    "prefill island and a separate decode island")
        active = self.range_prob > 0
        for phase, table in (("prefill", self.prefill_rps), ("decode", self.decode_rps)):
            unserved = active & ~(table.max(axis=0) > 0)
            if np.any(unserved):
                j = int(np.flatnonzero(unserved)[0])
                return (
                    f"no island can {phase} range {j} "
                    f"[{self.range_start[j]:.0f}, {self.range_end[j]:.0f}) tokens "
                    f"(p={self.range_prob[j]:.3g}); {int(unserved.sum())} range(s) unserved"
                )
        return None

    def _infeasibility_with_colocated(self) -> str | None:
        """With colocated islands a range is served by a colocated island, or by a
        prefill island and a different decode island."""
        active = self.range_prob > 0
        a = self.colocated.max(axis=0) > 0
        p = self.prefill_rps.max(axis=0) > 0
        d = self.decode_rps.max(axis=0) > 0
        unserved = active & ~a & ~(p & d)
        if np.any(unserved):
            j = int(np.flatnonzero(unserved)[0])
            return (f"no island can serve range {j} [{self.range_start[j]:.0f}, "
                    f"{self.range_end[j]:.0f}) tokens (p={self.range_prob[j]:.3g}) in "
                    f"either way; {int(unserved.sum())} range(s) unserved")
        return None


@dataclass(frozen=True)
class FullResolution:
    """Per-length tables for the evaluator (§5.2.2); index ``s`` = input length in tokens.

    ``pmf`` is the true :math:`p(s\\mid w)`; ``prefill_rps``/``decode_rps`` are the
    exact throughputs of every island at every length (shape ``(I, S)``).
    """

    pmf: np.ndarray
    prefill_rps: np.ndarray
    decode_rps: np.ndarray
    both_rps: np.ndarray | None = None

    def __post_init__(self) -> None:
        pmf = np.asarray(self.pmf, dtype=float)
        if pmf.ndim != 1 or np.any(pmf < 0) or not np.all(np.isfinite(pmf)):
            raise ValueError("FullResolution.pmf: must be a finite non-negative vector")
        if abs(float(pmf.sum()) - 1.0) > PROB_SUM_TOL:
            raise ValueError(f"FullResolution.pmf: sums to {pmf.sum():.9f}, expected 1")
        object.__setattr__(self, "pmf", pmf)
        for name in ("prefill_rps", "decode_rps"):
            arr = np.asarray(getattr(self, name), dtype=float)
            if arr.ndim != 2 or arr.shape[1] != pmf.shape[0]:
                raise ValueError(f"FullResolution.{name}: shape {arr.shape}, expected (I, S)")
            if np.any(arr < 0) or not np.all(np.isfinite(arr)):
                raise ValueError(f"FullResolution.{name}: must be finite and >= 0")
            object.__setattr__(self, name, arr)
        if self.prefill_rps.shape != self.decode_rps.shape:
            raise ValueError("FullResolution: prefill and decode tables differ in shape")
        if self.both_rps is not None:
            arr = np.asarray(self.both_rps, dtype=float)
            if arr.shape != self.prefill_rps.shape:
                raise ValueError("FullResolution.both_rps: shape differs from prefill_rps")
            object.__setattr__(self, "both_rps", arr)


def layout_violation(
    islands: tuple[IslandSpec, ...] | list[IslandSpec], inventory: Mapping[str, int]
) -> str | None:
    """Why ``islands`` does not fit in ``inventory`` (GPU type -> count), or ``None``.

    The outer loop guarantees this (§4.8); the pipeline calls it so that a layout
    beyond the inventory becomes an infeasible inner result rather than a crash.
    """
    if not islands:
        return "empty layout: no islands to assign"
    used: Counter[str] = Counter()
    for isl in islands:
        used[isl.gpu] += isl.size
    problems = []
    for gpu, n in sorted(used.items()):
        have = int(inventory.get(gpu, 0))
        if n > have:
            problems.append(f"{gpu}: layout uses {n} GPUs, inventory has {have}")
    if problems:
        return "layout beyond the inventory (" + "; ".join(problems) + ")"
    return None
