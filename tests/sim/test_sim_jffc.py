"""JFFC router (seed 001 Alg. 3) and pipeline plans in the simulator."""

from __future__ import annotations

import copy
from types import SimpleNamespace

import numpy as np
import pytest

from planner.context.evaluate import PlanningContext
from planner.core.errors import PlannerError
from planner.fleet.inventory import load_inventory
from planner.fleet.network import SEED003_NETWORK, parse_network
from planner.inner.pipeline_map import DataCentreNetwork
from planner.inner.pipeline_solvers import ChainsSolver
from planner.inner.problem import InnerProblem, IslandSpec
from planner.plan import PlanRequest
from planner.sim.cluster import make_cluster
from planner.sim.engine import simulate
from planner.sim.pipeline_cluster import (
    chain_times,
    cluster_from_chains,
    cluster_from_pipeline_plan,
    prefill_token_budget,
    replan_chains,
)
from planner.sim.protocol import HOLD, SimIsland, SimRequest
from planner.sim.routers import make_router
from planner.sim.routers.jffc import JFFCRouter
from planner.sim.run import SimSettings, run_plan

# ------------------------------------------------------------------ hand-built chains


def chain(index: int, t_tok: float, slots: int, pre_per_token: float = 1e-4) -> SimIsland:
    """A chain-like ``both`` island: batch-independent step time ``t_tok``."""
    pre = np.maximum(np.arange(4097, dtype=float), 1.0) * pre_per_token
    coeffs = np.zeros((slots + 1, 9))
    coeffs[:, 0] = t_tok
    return SimIsland(index, f"c{index}", "X", 1, "both", 1, 1, 1, slots, 10**9, 1.0, None,
                     pre, coeffs)


def view(islands, running, queued):
    def step_time(i, batch, context):
        return float(islands[i].step_coeffs[0, 0])

    return SimpleNamespace(islands=tuple(islands), now=0.0, step_time=step_time,
                           running=np.asarray(running, np.int64),
                           queued=np.asarray(queued, np.int64))


def test_jffc_picks_fastest_free_chain_then_holds():
    isl = [chain(0, 0.03, 2), chain(1, 0.01, 2), chain(2, 0.01, 3)]
    r = JFFCRouter()
    req = SimRequest(0, 0.0, 10, 10)
    r.reset(view(isl, [0, 0, 0], [0, 0, 0]), np.random.default_rng(0))
    assert list(r.order) == [1, 2, 0]  # fastest first, tie 1/2 by index
    assert r.route_arrival(req, view(isl, [0, 0, 0], [0, 0, 0])) == 1
    # island 1 full: one running, one routed but not yet admitted
    assert r.route_arrival(req, view(isl, [0, 1, 0], [0, 1, 0])) == 2
    assert r.route_arrival(req, view(isl, [0, 2, 2], [0, 0, 0])) == 2
    assert r.route_arrival(req, view(isl, [0, 2, 3], [0, 0, 0])) == 0
    assert r.route_arrival(req, view(isl, [1, 2, 2], [1, 0, 1])) == HOLD
    assert make_router("jffc").name == "jffc"


def test_jffc_refuses_disaggregated_cluster():
    isl = [chain(0, 0.01, 2)]
    pre = SimIsland(1, "p", "X", 1, "prefill", 1, 1, 1, 1, 10**9, 1.0, None,
                    isl[0].prefill_s, isl[0].step_coeffs)
    with pytest.raises(PlannerError, match="jffc"):
        JFFCRouter().reset(view([isl[0], pre], [0, 0], [0, 0]), np.random.default_rng(0))


def test_held_requests_leave_in_fifo_order_to_the_fastest_free_chain():
    # a fast chain of 2 slots and a slow one of 1: 12 requests at once, all alike
    c = make_cluster([chain(0, 0.05, 1), chain(1, 0.01, 2)], SEED003_NETWORK, "x")
    reqs = [SimRequest(k, 0.001 * k, 100, 20) for k in range(12)]
    res = simulate(c, reqs, JFFCRouter())
    assert all(r.t_done == r.t_done for r in res.requests)
    routed = [r.t_routed for r in res.requests]
    assert routed == sorted(routed)  # the central queue is FIFO
    assert [r.prefill_island for r in res.requests[:3]] == [1, 1, 0]
    # every later request was routed the instant a slot freed (a completion)
    done = sorted(r.t_done for r in res.requests)
    for r in res.requests[3:]:
        assert min(abs(r.t_routed - d) for d in done) < 1e-9
    # a slot of the fast chain frees 5x as often: it serves most of the held requests
    on_fast = sum(r.prefill_island == 1 for r in res.requests)
    assert on_fast >= 9
    # never more than a chain's capacity at once
    for i, cap in ((0, 1), (1, 2)):
        spans = [(r.t_routed, r.t_done) for r in res.requests if r.prefill_island == i]
        for t, _ in spans:
            assert sum(a <= t < b for a, b in spans) <= cap


# ------------------------------------------------------------------ pipeline plans

INV = load_inventory("inventories/gpus.yaml")


def pipeline_plan(layout, inner: str = "seed001") -> dict:
    """A plan.json as ``make_plan`` writes it for ``layout`` (the fields the simulator
    reads), without the outer search: the request section is the real one and the
    islands come from the seed-001 solver's own result."""
    req = PlanRequest(INV, workload="thesis-fig4.2", budget=64, inner=inner, ranges=4)
    ctx = PlanningContext.for_request(req)
    r = ctx.ranges
    specs = tuple(IslandSpec(g, s) for g, s in layout)
    z = np.zeros((len(specs), len(r.prob)))
    problem = InnerProblem(specs, r.prob, r.start, r.end, r.mid, z, z)
    net = DataCentreNetwork.from_spec(parse_network(INV.network))
    res = ChainsSolver(ctx, net).solve(problem)
    assert res.R_sustained > 0
    return {"request": req.to_dict(),
            "summary": {"requests_per_s": float(res.R_sustained)},
            "islands": [{"gpu": a.gpu, "size": a.size, "role": a.role, "config": a.config,
                         "batch": a.batch, "shares": list(a.shares)} for a in res.islands],
            "ranges": {"start": list(r.start), "end": list(r.end), "mid": list(r.mid),
                       "prob": list(r.prob)},
            "_extra": dict(res.extra)}


@pytest.fixture(scope="module")
def one_chain():
    """The layout make_plan picks for thesis-fig4.2 at 64 $/h (one H20 chain of ~1044
    slots; the H800 island is idle)."""
    return pipeline_plan((("H20", 58), ("H800", 3)))


@pytest.fixture(scope="module")
def one_chain_cluster(one_chain):
    return replan_chains(one_chain)


def test_replan_reproduces_the_plan(one_chain, one_chain_cluster):
    rp = one_chain_cluster
    assert rp.chains.max_throughput == pytest.approx(one_chain["summary"]["requests_per_s"],
                                                     rel=1e-9)
    assert rp.chains.response_time == pytest.approx(one_chain["_extra"]["mean_response_s"])
    c = cluster_from_chains(rp)
    assert len(c.islands) == len(rp.chains.chains) == 1
    isl = c.islands[0]
    assert isl.role == "both" and isl.max_batch == rp.chains.chains[0].capacity
    assert prefill_token_budget(c) == 8192 * isl.dp
    bad = copy.deepcopy(one_chain)
    bad["islands"][0]["config"] = "pipeline blocks 1-60 tp1-ep29"
    with pytest.raises(PlannerError, match=r"plan.islands\[0\].config"):
        replan_chains(bad)
    bad = copy.deepcopy(one_chain)
    bad["summary"]["requests_per_s"] *= 1.1
    with pytest.raises(PlannerError, match="requests_per_s"):
        replan_chains(bad)


@pytest.mark.parametrize("layout", [(("H800", 16), ("H20", 8)),  # two one-hop chains
                                    (("H800", 4),) * 4])  # one three-hop chain
def test_chain_island_prices_a_job_as_seed001(layout):
    """At the mean lengths and with the planner's contended prefill, the island's job
    time is the chain's T_k (eq. 2 with footnote 11); step time is batch-independent."""
    rp = replan_chains(pipeline_plan(layout))
    by_id = {s.name: s for s in rp.servers}
    wl = rp.workload
    c = cluster_from_chains(rp)
    assert len(c.islands) == len(rp.chains.chains)
    for k, isl in zip(rp.chains.chains, c.islands, strict=True):
        t_tok, pre, fixed, planned = chain_times(k, by_id, rp.model, rp.network)
        t_job = fixed + planned * wl.mean_input + (wl.mean_output - 1.0) * t_tok
        assert t_job == pytest.approx(k.service_time, rel=1e-9)
        assert np.all(isl.step_coeffs[:, 0] == t_tok) and not np.any(isl.step_coeffs[:, 1:])
        assert isl.prefill_s[1000] == pytest.approx(fixed + 1000 * pre)
        assert pre <= planned  # the engine adds the stalls the planner folded in
    if len(c.islands) > 1:
        r = JFFCRouter()
        r.reset(view(c.islands, [0] * 2, [0] * 2), np.random.default_rng(0))
        steps = [c.islands[i].step_coeffs[0, 0] for i in r.order]
        assert steps == sorted(steps)


def completion_rate(res) -> float:
    """Completions per second between the 20th and 80th percentile completion."""
    t = np.sort([r.t_done for r in res.requests if r.t_done == r.t_done])
    a, b = int(0.2 * len(t)), int(0.8 * len(t))
    return (b - a) / (t[b] - t[a])


def test_pipeline_plan_simulates_end_to_end_at_low_load(one_chain):
    run = run_plan(one_chain, SimSettings(rate="0.2x", requests=1500, seed=1))
    assert run.settings.router == "jffc"  # the plan-following default of a pipeline plan
    assert all(r.t_done == r.t_done for r in run.result.requests)
    assert run.metrics.unfinished == 0
    assert completion_rate(run.result) == pytest.approx(run.offered_rps, rel=0.15)
    with pytest.raises(PlannerError, match="pipeline plan"):
        run_plan(one_chain, SimSettings(router="netkv", rate="0.2x", requests=10))


def test_saturation_throughput_matches_nu(one_chain):
    """Offered 2 ν, the single chain completes jobs at close to ν = c_k / T_k."""
    nu = one_chain["summary"]["requests_per_s"]
    run = run_plan(one_chain, SimSettings(rate="2x", requests=5000, seed=2))
    ratio = completion_rate(run.result) / nu
    print(f"saturation throughput / nu = {ratio:.3f}")
    assert 0.9 <= ratio <= 1.05


def test_mean_response_at_design_load(one_chain, one_chain_cluster):
    """At λ = 0.7 ν.  Seed 001's prediction prices every job with the stalls of a full
    batch (T_k at saturation), so below saturation the simulated response is shorter;
    it follows the colocated-island law ``(t_pre + d̄ t_tok) / (1 - λ t_pre)`` (a job
    progresses only outside the chain's prefill time)."""
    run = run_plan(one_chain, SimSettings(rate="0.7x", requests=5000, seed=3))
    res = run.result
    e2e = float(np.mean([r.t_done - r.arrival for r in res.requests
                         if r.arrival >= res.warmup_s]))
    predicted = one_chain["_extra"]["mean_response_s"]
    print(f"simulated mean response {e2e:.2f} s, seed 001 predicts {predicted:.2f} s")
    rp = one_chain_cluster
    by_id = {s.name: s for s in rp.servers}
    t_tok, pre, fixed, _ = chain_times(rp.chains.chains[0], by_id, rp.model, rp.network)
    n_in = float(np.mean([r.input_len for r in res.requests]))
    n_out = float(np.mean([r.output_len for r in res.requests]))
    t_pre = fixed + pre * n_in
    law = (t_pre + n_out * t_tok) / (1.0 - run.offered_rps * t_pre)
    assert e2e == pytest.approx(law, rel=0.1)
    assert n_out * t_tok < e2e < predicted


def test_seed000_plan_is_replanned_as_chains():
    plan = pipeline_plan((("H800", 16), ("H20", 8)))
    plan["request"]["inner"] = "seed000"
    plan["islands"][0]["config"] = "pipeline blocks 1-61 tp8-ep16"  # seed 000's own
    c = cluster_from_pipeline_plan(plan)
    assert "seed 000" in c.label and len(c.islands) == 2
    assert all(x.role == "both" for x in c.islands)
