"""One simulation of a plan: settings → cluster, requests, router → result and metrics.

The glue between a run folder's ``plan.json`` and the engine, used by ``planner
simulate`` and the validation scripts.  Pure computation (no files): the caller loads
the plan and writes what comes back.

Choices a user can rely on:

* **rate** -- ``"300"`` is 300 requests/s; ``"0.8x"`` is 0.8 times the plan's capacity
  (``summary.requests_per_s``: the closed loop's headline, the highest rate at which
  the SLO held), so ``1x`` asks "does the plan deliver what it promised?" and ``2x`` is
  a twofold overload;
* **arrivals** -- ``auto`` replays the trace given with ``trace`` (timestamps scaled by
  one factor to the rate, which keeps their burstiness), otherwise draws gamma
  inter-arrival times whose squared CV is the workload's index of dispersion of
  one-second counts (planner.workload.arrivals: the burstiness of many tenants like
  the trace's, superposed -- a fleet at a hundred times the trace's rate does not see
  one tenant's pauses compressed a hundredfold), or its gap CV when it records no
  IDC, or Poisson; ``poisson``/``gamma`` force one;
* **measurement window** -- the cluster starts empty, so the figures are measured in a
  window of simulated time: after a warm-up of ``warmup_s`` simulated seconds from the
  first arrival (``planner simulate``'s default: :data:`DEFAULT_WARMUP_S`, the closed
  loop's warm-up) up to the last arrival (``planner.sim.metrics`` defines every figure
  on it).  The window's start does not move with the number of requests, so neither
  does the completed rate; more requests only lengthen the window and narrow its
  confidence interval.  Runs too short for the warm-up plus :data:`MIN_WINDOW_S` fall
  back to the ``warmup_fraction`` rule and say so in a warning; so do runs whose window
  is not steady (:func:`steady_warning`: latencies growing with the queues of an
  overloaded plan, or a warm-up shorter than the workload's E2E tail).  With
  ``warmup_s=None`` the first ``warmup_fraction`` of the arrival span is the warm-up
  and no steadiness is checked (the closed loop and the simulated objective size their
  runs so that this is 30 s or 20 s, and keep their own measurement);
* **requests** -- ``None`` (``planner simulate``'s default) simulates enough arrivals
  for the warm-up plus :data:`MEASURE_S` seconds of window at the offered rate
  (:func:`auto_requests`); a trace with fewer rows than asked for is simulated whole,
  with a warning;
* **SLOs** -- TTFT / TPOT ceilings for attainment and goodput: the plan's own if it was
  planned with them, else 2 s TTFT and 0.2 s TPOT (interactive-chat defaults; give yours);
* **network** -- the plan's inventory ``network`` section (docs/inventory.md), else the
  default four-tier fat-tree.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from perfmodel.calibration import Calibration
from perfmodel.engines import get_engine
from planner.core.defaults import MAX_SIM_REQUESTS
from planner.core.errors import PlannerError
from planner.fleet.network import NetworkSpec, parse_network
from planner.inner.registry import needs_context
from planner.sim.arrivals import parse_rate, requests_from_trace, requests_from_workload
from planner.sim.cluster import cluster_from_plan, plan_calibration
from planner.sim.engine import simulate
from planner.sim.metrics import request_columns, summarise
from planner.sim.pipeline_cluster import (
    cluster_from_pipeline_plan,
    prefill_token_budget,
)
from planner.sim.protocol import Router, SimCluster, SimRequest, SimResult
from planner.sim.routers.range_router import RangeRouter
from planner.sim.routers.registry import make_router, places_kv
from planner.sim.routers.router_config import load_router_weights
from planner.workload import load_workload

ARRIVALS = ("auto", "poisson", "gamma")
DEFAULT_TTFT_SLO_S = 2.0
DEFAULT_TPOT_SLO_S = 0.2
#: Simulated seconds after the first arrival before the window opens: a decode island
#: reaches its steady batch after a few request lifetimes (chat: E2E p99 about 30 s),
#: the same warm-up as the closed loop's check (``planner.sim.closed_loop.WARMUP_S``).
DEFAULT_WARMUP_S = 30.0
#: The shortest window a steady-state figure is read over, seconds.
MIN_WINDOW_S = 10.0
#: Window length that ``requests=None`` sizes a run for, seconds.
MEASURE_S = 60.0
MIN_AUTO_REQUESTS, MAX_AUTO_REQUESTS = 2_000, 300_000
#: A window whose completions may fall this far short of the steady rate for the
#: cluster filling up (:func:`fill_shortfall`) is not steady.
FILL_TOLERANCE = 0.01
#: Median E2E growing this many times through the window means queues grow (overload).
GROWTH = 1.5


@dataclass(frozen=True)
class SimSettings:
    """What to simulate (module docstring)."""

    router: str = "range"
    rate: str = "0.8x"
    requests: int | None = 20_000  # None: auto_requests
    arrivals: str = "auto"
    seed: int = 0
    warmup_fraction: float = 0.1
    warmup_s: float | None = None  # simulated seconds; None: the warmup_fraction rule
    workload: str | None = None  # default: the plan's
    trace: str | None = None
    trace_format: str = "azure"
    ttft_slo_s: float | None = None
    tpot_slo_s: float | None = None
    fair_sharing: bool = True
    engine: str | None = None  # perf-model engine; default: the plan's
    #: a router.json (planner export) whose weights the range router follows
    router_config: str | None = None
    #: run an MoE model's prefill attention-DP groups in lockstep, as the engines do
    #: (planner.sim.prefill_batching); False: each group on its own (docs/simulation.md)
    prefill_lockstep: bool = True

    def calibration(self, plan: Mapping[str, Any]):
        """The perf-model calibration to run the islands with: ``engine`` if set, else the
        one the plan was made with."""

        if self.engine is None:
            return plan_calibration(plan)
        own = plan_calibration(plan)
        return replace(Calibration(engine=get_engine(self.engine).name).with_limits(
            own.limits), plan_at=own.plan_at)

    def tag(self) -> str:
        """Folder name of this run inside ``RUN_DIR/simulation``."""
        rate = self.rate.strip().lower().replace("/", "_")
        name = f"{self.router}-config" if self.router_config else self.router
        return f"{name}-{rate}-s{self.seed}" + ("" if self.prefill_lockstep else "-unlocked")

    def check(self) -> None:
        if self.arrivals not in ARRIVALS:
            raise PlannerError(f"--arrivals must be one of {', '.join(ARRIVALS)}, got "
                               f"{self.arrivals!r}")
        if self.requests is not None and self.requests < 1:
            raise PlannerError(f"--requests must be >= 1, got {self.requests}")
        if not 0 <= self.warmup_fraction < 1:
            raise PlannerError(f"--warmup must be in [0, 1), got {self.warmup_fraction}")
        if self.warmup_s is not None and not (math.isfinite(self.warmup_s)
                                              and self.warmup_s >= 0):
            raise PlannerError(f"--warmup must be >= 0 s, got {self.warmup_s}")
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
    requests_simulated: int = 0
    window: dict[str, Any] = field(default_factory=dict)  # how it was chosen
    warnings: list[str] = field(default_factory=list)  # one line each

    def summary(self) -> dict[str, Any]:
        """JSON-ready record for ``simulation.json`` and the report."""
        return {"tag": self.settings.tag(), "settings": asdict(self.settings),
                "capacity_rps": self.capacity_rps, "offered_rps": self.offered_rps,
                "ttft_slo_s": self.ttft_slo_s, "tpot_slo_s": self.tpot_slo_s,
                "requests_simulated": self.requests_simulated, "window": dict(self.window),
                "warnings": list(self.warnings),
                "wall_s": self.result.wall_s, "events": self.result.events,
                "metrics": self.metrics.to_dict()}


def parse_warmup(spec: str) -> tuple[float | None, float | None]:
    """``--warmup``: ``"30s"`` -> ``(30.0, None)`` simulated seconds; ``"0.1"`` ->
    ``(None, 0.1)``, a fraction of the arrival span (the rule whose window moves with
    ``-n``)."""
    text = str(spec).strip().lower()
    try:
        value = float(text[:-1] if text.endswith("s") else text)
    except ValueError:
        value = math.nan
    if text.endswith("s") and math.isfinite(value) and value >= 0:
        return value, None
    if not text.endswith("s") and 0 <= value < 1:
        return None, value
    raise PlannerError(f"--warmup {spec!r}: give simulated seconds (e.g. 30s) or a fraction "
                       "of the arrival span in [0, 1) (e.g. 0.1)")


def auto_requests(rate: float, s: SimSettings) -> int:
    """Requests whose arrivals at ``rate`` span the warm-up plus :data:`MEASURE_S`."""
    span = ((s.warmup_s + MEASURE_S) if s.warmup_s is not None
            else MEASURE_S / (1.0 - s.warmup_fraction))
    return int(min(MAX_AUTO_REQUESTS, max(MIN_AUTO_REQUESTS, math.ceil(rate * span))))


def choose_window(arrivals: np.ndarray, s: SimSettings, rate: float
                  ) -> tuple[float, dict[str, Any], str | None]:
    """The warm-up's end (absolute simulated time), a record of the rule, and a warning
    when the run is too short for it (module docstring)."""
    t0, t1 = float(arrivals.min()), float(arrivals.max())
    span = t1 - t0
    fraction = {"rule": "fraction", "warmup_fraction": s.warmup_fraction,
                "warmup_s": s.warmup_fraction * span}
    if s.warmup_s is None:
        return t0 + s.warmup_fraction * span, {**fraction, "steady_state": None}, None
    if span - s.warmup_s >= MIN_WINDOW_S:
        return (t0 + s.warmup_s, {"rule": "seconds", "warmup_s": s.warmup_s,
                                  "steady_state": True}, None)
    need = math.ceil(rate * (s.warmup_s + MIN_WINDOW_S)) + 1
    more = f"use -n >= {need:,}" + (" (a longer trace)" if s.trace else "")
    if need > MAX_SIM_REQUESTS:  # no run within the cap spans them at this rate
        more = (f"at this rate that takes more than the {MAX_SIM_REQUESTS:,} requests a run "
                "may have: give --warmup as a fraction of the span (e.g. 0.1) instead")
    warning = (f"the arrivals span {span:,.1f} s of simulated time, too short for the "
               f"{s.warmup_s:g} s warm-up and a {MIN_WINDOW_S:g} s window: figures are "
               f"measured after the first {s.warmup_fraction:.0%} of the span, while the "
               f"cluster is still filling (the completed rate reads low); {more}")
    return t0 + s.warmup_fraction * span, {**fraction, "steady_state": False}, warning


def fill_shortfall(e2e: np.ndarray, start: float, end: float) -> float:
    """How far completions in a window ``[start, end)`` seconds after an empty start fall
    short of the steady rate, from the requests' E2E latencies (the M/G/∞ fill): a
    request completes one E2E after it arrives, so ``u`` seconds in completions run at
    ``rate · P(E2E ≤ u)``, and the window's shortfall is the mean of ``P(E2E > u)``
    over it: ``(E[(E2E − start)+] − E[(E2E − end)+]) / (end − start)``.  NaN without
    latencies or window."""
    e = np.asarray(e2e, dtype=float)
    e = e[np.isfinite(e)]
    if e.size == 0 or not end > start:
        return math.nan
    excess = np.clip(e - start, 0.0, None).mean() - np.clip(e - end, 0.0, None).mean()
    return float(excess / (end - start))


def steady_warning(arrival: np.ndarray, e2e: np.ndarray, t0: float, lo: float,
                   hi: float) -> str | None:
    """A warning when the window ``[lo, hi)`` (absolute times; ``t0`` the first arrival)
    is not in a steady state, else None.  Two causes, told apart by the latencies:

    * *overload* -- the median E2E of the window's last quarter of arrivals is more than
      :data:`GROWTH` times that of its first quarter (unfinished requests count as
      endless): queues grow, no window is steady, and the completed rate is the service
      rate of this window, which can drift with its length;
    * *fill* -- otherwise, :func:`fill_shortfall` above :data:`FILL_TOLERANCE`: the
      warm-up is shorter than the requests' E2E tail."""
    if not hi > lo:
        return None
    e = np.where(np.isfinite(e2e), e2e, np.inf)
    quarter = 0.25 * (hi - lo)
    first = e[(arrival >= lo) & (arrival < lo + quarter)]
    last = e[(arrival >= hi - quarter) & (arrival <= hi)]
    if first.size and last.size and np.median(last) > GROWTH * np.median(first):
        return (f"no steady state: latencies grow through the window (median E2E "
                f"{np.median(first):,.1f} s for its first arrivals, "
                f"{np.median(last):,.1f} s for its last) -- the plan is overloaded and its "
                "queues grow, so the completed rate is this window's service rate and can "
                "move with -n")
    measured = arrival >= lo
    short = fill_shortfall(e2e[measured], lo - t0, hi - t0)
    if not short > FILL_TOLERANCE:
        return None
    done = e2e[measured & np.isfinite(e2e)]
    return (f"the cluster may still be filling in the window: requests take up to "
            f"{np.percentile(done, 99):,.0f} s (E2E p99) against a {lo - t0:,.0f} s warm-up, "
            f"so the completed rate may read {short:.1%} low -- raise --warmup (or lower "
            "--rate, if the plan is overloaded)")


def plan_capacity(plan: Mapping[str, Any]) -> float:
    """The plan's capacity in requests/s (``summary.requests_per_s``: the closed loop's
    headline, or the solver's rate for a plan made with ``--no-sim-check``)."""
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
                  max_input: int, n: int | None = None) -> list[SimRequest]:
    """The request stream of the module docstring: ``n`` requests (default
    ``s.requests``; a shorter trace gives all its rows)."""
    n = n if n is not None else (s.requests or auto_requests(rate, s))
    if s.trace:
        return requests_from_trace(s.trace, s.trace_format, rate=rate, n=n,
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
    reqs = requests_from_workload(w, n, rate, seed=s.seed, cv=cv)
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
             progress: Callable[[int, int, float], None] | None = None) -> SimRun:
    """Simulate ``plan`` (a plan.json dict) under ``settings``.  ``progress(completed,
    total, simulated_time)`` is called as the run goes (``planner.sim.engine``)."""

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
    n = settings.requests if settings.requests is not None else auto_requests(rate, settings)
    requests = make_requests(plan, settings, rate, max_input, n)
    warnings: list[str] = []
    if len(requests) < n:
        warnings.append(f"the trace {Path(str(settings.trace)).name} has {len(requests):,} "
                        f"requests, fewer than -n {n:,}: all {len(requests):,} are simulated")
    if settings.router_config is not None:
        if settings.router != "range" or needs_context(inner):
            raise PlannerError("--router-config: only the plan-following range router of "
                               "a prefill/decode plan takes a router configuration")
        edges, pre, dec = load_router_weights(settings.router_config, plan)
        router: Router = RangeRouter(range_edges=edges, weights=(pre, dec))
    else:
        router = make_router(settings.router)
    warmup, window, short = choose_window(np.array([r.arrival for r in requests]),
                                          settings, rate)
    extra = {}
    if needs_context(inner):  # a chain's prefill groups each batch their own prompts
        extra["prefill_token_budget"] = prefill_token_budget(cluster)
    elif settings.calibration(plan).profile.prefill_token_budget:  # --max-tokens
        extra["prefill_token_budget"] = settings.calibration(plan).profile.prefill_token_budget
    result = simulate(cluster, requests, router, seed=settings.seed, warmup_s=warmup,
                      fair_sharing=settings.fair_sharing, progress=progress,
                      prefill_lockstep=settings.prefill_lockstep, **extra)
    if progress is not None:  # the last word: every request accounted for
        progress(sum(1 for r in requests if r.t_done == r.t_done), len(requests),
                 float(result.t_end))
    ttft, tpot = plan_slos(plan, settings)
    metrics = summarise(result, ttft_slo_s=ttft, tpot_slo_s=tpot)
    unsteady = None
    if short is None and settings.warmup_s is not None:  # the fraction rule's caller
        # (the closed loop, the simulated objective) chose its own window
        c = request_columns(result)
        unsteady = steady_warning(c["arrival"], c["e2e"], float(c["arrival"].min()),
                                  metrics.window_start_s, metrics.window_end_s)
    warnings += [w for w in (short, unsteady) if w]
    if unsteady and window.get("steady_state"):
        window["steady_state"] = False
    return SimRun(settings, capacity, rate, ttft, tpot, result, metrics, len(requests),
                  window, warnings)


__all__ = ["ARRIVALS", "DEFAULT_WARMUP_S", "SimRun", "SimSettings", "auto_requests",
           "choose_window", "make_requests", "parse_warmup", "pipeline_settings",
           "fill_shortfall", "plan_capacity", "plan_network", "plan_slos",
           "run_plan", "steady_warning"]
