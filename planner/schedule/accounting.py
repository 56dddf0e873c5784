"""What a schedule costs and what it runs, slot by slot (pure).

The period repeats (a week follows a week), so starts are counted cyclically: an
on-demand or spot island up in slot t and not in slot t-1 (slot 0's predecessor is the
last slot) is rented ``lag`` hours early.  Reserved islands are paid for every hour of
the period whether they serve or not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from planner.schedule.milp import Problem, SlotDecision


@dataclass(frozen=True)
class Bill:
    """$ of the period by tier, and the starts' share of it."""

    reserved: float
    on_demand: float
    spot: float
    startup: float  # included in on_demand and spot

    @property
    def total(self) -> float:
        return self.reserved + self.on_demand + self.spot

    def to_dict(self) -> dict[str, float]:
        return {"reserved": self.reserved, "on_demand": self.on_demand, "spot": self.spot,
                "startup": self.startup, "total": self.total}


def account(p: Problem, reserved: np.ndarray, slots: Sequence[SlotDecision]) -> Bill:
    """The period's bill of ``reserved`` islands and the per-slot decisions."""
    res = float(p.price(0) @ reserved) * p.period_hours
    od_price, sp_price = p.price(1), p.price(2)
    od = sp = start = 0.0
    n_t = len(slots)
    for t, d in enumerate(slots):
        prev = slots[(t - 1) % n_t]
        h = float(p.hours[t])
        new_od = np.maximum(d.on_demand - prev.on_demand, 0)
        new_sp = np.maximum(d.spot - prev.spot, 0)
        s_od, s_sp = p.lag_h * float(od_price @ new_od), p.lag_h * float(sp_price @ new_sp)
        od += h * float(od_price @ d.on_demand) + s_od
        sp += h * float(sp_price @ d.spot) + s_sp
        start += s_od + s_sp
    return Bill(res, od, sp, start)


def gpus_up(p: Problem, reserved: np.ndarray, d: SlotDecision) -> dict[str, dict[str, int]]:
    """GPUs of each type up in a slot, by tier."""
    out: dict[str, dict[str, int]] = {}
    for c, k in enumerate(p.kinds):
        row = out.setdefault(k.gpu, {"reserved": 0, "on_demand": 0, "spot": 0})
        row["reserved"] += int(reserved[c]) * k.size
        row["on_demand"] += int(d.on_demand[c]) * k.size
        row["spot"] += int(d.spot[c]) * k.size
    return out


def capacity(p: Problem, reserved: np.ndarray, d: SlotDecision) -> np.ndarray:
    """(S,) the most each stream's islands of a slot carry at its range mix on the
    tables: min over its roles and ranges of (what the islands give the range if they
    served only it, weighted by the range's probability) -- a bound the MILP's rows
    respect; the report's capacity line, not a promise."""
    f = p.factor(2)
    up = reserved + d.on_demand + f * d.spot
    out = np.zeros(len(p.probs))
    for s, prob in enumerate(p.probs):
        worst = np.inf
        for role in ("prefill", "decode"):
            idx = [c for c, k in enumerate(p.kinds)
                   if k.stream == s and k.role in (role, "both") and up[c] > 0]
            if not idx:
                worst = 0.0
                continue
            # islands share their time over ranges: rate = 1 / sum_j p_j / B_j
            b = np.sum([up[c] * p.kinds[c].rps for c in idx], axis=0)
            with np.errstate(divide="ignore"):
                inv = np.where(prob > 0, prob / np.maximum(b, 1e-300), 0.0)
            worst = min(worst, 1.0 / float(inv.sum()) if inv.sum() > 0 else np.inf)
        out[s] = worst if np.isfinite(worst) else 0.0
    return out


__all__ = ["Bill", "account", "capacity", "gpus_up"]
