"""Seed 002 §4.9.2's divider, the budget repair and the two encodings (pure, no Ax)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from planner.core.errors import PlannerError
from planner.outer.divider import divide
from planner.outer.encodings import DirectEncoding, DividerEncoding
from planner.outer.procurement import fit_budget
from planner.outer.protocol import SearchSpace, TypeSupply, canonical_layout, layout_counts
from planner.outer.synthetic import default_space

# ----------------------------------------------------------------- divide


def test_preconditions_raise():
    with pytest.raises(ValueError):
        divide(10, 2, 0.0, 0)
    with pytest.raises(ValueError):
        divide(-1, 2, 0.0, 1)
    with pytest.raises(ValueError):
        divide(10, -2, 0.0, 1)
    with pytest.raises(ValueError):
        divide(10, 2, math.nan, 1)


@pytest.mark.parametrize("total,n,m", [(0, 3, 1), (10, 0, 2), (3, 2, 4)])
def test_no_island_possible_returns_empty(total, n, m):
    assert divide(total, n, 1.0, m) == []


def test_fig_4_8_zero_skew_is_even():
    assert divide(100, 5, 0.0, 1) == [20, 20, 20, 20, 20]
    sizes = divide(103, 5, 0.0, 2)
    assert sum(sizes) == 103 and max(sizes) - min(sizes) <= 1


def test_fig_4_8_positive_skew_grows_with_index():
    for s in (0.5, 1.0, 2.0, 5.0):
        sizes = divide(100, 5, s, 1)
        assert sum(sizes) == 100
        assert sizes == sorted(sizes) and sizes[-1] > sizes[0]
    # More skew, more spread (Fig. 4.8: higher |S| -> higher size variance).
    spreads = [np.var(divide(100, 5, s, 1)) for s in (0.5, 1.0, 2.0, 5.0)]
    assert spreads == sorted(spreads) and spreads[0] < spreads[-1]


def test_negative_skew_favours_low_indices():
    # w_k = k^S with S < 0 decreases in k; it is not the mirror image of +S.
    for s in (0.7, 3.0):
        down = divide(100, 5, -s, 1)
        assert sum(down) == 100 and down == sorted(down, reverse=True) and down[0] > down[-1]
    assert divide(100, 5, -1.0, 1) != divide(100, 5, 1.0, 1)[::-1]


def test_known_values_from_the_formula():
    # G=100, N=5, I_min=1, S=1: remaining 95, weights 1..5 / 15 -> 6.33, 12.67, 19,
    # 25.33, 31.67; floors 6, 12, 19, 25, 31 (sum 93), D = 2 to the largest fractions
    # (0.67, 0.67 at k=2 and k=5) -> 7, 14, 20, 26, 33.
    assert divide(100, 5, 1.0, 1) == [7, 14, 20, 26, 33]


def test_island_count_capped_by_min_size():
    assert divide(9, 10, 0.0, 2) == [3, 2, 2, 2]  # N_actual = floor(9 / 2) = 4
    assert divide(5, 1, -3.0, 2) == [5]  # a single island takes everything


def test_random_inputs_keep_invariants():
    rng = np.random.default_rng(0)
    for _ in range(2000):
        total = int(rng.integers(0, 300))
        n = int(rng.integers(0, 80))
        m = int(rng.integers(1, 9))
        s = float(rng.uniform(-5, 5))
        sizes = divide(total, n, s, m)
        n_actual = min(n, total // m)
        assert len(sizes) == n_actual
        if sizes:
            assert sum(sizes) == total
            assert min(sizes) >= m
            base = (total - n_actual * m) / n_actual
            if abs(s) < 1e-9:
                assert max(sizes) - min(sizes) <= 1
            elif s > 0:
                assert sizes == sorted(sizes) and sizes[-1] >= m + base - 1
            else:
                assert sizes == sorted(sizes, reverse=True)


# ----------------------------------------------------------------- budget repair


def test_fit_budget_keeps_fitting_counts():
    assert fit_budget([10, 5], [2.0, 3.0], [1, 1], 100.0) == [10, 5]
    assert fit_budget([10, 5], [2.0, 3.0], [1, 1], None) == [10, 5]
    assert fit_budget([10, 1], [2.0, 3.0], [1, 2], None) == [10, 0]  # below min island


def test_fit_budget_random_properties():
    rng = np.random.default_rng(1)
    for _ in range(3000):
        k = int(rng.integers(1, 5))
        counts = rng.integers(0, 200, k).tolist()
        prices = rng.uniform(0.0, 9.0, k).round(2).tolist()
        mins = rng.integers(1, 9, k).tolist()
        budget = float(rng.uniform(1, 1500))
        out = fit_budget(counts, prices, mins, budget)
        cost = sum(n * p for n, p in zip(out, prices, strict=True))
        assert cost <= budget * (1 + 1e-9)
        for n, c, m in zip(out, counts, mins, strict=True):
            assert 0 <= n <= c and (n == 0 or n >= m)
        full = sum(c * p for c, p, m in zip(counts, prices, mins, strict=True) if c >= m)
        if full <= budget:
            assert out == [c if c >= m else 0 for c, m in zip(counts, mins, strict=True)]
        else:
            # No kept type could take one more GPU within the budget: the repair
            # stops only when the budget is used up to a single GPU's price.
            for n, c, p in zip(out, counts, prices, strict=True):
                if 0 < n < c:
                    assert cost + p > budget * (1 + 1e-9) - 1e-9


def test_fit_budget_keeps_proportions():
    out = fit_budget([100, 100], [1.0, 1.0], [1, 1], 100.0)
    assert out == [50, 50]
    out = fit_budget([120, 40], [2.0, 4.0], [2, 2], 200.0)  # lambda = 200 / 400
    assert out == [60, 20]


# ----------------------------------------------------------------- encodings


def _space(budget=None, target=None, min_island=1):
    return SearchSpace(types=(TypeSupply("A", 40, 2.0, min_island),
                              TypeSupply("B", 16, 5.0, min_island),
                              TypeSupply("C", 3, 1.0, 4)),  # C: too few for an island
                       budget=budget, target_rps=target)


def test_divider_parameters_follow_the_mode():
    names = [p.name for p in DividerEncoding(_space()).params]
    assert names == ["n0", "s0", "n1", "s1"]  # C unusable; no procurement: no u_t
    names = [p.name for p in DividerEncoding(_space(budget=50.0)).params]
    assert "u0" in names and "u1" in names
    assert [p.name for p in DividerEncoding(_space(target=10.0)).params][-1] == "u1"
    enc = DividerEncoding(_space(), min_island=2, max_islands_per_type=6)
    assert [(p.name, p.upper) for p in enc.params if p.is_int] == [("n0", 6), ("n1", 6)]
    # A type with room for one island only has no parameter at all.
    one = SearchSpace(types=(TypeSupply("A", 3, 1.0, 2),))
    assert DividerEncoding(one).params == ()
    assert DividerEncoding(one).decode({}) == (("A", 3),)


def test_divider_uses_everything_without_procurement():
    space = _space()
    enc = DividerEncoding(space, min_island=2)
    for p in enc.sample(200, seed=3, quasi=False):
        lay = enc.decode(p)
        assert layout_counts(lay) == {"A": 40, "B": 16}
        assert all(g >= 2 for _, g in lay)


@pytest.mark.parametrize("budget", [30.0, 77.0, 150.0])
def test_divider_decodes_within_budget_and_inventory(budget):
    space = _space(budget=budget)
    enc = DividerEncoding(space, min_island=2)
    costs = []
    for p in enc.sample(300, seed=4, quasi=True) + enc.sample(300, seed=5, quasi=False):
        lay = enc.decode(p)
        assert space.fits(lay), (p, lay)
        costs.append(space.cost(lay))
    assert max(costs) > 0.8 * budget  # the repair uses the budget, not just fits it


def test_divider_decode_matches_divide():
    enc = DividerEncoding(_space(), min_island=2)
    lay = enc.decode({"n0": 5, "s0": 1.5, "n1": 3, "s1": 0.0})
    expect = canonical_layout([("A", g) for g in divide(40, 5, 1.5, 2)]
                              + [("B", g) for g in divide(16, 3, 0.0, 2)])
    assert lay == expect


@pytest.mark.parametrize("budget", [None, 60.0])
def test_direct_samples_and_floors_satisfy_constraints(budget):
    space = _space(budget=budget)
    enc = DirectEncoding(space, slots=5, min_island=2)
    assert len(enc.params) == 10
    for p in enc.sample(300, seed=6, quasi=True):
        assert all(c.holds(p) for c in enc.constraints)
        assert space.fits(enc.decode(p))
    # Any point in the box that satisfies the constraints decodes to a valid layout.
    rng = np.random.default_rng(7)
    tested = 0
    for _ in range(3000):
        p = {q.name: float(rng.uniform(q.lower, q.upper)) / rng.integers(1, 14)
             for q in enc.params}
        if all(c.holds(p) for c in enc.constraints):
            tested += 1
            assert space.fits(enc.decode(p))
    assert tested > 20


def test_direct_drops_slots_below_min_island():
    enc = DirectEncoding(_space(), slots=3, min_island=4)
    lay = enc.decode({"x0_0": 3.9, "x0_1": 4.2, "x0_2": 10.0,
                      "x1_0": 0.0, "x1_1": 16.5, "x1_2": 0.0})
    assert lay == (("A", 4), ("A", 10), ("B", 16))


def test_direct_budget_constraint_present_only_when_it_can_bind():
    assert len(DirectEncoding(_space(), slots=4).constraints) == 2  # per type only
    enc = DirectEncoding(_space(budget=60.0), slots=4)
    assert len(enc.constraints) == 3
    assert "<= 60.0" in enc.constraints[-1].to_ax()


def test_unusable_inventory_is_a_user_error():
    with pytest.raises(PlannerError):
        DividerEncoding(SearchSpace(types=(TypeSupply("A", 1, 1.0, 2),)))
    with pytest.raises(PlannerError):
        SearchSpace(types=(TypeSupply("A", 4, 1.0),), budget=0.0)
    with pytest.raises(PlannerError):
        SearchSpace(types=(TypeSupply("A", 4, 1.0), TypeSupply("A", 2, 1.0)))


def test_default_space_binds_the_budget():
    space = default_space(512.0)
    assert space.full_cost > 512.0 and space.procures
    assert not default_space(None).procures


def test_affordable_is_the_one_budget_cap():
    from planner.outer.protocol import affordable

    assert affordable(512.0, 4.0) == 128
    assert affordable(0.3, 0.1) == 3  # 0.3 / 0.1 = 2.9999999999999996 in floating point
    assert affordable(511.99, 4.0) == 127
