"""The several-service MILP (planner.outer.joint): agrees with brute force over pairs of
layouts, shares the inventory and the budget, meets every target at least cost, and for
one service is the single-model MILP."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from island_partitions import partitions

from planner.inner.max_rate import MaxRateMILP
from planner.inner.problem import InnerProblem, IslandSpec
from planner.outer.joint import ServiceColumns, solve_joint
from planner.outer.protocol import SearchSpace, TypeSupply

PROB_A = np.array([0.5, 0.3, 0.2])
PROB_B = np.array([0.1, 0.2, 0.7])


def tables(scale_p: float, scale_d: float):
    """Two GPU types, sizes 1..4 and 1..3 (type B's size 1 cannot decode)."""
    out = {}
    for g in range(1, 5):
        out[("A", g)] = (np.array([3.0, 2.0, 1.0]) * g * scale_p,
                         np.array([1.0, 0.8, 0.5]) * g ** 1.3 * scale_d)
    for g in range(1, 4):
        dec = np.zeros(3) if g == 1 else np.array([2.0, 2.0, 1.5]) * g ** 1.5 * scale_d
        out[("B", g)] = (np.array([5.0, 3.0, 2.0]) * g * 0.9 * scale_p, dec)
    return out


T1, T2 = tables(1.0, 1.0), tables(0.5, 2.0)


def capacity(layout, tab, prob) -> float:
    """The most one service serves on ``layout`` (0 if it cannot serve every range)."""
    if not layout:
        return 0.0
    problem = InnerProblem(
        tuple(IslandSpec(t, g) for t, g in layout), prob, np.array([0, 10, 20]),
        np.array([10, 20, 30]), np.array([5, 15, 25]),
        np.array([tab[x][0] for x in layout]), np.array([tab[x][1] for x in layout]))
    res = MaxRateMILP().solve(problem)
    return float(res.R_sustained) if res.feasible else 0.0


def layouts():
    for pa in partitions(4, 4):
        for pb in partitions(3, 3):
            yield tuple(("A", g) for g in pa) + tuple(("B", g) for g in pb)


def usage(layout):
    return (sum(g for t, g in layout if t == "A"), sum(g for t, g in layout if t == "B"))


def brute_force(space: SearchSpace, shares):
    """max over pairs of layouts that fit together of min(capacity_s / share_s)."""
    price = {t.name: t.price_per_hour for t in space.types}
    cap1 = {lay: capacity(lay, T1, PROB_A) for lay in layouts()}
    cap2 = {lay: capacity(lay, T2, PROB_B) for lay in layouts()}
    best = 0.0
    for l1, l2 in itertools.product(cap1, cap2):
        (a1, b1), (a2, b2) = usage(l1), usage(l2)
        if a1 + a2 > 4 or b1 + b2 > 3:
            continue
        cost = sum(price[t] * g for t, g in l1 + l2)
        if space.budget is not None and cost > space.budget + 1e-9:
            continue
        best = max(best, min(cap1[l1] / shares[0], cap2[l2] / shares[1]))
    return best


def space(budget=None, target=None):
    return SearchSpace((TypeSupply("A", 4, 1.0, 1), TypeSupply("B", 3, 2.0, 1)),
                       budget=budget, target_rps=target)


@pytest.mark.parametrize("budget,shares", [(None, (0.5, 0.5)), (8.0, (0.7, 0.3)),
                                           (6.0, (0.2, 0.8))])
def test_joint_matches_brute_force(budget, shares):
    sp = space(budget)
    res = solve_joint(sp, [ServiceColumns("one", T1, PROB_A, shares[0]),
                           ServiceColumns("two", T2, PROB_B, shares[1])])
    assert res.status == "optimal"
    assert res.value == pytest.approx(brute_force(sp, shares), rel=1e-6)
    one, two = res.services
    # every service gets at least λ x its share on its own islands
    assert capacity(one.layout, T1, PROB_A) >= res.value * shares[0] * (1 - 1e-6)
    assert capacity(two.layout, T2, PROB_B) >= res.value * shares[1] * (1 - 1e-6)
    a1, b1 = usage(one.layout)
    a2, b2 = usage(two.layout)
    assert a1 + a2 <= 4 and b1 + b2 <= 3
    if budget is not None:
        assert res.cost_per_hour <= budget + 1e-9
        assert res.cost_per_hour == pytest.approx(one.cost_per_hour + two.cost_per_hour)


def test_joint_at_least_every_split():
    """Splitting the budget between the services and solving each alone is never better
    than the joint optimum (each split is a feasible point of the joint MILP)."""
    budget, shares = 8.0, (0.5, 0.5)
    joint = solve_joint(space(budget), [ServiceColumns("one", T1, PROB_A, shares[0]),
                                        ServiceColumns("two", T2, PROB_B, shares[1])])
    best_split = 0.0
    for b1 in np.arange(0.0, budget + 1e-9, 1.0):
        for a_left in range(5):  # the first service's GPUs of A (B follows the budget)
            s1 = SearchSpace((TypeSupply("A", max(a_left, 1), 1.0, 1),
                              TypeSupply("B", 3, 2.0, 1)), budget=max(b1, 1e-6))
            r1 = solve_joint(s1, [ServiceColumns("one", T1, PROB_A)])
            if not r1.services[0].layout:
                continue
            a_used, b_used = usage(r1.services[0].layout)
            rest = [TypeSupply(n, k, p, 1) for n, k, p in
                    (("A", 4 - a_used, 1.0), ("B", 3 - b_used, 2.0)) if k > 0]
            money = budget - r1.cost_per_hour
            if not rest or money <= 0:
                continue
            r2 = solve_joint(SearchSpace(tuple(rest), budget=money),
                             [ServiceColumns("two", T2, PROB_B)])
            if r2.services[0].layout:
                best_split = max(best_split, min(r1.value / shares[0], r2.value / shares[1]))
    assert best_split > 0
    assert joint.value >= best_split * (1 - 1e-6)


def test_target_mode_meets_every_target_at_least_cost():
    targets = {"one": 1.6, "two": 0.8}  # the whole inventory serves 2.4 and 1.2
    top = max(targets.values())
    res = solve_joint(space(target=top),
                      [ServiceColumns("one", T1, PROB_A, targets["one"] / top),
                       ServiceColumns("two", T2, PROB_B, targets["two"] / top)], target=True)
    assert res.status == "optimal"
    one, two = res.services
    assert capacity(one.layout, T1, PROB_A) >= targets["one"] * (1 - 1e-6)
    assert capacity(two.layout, T2, PROB_B) >= targets["two"] * (1 - 1e-6)
    price = {"A": 1.0, "B": 2.0}
    cheapest = min(
        sum(price[t] * g for t, g in l1 + l2)
        for l1, l2 in itertools.product(list(layouts()), repeat=2)
        if usage(l1)[0] + usage(l2)[0] <= 4 and usage(l1)[1] + usage(l2)[1] <= 3
        and capacity(l1, T1, PROB_A) >= targets["one"] * (1 - 1e-9)
        and capacity(l2, T2, PROB_B) >= targets["two"] * (1 - 1e-9))
    assert res.cost_per_hour == pytest.approx(cheapest)


def test_a_service_nothing_serves_is_named():
    dead = {k: (v[0], np.zeros(3)) for k, v in T2.items()}  # no island decodes
    res = solve_joint(space(), [ServiceColumns("one", T1, PROB_A, 0.5),
                                ServiceColumns("two", dead, PROB_B, 0.5)])
    assert res.status == "infeasible"
    assert "service 'two'" in res.message
    assert not any(s.layout for s in res.services)


def test_one_service_is_the_single_model_milp():
    """solve_exact is solve_joint for one service of weight 1: the same optimum, layout
    and roles (tests/outer/test_exact_solver.py checks that one against brute force)."""
    from planner.outer.exact import solve_exact

    sp = space(7.0)
    exact = solve_exact(sp, T1, PROB_A)
    joint = solve_joint(sp, [ServiceColumns("only", T1, PROB_A)])
    assert joint.value == pytest.approx(exact.value)
    assert joint.services[0].layout == exact.layout
    assert joint.services[0].roles == exact.roles
    assert capacity(exact.layout, T1, PROB_A) == pytest.approx(exact.value, rel=1e-6)
