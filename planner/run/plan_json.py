"""A solved plan as the plan.json dict of docs/plan-schema.md (schema version 1)."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

import numpy as np

import planner
from planner.inner.evaluator import Evaluation
from planner.inner.result import InnerResult
from planner.outer.protocol import Layout, SearchResult, layout_counts
from planner.run.schema import SCHEMA_VERSION


def _num(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(float(x)) else float(x)


def _baseline_dict(b) -> dict[str, Any]:
    return {"label": b.label, "layout": [list(i) for i in b.layout],
            "requests_per_s": b.value, "cost_per_hour": b.cost_per_hour, "status": b.status,
            "bound": _num(b.bound), "gap": _num(b.gap)}


def _latency(op) -> dict[str, Any]:
    if op is None:
        return {}
    out = {"latency_ms": {"ttft_p50": _num(op.ttft_ms_p50), "ttft_p90": _num(op.ttft_ms_p90),
                          "tpot_p50": _num(op.tpot_ms_p50), "tpot_p90": _num(op.tpot_ms_p90)},
           "kv_bytes_per_s": _num(op.kv_bytes_per_s)}
    if op.tiers is not None:
        out["network"] = op.tiers.to_dict()
    return out


def _island(a, point, location, flows, servers=None) -> dict[str, Any]:
    out = {"gpu": a.gpu, "size": a.size, "role": a.role, "config": a.config,
           "batch": a.batch, "shares": list(a.shares)}
    if servers:
        out["servers"] = list(servers)
    if point is not None:
        out.update(requests_per_s=_num(point.requests_per_s), ttft_ms=_num(point.ttft_ms),
                   tpot_ms=_num(point.tpot_ms))
        if point.token_budget:
            out["token_budget"] = int(point.token_budget)
    if flows is not None:
        out["range_rps"] = [round(float(x), 9) for x in flows]
    if location is not None:
        out["location"] = {"pod": location.pod, "rack": location.rack, "node": location.node}
    return out


def plan_dict(*, request: dict[str, Any], result: InnerResult, evaluation: Evaluation,
              ranges_mid: np.ndarray, prices: dict[str, float],
              available: dict[str, int], budget: float | None,
              search: SearchResult | None = None, homogeneous: list | None = None,
              exact=None, timings: dict[str, float] | None = None,
              operating=None, slo_exempt=None) -> dict[str, Any]:
    """Assemble the schema; every figure is read off the solver result and the
    full-resolution evaluation, nothing recomputed here.  ``slo_exempt``: the planning
    context's :class:`planner.context.feasibility.SloExemption` (or its ``to_dict()``),
    the input lengths no island can serve within the SLO that the plan serves
    best-effort; written as ``summary.slo_exempt`` when there are any."""
    layout: Layout = tuple((a.gpu, a.size) for a in result.islands)
    used = layout_counts(tuple(i for i, a in zip(layout, result.islands, strict=True)
                               if a.role != "idle"))
    cost = sum(prices[g] * n for g, n in used.items())  # idle islands are not bought
    # Headline: the sustained rate of the solved assignment, the basis on which the
    # search, the exact optimum and the homogeneous baselines are all computed.  Range
    # rates are the harmonic means over each range's own lengths (planner.context.evaluate), so
    # this is also the assignment's capacity at full length resolution (the evaluator's
    # pooled figure) -- one number.  Seed 002's §5.2.2 re-evaluation of midpoint ranges
    # is a different quantity and is kept only in thesis mode.
    rps = rps_model = float(result.R_sustained)
    thesis = bool(request.get("thesis"))
    frac_out = (evaluation.decode_tokens_per_s / evaluation.R_decode
                if evaluation.R_decode > 0 else 0.0)
    out_tps = rps * frac_out
    in_tps = (rps * evaluation.prefill_tokens_per_s / evaluation.R_prefill
              if evaluation.R_prefill > 0 else 0.0)
    per_hour_m = 1e6 / 3600.0
    best_h = None
    if homogeneous:
        ok = [b for b in homogeneous if b.value > 0]
        if ok:
            b = max(ok, key=lambda b: b.value)
            best_h = {"label": b.label, "requests_per_s": b.value,
                      "cost_per_hour": b.cost_per_hour, "ratio": rps_model / b.value}
    exact_d = None
    bo_gap = cost_gap = None
    if exact is not None:
        exact_d = {"requests_per_s": exact.value, "cost_per_hour": exact.cost_per_hour,
                   "bound": _num(exact.bound), "gap": _num(exact.gap),
                   "status": exact.status}
        if exact.value > 0:
            bo_gap = (exact.value - rps_model) / exact.value
        if request.get("target_rps") is not None and exact.cost_per_hour > 0:
            # target mode: the search minimised $/h at the rate; compare costs
            cost_gap = (cost - exact.cost_per_hour) / exact.cost_per_hour
    S = len(evaluation.pmf)
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "hetero-planner", "version": planner.__version__},
        "created_utc": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "request": request,
        "summary": {
            "status": result.status,
            "gpus_used": used, "gpus_available": dict(available),
            "cost_per_hour": cost, "budget": budget,
            "requests_per_s": rps,
            **({"thesis_evaluated_requests_per_s": float(evaluation.R_sustained)}
               if thesis else {}),
            "prefill_rps": float(result.R_prefill), "decode_rps": float(result.R_decode),
            "input_tokens_per_s": in_tps, "output_tokens_per_s": out_tps,
            "tokens_per_s": in_tps + out_tps,
            "usd_per_million_output_tokens": cost / (out_tps / per_hour_m) if out_tps else None,
            "usd_per_million_tokens": (cost / ((in_tps + out_tps) / per_hour_m)
                                       if in_tps + out_tps else None),
            "d_total": float(evaluation.D_total),
            "rho_max": 1.0 / rps if rps > 0 else None,
            "best_homogeneous": best_h,
            "exact": exact_d,
            "bo_gap": bo_gap,
            **({"cost_gap": cost_gap} if cost_gap is not None else {}),
            **({"slo_exempt": dict(slo_exempt.to_dict() if hasattr(slo_exempt, "to_dict")
                                   else slo_exempt)}
               if slo_exempt is not None else {}),
            **_latency(operating),
        },
        "islands": [_island(a, None if operating is None else operating.islands[i],
                            None if operating is None or not operating.locations
                            else operating.locations[i],
                            None if operating is None or not operating.range_flows
                            else operating.range_flows[i],
                            None if operating is None or not operating.island_servers
                            else operating.island_servers[i])
                    for i, a in enumerate(result.islands)],
        **({"servers": [s.to_dict() for s in operating.servers]}
           if operating is not None and operating.servers else {}),
        "ranges": {"start": list(result.range_start), "end": list(result.range_end),
                   "mid": [float(m) for m in ranges_mid], "prob": list(result.range_prob)},
        "per_range": {"prefill_rps": list(result.prefill_rps),
                      "decode_rps": list(result.decode_rps)},
        "per_length": {"length": list(range(S)),
                       "pmf": np.round(evaluation.pmf, 12).tolist(),
                       "model_prefill": np.round(evaluation.model_prefill, 6).tolist(),
                       "eval_prefill": np.round(evaluation.eval_prefill, 6).tolist(),
                       "model_decode": np.round(evaluation.model_decode, 6).tolist(),
                       "eval_decode": np.round(evaluation.eval_decode, 6).tolist()},
        "search": ({"name": "fixed layout", "best_layout": [list(i) for i in layout],
                    "history": [], "settings": {}, "evaluations": 0}
                   if search is None else search.to_json()),
        "baselines": {"homogeneous": [_baseline_dict(b) for b in homogeneous or []],
                      "exact": None if exact is None else _baseline_dict(exact)},
        "timings_s": dict(timings or {}),
    }
