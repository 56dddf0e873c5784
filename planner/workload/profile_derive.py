"""A load profile from timestamped traces (``planner workload profile``).

Arrivals are counted in slots of ``slot_minutes``.  ``fold``:

* ``none`` -- the trace's own time line: whole slots from its first arrival; a last
  slot the trace does not cover to its end is dropped (its rate would be understated);
* ``day`` / ``week`` -- slots of the hour of day (UTC) / hour of the week (Monday 00:00
  UTC = 0): every arrival lands in its slot of the period, and a slot's rate is its
  count over the time the trace covered that slot (a two-week trace covers every
  slot of the week twice).  A slot the trace never covers would be a hole in the
  profile, which is refused: fold a shorter trace by ``day`` or ``none``.

Several traces (one per workload stream) give each slot's mix: a stream's share of
the slot's arrivals.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from planner.core.errors import PlannerError
from planner.workload.profile import MAX_SLOTS, Profile, Slot

FOLDS = {"none": 0.0, "day": 24.0, "week": 168.0}
NS_PER_S = 1_000_000_000
#: 1970-01-01 was a Thursday: Monday 00:00 UTC is 4 days before the epoch's day start.
_MONDAY_OFFSET_S = 4 * 86400


def _coverage(first_s: float, last_s: float, slot_s: float, period_s: float,
              n_slots: int) -> np.ndarray:
    """Seconds the window [first, last] covers of each folded slot."""
    cover = np.zeros(n_slots)
    t = first_s
    while t < last_s:
        k = int((t % period_s) // slot_s)
        edge = (t // slot_s + 1) * slot_s
        step = min(edge, last_s) - t
        cover[k] += step
        t += step
    return cover


def derive_profile(times_ns: Mapping[str, np.ndarray], *, slot_minutes: float,
                   fold: str, name: str, source: str = "",
                   workloads: Mapping[str, str] | None = None) -> Profile:
    """The profile of the arrivals ``times_ns`` (stream -> int64 UTC ns); ``workloads``
    names each stream's workload (none for one stream: the plan's --workload)."""
    if fold not in FOLDS:
        raise PlannerError(f"--fold: expected one of {', '.join(FOLDS)}, got {fold!r}")
    streams = list(times_ns)
    every = [np.asarray(v, np.int64) for v in times_ns.values()]
    if not any(v.size for v in every):
        raise PlannerError("the trace(s) hold no timestamps: give --columns time=... or a "
                           "format with a time column")
    slot_s = slot_minutes * 60.0
    first = min(float(v.min()) for v in every if v.size) / NS_PER_S
    last = max(float(v.max()) for v in every if v.size) / NS_PER_S
    period_h = FOLDS[fold]
    if period_h == 0:
        n = int((last - first) // slot_s)
        if n < 1:
            raise PlannerError(f"the trace spans {last - first:,.0f} s, less than one "
                               f"{slot_minutes:g}-minute slot")
        if n > MAX_SLOTS:
            raise PlannerError(f"the trace spans {n:,} slots of {slot_minutes:g} min; at "
                               f"most {MAX_SLOTS:,}: use a longer --slot-minutes")
        counts = np.zeros((n, len(streams)))
        for k, v in enumerate(every):
            idx = ((v / NS_PER_S - first) // slot_s).astype(np.int64)
            idx = idx[idx < n]
            counts[:, k] = np.bincount(idx, minlength=n)
        cover = np.full(n, slot_s)
        period_h = n * slot_s / 3600
    else:
        period_s = period_h * 3600
        n = int(round(period_s / slot_s))
        if abs(n * slot_s - period_s) > 1e-6 or n > MAX_SLOTS:
            raise PlannerError(f"--slot-minutes {slot_minutes:g} does not divide the "
                               f"{fold} into at most {MAX_SLOTS:,} whole slots")
        shift = _MONDAY_OFFSET_S if fold == "week" else 0.0
        counts = np.zeros((n, len(streams)))
        for k, v in enumerate(every):
            idx = (((v / NS_PER_S + shift) % period_s) // slot_s).astype(np.int64)
            counts[:, k] = np.bincount(idx, minlength=n)
        cover = _coverage(first + shift, last + shift, slot_s, period_s, n)
        holes = np.flatnonzero(cover <= 0)
        if holes.size:
            covered = float(cover.sum()) / 3600
            raise PlannerError(
                f"the trace covers {covered:,.1f} h of the {period_h:g}-h {fold}: "
                f"{holes.size} of {n} slots would have no rate; use --fold "
                + ("day or " if fold == "week" else "") + "none, or a longer trace")
    rates = counts.sum(axis=1) / cover
    total = counts.sum(axis=0)
    overall = total / total.sum()
    slots = []
    hours = slot_s / 3600
    for t in range(n):
        mix: dict[str, float] = {}
        if len(streams) > 1:
            row = counts[t] / counts[t].sum() if counts[t].sum() > 0 else overall
            mix = {s: float(x) for s, x in zip(streams, row, strict=True)}
        slots.append(Slot(round(t * hours, 9), hours, float(rates[t]), mix))
    return Profile(name, tuple(slots), float(period_h), False,
                   dict(workloads or {}) if len(streams) > 1 else {}, source)


__all__ = ["FOLDS", "derive_profile"]
