"""``planner simulate RUN --profile``: replay a schedule's busiest day, slot by slot.

The run folder's schedule.json holds everything the replay needs: the request (model,
streams, SLO, inventory, ranges), the profile and every slot's islands.  Each slot of
the busiest day is simulated for a compressed span (:data:`planner.schedule.promise.
SLOT_WARMUP_S` + ``SLOT_MEASURE_S`` seconds of simulated time) at its rate, on the
islands up in it -- reserved, on demand, and spot less the expected pre-emptions.
Start-up lags are in the schedule, not in the replay: every island of a slot was
started ``startup_s`` before it (and paid for; :mod:`planner.schedule.accounting`), so
it serves from the slot's first request.  The seeds are not the planner's: the replay
is a check on seeds the plan never saw.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from perfmodel import SLO
from planner.core.errors import PlannerError
from planner.fleet.inventory import inventory_from_dict
from planner.outer.protocol import Layout
from planner.schedule.promise import check_slots, spot_left
from planner.schedule.solve import Columns, ScheduleRequest
from planner.workload.profile import profile_from_dict

Say = Callable[[str], None]
#: The replay's seeds are the planner's seed plus this (seeds it never used).
REPLAY_SEED_OFFSET = 7919


def request_of(run: dict[str, Any], where: str) -> ScheduleRequest:
    """The schedule request a run was planned for, from its schedule.json."""
    try:
        r = run["request"]
        profile = profile_from_dict(run["profile"], f"{where}: field 'profile'")
        inventory = inventory_from_dict(run["inventory"], f"{where}: field 'inventory'")
        slo = SLO(float(run["slo"]["ttft_ms"]), float(run["slo"]["tpot_ms"]))
        return ScheduleRequest(profile, inventory, str(r["model"]), str(r["workload"]), slo,
                               r.get("engine"), float(run["startup_s"]), int(r["ranges"]),
                               int(r["levels"]), int(r["seed"]),
                               str(r["island_granularity"]), where=where)
    except (KeyError, TypeError, ValueError) as err:
        raise PlannerError(f"{where}: not a complete schedule run ({err!r} missing or "
                           "malformed)") from None


def slot_islands(run: dict[str, Any], t: int) -> dict[str, Layout]:
    """Every stream's islands up in slot ``t`` of schedule.json (spot less the expected
    pre-emptions, as the planner checked them)."""
    rates = {g["type"]: float((g.get("tiers") or {}).get("spot_preemption", 0.0))
             for g in run["inventory"]["gpus"]}
    out: dict[str, list[tuple[str, int]]] = {s: [] for s in run["streams"]}
    for isl in run["schedule"]["slots"][t]["islands"]:
        spot = spot_left(int(isl["spot"]), rates.get(isl["gpu"], 0.0))
        n = int(isl["reserved"]) + int(isl["on_demand"]) + spot
        out.setdefault(isl["stream"], []).extend([(isl["gpu"], int(isl["size"]))] * n)
    return {s: tuple(sorted(v)) for s, v in out.items()}


def replay_day(run: dict[str, Any], where: str, *, router: str = "range",
               seed: int | None = None, say: Say | None = None) -> dict[str, Any]:
    """The busiest day of the run replayed: a record per (slot, stream)."""
    req = request_of(run, where)
    cols = Columns.build(req)
    day = req.profile.busiest_day()
    base = (req.seed if seed is None else seed) + REPLAY_SEED_OFFSET
    checks = check_slots(cols, lambda t: slot_islands(run, t), day, seed=base,
                         router=router, say=say)
    rows = [c.to_dict() for c in checks]
    worst = min((c.attainment for c in checks), default=None)
    return {"router": router, "seed": base, "slots": day, "checks": rows,
            "lowest_attainment": worst,
            "slots_below_99": sorted({c.slot for c in checks if c.attainment < 0.99})}


__all__ = ["replay_day", "request_of", "slot_islands"]
