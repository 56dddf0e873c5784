"""Price tiers of a GPU type: reserved, on-demand and spot capacity.

Capacity is bought in three ways (docs/profiles.md, "Price tiers"):

* **reserved** -- committed for the whole period: paid for every hour of it whether the
  GPUs serve or not, the cheapest per hour;
* **on demand** -- rented by the hour while an island is up, dearer, and limited to what
  the provider has free (``on_demand_max`` GPUs at once);
* **spot** -- rented by the hour, the cheapest, but pre-emptible: a fraction
  ``spot_preemption`` of the spot capacity up at any time is assumed lost, so a spot
  island's capacity is counted at ``1 - spot_preemption`` of its throughput.

An inventory entry gives them under ``tiers:``::

    - type: H200
      count: 64                 # the most GPUs that can be reserved
      price_per_hour: 4.0       # what static plans pay (unchanged)
      tiers: {reserved: 2.6, on_demand: 4.0, on_demand_max: 32,
              spot: 1.6, spot_max: 16, spot_preemption: 0.1}

Defaults, so that an inventory without ``tiers`` still plans a profile: reserved at the
entry's ``price_per_hour`` (what the user pays for GPUs they hold), on demand at the
GPU catalog's list price (the issue's rule: the catalog's list prices stay the
on-demand default; the entry's price when the catalog has none) up to ``count`` GPUs,
and no spot.  Static plans (``planner plan`` without ``--profile``) read none of this.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from perfmodel.errors import at, check_number
from planner.core.errors import PlannerError

TIER_FIELDS = ("reserved", "on_demand", "on_demand_max", "spot", "spot_max",
               "spot_preemption")
TIERS = ("reserved", "on_demand", "spot")
MAX_PRICE = 1e6
MAX_GPUS = 1_000_000


@dataclass(frozen=True)
class PriceTiers:
    """One type's tiers: $/GPU-hour of each, GPUs available on demand and on spot at
    once, and the spot pre-emption rate (fraction of spot capacity lost, in [0, 1))."""

    reserved: float
    on_demand: float
    on_demand_max: int
    spot: float | None = None
    spot_max: int = 0
    spot_preemption: float = 0.0

    def price(self, tier: str) -> float:
        if tier == "reserved":
            return self.reserved
        if tier == "on_demand":
            return self.on_demand
        return self.spot if self.spot is not None else 0.0

    def cap(self, tier: str, reservable: int) -> int:
        """GPUs of ``tier`` that can be up at once (reserved: what can be reserved)."""
        if tier == "reserved":
            return reservable
        if tier == "on_demand":
            return self.on_demand_max
        return self.spot_max if self.spot is not None else 0

    def capacity_factor(self, tier: str) -> float:
        """The share of an island's throughput a tier is counted at."""
        return 1.0 - self.spot_preemption if tier == "spot" else 1.0

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"reserved": self.reserved, "on_demand": self.on_demand,
                               "on_demand_max": self.on_demand_max}
        if self.spot is not None:
            out.update(spot=self.spot, spot_max=self.spot_max,
                       spot_preemption=self.spot_preemption)
        return out


def parse_tiers(data: Any, where: str, *, count: int, price: float,
                list_price: float) -> PriceTiers:
    """The ``tiers`` mapping of an inventory entry (``None``: the defaults above).
    ``where`` names the entry; every error is one line naming it and the field."""
    if data is None:
        return PriceTiers(price, list_price or price, count)
    if not isinstance(data, dict):
        raise PlannerError(f"{where}: field 'tiers' must be a mapping with some of "
                           f"{', '.join(TIER_FIELDS)}")
    unknown = sorted(set(map(str, data)) - set(TIER_FIELDS))
    if unknown:
        raise PlannerError(f"{where}: field 'tiers': unknown field(s) {unknown}; known: "
                           f"{list(TIER_FIELDS)}")

    def money(key: str, default: float | None) -> float | None:
        if key not in data:
            return default
        return float(check_number(data[key], at(f"{where}: field 'tiers.{key}'"), gt=0,
                                  le=MAX_PRICE))

    def gpus(key: str, default: int) -> int:
        if key not in data:
            return default
        return int(check_number(data[key], at(f"{where}: field 'tiers.{key}'"),
                                integer=True, ge=0, le=MAX_GPUS))

    reserved = money("reserved", price)
    on_demand = money("on_demand", list_price or price)
    spot = money("spot", None)
    if "spot" not in data and any(k in data for k in ("spot_max", "spot_preemption")):
        raise PlannerError(f"{where}: field 'tiers.spot' is missing: spot_max and "
                           "spot_preemption need a spot price")
    rate = 0.0
    if "spot_preemption" in data:
        rate = float(check_number(data["spot_preemption"],
                                  at(f"{where}: field 'tiers.spot_preemption'"), ge=0))
        if not rate < 1:
            raise PlannerError(f"{where}: field 'tiers.spot_preemption' must be in [0, 1) "
                               f"(the fraction of spot capacity pre-empted), got {rate:g}")
    assert reserved is not None and on_demand is not None
    return PriceTiers(reserved, on_demand, gpus("on_demand_max", count), spot,
                      gpus("spot_max", count if spot is not None else 0), rate)


__all__ = ["PriceTiers", "TIERS", "TIER_FIELDS", "parse_tiers"]
