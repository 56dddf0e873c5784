"""Ranges of thesis §4.6.3: partition, probabilities, midpoints, quantile option, cache."""

from __future__ import annotations

import numpy as np
import pytest

from planner.core.errors import PlannerError
from planner.workload import Workload, load_workload, make_ranges


def _assert_partition(r, w):
    assert r.start[0] == 0 and r.end[-1] == w.max_len + 1
    np.testing.assert_array_equal(r.start[1:], r.end[:-1])  # contiguous, no overlap
    assert np.all(r.end > r.start)
    assert r.prob.sum() == pytest.approx(1.0, abs=1e-12)
    direct = np.array([w.pmf[s:e].sum() for s, e in zip(r.start, r.end, strict=True)])
    np.testing.assert_allclose(r.prob, direct, rtol=1e-9, atol=1e-15)
    assert np.all((r.mid >= r.start) & (r.mid < r.end))


@pytest.mark.parametrize("name", ["thesis-fig4.2", "azure-code-2023", "azure-conv-2023",
                                  "example-mixture"])
@pytest.mark.parametrize("width", [1, 7, 250, 1000])
def test_width_ranges_partition_the_support(name, width):
    w = load_workload(name)
    r = make_ranges(w, width)
    _assert_partition(r, w)
    n = w.max_len + 1
    sliver = 0 < n % width < width / 2 and n > width  # merged into the range before it
    assert len(r) == -(-n // width) - sliver
    full = (r.end - r.start) == width
    # Thesis: start = kW, mid = start + floor(W/2) for every full range.
    np.testing.assert_array_equal(r.start, np.arange(len(r)) * width)
    np.testing.assert_array_equal(r.mid[full], r.start[full] + width // 2)
    assert r.width == width and r.method == "width"


def test_thesis_example_keeps_the_final_partial_range_in_the_last_range():
    w = load_workload("thesis-fig4.2")
    r = make_ranges(w, 250)
    # floor(|S|/W) = 32 full ranges over 0..7999; length 8000, which the thesis's
    # k < floor(|S|/W) would drop, joins the last range (a 1-token sliver range would
    # carry p ~ 3e-7 and make the MILP numerically fragile).
    assert len(r) == 32
    assert (r.start[-1], r.end[-1]) == (7750, 8001)
    assert r.prob[-1] == pytest.approx(w.pmf[7750:].sum())
    assert r.as_tuples()[0] == (125, pytest.approx(w.pmf[:250].sum()), 0, 250)


def test_default_is_32_ranges():
    w = load_workload("thesis-fig4.2")
    r = make_ranges(w)
    assert len(r) == 32
    _assert_partition(r, w)


def test_index_of_matches_brute_force():
    w = load_workload("azure-conv-2023")
    r = make_ranges(w, 333)
    lengths = np.arange(-5, w.max_len + 10)
    got = r.index_of(lengths)
    expected = np.array([next((k for k in range(len(r)) if r.start[k] <= s < r.end[k]), -1)
                         for s in lengths])
    np.testing.assert_array_equal(got, expected)


def test_quantile_ranges_have_equal_probability_on_smooth_pmf():
    w = load_workload("thesis-fig4.2")
    r = make_ranges(w, count=10, method="quantile")
    _assert_partition(r, w)
    assert len(r) == 10
    # Each range holds ~1/10 (a boundary length can carry at most max(pmf) extra).
    assert np.all(np.abs(r.prob - 0.1) <= w.pmf.max() + 1e-12)
    assert r.method == "quantile"


def test_quantile_ranges_merge_atoms():
    pmf = np.zeros(101)
    pmf[10] = 0.6
    pmf[50] = 0.2
    pmf[90] = 0.2
    w = Workload("atoms", pmf, decode_mean=1, decode_max=1)
    r = make_ranges(w, count=5, method="quantile")
    _assert_partition(r, w)
    # The atom at 10 carries 3/5 of the mass: its boundaries coincide and merge.
    assert len(r) == 3
    np.testing.assert_allclose(r.prob, [0.6, 0.2, 0.2])
    assert r.index_of(10) == 0 and r.index_of(50) == 1 and r.index_of(90) == 2


def test_drop_empty_keeps_only_mass():
    pmf = np.zeros(1001)
    pmf[[5, 950]] = 0.5
    w = Workload("sparse", pmf, decode_mean=1, decode_max=1)
    full = make_ranges(w, 100)
    assert len(full) == 10 and full.end[-1] == 1001 and np.count_nonzero(full.prob) == 2
    r = make_ranges(w, 100, drop_empty=True)
    assert len(r) == 2 and r.prob.sum() == pytest.approx(1.0)
    np.testing.assert_array_equal(r.index_of(np.array([5, 500, 950])), [0, -1, 1])


def test_ranges_are_cached_per_pmf_and_width():
    w = load_workload("thesis-fig4.2")
    a = make_ranges(w, 250)
    assert make_ranges(w, 250) is a
    assert make_ranges(w, 500) is not a
    # Same pmf content in a different object shares the cache entry.
    clone = Workload("clone", w.pmf.copy(), decode_mean=5, decode_max=10)
    assert make_ranges(clone, 250) is a
    assert not a.prob.flags.writeable


@pytest.mark.parametrize("kwargs", [
    {"width": 0}, {"width": 2.5}, {"method": "bogus"}, {"width": 10, "count": 3},
    {"width": 10, "method": "quantile"}, {"count": -1},
])
def test_bad_range_arguments(kwargs):
    with pytest.raises(PlannerError):
        make_ranges(load_workload("thesis-fig4.2"), **kwargs)
