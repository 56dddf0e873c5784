"""Routers by name (the simulator's ``--router``): one
:class:`~perfmodel.registry.Registry`.

Each router module adds one entry here.  :func:`make_router` turns an unknown name or a
bad option into a one-line :class:`PlannerError` (a user mistake on the command line).
"""

from __future__ import annotations

from typing import Any

from perfmodel.registry import Registry
from planner.core.errors import PlannerError
from planner.sim.protocol import KV_PLACEMENT, Router
from planner.sim.routers.cache_load import CacheLoadRouter
from planner.sim.routers.dqn import DQNRouter
from planner.sim.routers.jffc import JFFCRouter
from planner.sim.routers.jsq import JSQRouter
from planner.sim.routers.mixing import MixingRouter
from planner.sim.routers.netkv import (
    NetKVRouter,
    make_netkv,
    make_netkv_static,
    make_topo_only,
)
from planner.sim.routers.range_router import RangeRouter
from planner.sim.routers.round_robin import RoundRobinRouter

ROUTERS: Registry[Any] = Registry("router", "--router")
ROUTERS.add("range", RangeRouter, "follow the plan's length ranges (default)")
ROUTERS.add("round-robin", RoundRobinRouter, "ignore load, plan and network (baseline)")
ROUTERS.add("jsq", JSQRouter, "join the shortest queue by waiting tokens")
ROUTERS.add("cache-load", CacheLoadRouter, "seed 003's cache- and load-aware CLA*")
ROUTERS.add("netkv", make_netkv, "seed 003's network-aware decode selection",
            NetKVRouter.capabilities)
ROUTERS.add("netkv-static", make_netkv_static, "NetKV without the live network oracle",
            NetKVRouter.capabilities)
ROUTERS.add("topo-only", make_topo_only, "NetKV on topology alone", NetKVRouter.capabilities)
ROUTERS.add("mixing", MixingRouter, "seed 004's workload-mixing estimator, greedy")
ROUTERS.add("dqn", DQNRouter, "seed 004's Double-DQN policy")
ROUTERS.add("jffc", JFFCRouter,
            "seed 001's join-the-fastest-free-chain (pipeline plans' default)")


def places_kv(name: str) -> bool:
    """Whether router ``name`` places KV between prefill and decode islands."""
    return ROUTERS.can(name, KV_PLACEMENT)


def make_router(name: str, **options: Any) -> Router:
    """The router registered as ``name``, built with ``options``."""
    factory = ROUTERS.lookup(name)
    try:
        return factory(**options)
    except TypeError as err:
        raise PlannerError(f"router {name!r}: bad options {sorted(options)}: {err}") from None


__all__ = ["ROUTERS", "make_router", "places_kv"]
