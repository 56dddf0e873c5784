"""Load over time: a profile of slots, each with an arrival rate and a workload mix.

A static plan answers for one rate.  A profile (docs/profiles.md) gives the rate of
every time slot of a period -- the 168 hours of a week, a day, or any finer grid -- and,
when requests come from several workloads (code by working hours, chat in the evening),
the share of each workload in every slot.  The schedule planner
(:mod:`planner.schedule`) buys a reserved fleet and adds on-demand and spot islands
slot by slot so that every slot's load is served at the SLO.

File format (YAML)::

    name: my-week
    source: "where the figures come from"
    period_hours: 168             # the slots tile [0, period_hours)
    relative: false               # true: rates are fractions of the peak (--peak-rps)
    workloads: {chat: azure-conv-2023, code: azure-code-2023}   # optional streams
    slots:                        # explicit slots ...
      - {start: 0, hours: 1, rate: 12.5, mix: {chat: 0.8, code: 0.2}}
    # ... or a regular grid: slot_hours: 1, rates: [...], mixes: [{chat: 0.8, ...}, ...]

Without ``workloads`` the profile has one stream, the workload ``planner plan
--workload`` names.  Every mistake is one line naming the file, the slot and the field.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from perfmodel.errors import at, check_number
from planner.core.errors import PlannerError
from planner.core.names import check_distinct, check_name

#: The one stream of a profile without ``workloads``.
DEFAULT_STREAM = "default"
#: The most slots a profile may hold (a week at 5-minute slots is 2,016): every slot is
#: one MILP of the schedule, so the cap bounds the work a file can ask for.
MAX_SLOTS = 4032
#: Workload streams a profile may name: each is a workload read and a column of every
#: slot's MILP (as many as a fleet file's services).
MAX_STREAMS = 32
MAX_RATE = 1e9
MAX_PERIOD_HOURS = 24 * 366
MIX_TOL = 1e-6
_TOP = {"name", "source", "period_hours", "relative", "workloads", "slots", "slot_hours",
        "rates", "mixes"}


@dataclass(frozen=True)
class Slot:
    """One time slot: [start, start + hours) of the period, its total arrival rate
    (requests/s, or a fraction of the peak in a relative profile) and each stream's
    share of it."""

    start: float
    hours: float
    rate: float
    mix: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Profile:
    name: str
    slots: tuple[Slot, ...]
    period_hours: float
    relative: bool = False
    #: stream name -> workload (built-in name or YAML path); one default stream if empty
    workloads: Mapping[str, str] = field(default_factory=dict)
    source: str = ""

    @property
    def streams(self) -> tuple[str, ...]:
        return tuple(self.workloads) or (DEFAULT_STREAM,)

    @property
    def rates(self) -> np.ndarray:
        return np.array([s.rate for s in self.slots])

    @property
    def hours(self) -> np.ndarray:
        return np.array([s.hours for s in self.slots])

    @property
    def peak(self) -> float:
        return float(self.rates.max())

    def demand(self) -> np.ndarray:
        """(slots, streams) arrival rates: each slot's rate times its stream shares."""
        names = self.streams
        out = np.zeros((len(self.slots), len(names)))
        for t, s in enumerate(self.slots):
            for k, n in enumerate(names):
                out[t, k] = s.rate * (s.mix.get(n, 0.0) if s.mix else 1.0 / len(names))
        return out

    def scaled(self, peak_rps: float) -> Profile:
        """The profile with its rates scaled so that its peak is ``peak_rps``."""
        top = self.peak
        if top <= 0:
            raise PlannerError(f"profile {self.name!r}: every slot's rate is 0")
        f = peak_rps / top
        return replace(self, relative=False,
                       slots=tuple(replace(s, rate=s.rate * f) for s in self.slots))

    def busiest_day(self) -> list[int]:
        """Indices of the slots of the 24-hour window (from a midnight) with the highest
        peak rate -- the day ``planner simulate --profile`` replays."""
        if self.period_hours <= 24:
            return list(range(len(self.slots)))
        days = int(math.ceil(self.period_hours / 24))
        best, best_peak = 0, -1.0
        for d in range(days):
            idx = [i for i, s in enumerate(self.slots) if d * 24 <= s.start < (d + 1) * 24]
            top = max((self.slots[i].rate for i in idx), default=-1.0)
            if top > best_peak:
                best, best_peak = d, top
        return [i for i, s in enumerate(self.slots) if best * 24 <= s.start < (best + 1) * 24]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "source": self.source,
                               "period_hours": self.period_hours, "relative": self.relative}
        if self.workloads:
            out["workloads"] = dict(self.workloads)
        out["slots"] = [{"start": s.start, "hours": s.hours, "rate": s.rate,
                         **({"mix": dict(s.mix)} if s.mix else {})} for s in self.slots]
        return out


def _slot_list(data: dict, key: str, where: str) -> list:
    """Field ``key``: a non-empty list of at most :data:`MAX_SLOTS` slots."""
    items = data[key]
    if not isinstance(items, list) or not items:
        raise PlannerError(f"{where}: field '{key}' must be a non-empty list")
    if len(items) > MAX_SLOTS:
        raise PlannerError(f"{where}: field '{key}' holds {len(items):,} slots; at most "
                           f"{MAX_SLOTS:,}")
    return items


def _slot_items(data: dict, where: str) -> list[dict]:
    """The slots as mappings, from either the explicit or the grid form."""
    if "slots" in data:
        if any(k in data for k in ("rates", "slot_hours", "mixes")):
            raise PlannerError(f"{where}: give either field 'slots' or fields 'slot_hours' "
                               "and 'rates', not both")
        return _slot_list(data, "slots", where)
    if "rates" not in data:
        raise PlannerError(f"{where}: field 'slots' (or 'slot_hours' and 'rates') is missing")
    rates = _slot_list(data, "rates", where)
    hours = check_number(data.get("slot_hours", 1.0), at(f"{where}: field 'slot_hours'"),
                         gt=0, le=MAX_PERIOD_HOURS)
    mixes = data.get("mixes")
    if mixes is not None and (not isinstance(mixes, list) or len(mixes) != len(rates)):
        raise PlannerError(f"{where}: field 'mixes' must be a list of one mix per rate "
                           f"({len(rates)})")
    return [{"start": i * hours, "hours": hours, "rate": r,
             **({"mix": mixes[i]} if mixes is not None else {})}
            for i, r in enumerate(rates)]


def _mix(value: Any, streams: tuple[str, ...], where: str) -> dict[str, float]:
    if not isinstance(value, dict) or not value:
        raise PlannerError(f"{where}: field 'mix' must be a mapping of workload -> share")
    unknown = sorted(set(map(str, value)) - set(streams))
    if unknown:
        raise PlannerError(f"{where}: field 'mix' names {unknown}, not among the profile's "
                           f"workloads {list(streams)}")
    out = {str(k): float(check_number(v, at(f"{where}: field 'mix.{k}'"), ge=0, le=1))
           for k, v in value.items()}
    total = sum(out.values())
    if abs(total - 1.0) > MIX_TOL:
        raise PlannerError(f"{where}: field 'mix' sums to {total:.6g}, not 1")
    return out


def profile_from_dict(data: Any, where: str) -> Profile:
    """Validate a parsed profile file (see the module docstring)."""
    if not isinstance(data, dict):
        raise PlannerError(f"{where}: expected a mapping with 'slots' (or 'rates')")
    unknown = sorted(set(map(str, data)) - _TOP)
    if unknown:
        raise PlannerError(f"{where}: unknown field(s) {unknown}; known: {sorted(_TOP)}")
    workloads = data.get("workloads") or {}
    if not isinstance(workloads, dict) or not all(
            isinstance(k, str) and isinstance(v, str) and k and v for k, v in workloads.items()):
        raise PlannerError(f"{where}: field 'workloads' must map stream names to workloads "
                           "(built-in names or YAML paths)")
    if len(workloads) > MAX_STREAMS:
        raise PlannerError(f"{where}: field 'workloads' names {len(workloads):,} streams; "
                           f"at most {MAX_STREAMS}")
    for stream in workloads:  # each names the run's streams/<stream> folder
        check_name(stream, where, f"workloads.{str(stream)[:40]}", "the stream's folder")
    check_distinct(workloads, where, "workloads")
    streams = tuple(workloads) or (DEFAULT_STREAM,)
    relative = data.get("relative", False)
    if not isinstance(relative, bool):
        raise PlannerError(f"{where}: field 'relative' must be true or false")
    slots = []
    end = 0.0
    for i, item in enumerate(_slot_items(data, where)):
        loc = f"{where}: slot {i}"
        if not isinstance(item, dict):
            raise PlannerError(f"{loc}: expected a mapping with start, hours and rate")
        extra = sorted(set(map(str, item)) - {"start", "hours", "rate", "mix"})
        if extra:
            raise PlannerError(f"{loc}: unknown field(s) {extra}; known: "
                               "['hours', 'mix', 'rate', 'start']")
        for key in ("start", "hours", "rate"):
            if key not in item:
                raise PlannerError(f"{loc}: field '{key}' is missing")
        start = check_number(item["start"], at(f"{loc}: field 'start'"), ge=0,
                             le=MAX_PERIOD_HOURS)
        hours = check_number(item["hours"], at(f"{loc}: field 'hours'"), gt=0,
                             le=MAX_PERIOD_HOURS)
        rate = check_number(item["rate"], at(f"{loc}: field 'rate'"), ge=0, le=MAX_RATE)
        if start < end - 1e-9:
            raise PlannerError(f"{loc}: field 'start': {start:g} h overlaps the slot before, "
                               f"which ends at {end:g} h")
        if start > end + 1e-9:
            raise PlannerError(f"{loc}: field 'start': {start:g} h leaves [{end:g}, "
                               f"{start:g}) h without a slot (slots must tile the period)")
        mix: dict[str, float] = {}
        if "mix" in item:
            mix = _mix(item["mix"], streams, loc)
        elif len(streams) > 1:
            raise PlannerError(f"{loc}: field 'mix' is missing (the profile has "
                               f"{len(streams)} workloads)")
        slots.append(Slot(float(start), float(hours), float(rate), mix))
        end = start + hours
    period = check_number(data.get("period_hours", end), at(f"{where}: field 'period_hours'"),
                          gt=0, le=MAX_PERIOD_HOURS)
    if abs(period - end) > 1e-6:
        raise PlannerError(f"{where}: field 'period_hours': the slots end at {end:g} h, not "
                           f"at the period's {period:g} h (slots must tile the period)")
    if not any(s.rate > 0 for s in slots):
        raise PlannerError(f"{where}: field 'slots': every slot's rate is 0")
    return Profile(str(data.get("name") or Path(where).stem), tuple(slots), float(period),
                   relative, {str(k): str(v) for k, v in workloads.items()},
                   str(data.get("source") or ""))


__all__ = ["DEFAULT_STREAM", "MAX_SLOTS", "Profile", "Slot", "profile_from_dict"]
