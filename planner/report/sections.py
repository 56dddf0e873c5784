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
    deployment,
    fmt,
    gpu_lines,
    layout_label,
    money,
    num,
    parallel_text,
    pct,
    prices,
    ranges_served,
)

Table = tuple[list[str], list[list[str]]]

LATENCY_NOTE = ("Planned: the perf model's pass and step times over the requests each "
                "island serves at the plan's capacity (TTFT without queueing). Simulated: "
                "the closed loop's simulation at the capacity itself, queueing and KV "
                "transfers included (the first token is streamed by the decode island).")
NETWORK_NOTE = ("Prompt KV caches moved from prefill to decode islands at the plan's "
                "capacity, by the tier they cross once the islands are placed (islands "
                "serving the same lengths sit together).")

PLACEMENT_NOTE = ("Each server holds one GPU type; an island takes whole servers or a "
                  "power-of-two share of one server. Server numbers follow the order of the "
                  "input lengths the islands serve, so prefill and decode islands that "
                  "exchange KV caches sit on neighbouring servers.")


def gpus_table(plan: Mapping[str, Any]) -> Table:
    rows = []
    for ln in gpu_lines(plan):
        avail = DASH if ln.available is None else str(ln.available)
        rows.append([ln.gpu, str(ln.used), avail, money(ln.price), money(ln.cost)])
    total = sum(ln.cost for ln in gpu_lines(plan))
    rows.append(["total", str(sum(ln.used for ln in gpu_lines(plan))), "", "", money(total)])
    return ["GPU", "used", "available", "price per GPU", "cost"], rows


def islands_table(plan: Mapping[str, Any]) -> Table:
    """Every island: what it is, what it serves at the plan's capacity and how fast
    (prefill islands: the pass that gives the first token; decode: time per token)."""
    p = prices(plan)
    rows = []
    for isl in deployment(plan).every:
        idle = isl.role == "idle"
        latency = DASH
        if isl.ttft_ms is not None:
            latency = f"TTFT {fmt(isl.ttft_ms)} ms"
        elif isl.tpot_ms is not None:
            latency = f"TPOT {fmt(isl.tpot_ms)} ms"
        rows.append([str(isl.index), isl.gpu.name, str(isl.size),
                     DASH if not isl.servers else ", ".join(str(x) for x in isl.servers),
                     isl.role,
                     DASH if idle else parallel_text(isl.config, plan),
                     DASH if idle else str(isl.batch),
                     fmt(isl.requests_per_s), latency,
                     money(p.get(isl.gpu.name, math.nan) * isl.size),
                     ranges_served(isl, plan)])
    return (["#", "GPU", "GPUs", "servers", "role", "parallelism (tp-dp-ep)", "batch",
             "requests/s",
             "latency", "cost", "input lengths served"], rows)


def placement_table(plan: Mapping[str, Any]) -> Table | None:
    """Server -> the islands on it (server granularity; None otherwise): what a
    deployment engineer racks and launches, one GPU type per server."""
    dep = deployment(plan)
    if not dep.servers:
        return None
    every = {isl.index: isl for isl in dep.every}
    rows = []
    for srv in dep.servers:
        islands = ", ".join(f"#{i} ({every[i].role}, {every[i].size} GPUs)"
                            for i in srv.islands)
        kind = f"{srv.gpus} × {srv.gpu}" + (" (partial server)" if srv.partial else "")
        rows.append([str(srv.index), kind, str(srv.used), islands])
    return ["server", "GPUs", "used", "islands on it"], rows


def throughput_table(plan: Mapping[str, Any]) -> Table:
    s = plan["summary"]
    loop = s.get("closed_loop") or {}
    rows = [["requests/s (the plan's capacity)", fmt(s["requests_per_s"])]]
    if loop:
        analytic = num(loop.get("analytic_requests_per_s"))
        rows += [["  perf model's capacity (analytic)", fmt(analytic)],
                 ["  capacity ÷ analytic", fmt(num(s["requests_per_s"]) / analytic)
                  if analytic > 0 else DASH],
                 ["  saturation throughput (completed when overloaded; SLO not held)",
                  fmt(loop.get("saturation_requests_per_s"))],
                 ["  simulated at the capacity: completed ÷ arrived",
                  pct(loop.get("sustained_fraction"))],
                 [f"  SLO attainment at the capacity, '{loop.get('router', 'range')}' "
                  "router (lowest seed)", pct(loop.get("slo_attainment"))],
                 ["  seeds simulated (the first is the search's)",
                  ", ".join(str(x) for x in loop.get("seeds") or []) or DASH]]
        if loop.get("reference_router_attainment") is not None:
            rows.append([f"  SLO attainment at the capacity, "
                         f"'{loop.get('reference_router')}' router",
                         pct(loop.get("reference_router_attainment"))])
    if s.get("thesis_evaluated_requests_per_s") is not None:
        rows.append(["  every length evaluated on its own (seed 002 §5.2.2)",
                     fmt(s["thesis_evaluated_requests_per_s"])])
    rows += [["prefill capacity, requests/s", fmt(s.get("prefill_rps"))],
             ["decode capacity, requests/s", fmt(s.get("decode_rps"))],
             ["input tokens/s", fmt(s.get("input_tokens_per_s"))],
             ["output tokens/s", fmt(s.get("output_tokens_per_s"))],
             ["tokens/s", fmt(s.get("tokens_per_s"))],
             ["$ per million tokens", money(s.get("usd_per_million_tokens"), "")],
             ["$ per million output tokens",
              money(s.get("usd_per_million_output_tokens"), "")],
             ["thesis MILP deviation D_total (§4.8.1; 0: the mix is matched)",
              fmt(s.get("d_total"))],
             ["inner solver status", str(s.get("status") or DASH)]]
    return ["figure", "value"], rows


def latency_table(plan: Mapping[str, Any]) -> Table | None:
    """Predicted latency at the planned load (perf model), the SLO, and what the
    closed loop simulated at the capacity itself; None if not known."""
    s = plan["summary"]
    lat = s.get("latency_ms")
    if not lat:
        return None
    slo = plan["request"].get("slo") or {}
    sim = (s.get("closed_loop") or {}).get("latency_at_headline_ms")
    rows = []
    for name, key, ceil in (("TTFT", "ttft", slo.get("ttft_ms")),
                            ("TPOT", "tpot", slo.get("tpot_ms"))):
        rows.append([name, fmt(lat.get(f"{key}_p50")), fmt(lat.get(f"{key}_p90")),
                     fmt(sim.get(f"{key}_p50_ms")) if sim else DASH,
                     fmt(sim.get(f"{key}_p90_ms")) if sim else DASH,
                     fmt(ceil) if ceil else "none"])
    return (["latency, ms", "p50 planned", "p90 planned", "p50 simulated", "p90 simulated",
             "SLO ceiling"], rows)


def network_table(plan: Mapping[str, Any]) -> Table | None:
    """KV bytes/s each network tier carries once the islands are placed."""
    net = plan["summary"].get("network")
    if not net:
        return None
    rows = [[str(name), fmt(num(v.get("bytes_per_s")) / 1e9), pct(v.get("peak_utilisation"))]
            for name, v in net.items()]
    return ["tier", "KV GB/s", "busiest island's share of the tier"], rows


def baselines_table(plan: Mapping[str, Any]) -> Table:
    """This plan, each single-type alternative and the exact optimum.  Alternatives that
    went through the closed loop show the same promise as this plan (requests/s at the
    SLO in simulation); the exact optimum is the perf model's figure, and says so."""
    s = plan["summary"]
    mine = num(s["requests_per_s"])
    target = num(plan["request"].get("target_rps")) > 0
    paid = [[isl.gpu.name, isl.size] for isl in deployment(plan).islands]
    cost = num(s["cost_per_hour"])

    def per_dollar(rate: float, dollars: float) -> str:
        return fmt(rate / dollars) if rate > 0 and dollars > 0 else DASH

    def versus(rate: float, dollars: float) -> str:
        if target:
            return fmt(cost / dollars) if rate > 0 and dollars > 0 else DASH
        return fmt(mine / rate) if rate > 0 else DASH

    status = "holds the SLO" if s.get("closed_loop") else str(s.get("status") or DASH)
    rows = [["this plan", layout_label(paid), fmt(mine), money(cost), per_dollar(mine, cost),
             status, "1"]]
    alts = s.get("alternatives")
    if alts is not None:
        for a in alts:
            rate, dollars = num(a.get("requests_per_s")), num(a.get("cost_per_hour"))
            note = str(a.get("status") or DASH)
            if a.get("why"):
                note += f": {a['why']}"
            if a.get("capped_by_availability"):
                note += f" (all {a.get('available')} available)"
            rows.append([str(a.get("label") or DASH), layout_label(a.get("layout")),
                         fmt(rate), money(dollars), per_dollar(rate, dollars), note,
                         versus(rate, dollars)])
    entries = [] if alts is not None else list(plan["baselines"].get("homogeneous") or [])
    if plan["baselines"].get("exact"):
        entries.append(plan["baselines"]["exact"])
    for e in entries:
        v = num(e.get("requests_per_s"))
        st = str(e.get("status") or DASH)
        gap = num(e.get("gap"))
        if math.isfinite(gap) and gap > 0:
            st += f" (proven within {pct(gap)})"
        if not v > 0:  # the solver's status is about the MILP, not a plan to buy
            st = f"serves nothing (solver: {st})"
        label = str(e.get("label") or DASH)
        if s.get("closed_loop"):
            label += " (perf model, not simulated)"
        dollars = num(e.get("cost_per_hour"))
        rows.append([label, layout_label(e.get("layout")), fmt(v),
                     money(dollars if v > 0 else 0.0), per_dollar(v, dollars), st,
                     versus(v, dollars)])
    head = "this plan ÷ it" if not target else "this plan's cost ÷ its"
    return (["plan", "islands", "requests/s", "cost", "requests/s per $/h", "status", head],
            rows)


ALTERNATIVES_NOTE = ("Each single GPU type planned alone -- up to the same budget within "
                     "what is available, or for the same target -- and simulated the same "
                     "way as this plan: requests/s is the rate at which the SLO holds. "
                     "The exact optimum is the performance model's figure.")


def target_table(plan: Mapping[str, Any]) -> Table | None:
    """Target mode: each plan the closed loop tried, what it was planned for, its cost
    and the rate at which its SLO held (None outside target mode)."""
    rounds = ((plan["summary"].get("closed_loop") or {}).get("target_rounds")) or []
    if not rounds:
        return None
    rows = [[str(k + 1), fmt(r.get("planned_for_rps")), money(r.get("cost_per_hour")),
             fmt(r.get("headline_rps")), pct(r.get("attainment_at_target")),
             "yes" if r.get("met") else "no"] for k, r in enumerate(rounds)]
    return (["plan", "planned for, requests/s", "cost", "SLO holds up to, requests/s",
             "SLO attainment at the target", "target met"], rows)


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


_ORIGIN = {"catalog": "catalog", "inventory": "inventory",
           "datasheet": "inventory (GPU from its datasheet)"}


def prices_table(plan: Mapping[str, Any]) -> Table:
    """Inventory with each price's provenance: where the price comes from (the GPU
    catalog, the inventory file, or the inventory for a GPU it describes by its own
    datasheet) and the source note -- the catalog's for catalog prices, else the
    entry's own or the inventory file's ``source``."""
    inv = plan["request"]["inventory"]
    default = str(inv.get("source") or "") or f"inventory '{inv.get('name', DASH)}'"
    rows = []
    for g in inv["gpus"]:
        origin = str(g.get("price_origin") or ("datasheet" if g.get("datasheet")
                                               else "inventory"))
        src = str(g.get("price_source") or (DASH if origin == "catalog" else default))
        if g.get("price_date"):
            src += f" ({g['price_date']})"
        rows.append([str(g.get("type", DASH)), str(g.get("count", DASH)),
                     money(g.get("price_per_hour")), str(g.get("min_island", DASH)),
                     _ORIGIN.get(origin, origin), src])
    return ["GPU", "available", "price per GPU", "min island", "price from", "source"], rows
