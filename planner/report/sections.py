"""The report's display tables as (header, rows) of strings, for every renderer.

``report.md``, ``report.html`` and the terminal summary show the same tables; each
renderer only decides how a table looks, never what is in it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from planner.report.facts import (
    DASH,
    fmt,
    gpu_lines,
    layout_label,
    money,
    num,
    pct,
    prices,
    ranges_served,
)

Table = tuple[list[str], list[list[str]]]


def gpus_table(plan: Mapping[str, Any]) -> Table:
    rows = []
    for ln in gpu_lines(plan):
        avail = DASH if ln.available is None else str(ln.available)
        rows.append([ln.gpu, str(ln.used), avail, money(ln.price), money(ln.cost)])
    total = sum(ln.cost for ln in gpu_lines(plan))
    rows.append(["total", str(sum(ln.used for ln in gpu_lines(plan))), "", "", money(total)])
    return ["GPU", "used", "available", "price per GPU", "cost"], rows


def islands_table(plan: Mapping[str, Any]) -> Table:
    p = prices(plan)
    rows = []
    for k, isl in enumerate(plan["islands"]):
        idle = isl["role"] == "idle"
        rows.append([str(k), str(isl["gpu"]), str(isl["size"]), str(isl["role"]),
                     DASH if idle else str(isl["config"] or DASH),
                     DASH if idle else str(isl["batch"]),
                     money(p.get(str(isl["gpu"]), math.nan) * num(isl["size"])),
                     ranges_served(isl, plan)])
    return (["#", "GPU", "GPUs", "role", "parallelism (tp-dp-ep)", "batch", "cost",
             "input lengths served"], rows)


def throughput_table(plan: Mapping[str, Any]) -> Table:
    s = plan["summary"]
    rows = [["requests/s (sustained, workload mix)", fmt(s["requests_per_s"])],
            ["  re-evaluated per input length (§5.2.2)",
             fmt(s.get("evaluated_requests_per_s"))],
            ["prefill capacity, requests/s", fmt(s.get("prefill_rps"))],
            ["decode capacity, requests/s", fmt(s.get("decode_rps"))],
            ["input tokens/s", fmt(s.get("input_tokens_per_s"))],
            ["output tokens/s", fmt(s.get("output_tokens_per_s"))],
            ["tokens/s", fmt(s.get("tokens_per_s"))],
            ["$ per million tokens", money(s.get("usd_per_million_tokens"), "")],
            ["$ per million output tokens", money(s.get("usd_per_million_output_tokens"), "")],
            ["deviation D_total (thesis §4.8.1)", fmt(s.get("d_total"))],
            ["inner solver status", str(s.get("status") or DASH)]]
    return ["figure", "value"], rows


def baselines_table(plan: Mapping[str, Any]) -> Table:
    s = plan["summary"]
    mine = num(s["requests_per_s"])
    rows = [["this plan", layout_label(plan["search"].get("best_layout")), fmt(mine),
             money(s["cost_per_hour"]), str(s.get("status") or DASH), "1"]]
    b = plan["baselines"]
    entries = list(b.get("homogeneous") or [])
    if b.get("exact"):
        entries.append(b["exact"])
    for e in entries:
        v = num(e.get("requests_per_s"))
        status = str(e.get("status") or DASH)
        gap = num(e.get("gap"))
        if math.isfinite(gap) and gap > 0:
            status += f" (MIP gap {pct(gap)})"
        rows.append([str(e.get("label") or DASH), layout_label(e.get("layout")), fmt(v),
                     money(e.get("cost_per_hour")), status,
                     fmt(mine / v) if v > 0 else DASH])
    return (["plan", "islands", "requests/s", "cost", "status", "this plan ÷ it"], rows)


def _value(x: Any) -> str:
    if x is None:
        return DASH
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        return f"{x:.6g}"
    if isinstance(x, Mapping | list):
        return json.dumps(x, sort_keys=True)
    return str(x)


def search_table(plan: Mapping[str, Any]) -> Table:
    se = plan["search"]
    req = plan["request"]
    rows = [["search", str(se.get("name") or req.get("search") or DASH)],
            ["inner solver", str(req.get("inner") or DASH)],
            ["seed", _value(req.get("seed"))],
            ["proposals", str(len(se["history"]))],
            ["evaluations (not cached)", _value(se.get("evaluations"))],
            ["cache hits", _value(se.get("cache_hits"))],
            ["search wall time", f"{fmt(se.get('wall_time'))} s"],
            ["resumed from checkpoint", _value(se.get("resumed"))],
            ["best layout", layout_label(se.get("best_layout"))]]
    for k, v in sorted((se.get("settings") or {}).items()):
        rows.append([f"setting: {k}", _value(v)])
    for k, v in (plan.get("timings_s") or {}).items():
        rows.append([f"time: {k}", f"{fmt(v)} s"])
    return ["item", "value"], rows


def request_table(plan: Mapping[str, Any]) -> Table:
    req = plan["request"]
    slo = req.get("slo") or {}
    tool = plan.get("tool") or {}
    rows = [["model", _value(req.get("model"))],
            ["workload", _value(req.get("workload"))],
            ["budget", money(req.get("budget")) if req.get("budget") is not None else "none"],
            ["target rate", f"{fmt(req.get('target_rps'))} requests/s"
             if req.get("target_rps") is not None else "none (maximise throughput)"],
            ["length ranges J", _value(req.get("ranges"))],
            ["TTFT ceiling", f"{fmt(slo.get('ttft_ms'))} ms" if slo.get("ttft_ms") else "none"],
            ["TPOT ceiling", f"{fmt(slo.get('tpot_ms'))} ms" if slo.get("tpot_ms") else "none"],
            ["search options", _value(req.get("search_options") or {})],
            ["created (UTC)", _value(plan.get("created_utc"))],
            ["tool", f"{tool.get('name', DASH)} {tool.get('version', '')}".strip()]]
    return ["input", "value"], rows


def prices_table(plan: Mapping[str, Any]) -> Table:
    """Inventory with each price's provenance: the entry's own ``price_source`` if
    plan.json carries one, else the inventory file's ``source``."""
    inv = plan["request"]["inventory"]
    default = str(inv.get("source") or "") or f"inventory '{inv.get('name', DASH)}'"
    rows = []
    for g in inv["gpus"]:
        src = str(g.get("price_source") or default)
        if g.get("price_date"):
            src += f" ({g['price_date']})"
        if g.get("datasheet"):
            src += "; custom datasheet"
        rows.append([str(g.get("type", DASH)), str(g.get("count", DASH)),
                     money(g.get("price_per_hour")), str(g.get("min_island", DASH)), src])
    return ["GPU", "available", "price per GPU", "min island", "price source"], rows
