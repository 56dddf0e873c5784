"""Figures and phrases derived from a plan dict, shared by every renderer.

Pure functions of the (checked) plan dict: the terminal summary, ``report.md`` and
``report.html`` must state the same numbers in the same words, so they all take them
from here.  Missing or non-finite values (null in ``plan.json``) print as an em dash.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from perfmodel import get_model
from perfmodel.engines import DEFAULT_ENGINE, ENGINES
from perfmodel.launch import engine_slots
from perfmodel.parallel import ParallelConfig
from planner.core.errors import PlannerError
from planner.outer.protocol import parse_layout_text
from planner.run.deployment import DeployedIsland, Deployment

DASH = "—"


def num(x: Any) -> float:
    """A finite float, or NaN for null/missing/non-numeric values."""
    if isinstance(x, bool) or not isinstance(x, int | float):
        return math.nan
    return float(x)


def arr(values: Sequence[Any]) -> np.ndarray:
    """Float array of a JSON list; nulls become NaN."""
    return np.array([num(v) for v in values], dtype=float)


def fmt(x: Any, digits: int = 3) -> str:
    """``digits`` significant figures with thousands separators; dash if missing."""
    v = num(x)
    if not math.isfinite(v):
        return DASH
    if v == 0:
        return "0"
    mag = math.floor(math.log10(abs(v)))
    decimals = max(0, digits - 1 - mag)
    return f"{v:,.{decimals}f}"


def money(x: Any, per: str = "/h") -> str:
    v = num(x)
    return DASH if not math.isfinite(v) else f"${v:,.2f}{per}"


def length(x: Any) -> str:
    """A token length: a whole number with thousands separators."""
    v = num(x)
    return DASH if not math.isfinite(v) else f"{round(v):,}"


def short_length(x: Any) -> str:
    """A token length in at most five characters: 880, 1,320, 14k."""
    v = num(x)
    if not math.isfinite(v):
        return DASH
    return f"{round(v):,}" if v < 10_000 else f"{v / 1000:.0f}k"


def pct(x: Any, digits: int = 1) -> str:
    v = num(x)
    return DASH if not math.isfinite(v) else f"{100 * v:.{digits}f}%"


def layout_label(layout: Any, empty: str = DASH) -> str:
    """``[[type, size], ...]`` (or a history's compact text, planner.outer.protocol.
    layout_text) as ``H200: 32+32; H20: 32+32`` (islands grouped by type; four or more
    of one size as ``2x400``)."""
    if not layout:
        return empty
    if isinstance(layout, str):

        try:
            layout = parse_layout_text(layout)
        except ValueError:
            return layout
    sizes: dict[str, list[int]] = {}
    for item in layout:
        t, g = item[0], item[1]
        sizes.setdefault(str(t), []).append(int(g))

    def run(g: int, k: int) -> str:  # four or more equal islands as "2x400"
        return f"{g}x{k}" if k > 3 else "+".join([str(g)] * k)

    return "; ".join(f"{t}: " + "+".join(run(g, gs.count(g)) for g in sorted(set(gs),
                                                                          reverse=True))
                     for t, gs in sizes.items())


_DEPLOYMENTS: dict[int, tuple[Mapping[str, Any], Deployment]] = {}


def deployment(plan: Mapping[str, Any]) -> Deployment:
    """The plan's typed deployment (planner.run.deployment): the islands every island
    table, plot and CSV of the report reads, read from the plan dict once per dict."""
    hit = _DEPLOYMENTS.get(id(plan))
    if hit is not None and hit[0] is plan:
        return hit[1]
    dep = Deployment.from_plan(plan, serving=False)
    if len(_DEPLOYMENTS) >= 8:
        _DEPLOYMENTS.clear()
    _DEPLOYMENTS[id(plan)] = (plan, dep)  # holding the dict keeps its id unique
    return dep


def island_name(i: int, isl: DeployedIsland) -> str:
    return f"#{i} {isl.gpu.name}×{isl.size}"


def gpu_types(plan: Mapping[str, Any]) -> list[str]:
    """GPU types in inventory order, then any the plan uses that the inventory omits."""
    out = [str(g["type"]) for g in plan["request"]["inventory"]["gpus"] if "type" in g]
    for isl in deployment(plan).every:
        if isl.gpu.name not in out:
            out.append(isl.gpu.name)
    return out


def prices(plan: Mapping[str, Any]) -> dict[str, float]:
    return {str(g["type"]): num(g.get("price_per_hour"))
            for g in plan["request"]["inventory"]["gpus"] if "type" in g}


def target_mode(plan: Mapping[str, Any]) -> bool:
    """Whether the search minimised $/h for a target rate (else maximised requests/s)."""
    return plan["request"].get("target_rps") is not None


def served_span(isl: DeployedIsland, plan: Mapping[str, Any], tol: float = 1e-6
                ) -> tuple[float, float, int, bool] | None:
    """(shortest input, longest input, ranges used, contiguous?) of the ranges an island
    spends time on; ``None`` if it is idle."""
    used = np.flatnonzero(np.asarray(isl.shares, float) > tol)
    if isl.role == "idle" or used.size == 0:
        return None
    start, end = arr(plan["ranges"]["start"]), arr(plan["ranges"]["end"])
    return (float(start[used].min()), float(end[used].max()), int(used.size),
            bool(used.size == used.max() - used.min() + 1))


def ranges_served(isl: DeployedIsland, plan: Mapping[str, Any], empty: str = DASH
                  ) -> str:
    """Input lengths of the ranges an island spends time on, as ``start–end``."""
    span = served_span(isl, plan)
    if span is None:
        return empty
    lo, hi, n, contiguous = span
    return f"{length(lo)}–{length(hi)}" + ("" if contiguous else f" ({n} ranges)")


@dataclass(frozen=True)
class GpuLine:
    gpu: str
    used: int
    available: int | None
    price: float

    @property
    def cost(self) -> float:
        return self.used * self.price


def gpu_lines(plan: Mapping[str, Any]) -> list[GpuLine]:
    s = plan["summary"]
    used = s.get("gpus_used") or {}
    avail = s.get("gpus_available") or {}
    p = prices(plan)
    return [GpuLine(t, int(used.get(t, 0)), None if t not in avail else int(avail[t]),
                    p.get(t, math.nan))
            for t in gpu_types(plan) if used.get(t, 0) or t in avail]


def gpus_per_node(plan: Mapping[str, Any]) -> dict[str, int]:
    """GPUs per server of each inventory type, for a plan made at server granularity
    (empty for older plans and GPU granularity)."""
    req = plan["request"]
    if req.get("thesis") or req.get("island_granularity") != "server":
        return {}
    return {str(g["type"]): int(g["gpus_per_node"])
            for g in req["inventory"].get("gpus") or [] if g.get("gpus_per_node")}


def server_text(gpu: str, size: int, plan: Mapping[str, Any]) -> str:
    """An island in servers: ``"3 servers × 8"``, ``"1 server × 8"``, ``"4 of an 8-GPU
    server"`` ('' at GPU granularity)."""
    node = gpus_per_node(plan).get(gpu)
    if not node:
        return ""
    if size >= node:
        k = size // node
        return f"{k} server{'s' if k > 1 else ''} × {node}"
    return f"{size} of a{'n' if str(node)[0] == '8' else ''} {node}-GPU server"


def parallel_text(config: Any, plan: Mapping[str, Any]) -> str:
    """An island's parallel layout as the engine launches it: ``"tp1-dp24-ep12 (256
    experts in 264 slots, 8 redundant)"`` where expert parallelism needs redundant
    expert slots (perfmodel.launch), else the label alone."""
    text = str(config or DASH)
    req = plan["request"]
    try:
        cfg = ParallelConfig.from_label(text)
        model = get_model(str(req.get("model")))
    except (ValueError, PlannerError):
        return text
    if not model.is_moe or cfg.ep <= 1 or model.routed_experts % cfg.ep == 0:
        return text
    slots, extra = engine_slots(req.get("engine"), model, cfg.ep)
    if extra <= 0:
        return f"{text} ({model.routed_experts} experts spread unevenly)"
    return f"{text} ({model.routed_experts} experts in {slots} slots, {extra} redundant)"


def servers_used(plan: Mapping[str, Any]) -> dict[str, int]:
    """Servers of each type the plan occupies (its ``servers`` list)."""
    out: dict[str, int] = {}
    for srv in plan.get("servers") or []:
        out[str(srv["gpu"])] = out.get(str(srv["gpu"]), 0) + 1
    return out


def best_alternative(plan: Mapping[str, Any]) -> dict[str, Any] | None:
    """The best single-type alternative that went through the closed loop (the most
    requests/s at the SLO; in target mode the cheapest that holds the target), or the
    analytic best homogeneous plan when the plan was not simulated."""
    s = plan["summary"]
    alts = [a for a in s.get("alternatives") or []
            if a.get("gpu") and num(a.get("requests_per_s")) > 0]
    if alts:
        if num(plan["request"].get("target_rps")) > 0:
            return min(alts, key=lambda a: num(a.get("cost_per_hour")))
        return max(alts, key=lambda a: num(a.get("requests_per_s")))
    if s.get("alternatives") is not None:
        return None
    best = s.get("best_homogeneous")
    return dict(best) if best else None


def homogeneous_ratio(plan: Mapping[str, Any]) -> float:
    """This plan's requests/s over the best single-type plan's, both by the same
    promise (the closed loop's headline) when the plan was simulated."""
    best = best_alternative(plan)
    if not best:
        return math.nan
    if not plan["summary"].get("alternatives"):
        r = num(best.get("ratio"))
        if math.isfinite(r):
            return r
    base = num(best.get("requests_per_s"))
    return num(plan["summary"]["requests_per_s"]) / base if base > 0 else math.nan


def optimum_sentence(plan: Mapping[str, Any]) -> str:
    """Where this plan stands against the exact optimum of the model, in one plain
    sentence: in requests/s (throughput mode) or in $/h (target mode)."""
    s = plan["summary"]
    se = plan.get("search") or {}
    exact = s.get("exact")
    if not exact:
        return "The exact optimum was not computed."
    gap = num(exact.get("gap"))
    status = str(exact.get("status") or DASH)
    proven = f"proven within {pct(gap, 2)}" if math.isfinite(gap) and gap > 0 else ""
    how = ", ".join(x for x in (proven, "" if status == "optimal" else f"solver {status}")
                    if x)
    how = f" ({how})" if how else ""
    if se.get("name") == "exact" and not (se.get("settings") or {}).get("milp_layout"):
        return f"This plan is the exact optimum of the model{how}."
    if target_mode(plan) and s.get("cost_gap") is not None:
        return (f"This plan costs {pct(s['cost_gap'], 2)} more than the exact optimum "
                f"{money(exact.get('cost_per_hour'))}{how}, the cheapest plan that meets "
                "the target.")
    bo = num(s.get("bo_gap"))
    if math.isfinite(bo):
        where = "below" if bo >= 0 else "above"
        return (f"This plan's perf-model capacity is {pct(abs(bo), 2)} {where} the exact "
                f"optimum ({fmt(exact.get('requests_per_s'))} requests/s{how}).")
    return f"The exact optimum is {fmt(exact.get('requests_per_s'))} requests/s{how}."


def search_quality(plan: Mapping[str, Any]) -> str:
    """Which search made the plan, why, and :func:`optimum_sentence`."""
    se = plan.get("search") or {}
    chosen = (se.get("settings") or {}).get("chosen")
    head = f"{se.get('name', DASH)} search" + (f" ({chosen})" if chosen else "")
    return f"{head}: {optimum_sentence(plan)}"


def island_kinds(plan: Mapping[str, Any]) -> list[list[DeployedIsland]]:
    """The plan's islands grouped by kind -- same GPU, size, role, parallelism and batch
    -- in the order each kind first appears."""
    kinds: dict[tuple, list[DeployedIsland]] = {}
    for isl in deployment(plan).every:
        key = (isl.gpu.name, isl.size, isl.role, isl.config, isl.batch)
        kinds.setdefault(key, []).append(isl)
    return list(kinds.values())


def engine_sentence(req: Mapping[str, Any]) -> str:
    """Which engine's measured kernels and behaviour the plan was priced with."""

    name = req.get("engine") or DEFAULT_ENGINE
    prof = ENGINES.get(name)
    label = prof.label if prof else name
    if name == "roofline":
        return f"{label}: datasheet rooflines at constant efficiencies (seed 002's model)"
    return (f"{label} -- measured kernels (NVIDIA aiconfigurator-core database) and the "
            "engine's batching, overlap and memory behaviour (docs/perfmodel.md)")


def role_counts(plan: Mapping[str, Any]) -> dict[str, int]:
    out = {"prefill": 0, "decode": 0, "idle": 0}
    for isl in deployment(plan).every:
        out[isl.role] = out.get(isl.role, 0) + 1
    return out
