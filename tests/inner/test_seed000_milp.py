"""Seed 000 MILP (13) against brute force and CG-BPRR on tiny instances."""

from __future__ import annotations

import numpy as np
import pytest

from planner.inner.blocks.bounds import lower_bound_mean
from planner.inner.blocks.bruteforce import brute_force
from planner.inner.blocks.cg_bprr import cg_bprr
from planner.inner.blocks.instance import Instance
from planner.inner.blocks.milp import solve_milp
from planner.inner.blocks.routing import is_feasible_route, route_times


def tiny(seed: int) -> Instance:
    rng = np.random.default_rng(seed)
    n_s = int(rng.integers(2, 4))
    n_c = int(rng.integers(1, 3))
    n_blocks = int(rng.integers(2, 4))
    requests = rng.integers(0, 2, n_c)
    requests[0] += 1
    return Instance(
        memory=rng.uniform(1.2, 3.6, n_s), tau=rng.uniform(0.01, 0.2, n_s),
        tau_in=rng.uniform(0.1, 1.0, n_s), t_tok=rng.uniform(0.05, 0.5, (n_c, n_s)),
        t_in=rng.uniform(0.1, 1.0, (n_c, n_s)), n_blocks=n_blocks, block_bytes=1.0,
        cache_bytes=float(rng.uniform(0.05, 0.4)), input_len=4, output_len=8,
        requests=requests, objective=("decode", "all_tokens")[seed % 2],
    )


def check_solution(inst: Instance, placement, routes) -> float:
    """Validate a solution against (6b)–(6e) and return its mean per-token cost (6a)."""
    assert np.all(placement.first[placement.count > 0] + placement.count[placement.count > 0]
                  - 1 <= inst.n_blocks)  # (6d)
    load = np.zeros(inst.n_servers)
    for rt in routes:
        assert is_feasible_route(placement, inst.n_blocks, rt.servers)  # Lemma 3.1
        load[list(rt.servers)] += rt.blocks
    used = inst.block_bytes * placement.count + inst.cache_bytes * load
    assert np.all(used <= inst.memory + 1e-9)  # (6b)
    assert len(routes) == inst.total_requests  # (6c)
    return float(np.mean([route_times(inst, rt).per_token_s for rt in routes]))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("allow_idle", [False, True])
def test_milp_matches_brute_force(seed: int, allow_idle: bool) -> None:
    inst = tiny(seed)
    bf = brute_force(inst, allow_idle=allow_idle)
    milp = solve_milp(inst, allow_idle=allow_idle, time_limit_s=30)
    if bf.placement is None:
        assert milp.placement is None and milp.status == "Infeasible"
        return
    assert milp.optimal
    assert milp.mean_cost == pytest.approx(bf.mean_cost, rel=1e-6, abs=1e-9)
    assert check_solution(inst, milp.placement, milp.routes) == pytest.approx(milp.mean_cost)
    if not allow_idle:
        assert np.all(milp.placement.count >= 1)  # (13h): m_j ∈ [L]
    assert lower_bound_mean(inst) <= milp.mean_cost + 1e-9  # Lemma B.1


def test_tiny_set_has_feasible_and_infeasible_cases() -> None:
    outcomes = {brute_force(tiny(s)).placement is not None for s in range(6)}
    assert outcomes == {True, False}  # both branches of the comparison above are exercised


@pytest.mark.parametrize("seed", range(6, 12))
def test_milp_never_worse_than_cg_bprr(seed: int) -> None:
    inst = tiny(seed)
    greedy = cg_bprr(inst)
    milp = solve_milp(inst, allow_idle=True, time_limit_s=30)
    if greedy.feasible:
        assert milp.optimal
        assert milp.mean_cost <= greedy.mean_cost + 1e-9
    if milp.optimal:
        check_solution(inst, milp.placement, milp.routes)


def test_milp_finds_the_disjoint_chains_cg_bprr_misses() -> None:
    """§3.2.4 suboptimality 1: one block per server, each request on its own chain."""
    inst = Instance(memory=np.full(4, 1.15), tau=np.full(4, 0.01), tau_in=np.full(4, 0.1),
                    t_tok=np.full((1, 4), 0.1), t_in=np.full((1, 4), 0.1), n_blocks=2,
                    block_bytes=1.0, cache_bytes=0.1, input_len=1, output_len=1,
                    requests=[2], objective="decode")
    assert not cg_bprr(inst).feasible
    milp = solve_milp(inst, time_limit_s=30)
    assert milp.optimal
    assert len({rt.servers for rt in milp.routes}) == 2  # disjoint chains
    assert milp.mean_cost == pytest.approx(2 * (0.1 + 0.01))
    check_solution(inst, milp.placement, milp.routes)


def test_milp_strict_form_rejects_a_server_too_small_for_a_block() -> None:
    """(13h) forces m_j >= 1 (guide §7.2(c)); allow_idle lets the server sit out."""
    inst = Instance(memory=[5.0, 0.5], tau=[0.01, 0.01], tau_in=[0.1, 0.1],
                    t_tok=[[0.1, 0.1]], t_in=[[0.1, 0.1]], n_blocks=2, block_bytes=1.0,
                    cache_bytes=0.1, input_len=1, output_len=1, requests=[1],
                    objective="decode")
    assert solve_milp(inst, time_limit_s=30).placement is None
    relaxed = solve_milp(inst, allow_idle=True, time_limit_s=30)
    assert relaxed.optimal and relaxed.placement.count[1] == 0
    assert relaxed.mean_cost == pytest.approx(0.1 + 2 * 0.01)


def test_cbc_and_highs_agree() -> None:
    inst = tiny(2)
    a = solve_milp(inst, solver="highs", time_limit_s=30)
    b = solve_milp(inst, solver="cbc", time_limit_s=30)
    assert a.status == b.status
    if a.optimal:
        assert a.mean_cost == pytest.approx(b.mean_cost, rel=1e-6)


def test_symmetry_breaking_keeps_the_optimum() -> None:
    inst = tiny(4).with_requests([2] + [0] * (tiny(4).n_clients - 1))
    with_sb = solve_milp(inst, time_limit_s=30)
    without = solve_milp(inst, symmetry_breaking=False, time_limit_s=30)
    assert with_sb.status == without.status
    if with_sb.optimal:
        assert with_sb.mean_cost == pytest.approx(without.mean_cost, rel=1e-6)
