"""Seed 000 entry point: solve_blocks -> PipelinePlan (pipelines, capacity, times, bounds)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from planner.core.errors import PlannerError
from planner.inner.blocks import (
    BlockModel,
    Client,
    Load,
    NetworkDescription,
    PipelinePlan,
    Server,
    build_instance,
    solve_blocks,
)
from planner.inner.blocks.milp import solve_milp
from planner.inner.blocks.online import split_requests

GB = 1e9
MODEL = BlockModel(n_blocks=32, block_bytes=0.8 * GB, kv_bytes_per_token=128e3,
                   input_len=512, output_len=256, hidden_bytes_per_token=8192,
                   hidden_size=4096)


def islands() -> list[Server]:
    """Three islands, none of which can hold the 32-block (25.6 GB) model on its own."""
    return [
        Server("h100-a", 24 * GB, 0.4e-3, 8e-3, location="dc1"),
        Server("a100-b", 22 * GB, 0.7e-3, 15e-3, location="dc1"),
        Server("l4-c", 16 * GB, 1.6e-3, 40e-3, location="dc2"),
    ]


def check_plan(plan: PipelinePlan, n_blocks: int) -> None:
    assert plan.feasible
    for pipe in plan.pipelines + plan.capacity_pipelines:
        nxt = 1
        for hop in pipe.hops:  # contiguous cover of blocks 1..L, each processed once
            assert hop.first_block == nxt and hop.n_blocks >= 1
            nxt += hop.n_blocks
        assert nxt == n_blocks + 1
    assert sum(p.sessions for p in plan.pipelines) == plan.design_concurrency
    assert plan.concurrency_capacity >= plan.design_concurrency
    assert plan.throughput_rps == pytest.approx(
        sum(p.sessions / p.response_s for p in plan.capacity_pipelines))
    assert plan.lower_bound_b8 <= plan.mean_per_token_s + 1e-12


def test_islands_too_small_for_the_model_still_serve_it() -> None:
    plan = solve_blocks(islands(), MODEL, Load(concurrency=6))
    check_plan(plan, MODEL.n_blocks)
    assert all(len(p.hops) >= 2 for p in plan.pipelines)
    assert plan.bound_17 is not None
    assert plan.mean_per_token_s <= plan.bound_17 + 1e-12  # Theorem 3.5
    assert plan.completion_bound_22 == pytest.approx(MODEL.output_len * plan.bound_17)
    assert plan.mean_response_s == pytest.approx(
        plan.mean_ttft_s + (MODEL.output_len - 1) * plan.mean_tbt_s)
    assert plan.feasible_18 and plan.max_concurrency_18 >= 6
    assert plan.throughput_tokens_per_s == pytest.approx(plan.throughput_rps * 256)


def test_more_design_concurrency_trades_delay_for_capacity() -> None:
    """§3.3.1: a larger |R| means fewer blocks per server, longer chains, slower tokens."""
    low = solve_blocks(islands(), MODEL, Load(concurrency=2))
    high = solve_blocks(islands(), MODEL, Load(concurrency=low.max_concurrency_18))
    assert high.feasible and low.feasible
    assert high.mean_per_token_s >= low.mean_per_token_s
    assert high.concurrency_capacity >= high.design_concurrency
    too_many = solve_blocks(islands(), MODEL, Load(concurrency=low.max_concurrency_18 + 1))
    assert not too_many.feasible and math.isinf(too_many.mean_response_s)
    assert too_many.pipelines == () and too_many.concurrency_capacity == 0


def test_network_description_defaults_and_overrides() -> None:
    net = NetworkDescription(rtt_s={("dc1", "dc2"): 0.03}, token_overhead_s=0.001)
    inst = build_instance(islands(), MODEL, clients=[Client("u", "dc1")], network=net)
    bits = 2 * 8 * 8192
    assert inst.t_tok[0, 0] == pytest.approx(0.005 + 0.001 + bits / 1e9)  # local defaults
    assert inst.t_tok[0, 2] == pytest.approx(0.03 + 0.001 + bits / 1e8)  # override + remote bw
    assert inst.t_in[0, 2] == pytest.approx(0.03 + bits * 512 / 1e8)
    assert inst.cache_bytes == pytest.approx(128e3 * (512 + 256))


def test_two_clients_get_their_own_chains() -> None:
    clients = [Client("near", "dc1"), Client("far", "dc2")]
    plan = solve_blocks(islands(), MODEL, Load(concurrency=4), clients=clients)
    check_plan(plan, MODEL.n_blocks)
    assert {p.client for p in plan.pipelines} == {"near", "far"}
    near = next(p for p in plan.pipelines if p.client == "near")
    far = next(p for p in plan.pipelines if p.client == "far")
    assert near.tbt_s < far.tbt_s
    weighted = solve_blocks(islands(), MODEL, Load(concurrency=4, client_weights={"far": 1.0}),
                            clients=clients)
    assert {p.client for p in weighted.pipelines} == {"far"}


def test_arrival_rate_sets_design_and_simulation_is_deterministic() -> None:
    load = Load(arrival_rate=0.05)
    a = solve_blocks(islands(), MODEL, load, simulate_requests=60, seed=3)
    b = solve_blocks(islands(), MODEL, load, simulate_requests=60, seed=3)
    assert a == b
    assert a.feasible and a.design_concurrency >= 1
    assert a.simulated_mean_response_s >= a.mean_response_s - 1e-9  # waits only add
    assert a.utilisation == pytest.approx(0.05 * a.mean_response_s / a.concurrency_capacity)


def test_milp_method_on_a_tiny_fleet_matches_direct_solve() -> None:
    model = BlockModel(n_blocks=3, block_bytes=1.0, kv_bytes_per_token=0.01, input_len=5,
                       output_len=5)
    servers = [Server("x", 2.5, 0.01, 0.05), Server("y", 3.2, 0.02, 0.08),
               Server("z", 0.5, 0.01, 0.05)]
    plan = solve_blocks(servers, model, Load(concurrency=2), method="milp")
    check_plan(plan, 3)
    assert next(b for b in plan.placement if b.server == "z").n_blocks == 0  # idle allowed
    inst = build_instance(servers, model)
    direct = solve_milp(inst.with_requests(split_requests(2, inst.requests)), allow_idle=True)
    assert plan.mean_per_token_s == pytest.approx(direct.mean_cost)
    greedy = solve_blocks(servers, model, Load(concurrency=2))
    assert plan.mean_per_token_s <= greedy.mean_per_token_s + 1e-12


def test_petals_method_runs_and_reports_no_cg_bound() -> None:
    plan = solve_blocks(islands(), MODEL, Load(concurrency=4), method="petals", seed=1)
    assert plan.bound_17 is None
    # PETALS's fixed 4096-token reservation: (M - autograd) / (s_m + 4096 kv) blocks.
    reserve = 128e3 * 4096
    autograd = 2 * 2**30 / 14336 * 4096
    expected = [int((b.memory_bytes - autograd) // (0.8 * GB + reserve)) for b in islands()]
    assert [b.n_blocks for b in plan.placement] == expected
    check_plan(plan, MODEL.n_blocks)


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda: Server("bad", -1.0, 0.01, 0.01), "memory_bytes"),
        (lambda: Server("bad", 1.0, float("nan"), 0.01), "tau_decode_s"),
        (lambda: BlockModel(0, 1.0, 1.0, 1, 1), "n_blocks"),
        (lambda: Load(), "concurrency"),
        (lambda: Load(concurrency=0), "concurrency"),
        (lambda: NetworkDescription(remote_bandwidth_bps=0.0), "remote_bandwidth_bps"),
    ],
)
def test_bad_input_raises_one_line_planner_error(make, field: str) -> None:
    with pytest.raises(PlannerError, match=field) as err:
        make()
    assert "\n" not in str(err.value)


def test_unknown_client_weight_and_missing_petals_size_are_user_errors() -> None:
    with pytest.raises(PlannerError, match="client_weights"):
        solve_blocks(islands(), MODEL, Load(concurrency=2, client_weights={"ghost": 1.0}))
    model = BlockModel(n_blocks=4, block_bytes=1.0, kv_bytes_per_token=0.01, input_len=1,
                       output_len=1)
    with pytest.raises(PlannerError, match="hidden_size"):
        solve_blocks([Server("x", 9.0, 0.01, 0.01)], model, Load(concurrency=1),
                     method="petals")


def test_plan_is_deterministic() -> None:
    a = solve_blocks(islands(), MODEL, Load(concurrency=5))
    b = solve_blocks(islands(), MODEL, Load(concurrency=5))
    assert a == b
    assert np.isfinite(a.throughput_rps) and a.throughput_rps > 0


def test_milp_refuses_large_instances_with_a_user_error() -> None:
    with pytest.raises(PlannerError, match="milp"):
        solve_blocks(islands(), MODEL, Load(concurrency=2000), method="milp")


def test_petals_plan_depends_only_on_the_seed() -> None:
    a = solve_blocks(islands(), MODEL, Load(concurrency=3), method="petals", seed=4)
    b = solve_blocks(islands(), MODEL, Load(concurrency=3), method="petals", seed=4)
    assert a == b
    firsts = {tuple(b.first_block for b in solve_blocks(islands(), MODEL, Load(concurrency=3),
                                                        method="petals", seed=s).placement)
              for s in range(6)}
    assert len(firsts) > 1  # the random join order matters (§4.2)
