"""planner.fleet.network: tiers, placement, parsing of the inventory's network section, and its
use by the pipeline inner solvers."""

from __future__ import annotations

import pytest

from planner.context.evaluate import LayoutEvaluator
from planner.context.thesis_cases import context
from planner.core.errors import PlannerError
from planner.fleet.network import DEFAULT_NETWORK, SEED003_NETWORK, Location, parse_network
from planner.inner import make_inner_solver
from planner.inner.pipeline_map import DataCentreNetwork


def test_seed003_network_follows_the_reconstruction():
    t = SEED003_NETWORK.tiers
    assert [x.name for x in t] == ["node", "rack", "pod", "cross-pod"]
    # B2 / B3 = 2 (the worked example's factor of five), Gb/s per GPU-pair flow
    assert t[2].bandwidth_bytes_s / t[3].bandwidth_bytes_s == pytest.approx(2.0)
    assert t[1].bandwidth_bytes_s * 8 / 1e9 == pytest.approx(50.0)
    assert all(a.latency_s <= b.latency_s for a, b in zip(t, t[1:], strict=False))


def test_default_network_is_a_modern_scale_out_fabric():
    # one 400 Gb/s NIC per GPU: 50 GB/s per GPU inside a pod, 2:1 across pods
    t = DEFAULT_NETWORK.tiers
    assert t[1].bandwidth_bytes_s == pytest.approx(50e9)
    assert t[2].bandwidth_bytes_s == pytest.approx(50e9)
    assert t[2].bandwidth_bytes_s / t[3].bandwidth_bytes_s == pytest.approx(2.0)
    assert DEFAULT_NETWORK.gpus_per_pod == 8 * 4 * 8


def test_tier_between_locations():
    n = DEFAULT_NETWORK
    a = Location(0, 0, 0)
    assert n.tier_between(a, Location(0, 0, 0)) == 0
    assert n.tier_between(a, Location(0, 0, 1)) == 1
    assert n.tier_between(a, Location(0, 1, 2)) == 2
    assert n.tier_between(a, Location(1, 2, 4)) == 3


def test_place_packs_nodes_racks_pods():
    # 8 GPUs/node, 2 nodes/rack, 2 racks/pod
    locs = SEED003_NETWORK.place([4, 4, 8, 8, 16, 2, 2])
    assert locs[0] == locs[1] == Location(0, 0, 0)  # two 4-GPU islands share node 0
    assert locs[2].node == 1 and locs[3].node == 2 and locs[3].rack == 1
    assert locs[4].node == 3 and locs[4].pod == 0  # 16 GPUs: nodes 3-4
    assert locs[5] == locs[6] and locs[5].node == 5 and locs[5].pod == 1
    # an island that does not fit in the rest of a node starts a new one
    locs = SEED003_NETWORK.place([4, 8])
    assert locs[1].node == 1


def test_parse_overrides_and_keeps_defaults():
    spec = parse_network({"gpus_per_node": 4, "tiers": [{}, {"bandwidth_gbps": 100},
                                                         {"background": 0.25},
                                                         {"latency_us": 50}]})
    assert spec.gpus_per_node == 4 and spec.nodes_per_rack == DEFAULT_NETWORK.nodes_per_rack
    assert spec.tiers[1].bandwidth_bytes_s == pytest.approx(100e9 / 8)
    assert spec.tiers[2].effective_bytes_s == pytest.approx(
        0.75 * DEFAULT_NETWORK.tiers[2].bandwidth_bytes_s)
    assert spec.tiers[3].latency_s == pytest.approx(50e-6)
    assert spec.tiers[0] == DEFAULT_NETWORK.tiers[0]
    assert parse_network(None) is DEFAULT_NETWORK


@pytest.mark.parametrize("data, field", [
    ({"gpus_per_node": 0}, "gpus_per_node"),
    ({"gpus_per_node": 2.5}, "gpus_per_node"),
    ({"tiers": [{}, {}]}, "tiers"),
    ({"tiers": [{}, {}, {"background": 1.0}, {}]}, "tiers[2].background"),
    ({"tiers": [{}, {"bandwidth_gbps": "fast"}, {}, {}]}, "tiers[1].bandwidth_gbps"),
    ({"tiers": [{}, {"speed": 1}, {}, {}]}, "speed"),
    ({"switches": 3}, "switches"),
])
def test_parse_errors_name_the_field(data, field):
    with pytest.raises(PlannerError, match=field.replace("[", r"\[").replace("]", r"\]")):
        parse_network(data, "inv.yaml: field network")


def test_inventory_network_errors(tmp_path):
    from planner.fleet.inventory import load_inventory

    p = tmp_path / "inv.yaml"
    p.write_text("name: t\ngpus:\n  - type: H200\n    count: 8\nnetwork:\n"
                 "  tiers: [{bandwidth_gbps: -1}, {}, {}, {}]\n")
    with pytest.raises(PlannerError, match=r"inv.yaml: field network.tiers\[0\].bandwidth_gbps"):
        load_inventory(p)


def test_pipeline_solvers_feel_the_network():
    """Chains across small islands relay hidden states per token: a network 1000x slower
    (and with 1000x the latency) must lower the pipeline capacity."""
    ctx = context()
    layout = (("H20", 4),) * 4
    fast = DataCentreNetwork.from_spec(DEFAULT_NETWORK)
    slow = DataCentreNetwork(fast.bandwidth_bytes_s / 1000, fast.rtt_s * 1000)
    r_fast = LayoutEvaluator(ctx, make_inner_solver("seed001", context=ctx, network=fast)
                             ).solve(layout)
    r_slow = LayoutEvaluator(ctx, make_inner_solver("seed001", context=ctx, network=slow)
                             ).solve(layout)
    assert r_fast.feasible and r_slow.feasible
    assert r_slow.R_total < r_fast.R_total
