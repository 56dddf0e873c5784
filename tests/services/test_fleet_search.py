"""BO over joint layouts (planner.services.search): pseudo-types carry the services'
layouts through any outer search; the objective is the fleet's λ on the perf model and
refuses what the services cannot share."""

from __future__ import annotations

import pytest
import yaml

from planner.fleet.inventory import inventory_from_dict
from planner.outer.exact import ExactSearch
from planner.outer.joint import solve_joint
from planner.outer.registry import make_search
from planner.services.search import JointObjective, pseudo_space, split_layout
from planner.services.solve import FleetRequest, ServiceModel, weights
from planner.services.spec import fleet_from_dict

INVENTORY = {"name": "t", "gpus": [{"type": "H20", "count": 16, "price_per_hour": 1.0},
                                   {"type": "H800", "count": 8, "price_per_hour": 2.0}]}
FLEET = """
services:
  - {name: chat, model: llama-3.1-8b, workload: azure-conv-2023, share: 0.6}
  - {name: code, model: llama-3.1-8b, workload: azure-code-2023, share: 0.4,
     slo: {ttft_ms: 4000, tpot_ms: 50}}
"""


def joint_milp(req, models):
    """The joint MILP over the same columns (its optimum and proven bound)."""
    space, w = req.space(), weights(req)
    return solve_joint(space, [m.columns(space, w[m.service.name]) for m in models],
                       prune_tol=ExactSearch().prune_tol)


@pytest.fixture(scope="module")
def fleet():
    req = FleetRequest(fleet_from_dict(yaml.safe_load(FLEET), "f.yaml"),
                       inventory_from_dict(INVENTORY, "inv.yaml"), budget=12.0)
    return req, [ServiceModel.build(req, s) for s in req.fleet.services]


def test_pseudo_types_round_trip():
    from planner.outer.protocol import SearchSpace, TypeSupply

    space = SearchSpace((TypeSupply("H20", 16, 1.0), TypeSupply("H800", 8, 2.0)), budget=9.0)
    pseudo = pseudo_space(space, ["a", "b"])
    assert [t.name for t in pseudo.types] == ["a::H20", "a::H800", "b::H20", "b::H800"]
    assert pseudo.budget == 9.0
    assert split_layout((("a::H20", 2), ("b::H800", 4), ("a::H20", 1)), ["a", "b"]) == \
        {"a": (("H20", 1), ("H20", 2)), "b": (("H800", 4),)}


def test_objective_is_the_fleets_lambda(fleet):
    req, models = fleet
    w = weights(req)
    obj = JointObjective(req, models, w)
    layout = (("chat::H800", 1), ("code::H800", 1), ("code::H20", 2))
    score = obj(layout)
    per = split_layout(layout, ["chat", "code"])
    expect = min(m.evaluator(per[m.service.name]).value / w[m.service.name] for m in models)
    assert score.feasible and score.value == pytest.approx(expect)
    assert score.cost_per_hour == pytest.approx(2 + 2 + 2)


def test_objective_refuses_what_cannot_be_shared(fleet):
    req, models = fleet
    obj = JointObjective(req, models, weights(req))
    # 6 + 6 H800 together: more than the 8 there are
    assert not obj((("chat::H800", 6), ("code::H800", 6))).feasible
    # a service with no island serves nothing: the fleet serves nothing
    assert not obj((("chat::H800", 2),)).feasible


def test_a_search_over_joint_layouts_is_feasible_and_below_the_milp(fleet):
    req, models = fleet
    obj = JointObjective(req, models, weights(req))
    space = pseudo_space(req.space(), ["chat", "code"])
    found = make_search("random", evaluations=48).search(space, obj, seed=0)
    assert found.best_score is not None and found.best_score.feasible
    assert found.best_score.cost_per_hour <= 12.0 + 1e-9
    milp = joint_milp(req, models)
    # the MILP is the optimum of the same model (to its gap and pruning tolerance)
    assert found.best_score.value <= milp.bound * (1 + 1e-6)


def test_warm_start_is_the_joint_lp_rounded(fleet):
    req, models = fleet
    obj = JointObjective(req, models, weights(req))
    space = pseudo_space(req.space(), ["chat", "code"])
    warm = obj.warm_start(space)
    assert warm and all(name.split("::")[0] in ("chat", "code") for name, _ in warm)
    score = obj(warm)
    assert score.feasible and score.cost_per_hour <= 12.0 + 1e-9
    milp = joint_milp(req, models)
    # near the MILP's optimum, never above its proven bound
    assert 0.8 * milp.value <= score.value <= milp.bound * (1 + 1e-6)
