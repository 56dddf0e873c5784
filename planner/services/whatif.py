"""What-if studies on a fleet: `planner whatif --fleet FLEET.yaml`.

Every scenario is a fleet planned as ``planner plan --fleet`` plans it (the joint MILP,
the best split, every service through the closed loop, the joint choice of measured
islands), so a scenario's λ or cost is the promise that command would print:

* ``--remove-service NAME``: the fleet without a service (shares renormalised);
  ``--add-service FILE``: with the services of another fleet file (their shares, below 1
  in total, are their part of the new fleet; the others are scaled to fill the rest);
* ``--share NAME=X``: a service's share set to X, the others' scaled to fill 1 - X;
* ``--target NAME=R``: a service's target rate set to R (a fleet of targets);
* ``--price TYPE=F``: a GPU type's price times F; ``--add TYPE:COUNT[:PRICE]`` and
  ``--remove TYPE``: a type added to, or removed from, the inventory;
* ``--budget-sweep B1,B2,..``: the fleet at other budgets;
* ``--marginal X``: where the next X $/h should go -- for every service, its islands
  re-planned alone with X $/h more (from the GPUs the base fleet leaves) and closed in
  simulation: what it gains, and the fleet's λ if the money went there.

Scenario parsing is pure (:func:`scenarios`); :func:`run_study` plans them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from perfmodel.errors import at, check_number
from planner.closed_plan import close_one
from planner.core.errors import NoPlanError, PlannerError
from planner.fleet.inventory import Inventory, inventory_from_dict
from planner.services.outcome import FleetOutcome, gpus_of, rate_of
from planner.services.promise import close_fleet
from planner.services.solve import FleetRequest, ServiceModel, solve_fleet
from planner.services.spec import FleetSpec, Service

Say = Callable[[str], None]
#: The most scenarios one study plans (each is a whole fleet plan, about a minute).
MAX_SCENARIOS = 24


@dataclass(frozen=True)
class Scenario:
    """One fleet to plan: a label and its request."""

    label: str
    kind: str  # "base" | "service" | "share" | "target" | "price" | "type" | "budget"
    request: FleetRequest


@dataclass
class ScenarioResult:
    scenario: Scenario
    outcome: FleetOutcome | None
    error: str = ""

    def row(self) -> dict[str, Any]:
        req = self.scenario.request
        out: dict[str, Any] = {"scenario": self.scenario.label, "kind": self.scenario.kind,
                               "budget": req.budget,
                               "services": [s.name for s in req.fleet.services]}
        if self.outcome is None:
            return {**out, "lambda_rps": None, "cost_per_hour": None, "gpus": {},
                    "service_rps": {}, "error": self.error}
        ans = self.outcome.answer
        return {**out, "lambda_rps": None if req.targets else ans.rate,
                "targets_met": bool(req.targets and ans.rate > 0),
                "cost_per_hour": ans.cost_per_hour, "gpus": ans.gpus(),
                "service_rps": {n: rate_of(req, ans, n) for n in ans.plans},
                "answer_from": ans.label, "error": ""}


@dataclass
class MarginalOption:
    service: str
    extra_per_hour: float
    headline_before: float
    headline_after: float
    lambda_after: float | None  # None with targets (no λ)
    cost_added: float
    gpus_added: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _renormalised(services: Sequence[Service], fixed: dict[str, float]) -> tuple[Service, ...]:
    """Shares with ``fixed`` ones set and the others scaled to fill the rest."""
    rest = 1.0 - sum(fixed.values())
    free = sum(float(s.share or 0.0) for s in services if s.name not in fixed)
    out = []
    for s in services:
        if s.name in fixed:
            out.append(replace(s, share=fixed[s.name]))
        else:
            out.append(replace(s, share=float(s.share or 0.0) * rest / free))
    return tuple(out)


def _named(fleet: FleetSpec, name: str, flag: str) -> Service:
    try:
        return fleet.service(name)
    except PlannerError:
        raise PlannerError(f"{flag} {name}: the fleet {fleet.name!r} has no service {name!r} "
                           f"(it has {', '.join(s.name for s in fleet.services)})") from None


def _pair(text: str, flag: str) -> tuple[str, float]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise PlannerError(f"{flag}: expected NAME=VALUE, got {text!r}")
    return name.strip(), check_number(value, at(flag), gt=0, parse_text=True)


def _with_type(inv: Inventory, text: str) -> Inventory:
    parts = text.split(":")
    if len(parts) not in (2, 3) or not parts[0].strip():
        raise PlannerError(f"--add: expected TYPE:COUNT[:PRICE] (e.g. B200:32:6.0), got "
                           f"{text!r}")
    item: dict[str, Any] = {"type": parts[0].strip(),
                            "count": check_number(parts[1], at("--add"), integer=True, gt=0,
                                                  parse_text=True)}
    if len(parts) == 3:
        item["price_per_hour"] = check_number(parts[2], at("--add"), gt=0, parse_text=True)
    data = inv.to_dict()
    if any(str(g["type"]).lower() == item["type"].lower() for g in data["gpus"]):
        raise PlannerError(f"--add {text}: the inventory already lists {item['type']}")
    data["gpus"] = [*data["gpus"], item]
    return inventory_from_dict(data, "--add")


def _added(fleet: FleetSpec, path: str) -> tuple[Service, ...]:
    """``fleet``'s services with those of the fleet file ``path`` added: with shares,
    the added services keep theirs and the fleet's are scaled to fill the rest."""
    from planner.services.spec import load_fleet

    extra = load_fleet(path, partial=True)
    if extra.mode != fleet.mode:
        raise PlannerError(f"--add-service {path}: its services have "
                           f"{'targets' if extra.mode == 'targets' else 'shares'}; the "
                           f"fleet's have {fleet.mode}")
    clash = sorted({s.name for s in extra.services} & {s.name for s in fleet.services})
    if clash:
        raise PlannerError(f"--add-service {path}: service(s) {clash} already in the fleet")
    if fleet.mode == "targets":
        return (*fleet.services, *extra.services)
    added = sum(float(s.share or 0.0) for s in extra.services)
    if not added < 1.0:
        raise PlannerError(f"--add-service {path}: its shares sum to {added:g}; give the "
                           "added services' part of the new fleet (shares summing below 1)")
    return _renormalised((*fleet.services, *extra.services),
                         {s.name: float(s.share or 0.0) for s in extra.services})


def scenarios(base: FleetRequest, *, remove_service: Sequence[str] = (),
              add_service: Sequence[str] = (),
              share: Sequence[str] = (), target: Sequence[str] = (),
              price: Sequence[str] = (), add: Sequence[str] = (),
              remove: Sequence[str] = (), budgets: Sequence[float] = ()) -> list[Scenario]:
    """The study's scenarios, the base first; every flag's mistake is one line naming
    the flag (exit 2), before anything is planned."""
    fleet, inv = base.fleet, base.inventory
    out = [Scenario("base", "base", base)]
    for name in remove_service:
        svc = _named(fleet, name, "--remove-service")
        left = tuple(s for s in fleet.services if s.name != svc.name)
        if not left:
            raise PlannerError(f"--remove-service {name}: the fleet would have no service")
        if fleet.mode == "shares":
            left = _renormalised(left, {})
        out.append(Scenario(f"without {svc.name}", "service",
                            replace(base, fleet=replace(fleet, services=left))))
    for path in add_service:
        services = _added(fleet, path)
        names = ", ".join(s.name for s in services[len(fleet.services):])
        out.append(Scenario(f"with {names}", "service",
                            replace(base, fleet=replace(fleet, services=services))))
    for text in share:
        if fleet.mode != "shares":
            raise PlannerError("--share: the fleet's services have targets; use --target")
        name, value = _pair(text, "--share")
        svc = _named(fleet, name, "--share")
        if not value < 1.0:
            raise PlannerError(f"--share {text}: a share must be below 1 (the other services "
                               "keep some traffic)")
        services = _renormalised(fleet.services, {svc.name: value})
        out.append(Scenario(f"{svc.name} share {value:g}", "share",
                            replace(base, fleet=replace(fleet, services=services))))
    for text in target:
        if fleet.mode != "targets":
            raise PlannerError("--target: the fleet's services have shares; use --share")
        name, value = _pair(text, "--target")
        svc = _named(fleet, name, "--target")
        services = tuple(replace(s, target_rps=value) if s.name == svc.name else s
                         for s in fleet.services)
        out.append(Scenario(f"{svc.name} target {value:g} req/s", "target",
                            replace(base, fleet=replace(fleet, services=services))))
    for text in price:  # TYPE=0.8x,1.2x: one scenario per factor
        name, sep, values = text.partition("=")
        entry = next((e for e in inv.entries if e.name.lower() == name.strip().lower()), None)
        if not sep or entry is None:
            raise PlannerError(f"--price {text}: expected TYPE=FACTOR[,FACTOR...] with a type "
                               f"of the inventory ({', '.join(e.name for e in inv.entries)})")
        for v in values.split(","):
            factor = check_number(v.strip().rstrip("xX"), at("--price"), gt=0, le=100,
                                  parse_text=True)
            out.append(Scenario(f"{entry.name} price x{factor:g}", "price",
                                replace(base, inventory=inv.with_price(
                                    entry.name, entry.price_per_hour * factor))))
    for text in add:
        out.append(Scenario(f"add {text}", "type", replace(base, inventory=_with_type(inv, text))))
    for name in remove:
        entry = next((e for e in inv.entries if e.name.lower() == name.lower()), None)
        if entry is None:
            raise PlannerError(f"--remove {name}: the inventory has no {name}")
        if len(inv.entries) == 1:
            raise PlannerError(f"--remove {name}: the inventory would have no GPU type")
        out.append(Scenario(f"without {entry.name}", "type",
                            replace(base, inventory=inv.without(entry.name))))
    for b in budgets:
        if fleet.mode != "shares":
            raise PlannerError("--budget-sweep: the fleet's services have targets, so no "
                               "budget applies")
        out.append(Scenario(f"budget ${b:,.0f}/h", "budget", replace(base, budget=float(b))))
    if len(out) > MAX_SCENARIOS:
        raise PlannerError(f"the study has {len(out)} scenarios; at most {MAX_SCENARIOS} "
                           "(each is a whole fleet plan)")
    return out


def plan_scenario(sc: Scenario, *, seed: int, router: str, say: Say) -> ScenarioResult:
    """One scenario planned as ``planner plan --fleet`` plans it; a fleet no plan
    serves is a row saying why, not a failed study."""
    try:
        models = [ServiceModel.build(sc.request, s) for s in sc.request.fleet.services]
        return ScenarioResult(sc, close_fleet(sc.request, models, seed=seed, router=router,
                                              say=say))
    except NoPlanError as err:
        return ScenarioResult(sc, None, str(err))


def marginal(req: FleetRequest, base: FleetOutcome, extra: float, *, seed: int,
             router: str, say: Say) -> list[MarginalOption]:
    """Where the next ``extra`` $/h should go (module docstring): one option per service,
    each that service alone with its cost + ``extra`` on the GPUs the others leave,
    maximising its rate, closed in simulation."""
    ans = base.answer
    used = {n: gpus_of(p) for n, p in ans.plans.items()}
    spent = ans.costs()
    heads = ans.headlines()
    share = {s.name: float(s.share or 0.0) for s in req.fleet.services}
    options = []
    for svc in req.fleet.services:
        name = svc.name
        others: dict[str, int] = {}
        for n, counts in used.items():
            if n != name:
                for g, k in counts.items():
                    others[g] = others.get(g, 0) + k
        inv = req.inventory
        for e in inv.entries:
            inv = inv.with_count(e.name, max(0, e.count - others.get(e.name, 0)))
        money = spent[name] + extra
        solo = replace(req, inventory=inv, budget=money,
                       fleet=replace(req.fleet, services=(replace(svc, share=1.0,
                                                                  target_rps=None),)))
        model = ServiceModel.build(solo, solo.fleet.services[0])
        say(f"marginal: {extra:g} $/h more for {name}")
        after, cost = heads[name], spent[name]
        gpus: dict[str, int] = {}
        try:  # the service alone: the most its money buys
            sol = solve_fleet(solo, [model])
        except NoPlanError:
            sol = None
        d = None if sol is None else close_one(
            model.plan(sol.layouts[name], sol.costs[name]), seed=seed, router=router)
        if d is not None and float(d["summary"]["requests_per_s"]) > after:
            after = float(d["summary"]["requests_per_s"])
            cost = float(d["summary"]["cost_per_hour"])
            now = gpus_of(d)
            gpus = {g: now.get(g, 0) - used[name].get(g, 0)
                    for g in sorted(set(now) | set(used[name]))
                    if now.get(g, 0) != used[name].get(g, 0)}
        rates = {n: (after if n == name else heads[n]) for n in heads}
        lam = None if req.targets else min(rates[n] / share[n] for n in rates)
        options.append(MarginalOption(name, extra, heads[name], after, lam,
                                      cost - spent[name], gpus))
    return options


def run_study(scs: Sequence[Scenario], *, seed: int, router: str, extra: float | None,
              say: Say) -> tuple[list[ScenarioResult], list[MarginalOption]]:
    """Every scenario, then (``extra``) the marginal options on the base."""
    results = []
    for k, sc in enumerate(scs):
        say(f"scenario {k + 1} of {len(scs)}: {sc.label}")

        def within(msg: str, label: str = sc.label) -> None:
            say(f"  {label}: {msg}")
        results.append(plan_scenario(sc, seed=seed, router=router, say=within))
    options: list[MarginalOption] = []
    if extra is not None and results[0].outcome is not None:
        options = marginal(scs[0].request, results[0].outcome, extra, seed=seed,
                           router=router, say=say)
    return results, options


def study_dict(results: Sequence[ScenarioResult], options: Sequence[MarginalOption], *,
               fleet_file: str, seed: int, router: str) -> dict[str, Any]:
    """whatif.json of a fleet study."""
    base = results[0].scenario.request
    rows = [r.row() for r in results]
    b = rows[0]
    for r in rows:  # against the base: λ ratio (shares) or cost ratio (targets)
        key = "cost_per_hour" if base.targets else "lambda_rps"
        r["vs_base"] = (r[key] / b[key] if r.get(key) and b.get(key) else None)
    best = max(options, key=lambda o: (o.lambda_after or 0.0,
                                       o.headline_after - o.headline_before),
               default=None) if not base.targets else None
    return {"schema": "fleet-whatif/1", "fleet_file": fleet_file, "seed": seed,
            "router": router, "fleet": base.fleet.to_dict(),
            "inventory": base.inventory.to_dict(), "budget": base.budget,
            "scenarios": rows, "marginal": [o.to_dict() for o in options],
            "marginal_best": None if best is None else best.service}


__all__ = ["MAX_SCENARIOS", "MarginalOption", "Scenario", "ScenarioResult", "marginal",
           "plan_scenario", "run_study", "scenarios", "study_dict"]
