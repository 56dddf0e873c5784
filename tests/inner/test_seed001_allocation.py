"""Seed 001 §3.1: GBP-CR optimality (Thm 3.4), GCA invariants, §4.1.2 ILP vs brute force."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from planner.inner.chains.gbp_cr import gbp_cr
from planner.inner.chains.gca import gca
from planner.inner.chains.ilp import capacity_ilp, job_server_lower_bound
from planner.inner.chains.placement import (
    Chain,
    Placement,
    check_allocation,
    feasible_links,
    slots_after_placement,
)
from planner.inner.chains.servers import ChainModel, Server, blocks_per_server, server_time


def random_servers(rng: np.random.Generator, J: int, mem=(2.0, 6.0)) -> list[Server]:
    return [
        Server(f"s{j}", float(rng.uniform(*mem)), float(rng.uniform(0.1, 2.0)),
               float(rng.uniform(0.05, 0.5)))
        for j in range(J)
    ]


# ------------------------------------------------------------------ Theorem 3.4
def min_groups_bruteforce(servers, model, c, required) -> float:
    """Problem (10) by enumeration: fewest disjoint groups covering L with enough rate."""
    J = len(servers)
    m = [blocks_per_server(s, model, c) for s in servers]
    t = [server_time(s, mj) for s, mj in zip(servers, m, strict=True)]
    best = math.inf
    for labels in itertools.product(range(J // 2 + 1), repeat=J):  # 0 = unused
        groups = [[j for j in range(J) if labels[j] == g] for g in range(1, J // 2 + 1)]
        groups = [g for g in groups if g]
        if len(groups) >= best or not groups:
            continue
        if any(sum(m[j] for j in g) < model.n_blocks for g in groups):
            continue
        if sum(1 / sum(t[j] for j in g) for g in groups) >= required / c:
            best = len(groups)
    return best


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_thm34_gbp_cr_optimal_for_homogeneous_memory(seed: int) -> None:
    rng = np.random.default_rng(seed)
    model = ChainModel(n_blocks=4, block_memory=1.0, cache_slot_memory=0.25)
    servers = [Server(f"s{j}", 2.5, float(rng.uniform(0.2, 2)), float(rng.uniform(0.1, 1)))
               for j in range(6)]  # m_j(2) = 2, so every chain needs 2 servers
    c = 2
    t = sorted(server_time(s, 2) for s in servers)
    pair_rates = [1 / (t[0] + t[1]), 1 / (t[2] + t[3]), 1 / (t[4] + t[5])]
    for k in range(3):  # requirements that need exactly 1, 2, 3 chains, and infeasible
        req = c * (sum(pair_rates[:k]) + 0.5 * pair_rates[k])
        assert gbp_cr(servers, model, c, req).n_chains == min_groups_bruteforce(
            servers, model, c, req)
    req = c * sum(pair_rates) * 1.01
    assert math.isinf(gbp_cr(servers, model, c, req).n_chains)
    assert math.isinf(min_groups_bruteforce(servers, model, c, req))


def test_gbp_cr_skips_servers_that_cannot_hold_a_block() -> None:
    model = ChainModel(n_blocks=3, block_memory=1.0, cache_slot_memory=0.5)
    servers = [Server("tiny", 1.2, 0.1, 0.1), Server("big", 10.0, 1.0, 1.0)]
    res = gbp_cr(servers, model, 1, math.inf)
    assert res.placement.n_hosted == (0, 3)
    assert res.chains == ((1,),)


# ------------------------------------------------------------------ GCA invariants
@pytest.mark.parametrize("seed", range(6))
def test_gca_allocations_are_feasible_and_match_literal_nonzero_chains(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    model = ChainModel(n_blocks=8, block_memory=0.5, cache_slot_memory=0.05)
    servers = random_servers(rng, 7)
    for c in (1, 5, 20):
        placed = gbp_cr(servers, model, c, math.inf)
        slots = slots_after_placement(servers, model, placed.placement)
        alloc = gca(servers, placed.placement, slots)
        check_allocation(placed.placement, alloc.chains, alloc.capacities, slots)
        assert all(ck >= 1 for ck in alloc.capacities)
        times = [k.service_time for k in alloc.chains]
        assert times == sorted(times)  # ℰ^(l) shrinks, so shortest paths lengthen
        assert len(alloc.chains) <= len(feasible_links(placed.placement)) + 1
        # Stale links only ever add zero-capacity chains (reading guide §3.2).
        lit = gca(servers, placed.placement, slots, literal=True)
        nonzero = [(k.servers, ck) for k, ck in zip(lit.chains, lit.capacities, strict=True)
                   if ck > 0]
        assert nonzero == [(k.servers, ck) for k, ck in zip(alloc.chains, alloc.capacities,
                                                              strict=True)]
        # Maximality: no source→sink path survives with room for one more job.
        for k in alloc.chains:
            assert any(alloc.residual[j] < m for j, m in k.slot_usage().items())


def test_gca_on_a_hand_built_overlapping_placement() -> None:
    """Overlap: j1 hosts 1–3, j2 hosts 2–4; j1→j2 processes one block at j2 (m_12 = 1)."""
    servers = [Server("j1", 10, 1.0, 1.0), Server("j2", 10, 1.0, 1.0)]
    model = ChainModel(4, 1.0, 1.0)
    pl = Placement(4, (1, 2), (3, 3))
    links = {(lk.src, lk.dst): lk.blocks for lk in feasible_links(pl)}
    assert links == {(-1, 0): 3, (0, 1): 1}
    slots = slots_after_placement(servers, model, pl)
    assert slots == [7, 7]
    alloc = gca(servers, pl, slots)
    assert [(k.servers, k.blocks) for k in alloc.chains] == [((0, 1), (3, 1))]
    assert alloc.capacities == (2,)  # ⌊7/3⌋ at j1 binds
    assert alloc.chains[0].service_time == pytest.approx(1 + 3 + 1 + 1)
    assert alloc.chains[0].block_ranges() == ((1, 3), (4, 4))


# ------------------------------------------------------------------ §4.1.2 ILP
def random_chain_instance(rng: np.random.Generator) -> tuple[list[Chain], list[int]]:
    J, K = 3, int(rng.integers(2, 5))
    chains = []
    for _ in range(K):
        n = int(rng.integers(1, J + 1))
        srv = tuple(sorted(rng.choice(J, n, replace=False).tolist()))
        blocks = tuple(int(b) for b in rng.integers(1, 3, n))
        chains.append(Chain(srv, blocks, float(rng.uniform(0.5, 3.0))))
    slots = rng.integers(2, 7, J).tolist()
    return chains, slots


def brute_force(chains: list[Chain], slots: list[int], req: float) -> tuple[float, float]:
    ubs = [min(slots[j] // m for j, m in k.slot_usage().items()) for k in chains]
    best_min, best_rate = math.inf, 0.0
    for caps in itertools.product(*(range(u + 1) for u in ubs)):
        use = [0] * len(slots)
        for k, ck in zip(chains, caps, strict=True):
            for j, m in k.slot_usage().items():
                use[j] += m * ck
        if any(u > s for u, s in zip(use, slots, strict=True)):
            continue
        rate = sum(ck * k.service_rate for k, ck in zip(chains, caps, strict=True))
        best_rate = max(best_rate, rate)
        if rate >= req:
            best_min = min(best_min, sum(caps))
    return best_min, best_rate


@pytest.mark.parametrize("seed", range(8))
def test_ilp_matches_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    chains, slots = random_chain_instance(rng)
    _, max_rate = brute_force(chains, slots, 0.0)
    mr = capacity_ilp(chains, slots, objective="max_rate")
    assert mr.objective == pytest.approx(max_rate, rel=1e-7)
    for frac in (0.3, 0.77, 1.2):
        req = frac * max_rate
        want, _ = brute_force(chains, slots, req)
        got = capacity_ilp(chains, slots, req)
        if math.isinf(want):
            assert got.capacities is None
            continue
        assert got.objective == want
        assert sum(ck * k.service_rate for k, ck in zip(chains, got.capacities,
                                                         strict=True)) >= req * (1 - 1e-7)
        assert got.objective >= job_server_lower_bound(chains, req)


# ------------------------------------------------------------------ Theorem 3.5
def all_chains(pl: Placement) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """Every source→sink path of ℰ_{a,m} by depth-first search (independent of gca)."""
    out_links: dict[int, list[tuple[int, int]]] = {}
    for lk in feasible_links(pl):
        out_links.setdefault(lk.src, []).append((lk.dst, lk.blocks))
    paths = []

    def walk(node: int, path: tuple, blocks: tuple) -> None:
        if node != -1 and pl.end(node) == pl.n_blocks:
            paths.append((path, blocks))
        for nxt, m in out_links.get(node, []):
            walk(nxt, path + (nxt,), blocks + (m,))

    walk(-1, (), ())
    return paths


@pytest.mark.parametrize("seed", range(4))
def test_thm35_gca_chains_suffice_for_jffs(seed: int) -> None:
    """Under JFFC on GCA's chains, the fastest feasible chain among *all* chains of the
    placement (given the cache in use) is never faster than JFFC's pick, and none exists
    exactly when every GCA chain is full."""
    rng = np.random.default_rng(200 + seed)
    model = ChainModel(n_blocks=6, block_memory=0.5, cache_slot_memory=0.1)
    servers = random_servers(rng, 6, mem=(1.2, 3.5))
    placed = gbp_cr(servers, model, 3, math.inf)
    slots = slots_after_placement(servers, model, placed.placement)
    alloc = gca(servers, placed.placement, slots)
    every = all_chains(placed.placement)
    assert len(every) >= len(alloc.chains) >= 1
    time_of = {p: sum(server_time(servers[j], m) for j, m in zip(p, b, strict=True))
               for p, b in every}
    occ = [0] * len(alloc.chains)
    jobs: list[int] = []
    checked = 0
    for _ in range(300):
        if jobs and rng.random() < 0.45:
            occ[jobs.pop(int(rng.integers(len(jobs))))] -= 1
            continue
        used = [0] * len(servers)
        for k, n in zip(alloc.chains, occ, strict=True):
            for j, m in k.slot_usage().items():
                used[j] += m * n
        feasible = [p for p, b in every
                    if all(used[j] + m <= slots[j] for j, m in zip(p, b, strict=True))]
        free = [i for i, k in enumerate(alloc.chains) if occ[i] < alloc.capacities[i]]
        assert bool(feasible) == bool(free)
        if not free:
            continue
        pick = min(free, key=lambda i: alloc.chains[i].service_time)
        best_any = min(time_of[p] for p in feasible)
        assert alloc.chains[pick].service_time <= best_any + 1e-12
        occ[pick] += 1
        jobs.append(pick)
        checked += 1
    assert checked > 50
