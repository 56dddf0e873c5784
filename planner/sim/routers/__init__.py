"""Routing policies of the simulator (protocol in :mod:`planner.sim.protocol`)."""

from planner.sim.routers.jsq import JSQRouter
from planner.sim.routers.range_router import RangeRouter, stride_schedule
from planner.sim.routers.registry import ROUTERS, make_router
from planner.sim.routers.round_robin import RoundRobinRouter

__all__ = ["JSQRouter", "ROUTERS", "RangeRouter", "RoundRobinRouter", "make_router",
           "stride_schedule"]
