"""Drift: one reserved fleet for several load scenarios, by the smallest worst-case regret.

The reserved fleet is bought once; which load arrives is not known.  ``--scenarios``
gives other profiles (another mix of workloads, another peak, another week) besides
``--profile``.  For a candidate reserved fleet R and a scenario s, the cost is the
period's bill with R fixed and every slot of s scaled on demand and spot (stage 2,
:mod:`planner.schedule.milp`); its *regret* is that cost less the cost of the reserved
fleet planned for s alone.  The fleet kept minimises the largest regret over the
scenarios (minimax regret: the buyer's loss against hindsight is bounded, whichever
scenario comes).  Candidates: each scenario's own reserved fleet, and the islands they
all share (their element-wise minimum, which every scenario can top up by renting).

Every scenario is then held to the one promise with the fleet kept
(:func:`planner.schedule.pipeline.promised`): the busiest day of each simulated, slots
that miss scaled up on the same reserved fleet.  The tables are corrected once, by the
first profile's busiest slot (the same model, island kinds and SLO in every scenario).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from planner.core.errors import NoPlanError
from planner.schedule.accounting import account
from planner.schedule.milp import Problem, schedule_slots
from planner.schedule.pipeline import correct, first_schedule, peak_plans, promised, run_dict
from planner.schedule.solve import Columns, Schedule, ScheduleRequest
from planner.workload.profile import Profile

Say = Callable[[str], None]
Key = tuple[str, str, int, str]


def _keyed(cols: Columns, p: Problem, reserved: np.ndarray) -> dict[Key, int]:
    names = [m.service.name for m in cols.models]
    return {(names[k.stream], k.gpu, k.size, k.role): int(reserved[c])
            for c, k in enumerate(p.kinds) if reserved[c] > 0}


def _mapped(cols: Columns, p: Problem, keyed: dict[Key, int]) -> np.ndarray | None:
    """The keyed fleet on ``p``'s kinds; None when it holds a kind ``p`` lacks."""
    names = [m.service.name for m in cols.models]
    index = {(names[k.stream], k.gpu, k.size, k.role): c for c, k in enumerate(p.kinds)}
    out = np.zeros(len(p.kinds), int)
    for key, n in keyed.items():
        if key not in index:
            return None
        out[index[key]] = n
    return out


def regret_table(cols: Sequence[Columns], problems: Sequence[Problem],
                 own: Sequence[Schedule], candidates: Sequence[dict[Key, int]]
                 ) -> list[list[Schedule | None]]:
    """Every candidate fleet scheduled on every scenario (None: it cannot serve it)."""
    table = []
    for cand in candidates:
        row: list[Schedule | None] = []
        for c, p, o in zip(cols, problems, own, strict=True):
            r = _mapped(c, p, cand)
            slots = None if r is None else schedule_slots(p, r)
            row.append(None if slots is None or r is None else
                       Schedule(o.label, p, r, slots, account(p, r, slots), o.stage1, 0.0))
        table.append(row)
    return table


def scenario_run(req: ScheduleRequest, others: Sequence[Profile], *, router: str = "range",
                 verify: bool = True, say: Say | None = None
                 ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    speak = say or (lambda _m: None)
    t0 = time.perf_counter()
    reqs = [req] + [replace(req, profile=p, where=f"--scenarios {p.name}") for p in others]
    cols = [Columns.build(r) for r in reqs]
    seconds = {"setup": time.perf_counter() - t0}
    own = [first_schedule(c, speak) for c in cols]
    if verify:
        speak("closing the first profile's busiest slot in simulation (the tables' "
              "correction, for every scenario)")
        if correct(cols[0], own[0], seed=req.seed, router=router, say=speak):
            for c in cols[1:]:
                c.corrections = dict(cols[0].corrections)
            own = [first_schedule(c, speak) for c in cols]
    problems = [o.problem for o in own]
    keyed = [_keyed(c, o.problem, o.reserved) for c, o in zip(cols, own, strict=True)]
    shared = {k: min(kd.get(k, 0) for kd in keyed) for k in keyed[0]}
    candidates = keyed + [{k: v for k, v in shared.items() if v > 0}]
    labels = [f"reserved for {p.name}" for p in [req.profile, *others]] + \
        ["islands every scenario's fleet shares"]
    table = regret_table(cols, problems, own, candidates)
    worst = []
    for row in table:
        regrets = [math.inf if s is None else s.bill.total - o.bill.total
                   for s, o in zip(row, own, strict=True)]
        worst.append(max(regrets))
    pick = int(np.argmin(worst))
    if not math.isfinite(worst[pick]):
        raise NoPlanError("no candidate reserved fleet serves every scenario within the tier "
                          "caps: raise on_demand_max / spot_max or the counts")
    speak(f"kept: {labels[pick]} (worst-case regret ${worst[pick]:,.0f})")
    chosen = [s for s in table[pick] if s is not None]
    seconds["solve"] = time.perf_counter() - t0 - seconds["setup"]
    held, checks, rounds = [], [], []
    for c, s in zip(cols, chosen, strict=True):
        if verify:
            s2, ch, r = promised(c, s, seed=req.seed, router=router, say=speak,
                                 correct_first=False)
        else:
            s2, ch, r = s, [], 0
        held.append(s2)
        checks.append(ch)
        rounds.append(r)
    seconds["promise"] = time.perf_counter() - t0 - sum(seconds.values())
    run = run_dict(cols[0], held[0], checks[0], rounds[0], router=router, seconds=seconds,
                   say=speak)
    run["scenarios"] = [
        {"name": c.request.profile.name, "bill": s.bill.to_dict(),
         "own_bill": o.bill.total, "regret": s.bill.total - o.bill.total,
         "peak_rps": float(c.request.profile.demand().sum(axis=1).max()),
         "lowest_attainment": min((x["attainment"] for x in ch), default=None),
         "hold_rounds": r}
        for c, s, o, ch, r in zip(cols, held, own, checks, rounds, strict=True)]
    run["procurement"] = {"rule": "smallest worst-case regret", "kept": labels[pick],
                          "candidates": [{"label": lab, "worst_regret": w if math.isfinite(w)
                                          else None} for lab, w in zip(labels, worst,
                                                                       strict=True)]}
    return run, peak_plans(cols[0], held[0])


__all__ = ["regret_table", "scenario_run"]
