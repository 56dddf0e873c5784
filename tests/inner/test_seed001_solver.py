"""Seed 001 end-to-end inner solver: choice of c, ChainPlan contents, errors, prediction."""

from __future__ import annotations

import numpy as np
import pytest

from planner.core.errors import NoPlanError, PlannerError
from planner.inner.chains import ChainModel, Server, plan_chains, predict_response_time
from planner.inner.chains.jffc import simulate_jffc

BLOOM = ChainModel(n_blocks=70, block_memory=1.32, cache_slot_memory=0.11)


def bloom_fleet(seed: int = 0, J: int = 20, eta: float = 0.2) -> list[Server]:
    """§4.1.1-like fleet: η high-performance 40 GB / 109 ms, the rest 20 GB / 175 ms (seconds).

    τ^c is a synthetic per-request relay time, 20 tokens × (RTT + 18 ms); the paper's RIPE
    Atlas RTTs are not available, so only qualitative claims are checked on it.
    """
    rng = np.random.default_rng(seed)
    high = set(rng.choice(J, int(eta * J), replace=False).tolist())
    out = []
    for j in range(J):
        tc = 20 * (rng.uniform(0.005, 0.06) + 0.018)
        out.append(Server(f"h{j}", 40, tc, 0.109) if j in high else Server(f"l{j}", 20, tc, 0.175))
    return out


def fig2_servers() -> list[Server]:
    eps = 1e-3
    return [Server(f"j{i}", 3.0 if i == 2 else 2.0, 2.0 if i == 2 else 1.0, i * eps)
            for i in range(1, 6)]


FIG2_MODEL = ChainModel(3, 1.0, 0.1)


def test_plan_contents_fig2_fixed_c() -> None:
    plan = plan_chains(fig2_servers(), FIG2_MODEL, 1.0, c=1)
    assert plan.c == 1
    assert [k.server_ids for k in plan.chains] == [("j1", "j2"), ("j1", "j4", "j5"),
                                                   ("j3", "j4", "j5")]
    assert [(h.first_block, h.last_block) for h in plan.chains[0].hops] == [(1, 1), (2, 3)]
    assert [k.capacity for k in plan.chains] == [5, 5, 5]
    assert plan.job_servers == 15
    rates = [k.service_rate for k in plan.chains]
    assert rates == sorted(rates, reverse=True)
    assert plan.max_throughput == pytest.approx(sum(5 * r for r in rates))
    assert plan.load == pytest.approx(1.0 / plan.max_throughput)
    assert plan.hosted_blocks == {"j1": (1, 1), "j2": (2, 3), "j3": (1, 1), "j4": (2, 2),
                                  "j5": (3, 3)}
    assert plan.response_time_method == "ctmc"
    assert plan.response_time_lower <= plan.response_time <= plan.response_time_upper
    assert plan.waiting_time + plan.service_time == pytest.approx(plan.response_time)


def test_lower_bound_choice_beats_surrogate_on_bloom_fleet() -> None:
    """Fig. 6/7 qualitatively: eq. (14) reserves too little cache at light load."""
    fleet = bloom_fleet()
    sur = plan_chains(fleet, BLOOM, 0.2, criterion="surrogate", c_candidates=range(1, 60))
    low = plan_chains(fleet, BLOOM, 0.2, criterion="lower", c_candidates=range(1, 60))
    assert sur.c < low.c
    assert low.response_time < sur.response_time  # both exact CTMC values
    assert low.response_time_method == sur.response_time_method == "ctmc"
    assert set(low.c_scores) == set(range(1, 60))
    assert low.c_scores[low.c] == min(low.c_scores.values())


def test_fixed_c7_bloom_hosts_19_and_9_blocks() -> None:
    fleet = bloom_fleet()
    plan = plan_chains(fleet, BLOOM, 0.5, c=7)
    for sid, (lo, hi) in plan.hosted_blocks.items():
        assert hi - lo + 1 == (19 if sid.startswith("h") else 9)
        assert 1 <= lo and hi <= 70
    for k in plan.chains:  # every chain covers blocks 1..70 contiguously
        assert k.hops[0].first_block == 1 and k.hops[-1].last_block == 70
        for a, b in zip(k.hops, k.hops[1:], strict=False):
            assert b.first_block == a.last_block + 1


def test_plan_prediction_matches_simulation_of_the_plan() -> None:
    plan = plan_chains(bloom_fleet(), BLOOM, 0.6, c_candidates=range(1, 40))
    rates = [k.service_rate for k in plan.chains]
    caps = [k.capacity for k in plan.chains]
    sim = simulate_jffc(rates, caps, plan.arrival_rate, n_jobs=100_000, seed=5)
    assert sim.mean_response == pytest.approx(plan.response_time, rel=0.03)


def test_ilp_capacities_use_fewer_job_servers_and_meet_rate() -> None:
    fleet = bloom_fleet()
    gca_plan = plan_chains(fleet, BLOOM, 0.5, c=7)
    ilp_plan = plan_chains(fleet, BLOOM, 0.5, c=7, capacities="ilp")
    assert ilp_plan.job_servers <= gca_plan.job_servers
    assert ilp_plan.max_throughput >= 0.5 / 0.7 * (1 - 1e-9)
    assert ilp_plan.capacity_mode == "ilp"


def test_prediction_method_fallbacks() -> None:
    two = predict_response_time([1.0, 0.4], [30, 40], 40.0, exact_state_limit=10)
    ctmc = predict_response_time([1.0, 0.4], [30, 40], 40.0)
    assert two.method == "two-chain" and ctmc.method == "ctmc"
    assert two.response_time == pytest.approx(ctmc.response_time, rel=1e-8)
    three = predict_response_time([1.0, 0.5, 0.3], [3, 4, 2], 2.0, exact_state_limit=10)
    assert three.method == "thm3.7-lower" and three.response_time == three.lower
    assert predict_response_time([1.0], [2], 3.0).method == "unstable"


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(arrival_rate=0.0), "arrival_rate"),
        (dict(rho_bar=1.0), "rho_bar"),
        (dict(c=0), "c must be"),
        (dict(criterion="median"), "criterion"),
        (dict(capacities="lp"), "capacities"),
    ],
)
def test_bad_arguments_raise_planner_error(kwargs: dict, match: str) -> None:
    args = dict(arrival_rate=1.0)
    args.update(kwargs)
    lam = args.pop("arrival_rate")
    with pytest.raises(PlannerError, match=match):
        plan_chains(fig2_servers(), FIG2_MODEL, lam, **args)


def test_bad_servers_and_model_raise_planner_error() -> None:
    with pytest.raises(PlannerError, match="duplicate server id"):
        plan_chains([Server("a", 2, 1, 1), Server("a", 2, 1, 1)], FIG2_MODEL, 0.1)
    with pytest.raises(PlannerError, match="field memory"):
        plan_chains([Server("a", -2, 1, 1)], FIG2_MODEL, 0.1)
    with pytest.raises(PlannerError, match="n_blocks"):
        plan_chains(fig2_servers(), ChainModel(0, 1.0, 0.1), 0.1)
    with pytest.raises(PlannerError, match="servers must not be empty"):
        plan_chains([], FIG2_MODEL, 0.1)


def test_no_plan_errors() -> None:
    with pytest.raises(NoPlanError, match="no stable chain plan"):
        plan_chains(fig2_servers(), FIG2_MODEL, 100.0)
    with pytest.raises(NoPlanError, match="one block plus one cache slot"):
        plan_chains([Server("a", 1.05, 1, 1)], FIG2_MODEL, 0.1)
    assert NoPlanError("x").exit_code == 1


def test_fixed_c_needs_only_stability_even_if_K_of_c_is_infinite() -> None:
    # λ/ρ̄ ≈ 1.43 exceeds what GBP-CR's disjoint chains reach (K(1) = ∞) but GCA's ν ≈ 5.
    plan = plan_chains(fig2_servers(), FIG2_MODEL, 1.0, c=1, criterion="surrogate")
    assert plan.c_scores == {1: float("inf")}
    assert plan.job_servers == 15 and plan.load < 0.25
    searched = plan_chains(fig2_servers(), FIG2_MODEL, 1.0, criterion="surrogate")
    finite = {c: v for c, v in searched.c_scores.items() if v < float("inf")}
    assert searched.c == min(finite, key=lambda c: (finite[c], c))
