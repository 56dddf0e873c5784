"""From an island layout to its throughput: perf-model tables -> inner problem -> solve.

This is the function the outer searches optimise (seed 002 Fig. 4.5: the outer loop
proposes a layout, the inner loop packs the workload onto it and returns the
throughput).  Steps 1-3 of the inner loop (§4.8: ranges, prefill and decode benchmarks)
are cached exactly as §4.8.3 prescribes: ranges per (workload, width) in
``planner.workload``, island tables per (GPU type, size) here and in ``perfmodel``.

The benchmark of island i on range j is its throughput at the range's representative
midpoint, b_ij = R_i(mid_j) (§4.6.3).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from perfmodel import (
    DEFAULT_CALIBRATION,
    GPU,
    SLO,
    Calibration,
    IslandTable,
    ModelSpec,
    WorkloadShape,
    benchmark_island,
)
from planner.inner.problem import FullResolution, InnerProblem, IslandSpec
from planner.inner.protocol import InnerSolver
from planner.inner.result import InnerResult
from planner.outer.protocol import Layout, Score, canonical_layout
from planner.workload import Ranges, Workload

OBJECTIVES = ("sustained", "thesis")


@dataclass(frozen=True)
class PlanningContext:
    """Everything an evaluation depends on besides the layout."""

    model: ModelSpec
    workload: Workload
    ranges: Ranges
    gpus: dict[str, GPU]  # by type name, with the inventory's prices
    slo: SLO = SLO()
    calib: Calibration = DEFAULT_CALIBRATION

    @property
    def shape(self) -> WorkloadShape:
        w = self.workload
        return WorkloadShape(w.pmf, float(w.decode_mean), int(w.decode_max),
                             float(w.prefix_hit_rate))


@dataclass
class LayoutEvaluator:
    """Callable layout -> :class:`Score`, with per-layout and per-island caches.

    ``objective``: ``"sustained"`` scores a layout by the rate at which it serves the
    workload mix with every range kept in proportion (the weight-free inner optimum, and
    a lower bound on any solver's min(R_prefill, R_decode)); ``"thesis"`` by the inner
    result's R_total = min(R_prefill, R_decode), the thesis's rho_max = 1 / R_total.
    """

    context: PlanningContext
    solver: InnerSolver
    objective: str = "sustained"
    evaluations: int = 0
    cache_hits: int = 0
    _scores: dict[Layout, Score] = field(default_factory=dict, repr=False)
    _range_tables: dict[tuple[str, int], tuple[np.ndarray, np.ndarray]] = field(
        default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {OBJECTIVES}")
        w, r = self.context.workload, self.context.ranges
        lengths = np.arange(len(w.pmf), dtype=float)
        idx = r.index_of(lengths.astype(int))
        mass = np.bincount(idx, weights=w.pmf, minlength=len(r))
        tokens = np.bincount(idx, weights=w.pmf * lengths, minlength=len(r))
        self._mean_input = np.where(mass > 0, tokens / np.where(mass > 0, mass, 1), r.mid)
        self._mid = np.clip(np.asarray(r.mid, int), 1, len(w.pmf) - 1)

    # ------------------------------------------------------------------ islands
    def island(self, gpu: str, size: int) -> IslandTable:
        c = self.context
        return benchmark_island(c.gpus[gpu], size, c.model, c.shape, c.slo, c.calib)

    def range_tables(self, gpu: str, size: int) -> tuple[np.ndarray, np.ndarray]:
        """(b^P_j, b^D_j) of one island: its throughput at each range midpoint."""
        key = (gpu, size)
        hit = self._range_tables.get(key)
        if hit is None:
            t = self.island(gpu, size)
            hit = (t.prefill.rps[self._mid], t.decode.rps[self._mid])
            self._range_tables[key] = hit
        return hit

    # ------------------------------------------------------------------ problems
    def problem(self, layout: Iterable[tuple[str, int]]) -> InnerProblem:
        islands, pre, dec, notes = [], [], [], []
        for gpu, size in layout:
            t = self.island(gpu, size)
            p, d = self.range_tables(gpu, size)
            islands.append(IslandSpec(
                gpu, size,
                t.prefill.config.label() if t.prefill.config else "",
                t.decode.config.label() if t.decode.config else "",
                1, int(np.max(t.decode.batch)) if t.decode.config else 0))
            pre.append(p)
            dec.append(d)
            if not t.decode.config and t.decode.reason not in notes:
                notes.append(t.decode.reason)
        r = self.context.ranges
        n_j = len(r)
        return InnerProblem(
            tuple(islands), r.prob, r.start, r.end, r.mid,
            np.array(pre).reshape(len(islands), n_j), np.array(dec).reshape(len(islands), n_j),
            self._mean_input, float(self.context.workload.decode_mean), "; ".join(notes))

    def full_resolution(self, layout: Iterable[tuple[str, int]]) -> FullResolution:
        tables = [self.island(gpu, size) for gpu, size in layout]
        pmf = self.context.workload.pmf
        return FullResolution(pmf, np.array([t.prefill.rps for t in tables]).reshape(-1, len(pmf)),
                              np.array([t.decode.rps for t in tables]).reshape(-1, len(pmf)))

    def solve(self, layout: Layout) -> InnerResult:
        return self.solver.solve(self.problem(layout))

    # ------------------------------------------------------------------ objective
    def cost(self, layout: Layout) -> float:
        return float(sum(self.context.gpus[g].price_per_hour * n for g, n in layout))

    def __call__(self, layout: Layout) -> Score:
        layout = canonical_layout(layout)
        hit = self._scores.get(layout)
        if hit is not None:
            self.cache_hits += 1
            return hit
        self.evaluations += 1
        if not layout:
            score = Score(0.0, 0.0, False, None)
        else:
            result = self.solve(layout)
            value = result.R_sustained if self.objective == "sustained" else result.R_total
            score = Score(float(value) if result.feasible else 0.0, self.cost(layout),
                          bool(result.feasible), result)
        self._scores[layout] = score
        return score

