"""Exact outer MILP: agrees with brute force over layouts, prunes only dominated sizes,
respects inventory and budget, and the target-rate mode minimises cost."""

from __future__ import annotations

import numpy as np
import pytest
from island_partitions import partitions

from planner.inner.max_rate import MaxRateMILP
from planner.inner.problem import InnerProblem, IslandSpec
from planner.outer.exact import prune, solve_exact
from planner.outer.protocol import SearchSpace, TypeSupply

PROB = np.array([0.5, 0.3, 0.2])


def synthetic_tables():
    """Two GPU types, sizes 1..4 and 1..3; prefill ~ linear in size, decode superlinear
    with a memory threshold (size 1 of type B cannot decode)."""
    tables = {}
    for g in range(1, 5):
        tables[("A", g)] = (np.array([3.0, 2.0, 1.0]) * g, np.array([1.0, 0.8, 0.5]) * g ** 1.3)
    for g in range(1, 4):
        dec = np.zeros(3) if g == 1 else np.array([2.0, 2.0, 1.5]) * g ** 1.5
        tables[("B", g)] = (np.array([5.0, 3.0, 2.0]) * g * 0.9, dec)
    return tables


def brute_force(space, tables):
    best = 0.0
    price = {t.name: t.price_per_hour for t in space.types}
    for pa in partitions(4, 4):
        for pb in partitions(3, 3):
            layout = [("A", g) for g in pa] + [("B", g) for g in pb]
            if not layout:
                continue
            if space.budget is not None and sum(price[t] * g for t, g in layout) > space.budget:
                continue
            prob = InnerProblem(
                tuple(IslandSpec(t, g) for t, g in layout), PROB, np.array([0, 10, 20]),
                np.array([10, 20, 30]), np.array([5, 15, 25]),
                np.array([tables[x][0] for x in layout]), np.array([tables[x][1] for x in layout]))
            res = MaxRateMILP().solve(prob)
            if res.feasible:
                best = max(best, res.R_sustained)
    return best


@pytest.mark.parametrize("budget", [None, 9.0, 5.0])
def test_exact_matches_brute_force(budget):
    space = SearchSpace((TypeSupply("A", 4, 1.0, 1), TypeSupply("B", 3, 2.0, 1)), budget=budget)
    tables = synthetic_tables()
    res = solve_exact(space, tables, PROB)
    assert res.status == "optimal"
    assert res.value == pytest.approx(brute_force(space, tables), rel=1e-6)
    used = {t: sum(g for x, g in res.layout if x == t) for t in ("A", "B")}
    assert used["A"] <= 4 and used["B"] <= 3
    if budget is not None:
        assert res.cost_per_hour <= budget + 1e-9
    assert res.bound >= res.value * (1 - 1e-9)


def test_pruning_removes_only_dominated_sizes():
    tables = synthetic_tables()
    kept, dropped = prune(tables, {"A": [1, 2, 3, 4], "B": [1, 2, 3]})
    keys = {(c.gpu, c.size, c.role) for c in kept}
    # prefill of A is linear in size: every size > 1 is matched by smaller islands
    assert ("A", 1, "prefill") in keys and ("A", 2, "prefill") not in keys
    # decode of A is superlinear: bigger islands are worth more than their parts
    assert {("A", g, "decode") for g in range(1, 5)} <= keys
    # B of size 1 cannot decode at all
    assert ("B", 1, "decode") not in keys
    assert dropped == 2 * 7 - len(kept)


def test_target_rate_minimises_cost():
    space_max = SearchSpace((TypeSupply("A", 4, 1.0, 1), TypeSupply("B", 3, 2.0, 1)))
    tables = synthetic_tables()
    best = solve_exact(space_max, tables, PROB)
    target = 0.5 * best.value
    res = solve_exact(SearchSpace(space_max.types, target_rps=target), tables, PROB)
    assert res.status == "optimal" and res.value == pytest.approx(target)
    assert res.cost_per_hour < best.cost_per_hour
    # no cheaper budget reaches the target
    cheaper = solve_exact(SearchSpace(space_max.types, budget=res.cost_per_hour - 1.0), tables,
                          PROB)
    assert cheaper.value < target


def test_infeasible_when_nothing_decodes():
    tables = {("B", 1): (np.ones(3), np.zeros(3))}
    res = solve_exact(SearchSpace((TypeSupply("B", 1, 1.0, 1),)), tables, PROB)
    assert res.status == "infeasible" and "both prefill and decode" in res.message


def test_pruning_tolerance_keeps_a_proven_bound():
    space = SearchSpace((TypeSupply("A", 4, 1.0, 1), TypeSupply("B", 3, 2.0, 1)))
    tables = synthetic_tables()
    truth = brute_force(space, tables)
    res = solve_exact(space, tables, PROB, prune_tol=0.2)
    assert res.value <= truth * (1 + 1e-9)
    assert res.value >= 0.8 * truth
    assert res.bound >= truth * (1 - 1e-9)


def test_rare_range_needs_a_whole_island():
    """A range with tiny demand that only type B can prefill: the MILP must buy a B
    island, not "serve" it with a fraction of an island that rounds to none (a
    tolerance artefact the coverage rows exclude)."""
    prob = np.array([1.0 - 1e-8, 1e-8])
    tables = {("A", 1): (np.array([10.0, 0.0]), np.array([10.0, 10.0])),
              ("A", 2): (np.array([20.0, 0.0]), np.array([20.0, 20.0])),
              ("B", 1): (np.array([1.0, 1.0]), np.array([1.0, 1.0]))}
    types = (TypeSupply("A", 2, 1.0), TypeSupply("B", 1, 50.0))
    res = solve_exact(SearchSpace(types, target_rps=5.0), tables, prob)
    assert res.status == "optimal"
    assert ("B", 1, "prefill") in res.counts  # the only island able to prefill range 1
    assert res.cost_per_hour == pytest.approx(52.0)


def test_relaxed_layout_restricted_milp_is_feasible_and_near_optimal():
    from planner.outer.exact import ExactSearch

    class Tables:  # the two methods ExactSearch needs of an evaluator
        class context:
            class ranges:
                prob = PROB

        @staticmethod
        def range_tables(gpu, size):
            return synthetic_tables()[(gpu, size)]

    space = SearchSpace((TypeSupply("A", 4, 1.0), TypeSupply("B", 3, 2.0)), budget=8.0)
    warm = ExactSearch(prune_tol=0.0).relaxed_layout(space, Tables())
    best = ExactSearch(prune_tol=0.0).solve(space, Tables())
    assert warm and space.fits(warm)
    tables = synthetic_tables()
    prob = InnerProblem(
        tuple(IslandSpec(t, g) for t, g in warm), PROB, np.array([0, 10, 20]),
        np.array([10, 20, 30]), np.array([5, 15, 25]),
        np.array([tables[x][0] for x in warm]), np.array([tables[x][1] for x in warm]))
    value = MaxRateMILP().solve(prob).R_sustained
    assert 0.9 * best.value <= value <= best.value * (1 + 1e-6)
