"""Basic routers: plan-following range router, round-robin, JSQ, and the registry."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from perfmodel import get_model
from planner.core.errors import PlannerError
from planner.fleet.network import DEFAULT_NETWORK
from planner.sim.cluster import make_cluster, make_island
from planner.sim.engine import simulate
from planner.sim.protocol import SimRequest
from planner.sim.routers import ROUTERS, RangeRouter, make_router, stride_schedule

MODEL = get_model("llama-3.1-8b")
EDGES = [1.0, 1000.0, 4000.0]


def cluster(pre_shares, dec_shares, *, gpus=None):
    gpus = gpus or ["A100-80G"] * len(pre_shares)
    isl = [make_island(i, f"p{i}", g, 1, "prefill", 1, 1, 1, MODEL, max_input=4000,
                       range_shares=sh) for i, (g, sh) in enumerate(zip(gpus, pre_shares,
                                                                        strict=True))]
    n = len(isl)
    isl += [make_island(n + i, f"d{i}", "A100-80G", 1, "decode", 1, 1, 1, MODEL, batch=64,
                        max_input=4000, range_shares=sh) for i, sh in enumerate(dec_shares)]
    return make_cluster(isl, DEFAULT_NETWORK, MODEL.name, range_edges=EDGES)


def view_of(c, **arrays):
    n = len(c.islands)
    base = {"islands": c.islands, "range_edges": c.range_edges, "now": 0.0,
            "outstanding_tokens": np.zeros(n, dtype=np.int64),
            "kv_free_tokens": np.full(n, 10**9, dtype=np.int64)}
    base.update(arrays)
    return SimpleNamespace(**base)


def test_stride_schedule_proportions():
    sched = stride_schedule(np.array([0.0, 1.0, 3.0, 0.5]), 900)
    counts = np.bincount(sched, minlength=4)
    assert counts[0] == 0
    assert counts[1:] == pytest.approx([200, 600, 100], abs=1)
    # interleaved, not in blocks: no island waits more than ~2 of its periods
    pos = np.flatnonzero(np.array(sched) == 3)
    assert np.diff(pos).max() <= 2 * 900 / 100


def test_range_router_split_follows_shares_times_rates():
    # range 0: islands 0/1 share 1:1 in time; range 1: island 0 only.  Island 1 is a
    # faster GPU, so in range 0 it gets more requests in proportion to its rate.
    c = cluster([[0.5, 1.0], [0.5, 0.0]], [[1.0, 1.0]], gpus=["A100-80G", "H100-SXM"])
    r = RangeRouter()
    v = view_of(c)
    r.reset(v, np.random.default_rng(0))
    rng = np.random.default_rng(1)
    lengths = rng.integers(1, 4000, size=20_000)
    picks = np.array([r.route_arrival(SimRequest(k, 0.0, int(s), 5), v)
                      for k, s in enumerate(lengths)])
    in0 = lengths < 1000
    rate = lambda i: 1.0 / c.islands[i].prefill_s[500]  # noqa: E731  (range 0 midpoint)
    expect1 = rate(1) / (rate(0) + rate(1))
    assert np.mean(picks[in0] == 1) == pytest.approx(expect1, abs=0.01)
    assert np.all(picks[~in0] == 0)
    # outside every range: nearest range
    assert r.route_arrival(SimRequest(0, 0.0, 99_999, 5), v) == 0


def test_range_router_in_simulation_matches_shares():
    c = cluster([[0.25, 0.5], [0.75, 0.5]], [[0.3, 0.5], [0.7, 0.5]])
    rng = np.random.default_rng(3)
    n = 6000
    reqs = [SimRequest(k, k * 0.05, int(s), 4) for k, s in
            enumerate(rng.integers(1, 4000, size=n))]
    res = simulate(c, reqs, make_router("range"))
    lo = [q for q in res.requests if q.input_len < 1000]
    hi = [q for q in res.requests if q.input_len >= 1000]
    assert np.mean([q.prefill_island == 1 for q in lo]) == pytest.approx(0.75, abs=0.02)
    assert np.mean([q.prefill_island == 1 for q in hi]) == pytest.approx(0.5, abs=0.02)
    assert np.mean([q.decode_island == 3 for q in lo]) == pytest.approx(0.7, abs=0.02)


def test_round_robin_cycles():
    c = cluster([[1, 1]] * 3, [[1, 1]] * 2)
    r = make_router("round-robin")
    v = view_of(c)
    r.reset(v, np.random.default_rng(0))
    req = SimRequest(0, 0.0, 10, 5)
    assert [r.route_arrival(req, v) for _ in range(7)] == [0, 1, 2, 0, 1, 2, 0]
    assert [r.route_decode(req, 0, v) for _ in range(3)] == [3, 4, 3]


def test_jsq_picks_least_outstanding_work():
    c = cluster([[1, 1]] * 3, [[1, 1]] * 3)
    r = make_router("jsq")
    v = view_of(c, outstanding_tokens=np.array([500, 20, 300, 90, 10, 40]),
                kv_free_tokens=np.array([0, 0, 0, 10**6, 100, 10**6]))
    r.reset(v, np.random.default_rng(0))
    req = SimRequest(0, 0.0, 1000, 50)
    assert r.route_arrival(req, v) == 1
    # island 4 has the least work but no room for 1050 tokens: next best with room
    assert r.route_decode(req, 1, v) == 5
    v.kv_free_tokens = np.zeros(6, dtype=np.int64)
    assert r.route_decode(req, 1, v) == 4  # nobody has room: least loaded, it queues


def test_jsq_balances_better_than_round_robin_on_skewed_gpus():
    c = cluster([[1, 1], [1, 1]], [[1, 1]], gpus=["A100-80G", "H100-SXM"])
    rng = np.random.default_rng(5)
    n = 3000
    t = np.cumsum(rng.exponential(0.012, size=n))
    lengths = rng.integers(500, 3000, size=n)

    def run(name):
        reqs = [SimRequest(k, float(t[k]), int(s), 1) for k, s in enumerate(lengths)]
        simulate(c, reqs, make_router(name))
        return np.mean([q.t_done - q.arrival for q in reqs])

    assert run("jsq") < run("round-robin")


def test_registry():
    assert {"range", "round-robin", "jsq"} <= set(ROUTERS)
    with pytest.raises(PlannerError, match="choose from .*range"):
        make_router("nope")
    with pytest.raises(PlannerError, match="bad options"):
        make_router("jsq", colour="red")
    assert make_router("range", cycle=10).cycle == 10
