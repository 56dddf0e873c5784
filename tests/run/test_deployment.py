"""The typed deployment a plan describes (planner.run.deployment): one reader of plan.json's
islands, used by the simulator and the export."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from planner.context.placement import pair_flows
from planner.core.errors import PlannerError
from planner.fleet.inventory import inventory_from_dict
from planner.plan import PlanRequest, make_plan
from planner.run.deployment import Deployment
from planner.sim.cluster import cluster_from_deployment, cluster_from_plan

INV = inventory_from_dict({"name": "deploy-test", "gpus": [
    {"type": "H200", "count": 16, "price_per_hour": 4.0},
    {"type": "H20", "count": 32, "price_per_hour": 1.0}]}, "deploy-test.yaml")


@pytest.fixture(scope="module")
def plan_dict() -> dict:
    req = PlanRequest(INV, budget=80.0, ranges=8, search="exact", compare_homogeneous=False,
                      compare_exact=False)
    return make_plan(req).to_dict()


def test_the_deployment_is_the_plans_serving_islands(plan_dict):
    dep = Deployment.from_plan(plan_dict)
    live = [(k, i) for k, i in enumerate(plan_dict["islands"]) if i["role"] != "idle"]
    assert [i.index for i in dep.islands] == [k for k, _ in live]
    for isl, (_, raw) in zip(dep.islands, live, strict=True):
        assert (isl.gpu.name, isl.size, isl.role, isl.parallel.label(), isl.batch) == (
            raw["gpu"], raw["size"], raw["role"], raw["config"], raw["batch"])
        assert list(isl.servers) == raw["servers"]
        assert isl.location is not None and isl.location.node == raw["location"]["node"]
    assert dep.engine == plan_dict["request"]["engine"]
    assert dep.gpus_per_node == {"H200": 8, "H20": 8}
    assert len(dep.range_edges) == len(plan_dict["ranges"]["start"]) + 1


def test_kv_routes_are_the_plans_pair_flows(plan_dict):
    dep = Deployment.from_plan(plan_dict)
    pre = np.array([i["range_rps"] for i in plan_dict["islands"] if i["role"] == "prefill"])
    dec = np.array([i["range_rps"] for i in plan_dict["islands"] if i["role"] == "decode"])
    routes = dep.kv_routes()
    assert routes.shape == (len(pre), len(dec), pre.shape[1])
    assert np.allclose(routes, pair_flows(pre, dec))
    # every range's prefill flow leaves for some decode island
    assert np.allclose(routes.sum(axis=1), pre)


def test_the_simulator_builds_its_cluster_from_the_deployment(plan_dict):
    a = cluster_from_plan(plan_dict)
    b = cluster_from_deployment(Deployment.from_plan(plan_dict))
    assert [(x.gpu, x.size, x.role, x.tp, x.dp, x.ep, x.max_batch, x.location)
            for x in a.islands] == [(x.gpu, x.size, x.role, x.tp, x.dp, x.ep, x.max_batch,
                                     x.location) for x in b.islands]


@pytest.mark.parametrize("field, value, words", [
    ("size", 0, "plan.islands[0].size must be an integer >= 1"),
    ("config", "tp3-dp1-ep1", "needs tp x dp = island size"),
    ("role", "boss", "plan.islands[0].role must be"),
    ("servers", [-1], "plan.islands[0].servers must be a list of server indices"),
    ("shares", [1.0], "plan.islands[1].shares has 1 entries"),
])
def test_a_bad_island_field_is_named(plan_dict, field, value, words):
    bad = copy.deepcopy(plan_dict)
    # the range count is read off the first island: break the second one's shares
    bad["islands"][1 if field == "shares" else 0][field] = value
    with pytest.raises(PlannerError) as err:
        Deployment.from_plan(bad)
    assert words in str(err.value) and "\n" not in str(err.value)


def test_plan_json_is_the_deployments_serialisation():
    """The planner hands the simulator its typed deployment (Plan.deployment); reading
    plan.json back gives the same deployment, field by field."""
    req = PlanRequest(INV, budget=80.0, ranges=8, search="exact", compare_homogeneous=False,
                      compare_exact=False)
    plan = make_plan(req)
    typed, read = plan.deployment, Deployment.from_plan(plan.to_dict())
    assert typed.islands == read.islands and typed.idle == read.idle
    assert np.array_equal(typed.range_edges, read.range_edges)
    assert (typed.model.name, typed.engine, typed.workload, dict(typed.gpus_per_node)) == (
        read.model.name, read.engine, read.workload, dict(read.gpus_per_node))
