"""The error band of a plan's capacity (issue 29, item 4).

Each serving island's capacity is a perf-model figure; the model's errors on held-out
published measurements of the island's class -- GPU family x engine x phase
(:mod:`perfmodel.error_band`) -- say how far the real figure may be from it: a p90 error
of +20 % means the real capacity may be the predicted one / 1.2.  A prefill or decode
island's band also holds the errors on whole disaggregated systems of its GPU family and
engine (``perfmodel.error_band.deployed_band``): it serves only as one side of one.

**The plan's band.**  A plan's capacity is a flow through its islands: every request
is prefilled on one island and decoded on another (or both on a colocated one), and the
search balances the phases so that they saturate together.  If each island's speed is
scaled by its own factor, the plan's capacity is bounded by the phase that falls
shortest, so the headline's band is

    p10 = headline x min_i 1 / (1 + hi_i),     p90 = headline x min_i 1 / (1 + lo_i)

over the islands that serve (``lo_i``/``hi_i`` their class's p10/p90 errors).  Taking
the minimum, not a traffic-weighted mean, is the cautious reading: the errors of one
engine and model across phases are correlated, but nothing measured says how much, and
an optimistic band costs the buyer more than a pessimistic one.

``planner plan --plan-at p10`` instead derates every island's times by its ``1 + hi``
before the search (:attr:`perfmodel.calibration.Calibration.plan_at`), so the
headline itself is the pessimistic bound: its band runs from the headline to the
headline x (p90 factor / p10 factor).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from perfmodel.error_band import deployed_band

#: Island role -> the phase class of its errors.
PHASE_OF_ROLE = {"prefill": "prefill", "decode": "decode", "both": "aggregated"}


def island_band(gpu: str, engine: str, role: str) -> dict[str, Any]:
    """The band of one island: its class, the held-out rows behind it and the factors
    (p10, p90) its capacity is multiplied by."""
    b = deployed_band(gpu, engine, PHASE_OF_ROLE.get(role, "aggregated"))
    p10, p90 = b.capacity(1.0)
    return {"class": b.cls, "rows": b.rows, "p10_factor": p10, "p90_factor": p90,
            "widened": b.widened}


def plan_band(plan: Mapping[str, Any]) -> dict[str, Any] | None:
    """``{"p10": .., "p90": .., "islands": [...]}`` for a plan dict (None when nothing
    is served): the headline's band and that of each kind (GPU, role) of serving island
    (module docstring)."""
    s = plan.get("summary") or {}
    rate = float(s.get("requests_per_s") or 0.0)
    islands = [i for i in plan.get("islands") or [] if float(i.get("requests_per_s") or 0) > 0]
    if rate <= 0 or not islands:
        return None
    engine = str((plan.get("request") or {}).get("engine") or "trtllm")
    kinds = dict.fromkeys((str(i["gpu"]), str(i["role"])) for i in islands)
    per = [dict(island_band(gpu, engine, role), gpu=gpu, role=role) for gpu, role in kinds]
    lo = min(p["p10_factor"] for p in per)
    hi = min(p["p90_factor"] for p in per)
    if (plan.get("request") or {}).get("plan_at") == "p10":
        # the headline is already the pessimistic bound: the band runs up from it
        lo, hi = 1.0, hi / lo
    return {"p10": rate * lo, "p90": rate * hi if math.isfinite(hi) else None,
            "p10_factor": lo, "p90_factor": hi if math.isfinite(hi) else None,
            "islands": per}


def with_band(plan: dict[str, Any]) -> dict[str, Any]:
    """The plan dict with ``summary.capacity_band`` (replaced if present)."""
    out = dict(plan)
    out["summary"] = dict(plan["summary"], capacity_band=plan_band(plan))
    return out


def band_text(plan: Mapping[str, Any]) -> str | None:
    """"p10–p90 470–610" for the headline, or None without a band."""
    b = (plan.get("summary") or {}).get("capacity_band")
    if not b:
        return None
    hi = b.get("p90")
    upper = f"{hi:,.1f}" if hi is not None else "unbounded"
    return f"p10–p90 {b['p10']:,.1f}–{upper}"


__all__ = ["PHASE_OF_ROLE", "band_text", "island_band", "plan_band", "with_band"]
