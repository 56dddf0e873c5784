"""Seed 000 Algorithm 1 (CG-BPRR) and its guarantees: (14), (15), Lemma 3.3/3.4, (17)–(19), B.8."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from planner.inner.blocks.bounds import (
    bound_17,
    feasible_18,
    lower_bound_mean,
    max_concurrency_18,
    max_concurrency_19,
)
from planner.inner.blocks.bruteforce import feasible_chains
from planner.inner.blocks.cg_bprr import (
    amortized_time,
    cg_bp,
    cg_bprr,
    mean_route_cost,
    session_capacity,
)
from planner.inner.blocks.instance import Instance
from planner.inner.blocks.routing import is_feasible_route, make_route, route_times


def random_instance(rng: np.random.Generator, objective: str = "all_tokens",
                    caps: bool = False) -> Instance:
    n_s = int(rng.integers(2, 12))
    n_c = int(rng.integers(1, 4))
    n_blocks = int(rng.integers(1, 30))
    requests = rng.integers(0, 8, n_c)
    requests[0] += 1
    return Instance(
        memory=rng.uniform(0.5, 20.0, n_s), tau=rng.uniform(0.001, 0.02, n_s),
        tau_in=rng.uniform(0.01, 0.2, n_s), t_tok=rng.uniform(0.005, 0.2, (n_c, n_s)),
        t_in=rng.uniform(0.01, 0.3, (n_c, n_s)), n_blocks=n_blocks, block_bytes=1.0,
        cache_bytes=float(rng.uniform(0.001, 0.1)), input_len=20, output_len=64,
        requests=requests, objective=objective,
        max_blocks=rng.integers(1, n_blocks + 1, n_s) if caps else None,
    )


INSTANCES = [random_instance(np.random.default_rng(s), ("decode", "all_tokens")[s % 2],
                             caps=s % 3 == 0) for s in range(120)]
FEASIBLE = [i for i, inst in enumerate(INSTANCES) if cg_bp(inst).feasible]
SMALL_FEASIBLE = [i for i in FEASIBLE if INSTANCES[i].n_servers <= 8]


def test_line1_and_eqs_14_15_by_hand() -> None:
    # M = 10, s_m = 1, s_c = 0.1, |R| = 5 -> m = floor(10 / 1.5) = 6, f̄ = floor(4/0.6) = 6.
    inst = Instance(memory=[10.0, 3.0], tau=[0.01, 0.02], tau_in=[0.1, 0.1],
                    t_tok=[[0.12, 0.05], [0.06, 0.3]], t_in=[[0.2, 0.2], [0.2, 0.2]],
                    n_blocks=8, block_bytes=1.0, cache_bytes=0.1, input_len=1,
                    output_len=1, requests=[3, 2], objective="decode")
    res = cg_bp(inst)
    assert res.placement.count.tolist() == [6, 2]
    assert res.capacity.tolist() == [6, 5]  # floor((10-6)/0.6)=6, floor((3-2)/0.2)=5
    assert np.all(res.capacity >= 5)  # (15): f̄_j >= |R|
    # (14): t̃_j = τ_j + max_c t_cj / m_j
    assert amortized_time(inst, res.placement.count) == pytest.approx([0.01 + 0.12 / 6,
                                                                       0.02 + 0.3 / 2])
    assert session_capacity(inst, np.array([0, 6]))[0] == 0


def test_random_set_mixes_feasible_and_infeasible_cases() -> None:
    assert 60 < len(FEASIBLE) < len(INSTANCES) and len(SMALL_FEASIBLE) >= 10


@pytest.mark.parametrize("idx", FEASIBLE[::6])
def test_lemma33_structure_fastest_servers_tile_then_right_align(idx: int) -> None:
    inst = INSTANCES[idx]
    res = cg_bp(inst)
    top = res.order[: res.n_cover]
    m = res.placement.count
    expected_start = 1
    for pos, j in enumerate(top):
        if pos < len(top) - 1:
            assert res.placement.first[j] == expected_start
            expected_start += m[j]
        else:  # the K-th server is right-aligned, a_K = L - m_K + 1
            assert res.placement.first[j] == inst.n_blocks - m[j] + 1
    # Servers are visited in increasing amortised time.
    t = res.amortized[list(res.order)]
    assert np.all(np.diff(t) >= 0)


def test_line7_places_replicas_on_least_covered_blocks() -> None:
    # Three equal servers of 2 blocks on L = 4: two tile the model, the third replicates.
    inst = Instance(memory=[2.5, 2.5, 2.5], tau=[0.01, 0.02, 0.03], tau_in=[0.1] * 3,
                    t_tok=[[0.1, 0.1, 0.1]], t_in=[[0.1, 0.1, 0.1]], n_blocks=4,
                    block_bytes=1.0, cache_bytes=0.1, input_len=1, output_len=1,
                    requests=[1], objective="decode")
    res = cg_bp(inst)
    assert res.order == (0, 1, 2)
    assert res.placement.first.tolist() == [1, 3, 1]  # equal sorted windows -> smallest a
    assert res.block_capacity.tolist() == [4, 4, 2, 2]  # f̄ = floor(0.5 / 0.2) = 2
    # Now make the first block pair the better served one: the replica moves right.
    inst2 = Instance(memory=[3.5, 2.5, 2.5], tau=[0.01, 0.02, 0.03], tau_in=[0.1] * 3,
                     t_tok=[[0.1, 0.1, 0.1]], t_in=[[0.1, 0.1, 0.1]], n_blocks=4,
                     block_bytes=1.0, cache_bytes=0.1, input_len=1, output_len=1,
                     requests=[1], max_blocks=np.array([2, 2, 2]), objective="decode")
    res2 = cg_bp(inst2)
    assert res2.placement.first.tolist() == [1, 3, 3]


def test_condition_18_iff_cg_bp_feasible_and_19_sufficient() -> None:
    for inst in INSTANCES:
        r = inst.total_requests
        assert feasible_18(inst, r) == cg_bp(inst, r).feasible
        r19 = max_concurrency_19(inst)
        if r19 >= 1 and np.all(inst.max_blocks == inst.n_blocks):
            assert feasible_18(inst, r19)
        r18 = max_concurrency_18(inst)
        if r18 >= 1:
            assert feasible_18(inst, r18) and not feasible_18(inst, r18 + 1)
            assert cg_bp(inst, r18).feasible and not cg_bp(inst, r18 + 1).feasible
        else:
            assert not feasible_18(inst, 1)


def test_bound_17_and_lower_bound_b8_bracket_the_algorithm() -> None:
    checked = 0
    for inst in INSTANCES:
        res = cg_bprr(inst)
        if not res.feasible:
            continue
        checked += 1
        mean = res.mean_cost
        assert mean == pytest.approx(mean_route_cost(inst, res.routes))  # eq. (1) recomputed
        assert lower_bound_mean(inst) <= mean + 1e-12  # Lemma B.1
        assert mean <= bound_17(inst, res.cgbp) + 1e-12  # Theorem 3.5
    assert checked > 60


def test_bound_17_is_tight_for_a_worst_case_client() -> None:
    # One client equidistant from every server: all requests ride servers 1..K (Remark).
    inst = Instance(memory=[6.0, 4.0, 3.0], tau=[0.01, 0.01, 0.01], tau_in=[0.1] * 3,
                    t_tok=[[0.05, 0.05, 0.05]], t_in=[[0.1] * 3], n_blocks=8, block_bytes=1.0,
                    cache_bytes=0.01, input_len=1, output_len=1, requests=[2],
                    objective="decode")
    res = cg_bprr(inst)
    (route, _), = res.routes
    assert route.servers == (0, 1)
    # m = (5, 3, 2), K = 2: bound = t̃1 m1 + t̃2 m2 - τ2 (m1 + m2 - L)
    expected = (0.01 + 0.05 / 5) * 5 + (0.01 + 0.05 / 3) * 3 - 0.01 * 0
    assert bound_17(inst, res.cgbp) == pytest.approx(expected)
    assert res.mean_cost == pytest.approx(expected)


@pytest.mark.parametrize("idx", SMALL_FEASIBLE[:10])
def test_lemma34_shortest_path_is_optimal_for_the_placement(idx: int) -> None:
    inst = INSTANCES[idx]
    res = cg_bprr(inst)
    chains = feasible_chains(res.cgbp.placement, inst.n_blocks)
    for route, _ in res.routes:
        best = min(route_times(inst, make_route(res.cgbp.placement, route.client, ch)).per_token_s
                   for ch in chains)
        assert route_times(inst, route).per_token_s == pytest.approx(best)
        assert is_feasible_route(res.cgbp.placement, inst.n_blocks, route.servers)
    # Memory never binds: every server can hold all |R| sessions on every hosted block.
    load = np.zeros(inst.n_servers, dtype=np.int64)
    for route, n in res.routes:
        load[list(route.servers)] += n * np.asarray(route.blocks)
    assert np.all(load <= res.cgbp.placement.cache_slots)


def test_suboptimality_1_conservative_counts_can_be_infeasible() -> None:
    """§3.2.4: |V_s| >= L|R| servers with s_m + s_c|R| > M_j >= s_m + s_c -> no placement."""
    n_blocks, r = 2, 2
    inst = Instance(memory=np.full(4, 1.15), tau=np.full(4, 0.01), tau_in=np.full(4, 0.1),
                    t_tok=np.full((1, 4), 0.1), t_in=np.full((1, 4), 0.1), n_blocks=n_blocks,
                    block_bytes=1.0, cache_bytes=0.1, input_len=1, output_len=1,
                    requests=[r], objective="decode")
    assert not cg_bprr(inst).feasible
    assert not feasible_18(inst, r) and max_concurrency_18(inst) == 1
    assert cg_bprr(inst.with_requests([1])).feasible


def test_determinism_and_tie_breaking() -> None:
    inst = INSTANCES[5]
    a, b = cg_bprr(inst), cg_bprr(inst)
    assert a.cgbp.order == b.cgbp.order
    assert np.array_equal(a.cgbp.placement.first, b.cgbp.placement.first)
    assert a.routes == b.routes
    # Identical servers: the lower index is placed first and gets block 1.
    same = Instance(memory=[2.2] * 3, tau=[0.01] * 3, tau_in=[0.1] * 3, t_tok=[[0.1] * 3],
                    t_in=[[0.1] * 3], n_blocks=6, block_bytes=1.0, cache_bytes=0.1,
                    input_len=1, output_len=1, requests=[1], objective="decode")
    res = cg_bp(same)
    assert res.order == (0, 1, 2) and res.placement.first.tolist() == [1, 3, 5]


def test_all_token_objective_uses_corrected_eq8() -> None:
    """(8) corrected as in (B.3): ((t^I + (l-1)t) + (τ^I + (l-1)τ) k) / l, no double count."""
    inst = Instance(memory=[10.0], tau=[0.01], tau_in=[0.2], t_tok=[[0.1]], t_in=[[0.5]],
                    n_blocks=4, block_bytes=1.0, cache_bytes=0.1, input_len=10, output_len=5,
                    requests=[1])
    res = cg_bprr(inst)
    (route, _), = res.routes
    times = route_times(inst, route)
    expected = ((0.5 + 4 * 0.1) + (0.2 + 4 * 0.01) * 4) / 5
    assert times.per_token_s == pytest.approx(expected)
    assert times.response_s == pytest.approx(5 * expected)  # eq. (1) = l_max x (8)
    assert times.ttft_s == pytest.approx(0.5 + 0.2 * 4)
    assert times.tbt_s == pytest.approx(0.1 + 0.01 * 4)


def test_every_feasible_chain_satisfies_lemma31() -> None:
    inst = INSTANCES[FEASIBLE[0]]
    res = cg_bp(inst)
    for ch in itertools.islice(feasible_chains(res.placement, inst.n_blocks), 50):
        rt = make_route(res.placement, 0, ch)
        assert sum(rt.blocks) == inst.n_blocks  # each block processed exactly once
        assert all(k >= 1 for k in rt.blocks)
