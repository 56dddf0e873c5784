"""From an island layout to its throughput: perf-model tables -> inner problem -> solve.

This is the function the outer searches optimise (seed 002 Fig. 4.5: the outer loop
proposes a layout, the inner loop packs the workload onto it and returns the
throughput).  Steps 1-3 of the inner loop (§4.8: ranges, prefill and decode benchmarks)
are cached exactly as §4.8.3 prescribes: ranges per (workload, width) in
``planner.workload``, island tables per (GPU type, size) here and in ``perfmodel``.

The benchmark of island i on range j, b_ij, is by default its throughput on the
range's own length mix, the harmonic mean of its per-length rates weighted by the
workload inside the range,

    b_ij = P_j / sum_{s in j} p(s) / R_i(s)      (0 if some length of j has R_i(s) = 0),

i.e. the rate at which the island completes the range's requests when they come in
their real proportions (the time per request averaged over the range).  The range-level
optimum is then the per-length capacity of the same assignment exactly (the
evaluator's ``R_pooled``), whatever the range width.  ``range_rate="midpoint"`` is the
thesis's b_ij = R_i(mid_j) (§4.6.3), kept to reproduce its tables.

KV transfer: every request's prompt KV cache (n_j tokens of ``kv`` bytes) leaves its
prefill island and enters its decode island over the data-centre network.  An island of
G GPUs moves at most G B bytes/s, B the per-GPU bandwidth of the tier its partners sit
at (the pod tier: placement pairs prefill and decode islands inside pods,
``planner.context.placement``), so its rate on range j is capped at G B / (n_j kv) -- folded
into b_ij, which keeps the inner problem linear and makes a plan network-bound exactly
where its links, not its GPUs, are the bottleneck.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any, cast

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
    get_model,
)
from perfmodel.colocated import colocated_table
from perfmodel.engines import get_engine
from perfmodel.island import PhaseTable
from perfmodel.timing import kv_bytes_per_token_per_gpu
from planner.core.defaults import MAX_PLAN_LEN, MAX_RANGES, TTFT_PASS_SHARE
from planner.core.errors import PlannerError
from planner.fleet.network import DEFAULT_NETWORK, NetworkSpec, parse_network
from planner.fleet.servers import ServerShape
from planner.inner.problem import FullResolution, InnerProblem, IslandSpec
from planner.inner.protocol import InnerSolver
from planner.inner.result import InnerResult
from planner.outer.protocol import Layout, Score, canonical_layout, layout_cost
from planner.workload import Ranges, Workload, load_workload, make_ranges

if TYPE_CHECKING:
    from planner.context.request import PlanRequest

OBJECTIVES = ("sustained", "thesis")
RANGE_RATES = ("mix", "midpoint")


@dataclass(frozen=True)
class PlanningContext:
    """Everything an evaluation depends on besides the layout."""

    model: ModelSpec
    workload: Workload
    ranges: Ranges
    gpus: dict[str, GPU]  # by type name, with the inventory's prices
    slo: SLO = SLO()
    calib: Calibration = DEFAULT_CALIBRATION
    network: NetworkSpec | None = DEFAULT_NETWORK  # None: KV transfer not limited
    kv_tier: int = 2  # locality tier prefill and decode islands pair at (pod)
    thesis: bool = False  # seed 002's batch rule (KV reserved for the longest output)
    #: Offer the inner solver colocated islands (perfmodel.colocated) beside prefill and
    #: decode ones.
    colocated: bool = False
    #: Server granularity (planner.fleet.servers): each type's servers, on which plans are
    #: placed; None: the thesis's free sizes, placed on the network's nodes.
    servers: Mapping[str, ServerShape] | None = None

    @classmethod
    def build(cls, *, model: str, workload: str | Workload, ranges: int,
              gpus: Mapping[str, GPU], slo: SLO, engine: str,
              network: Mapping[str, Any] | None = None, thesis: bool = False,
              colocated: bool = False) -> PlanningContext:
        """The one place a planning context is assembled from what a user names: the
        model and workload (a name, or a built workload such as a what-if mix), the
        range count, the GPUs at their prices, the SLO, the engine (its calibration)
        and the inventory's network section (none in thesis mode: no KV-transfer
        limit).  Planning, what-if studies and the simulator's re-planning of a
        pipeline plan all come through here, so they cannot disagree about what the
        same inputs mean."""
        spec = get_model(model)
        w = load_workload(workload) if isinstance(workload, str) else workload
        if w.max_len > MAX_PLAN_LEN:
            raise PlannerError(f"workload '{w.name}' reaches {w.max_len:,} tokens; the "
                               f"planner plans prompts up to {MAX_PLAN_LEN:,} (its tables "
                               "grow with the length): set max_len in the workload")
        if isinstance(ranges, bool) or not isinstance(ranges, int) or ranges < 1:
            raise PlannerError(f"--ranges must be a whole number >= 1, got {ranges!r}")
        if ranges > MAX_RANGES:
            raise PlannerError(f"--ranges must be at most {MAX_RANGES:,} (finer ranges add "
                               f"MILP columns, not accuracy), got {ranges:,}")
        table = make_ranges(w, count=ranges)
        get_engine(engine)  # a clear error for an unknown name
        return cls(spec, w, table, dict(gpus), slo,
                   Calibration(engine=engine),
                   None if thesis else parse_network(network, "inventory network"),
                   thesis=thesis, colocated=colocated)

    @classmethod
    def for_request(cls, req: PlanRequest) -> PlanningContext:
        """The context of a ``planner plan`` request (:meth:`build` on its fields)."""
        server = req.granularity == "server"
        # a server smaller than the GPU's scale-up domain bounds it (a 4-GPU HGX board
        # of an 8-GPU-domain part): collectives wider than a server go over the network
        gpus = {e.name: replace(e.gpu, gpus_per_domain=min(e.gpu.gpus_per_domain, e.node))
                if server else e.gpu for e in req.inventory.entries}
        ctx = cls.build(model=req.model, workload=req.workload, ranges=req.ranges,
                        gpus=gpus, slo=req.slo,
                        engine=req.engine, network=req.inventory.network,
                        thesis=req.thesis, colocated=req.offers_colocated)
        if server:
            ctx = replace(ctx, servers={e.name: e.shape for e in req.inventory.entries})
        if req.colocated not in ("auto", "on", "off"):
            raise PlannerError(f"--colocated must be auto, on or off, got {req.colocated!r}")
        return ctx

    @property
    def table_slo(self) -> SLO:
        """The ceilings island tables are built with: the TPOT ceiling, and the share
        ``TTFT_PASS_SHARE`` of the TTFT ceiling for one prefill pass (planner.core.defaults);
        the thesis's mode has no queueing allowance."""
        slo = self.slo
        if self.thesis or slo.ttft_ms is None:
            return slo
        return SLO(slo.ttft_ms * TTFT_PASS_SHARE, slo.tpot_ms)

    @cached_property
    def shape(self) -> WorkloadShape:
        """The workload as the perf model reads it: the thesis's cohort batches, or (by
        default) steady batches with each length's own output moments
        (``Workload.decode_moments``: outputs follow inputs in real traces, and a batch
        holds ``E[d^2 | s] / 2E[d | s]`` generated tokens per sequence)."""
        w = self.workload
        if self.thesis:
            return WorkloadShape(w.pmf, float(w.decode_mean), int(w.decode_max),
                                 float(w.prefix_hit_rate))
        m1, m2 = w.decode_moments
        held = 0.5 * m2 / np.maximum(m1, 1.0)
        return WorkloadShape(w.pmf, float(w.decode_mean), int(w.decode_max),
                             float(w.prefix_hit_rate), 0.5 * float(w.decode_residence),
                             m1, held)


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
    range_rate: str = "mix"
    #: Multipliers on island capacities keyed ``"gpu:size:role"`` (role prefill or
    #: decode): the closed loop's corrections from simulation (planner.sim.closed_loop);
    #: absent = 1, the perf model's.
    capacity_factors: Mapping[str, float] = field(default_factory=dict)
    evaluations: int = 0
    cache_hits: int = 0
    _scores: dict[Layout, Score] = field(default_factory=dict, repr=False)
    # keyed (gpu, size), or ("both", gpu, size) for colocated islands
    _range_tables: dict[tuple[str, int] | tuple[str, str, int],
                        tuple[np.ndarray, np.ndarray]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {OBJECTIVES}")
        if self.range_rate not in RANGE_RATES:
            raise ValueError(f"range_rate must be one of {RANGE_RATES}")
        w, r = self.context.workload, self.context.ranges
        lengths = np.arange(len(w.pmf), dtype=float)
        idx = r.index_of(lengths.astype(int))
        self._range_index = idx
        mass = np.bincount(idx, weights=w.pmf, minlength=len(r))
        tokens = np.bincount(idx, weights=w.pmf * lengths, minlength=len(r))
        self._mean_input = np.where(mass > 0, tokens / np.where(mass > 0, mass, 1), r.mid)
        self._mid = np.clip(np.asarray(r.mid, int), 1, len(w.pmf) - 1)

    # ------------------------------------------------------------------ islands
    def colocated_table(self, gpu: str, size: int) -> PhaseTable | None:
        """The island's colocated table, or None when the context offers no such role."""
        c = self.context
        if not c.colocated:
            return None
        return colocated_table(c.gpus[gpu], size, c.model, c.shape, c.table_slo, c.calib)

    def both_range_table(self, gpu: str, size: int) -> np.ndarray | None:
        """b^A_j of one island (no KV moves, so no network cap), or None."""
        key = ("both", gpu, size)
        if key in self._range_tables:
            return self._range_tables[key][0]
        t = self.colocated_table(gpu, size)
        if t is None:
            return None
        rate = t.rps[self._mid] if self.range_rate == "midpoint" else self._mix_rate(t.rps)
        rate = rate * self.capacity_factors.get(f"{gpu}:{size}:both", 1.0)
        self._range_tables[key] = (rate, rate)
        return rate

    def island(self, gpu: str, size: int) -> IslandTable:
        c = self.context
        return benchmark_island(c.gpus[gpu], size, c.model, c.shape, c.table_slo, c.calib)

    def range_tables(self, gpu: str, size: int) -> tuple[np.ndarray, np.ndarray]:
        """(b^P_j, b^D_j) of one island (module docstring)."""
        key = (gpu, size)
        hit = self._range_tables.get(key)
        if hit is None:
            t = self.island(gpu, size)
            if self.range_rate == "midpoint":
                hit = (t.prefill.rps[self._mid], t.decode.rps[self._mid])
            else:
                hit = (self._mix_rate(t.prefill.rps), self._mix_rate(t.decode.rps))
            cap = self.kv_rate_cap(size)
            if cap is not None:
                hit = (np.minimum(hit[0], cap), np.minimum(hit[1], cap))
            f = self.capacity_factors
            hit = (hit[0] * f.get(f"{gpu}:{size}:prefill", 1.0),
                   hit[1] * f.get(f"{gpu}:{size}:decode", 1.0))
            self._range_tables[key] = hit
        return hit

    def kv_bytes_per_length(self) -> np.ndarray:
        """Prompt KV-cache bytes moved per request of each input length."""
        kv = float(kv_bytes_per_token_per_gpu(self.context.model, 1))
        s = np.arange(len(self.context.workload.pmf), dtype=float)
        return s * (1.0 - self.context.workload.prefix_hit_rate) * kv

    def kv_bytes_per_request(self) -> np.ndarray:
        """Prompt KV-cache bytes moved per request of each range (the whole model's)."""
        kv = float(kv_bytes_per_token_per_gpu(self.context.model, 1))
        hit = self.context.workload.prefix_hit_rate
        # cached prefix blocks live on the decode side too; only new tokens move
        return np.maximum(self._mean_input, 1.0) * (1.0 - hit) * kv

    def kv_rate_cap(self, size: int) -> np.ndarray | None:
        """Requests/s of each range an island of ``size`` GPUs can ship or receive."""
        net = self.context.network
        if net is None:
            return None
        bw = net.tiers[self.context.kv_tier].effective_bytes_s * size
        return bw / self.kv_bytes_per_request()

    def _mix_rate(self, rps: np.ndarray) -> np.ndarray:
        """Harmonic mean of ``rps`` over each range's lengths, weighted by the pmf;
        0 where a length with demand cannot be served; the midpoint rate for a range
        without demand (it imposes nothing)."""
        pmf = self.context.workload.pmf
        idx = self._range_index
        inside = idx >= 0
        n = len(self.context.ranges)
        need = inside & (pmf > 0)
        blocked = np.bincount(idx[need], weights=(rps[need] <= 0).astype(float), minlength=n)
        inv = np.zeros_like(pmf)
        ok = need & (rps > 0)
        inv[ok] = pmf[ok] / rps[ok]
        mass = np.bincount(idx[inside], weights=pmf[inside], minlength=n)
        time = np.bincount(idx[inside], weights=inv[inside], minlength=n)
        out = np.where(time > 0, mass / np.where(time > 0, time, 1.0), rps[self._mid])
        out[blocked > 0] = 0.0
        return out

    # ------------------------------------------------------------------ problems
    def problem(self, layout: Iterable[tuple[str, int]]) -> InnerProblem:
        islands, pre, dec, both, notes = [], [], [], [], []
        for gpu, size in layout:
            t = self.island(gpu, size)
            p, d = self.range_tables(gpu, size)
            a = self.both_range_table(gpu, size)
            ct = self.colocated_table(gpu, size)
            islands.append(IslandSpec(
                gpu, size,
                t.prefill.config.label() if t.prefill.config else "",
                t.decode.config.label() if t.decode.config else "",
                1, int(np.max(t.decode.batch)) if t.decode.config else 0,
                ct.config.label() if ct is not None and ct.config else "",
                int(np.max(ct.batch)) if ct is not None and ct.config else 0))
            pre.append(p)
            dec.append(d)
            both.append(np.zeros_like(p) if a is None else a)
            if not t.decode.config and t.decode.reason not in notes:
                notes.append(t.decode.reason)
        r = self.context.ranges
        n_j = len(r)
        return InnerProblem(
            tuple(islands), r.prob, r.start, r.end, r.mid,
            np.array(pre).reshape(len(islands), n_j), np.array(dec).reshape(len(islands), n_j),
            self._mean_input, float(self.context.workload.decode_mean), "; ".join(notes),
            np.array(both).reshape(len(islands), n_j) if self.context.colocated else None)

    def full_resolution(self, layout: Iterable[tuple[str, int]]) -> FullResolution:
        layout = list(layout)
        tables = [self.island(gpu, size) for gpu, size in layout]
        pmf = self.context.workload.pmf
        both = None
        if self.context.colocated:
            # a colocated context always gives a table
            both = np.array([cast(PhaseTable, self.colocated_table(g, n)).rps
                             for g, n in layout]).reshape(-1, len(pmf))
        return FullResolution(pmf, np.array([t.prefill.rps for t in tables]).reshape(-1, len(pmf)),
                              np.array([t.decode.rps for t in tables]).reshape(-1, len(pmf)),
                              both)

    def solve(self, layout: Layout) -> InnerResult:
        return self.solver.solve(self.problem(layout))

    # ------------------------------------------------------------------ objective
    def cost(self, layout: Layout) -> float:
        return layout_cost(layout, {g: gpu.price_per_hour
                                    for g, gpu in self.context.gpus.items()})

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
            # a plan does not buy the islands its solution leaves idle (planner.plan)
            paid = tuple((a.gpu, a.size) for a in result.islands if a.role != "idle") \
                if result.feasible and result.islands else layout
            ok = bool(result.feasible) and value > 0  # a plan that serves nothing is none
            score = Score(float(value) if ok else 0.0, self.cost(paid), ok, result)
        self._scores[layout] = score
        return score

