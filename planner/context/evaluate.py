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
from perfmodel.engines import EngineLimits, get_engine
from perfmodel.island import PhaseTable
from perfmodel.timing import kv_bytes_per_token_per_gpu
from planner.core.defaults import (
    MAX_PLAN_LEN,
    MAX_RANGES,
    SLO_ATTAINMENT,
    SLO_EXEMPT_SHARE,
    TTFT_PASS_SHARE,
)
from planner.core.errors import PlannerError
from planner.fleet.inventory import Inventory
from planner.fleet.network import DEFAULT_NETWORK, NetworkSpec, parse_network
from planner.fleet.servers import ServerShape
from planner.inner.problem import FullResolution, InnerProblem, IslandSpec
from planner.inner.protocol import InnerSolver
from planner.inner.registry import make_inner_solver
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
    #: Input lengths no island of the inventory can serve within the SLO, served
    #: best-effort because their share of requests is within the allowance
    #: (planner.context.feasibility.slo_allowance); None: every length meets the SLO.
    slo_exempt: SloExemption | None = None

    @classmethod
    def build(cls, *, model: str, workload: str | Workload, ranges: int,
              gpus: Mapping[str, GPU], slo: SLO, engine: str,
              network: Mapping[str, Any] | None = None, thesis: bool = False,
              colocated: bool = False,
              limits: EngineLimits | None = None,
              plan_at: str = "point") -> PlanningContext:
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
                   replace(Calibration(engine=engine).with_limits(limits or EngineLimits()),
                           plan_at=plan_at),
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
                        limits=req.engine_limits, plan_at=req.plan_at,
                        thesis=req.thesis, colocated=req.offers_colocated)
        if server:
            ctx = replace(ctx, servers={e.name: e.shape for e in req.inventory.entries})
        if req.colocated not in ("auto", "on", "off"):
            raise PlannerError(f"--colocated must be auto, on or off, got {req.colocated!r}")
        return with_slo_allowance(ctx, req.inventory)

    @property
    def table_slo(self) -> SLO:
        """The ceilings island tables are built with: the TPOT ceiling, and the share
        ``TTFT_PASS_SHARE`` of the TTFT ceiling for one prefill pass (planner.core.defaults);
        the thesis's mode has no queueing allowance.  The lengths of ``slo_exempt``, if
        any, are tabulated without the ceilings (``SLO.best_effort``)."""
        slo = self.slo.strict
        if not (self.thesis or slo.ttft_ms is None):
            slo = SLO(slo.ttft_ms * TTFT_PASS_SHARE, slo.tpot_ms)
        if self.slo_exempt is not None:
            slo = replace(slo, best_effort=self.slo_exempt.intervals)
        return slo

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


# ------------------------------------------------------------------ the SLO allowance
# A plan promises that SLO_ATTAINMENT (99 %) of requests meet the ceilings.  Input
# lengths no islands of the inventory serve within them (typically the longest prompts,
# whose one prefill pass cannot fit the share TTFT_PASS_SHARE of the TTFT it gets) spend
# that allowance: up to SLO_EXEMPT_SHARE of the requests, the context serves them
# best-effort -- its island tables drop the ceilings at exactly those lengths
# (perfmodel.SLO.best_effort) -- and records them (PlanningContext.slo_exempt); beyond
# it planner.context.feasibility.unmet_slo refuses.  This lives beside the context
# because for_request applies it: every plan of a request sees the same tables.
@dataclass(frozen=True)
class SloExemption:
    """Input lengths no island of the inventory can serve within the SLO, whose share
    of requests is within ``SLO_EXEMPT_SHARE``: the plan serves them best-effort and
    counts them as misses against its 1 % allowance."""

    share: float  # of the workload's requests
    lengths: tuple[int, int]  # shortest and longest such length with demand
    #: Inclusive length intervals the island tables serve without the ceilings
    #: (``perfmodel.SLO.best_effort``): the runs of lengths no island serves.
    intervals: tuple[tuple[int, int], ...]
    reason: str  # which ceiling no island meets there, and why

    def to_dict(self) -> dict[str, Any]:
        """plan.json's ``summary.slo_exempt`` (docs/plan-schema.md)."""
        return {"share": self.share, "lengths": list(self.lengths), "reason": self.reason}

    def sentence(self) -> str:
        """The caveat a report states."""
        lo, hi = self.lengths
        span = f"{lo:,}" if lo == hi else f"{lo:,}-{hi:,}"
        return (f"{_pct(self.share)} of requests (prompts of {span} tokens) cannot meet the "
                f"SLO on any island of this inventory ({self.reason}); they are served "
                f"and count as misses against the {1 - SLO_ATTAINMENT:.0%} allowance.")


def probe_sizes(count: int) -> list[int]:
    """Island sizes the SLO check tries for a type with ``count`` GPUs."""
    sizes, g = {count}, 1
    while g < count:
        sizes.add(g)
        g *= 2
    return sorted(sizes)


def island_sizes(ev: LayoutEvaluator, name: str, count: int) -> list[int]:
    """:func:`probe_sizes`, at server granularity only those a plan may use (whole
    servers or a share of one, planner.fleet.servers) and the largest of them."""
    shapes = ev.context.servers
    if not shapes or name not in shapes:
        return probe_sizes(count)
    shape = shapes[name]
    top = shape.snap_down(min(count, shape.gpus))
    return sorted({g for g in probe_sizes(count) if shape.allowed(g)}
                  | ({top} if top else set()))


def served_lengths(ev: LayoutEvaluator, sizes: Mapping[str, Iterable[int]]
                   ) -> dict[str, np.ndarray]:
    """Per phase ("prefill", "decode"), the input lengths some island of ``sizes``
    ({GPU type: island sizes}) serves within the context's SLO; a colocated island, where
    the context offers them, serves both phases."""
    n = len(ev.context.workload.pmf)
    ok = {"prefill": np.zeros(n, bool), "decode": np.zeros(n, bool)}
    for name, options in sizes.items():
        for g in options:
            table = ev.island(name, g)
            both = ev.colocated_table(name, g) if ev.context.colocated else None
            for phase in ok:
                ok[phase] |= np.asarray(getattr(table, phase).rps)[:n] > 0
                if both is not None:
                    ok[phase] |= np.asarray(both.rps)[:n] > 0
    return ok


def served_together(ev: LayoutEvaluator, sizes: Mapping[str, Iterable[int]],
                    counts: Mapping[str, int], budget: float | None = None) -> np.ndarray:
    """The input lengths some prefill island and some decode island of ``sizes`` serve
    within the context's SLO *and* fit beside each other -- GPUs of one type summing to at
    most ``counts[type]``, their cost within ``budget`` $/h if given -- or one colocated
    island serves.  A plan holds both for every length it serves: a length only an
    island of a type's whole count can prefill has no decode island beside it."""
    c = ev.context
    n = len(c.workload.pmf)
    price = {name: gpu.price_per_hour for name, gpu in c.gpus.items()}
    islands = [(name, g) for name, options in sizes.items() for g in options]
    pre, dec = {}, {}
    out = np.zeros(n, bool)
    for name, g in islands:
        table = ev.island(name, g)
        pre[name, g] = np.asarray(table.prefill.rps)[:n] > 0
        dec[name, g] = np.asarray(table.decode.rps)[:n] > 0
        both = ev.colocated_table(name, g) if c.colocated else None
        if both is not None and (budget is None or g * price[name] <= budget):
            out |= np.asarray(both.rps)[:n] > 0
    for (a, ga), p in pre.items():
        if not p.any():
            continue
        for (b, gb), d in dec.items():
            if a == b and ga + gb > counts.get(a, 0):
                continue
            if budget is not None and ga * price[a] + gb * price[b] > budget:
                continue
            out |= p & d
    return out


def inventory_sizes(ev: LayoutEvaluator, inventory: Inventory) -> dict[str, list[int]]:
    """{type: :func:`island_sizes`} over the types ``inventory`` has GPUs of."""
    return {e.name: island_sizes(ev, e.name, e.count) for e in inventory.entries
            if e.count >= 1}


def strict_evaluator(ev: LayoutEvaluator) -> LayoutEvaluator:
    """``ev`` with every length held to the ceilings (no best-effort lengths)."""
    if ev.context.slo_exempt is None:
        return ev
    return LayoutEvaluator(replace(ev.context, slo_exempt=None), ev.solver)


def unserved_lengths(ev: LayoutEvaluator, inventory: Inventory
                     ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """(lengths with demand no islands of ``inventory`` serve -- a prefill and a decode
    island it can hold together, or a colocated one: :func:`served_together` --, and per
    phase the lengths some island serves at all) under ``ev``'s tables.  Where no two
    islands fit together at any length, per phase alone: that is the model's footprint,
    which the budget check and ``planner.plan.explain_no_plan`` explain."""
    need = ev.context.workload.pmf > 0
    sizes = inventory_sizes(ev, inventory)
    ok = served_lengths(ev, sizes)
    together = served_together(ev, sizes, {e.name: e.count for e in inventory.entries})
    # no two islands fit at all: the model's footprint, not the SLO (planner.plan says so)
    ok["together"] = together if together.any() else ok["prefill"] & ok["decode"]
    return need & ~ok["together"], ok


def _exempt_reason(ctx: PlanningContext, missing: np.ndarray, ok: Mapping[str, np.ndarray]
                   ) -> str:
    parts = []
    budget, ttft = ctx.table_slo.ttft_ms, ctx.slo.ttft_ms
    if (missing & ~ok["prefill"]).any() and budget is not None and ttft is not None:
        parts.append(f"no island prefills them in one pass of at most {budget:,g} ms"
                     + ("" if budget == ttft else
                        f", the {budget / ttft:.0%} of the {ttft:,g} ms TTFT a pass gets"))
    if (missing & ~ok["decode"]).any() and ctx.slo.tpot_ms is not None:
        parts.append(f"no island decodes them within the {ctx.slo.tpot_ms:g} ms TPOT")
    if (missing & ok["prefill"] & ok["decode"]).any():
        parts.append("the only islands that serve some of them within the SLO leave too "
                     "few GPUs for an island of the other phase")
    return "; ".join(parts) or "no island serves them within the SLO"


def _exempt_intervals(missing: np.ndarray, served: np.ndarray) -> tuple[tuple[int, int], ...]:
    """The runs of lengths no island serves between the shortest and the longest length
    of ``missing`` (lengths without demand inside them included: they cost nothing)."""
    where = np.flatnonzero(missing)
    bad = ~served
    bad[: where.min()] = False
    bad[where.max() + 1:] = False
    edges = np.flatnonzero(np.diff(np.concatenate([[0], bad.astype(np.int8), [0]])))
    return tuple((int(lo), int(hi))
                 for lo, hi in zip(edges[::2], edges[1::2] - 1, strict=True))


def within_allowance(share: float) -> bool:
    """Whether requests making up ``share`` of the workload may miss the SLO by
    construction (no island can serve them) and the plan still keep its promise."""
    return share <= SLO_EXEMPT_SHARE


def slo_allowance(ev: LayoutEvaluator, inventory: Inventory) -> SloExemption | None:
    """The lengths no island of ``inventory`` serves within the SLO, when their share
    of requests is :func:`within_allowance` and every one of them is served once the ceilings
    are dropped there (not, say, a prompt whose KV cache fits nowhere); else None."""
    c = ev.context
    if c.slo.ttft_ms is None and c.slo.tpot_ms is None:
        return None
    strict = strict_evaluator(ev)
    missing, ok = unserved_lengths(strict, inventory)
    share = float(c.workload.pmf[missing].sum())
    if not missing.any() or not within_allowance(share):
        return None
    lengths = np.flatnonzero(missing)
    exemption = SloExemption(share, (int(lengths.min()), int(lengths.max())),
                             _exempt_intervals(missing, ok["together"]),
                             _exempt_reason(c, missing, ok))
    relaxed = LayoutEvaluator(replace(c, slo_exempt=exemption), ev.solver)
    if unserved_lengths(relaxed, inventory)[0].any():
        return None
    return exemption


def with_slo_allowance(ctx: PlanningContext, inventory: Inventory) -> PlanningContext:
    """``ctx`` with :attr:`PlanningContext.slo_exempt` set from :func:`slo_allowance`
    on ``inventory`` (None where every length meets the SLO or too many cannot)."""
    ctx = replace(ctx, slo_exempt=None) if ctx.slo_exempt is not None else ctx
    if ctx.slo.ttft_ms is None and ctx.slo.tpot_ms is None:
        return ctx
    exemption = slo_allowance(LayoutEvaluator(ctx, make_inner_solver("maxrate")), inventory)
    return ctx if exemption is None else replace(ctx, slo_exempt=exemption)


def _pct(share: float) -> str:
    return f"{100 * share:.3g}%"
