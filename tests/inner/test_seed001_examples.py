"""Seed 001 worked examples: Fig. 1, Fig. 2 (eqs. 15–16), footnote 11, §4.1.1 block counts."""

from __future__ import annotations

import math

import pytest

from planner.inner.chains.gbp_cr import gbp_cr
from planner.inner.chains.gca import gca
from planner.inner.chains.placement import check_allocation, slots_after_placement
from planner.inner.chains.servers import (
    ChainModel,
    Server,
    blocks_per_server,
    footnote11_block_time,
    max_capacity,
    residual_slots,
)
from planner.inner.chains.solver import plan_chains

# ---------------------------------------------------------------- Fig. 1 (§3.1.3)
TAU_C, TAU_P = 1.0, 0.25


def fig1(L: int) -> tuple[list[Server], ChainModel]:
    """``M_j ≡ (L+1)s_m``, ``s_m = L s_c``, identical τ's; ``s_c = 0.1`` exercises the floors."""
    s_c = 0.1
    s_m = L * s_c
    servers = [Server(f"j{i + 1}", (L + 1) * s_m, TAU_C, TAU_P) for i in range(L)]
    return servers, ChainModel(L, s_m, s_c)


@pytest.mark.parametrize("L", [3, 4, 5])
def test_fig1_c1_gives_L_single_server_chains_of_capacity_1(L: int) -> None:
    servers, model = fig1(L)
    placed = gbp_cr(servers, model, 1, math.inf)  # no early break: all servers
    assert placed.chains == tuple((j,) for j in range(L))
    assert all(m == L for m in placed.placement.n_hosted)
    slots = slots_after_placement(servers, model, placed.placement)
    alloc = gca(servers, placed.placement, slots)
    assert len(alloc.chains) == L
    assert alloc.capacities == (1,) * L
    assert all(len(k.servers) == 1 for k in alloc.chains)
    T1 = TAU_C + L * TAU_P
    assert all(k.service_time == pytest.approx(T1) for k in alloc.chains)
    assert alloc.total_rate == pytest.approx(L / T1)  # ν^(1) = L/(τ^c + Lτ^p)
    check_allocation(placed.placement, alloc.chains, alloc.capacities, slots)


@pytest.mark.parametrize("L", [3, 4, 5])
def test_fig1_c_L2_gives_one_L_server_chain_of_capacity_L2(L: int) -> None:
    servers, model = fig1(L)
    placed = gbp_cr(servers, model, L * L, math.inf)
    assert placed.chains == (tuple(range(L)),)
    assert placed.placement.n_hosted == (1,) * L
    assert placed.placement.first_block == tuple(range(1, L + 1))
    slots = slots_after_placement(servers, model, placed.placement)
    alloc = gca(servers, placed.placement, slots)
    assert len(alloc.chains) == 1
    assert alloc.capacities == (L * L,)
    T2 = L * TAU_C + L * TAU_P
    assert alloc.chains[0].service_time == pytest.approx(T2)
    assert alloc.total_rate == pytest.approx(L / (TAU_C + TAU_P))  # ν^(2)
    # The paper's trade-off: T^(1) < T^(2) but ν^(2) > ν^(1).
    assert TAU_C + L * TAU_P < T2
    assert L / (TAU_C + TAU_P) > L / (TAU_C + L * TAU_P)


def test_fig1_early_break_counts_K_of_c() -> None:
    L = 4
    servers, model = fig1(L)
    T1 = TAU_C + L * TAU_P
    placed = gbp_cr(servers, model, 1, 2.5 / T1)  # needs 3 unit-rate chains
    assert placed.n_chains == 3
    assert placed.surrogate == 3
    assert placed.placement.n_hosted[3] == 0  # fourth server left unused
    infeasible = gbp_cr(servers, model, 1, 4.5 / T1)
    assert math.isinf(infeasible.n_chains)


def test_fig1_lower_bound_choice_follows_demand() -> None:
    """§3.1.3: c = 1 suits low load, c = L² high load; the Thm 3.7 choice reflects both."""
    L = 4
    servers, model = fig1(L)
    nu1 = L / (TAU_C + L * TAU_P)
    low = plan_chains(servers, model, 0.05 * nu1, rho_bar=0.95, c_candidates=[1, L * L])
    high = plan_chains(servers, model, 0.9 * nu1, rho_bar=0.95, c_candidates=[1, L * L])
    assert high.c_scores[1] < float("inf")  # c = 1 is still stable here, just slower
    # GBP-CR's early break keeps only the single-server chains the load needs (K(1) = 1).
    assert low.c == 1 and all(len(k.hops) == 1 and k.capacity == 1 for k in low.chains)
    assert len(low.chains) == 1
    assert high.c == L * L and len(high.chains) == 1 and high.chains[0].capacity == L * L


# ---------------------------------------------------------------- Fig. 2 (§3.1.4)
EPS = 1e-3


def fig2() -> tuple[list[Server], ChainModel]:
    servers = [
        Server(f"j{l_}", 3.0 if l_ == 2 else 2.0, 2.0 if l_ == 2 else 1.0, l_ * EPS)
        for l_ in range(1, 6)
    ]
    return servers, ChainModel(n_blocks=3, block_memory=1.0, cache_slot_memory=0.1)


def ids(servers: list[Server], chain: tuple[int, ...]) -> tuple[str, ...]:
    return tuple(servers[j].id for j in chain)


def test_fig2_gbp_cr_chains_and_eq15() -> None:
    servers, model = fig2()
    assert [blocks_per_server(s, model, 1) for s in servers] == [1, 2, 1, 1, 1]
    placed = gbp_cr(servers, model, 1, 0.6)  # 1/(3+5ε) < 0.6 ≤ ν of (15)
    assert placed.requirement_met and placed.n_chains == 2
    assert [ids(servers, k) for k in placed.chains] == [("j1", "j2"), ("j3", "j4", "j5")]
    assert placed.chain_times == pytest.approx((3 + 5 * EPS, 3 + 12 * EPS))
    assert placed.scaled_rate == pytest.approx(1 / (3 + 5 * EPS) + 1 / (3 + 12 * EPS))  # (15)


def test_fig2_gca_chains_and_eq16() -> None:
    servers, model = fig2()
    placed = gbp_cr(servers, model, 1, 0.6)
    slots = slots_after_placement(servers, model, placed.placement)
    assert slots == [10, 10, 10, 10, 10]  # ⌊1/0.1⌋ needs the floor tolerance
    alloc = gca(servers, placed.placement, slots)
    got = [ids(servers, k.servers) for k in alloc.chains]
    assert got == [("j1", "j2"), ("j1", "j4", "j5"), ("j3", "j4", "j5")]
    assert alloc.capacities == (5, 5, 5)
    assert [k.service_time for k in alloc.chains] == pytest.approx(
        [3 + 5 * EPS, 3 + 10 * EPS, 3 + 12 * EPS]
    )
    nu16 = 5 / (3 + 5 * EPS) + 5 / (3 + 10 * EPS) + 5 / (3 + 12 * EPS)
    assert alloc.total_rate == pytest.approx(nu16)
    check_allocation(placed.placement, alloc.chains, alloc.capacities, slots)


def test_fig2_literal_gca_yields_the_zero_capacity_chain_the_notes_report() -> None:
    servers, model = fig2()
    placed = gbp_cr(servers, model, 1, 0.6)
    slots = slots_after_placement(servers, model, placed.placement)
    literal = gca(servers, placed.placement, slots, literal=True)
    got = [(ids(servers, k.servers), c) for k, c in zip(literal.chains, literal.capacities,
                                                         strict=True)]
    assert (("j3", "j2"), 0) in got
    nonzero = [g for g in got if g[1] > 0]
    assert nonzero == [(("j1", "j2"), 5), (("j1", "j4", "j5"), 5), (("j3", "j4", "j5"), 5)]


# ---------------------------------------------------------------- footnote 11 and §4.1.1
def test_footnote11_tau_p_109_and_175_ms() -> None:
    common = dict(gflops_per_block_token=5.0, block_memory_gb=1.32, mean_input_len=2000,
                  mean_output_len=20, overhead_ms=1.0)
    high = footnote11_block_time(tflops=120, bandwidth_gb_per_ms=1.02, **common)
    low = footnote11_block_time(tflops=80, bandwidth_gb_per_ms=0.51, **common)
    assert high == pytest.approx(109, abs=0.5)
    assert low == pytest.approx(175, abs=0.5)
    s = Server.from_token_times("h", 40, 50, prefill_time_per_token=5 / 120,
                                decode_time_per_token=1.32 / 1.02, mean_input_len=2000,
                                mean_output_len=20, block_overhead=1.0)
    assert s.block_time == pytest.approx(high)


def test_bloom_block_counts_follow_eq8() -> None:
    model = ChainModel(70, 1.32, 0.11)
    hi, lo = Server("h", 40, 0, 109), Server("l", 20, 0, 175)
    assert max_capacity([hi, lo], model) == 351
    table = {1: (27, 13), 7: (19, 9), 20: (11, 5), 50: (5, 2)}
    for c, (m_hi, m_lo) in table.items():
        assert (blocks_per_server(hi, model, c), blocks_per_server(lo, model, c)) == (m_hi, m_lo)
    assert residual_slots(hi, model, 19) == 135 and residual_slots(lo, model, 9) == 73
