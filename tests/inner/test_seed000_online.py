"""Seed 000 online solution: eq. (20), WS-RR (Alg. 2), Corollaries 3.6/3.7, the |R| rule."""

from __future__ import annotations

import numpy as np
import pytest

from planner.inner.blocks.bounds import bound_17, max_concurrency_19
from planner.inner.blocks.cg_bprr import cg_bp
from planner.inner.blocks.instance import Instance
from planner.inner.blocks.online import (
    poisson_arrivals,
    retry_backoff,
    simulate,
    split_requests,
    two_time_scale,
    waiting_time,
)
from planner.inner.blocks.routing import route_times


def fleet(requests: int = 1) -> Instance:
    """Four heterogeneous servers, none of which holds the 12-block model alone at |R| = 4."""
    return Instance(
        memory=[8.0, 6.0, 5.0, 4.0], tau=[0.01, 0.012, 0.02, 0.03],
        tau_in=[0.05, 0.06, 0.1, 0.15], t_tok=[[0.05, 0.06, 0.04, 0.08]],
        t_in=[[0.1, 0.1, 0.1, 0.2]], n_blocks=12, block_bytes=1.0, cache_bytes=0.05,
        input_len=16, output_len=32, requests=[requests],
    )


def test_eq20_waiting_time_by_hand() -> None:
    done = np.array([5.0, 3.0, 8.0])
    held = np.array([4, 3, 2])  # 9 of 10 slots in use at t = 1
    waits = waiting_time(10, done, held, 1.0, np.array([1, 2, 4, 5, 10, 11]))
    assert waits.tolist() == [0.0, 2.0, 2.0, 4.0, 7.0, float("inf")]
    assert waiting_time(3, np.array([]), np.array([], dtype=int), 0.0, np.array([3, 4])).tolist() \
        == [0.0, float("inf")]


def test_retry_backoff_schedule() -> None:
    # PETALS retries at 1, 3, 7, 15, 31, 63, 123, 183 s (cap 60 s, footnote 8).
    assert [retry_backoff(w) for w in (0.0, 0.5, 1.0, 1.5, 100.0, 150.0)] == \
        [0.0, 1.0, 1.0, 3.0, 123.0, 183.0]


def test_within_design_concurrency_nobody_waits_and_bound_holds() -> None:
    """Corollary 3.6 / eq. (22) first case: ≤ |R| active requests -> no wait, time ≤ (17)."""
    inst = fleet()
    design = 4
    res = cg_bp(inst, design)
    assert res.feasible and res.placement.count.max() < inst.n_blocks
    sim = simulate(inst, res.placement, np.zeros(design), np.zeros(design, dtype=int))
    assert np.all(sim.wait_s == 0.0)
    assert len({r.servers for r in sim.routes}) == 1  # all on the shortest chain
    b17 = bound_17(inst, res)
    assert np.all(sim.response_s / inst.output_len <= b17 + 1e-12)
    assert np.all(sim.response_s <= inst.output_len * b17 + 1e-12)  # eq. (22)


def test_beyond_design_concurrency_ws_rr_waits_or_detours_and_keeps_memory() -> None:
    inst = fleet()
    res = cg_bp(inst, 2)
    n = 40
    sim = simulate(inst, res.placement, np.linspace(0.0, 2.0, n), np.zeros(n, dtype=int))
    assert sim.served.all()
    assert sim.max_concurrency == n
    assert np.any(sim.wait_s > 0) or len({r.servers for r in sim.routes}) > 1
    # Response = wait + l_max x all-token per-token time of its chain (eq. (1), (A.5)).
    for r, route in enumerate(sim.routes):
        t = route_times(inst, route)
        assert sim.response_s[r] == pytest.approx(sim.wait_s[r] + t.response_s)
    # Memory (5) is never exceeded by sessions that are actually running.
    start = sim.arrival + sim.wait_s
    end = sim.arrival + sim.response_s
    for s in start:
        running = (start <= s) & (end > s)
        load = np.zeros(inst.n_servers)
        for r in np.flatnonzero(running):
            load[list(sim.routes[r].servers)] += sim.routes[r].blocks
        assert np.all(load <= res.placement.cache_slots)


def test_backoff_and_fixed_delays_are_added_to_ttft_and_response() -> None:
    inst = fleet()
    res = cg_bp(inst, 1)
    arr = np.zeros(30)
    base = simulate(inst, res.placement, arr, np.zeros(30, dtype=int))
    slow = simulate(inst, res.placement, arr, np.zeros(30, dtype=int), backoff=True,
                    initial_delay_s=0.1, allocation_delay_s=2.0)
    assert slow.ttft_s[0] == pytest.approx(base.ttft_s[0] + 2.1)
    assert np.all(slow.wait_s >= base.wait_s[0])
    waited = slow.wait_s > 0
    assert waited.any()
    schedule = np.cumsum(np.minimum(2.0 ** np.arange(40), 60.0))  # 1, 3, 7, ..., 123, 183, ...
    assert np.all(np.isin(slow.wait_s[waited], schedule))


def test_design_concurrency_rule() -> None:
    from planner.inner.blocks.online import design_concurrency

    inst = fleet()
    one = cg_bp(inst, 1)
    single = simulate(inst, one.placement, [0.0], [0]).response_s[0]
    for rate in (0.05, 0.5, 2.0):
        mean = rate * single
        expected = min(max(1, int(np.floor(mean + np.sqrt(mean) + 0.5))),
                       max_concurrency_19(inst))
        assert design_concurrency(inst, rate) == expected
    assert design_concurrency(inst, 1e6) == max_concurrency_19(inst)


def test_two_time_scale_and_determinism() -> None:
    inst = fleet()
    arr, cl = poisson_arrivals(0.5, 50, seed=7)
    assert arr[0] == 0.0 and np.all(np.diff(arr) >= 0)
    again, _ = poisson_arrivals(0.5, 50, seed=7)
    assert np.array_equal(arr, again)
    a = two_time_scale(inst, 3, arr, cl)
    b = two_time_scale(inst, 3, arr, cl)
    assert np.array_equal(a.simulation.response_s, b.simulation.response_s)
    assert a.simulation.routes == b.simulation.routes
    assert sum(n for _, n in a.routes) == 3


def test_split_requests_largest_remainder() -> None:
    assert split_requests(10, np.array([1.0, 1.0, 1.0])).tolist() == [4, 3, 3]
    assert split_requests(5, np.array([0.0, 2.0, 1.0])).tolist() == [0, 3, 2]
