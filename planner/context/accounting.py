"""Every dollar accounted for: the consistency a plan dict must have before anyone reads
a figure off it.

One plan states its GPUs and its $/h in several places -- the summary, the GPU table
(``summary.gpus_used``), the island table (``islands``), the plots (drawn from the
islands), and every baseline.  :func:`accounting_errors` checks that they agree:

* no island is idle (a plan does not buy what serves nothing: ``planner.plan`` repairs
  such layouts);
* ``summary.gpus_used`` is the islands' GPUs per type, within what is available;
* ``summary.cost_per_hour`` is the islands' GPUs at the inventory's prices, and within
  the budget;
* each baseline's cost is its own layout at the same prices;
* the islands' requests/s (prefill and decode each, colocated islands counting in
  both) add up to the plan's capacity;
* at server granularity (planner.fleet.servers): no island straddles part of a server, no
  server holds two GPU types, and no type uses more servers than the inventory has.

Pure; the test suite runs it on every plan it makes (tests/conftest.py).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from planner.fleet.servers import ServerShape, default_gpus_per_node, server_errors

REL = 1e-6


def _close(a: float, b: float, rel: float = REL) -> bool:
    return abs(a - b) <= rel * max(1.0, abs(a), abs(b))


def accounting_errors(plan: Mapping[str, Any]) -> list[str]:
    """What disagrees in ``plan`` (a plan.json dict); empty when everything agrees."""
    errors: list[str] = []
    s = plan["summary"]
    inv = plan["request"]["inventory"]
    prices = {str(g["type"]): float(g["price_per_hour"]) for g in inv.get("gpus") or []}
    islands = plan["islands"]
    counts: dict[str, int] = {}
    for k, isl in enumerate(islands):
        if isl["role"] == "idle":
            errors.append(f"islands[{k}] ({isl['gpu']} x {isl['size']}) is idle but listed")
            continue
        counts[str(isl["gpu"])] = counts.get(str(isl["gpu"]), 0) + int(isl["size"])
    used = {str(k): int(v) for k, v in (s.get("gpus_used") or {}).items() if v}
    if used != counts:
        errors.append(f"summary.gpus_used {used} != the islands' GPUs {counts}")
    for gpu, n in counts.items():
        avail = (s.get("gpus_available") or {}).get(gpu)
        if avail is not None and n > int(avail):
            errors.append(f"{n} x {gpu} used but only {avail} available")
    cost = sum(prices.get(g, math.nan) * n for g, n in counts.items())
    if not _close(float(s["cost_per_hour"]), cost):
        errors.append(f"summary.cost_per_hour {s['cost_per_hour']} != the islands' "
                      f"${cost:,.2f}/h")
    budget = s.get("budget")
    if budget is not None and cost > float(budget) * (1 + REL):
        errors.append(f"cost ${cost:,.2f}/h exceeds the budget ${float(budget):,.2f}/h")
    base = plan.get("baselines") or {}
    for b in [*(base.get("homogeneous") or []), *([base["exact"]] if base.get("exact") else [])]:
        own = sum(prices.get(str(g), math.nan) * int(n) for g, n in b.get("layout") or [])
        if not _close(float(b.get("cost_per_hour") or 0.0), own):
            errors.append(f"baseline {b.get('label')!r}: cost {b.get('cost_per_hour')} != its "
                          f"layout's ${own:,.2f}/h")
    errors += _server_errors(plan)
    rps = float(s["requests_per_s"])
    for role in ("prefill", "decode"):  # colocated islands serve both phases
        flows = [float(isl["requests_per_s"]) for isl in islands
                 if isl["role"] in (role, "both") and isl.get("requests_per_s") is not None]
        if flows and not _close(sum(flows), rps, 1e-4):
            errors.append(f"the {role} (and colocated) islands serve {sum(flows):,.3f} "
                          f"requests/s, the plan states {rps:,.3f}")
    return errors


def _server_errors(plan: Mapping[str, Any]) -> list[str]:
    """The server rules, for a plan made at server granularity."""
    req = plan["request"]
    if req.get("thesis") or req.get("island_granularity", "gpu") != "server":
        return []
    shapes = {}
    for g in req["inventory"].get("gpus") or []:
        node = int(g.get("gpus_per_node") or 0)
        if node <= 0:
            from perfmodel import get_gpu
            node = default_gpus_per_node(get_gpu(str(g["type"])))[0]
        shapes[str(g["type"])] = ServerShape.of(int(g["count"]), node)
    live = [isl for isl in plan["islands"] if isl["role"] != "idle"]
    errors = server_errors(live, plan.get("servers") or [], shapes)
    if plan.get("servers") is not None:
        missing = [k for k, isl in enumerate(live) if not isl.get("servers")]
        if missing:
            errors.append(f"islands {missing} are on no server")
    return errors


__all__ = ["accounting_errors"]
