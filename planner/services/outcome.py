"""What a fleet's closed loops measured, and the best fleet made of it.

Pure functions over closed plan dicts (no simulation here; :mod:`planner.services.promise`
runs the loops): :class:`Outcome`, one fleet closed; :func:`measured` and
:func:`corrections`, what the loops say about the perf model's tables, for the next
solve; :func:`combine`, the joint choice of measured islands; :func:`fleet_band`, λ's
p10–p90 band.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from planner.capacity_band import plan_band
from planner.services.solve import Correction, FleetRequest, FleetSolution
from planner.sim.closed_loop import ATTAIN_TARGET

#: The label of the best combination of measured layouts (:func:`combine`).
COMBINED = "joint choice of measured islands"
#: The floor of a measured fraction (a service whose islands hold no load at all).
NO_LOAD_FACTOR = 0.25


@dataclass
class Outcome:
    """One fleet (a joint or a split solution) closed: its islands, every service's
    closed plan dict, and the promise."""

    label: str  # "joint, round 1", "best split, round 2", ...
    solution: FleetSolution
    plans: dict[str, dict[str, Any]]  # service -> closed plan dict
    rate: float  # λ (shares) or the largest target (targets) held in simulation; 0: none
    analytic: float  # the perf model's figure for the same islands
    checks: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    short: list[str] = field(default_factory=list)  # targets: services short of theirs
    #: the round each service's islands come from (a combination; :func:`combine`)
    sources: dict[str, str] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        return "split" if self.label.startswith("best split") else "joint"

    @property
    def cost_per_hour(self) -> float:
        return sum(self.costs().values())

    def costs(self) -> dict[str, float]:
        """$/h of each service's islands (those its closed plan serves with)."""
        return {n: float(p["summary"]["cost_per_hour"]) for n, p in self.plans.items()}

    def gpus(self) -> dict[str, int]:
        """GPUs per type the fleet uses, every service's serving islands together."""
        total: dict[str, int] = {}
        for plan in self.plans.values():
            for gpu, n in gpus_of(plan).items():
                total[gpu] = total.get(gpu, 0) + n
        return dict(sorted(total.items()))

    def headlines(self) -> dict[str, float]:
        return {n: float(p["summary"]["requests_per_s"]) for n, p in self.plans.items()}

    def record(self) -> dict[str, Any]:
        """Its line in fleet.json's ``rounds``."""
        return {"label": self.label, "lambda_rps": self.rate,
                "analytic_lambda_rps": self.analytic, "milp_lambda_rps": self.solution.value,
                "cost_per_hour": self.cost_per_hour,
                "service_headline_rps": self.headlines(), "short": list(self.short)}


@dataclass
class FleetOutcome:
    """The fleet run's answer, the best joint and best split outcomes, every round."""

    answer: Outcome
    joint: Outcome | None  # the joint choice of measured islands (:func:`combine`)
    split: Outcome | None  # the best independent split's best round
    rounds: list[dict[str, Any]]
    milp: Outcome | None = None  # the joint MILP's best round


def gpus_of(plan: dict[str, Any]) -> dict[str, int]:
    """GPUs per type of a plan dict's serving islands (idle ones are not bought)."""
    total: dict[str, int] = {}
    for isl in plan.get("islands") or []:
        if isl.get("role") != "idle":
            total[str(isl["gpu"])] = total.get(str(isl["gpu"]), 0) + int(isl["size"])
    return dict(sorted(total.items()))


def rate_of(req: FleetRequest, out: Outcome, name: str) -> float:
    """The rate the fleet promises service ``name``: λ × share, or its target."""
    svc = req.fleet.service(name)
    return out.rate * float(svc.share) if svc.share is not None \
        else float(svc.target_rps or 0.0)


def _limiting_phase(loop: dict[str, Any]) -> str | None:
    """Which phase's ceiling the service's SLO broke on first -- "prefill" (TTFT) or
    "decode" (TPOT) -- from the lowest-rate failing simulation of its closed loop on
    the search's seed; None when the SLO never broke (it held up to saturation)."""
    seeds = loop.get("seeds") or []
    failed = [c for c in loop.get("checks") or []
              if c.get("router") == loop.get("router") and seeds
              and c.get("seed") == seeds[0]
              and float(c.get("attainment") or 0.0) < ATTAIN_TARGET]
    if not failed:
        return None
    low = min(failed, key=lambda c: float(c["offered_rps"]))
    ttft, tpot = (float(low.get(k) or 0.0) for k in ("ttft_miss", "tpot_miss"))
    return "prefill" if ttft >= tpot else "decode"


def measured(plan: dict[str, Any]) -> Correction:
    """What one service's closed loop measured (:class:`Correction`).

    Every island kind the loop saturated gets its measured / planned capacity.  If the
    SLO held only below saturation -- at a fraction r of it -- the phase whose ceiling
    broke first (TTFT: prefill, TPOT: decode) gets r, for every island of the service in
    that phase, measured or not: the operating point puts every island of a phase at
    its SLO's edge (a decode island's batch is the largest whose step meets TPOT), so
    bursts push any of them over, whatever its type -- charging only the kinds seen
    fail would send the next solve to kinds that fail the same way.

    A service served by colocated islands alone is the exception: its loop ran no
    dedicated prefill or decode island, so what broke is evidence against colocation
    (long prompts stalling the decode steps they share a batch with), and the factor
    goes to the ``both`` role only.  Charging both phases instead charged every kind
    alike, and the next solve bought more of the same colocated islands."""
    loop = plan["summary"].get("closed_loop") or {}
    kinds = {str(k): float(v) for k, v in (loop.get("capacity_factors") or {}).items()}
    head = float(loop.get("headline_requests_per_s") or 0.0)
    sat = float(loop.get("saturation_requests_per_s") or 0.0)
    ratio = max(min(head / sat, 1.0), NO_LOAD_FACTOR) if sat > 0 and head > 0 \
        else NO_LOAD_FACTOR
    phase = _limiting_phase(loop) if ratio < 1.0 else None
    roles = {str(i.get("role")) for i in plan.get("islands") or []} - {"idle"}
    if ratio < 1.0 and roles == {"both"}:
        return Correction(kinds, {"both": ratio})
    if ratio < 1.0 and phase is None:  # no load held at all: both phases are suspect
        return Correction(kinds, {"prefill": ratio, "decode": ratio})
    return Correction(kinds, {phase: ratio} if phase is not None else {})


def corrections(outcomes: Sequence[Outcome | None]) -> dict[str, Correction]:
    """Every service's :class:`Correction` from the outcomes' closed loops; a kind or a
    phase measured in several of them gets the mean of its figures (a phase measured
    in one outcome only counts 1 for the others, where it held up to saturation)."""
    kinds: dict[str, dict[str, list[float]]] = {}
    phases: dict[str, dict[str, list[float]]] = {}
    seen: dict[str, int] = {}
    for out in outcomes:
        if out is None:
            continue
        for name, plan in out.plans.items():
            c = measured(plan)
            seen[name] = seen.get(name, 0) + 1
            for key, f in c.kinds.items():
                kinds.setdefault(name, {}).setdefault(key, []).append(f)
            for key, f in c.phases.items():
                phases.setdefault(name, {}).setdefault(key, []).append(f)
    return {name: Correction(
        {k: sum(v) / len(v) for k, v in kinds.get(name, {}).items()},
        {k: (sum(v) + (n - len(v))) / n for k, v in phases.get(name, {}).items()})
        for name, n in seen.items()}


def _islands(plan: dict[str, Any]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted((str(i["gpu"]), int(i["size"])) for i in plan.get("islands") or []
                        if i.get("role") != "idle"))


def combine(req: FleetRequest, outs: Sequence[Outcome]) -> Outcome | None:
    """The best fleet made of the services' *measured* layouts: every service takes the
    islands of one of the outcomes (joint or split rounds), their GPUs must fit the
    inventory and its servers together and their cost the budget; with shares, the
    combination with the highest λ = min headline / share, with targets the cheapest
    whose every service holds its target.  Every outcome is one such combination, so
    this is at least the best of them; it is better when one round's islands suit one
    service and another round's another.  Its figures are the closed loops' own, not the
    perf model's: no model error enters the choice.  None when no combination fits."""
    names = [s.name for s in req.fleet.services]
    options: dict[str, list[tuple[Outcome, dict[str, Any]]]] = {n: [] for n in names}
    for out in outs:
        for n in names:
            if not any(_islands(p) == _islands(out.plans[n]) for _, p in options[n]):
                options[n].append((out, out.plans[n]))
    supply = {t.name: t for t in req.space().types}
    share = {s.name: float(s.share or 0.0) for s in req.fleet.services}
    target = {s.name: float(s.target_rps or 0.0) for s in req.fleet.services}
    best: tuple[float, float, tuple] | None = None
    for combo in itertools.product(*(options[n] for n in names)):
        plans = [p for _, p in combo]
        cost = sum(float(p["summary"]["cost_per_hour"]) for p in plans)
        if req.budget is not None and cost > req.budget * (1 + 1e-9):
            continue
        sizes: dict[str, list[int]] = {}
        for p in plans:
            for gpu, g in _islands(p):
                sizes.setdefault(gpu, []).append(g)
        if any(gpu not in supply or not supply[gpu].holds(v) for gpu, v in sizes.items()):
            continue
        heads = [float(p["summary"]["requests_per_s"]) for p in plans]
        if req.targets:
            if any(h < target[n] * (1 - 1e-9) for n, h in zip(names, heads, strict=True)):
                continue
            key = (-cost, 0.0)
        else:
            key = (min(h / share[n] for n, h in zip(names, heads, strict=True)), -cost)
        if best is None or key > best[:2]:
            best = (*key, combo)
    if best is None:
        return None
    chosen = best[2]
    picked = {n: p for n, (_, p) in zip(names, chosen, strict=True)}
    sources = {n: o.label for n, (o, _) in zip(names, chosen, strict=True)}
    layouts = {n: _islands(p) for n, p in picked.items()}
    costs = {n: float(p["summary"]["cost_per_hour"]) for n, p in picked.items()}
    rate = best[0] if not req.targets else max(target.values())
    top = max(target.values()) if req.targets else 1.0
    analytic = min(float(p["summary"].get("analytic_requests_per_s") or 0.0)
                   / (target[n] / top if req.targets else share[n])
                   for n, p in picked.items())
    # its figure on the perf model is the chosen islands' (no MILP solved it)
    sol = FleetSolution(analytic, layouts, costs)
    return Outcome(COMBINED, sol, picked, rate, analytic, sources=sources)


def fleet_band(out: Outcome) -> dict[str, float | None] | None:
    """λ's p10–p90 band: the weakest service's band factors applied to λ (every
    service's capacity must hold for λ to)."""
    bands = [plan_band(p) for p in out.plans.values()]
    if out.rate <= 0 or any(b is None for b in bands):
        return None
    lo = min(float(b["p10_factor"]) for b in bands if b)
    his = [b.get("p90_factor") for b in bands if b]
    hi = min(float(h) for h in his if h is not None) if all(h is not None for h in his) \
        else math.inf
    return {"p10": out.rate * lo, "p90": out.rate * hi if math.isfinite(hi) else None}


__all__ = ["COMBINED", "NO_LOAD_FACTOR", "FleetOutcome", "Outcome", "combine",
           "corrections", "fleet_band", "gpus_of", "measured", "rate_of"]
