"""A schedule as data: the dict schedule.json holds, and the rows of schedule.csv (pure)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from planner.schedule.accounting import capacity, gpus_up

if TYPE_CHECKING:
    from planner.schedule.solve import Schedule

CSV_FIELDS = ("slot", "start_h", "hours", "stream", "demand_rps", "capacity_rps", "gpu",
              "size", "role", "reserved", "on_demand", "spot", "load")


def schedule_dict(s: Schedule, streams: tuple[str, ...] = (),
                  starts: tuple[float, ...] = ()) -> dict[str, Any]:
    """The reserved fleet, every slot's islands, demand and capacity, and the bill."""
    p = s.problem
    names = streams or tuple(f"stream{k}" for k in range(len(p.probs)))
    reserved = [{"stream": names[k.stream], "gpu": k.gpu, "size": k.size, "role": k.role,
                 "islands": int(s.reserved[c])}
                for c, k in enumerate(p.kinds) if s.reserved[c] > 0]
    slots = []
    for t, d in enumerate(s.slots):
        cap = capacity(p, s.reserved, d)
        islands = [{"stream": names[k.stream], "gpu": k.gpu, "size": k.size, "role": k.role,
                    "reserved": int(s.reserved[c]), "on_demand": int(d.on_demand[c]),
                    "spot": int(d.spot[c]), "load": round(float(d.load[c]), 4)}
                   for c, k in enumerate(p.kinds)
                   if s.reserved[c] + d.on_demand[c] + d.spot[c] > 0]
        slots.append({"slot": t, "start_h": starts[t] if starts else float(p.hours[:t].sum()),
                      "hours": float(p.hours[t]),
                      "demand_rps": {n: float(p.demand[t, k]) for k, n in enumerate(names)},
                      "capacity_rps": {n: float(cap[k]) for k, n in enumerate(names)},
                      "gpus": gpus_up(p, s.reserved, d), "islands": islands})
    return {"label": s.label, "bill": s.bill.to_dict(), "stage1_usd": s.stage1,
            "seconds": s.seconds, "reserved": reserved, "slots": slots}


def csv_rows(data: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per (slot, island kind up), the schedule table of the report."""
    rows = []
    for slot in data["slots"]:
        for isl in slot["islands"]:
            rows.append({"slot": slot["slot"], "start_h": slot["start_h"],
                         "hours": slot["hours"], "stream": isl["stream"],
                         "demand_rps": round(slot["demand_rps"][isl["stream"]], 4),
                         "capacity_rps": round(slot["capacity_rps"][isl["stream"]], 4),
                         **{k: isl[k] for k in ("gpu", "size", "role", "reserved",
                                                "on_demand", "spot", "load")}})
    return rows


__all__ = ["CSV_FIELDS", "csv_rows", "schedule_dict"]
