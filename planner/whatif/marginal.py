"""The marginal-value answer: what is the next X $/h best spent on?

Starting from the base scenario (budget B, supply S), each option spends X more $/h:

* "X $/h more of type t" -- budget B + X and floor(X / price_t) more GPUs of t
  available.  Under ``unlimited`` (market) availability they come on top of the fleet
  of the base optimum (the GPUs one would own after buying it), so the option is a real
  incremental purchase rather than a re-optimisation of the whole fleet.  Under
  ``inventory`` availability the inventory's counts are what is available, so these
  options would buy GPUs the inventory does not list: they are **not offered** (and
  listed as excluded) unless the spec says ``marginal_beyond_inventory: true``, in which
  case they are added to the inventory's counts and labelled as beyond them;
* "X $/h more with the current availability" -- budget B + X, no new GPUs; offered
  under ``inventory`` availability when the budget binds (the inventory costs more than
  B), i.e. when GPUs already available sit idle for lack of budget.

Every option is re-planned as ``planner plan`` plans it (the whole layout, not just the
added GPUs; its capacity is the one ``planner plan`` promises, planner.whatif.solve),
so the gain dT = T(option) - T(base) is the best use of the option.  Options are ranked by
dT / X (requests/s per extra $/h; the same order as dT since X is shared).  The
"current availability" option's supply is contained in every "more of t" option's, so
those are never worse; when the best gain is within the solver's tolerance of the
current-availability gain, buying nothing new is the answer (the cheaper decision for
the same throughput).  Under ``unlimited`` availability the full re-optimisation at
B + X is reported as a reference (what a buyer starting from scratch would get), not
ranked.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, cast

from planner.outer.protocol import TypeSupply, affordable
from planner.whatif.scenarios import MIX, Scenario, base_scenario, supply

if TYPE_CHECKING:
    from planner.whatif.solve import Outcome
    from planner.whatif.spec import WhatIfSpec

CURRENT = "current availability"


@dataclass(frozen=True)
class MarginalOption:
    label: str  # "50 more H20 (1.00 $/h each)"
    gpu: str | None  # None: the current-availability option / the reference
    added: int  # GPUs made available
    outcome: Outcome
    gain: float  # requests/s over the base

    def per_dollar(self, step: float) -> float:
        return self.gain / step

    def to_dict(self, step: float) -> dict[str, Any]:
        return {"label": self.label, "gpu": self.gpu, "added_gpus": self.added,
                "requests_per_s": self.outcome.requests_per_s,
                "cost_per_hour": self.outcome.cost_per_hour, "gain_requests_per_s": self.gain,
                "gain_per_dollar_per_hour": self.per_dollar(step),
                "status": self.outcome.status, "gpus": self.outcome.gpus}


@dataclass
class MarginalAnswer:
    step: float  # X, $/h
    base: Outcome  # of the base scenario
    options: list[MarginalOption]  # ranked, best first
    tolerance: float  # requests/s below which gains are indistinguishable (solver gaps)
    reference: MarginalOption | None = None
    sentence: str = ""
    # labels of the options not offered because they exceed the inventory's counts
    excluded: list[str] = field(default_factory=list)
    beyond_inventory: bool = False  # the spec allowed options beyond the inventory

    @property
    def best(self) -> MarginalOption | None:
        return self.options[0] if self.options else None

    def to_dict(self) -> dict[str, Any]:
        return {"step_per_hour": self.step, "base_requests_per_s": self.base.requests_per_s,
                "base_cost_per_hour": self.base.cost_per_hour, "tolerance": self.tolerance,
                "options": [o.to_dict(self.step) for o in self.options],
                "reference": None if self.reference is None else
                self.reference.to_dict(self.step),
                "answer": self.sentence, "beyond_inventory": self.beyond_inventory,
                "excluded_beyond_inventory": list(self.excluded)}


Option = tuple[str, str | None, int, Scenario]  # (label, gpu, GPUs added, scenario)


def marginal_scenarios(spec: WhatIfSpec, base: Scenario, owned: Mapping[str, int]
                       ) -> tuple[list[Option], list[str]]:
    """The options to solve, and the labels of those not offered because they would buy
    more GPUs than the inventory lists (see the module docstring).  ``owned`` is the
    base optimum's fleet (used under ``unlimited`` availability only); how many options
    there are depends on the spec alone."""
    # called only for a spec with a marginal study (spec.marginal set)
    step, b0 = float(cast(float, spec.marginal)), spec.base_budget
    b1 = b0 + step
    unlimited = spec.availability == "unlimited"
    if unlimited:
        start = tuple(TypeSupply(e.name, owned.get(e.name, 0), e.price_per_hour, e.min_island,
                                 e.node) for e in spec.inventory.entries)
    else:
        start = base.supply
    out: list[Option] = []
    excluded: list[str] = []
    for t in start:
        n = affordable(step, t.price_per_hour) if t.price_per_hour > 0 else 0
        grown = tuple(replace(u, available=u.available + n) if u.name == t.name else u
                      for u in start)
        if n and not unlimited:
            plain = f"{n} more {t.name}"
            if not spec.marginal_beyond_inventory:
                excluded.append(plain)
                continue
            label = (f"{plain} beyond the inventory's {t.available} "
                     f"({t.price_per_hour:.2f} $/h each)")
        elif n:
            label = f"{n} more {t.name} ({t.price_per_hour:.2f} $/h each)"
        else:
            label = f"no {t.name} ({t.price_per_hour:.2f} $/h each: none fits in {step:g} $/h)"
        out.append((label, t.name, n, Scenario("marginal", f"+{step:g} $/h: {label}", MIX,
                                               base.workload, b1, grown,
                                               {"gpu": t.name, "added": n},
                                               base.components)))
    if not unlimited and base.full_cost > b0 * (1 + 1e-9):
        out.append((f"the {CURRENT} (no new GPUs)", None, 0,
                    Scenario("marginal", f"+{step:g} $/h: {CURRENT}", MIX, base.workload, b1,
                             start, {"gpu": None, "added": 0}, base.components)))
    return out, excluded


def marginal_count(spec: WhatIfSpec) -> int:
    """How many problems the marginal study solves (its options, and the reference under
    ``unlimited`` availability): known before the base is solved."""
    if not spec.marginal:
        return 0
    todo, _ = marginal_scenarios(spec, base_scenario(spec), {})
    return len(todo) + (spec.availability == "unlimited")


def rank(options: list[MarginalOption], tolerance: float) -> list[MarginalOption]:
    """Best first by gain; within ``tolerance`` of the best, no purchase wins."""
    ordered = sorted(options, key=lambda o: (-o.gain, o.added))
    if not ordered:
        return ordered
    top = ordered[0].gain
    free = [o for o in ordered if o.gpu is None and o.gain >= top - tolerance]
    if free:
        ordered.remove(free[0])
        ordered.insert(0, free[0])
    return ordered


def _sentence(answer: MarginalAnswer) -> str:
    x, base = answer.step, answer.base
    best = answer.best
    not_offered = ""
    if answer.excluded:
        not_offered = (f"{', '.join(answer.excluded)} would exceed the inventory's counts "
                       "and {verb} not offered (set studies.marginal_beyond_inventory: "
                       "true or --marginal-beyond-inventory to price them in)")
    if best is None:
        text = (f"Within the inventory's counts the next {x:g} $/h buys nothing: the base "
                f"budget already pays for every GPU the inventory lists "
                f"({base.requests_per_s:.2f} requests/s for {base.cost_per_hour:.2f} $/h)")
        if not_offered:
            text += "; " + not_offered.format(verb="are")
        return text + "."
    if best.gain <= answer.tolerance:
        text = (f"No way of spending the next {x:g} $/h raises throughput measurably over "
                f"{base.requests_per_s:.2f} requests/s (best: {best.label}, "
                f"{best.gain:+.2f} requests/s)")
    else:
        pct = best.gain / base.requests_per_s if base.requests_per_s > 0 else math.inf
        text = (f"The next {x:g} $/h is best spent on {best.label}: "
                f"{base.requests_per_s:.2f} -> {best.outcome.requests_per_s:.2f} requests/s "
                f"({best.gain:+.2f}, {pct:+.1%}), {best.per_dollar(x):.3f} requests/s per "
                "extra $/h")
        if len(answer.options) > 1:
            second = answer.options[1]
            text += f"; runner-up: {second.label} ({second.gain:+.2f} requests/s)"
    if not_offered:
        text += "; " + not_offered.format(verb="were")
    return text + "."


def marginal_answer(spec: WhatIfSpec, solve: Callable[[list[Scenario]], list[Outcome]],
                    base: Outcome) -> MarginalAnswer:
    """Solve every option -- and, under unlimited availability, the from-scratch
    reference -- in one call of ``solve`` (so an executor runs them side by side), and
    rank them."""
    todo, excluded = marginal_scenarios(spec, base.scenario, base.gpus)
    batch = [sc for _, _, _, sc in todo]
    if spec.availability == "unlimited":
        b1 = spec.base_budget + float(cast(float, spec.marginal))
        batch.append(Scenario("marginal", f"+{spec.marginal:g} $/h: re-buy the whole fleet",
                              MIX, base.scenario.workload, b1,
                              supply(spec.inventory, b1, "unlimited"),
                              {"gpu": None, "added": 0, "reference": True},
                              base.scenario.components))
    outs = solve(batch)
    options = [MarginalOption(label, gpu, n, out, out.requests_per_s - base.requests_per_s)
               for (label, gpu, n, _), out in zip(todo, outs, strict=False)]
    o = spec.solver
    # Each solve is within its relative gap of its optimum (mip_gap + prune_tol when
    # solved to optimality, the reported gap when the time limit stopped it), and a
    # corrected capacity within its correction's measured error: gains below that are
    # not distinguishable from 0 or from each other.
    compared = (base, *(y.outcome for y in options))
    gaps = [x.gap for x in compared if math.isfinite(x.gap)]
    errors = [x.correction_error for x in compared if math.isfinite(x.correction_error)]
    rel = max([o.mip_gap + o.prune_tol, *gaps, *errors])
    tol = rel * max(base.requests_per_s,
                    max((x.outcome.requests_per_s for x in options), default=0.0))
    reference = None
    if spec.availability == "unlimited":
        out = outs[-1]
        reference = MarginalOption("the best fleet bought from scratch at "
                                   f"{out.scenario.budget:g} $/h", None, 0, out,
                                   out.requests_per_s - base.requests_per_s)
    answer = MarginalAnswer(float(cast(float, spec.marginal)), base, rank(options, tol),
                            tol, reference, excluded=excluded,
                            beyond_inventory=spec.marginal_beyond_inventory)
    answer.sentence = _sentence(answer)
    return answer
