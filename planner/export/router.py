"""The router configuration of a plan: which islands serve each input-length range.

A request whose prompt has ``n`` tokens belongs to range ``j`` with ``start_j <= n <
start_{j+1}`` (below the first range: range 0; at or past the last end: the last range).
It goes to one of the range's **prefill** islands (prefill and colocated ``both``
islands) with the range's prefill weights, and -- prefilled on a ``prefill`` island --
its KV cache then goes to one of the range's **decode** islands with the decode weights,
chosen independently of the prefill island; a colocated island decodes what it
prefilled.  So the prefill -> decode pair ``(p, k)`` carries the share ``w_p w_k`` of
the range (the ``kv_routes``), which is the plan's KV route flow
(:func:`planner.context.placement.pair_flows`) normalised.

The weights are the ones the simulator's plan-following router uses on the same plan
(:class:`planner.sim.routers.range_router.RangeRouter`, built here on the plan's own
cluster): each island's flow of the range (``islands[].range_rps``), or its share of
time times its rate when the plan has no flows; a range no island has a share of is
split by capacity (``from_plan: false``).  Weights are normalised to sum to 1 per range
and phase.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import numpy as np

from planner.export.deployment import IslandLaunch, LaunchPlan

SCHEMA = "hetero-planner router config 1"


def range_router_weights(launch: LaunchPlan
                         ) -> tuple[list[int], np.ndarray, list[int], np.ndarray | None]:
    """(plan indices of the prefill-side islands, their (P, J) weights, plan indices of
    the decode islands, their (K, J) weights or None) as the simulator's range router
    computes them on the plan's deployment."""
    from planner.sim.cluster import cluster_from_deployment
    from planner.sim.routers.range_router import RangeRouter
    from planner.sim.run import plan_network

    plan = launch.plan
    cluster = cluster_from_deployment(launch.deployment, network=plan_network(plan))
    router = RangeRouter()
    # reset reads only the islands and range edges, which the cluster itself has (the
    # engine's live view adds queues the weights do not depend on)
    router.reset(cast(Any, cluster), np.random.default_rng(0))
    serving = [i for i, isl in enumerate(plan["islands"]) if isl["role"] != "idle"]
    front = [serving[x.index] for x in cluster.islands if x.role in ("prefill", "both")]
    back = [serving[x.index] for x in cluster.islands if x.role == "decode"]
    pre, dec = router.weights
    return front, np.asarray(pre, float), back, None if dec is None else np.asarray(dec, float)


def _normalised(w: np.ndarray) -> np.ndarray:
    total = w.sum(axis=0, keepdims=True)
    return np.divide(w, total, out=np.zeros_like(w), where=total > 0)


def router_config(dep: LaunchPlan, endpoint: Callable[[IslandLaunch], str]) -> dict[str, Any]:
    """The router.json dict of ``dep`` (module docstring); ``endpoint(island)`` is the
    URL a router reaches the island at."""
    plan = dep.plan
    front, pre, back, dec = range_router_weights(dep)
    by_index = {i.index: i for i in dep.islands}
    ranges = plan["ranges"]
    J = len(ranges["start"])
    pre_n = _normalised(pre)
    dec_n = _normalised(dec) if dec is not None else None
    shares = np.array([[float(x or 0) for x in plan["islands"][i]["shares"]]
                       for i in front]).reshape(len(front), J)
    out_ranges = []
    for j in range(J):
        entry: dict[str, Any] = {
            "range": j, "start": ranges["start"][j], "end": ranges["end"][j],
            "prob": ranges["prob"][j],
            "from_plan": bool((shares[:, j] > 0).any()),
            "prefill": [{"island": i, "weight": round(float(pre_n[p, j]), 12)}
                        for p, i in enumerate(front) if pre_n[p, j] > 0],
            "decode": [], "kv_routes": []}
        if dec_n is not None:
            entry["decode"] = [{"island": k, "weight": round(float(dec_n[d, j]), 12)}
                               for d, k in enumerate(back) if dec_n[d, j] > 0]
            disagg = [(p, i) for p, i in enumerate(front) if by_index[i].role == "prefill"]
            mass = sum(pre_n[p, j] for p, _ in disagg)
            if mass > 0:
                entry["kv_routes"] = [
                    {"prefill": i, "decode": k,
                     "weight": round(float(pre_n[p, j] * dec_n[d, j] / mass), 12)}
                    for p, i in disagg if pre_n[p, j] > 0
                    for d, k in enumerate(back) if dec_n[d, j] > 0]
        out_ranges.append(entry)
    request = plan["request"]
    islands = []
    for isl in dep.islands:
        item: dict[str, Any] = {"island": isl.index, "name": isl.name, "role": isl.role,
                                "gpu": isl.gpu.name, "gpus": isl.size,
                                "config": isl.config, "endpoint": endpoint(isl)}
        if isl.role == "prefill" and dep.engine.name == "sglang" and dep.disaggregated:
            item["bootstrap_port"] = isl.port_of(1)
        islands.append(item)
    return {
        "schema": SCHEMA,
        "plan": {"file": dep.source, "model": request.get("model"),
                 "engine": dep.engine.label, "workload": request.get("workload"),
                 "requests_per_s": plan["summary"].get("requests_per_s")},
        "routing": ("range j holds prompts of start <= tokens < next range's start (below "
                    "the first: range 0; past the last end: the last range); pick a "
                    "prefill island by the range's prefill weights; a prefill-role island "
                    "hands the KV cache to a decode island picked by the decode weights "
                    "(kv_routes: the resulting pairs); a 'both' island decodes what it "
                    "prefilled.  Weights are the simulator's range router's (planner "
                    "simulate --router range) on this plan."),
        "islands": islands,
        "idle_islands": list(dep.idle),
        "ranges": out_ranges,
    }


__all__ = ["SCHEMA", "range_router_weights", "router_config"]
