"""Seed 000 PETALS baseline: block count, best start, random join order, routing (§4.1)."""

from __future__ import annotations

import numpy as np

from planner.inner.blocks.instance import Instance
from planner.inner.blocks.online import OnlineState, simulate
from planner.inner.blocks.petals import (
    PetalsConfig,
    best_start,
    join_order,
    petals_placement,
    petals_router,
    server_throughput,
)
from planner.inner.blocks.routing import Placement, make_route

GB = 1e9
MS = 1e-3
BLOOM_SM = 2_466_437_120 * (4.25 / 8) * 1.01
CFG = PetalsConfig(hidden_size=14336)


def table2_cluster() -> Instance:
    """2 A100 (M = 86.13 GB) + 7 MIG (9.1 GB), BLOOM-176B, l^I = 20, l = 128 (guide §5.3)."""
    memory = np.array([86.13] * 2 + [9.1] * 7) * GB
    tau = np.array([3.2197] * 2 + [16.2488] * 7) * MS
    tau_in = np.array([34.47] * 2 + [208.44] * 7) * MS
    t_tok = np.full((1, 9), 0.2)
    return Instance(memory=memory, tau=tau, tau_in=tau_in, t_tok=t_tok, t_in=t_tok,
                    n_blocks=70, block_bytes=BLOOM_SM, cache_bytes=2 * 14336 * 2 * 148,
                    input_len=20, output_len=128, requests=[1],
                    max_blocks=np.array([70] * 2 + [4] * 7))


def test_best_start_picks_least_served_window() -> None:
    thr = np.array([770.0] * 40 + [0.0] * 30)  # the example in the authors' code
    assert best_start(thr, 4) == 40
    # Lexicographic order of the *sorted* windows: [1, 2] (a=1) < [1, 5] (a=0) < [2, 2].
    assert best_start(np.array([5.0, 1.0, 2.0, 2.0, 9.0]), 2) == 1
    assert best_start(np.array([5.0, 1.0, 7.0, 2.0, 2.0]), 2) == 0  # [1, 5] < [1, 7]
    assert best_start(np.array([3.0, 3.0, 3.0]), 2) == 0


def test_server_throughput_rule() -> None:
    thr = server_throughput(np.array([53.0, 4.0]), np.array([20829.38, 2757.72]),
                            np.array([3020.37, 3138.10]))
    assert thr[0] == np.float64(20829.38 / 27.0)
    assert thr[1] == np.float64(2757.72 / 2.5)


def test_placement_counts_and_coverage_in_the_table2_cluster() -> None:
    inst = table2_cluster()
    pp = petals_placement(inst, CFG, join_order(9, seed=3))
    assert pp.placement.count.tolist() == [53, 53] + [4] * 7  # "53 on A100, 4 on MIG"
    assert pp.placement.is_complete(70)
    # Fixed reservation: 53 x 4096-token caches, in sessions of l^I + l_max = 148 tokens.
    assert pp.placement.cache_slots[0] == (53 * 4096 * 2 * 14336 * 2) // (2 * 14336 * 2 * 148)
    assert pp.session_capacity[0] == 4096 // 148


def test_join_order_is_seeded() -> None:
    a, b = join_order(9, seed=11), join_order(9, seed=11)
    assert np.array_equal(a, b)
    orders = {tuple(join_order(9, seed=s)) for s in range(5)}
    assert len(orders) > 1
    inst = table2_cluster()
    p1 = petals_placement(inst, CFG, a).placement
    p2 = petals_placement(inst, CFG, b).placement
    assert np.array_equal(p1.first, p2.first)


def test_first_server_starts_at_block_one_and_next_fills_the_gap() -> None:
    inst = table2_cluster()
    pp = petals_placement(inst, CFG, [0, 1, 2])
    assert pp.placement.first[0] == 1
    # Server 1 takes the window with the most zero-throughput blocks: right after server 0.
    assert pp.placement.first[1] == 70 - 53 + 1  # right-aligned, blocks 18..70


def test_router_pays_the_allocation_penalty_when_a_server_is_full() -> None:
    # Two servers that each hold the whole model; server 0 is faster.
    inst = Instance(memory=[10.0, 10.0], tau=[0.01, 0.02], tau_in=[0.1, 0.1],
                    t_tok=[[0.1, 0.1]], t_in=[[0.1, 0.1]], n_blocks=4, block_bytes=1.0,
                    cache_bytes=0.1, input_len=1, output_len=10, requests=[1])
    placement = Placement(np.array([1, 1]), np.array([4, 4]), np.array([40, 40]))
    router = petals_router(CFG, session_capacity=np.array([1, 1]))
    state = OnlineState(2)
    assert router(inst, placement, 0, 0.0, state) == (0,)
    state.add(make_route(placement, 0, (0,)), completion=100.0)
    assert router(inst, placement, 0, 1.0, state) == (1,)  # server 0 full: +10 s penalty
    assert router(inst, placement, 0, 200.0, state) == (0,)  # finished: back to server 0


def test_petals_simulation_uses_its_reservation_and_waits() -> None:
    inst = table2_cluster()
    pp = petals_placement(inst, CFG, join_order(9, seed=0))
    n = 60
    sim = simulate(inst, pp.placement, np.zeros(n), np.zeros(n, dtype=int),
                   router=petals_router(CFG, pp.session_capacity))
    assert sim.served.all()
    assert np.any(sim.wait_s > 0)  # 60 simultaneous sessions exceed PETALS's reservation
