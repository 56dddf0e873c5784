"""A solved plan's operating point: what every island serves, at what batch, latency
and network load, read off the inner solution at full length resolution.

The inner solution gives island i the share x_ij of its time on range j at the rate
b_ij (planner.context.evaluate: the range's own length mix): the *capacity* ``x_ij b_ij`` it
gives range j.  At the plan's capacity C range j brings ``C P_j`` requests/s, split over
its islands in proportion to those capacities: the *flow*, spread over the range's
lengths as the workload is.  From these:

* **decode batch** (Little's law): an island running its ranges full, lambda(s)
  requests/s of length s, each generating d(s) tokens at TPOT(s), holds
  ``sum_s lambda(s) d(s) TPOT(s)`` sequences -- the batch its rates were computed at,
  over the lengths it really serves (not the largest batch of any length, which
  overfilled the KV cache in simulation).  The simulator admits up to it;
* **latency**: the flow-weighted TTFT (prefill pass) and TPOT (decode step per token)
  of every island, and their percentiles over the fleet's requests;
* **network**: prompt KV caches move from prefill to decode islands; islands are placed
  by the ranges they serve (``planner.context.placement``), and the bytes/s each tier carries
  follow.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, cast

import numpy as np

from planner.context.evaluate import LayoutEvaluator
from planner.context.placement import TierLoad, place_islands, place_on_servers, tier_load
from planner.fleet.network import DEFAULT_NETWORK, Location
from planner.fleet.servers import Server
from planner.inner.result import InnerResult

if TYPE_CHECKING:
    from perfmodel.island import PhaseTable


@dataclass(frozen=True)
class IslandPoint:
    index: int
    role: str
    requests_per_s: float  # at the plan's capacity
    batch: int  # sequences per attention group (decode); prompts per pass (prefill)
    ttft_ms: float  # prefill (and colocated) islands: flow-weighted time to first token
    tpot_ms: float  # decode (and colocated) islands: flow-weighted time per token
    #: tokens per pass: prefill islands' prompt budget, colocated islands' chunked-prefill
    #: budget (:func:`colocated_token_budget`); 0: the engine's
    token_budget: int = 0


@dataclass(frozen=True)
class OperatingPoint:
    islands: tuple[IslandPoint, ...]
    ttft_ms_p50: float
    ttft_ms_p90: float
    tpot_ms_p50: float
    tpot_ms_p90: float
    kv_bytes_per_s: float  # prompt KV moved from prefill to decode islands
    locations: tuple[Location | None, ...] = ()  # per island; None: idle / no network
    tiers: TierLoad | None = None
    range_flows: tuple[tuple[float, ...], ...] = ()  # per island, requests/s per range
    #: server granularity: the servers the live islands use, and each island's servers
    servers: tuple[Server, ...] = ()
    island_servers: tuple[tuple[int, ...], ...] = ()


def _capacity(ev: LayoutEvaluator, result: InnerResult, role: str) -> np.ndarray:
    """(I, J) capacity ``x_ij b_ij`` each island of ``role`` gives each range."""
    shares = result.shares(role)
    out = np.zeros_like(shares)
    for i, isl in enumerate(result.islands):
        if isl.role != role:
            continue
        if role == "both":
            b = ev.both_range_table(isl.gpu, isl.size)
        else:
            b = ev.range_tables(isl.gpu, isl.size)[0 if role == "prefill" else 1]
        out[i] = shares[i] * b
    return out


def role_flows(ev: LayoutEvaluator, result: InnerResult, demand: bool = True
               ) -> dict[str, np.ndarray]:
    """(I, J) requests/s of each range every island serves at the plan's capacity, per
    role ("prefill", "decode", "both").

    ``demand``: the flow the workload sends.  Range j brings ``C P_j``; the router splits
    it between the range's two paths -- prefill then decode islands, whose capacity is
    the smaller of the two phases' (what one prefills another must decode), and the
    colocated islands -- in proportion to each path's capacity, then over the islands of
    each phase by their capacity.  (Splitting by prefill capacity alone sent more to a
    prefill island than the decode islands behind it could take when the inner solution
    had colocated capacity cover the decode phase.)  Otherwise the capacity itself
    (``x_ij b_ij``), which exceeds the flow where a role has slack."""
    cap = {role: _capacity(ev, result, role) for role in ("prefill", "decode", "both")}
    if not demand:
        return cap
    flow = float(result.R_sustained) * _range_mass(ev)
    pre, dec, both = (cap[r].sum(axis=0) for r in ("prefill", "decode", "both"))
    path = np.minimum(pre, dec)
    front = path + both
    to_path = np.divide(flow * path, front, out=np.zeros_like(front), where=front > 0)
    to_both = np.divide(flow * both, front, out=np.zeros_like(front), where=front > 0)

    def spread_over(c: np.ndarray, total: np.ndarray, amount: np.ndarray) -> np.ndarray:
        return c * np.divide(amount, total, out=np.zeros_like(total), where=total > 0)

    return {"prefill": spread_over(cap["prefill"], pre, to_path),
            "decode": spread_over(cap["decode"], dec, to_path),
            "both": spread_over(cap["both"], both, to_both)}


def range_flows(ev: LayoutEvaluator, result: InnerResult, phase: str,
                demand: bool = True) -> np.ndarray:
    """:func:`role_flows` of one role."""
    return role_flows(ev, result, demand)[phase]


def _range_mass(ev: LayoutEvaluator) -> np.ndarray:
    idx, pmf = ev._range_index, ev.context.workload.pmf
    return np.bincount(idx[idx >= 0], weights=pmf[idx >= 0], minlength=len(ev.context.ranges))


def spread(ev: LayoutEvaluator, given: np.ndarray) -> np.ndarray:
    """(I, J) range flows spread over each range's lengths as the workload is: (I, S)."""
    pmf = ev.context.workload.pmf
    idx = ev._range_index
    mass = _range_mass(ev)
    out = np.zeros((given.shape[0], len(pmf)))
    inside = idx >= 0
    w = np.zeros(len(pmf))
    w[inside] = pmf[inside] / np.where(mass[idx[inside]] > 0, mass[idx[inside]], 1.0)
    out[:, inside] = given[:, idx[inside]] * w[inside]
    return out


def served_per_length(ev: LayoutEvaluator, result: InnerResult, phase: str,
                      demand: bool = True) -> np.ndarray:
    """(I, S): :func:`range_flows` spread over each range's lengths."""
    return spread(ev, range_flows(ev, result, phase, demand))


def place(ev: LayoutEvaluator, result: InnerResult
          ) -> tuple[list[Location | None], TierLoad | None, list[Server],
                     list[tuple[int, ...]]]:
    """Locations of the islands that serve (None for idle ones), the KV load per tier
    (planner.context.placement; None without a network), and at server granularity the servers
    and each island's servers (``()`` for idle ones).  Colocated islands are placed too
    but move no KV."""
    net = ev.context.network
    n = len(result.islands)
    flows = role_flows(ev, result)
    total = flows["prefill"] + flows["decode"] + flows["both"]
    live = [i for i, a in enumerate(result.islands) if a.role != "idle"]
    shapes = ev.context.servers
    servers: list[Server] = []
    on: list[tuple[int, ...]] = [()] * n
    if shapes is not None:
        locs, servers, where_live = place_on_servers(
            [(result.islands[i].gpu, result.islands[i].size) for i in live], total[live],
            net or DEFAULT_NETWORK, dict(shapes))
        # server islands are numbered among the live ones: back to plan indices
        servers = [replace(s, islands=tuple(live[k] for k in s.islands)) for s in servers]
        for i, w in zip(live, where_live, strict=True):
            on[i] = w
    elif net is not None:
        locs = place_islands([result.islands[i].size for i in live], total[live], net)
    if net is None:
        return [None] * n, None, servers, on
    where: list[Location | None] = [None] * n
    for i, loc in zip(live, locs, strict=True):
        where[i] = loc
    pre = [i for i in live if result.islands[i].role == "prefill"]
    dec = [i for i in live if result.islands[i].role == "decode"]
    load = tier_load(flows["prefill"][pre], flows["decode"][dec], ev.kv_bytes_per_request(),
                     # prefill and decode islands are live, so placed (not None)
                     cast("list[Location]", [where[i] for i in pre]),
                     cast("list[Location]", [where[i] for i in dec]),
                     [result.islands[i].size for i in pre],
                     [result.islands[i].size for i in dec], net)
    return where, load, servers, on


def _weighted_quantile(values: np.ndarray, weights: np.ndarray, q: float) -> float:
    ok = (weights > 0) & np.isfinite(values)
    if not ok.any():
        return float("nan")
    v, w = values[ok], weights[ok]
    order = np.argsort(v)
    c = np.cumsum(w[order])
    return float(v[order][np.searchsorted(c, q * c[-1])])


def _flow_mean(flow: np.ndarray, values: np.ndarray) -> float:
    total = float(flow.sum())
    return float((flow * values).sum() / total) if total > 0 else float("nan")


def colocated_token_budget(table: PhaseTable, cap: np.ndarray, engine_budget: int) -> int:
    """Tokens per iteration of a colocated island: its chunked-prefill budget (vLLM's
    ``max_num_batched_tokens``, SGLang's ``--chunked-prefill-size``).

    The perf model's colocated passes (perfmodel.aggregated) are the engine's: a mixed
    pass carries the running decodes and whole waiting prompts within the engine's token
    budget, and the stalls such a pass puts on the running decodes are priced where the
    TPOT ceiling is checked -- per request, with the mixed passes its tail sees
    (``aggregated.TPOT_TAIL_QUANTILE``).  So the island runs with the budget it was
    priced at, the engine's (``engine_budget``).  (Before issue 29 the perf model spread
    prompt tokens thinly over every pass and the budget was the largest pass it priced;
    a budget below a chunk the simulator then ran cost more per pass than the TPOT
    ceiling on weak-compute GPUs.)  0 when nothing is served."""
    batch = np.asarray(table.batch, float)
    ok = (cap > 0) & (batch > 0)
    if not ok.any():
        return 0
    return int(engine_budget)


def operating_point(ev: LayoutEvaluator, result: InnerResult) -> OperatingPoint:
    """Per-island flow, batch and latency of a solved layout, and the fleet's
    percentiles.  Batches are sized on the capacity each island gives (what it can
    hold when its ranges run full), flows and latencies on the demand it serves."""
    shape = ev.context.shape
    hit = float(shape.prefix_hit_rate)
    d = shape.decode_at(np.arange(len(shape.pmf), dtype=float))
    by_range = role_flows(ev, result)
    flow = {r: spread(ev, f) for r, f in by_range.items()}
    full = {r: spread(ev, f) for r, f in role_flows(ev, result, demand=False).items()}
    points = []
    ttft_v, ttft_w, tpot_v, tpot_w = [], [], [], []
    for i, isl in enumerate(result.islands):
        if isl.role not in ("prefill", "decode", "both"):
            points.append(IslandPoint(i, isl.role, 0.0, 0, float("nan"), float("nan")))
            continue
        if isl.role == "both":
            # a solution has colocated islands only where the context offers the role
            table = cast("PhaseTable", ev.colocated_table(isl.gpu, isl.size))
        else:
            t = ev.island(isl.gpu, isl.size)
            table = t.prefill if isl.role == "prefill" else t.decode
        served, cap = flow[isl.role][i], full[isl.role][i]
        total, cap_total = float(served.sum()), float(cap.sum())
        lat = np.asarray(table.latency_ms, float)
        if isl.role == "prefill":
            batch = int(round(float((cap * table.batch).sum() / cap_total))) \
                if cap_total else 1
            # tokens per pass where prompts are batched (a TTFT ceiling may have lowered
            # it below the engine's); the island runs at the smallest its lengths need
            k = np.asarray(table.batch, float)
            n = np.maximum(np.arange(len(k)) * (1.0 - hit), 1.0)
            batched = (cap > 0) & (k > 1.0 + 1e-6)
            budget = int(np.floor(float(np.min(k[batched] * n[batched])) + 1e-6)) \
                if batched.any() else 0
            points.append(IslandPoint(i, "prefill", total, max(batch, 1), _flow_mean(served, lat),
                                      float("nan"), budget))
            ttft_v.append(lat)
            ttft_w.append(served)
            continue
        dp = table.config.dp if table.config else 1
        in_flight = float((cap * d * lat * 1e-3).sum())  # Little's law, running full
        batch = int(np.ceil(in_flight / dp - 1e-9)) if cap_total > 0 else 0
        ttft = float("nan")
        budget = 0
        if isl.role == "both":
            ttft = _flow_mean(served, np.asarray(table.ttft_ms, float))
            ttft_v.append(np.asarray(table.ttft_ms, float))
            ttft_w.append(served)
            budget = colocated_token_budget(table, cap,
                                            ev.context.calib.profile.prefill_token_budget)
        points.append(IslandPoint(i, isl.role, total, max(batch, 1 if total else 0),
                                  ttft, _flow_mean(served, lat), budget))
        tpot_v.append(lat)
        tpot_w.append(served)
    q = {}
    for name, v, w in (("ttft", ttft_v, ttft_w), ("tpot", tpot_v, tpot_w)):
        vv = np.concatenate(v) if v else np.zeros(0)
        ww = np.concatenate(w) if w else np.zeros(0)
        q[name] = (_weighted_quantile(vv, ww, 0.5), _weighted_quantile(vv, ww, 0.9))
    kv = float((flow["prefill"].sum(axis=0) * ev.kv_bytes_per_length()).sum())
    locations, tiers, servers, on = place(ev, result)
    return OperatingPoint(tuple(points), q["ttft"][0], q["ttft"][1], q["tpot"][0],
                          q["tpot"][1], kv, tuple(locations), tiers,
                          tuple(tuple(float(x) for x in row) for row in
                                by_range["prefill"] + by_range["decode"] + by_range["both"]),
                          tuple(servers), tuple(on))
