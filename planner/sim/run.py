"""One simulation of a plan: settings → cluster, requests, router → result and metrics.

The glue between a run folder's ``plan.json`` and the engine, used by ``planner
simulate`` and the validation scripts.  Pure computation (no files): the caller loads
the plan and writes what comes back.

Choices a user can rely on:

* **rate** -- ``"300"`` is 300 requests/s; ``"0.8x"`` is 0.8 times the plan's analytic
  capacity (``summary.requests_per_s``, the rate the inner solver says the plan
  sustains for the workload mix), so ``1x`` asks "does the plan deliver what it
  promised?" and ``2x`` is a twofold overload;
* **arrivals** -- ``auto`` replays the trace given with ``trace`` (timestamps scaled by
  one factor to the rate, which keeps their burstiness), otherwise draws gamma
  inter-arrival times whose squared CV is the workload's index of dispersion of
  one-second counts (planner.workload.arrivals: the burstiness of many tenants like
  the trace's, superposed -- a fleet at a hundred times the trace's rate does not see
  one tenant's pauses compressed a hundredfold), or its gap CV when it records no
  IDC, or Poisson; ``poisson``/``gamma`` force one;
* **warm-up** -- the first ``warmup_fraction`` of the arrival span is excluded from the
  metrics (the cluster starts empty);
* **SLOs** -- TTFT / TPOT ceilings for attainment and goodput: the plan's own if it was
  planned with them, else 2 s TTFT and 0.2 s TPOT (interactive-chat defaults; give yours);
* **network** -- the plan's inventory ``network`` section (docs/inventory.md), else the
  default four-tier fat-tree.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

from perfmodel.calibration import Calibration
from perfmodel.engines import get_engine
from planner.errors import PlannerError
from planner.inner.registry import needs_context
from planner.network import NetworkSpec, parse_network
from planner.sim.arrivals import parse_rate, requests_from_trace, requests_from_workload
from planner.sim.cluster import cluster_from_plan, plan_calibration
from planner.sim.engine import simulate
from planner.sim.metrics import summarise
from planner.sim.pipeline_cluster import (
    cluster_from_pipeline_plan,
    prefill_token_budget,
)
from planner.sim.protocol import SimCluster, SimRequest, SimResult
from planner.sim.routers.registry import make_router, places_kv
from planner.workload import load_workload

ARRIVALS = ("auto", "poisson", "gamma")
DEFAULT_TTFT_SLO_S = 2.0
DEFAULT_TPOT_SLO_S = 0.2


@dataclass(frozen=True)
class SimSettings:
    """What to simulate (module docstring)."""

    router: str = "range"
    rate: str = "0.8x"
    requests: int = 20_000
    arrivals: str = "auto"
    seed: int = 0
    warmup_fraction: float = 0.1
    workload: str | None = None  # default: the plan's
    trace: str | None = None
    trace_format: str = "azure"
    ttft_slo_s: float | None = None
    tpot_slo_s: float | None = None
    fair_sharing: bool = True
    engine: str | None = None  # perf-model engine; default: the plan's

    def calibration(self, plan: Mapping[str, Any]):
        """The perf-model calibration to run the islands with: ``engine`` if set, else the
        one the plan was made with."""

        if self.engine is None:
            return plan_calibration(plan)
        return Calibration(engine=get_engine(self.engine).name)

    def tag(self) -> str:
        """Folder name of this run inside ``RUN_DIR/simulation``."""
        rate = self.rate.strip().lower().replace("/", "_")
        return f"{self.router}-{rate}-s{self.seed}"

    def check(self) -> None:
        if self.arrivals not in ARRIVALS:
            raise PlannerError(f"--arrivals must be one of {', '.join(ARRIVALS)}, got "
                               f"{self.arrivals!r}")
        if self.requests < 1:
            raise PlannerError(f"--requests must be >= 1, got {self.requests}")
        if not 0 <= self.warmup_fraction < 1:
            raise PlannerError(f"--warmup must be in [0, 1), got {self.warmup_fraction}")
        for name in ("ttft_slo_s", "tpot_slo_s"):
            v = getattr(self, name)
            if v is not None and not (math.isfinite(v) and v > 0):
                raise PlannerError(f"--{name.split('_')[0]}-slo must be > 0, got {v}")


@dataclass
class SimRun:
    """A finished simulation: the settings, what was offered, the engine's result and the
    metrics (``planner.sim.metrics.summarise``)."""

    settings: SimSettings
    capacity_rps: float
    offered_rps: float
    ttft_slo_s: float
    tpot_slo_s: float
    result: SimResult
    metrics: Any  # SimMetrics

    def summary(self) -> dict[str, Any]:
        """JSON-ready record for ``simulation.json`` and the report."""
        return {"tag": self.settings.tag(), "settings": asdict(self.settings),
                "capacity_rps": self.capacity_rps, "offered_rps": self.offered_rps,
                "ttft_slo_s": self.ttft_slo_s, "tpot_slo_s": self.tpot_slo_s,
                "wall_s": self.result.wall_s, "events": self.result.events,
                "metrics": self.metrics.to_dict()}


def plan_capacity(plan: Mapping[str, Any]) -> float:
    """The plan's analytic capacity in requests/s (``summary.requests_per_s``)."""
    try:
        value = float(plan["summary"]["requests_per_s"])
    except (KeyError, TypeError, ValueError):
        raise PlannerError("plan.summary.requests_per_s is missing or not a number") from None
    return value


def plan_network(plan: Mapping[str, Any]) -> NetworkSpec:
    inv = (plan.get("request") or {}).get("inventory") or {}
    return parse_network(inv.get("network"), "plan.request.inventory.network")


def plan_slos(plan: Mapping[str, Any], s: SimSettings) -> tuple[float, float]:
    slo = (plan.get("request") or {}).get("slo") or {}
    ttft = s.ttft_slo_s or (slo.get("ttft_ms") or DEFAULT_TTFT_SLO_S * 1e3) / 1e3
    tpot = s.tpot_slo_s or (slo.get("tpot_ms") or DEFAULT_TPOT_SLO_S * 1e3) / 1e3
    return float(ttft), float(tpot)


def make_requests(plan: Mapping[str, Any], s: SimSettings, rate: float,
                  max_input: int) -> list[SimRequest]:
    """The request stream of the module docstring."""
    if s.trace:
        return requests_from_trace(s.trace, s.trace_format, rate=rate, n=s.requests,
                                   seed=s.seed, max_input=max_input)

    name = s.workload or (plan.get("request") or {}).get("workload")
    if not name:
        raise PlannerError("no workload: the plan names none; give --workload")
    w = load_workload(name)
    cv = None
    if s.arrivals in ("auto", "gamma"):
        cv = w.cv if w.cv and math.isfinite(w.cv) and w.cv > 0 else None
        if w.idc is not None and math.isfinite(w.idc) and w.idc > 0:
            cv = math.sqrt(w.idc)
        if s.arrivals == "gamma" and cv is None:
            raise PlannerError(f"--arrivals gamma: workload {name!r} records no CV; use "
                               "poisson")
    reqs = requests_from_workload(w, s.requests, rate, seed=s.seed, cv=cv)
    for r in reqs:  # the plan's islands are sized for its ranges; longer prompts clip
        if r.input_len > max_input:
            r.input_len = max_input
    return reqs


def pipeline_settings(settings: SimSettings, inner: str) -> SimSettings:
    """``settings`` for a pipeline plan: router ``range`` becomes ``jffc``; a KV router
    is refused (the chains are colocated, no KV moves)."""
    if settings.router == "range":
        return replace(settings, router="jffc")
    if places_kv(settings.router):
        raise PlannerError(f"--router {settings.router}: a pipeline plan ({inner}) has no "
                           "prefill/decode islands to move KV between; use jffc (its "
                           "default), jsq or round-robin")
    return settings


def run_plan(plan: Mapping[str, Any], settings: SimSettings, *,
             cluster: SimCluster | None = None,
             progress: Callable[[int, int], None] | None = None) -> SimRun:
    """Simulate ``plan`` (a plan.json dict) under ``settings``."""

    settings.check()
    inner = (plan.get("request") or {}).get("inner")
    if needs_context(inner):
        # Pipeline plans (seeds 000/001) run as one colocated island per seed-001 chain
        # (planner.sim.pipeline_cluster), dispatched by JFFC -- what the plan-following
        # default "range" means for them.
        settings = pipeline_settings(settings, inner)
        if cluster is None:
            cluster = cluster_from_pipeline_plan(plan, network=plan_network(plan))
    elif cluster is None:
        cluster = cluster_from_plan(plan, network=plan_network(plan),
                                    calib=settings.calibration(plan))
    capacity = plan_capacity(plan)
    rate = parse_rate(settings.rate, capacity)
    max_input = max(int(len(isl.prefill_s)) - 1 for isl in cluster.islands)
    requests = make_requests(plan, settings, rate, max_input)
    router = make_router(settings.router)
    t = [r.arrival for r in requests]
    warmup = min(t) + settings.warmup_fraction * (max(t) - min(t))
    extra = {}
    if needs_context(inner):  # a chain's prefill groups each batch their own prompts
        extra["prefill_token_budget"] = prefill_token_budget(cluster)
    result = simulate(cluster, requests, router, seed=settings.seed, warmup_s=warmup,
                      fair_sharing=settings.fair_sharing, progress=progress, **extra)
    ttft, tpot = plan_slos(plan, settings)
    metrics = summarise(result, ttft_slo_s=ttft, tpot_slo_s=tpot)
    return SimRun(settings, capacity, rate, ttft, tpot, result, metrics)


__all__ = ["ARRIVALS", "SimRun", "SimSettings", "make_requests",
           "pipeline_settings", "plan_capacity", "plan_network", "plan_slos", "run_plan"]
