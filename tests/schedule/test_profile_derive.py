"""`planner workload profile`: rates and mixes per slot from timestamps."""

from __future__ import annotations

import numpy as np
import pytest

from planner.core.errors import PlannerError
from planner.workload.profile_derive import derive_profile

NS = 1_000_000_000
MONDAY = 1_715_558_400  # 2024-05-13 00:00 UTC, a Monday


def times(seconds):
    return (np.asarray(seconds, float) * NS).astype(np.int64)


def test_fold_none_counts_whole_slots_and_drops_a_partial_one():
    t = np.concatenate([np.linspace(0, 599, 600), np.linspace(600, 1199, 300),
                        [1300.0]])
    p = derive_profile({"a": times(t)}, slot_minutes=10, fold="none", name="x")
    assert len(p.slots) == 2 and p.period_hours == pytest.approx(1 / 3)
    assert p.rates.tolist() == pytest.approx([1.0, 0.5])


def test_fold_day_averages_over_the_days_covered():
    # two days, hour 0 busy (3600 and 7200 requests), the rest one request per hour
    day = 86400
    t = [MONDAY + s for s in np.linspace(0, 3599, 3600)]
    t += [MONDAY + day + s for s in np.linspace(0, 3599, 7200)]
    t += [MONDAY + h * 3600 + 10 for h in range(1, 24)]
    t += [MONDAY + day + h * 3600 + 10 for h in range(1, 24)]
    t += [MONDAY + 2 * day - 1]
    p = derive_profile({"a": times(t)}, slot_minutes=60, fold="day", name="x")
    assert len(p.slots) == 24
    assert p.rates[0] == pytest.approx((3600 + 7200) / 7200, rel=1e-3)
    assert p.rates[5] == pytest.approx(2 / 7200, rel=1e-2)


def test_fold_week_refuses_holes_and_mixes_streams():
    t = MONDAY + np.linspace(0, 3599, 100)
    with pytest.raises(PlannerError, match="covers 1.0 h of the 168-h week"):
        derive_profile({"a": times(t)}, slot_minutes=60, fold="week", name="x")
    a = MONDAY + np.linspace(0, 7 * 86400 - 1, 700)
    b = MONDAY + np.linspace(0, 7 * 86400 - 1, 300)
    p = derive_profile({"chat": times(a), "code": times(b)}, slot_minutes=60, fold="week",
                       name="x", workloads={"chat": "azure-conv-2023",
                                            "code": "azure-code-2023"})
    assert len(p.slots) == 168 and p.streams == ("chat", "code")
    shares = np.array([s.mix["code"] for s in p.slots if sum(s.mix.values())])
    assert shares.mean() == pytest.approx(0.3, abs=0.05)
    assert all(abs(sum(s.mix.values()) - 1) < 1e-9 for s in p.slots)
