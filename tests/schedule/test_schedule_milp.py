"""The two-stage schedule MILP on small problems checked by hand and by enumeration."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from planner.schedule.accounting import account, capacity
from planner.schedule.milp import (
    Kind,
    Problem,
    SlotDecision,
    TypeTiers,
    level_groups,
    reserve,
    scale_slot,
    schedule_slots,
)
from planner.schedule.solve import (
    ON_DEMAND_ONLY,
    RESERVED_ONLY,
    best_schedule,
    bridge,
    plan_schedule,
    rebalance,
)

#: X: 1-GPU islands of 10 requests/s, reserved 1, on demand 2, spot 0.8 (20 % pre-empted);
#: Y: 2-GPU islands of 25 requests/s, reserved 1.5, on demand 2.5, no spot.
TYPES = {"X": TypeTiers("X", (1.0, 2.0, 0.8), (8, 6, 3), 0.2),
         "Y": TypeTiers("Y", (1.5, 2.5, 0.0), (8, 8, 0), 0.0)}
KINDS = (Kind(0, "X", 1, "both", np.array([10.0])), Kind(0, "Y", 2, "both", np.array([25.0])))


def problem(demand, lag_h=0.0, types=TYPES):
    d = np.asarray(demand, float)[:, None]
    return Problem(KINDS, dict(types), (np.array([1.0]),), d, np.ones(len(d)), lag_h)


def brute_slot(d: float) -> float:
    """The cheapest on-demand + spot islands for one hour at ``d`` requests/s."""
    best = np.inf
    for ox, sx, oy in itertools.product(range(7), range(4), range(5)):
        if 10 * ox + 8 * sx + 25 * oy >= d - 1e-9 and ox <= 6 and 2 * oy <= 8:
            best = min(best, 2 * ox + 0.8 * sx + 2.5 * 2 * oy)
    return best


@pytest.mark.parametrize("d", [5.0, 12.0, 31.0, 47.0, 73.0, 99.0])
def test_one_slot_is_the_cheapest_by_enumeration(d):
    p = problem([d])
    got = scale_slot(p, 0, np.zeros(2, int), None)
    assert got is not None
    cost = float(p.price(1) @ got.on_demand + p.price(2) @ got.spot)
    assert cost == pytest.approx(brute_slot(d), rel=1e-6)
    assert capacity(p, np.zeros(2), got)[0] >= d - 1e-6


def test_caps_bound_a_slot():
    # X: 6 on demand + 3 spot (x0.8) = 84, Y: 4 islands = 100 -> 184 at most
    assert scale_slot(problem([184.0]), 0, np.zeros(2, int), None) is not None
    assert scale_slot(problem([185.0]), 0, np.zeros(2, int), None) is None


def test_starts_are_paid_and_counted_cyclically():
    lag = 0.5
    p = problem([20.0, 20.0, 20.0], lag_h=lag)
    slots = schedule_slots(p, np.zeros(2, int))
    bill = account(p, np.zeros(2, int), slots)
    # the same islands every hour: a week follows a week, nothing is ever started
    assert bill.startup == 0.0
    p = problem([20.0, 0.0, 0.0], lag_h=lag)
    slots = schedule_slots(p, np.zeros(2, int))
    bill = account(p, np.zeros(2, int), slots)
    on = float(p.price(1) @ slots[0].on_demand + p.price(2) @ slots[0].spot)
    assert bill.startup == pytest.approx(lag * on)
    assert bill.total == pytest.approx(on * (1 + lag))


def test_a_start_that_costs_more_than_idling_is_not_made():
    # two busy hours around a quiet one: stopping and restarting costs lag > 1 h of rent
    p = problem([20.0, 1.0, 20.0, 20.0], lag_h=2.0)
    myopic = schedule_slots(p, np.zeros(2, int))
    bridged = bridge(p, myopic)
    up = [float(p.price(1) @ s.on_demand + p.price(2) @ s.spot) for s in bridged]
    assert up[1] == pytest.approx(up[0])  # kept up through the quiet hour
    zero = np.zeros(2, int)
    assert account(p, zero, bridged).total < account(p, zero, myopic).total
    # a gap longer than the lag is not bridged
    p = problem([20.0, 1.0, 1.0, 1.0, 20.0], lag_h=2.0)
    slots = bridge(p, schedule_slots(p, zero))
    assert float(p.price(1) @ slots[2].on_demand + p.price(2) @ slots[2].spot) < up[0]


def test_reserve_follows_utilisation():
    flat = problem([20.0] * 12)
    r = reserve(flat)
    assert r is not None and r.reserved.sum() > 0  # 1 $/h reserved < 2 $/h rented, always busy
    spiky = problem([100.0] + [0.5] * 23)
    r = reserve(spiky)
    assert r is not None
    reserved_capacity = float(np.array([10.0, 25.0]) @ r.reserved)
    assert reserved_capacity < 30.0  # the peak is rented for its one hour


def test_baselines_and_the_plan():
    p = problem([60.0] * 6 + [5.0] * 18)
    plan = plan_schedule(p)
    res_only = plan_schedule(p, allow=RESERVED_ONLY)
    od_only = plan_schedule(p, allow=ON_DEMAND_ONLY)
    assert plan and res_only and od_only
    assert plan.bill.total <= min(res_only.bill.total, od_only.bill.total) + 1e-9
    assert od_only.reserved.sum() == 0 and od_only.bill.reserved == 0
    assert all(d.on_demand.sum() == 0 and d.spot.sum() == 0 for d in res_only.slots)


@pytest.mark.parametrize("demand", [[60.0] * 24, [60.0] * 6 + [5.0] * 18,
                                    [90.0] + [1.0] * 23, list(np.linspace(5, 95, 24))])
def test_the_answer_is_never_dearer_than_a_baseline(demand):
    p = problem(demand, lag_h=0.2)
    best = best_schedule(p)
    assert best is not None and best.baselines is not None
    for b in best.baselines.values():
        if b is not None:
            assert best.bill.total <= b.bill.total + 1e-9


def test_rebalance_reserves_what_is_rented_long_enough():
    p = problem([20.0] * 10)
    rented = [SlotDecision(np.array([2, 0]), np.zeros(2, int), np.ones(2))] * 10
    more = rebalance(p, np.zeros(2, int), rented)
    assert more is not None and more[0] == 2  # 2 $/h x 10 h > 1 $/h x 10 h
    brief = [SlotDecision(np.array([2, 0]), np.zeros(2, int), np.ones(2))] + \
        [SlotDecision(np.zeros(2, int), np.zeros(2, int), np.zeros(2))] * 9
    assert rebalance(p, np.zeros(2, int), brief) is None  # 2 $ rented < 10 $ reserved


def test_level_groups_cover_every_slot_once():
    demand = np.array([[1.0], [5.0], [2.0], [9.0], [9.0], [3.0]])
    groups = level_groups(demand, 3)
    assert sorted(int(t) for g in groups for t in g) == list(range(6))
    assert len(groups) <= 3
