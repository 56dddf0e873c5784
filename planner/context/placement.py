"""Where a plan's islands sit on the network, and the KV traffic each tier carries.

Prompt KV caches move from the prefill island that ran a request to the decode island
that continues it.  The plan-following router sends a request of range ``j`` to one of
the range's prefill islands and then to one of its decode islands, each in proportion
to the flow the inner solution gives it, so the pair ``(p, k)`` carries

.. math::  f_{pk} = \\sum_j F_{pj} F_{kj} / F_j \\quad\\text{requests/s}

(``F_{ij}``: island ``i``'s flow of range ``j``; ``F_j = C P_j`` the range's demand), each
with the range's mean prompt KV bytes.  Whether those bytes stay in a node, a rack or a
pod, or cross the core, depends on where ``p`` and ``k`` sit.

**Placement.**  Islands are laid out on consecutive nodes, racks and pods
(:meth:`planner.fleet.network.NetworkSpec.place`) in the order of the ranges they serve (the
flow-weighted mean range index), so an island sits beside the islands of the other
phase that exchange its ranges' KV -- pairing inside a pod where the sizes allow.  The
plan records the locations and the simulator runs on them (``plan.islands[].location``).

**Servers.**  At server granularity (:mod:`planner.fleet.servers`) islands go on servers of
their own type -- whole servers, or shares packed into one server -- and servers, not
GPUs, are laid on consecutive nodes, racks and pods (:func:`place_on_servers`): the
servers of the islands that serve the short ranges first, so the pairing above still
holds.  A server holds one GPU type and a type never uses more servers than the
inventory lists.

**Limits.**  The inner solver caps each island's rate at what its GPUs can ship at the
pod tier (``planner.context.evaluate.LayoutEvaluator.kv_rate_cap``); :func:`tier_load` reports
the bytes/s of every tier once the islands are placed, and the load of the busiest
island's share of each tier against that tier's bandwidth.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.fleet.network import TIER_NAMES, Location, NetworkSpec
from planner.fleet.servers import Server, ServerShape, assign_servers


def placement_order(flows: np.ndarray) -> list[int]:
    """Islands (rows of the (I, J) flow matrix) sorted by the flow-weighted mean index of
    the ranges they serve; islands without flow go last, stably."""
    flows = np.asarray(flows, float)
    total = flows.sum(axis=1)
    j = np.arange(flows.shape[1], dtype=float)
    centre = np.where(total > 0, flows @ j / np.where(total > 0, total, 1.0), np.inf)
    return [int(i) for i in np.argsort(centre, kind="stable")]


def place_islands(sizes: list[int], flows: np.ndarray, network: NetworkSpec
                  ) -> list[Location]:
    """Location of every island (in the given order of ``sizes``), laid out by
    :func:`placement_order`."""
    order = placement_order(flows)
    locs = network.place([sizes[i] for i in order])
    out: list[Location | None] = [None] * len(sizes)
    for i, loc in zip(order, locs, strict=True):
        out[i] = loc
    return [loc for loc in out if loc is not None]


def place_on_servers(islands: list[tuple[str, int]], flows: np.ndarray, network: NetworkSpec,
                     shapes: dict[str, ServerShape]
                     ) -> tuple[list[Location], list[Server], list[tuple[int, ...]]]:
    """Servers for ``islands`` ((type, size), live ones) and the location of each island
    (its first server's node, rack and pod).  Raises ``ValueError`` when the islands do
    not fit their types' servers (the searches propose only layouts that do)."""
    order = placement_order(flows)
    placed = assign_servers(islands, shapes, order)
    if placed is None:
        raise ValueError("the islands do not fit the inventory's servers")
    servers, where = placed

    def loc(node: int) -> Location:
        rack = node // network.nodes_per_rack
        return Location(rack // network.racks_per_pod, rack, node)

    return [loc(w[0]) for w in where], servers, where


@dataclass(frozen=True)
class TierLoad:
    """KV bytes/s per locality tier, and the busiest island's use of the tier's capacity
    (its bytes/s on the tier over its GPUs x the tier's per-GPU bandwidth)."""

    bytes_per_s: tuple[float, ...]
    peak_utilisation: tuple[float, ...]

    def to_dict(self) -> dict[str, dict[str, float]]:
        return {name: {"bytes_per_s": b, "peak_utilisation": u}
                for name, b, u in zip(TIER_NAMES, self.bytes_per_s, self.peak_utilisation,
                                      strict=True)}


def pair_flows(prefill: np.ndarray, decode: np.ndarray) -> np.ndarray:
    """(P, K, J) requests/s from prefill island p to decode island k, per range."""
    demand = decode.sum(axis=0)
    share = np.divide(decode, demand, out=np.zeros_like(decode), where=demand > 0)
    return prefill[:, None, :] * share[None, :, :]


def tier_load(prefill: np.ndarray, decode: np.ndarray, kv_bytes: np.ndarray,
              p_locs: list[Location], d_locs: list[Location], p_sizes: list[int],
              d_sizes: list[int], network: NetworkSpec) -> TierLoad:
    """Bytes/s per tier of the KV moved between placed islands (module docstring).

    ``prefill`` (P, J) and ``decode`` (K, J): flows per island and range; ``kv_bytes``
    (J,): mean prompt KV bytes per request of each range."""
    pairs = pair_flows(np.asarray(prefill, float), np.asarray(decode, float)) @ kv_bytes
    n = len(network.tiers)
    per_tier = np.zeros(n)
    out_p = np.zeros((len(p_locs), n))
    in_d = np.zeros((len(d_locs), n))
    for p, lp in enumerate(p_locs):
        for k, lk in enumerate(d_locs):
            t = network.tier_between(lp, lk)
            per_tier[t] += pairs[p, k]
            out_p[p, t] += pairs[p, k]
            in_d[k, t] += pairs[p, k]
    bw = np.array([t.effective_bytes_s for t in network.tiers])
    util = np.zeros(n)
    for loads, sizes in ((out_p, p_sizes), (in_d, d_sizes)):
        if len(sizes):
            u = loads / (np.asarray(sizes, float)[:, None] * bw[None, :])
            util = np.maximum(util, u.max(axis=0))
    return TierLoad(tuple(float(x) for x in per_tier), tuple(float(x) for x in util))


__all__ = ["TierLoad", "pair_flows", "place_islands", "place_on_servers", "placement_order",
           "tier_load"]
