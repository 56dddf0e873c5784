"""`--search auto`: which search runs per case and why, and the footprint prior that
keeps BO islands able to hold the model."""

from __future__ import annotations

from dataclasses import replace

from planner.context.evaluate import LayoutEvaluator, PlanningContext
from planner.fleet.inventory import inventory_from_dict
from planner.inner import make_inner_solver
from planner.outer.protocol import SearchSpace, TypeSupply
from planner.plan import (
    EXACT_TABLE_LIMIT,
    PlanRequest,
    _smallest_serving,
    choose_search,
    footprint_space,
    make_plan,
)

INV = inventory_from_dict({"name": "t", "source": "test", "gpus": [
    {"type": "H200", "count": 16, "price_per_hour": 4.0},
    {"type": "H20", "count": 32, "price_per_hour": 1.0}]}, "test")


def test_auto_picks_exact_for_the_analytic_objective_and_bo_otherwise():
    req = PlanRequest(INV, budget=80.0)
    name, why = choose_search(req, req.space(), colocated=False)
    assert name == "exact" and "optimum" in why
    name, why = choose_search(replace(req, objective="simulated"), req.space(), False)
    assert name == "divider" and "simulated" in why
    name, why = choose_search(replace(req, inner="seed001"), req.space(), False)
    assert name == "divider" and "seed001" in why
    name, why = choose_search(req, req.space(), colocated=True)
    assert name == "exact" and "colocated" in why
    name, why = choose_search(replace(req, search="random"), req.space(), False)
    assert name == "random" and "as asked" in why


def test_auto_falls_back_to_bo_when_too_many_sizes_to_tabulate():
    # 40 types x 200 GPUs, every size tabulated: 8,000 tables > EXACT_TABLE_LIMIT
    space = SearchSpace(tuple(TypeSupply(f"T{k}", 200, 1.0) for k in range(40)))
    req = PlanRequest(INV)
    name, why = choose_search(req, space, colocated=False)
    assert EXACT_TABLE_LIMIT < 8_000 and name == "divider" and "8,000" in why


def test_footprint_prior_raises_min_island_to_the_smallest_serving_size():
    req = PlanRequest(INV, budget=80.0, ranges=8)
    ev = LayoutEvaluator(PlanningContext.for_request(req), make_inner_solver("maxrate"))
    plain = req.space()
    space = footprint_space(plain, ev)
    for t, u in zip(space.types, plain.types, strict=True):
        sizes = u.sizes()  # whole servers and shares of one (planner.fleet.servers)
        smallest = min(g for g in (_smallest_serving(ev, t.name, sizes, phase)
                                   for phase in ("prefill", "decode")) if g is not None)
        assert t.min_island == smallest > 1  # DeepSeek-V3 needs several GPUs anywhere
        for g in (g for g in sizes if g < smallest):
            assert not ev.island(t.name, g).prefill.feasible
            assert not ev.island(t.name, g).decode.feasible


def test_the_plan_names_the_search_it_used():
    plan = make_plan(PlanRequest(INV, budget=80.0, ranges=8, compare_homogeneous=False,
                                 compare_exact=False))
    assert plan.search.name == "exact"
    assert plan.search.settings["chosen"].startswith("exact MILP over")
    bo = make_plan(PlanRequest(INV, budget=80.0, ranges=8, search="random",
                               search_options={"evaluations": 16},
                               compare_homogeneous=False, compare_exact=False))
    smallest = {t.name: t.min_island for t in footprint_space(
        bo.request.space(), LayoutEvaluator(bo.context, make_inner_solver("maxrate"))).types}
    assert all(g >= smallest[t] for t, g in bo.search.best_layout)
