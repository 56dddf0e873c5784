"""The exact outer MILP with colocated columns (issue 28, item 6): a third role whose
share of an island serves both phases of a range, priced as the inner solver prices
it -- so the MILP agrees with brute force over layouts scored by the inner MILP, and on
the real perf model it finds the one-island colocated plan a local polish missed."""

from __future__ import annotations

import numpy as np
import pytest
from island_partitions import partitions

from planner.inner.max_rate import MaxRateMILP
from planner.inner.problem import InnerProblem, IslandSpec
from planner.outer.exact import COLOCATED, prune, solve_exact
from planner.outer.protocol import COST_TOL, SearchSpace, TypeSupply

PROB = np.array([0.5, 0.3, 0.2])
START, END, MID = np.array([0, 10, 20]), np.array([10, 20, 30]), np.array([5, 15, 25])


def synthetic_tables(factor: float = 1.3):
    """Two GPU types as in test_exact_solver (B of size 1 cannot decode), plus colocated
    rates: ``factor`` times the rate of one island time-sharing both phases
    (P D / (P + D)) where it decodes; B of size 1 serves colocated only."""
    tables, both = {}, {}
    for g in range(1, 5):
        p, d = np.array([3.0, 2.0, 1.0]) * g, np.array([1.0, 0.8, 0.5]) * g ** 1.3
        tables[("A", g)] = (p, d)
        both[("A", g)] = factor * p * d / (p + d) * (1.0 if g % 2 else 0.9)
    for g in range(1, 4):
        p = np.array([5.0, 3.0, 2.0]) * g * 0.9
        d = np.zeros(3) if g == 1 else np.array([2.0, 2.0, 1.5]) * g ** 1.5
        tables[("B", g)] = (p, d)
        both[("B", g)] = (np.array([1.2, 1.0, 0.8]) if g == 1
                          else factor * p * d / (p + d))
    return tables, both


def inner_rate(layout, tables, both, prob=PROB):
    """The inner MILP's rate of a layout, colocated role offered (what the planner's
    evaluator scores it with)."""
    p = InnerProblem(tuple(IslandSpec(t, g) for t, g in layout), prob, START, END, MID,
                     np.array([tables[x][0] for x in layout]),
                     np.array([tables[x][1] for x in layout]),
                     both_rps=np.array([both[x] for x in layout]))
    res = MaxRateMILP().solve(p)
    return res.R_sustained if res.feasible else 0.0


def layouts(space):
    price = {t.name: t.price_per_hour for t in space.types}
    avail = {t.name: t.available for t in space.types}
    for pa in partitions(avail["A"], avail["A"]):
        for pb in partitions(avail["B"], avail["B"]):
            layout = [("A", g) for g in pa] + [("B", g) for g in pb]
            cost = sum(price[t] * g for t, g in layout)
            if layout and (space.budget is None or cost <= space.budget + 1e-9):
                yield layout, cost


@pytest.mark.parametrize("factor", [0.8, 1.3])
@pytest.mark.parametrize("budget", [None, 9.0, 5.0, 2.0])
def test_colocated_milp_matches_brute_force(budget, factor):
    space = SearchSpace((TypeSupply("A", 4, 1.0, 1), TypeSupply("B", 3, 2.0, 1)),
                        budget=budget)
    tables, both = synthetic_tables(factor)
    res = solve_exact(space, tables, PROB, both=both)
    truth = max(inner_rate(lay, tables, both) for lay, _ in layouts(space))
    assert res.status == "optimal"
    assert res.value == pytest.approx(truth, rel=1e-6)
    # the MILP's layout scores at least its T with the inner solver (same pricing)
    assert inner_rate(res.layout, tables, both) >= res.value * (1 - 1e-6)
    if budget is not None:
        assert res.cost_per_hour <= budget + 1e-9


def test_colocated_columns_are_used_where_they_win():
    space = SearchSpace((TypeSupply("A", 4, 1.0, 1), TypeSupply("B", 3, 2.0, 1)),
                        budget=2.0)
    tables, both = synthetic_tables(1.3)
    res = solve_exact(space, tables, PROB, both=both)
    assert COLOCATED in res.roles
    # without the columns the same budget serves less (it was the polish's job)
    assert solve_exact(space, tables, PROB).value < res.value * (1 - 1e-6)


def test_target_mode_finds_the_cheapest_plan_with_colocated_islands():
    space = SearchSpace((TypeSupply("A", 4, 1.0, 1), TypeSupply("B", 3, 2.0, 1)))
    tables, both = synthetic_tables(1.3)
    for target in (0.8, 2.0, 4.0):
        res = solve_exact(SearchSpace(space.types, target_rps=target), tables, PROB,
                          both=both)
        cheapest = min(cost for lay, cost in layouts(space)
                       if inner_rate(lay, tables, both) >= target * (1 - 1e-9))
        assert res.status == "optimal"
        assert res.cost_per_hour == pytest.approx(cheapest)
        assert inner_rate(res.layout, tables, both) >= target * (1 - COST_TOL)


def test_one_island_of_gpus_is_served_colocated():
    """One GPU of B: no prefill-and-decode pair exists, a colocated island does."""
    tables, both = synthetic_tables()
    space = SearchSpace((TypeSupply("B", 1, 1.0, 1),))
    assert solve_exact(space, tables, PROB).status == "infeasible"
    res = solve_exact(space, tables, PROB, both=both)
    assert res.status == "optimal" and res.roles == (COLOCATED,)
    # its time split over the ranges in proportion to their demand
    assert res.value == pytest.approx(1.0 / float(np.sum(PROB / both[("B", 1)])))
    nothing = {k: np.zeros(3) for k in both}
    res = solve_exact(space, tables, PROB, both=nothing)
    assert res.status == "infeasible" and "both prefill and decode" in res.message


def test_no_colocated_tables_changes_nothing():
    space = SearchSpace((TypeSupply("A", 4, 1.0, 1), TypeSupply("B", 3, 2.0, 1)),
                        budget=9.0)
    tables, both = synthetic_tables()
    plain = solve_exact(space, tables, PROB)
    zero = solve_exact(space, tables, PROB, both={k: np.zeros(3) for k in both})
    assert COLOCATED not in plain.roles
    assert (zero.layout, zero.roles, zero.value) == (plain.layout, plain.roles, plain.value)
    kept, dropped = prune(tables, {"A": [1, 2, 3, 4], "B": [1, 2, 3]})
    kept0, dropped0 = prune(tables, {"A": [1, 2, 3, 4], "B": [1, 2, 3]},
                            both={k: np.zeros(3) for k in both})
    assert kept == kept0 and dropped0 == dropped + 7


def test_pruning_drops_colocated_sizes_a_prefill_decode_pair_beats():
    tables = {("A", g): (np.array([4.0, 4.0]) * g, np.array([2.0, 2.0]) * g)
              for g in (1, 2, 3)}
    # size 2: below what prefill 1 + decode 1 give in both rows -> pruned; size 3:
    # more than any pair within 3 GPUs gives (prefill 1 + decode 2 give 4, 4) -> kept
    both = {("A", 1): np.array([1.5, 1.5]), ("A", 2): np.array([1.9, 1.9]),
            ("A", 3): np.array([4.5, 4.5])}
    kept, _ = prune(tables, {"A": [1, 2, 3]}, both=both)
    keys = {(c.gpu, c.size, c.role) for c in kept if c.role == COLOCATED}
    assert keys == {("A", 1, COLOCATED), ("A", 3, COLOCATED)}


def test_rare_range_only_a_colocated_island_serves():
    """A range with tiny demand that no prefill island can serve but a colocated one
    can: the coverage rows count colocated islands, so the MILP buys one."""
    prob = np.array([1.0 - 1e-8, 1e-8])
    tables = {("A", 1): (np.array([10.0, 0.0]), np.array([10.0, 10.0])),
              ("A", 2): (np.array([20.0, 0.0]), np.array([20.0, 20.0])),
              ("B", 1): (np.zeros(2), np.zeros(2))}
    both = {("A", 1): np.zeros(2), ("A", 2): np.zeros(2), ("B", 1): np.array([1.0, 1.0])}
    types = (TypeSupply("A", 2, 1.0), TypeSupply("B", 1, 50.0))
    # disaggregated, nothing can prefill range 1: no plan (not one "serving" it within
    # HiGHS's feasibility tolerance)
    res = solve_exact(SearchSpace(types, target_rps=5.0), tables, prob)
    assert res.status == "infeasible" and not res.layout and "range 1" in res.message
    res = solve_exact(SearchSpace(types, target_rps=5.0), tables, prob, both=both)
    assert res.status == "optimal"
    assert res.counts.get(("B", 1, COLOCATED)) == 1
    assert res.cost_per_hour == pytest.approx(52.0)


# ------------------------------------------------------------- on the real perf model
THREE = ("{name: three, min_island: 1, gpus: ["
         "{type: H100-SXM, count: 64, price_per_hour: 4.50}, "
         "{type: H200, count: 64, price_per_hour: 5.75}, "
         "{type: A100-80G, count: 64, price_per_hour: 3.50}]}")


def _request(tmp_path, **kw):
    from perfmodel import SLO
    from planner.context.request import PlanRequest
    from planner.fleet.inventory import load_inventory

    inv = tmp_path / "three.yaml"
    inv.write_text(THREE)
    # TPOT 100 ms: since issue 29 a colocated island holds its TPOT ceiling per request,
    # with the stalls of the 2k-token code prompts it prefills in the same passes; at
    # 50 ms those stalls price it out and the disaggregated MILP wins ($23.75/h)
    return PlanRequest(load_inventory(inv), target_rps=5.0, model="llama-3.1-70b",
                       workload="azure-code-2023", slo=SLO(2000, 100), **kw)


def _exact(req):
    from planner.context.evaluate import LayoutEvaluator, PlanningContext
    from planner.inner import make_inner_solver
    from planner.outer.exact import ExactSearch

    ev = LayoutEvaluator(PlanningContext.for_request(req), make_inner_solver("maxrate"))
    res = ExactSearch().solve(req.space(), ev)
    return res, ev(res.layout)


def test_issue_case_exact_search_reaches_the_colocated_optimum(tmp_path):
    """Issue 28's case (at a 100 ms TPOT ceiling, _request): one 4 x H100 colocated
    island serves 5 requests/s for $18/h; the disaggregated layouts need $21.75/h."""
    res, score = _exact(_request(tmp_path))
    assert res.status == "optimal" and COLOCATED in res.roles
    assert score.feasible and score.value >= 5.0 * (1 - COST_TOL)
    assert score.cost_per_hour <= 18.0 + 1e-9


def test_issue_case_through_make_plan(tmp_path):
    from planner.plan import make_plan

    plan = make_plan(_request(tmp_path, compare_homogeneous=False))
    assert plan.search.name == "exact"
    assert plan.value >= 5.0 * (1 - COST_TOL) and plan.cost_per_hour <= 18.0 + 1e-9


def test_colocated_off_keeps_the_disaggregated_milp(tmp_path):
    res, score = _exact(_request(tmp_path, colocated="off"))
    assert res.status == "optimal" and COLOCATED not in res.roles
    assert score.value >= 5.0 * (1 - COST_TOL)
    assert res.cost_per_hour > 18.0  # the colocated plan is out of its reach
