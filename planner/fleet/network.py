"""The data-centre network a plan runs on: tiers, their bandwidth and latency, and where
each island sits.  Pure data; the inventory's optional ``network`` mapping fills it.

A multi-tier fat-tree (seed 003 §III-A) seen from a pair of GPUs has four *locality
tiers*: 0 = same node (NVLink / PCIe), 1 = same rack (through the ToR switch), 2 = same
pod (one aggregation hop), 3 = across pods (through the core).  Each tier ``k`` has a
per-GPU-pair bandwidth ``B_k`` (what one GPU-to-GPU flow gets on an idle path, after the
tier's oversubscription), a base latency ``ℓ_k`` and a background utilisation ``c_k``
(traffic that is not ours: seed 003 eq. 4 uses ``B_k (1 − c_k)``).

Placement: islands are laid out in plan order on consecutive nodes of ``gpus_per_node``
GPUs (an island of ``G`` GPUs takes ``ceil(G / gpus_per_node)`` nodes; islands smaller
than a node share nodes), nodes fill racks of ``nodes_per_rack``, racks fill pods of
``racks_per_pod``.  An island spanning several nodes is located at its first node
(inside the island traffic is the perf model's business, not the network's).  A plan or
a scenario can also give locations explicitly.

Two built-in networks:

* :data:`DEFAULT_NETWORK`, what a plan assumes when its inventory describes no network:
  the scale-out fabric of current GPU servers (NVIDIA DGX/HGX H100, H200 and B200
  reference designs: one 400 Gb/s RDMA NIC per GPU, rail-optimised), 8 GPUs per node,
  4 nodes per rack, 8 racks per pod; 50 GB/s per GPU within a pod (non-blocking
  leaf-spine), 25 GB/s across pods (2:1 core oversubscription);
* :data:`SEED003_NETWORK`, the consistent reconstruction of seed 003 §4.2 (its numbers
  were lost from the text; the notes derive B2/B3 = 2 from the worked example):
  NVLink-class 300 GB/s, 50 / 25 / 12.5 Gb/s per GPU pair at tiers 1 / 2 / 3, 8 GPUs per
  node, 2 nodes per rack, 2 racks per pod -- *per-flow* figures of a loaded fat-tree,
  used by the NetKV reproduction.

An inventory's ``network`` section overrides any of these fields.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from perfmodel.errors import at, check_number
from planner.core.errors import PlannerError

TIER_NAMES = ("node", "rack", "pod", "cross-pod")


@dataclass(frozen=True)
class Tier:
    """One locality tier: bandwidth per GPU-pair flow (bytes/s), latency (s), background
    utilisation ``c_k`` in [0, 1)."""

    name: str
    bandwidth_bytes_s: float
    latency_s: float
    background: float = 0.0

    @property
    def effective_bytes_s(self) -> float:
        """``B_k (1 − c_k)``: what one flow gets on an otherwise idle path."""
        return self.bandwidth_bytes_s * (1.0 - self.background)


def _default_tiers() -> tuple[Tier, ...]:
    return (Tier("node", 300e9, 2e-6), Tier("rack", 400e9 / 8, 5e-6),
            Tier("pod", 400e9 / 8, 10e-6), Tier("cross-pod", 200e9 / 8, 20e-6))


def _seed003_tiers() -> tuple[Tier, ...]:
    return (Tier("node", 300e9, 2e-6), Tier("rack", 50e9 / 8, 5e-6),
            Tier("pod", 25e9 / 8, 10e-6), Tier("cross-pod", 12.5e9 / 8, 20e-6))


@dataclass(frozen=True)
class Location:
    """Where an island sits: (pod, rack, node) indices, globally numbered."""

    pod: int
    rack: int
    node: int


@dataclass(frozen=True)
class NetworkSpec:
    """Tiers (nearest first, exactly four) and the fat-tree shape used for placement."""

    tiers: tuple[Tier, ...] = field(default_factory=_default_tiers)
    gpus_per_node: int = 8
    nodes_per_rack: int = 4
    racks_per_pod: int = 8

    @property
    def gpus_per_rack(self) -> int:
        return self.gpus_per_node * self.nodes_per_rack

    @property
    def gpus_per_pod(self) -> int:
        return self.gpus_per_rack * self.racks_per_pod

    def tier_between(self, a: Location, b: Location) -> int:
        """Locality tier of two locations (0 = same node … 3 = across pods)."""
        if a.node == b.node:
            return 0
        if a.rack == b.rack:
            return 1
        if a.pod == b.pod:
            return 2
        return 3

    def place(self, sizes: Sequence[int]) -> list[Location]:
        """Locations of islands of ``sizes`` GPUs laid out in order (module docstring)."""
        out, gpu = [], 0
        for size in sizes:
            per_node = self.gpus_per_node
            if gpu % per_node and gpu % per_node + size > per_node:
                gpu += per_node - gpu % per_node  # does not fit in the node's rest
            node = gpu // per_node
            rack = node // self.nodes_per_rack
            out.append(Location(rack // self.racks_per_pod, rack, node))
            gpu += max(int(size), 1) if size < per_node else math.ceil(size / per_node) * per_node
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"gpus_per_node": self.gpus_per_node, "nodes_per_rack": self.nodes_per_rack,
                "racks_per_pod": self.racks_per_pod,
                "tiers": [{"name": t.name, "bandwidth_gbps": t.bandwidth_bytes_s * 8 / 1e9,
                           "latency_us": t.latency_s * 1e6, "background": t.background}
                          for t in self.tiers]}


DEFAULT_NETWORK = NetworkSpec()
SEED003_NETWORK = NetworkSpec(_seed003_tiers(), 8, 2, 2)

_NET_FIELDS = {"tiers", "gpus_per_node", "nodes_per_rack", "racks_per_pod"}
_TIER_FIELDS = {"name", "bandwidth_gbps", "latency_us", "background"}


def _positive(where: str, value: Any, *, integer: bool = False, allow_zero: bool = False
              ) -> float:
    return float(check_number(value, at(where), integer=integer,
                              gt=None if allow_zero else 0, ge=0 if allow_zero else None))


def parse_network(data: Mapping[str, Any] | None, where: str = "network") -> NetworkSpec:
    """The ``network`` mapping of an inventory (docs/inventory.md) → :class:`NetworkSpec`.

    Every field is optional; ``tiers`` is a list of four mappings (nearest first) with
    ``bandwidth_gbps`` (per GPU-pair flow), ``latency_us`` and ``background`` (0–1);
    missing tier fields keep the default of that tier.  Errors name the field.
    """
    if data is None:
        return DEFAULT_NETWORK
    if not isinstance(data, Mapping):
        raise PlannerError(f"{where} must be a mapping")
    unknown = set(data) - _NET_FIELDS
    if unknown:
        raise PlannerError(f"{where}: unknown field '{sorted(unknown)[0]}' "
                           f"(known: {', '.join(sorted(_NET_FIELDS))})")
    shape = {k: int(_positive(f"{where}.{k}", data[k], integer=True))
             for k in ("gpus_per_node", "nodes_per_rack", "racks_per_pod") if k in data}
    tiers = list(_default_tiers())
    if "tiers" in data:
        given = data["tiers"]
        if not isinstance(given, list) or len(given) != 4:
            raise PlannerError(f"{where}.tiers must be a list of 4 tiers (node, rack, pod, "
                               "cross-pod)")
        for k, t in enumerate(given):
            w = f"{where}.tiers[{k}]"
            if not isinstance(t, Mapping):
                raise PlannerError(f"{w} must be a mapping")
            bad = set(t) - _TIER_FIELDS
            if bad:
                raise PlannerError(f"{w}: unknown field '{sorted(bad)[0]}'")
            d = tiers[k]
            bw = (_positive(f"{w}.bandwidth_gbps", t["bandwidth_gbps"]) * 1e9 / 8
                  if "bandwidth_gbps" in t else d.bandwidth_bytes_s)
            lat = (_positive(f"{w}.latency_us", t["latency_us"], allow_zero=True) * 1e-6
                   if "latency_us" in t else d.latency_s)
            bg = d.background
            if "background" in t:
                bg = _positive(f"{w}.background", t["background"], allow_zero=True)
                if bg >= 1:
                    raise PlannerError(f"{w}.background must be in [0, 1), got {bg}")
            tiers[k] = Tier(str(t.get("name", d.name)), bw, lat, bg)
    return NetworkSpec(tuple(tiers), **shape)


__all__ = ["DEFAULT_NETWORK", "SEED003_NETWORK", "TIER_NAMES", "Location", "NetworkSpec",
           "Tier", "parse_network"]
