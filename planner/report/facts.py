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

from perfmodel.engines import DEFAULT_ENGINE, ENGINES
from planner.outer.protocol import parse_layout_text

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


def island_name(i: int, isl: Mapping[str, Any]) -> str:
    return f"#{i} {isl['gpu']}×{isl['size']}"


def gpu_types(plan: Mapping[str, Any]) -> list[str]:
    """GPU types in inventory order, then any the plan uses that the inventory omits."""
    out = [str(g["type"]) for g in plan["request"]["inventory"]["gpus"] if "type" in g]
    for isl in plan["islands"]:
        if str(isl["gpu"]) not in out:
            out.append(str(isl["gpu"]))
    return out


def prices(plan: Mapping[str, Any]) -> dict[str, float]:
    return {str(g["type"]): num(g.get("price_per_hour"))
            for g in plan["request"]["inventory"]["gpus"] if "type" in g}


def target_mode(plan: Mapping[str, Any]) -> bool:
    """Whether the search minimised $/h for a target rate (else maximised requests/s)."""
    return plan["request"].get("target_rps") is not None


def served_span(isl: Mapping[str, Any], plan: Mapping[str, Any], tol: float = 1e-6
                ) -> tuple[float, float, int, bool] | None:
    """(shortest input, longest input, ranges used, contiguous?) of the ranges an island
    spends time on; ``None`` if it is idle."""
    used = np.flatnonzero(arr(isl["shares"]) > tol)
    if isl["role"] == "idle" or used.size == 0:
        return None
    start, end = arr(plan["ranges"]["start"]), arr(plan["ranges"]["end"])
    return (float(start[used].min()), float(end[used].max()), int(used.size),
            bool(used.size == used.max() - used.min() + 1))


def ranges_served(isl: Mapping[str, Any], plan: Mapping[str, Any], empty: str = DASH
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


def homogeneous_ratio(plan: Mapping[str, Any]) -> float:
    """This plan's requests/s over the best single-type plan's, at the same budget."""
    best = plan["summary"].get("best_homogeneous")
    if not best:
        return math.nan
    r = num(best.get("ratio"))
    if math.isfinite(r):
        return r
    base = num(best.get("requests_per_s"))
    return num(plan["summary"]["requests_per_s"]) / base if base > 0 else math.nan


def headline(plan: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The answer in a few (label, sentence) pairs, for every renderer."""
    s = plan["summary"]
    req = plan["request"]
    lines = gpu_lines(plan)
    buy = ", ".join(f"{ln.used} × {ln.gpu}" for ln in lines if ln.used) or "nothing"
    budget = num(s.get("budget", req.get("budget")))
    of_budget = (f" of a {money(budget)} budget ({pct(num(s['cost_per_hour']) / budget, 0)})"
                 if budget > 0 else "")
    out = [("Buy / rent", f"{buy}: {money(s['cost_per_hour'])}{of_budget}")]
    tokens = fmt(s.get("tokens_per_s"))
    out.append(("Throughput",
                f"{fmt(s['requests_per_s'])} requests/s sustained on the workload mix "
                f"({tokens} tokens/s: {fmt(s.get('input_tokens_per_s'))} in, "
                f"{fmt(s.get('output_tokens_per_s'))} out)"))
    checked = capacity_check(plan)
    if checked:
        out.append(("Checked", checked))
    target = num(req.get("target_rps"))
    if math.isfinite(target):
        met = num(s["requests_per_s"]) >= target * (1 - 1e-9)
        out.append(("Target", f"{fmt(target)} requests/s — {'met' if met else 'NOT met'}"))
    out.append(("Cost per token",
                f"{money(s.get('usd_per_million_tokens'), '')} per million tokens "
                f"({money(s.get('usd_per_million_output_tokens'), '')} per million output "
                "tokens)"))
    best = s.get("best_homogeneous")
    if best:
        ratio = homogeneous_ratio(plan)
        out.append(("vs. one GPU type",
                    f"{fmt(ratio)}× the best single-type plan at the same budget "
                    f"({best.get('label', DASH)}: {fmt(best.get('requests_per_s'))} "
                    f"requests/s for {money(best.get('cost_per_hour'))})"))
    else:
        out.append(("vs. one GPU type", "not computed (one GPU type, or comparison off)"))
    out.append(("Search quality", search_quality(plan)))
    out.append(("Performance model", engine_sentence(req)))
    return out


_BOUND = {"analytic": "the perf model capacity, confirmed",
          "simulated": "corrected from simulation",
          "slo": "lowered until the SLO holds"}


def search_quality(plan: Mapping[str, Any]) -> str:
    """Which search made the plan and how far it is from the exact optimum of the
    model: in requests/s (throughput mode) or in $/h (target mode)."""
    s = plan["summary"]
    se = plan.get("search") or {}
    exact = s.get("exact")
    chosen = (se.get("settings") or {}).get("chosen")
    head = f"{se.get('name', DASH)} search" + (f" ({chosen})" if chosen else "")
    if not exact:
        return head + "; exact optimum not computed"
    status = exact.get("status") or DASH
    if se.get("name") == "exact" and not (se.get("settings") or {}).get("milp_layout"):
        gap = num(exact.get("gap"))
        proven = f", proven within {pct(gap, 2)}" if math.isfinite(gap) and gap > 0 else ""
        return f"{head}: this plan is the exact optimum ({status}{proven})"
    if target_mode(plan) and s.get("cost_gap") is not None:
        return (f"{head}; exact optimum ${num(exact.get('cost_per_hour')):,.2f}/h "
                f"({status}); this plan costs {pct(s['cost_gap'], 2)} more")
    gap = num(s.get("bo_gap"))
    if math.isfinite(gap):
        where = "below" if gap >= 0 else "above"
        return (f"{head}; exact optimum {fmt(exact.get('requests_per_s'))} requests/s "
                f"({status}); this plan is {pct(abs(gap), 2)} {where} it")
    return f"{head}; exact optimum {fmt(exact.get('requests_per_s'))} requests/s ({status})"


def capacity_check(plan: Mapping[str, Any]) -> str:
    """How the capacity was established, in one sentence: the closed loop's verdict,
    or that it is the perf model's figure unchecked."""
    s = plan["summary"]
    loop = s.get("closed_loop")
    slo = plan["request"].get("slo") or {}
    ceilings = " and ".join(f"{k} ≤ {fmt(slo.get(f))} ms" for k, f in
                            (("TTFT", "ttft_ms"), ("TPOT", "tpot_ms")) if slo.get(f))
    if not loop:
        return ("the capacity of the perf model, not simulated (--no-sim-check)"
                + (f"; SLO {ceilings}" if ceilings else ""))
    analytic = num(loop.get("analytic_requests_per_s"))
    ratio = num(s["requests_per_s"]) / analytic if analytic > 0 else math.nan
    slo_part = (f"{pct(loop.get('slo_attainment_at_90pct'))} of requests meet {ceilings} "
                "at 90 % of it" if ceilings else "no latency ceiling")
    how = _BOUND.get(str(loop.get("bound")), str(loop.get("bound")))
    return (f"{how} -- simulated, {pct(loop.get('sustained_fraction'))} of arrivals "
            f"complete at this rate and {slo_part}; perf model alone "
            f"{fmt(analytic)} requests/s (×{fmt(ratio)})")


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
    for isl in plan["islands"]:
        out[isl["role"]] = out.get(isl["role"], 0) + 1
    return out
