"""Expand a :class:`WhatIfSpec` into scenarios: (workload, GPU supply, budget) triples.

Each scenario is one planning problem: ``planner plan`` on the inventory whose GPUs
are ``supply``, within ``budget`` $/h (planner.whatif.request builds its request).

Availability (docs/whatif.md):

* ``inventory`` -- each type offers the inventory's count, whatever the budget; a budget
  above the inventory's full cost buys nothing more.
* ``unlimited`` -- market availability: each type offers as many GPUs as the budget
  alone could buy, ``floor(budget / price)``.  This is the convention of ``planner
  plan``'s homogeneous baselines (thesis Table 5.1 (c): 128 H200 for 512 $/h).

Studies and their options:

* ``base`` -- the inventory's types mixed ("mix") at the base budget;
* ``budget`` -- for every budget of the sweep: "mix", and each type alone ("<T> only")
  at the same $/h;
* ``equal_cost`` -- at the base budget: "mix" vs each "<T> only";
* ``price`` -- one type's price changed (factor or absolute), "mix";
* ``add`` / ``remove`` -- one type added (with its count and price) or removed, "mix";
* ``workload`` -- another workload or a mixture of workloads, "mix".

Options of one study share the budget and availability, so the mix can always choose
what any single type chooses: its feasible set contains theirs (hence "mix" >= "<T>
only" at equal cost, and monotonicity in budget, price and removal; tests check it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from planner.fleet.inventory import Inventory
from planner.outer.protocol import TypeSupply, affordable
from planner.whatif.spec import WhatIfSpec

MIX = "mix"


def only(gpu: str) -> str:
    return f"{gpu} only"


@dataclass(frozen=True)
class Scenario:
    study: str  # base | budget | equal_cost | price | add | remove | workload | marginal
    name: str  # what changes, for people: "budget 256 $/h", "H200 at 3.20 $/h (0.8x)"
    option: str  # "mix" or "<type> only"
    workload: str  # label of the workload (spec.workload, or a workload-study label)
    budget: float
    supply: tuple[TypeSupply, ...]
    params: Mapping[str, Any] = field(default_factory=dict)
    # (workload name or path, request share) pairs; the label alone may be ambiguous
    components: tuple[tuple[str, float], ...] = ()

    @property
    def full_cost(self) -> float:
        return sum(t.available * t.price_per_hour for t in self.supply)

    def key(self) -> tuple:
        """Scenarios with equal keys are the same optimisation problem: types without
        GPUs are dropped, and a budget above the supply's full cost is the full cost
        (every layout within the supply already costs at most that)."""
        types = tuple(sorted((t.name, t.available, t.price_per_hour, t.min_island,
                              t.gpus_per_node)
                             for t in self.supply if t.available > 0))
        budget = min(self.budget, self.full_cost)
        return (self.components or self.workload, types, round(budget, 9))


def supply(inventory: Inventory, budget: float, availability: str,
           names: tuple[str, ...] | None = None) -> tuple[TypeSupply, ...]:
    """The types ``names`` (default: all) of ``inventory`` as the search's supply."""
    out = []
    for e in inventory.entries:
        if names is not None and e.name not in names:
            continue
        count = e.count
        if availability == "unlimited":
            count = affordable(budget, e.price_per_hour)
        # whole servers of the inventory's size (planner.fleet.servers)
        out.append(TypeSupply(e.name, count, e.price_per_hour, e.min_island, e.node))
    return tuple(out)


def _options(spec: WhatIfSpec, study: str, name: str, budget: float,
             params: Mapping[str, Any]) -> list[Scenario]:
    inv, avail = spec.inventory, spec.availability
    base = ((spec.workload, 1.0),)
    out = [Scenario(study, name, MIX, spec.workload, budget, supply(inv, budget, avail),
                    params, base)]
    if len(inv.entries) > 1:
        out += [Scenario(study, name, only(e.name), spec.workload, budget,
                         supply(inv, budget, avail, (e.name,)), params, base)
                for e in inv.entries]
    return out


def base_scenario(spec: WhatIfSpec) -> Scenario:
    b = spec.base_budget
    return Scenario("base", f"base {b:g} $/h", MIX, spec.workload, b,
                    supply(spec.inventory, b, spec.availability), {},
                    ((spec.workload, 1.0),))


def expand(spec: WhatIfSpec) -> list[Scenario]:
    """All scenarios of the spec's studies, the base first (marginal ones come later:
    in unlimited mode they depend on the base optimum, see planner.whatif.marginal)."""
    inv, avail, b0 = spec.inventory, spec.availability, spec.base_budget
    base = ((spec.workload, 1.0),)
    out = [base_scenario(spec)]
    for b in spec.budget_sweep:
        out += _options(spec, "budget", f"budget {b:g} $/h", b, {"budget": b})
    if spec.equal_cost:
        out += _options(spec, "equal_cost", f"equal cost {b0:g} $/h", b0, {"budget": b0})
    for sweep in spec.prices:
        for price, factor in zip(sweep.prices, sweep.factors, strict=True):
            changed = inv.with_price(sweep.gpu, price)
            out.append(Scenario(
                "price", f"{sweep.gpu} at {price:.2f} $/h ({factor:.2f}x)", MIX,
                spec.workload, b0, supply(changed, b0, avail),
                {"gpu": sweep.gpu, "price": price, "factor": factor}, base))
    for entry in spec.add:
        grown = replace(inv, entries=(*inv.entries, entry))
        what = (f"+ {entry.name} at {entry.price_per_hour:.2f} $/h" if avail == "unlimited"
                else f"+ {entry.count} {entry.name} at {entry.price_per_hour:.2f} $/h")
        out.append(Scenario("add", what, MIX, spec.workload, b0, supply(grown, b0, avail),
                            {"gpu": entry.name, "count": entry.count,
                             "price": entry.price_per_hour}, base))
    for gpu in spec.remove:
        out.append(Scenario("remove", f"without {gpu}", MIX, spec.workload, b0,
                            supply(inv.without(gpu), b0, avail), {"gpu": gpu}, base))
    for mix in spec.workloads:
        out.append(Scenario("workload", f"workload {mix.label}", MIX, mix.label, b0,
                            supply(inv, b0, avail),
                            {"components": [list(c) for c in mix.components]},
                            mix.components))
    return out
