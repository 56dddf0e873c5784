"""What-if studies on a small inventory: the orderings that must hold between
scenarios whose feasible sets are nested, the marginal answer against the computed
table, and the Pareto front."""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_whatif_fixtures import write_spec

from planner.whatif import load_spec, pareto_mask, run_whatif
from planner.whatif.marginal import MarginalOption, rank
from planner.whatif.pareto import comparable, pareto_points
from planner.whatif.scenarios import MIX
from planner.whatif.tables import rows

# The specs use mip_gap 1e-6 and no pruning tolerance: values are optimal to ~1e-6.
REL = 1e-5
BUDGETS = [20, 32, 48, 64, 80, 96]


def geq(a: float, b: float) -> bool:
    return a >= b * (1 - REL) - 1e-9


@pytest.fixture(scope="module")
def inventory_study(tmp_path_factory):
    path = write_spec(tmp_path_factory.mktemp("whatif-inv"), {
        "budget_sweep": BUDGETS,
        "prices": {"H200": ["0.5x", "0.8x", "1.0x", "1.25x"], "H20": [0.5, 1.0, 1.5]},
        "remove": ["H200", "H20"],
        "add": [{"type": "H800", "count": 16, "price_per_hour": 2.0}],
        "equal_cost": True,
        "marginal": 16,
        "marginal_beyond_inventory": True,  # the per-type options are what is tested
    }, budget=56)
    return run_whatif(load_spec(path))


@pytest.fixture(scope="module")
def unlimited_study(tmp_path_factory):
    path = write_spec(tmp_path_factory.mktemp("whatif-unl"), {
        "budget_sweep": [24, 40, 64], "marginal": 16}, availability="unlimited", budget=40)
    return run_whatif(load_spec(path))


def by_option(result, study="budget"):
    out: dict[str, list[tuple[float, float]]] = {}
    for o in result.study(study):
        out.setdefault(o.scenario.option, []).append((o.scenario.budget, o.requests_per_s))
    return {k: sorted(v) for k, v in out.items()}


@pytest.mark.parametrize("study", ["inventory_study", "unlimited_study"])
def test_throughput_non_decreasing_in_budget(study, request):
    result = request.getfixturevalue(study)
    lines = by_option(result)
    assert set(lines) == {MIX, "H200 only", "H20 only"}
    for option, pts in lines.items():
        values = [v for _, v in pts]
        assert all(geq(b, a) for a, b in zip(values, values[1:], strict=False)), (option, pts)
    # the sweep is not flat: a bigger budget buys something for the mix
    assert lines[MIX][-1][1] > lines[MIX][0][1] > 0


@pytest.mark.parametrize("study", ["inventory_study", "unlimited_study"])
def test_heterogeneous_at_least_every_homogeneous_at_equal_cost(study, request):
    result = request.getfixturevalue(study)
    lines = by_option(result)
    mix = dict(lines[MIX])
    for option in ("H200 only", "H20 only"):
        for budget, value in lines[option]:
            assert geq(mix[budget], value), (option, budget, value, mix[budget])
    for o in result.outcomes:
        assert o.cost_per_hour <= o.scenario.budget * (1 + 1e-9)
        used = o.gpus
        for t in o.scenario.supply:
            assert used.get(t.name, 0) <= t.available


def test_mixing_pays_once_the_cheaper_type_runs_out(inventory_study):
    """The inventory's 32 H20 cost 32 $/h: above that, H20 alone cannot spend the budget
    and H200 alone leaves the cheap capacity unused, so the mix beats both (with
    unlimited supply either type alone may be the best buy)."""
    lines = by_option(inventory_study)
    mix = dict(lines[MIX])
    for b in (b for b in BUDGETS if b >= 48):
        best_single = max(dict(lines[o])[b] for o in ("H200 only", "H20 only"))
        assert mix[b] > 1.01 * best_single, (b, mix[b], best_single)


def test_equal_cost_study_matches_the_sweep_at_the_base_budget(inventory_study):
    eq = {o.scenario.option: o.requests_per_s for o in inventory_study.study("equal_cost")}
    assert set(eq) == {MIX, "H200 only", "H20 only"}
    assert eq[MIX] == pytest.approx(inventory_study.base.requests_per_s)
    assert all(geq(eq[MIX], v) for v in eq.values())


def test_price_drop_never_lowers_throughput(inventory_study):
    for gpu in ("H200", "H20"):
        pts = sorted((o.scenario.params["price"], o.requests_per_s)
                     for o in inventory_study.study("price")
                     if o.scenario.params["gpu"] == gpu)
        assert len(pts) >= 3
        values = [v for _, v in pts]  # by increasing price: non-increasing throughput
        assert all(geq(a, b) for a, b in zip(values, values[1:], strict=False)), (gpu, pts)
    # the 1.0x point is the base scenario
    one = [o for o in inventory_study.study("price") if o.scenario.params["factor"] == 1.0]
    assert one and all(o.requests_per_s == pytest.approx(inventory_study.base.requests_per_s)
                       for o in one)
    # halving the H200 price at this budget is worth a lot
    cheap = [o for o in inventory_study.study("price") if o.scenario.params["gpu"] == "H200"
             and o.scenario.params["factor"] == 0.5]
    assert cheap[0].requests_per_s > 1.05 * inventory_study.base.requests_per_s


def test_removing_a_type_never_raises_and_adding_never_lowers(inventory_study):
    base = inventory_study.base.requests_per_s
    removed = inventory_study.study("remove")
    assert {o.scenario.params["gpu"] for o in removed} == {"H200", "H20"}
    for o in removed:
        assert o.requests_per_s <= base * (1 + REL)
        assert o.scenario.params["gpu"] not in o.gpus
    for o in inventory_study.study("add"):
        assert geq(o.requests_per_s, base)


def test_marginal_answer_picks_the_largest_gain_in_the_table(inventory_study):
    answer = inventory_study.marginal
    table = [r for r in rows(inventory_study) if r["study"] == "marginal"]
    assert len(table) == len(answer.options) >= 3  # 2 types + current availability
    base = inventory_study.base.requests_per_s
    gains = [r["requests_per_s"] - base for r in table]
    best = answer.best
    assert best.gain == pytest.approx(max(gains), abs=answer.tolerance + 1e-9)
    assert best.outcome.cost_per_hour <= inventory_study.spec.base_budget + 16 + 1e-9
    # the sentence states the step, the chosen option and its figures
    assert "16 $/h" in answer.sentence and best.label in answer.sentence
    assert f"{best.outcome.requests_per_s:.2f}" in answer.sentence
    # ranked best first
    assert all(a.gain >= b.gain - answer.tolerance
               for a, b in zip(answer.options, answer.options[1:], strict=False))
    # a "more of t" option can always do what "current availability" does
    current = [o for o in answer.options if o.gpu is None]
    assert current, "the budget binds (56 < 96 $/h): the no-purchase option is offered"
    for o in answer.options:
        assert geq(o.outcome.requests_per_s, current[0].outcome.requests_per_s)


def test_marginal_unlimited_buys_on_top_of_the_base_fleet(unlimited_study):
    answer = unlimited_study.marginal
    base = unlimited_study.base
    assert {o.gpu for o in answer.options} == {"H200", "H20"}
    for o in answer.options:
        supply = {t.name: t.available for t in o.outcome.scenario.supply}
        assert supply[o.gpu] == base.gpus.get(o.gpu, 0) + o.added
        assert o.added == math.floor(16 / {"H200": 4.0, "H20": 1.0}[o.gpu])
    # re-buying the whole fleet at the higher budget is at least as good as any increment
    assert answer.reference is not None
    assert all(geq(answer.reference.outcome.requests_per_s, o.outcome.requests_per_s)
               for o in answer.options)


def test_rank_prefers_no_purchase_within_tolerance():
    class Out:
        def __init__(self, v):
            self.requests_per_s = v

    opts = [MarginalOption("8 more A", "A", 8, Out(10.004), 2.004),
            MarginalOption("current", None, 0, Out(10.0), 2.0),
            MarginalOption("2 more B", "B", 2, Out(9.0), 1.0)]
    assert rank(opts, tolerance=0.01)[0].label == "current"
    assert [o.label for o in rank(opts, tolerance=0.001)] == [
        "8 more A", "current", "2 more B"]


def test_pareto_front_points_are_non_dominated(inventory_study):
    front = set(pareto_points(inventory_study))
    pts = [(k, o.cost_per_hour, o.requests_per_s) for k, o in
           enumerate(inventory_study.outcomes) if o.requests_per_s > 0
           and comparable(inventory_study, o)]
    assert front and front <= {k for k, _, _ in pts}
    # a price sweep is at other prices: none of its scenarios but the 1.0x ones compare
    for o in inventory_study.study("price"):
        assert comparable(inventory_study, o) == (o.scenario.params["factor"] == 1.0)
    for k, c, v in pts:
        dominated = any(c2 <= c and v2 >= v and (c2 < c or v2 > v) for _, c2, v2 in pts)
        assert (k in front) == (not dominated)


def test_pareto_mask_on_random_points():
    rng = np.random.default_rng(3)
    cost, value = rng.uniform(0, 10, 200), rng.uniform(0, 10, 200)
    cost[5], value[5] = cost[4], value[4]  # a duplicate: neither dominates the other
    mask = pareto_mask(cost, value)
    for i in range(200):
        dom = np.any((cost <= cost[i]) & (value >= value[i])
                     & ((cost < cost[i]) | (value > value[i])))
        assert mask[i] == (not dom)
    assert mask[4] == mask[5]
    # the front is a staircase: sorted by cost, value strictly increases
    order = np.argsort(cost[mask])
    assert np.all(np.diff(value[mask][order]) >= 0)
