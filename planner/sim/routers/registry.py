"""Routers by name: ``ROUTERS[name](**options)`` builds one.

Each router module adds one line here.  :func:`make_router` turns an unknown name or a
bad option into a one-line :class:`PlannerError` (a user mistake on the command line).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from planner.errors import PlannerError
from planner.sim.protocol import Router
from planner.sim.routers.cache_load import CacheLoadRouter
from planner.sim.routers.dqn import DQNRouter
from planner.sim.routers.jffc import JFFCRouter
from planner.sim.routers.jsq import JSQRouter
from planner.sim.routers.mixing import MixingRouter
from planner.sim.routers.netkv import make_netkv, make_netkv_static, make_topo_only
from planner.sim.routers.range_router import RangeRouter
from planner.sim.routers.round_robin import RoundRobinRouter

ROUTERS: dict[str, Callable[..., Router]] = {
    "range": RangeRouter,
    "round-robin": RoundRobinRouter,
    "jsq": JSQRouter,
    "cache-load": CacheLoadRouter,
    "netkv": make_netkv, "netkv-static": make_netkv_static, "topo-only": make_topo_only,
    "mixing": MixingRouter,
    "dqn": DQNRouter,
    "jffc": JFFCRouter,
}


def make_router(name: str, **options: Any) -> Router:
    """The router registered as ``name``, built with ``options``."""
    factory = ROUTERS.get(name)
    if factory is None:
        raise PlannerError(f"unknown router {name!r}; known routers: {', '.join(ROUTERS)}")
    try:
        return factory(**options)
    except TypeError as err:
        raise PlannerError(f"router {name!r}: bad options {sorted(options)}: {err}") from None


__all__ = ["ROUTERS", "make_router"]
