"""Plan a profile on the perf model: columns, stage 1, stage 2, the baselines.

Every workload stream of the profile is planned like a service of a fleet
(:mod:`planner.services`): its own planning context and range tables over every
candidate island size.  :mod:`planner.schedule.milp` then buys the reserved fleet and
scales each slot; :func:`baselines` prices the same profile (a) on reserved islands
alone, sized for the busiest slot, and (b) on on-demand islands alone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from perfmodel.island import SLO
from planner.core.errors import NoPlanError
from planner.fleet.inventory import Inventory
from planner.outer.columns import candidate_sizes, prune
from planner.outer.protocol import SearchSpace
from planner.schedule.accounting import Bill, account
from planner.schedule.milp import (
    Kind,
    Problem,
    SlotDecision,
    TypeTiers,
    reserve,
    schedule_slots,
)
from planner.services.solve import Correction, FleetRequest, ServiceModel
from planner.services.spec import FleetSpec, Service
from planner.workload.profile import Profile

Say = Callable[[str], None]
#: Load levels of stage 1 (planner.schedule.milp).
LEVELS = 24


@dataclass(frozen=True)
class ScheduleRequest:
    """What ``planner plan --profile`` asks."""

    profile: Profile  # absolute rates
    inventory: Inventory
    model: str
    workload: str  # the one stream's workload when the profile names none
    slo: SLO
    engine: str | None = None
    startup_s: float = 0.0
    ranges: int = 16
    levels: int = LEVELS
    seed: int = 0
    island_granularity: str = "server"
    where: str = "profile"

    def streams(self) -> dict[str, str]:
        return dict(self.profile.workloads) or {self.profile.streams[0]: self.workload}

    def fleet_request(self) -> FleetRequest:
        """The streams as services of a fleet in target mode (each at its busiest
        slot's rate), on an inventory holding every tier's GPUs at once (a slot's
        islands are reserved, on-demand and spot ones together)."""
        peak = self.profile.demand().max(axis=0)
        services = tuple(
            Service(name, self.model, wl, self.slo, self.engine,
                    target_rps=max(float(peak[k]), 1e-6))
            for k, (name, wl) in enumerate(self.streams().items()))
        inv = self.inventory
        for e in inv.entries:
            t = e.tiers
            inv = inv.with_count(e.name, e.count + t.on_demand_max
                                 + (t.spot_max if t.spot is not None else 0))
        return FleetRequest(FleetSpec(self.profile.name, services), inv, None,
                            seed=self.seed, ranges=self.ranges,
                            island_granularity=self.island_granularity, where=self.where)


def type_tiers(inv: Inventory, granularity: str) -> dict[str, TypeTiers]:
    out = {}
    for e in inv.entries:
        t = e.tiers
        caps = (e.count, t.on_demand_max, t.spot_max if t.spot is not None else 0)
        levels = tuple(e.shape.levels()) if granularity == "server" and e.count else ()
        out[e.name] = TypeTiers(e.name, (t.reserved, t.on_demand, t.price("spot")), caps,
                                t.spot_preemption, levels)
    return out


@dataclass
class Columns:
    """The schedule MILP's input built once: every stream's models and kinds."""

    request: ScheduleRequest
    fleet: FleetRequest
    models: list[ServiceModel]
    space: SearchSpace
    corrections: Mapping[str, Correction] = field(default_factory=dict)

    @classmethod
    def build(cls, req: ScheduleRequest) -> Columns:
        fleet = req.fleet_request()
        models = [ServiceModel.build(fleet, s) for s in fleet.fleet.services]
        space = replace(fleet.space(), target_rps=None)
        return cls(req, fleet, models, space)

    def problem(self, demand_scale: np.ndarray | None = None) -> Problem:
        kinds: list[Kind] = []
        probs = []
        sizes = candidate_sizes(self.space)
        for s, m in enumerate(self.models):
            cols = m.columns(self.space, 1.0, self.corrections.get(m.service.name))
            mine, _ = prune(cols.tables, sizes, tol=1e-9, both=cols.both)
            active = np.flatnonzero(np.asarray(cols.prob) > 0)
            probs.append(np.asarray(cols.prob, float)[active])
            kinds += [Kind(s, c.gpu, c.size, c.role, np.asarray(c.rps)[active])
                      for c in mine]
        if not kinds:
            raise NoPlanError("no island of any type serves the model at this SLO")
        demand = self.request.profile.demand()
        if demand_scale is not None:
            demand = demand * demand_scale[:, None]
        return Problem(tuple(kinds), type_tiers(self.request.inventory,
                                                self.request.island_granularity),
                       tuple(probs), demand, self.request.profile.hours,
                       self.request.startup_s / 3600.0)


@dataclass
class Schedule:
    """A reserved fleet and every slot's additions, with the bill."""

    label: str
    problem: Problem
    reserved: np.ndarray
    slots: list[SlotDecision]
    bill: Bill
    stage1: float  # stage 1's objective ($ of the period)
    seconds: float
    #: the baselines priced on the same problem (:func:`best_schedule`); None: not priced
    baselines: dict[str, Schedule | None] | None = None


#: Tier switches of the plan and the two baselines.
ALL, RESERVED_ONLY, ON_DEMAND_ONLY = (True, True, True), (True, False, False), \
    (False, True, False)


def plan_schedule(p: Problem, *, allow: Sequence[bool] = ALL, levels: int = LEVELS,
                  label: str = "schedule", say: Say | None = None) -> Schedule | None:
    """Stage 1 then stage 2 on ``p``; None when the tiers allowed cannot serve it."""
    import time

    t0 = time.perf_counter()
    speak = say or (lambda _m: None)
    got = reserve(p, levels=levels, allow=allow)
    if got is None:
        return None
    speak(f"{label}: reserved fleet chosen ({int(got.reserved.sum())} island(s), stage 1 "
          f"{got.seconds:.1f} s); scaling {len(p.hours)} slot(s)")
    reserved = got.reserved
    slots = schedule_slots(p, reserved, allow=allow)
    if slots is None:
        return None
    bill = account(p, reserved, slots)
    for _ in range(REBALANCE_ROUNDS if allow[0] and (allow[1] or allow[2]) else 0):
        slots = bridge(p, slots)
        more = rebalance(p, reserved, slots)
        if more is None:
            break
        again = schedule_slots(p, more, allow=allow)
        if again is None:
            break
        again = bridge(p, again)
        cost = account(p, more, again)
        if cost.total >= bill.total - 1e-9:
            break
        speak(f"{label}: {int(more.sum() - reserved.sum())} on-demand island(s) moved "
              f"to reserved: ${bill.total:,.0f} -> ${cost.total:,.0f} for the period")
        reserved, slots, bill = more, again, cost
    slots = bridge(p, slots)
    bill = account(p, reserved, slots)
    return Schedule(label, p, reserved, slots, bill, got.objective,
                    time.perf_counter() - t0)


#: Rounds of :func:`rebalance` after stage 2 (each is a stage-2 pass).
REBALANCE_ROUNDS = 2


def bridge(p: Problem, slots: Sequence[SlotDecision]) -> list[SlotDecision]:
    """Rented islands kept up through a gap shorter than the start-up lag.

    Stage 2 decides slot by slot, so it stops an island the next slot does not need even
    when a later slot needs it again and restarting costs more than idling through: an
    island stopped for a gap of ``G`` hours and restarted pays ``lag`` hours of rent,
    kept up it pays ``G``.  For every kind and tier, every level ``k`` (the k-th island)
    and every gap between the slots where at least ``k`` run (the period wraps), the gap
    is filled when ``G < lag`` and the type's cap allows it in every slot of the gap --
    exact for each such island, given the rest of the schedule; capacity only grows."""
    if p.lag_h <= 0:
        return list(slots)
    n_t = len(slots)
    counts = {1: np.array([d.on_demand for d in slots]),
              2: np.array([d.spot for d in slots])}  # (T, C)
    sizes = p.gpus()
    for tier, n in counts.items():
        caps = {name: t.caps[tier] for name, t in p.types.items()}
        for c, k in enumerate(p.kinds):
            for level in range(1, int(n[:, c].max(initial=0)) + 1):
                up = n[:, c] >= level
                if up.all() or not up.any():
                    continue
                t = int(np.argmax(up))  # walk the cycle from a slot where it runs
                for step in range(1, n_t + 1):
                    u = (t + step) % n_t
                    if up[u] or not up[(u - 1) % n_t]:
                        continue
                    gap: list[int] = []  # the slots from u until it runs again
                    while not up[(u + len(gap)) % n_t]:
                        gap.append((u + len(gap)) % n_t)
                    if float(p.hours[gap].sum()) >= p.lag_h:
                        continue
                    used = [sum(sizes[j] * n[g, j] for j, kj in enumerate(p.kinds)
                                if kj.gpu == k.gpu) for g in gap]
                    if all(x + sizes[c] <= caps[k.gpu] for x in used):
                        for g in gap:
                            n[g, c] += 1
                        up = n[:, c] >= level
    return [SlotDecision(counts[1][t], counts[2][t], slots[t].load) for t in range(n_t)]


def rebalance(p: Problem, reserved: np.ndarray, slots: Sequence[SlotDecision]
              ) -> np.ndarray | None:
    """Reserved islands raised where stage 2 rents the same kind on demand long enough
    to pay for reserving it: the k-th on-demand island of kind c is up
    ``sum_t h_t [o_ct >= k]`` hours; reserving it instead costs ``r_c H`` and saves its
    rent ``a_c`` per such hour (its starts too, not counted: the rule errs on renting).
    Stage 1 misses these because it relaxes the per-slot islands to fractions, which a
    reserved island undercuts less often than a whole one.  None when nothing pays.
    The caps of the reservable servers are respected (the type's GPUs)."""
    od = np.array([d.on_demand for d in slots])  # (T, C)
    res_price, od_price = p.price(0), p.price(1)
    more = reserved.copy()
    used = {name: 0 for name in p.types}
    for c, k in enumerate(p.kinds):
        used[k.gpu] += int(reserved[c]) * k.size
    gain = []
    for c, k in enumerate(p.kinds):
        for n in range(1, int(od[:, c].max(initial=0)) + 1):
            hours = float(p.hours[od[:, c] >= n].sum())
            saving = od_price[c] * hours - res_price[c] * p.period_hours
            if saving > 0:
                gain.append((saving / k.size, c))
    for _, c in sorted(gain, reverse=True):
        k = p.kinds[c]
        if used[k.gpu] + k.size <= p.types[k.gpu].caps[0]:
            more[c] += 1
            used[k.gpu] += k.size
    return more if (more != reserved).any() else None


def best_schedule(p: Problem, *, levels: int = LEVELS, say: Say | None = None
                  ) -> Schedule | None:
    """The schedule of :func:`plan_schedule`, or a baseline when one is cheaper: each
    baseline is a feasible schedule of the full problem (no rentals; no reserved
    islands), so the answer is never dearer than either.  The baselines ride along
    (``Schedule.baselines``) for the report."""
    speak = say or (lambda _m: None)
    base = baselines(p, say=say)
    own = plan_schedule(p, levels=levels, say=say)
    options = [s for s in (own, *base.values()) if s is not None]
    if not options:
        return None
    best = min(options, key=lambda s: s.bill.total)
    if best is not own:
        speak(f"{best.label} is cheaper than the two-stage schedule "
              f"(${best.bill.total:,.0f} against "
              + (f"${own.bill.total:,.0f}" if own else "none") + "): it is the answer")
    return replace(best, label="schedule", baselines=base)


def baselines(p: Problem, say: Say | None = None) -> dict[str, Schedule | None]:
    """(a) reserved islands alone, enough for every slot (the busiest); (b) on-demand
    islands alone, scaled slot by slot."""
    return {"reserved_only": plan_schedule(p, allow=RESERVED_ONLY, label="reserved only",
                                           say=say),
            "on_demand_only": plan_schedule(p, allow=ON_DEMAND_ONLY,
                                            label="on demand only", say=say)}


__all__ = ["Columns", "ScheduleRequest", "Schedule", "baselines", "plan_schedule",
           "type_tiers"]
