"""Price tiers in inventories and load profiles: parsing, defaults and the bad inputs of
issue 31 (one line naming the file, the slot and the field)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from planner.core.errors import PlannerError
from planner.fleet.inventory import inventory_from_dict
from planner.workload.profile import MAX_SLOTS, MAX_STREAMS, profile_from_dict
from planner.workload.profile_builtins import (
    CHAT,
    CODE,
    CODE_WEEK_SHARE,
    builtin_profile,
)


def entry(**tiers):
    item = {"type": "H200", "count": 16, "price_per_hour": 4.0}
    if tiers:
        item["tiers"] = tiers
    return {"gpus": [item]}


def test_tiers_defaults_and_explicit():
    inv = inventory_from_dict(entry(), "inv.yaml")
    t = inv.entries[0].tiers
    assert t.reserved == 4.0  # the entry's own price
    assert t.on_demand == inv.entries[0].gpu.price_per_hour or t.on_demand > 0
    assert t.on_demand_max == 16 and t.spot is None and t.spot_max == 0
    assert "tiers" not in inv.to_dict()["gpus"][0]  # static runs' records unchanged
    inv = inventory_from_dict(entry(reserved=2.5, on_demand=5.0, on_demand_max=8, spot=1.5,
                                    spot_preemption=0.2), "inv.yaml")
    t = inv.entries[0].tiers
    assert (t.reserved, t.on_demand, t.on_demand_max, t.spot, t.spot_max) == \
        (2.5, 5.0, 8, 1.5, 16)
    assert t.capacity_factor("spot") == pytest.approx(0.8)
    assert inv.to_dict()["gpus"][0]["tiers"]["spot"] == 1.5


def test_catalog_list_price_is_the_on_demand_default():
    from perfmodel.hardware import gpu_catalog

    inv = inventory_from_dict(entry(reserved=2.0), "inv.yaml")
    assert inv.entries[0].tiers.on_demand == gpu_catalog()["H200"].price_per_hour


@pytest.mark.parametrize("tiers,field", [
    ({"reserved": 0}, "tiers.reserved"),
    ({"on_demand": -1}, "tiers.on_demand"),
    ({"spot": 1.0, "spot_preemption": 1.0}, "tiers.spot_preemption"),
    ({"spot": 1.0, "spot_preemption": -0.1}, "tiers.spot_preemption"),
    ({"spot_max": 4}, "tiers.spot"),
    ({"spot": float("nan")}, "tiers.spot"),
    ({"on_demand_max": 2.5}, "tiers.on_demand_max"),
    ({"reserve": 1.0}, "unknown field"),
])
def test_bad_tiers_name_the_file_and_field(tiers, field):
    with pytest.raises(PlannerError) as err:
        inventory_from_dict(entry(**tiers), "inv.yaml")
    msg = str(err.value)
    assert msg.startswith("inv.yaml: gpus[0]") and field in msg and "\n" not in msg


def slots(*rates, mix=None):
    return {"slots": [{"start": i, "hours": 1, "rate": r, **({"mix": mix[i]} if mix else {})}
                      for i, r in enumerate(rates)]}


def test_profile_forms_agree():
    a = profile_from_dict(slots(1.0, 2.0, 3.0), "p.yaml")
    b = profile_from_dict({"slot_hours": 1, "rates": [1.0, 2.0, 3.0]}, "p.yaml")
    assert a.slots == b.slots and a.period_hours == b.period_hours == 3
    assert a.peak == 3.0 and a.scaled(6.0).rates.tolist() == [2.0, 4.0, 6.0]


def test_demand_splits_by_mix():
    p = profile_from_dict({"workloads": {"chat": "azure-conv-2023", "code": "azure-code-2023"},
                           **slots(10.0, 20.0, mix=[{"chat": 0.7, "code": 0.3},
                                                    {"chat": 0.5, "code": 0.5}])}, "p.yaml")
    assert p.streams == ("chat", "code")
    assert np.allclose(p.demand(), [[7.0, 3.0], [10.0, 10.0]])


@pytest.mark.parametrize("data,where", [
    (slots(1.0, -1.0), "slot 1: field 'rate'"),
    (slots(1.0, float("inf")), "slot 1: field 'rate'"),
    (slots(1.0, float("nan")), "slot 1: field 'rate'"),
    ({"slots": [{"start": 0, "hours": 2, "rate": 1}, {"start": 1, "hours": 1, "rate": 1}]},
     "slot 1: field 'start'"),  # overlap
    ({"slots": [{"start": 0, "hours": 1, "rate": 1}, {"start": 2, "hours": 1, "rate": 1}]},
     "slot 1: field 'start'"),  # a gap: a missing slot
    ({"slots": [{"start": 0, "hours": 1, "rate": 1}], "period_hours": 2}, "'period_hours'"),
    ({"workloads": {"a": "azure-conv-2023", "b": "azure-code-2023"},
      **slots(1.0, mix=[{"a": 0.5, "b": 0.4}])}, "slot 0: field 'mix' sums to"),
    ({"workloads": {"a": "azure-conv-2023", "b": "azure-code-2023"},
      **slots(1.0, mix=[{"a": 0.5, "c": 0.5}])}, "slot 0: field 'mix' names"),
    ({"workloads": {"a": "azure-conv-2023", "b": "azure-code-2023"}, **slots(1.0)},
     "slot 0: field 'mix' is missing"),
    (slots(0.0, 0.0), "every slot's rate is 0"),
    ({"rates": [1.0] * (MAX_SLOTS + 1)}, "at most"),
    ({"workloads": {f"s{k}": "azure-conv-2023" for k in range(MAX_STREAMS + 1)},
      **slots(1.0)}, f"at most {MAX_STREAMS}"),
    ({"slots": [{"start": 0, "hours": 0, "rate": 1}]}, "slot 0: field 'hours'"),
])
def test_bad_profiles_name_the_slot_and_field(data, where):
    with pytest.raises(PlannerError) as err:
        profile_from_dict(data, "p.yaml")
    msg = str(err.value)
    assert msg.startswith("p.yaml") and where in msg and "\n" not in msg


def test_builtin_week_shapes_carry_their_cited_figures():
    week = builtin_profile("enterprise-week")
    r = week.rates
    assert len(r) == 168 and week.relative and math.isclose(r.max(), 1.0)
    monday = r[:24]
    assert monday.min() / monday.max() == pytest.approx(CODE.trough, rel=0.05)
    assert int(np.argmax(monday)) in (19, 20)  # the peak hour, UTC
    saturday = r[5 * 24:6 * 24]
    assert saturday.max() / monday.max() == pytest.approx(CODE.weekend, rel=1e-6)
    chat = builtin_profile("chat-week").rates
    assert chat[:24].min() / chat[:24].max() == pytest.approx(CHAT.trough, rel=0.05)
    mixed = builtin_profile("chat-code-week")
    d = mixed.demand()
    assert np.allclose(d.sum(axis=1), mixed.rates)
    assert d[:, 1].sum() / d.sum() == pytest.approx(CODE_WEEK_SHARE)
    # the mix drifts: code's share is highest on a weekday evening, lowest at a weekend
    share = d[:, 1] / d.sum(axis=1)
    assert share[19] > 0.5 > share[5 * 24 + 8]
