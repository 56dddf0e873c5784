"""What the user asks the planner for: :class:`PlanRequest`.

Every field has the CLI's default, so a request is the whole of a ``planner plan``
command line; plan.json keeps it (``request``) so that a later command -- the simulator
rebuilding a pipeline plan's context, a what-if study, a re-plan -- can rebuild the
same planning context with :meth:`planner.context.evaluate.PlanningContext.build`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from perfmodel import SLO, get_model
from perfmodel.engines import DEFAULT_ENGINE, EngineLimits
from planner.core.defaults import DEFAULT_MODEL, DEFAULT_SLO, DEFAULT_WORKLOAD
from planner.fleet.inventory import Inventory
from planner.outer.protocol import SearchSpace


@dataclass(frozen=True)
class PlanRequest:
    inventory: Inventory
    model: str = DEFAULT_MODEL
    workload: str = DEFAULT_WORKLOAD
    budget: float | None = None
    target_rps: float | None = None
    search: str = "auto"
    inner: str = "maxrate"
    seed: int = 0
    ranges: int = 32
    slo: SLO = DEFAULT_SLO
    search_options: dict[str, Any] = field(default_factory=dict)
    compare_homogeneous: bool = True
    compare_exact: bool = True
    exact_time_limit: float = 600.0  # a safety net: exact solves stop on a node limit
    engine: str = DEFAULT_ENGINE
    #: Overrides of the engine's limits (--max-running, --max-tokens, --mem-fraction).
    engine_limits: EngineLimits = field(default_factory=EngineLimits)
    #: "point" (the perf model's figures) or "p10" (every island derated to the
    #: pessimistic bound of its class's held-out error band; planner.capacity_band).
    plan_at: str = "point"
    #: Seed 002's own formulation, for reproducing its tables: range rates at the range
    #: midpoints, no KV-transfer limit (planner.context.evaluate), no SLO.
    thesis: bool = False
    #: What the outer search maximises: the inner solution's capacity ("analytic") or
    #: the goodput a short simulation of it delivers at the SLO ("simulated";
    #: planner.sim.objective).
    objective: str = "analytic"
    #: Colocated islands (both phases on one island, perfmodel.colocated): "auto" offers
    #: them for dense models -- where aggregated serving can win (docs/colocated.md) --
    #: "on" / "off" force it.  Never in thesis mode.
    colocated: str = "auto"
    #: "server": islands are whole servers or a power-of-two share of one, packed on
    #: the inventory's servers (planner.fleet.servers); "gpu": any size (the thesis's free
    #: sizes, for study).  Thesis mode is always "gpu" (Table 5.1's reproduction).
    island_granularity: str = "server"

    @property
    def granularity(self) -> str:
        return "gpu" if self.thesis else self.island_granularity

    @property
    def offers_colocated(self) -> bool:
        if self.thesis or self.colocated == "off":
            return False
        return self.colocated == "on" or not get_model(self.model).is_moe

    def space(self, inventory: Inventory | None = None) -> SearchSpace:
        return SearchSpace.from_inventory(inventory or self.inventory, budget=self.budget,
                                          target_rps=self.target_rps,
                                          granularity=self.granularity)

    def to_dict(self) -> dict[str, Any]:
        return {"inventory": self.inventory.to_dict(), "model": self.model,
                "workload": self.workload, "budget": self.budget,
                "target_rps": self.target_rps, "search": self.search, "inner": self.inner,
                "seed": self.seed, "ranges": self.ranges, "engine": self.engine,
                "engine_limits": self.engine_limits.to_dict(), "plan_at": self.plan_at,
                "thesis": self.thesis, "objective": self.objective,
                "colocated": self.colocated, "island_granularity": self.island_granularity,
                "slo": {"ttft_ms": self.slo.ttft_ms, "tpot_ms": self.slo.tpot_ms},
                "search_options": self.search_options}


__all__ = ["PlanRequest"]
