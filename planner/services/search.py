"""BO over joint layouts: a fleet where the exact MILP does not apply.

The outer searches (:mod:`planner.outer`) search layouts of GPU types against a
black-box :class:`~planner.outer.protocol.LayoutObjective`.  A fleet's layout is one
layout per service; it becomes one layout of *pseudo-types* ``"service::GPU"`` -- each
GPU type once per service, at the type's price and availability -- so every registered
search (divider, direct, random) searches fleets unchanged:

* the budget row holds as is: a pseudo-type costs its GPU's price;
* what the services share -- a type's GPUs and its servers -- the objective checks on
  the layout as a whole (:meth:`JointObjective.__call__`): a layout whose services
  together take more of a type than there is, or do not pack on its servers, is
  infeasible (value 0), as an over-budget one is;
* the value is the fleet's λ on the perf model: min over services of its evaluator's
  rate / its weight (share, or target / the largest target);
* where the island tables are few enough to tabulate, the joint MILP's LP relaxation,
  rounded, is the BO's warm start (:meth:`JointObjective.warm_start`), as the single
  model's LP relaxation is.

The exact MILP (:mod:`planner.outer.joint`) is the default; ``--search divider`` (or
``auto`` when the services' island tables are too many to tabulate) lands here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from planner.context.evaluate import LayoutEvaluator
from planner.core.errors import NoPlanError
from planner.outer.columns import candidate_sizes
from planner.outer.joint import solve_joint
from planner.outer.protocol import Layout, Score, SearchSpace, layout_cost
from planner.outer.registry import OUTER_SEARCHES, make_search
from planner.services.solve import Correction, FleetRequest, FleetSolution, ServiceModel

SEP = "::"


def pseudo_space(space: SearchSpace, names: Sequence[str]) -> SearchSpace:
    """Every type of ``space`` once per service, named ``service::type``."""
    return replace(space, types=tuple(replace(t, name=f"{n}{SEP}{t.name}")
                                      for n in names for t in space.types))


def split_layout(layout: Layout, names: Sequence[str]) -> dict[str, Layout]:
    """A pseudo-type layout as one real layout per service."""
    out: dict[str, list[tuple[str, int]]] = {n: [] for n in names}
    for name, size in layout:
        svc, _, gpu = str(name).partition(SEP)
        out[svc].append((gpu, int(size)))
    return {n: tuple(sorted(v)) for n, v in out.items()}


class JointObjective:
    """The fleet's λ of a pseudo-type layout (module docstring), on the perf model with
    each service's ``correction`` (what the closed loop measured) applied."""

    def __init__(self, req: FleetRequest, models: Sequence[ServiceModel],
                 weights: Mapping[str, float],
                 correction: Mapping[str, Correction] | None = None) -> None:
        self.space = req.space()
        self.names = [m.service.name for m in models]
        self.weights = dict(weights)
        self.prices = {t.name: t.price_per_hour for t in self.space.types}
        self.supply = {t.name: t for t in self.space.types}
        self.evaluators: dict[str, LayoutEvaluator] = {}
        self.models, self.correction, self.request = list(models), correction, req
        sizes = candidate_sizes(self.space)
        for m in models:
            fix = (correction or {}).get(m.service.name)
            factors = {} if fix is None else {
                f"{gpu}:{g}:{role}": fix.factor(gpu, g, role)
                for gpu, options in sizes.items() for g in options
                for role in ("prefill", "decode", "both")}
            self.evaluators[m.service.name] = LayoutEvaluator(
                m.context, m.evaluator.solver, objective="sustained", range_rate="mix",
                capacity_factors=factors) if factors else m.evaluator

    def warm_start(self, space: SearchSpace) -> Layout:
        """The joint MILP's LP relaxation, rounded (planner.outer.joint, ``relax``), as a
        pseudo-type layout: the BO's warm start when the services' island tables are few
        enough to tabulate (else none)."""
        from planner.plan import EXACT_TABLE_LIMIT

        real = self.space
        if len(self.names) * sum(len(v) for v in candidate_sizes(real).values()) \
                > EXACT_TABLE_LIMIT:
            return ()
        cols = [m.columns(real, self.weights[m.service.name],
                          (self.correction or {}).get(m.service.name)) for m in self.models]
        res = solve_joint(real, cols, target=self.request.targets, relax=True,
                          time_limit=self.request.exact_time_limit)
        return tuple(sorted((f"{n}{SEP}{gpu}", g) for n, sol in zip(self.names, res.services,
                                                                     strict=True)
                            for gpu, g in sol.layout))

    def __call__(self, layout: Layout) -> Score:
        per = split_layout(layout, self.names)
        cost = sum(layout_cost(lay, self.prices) for lay in per.values())
        together: dict[str, list[int]] = {}
        for lay in per.values():
            for gpu, g in lay:
                together.setdefault(gpu, []).append(g)
        if any(not self.supply[gpu].holds(v) for gpu, v in together.items()):
            return Score(0.0, cost, False)
        lam = float("inf")
        for name in self.names:
            if not per[name]:
                return Score(0.0, cost, False)
            score = self.evaluators[name](per[name])
            if not score.feasible or not score.value > 0:
                return Score(0.0, cost, False)
            lam = min(lam, float(score.value) / self.weights[name])
        return Score(lam, cost, True)


def search_fleet(req: FleetRequest, models: Sequence[ServiceModel], search: str,
                 weights: Mapping[str, float], *, seed: int,
                 options: Mapping[str, int] | None = None,
                 correction: Mapping[str, Correction] | None = None) -> FleetSolution:
    """The fleet's layout by the outer search ``search`` over pseudo-types."""
    import inspect

    names = [m.service.name for m in models]
    space = pseudo_space(req.space(), names)
    objective = JointObjective(req, models, weights, correction)
    # the options this search takes (--iterations and --batch-size are the BO's)
    search_cls: Any = OUTER_SEARCHES.lookup(search)  # a class: its __init__
    known = set(inspect.signature(search_cls.__init__).parameters)
    kept = {k: v for k, v in (options or {}).items() if k in known}
    found = make_search(search, **kept).search(space, objective, seed=seed)
    if found.best_layout is None or found.best_score is None or \
            not found.best_score.value > 0:
        raise NoPlanError(f"--search {search} found no fleet layout serving every service "
                          f"within the inventory and budget ({len(found.history)} layouts "
                          "tried); try --search exact or more --iterations")
    per = split_layout(found.best_layout, names)
    costs = {n: layout_cost(lay, objective.prices) for n, lay in per.items()}
    return FleetSolution(float(found.best_score.value), per, costs)


__all__ = ["SEP", "JointObjective", "pseudo_space", "search_fleet", "split_layout"]
