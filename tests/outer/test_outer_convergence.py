"""Convergence statistics/plots across trials, and the inventory -> search space link."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from planner.outer import HistoryPoint, SearchResult, SearchSpace
from planner.outer.convergence import plot_convergence, summarise

ROOT = Path(__file__).resolve().parents[2]


def _result(bests, times=None):
    times = times or [0.1 * (i + 1) for i in range(len(bests))]
    hist = [HistoryPoint(index=i, wall_time=t, layout=(("A", 2),), value=b, cost=1.0,
                         feasible=True, best=b) for i, (b, t) in enumerate(zip(bests, times,
                                                                              strict=True))]
    return SearchResult(name="t", best_layout=None, best_score=None, history=hist)


def test_summary_statistics_and_padding():
    s = summarise([_result([1.0, 3.0, 3.0, 5.0]), _result([2.0, 2.0]), _result([0.0, 4.0, 6.0])])
    assert s.trials == 3 and list(s.index) == [1, 2, 3, 4]
    # Column 4: 5, 2 (padded), 6 (padded).
    assert s.low[-1] == 2.0 and s.high[-1] == 6.0
    assert math.isclose(s.mean[-1], 13 / 3) and math.isclose(s.std[-1], np.std([5, 2, 6]))
    assert list(s.mean[:2]) == [1.0, 3.0]


def test_target_mode_infinities_are_left_out():
    inf = math.inf
    s = summarise([_result([inf, 500.0, 400.0]), _result([inf, inf, 450.0])])
    assert math.isnan(s.mean[0]) and s.mean[1] == 500.0 and s.mean[2] == 425.0


def test_plot_writes_png(tmp_path):
    path = tmp_path / "sub" / "conv.png"
    groups = {"a": [_result([1.0, 2.0, 4.0])], "b": [_result([0.5, 3.0]), _result([1.0])]}
    plot_convergence(groups, path, title="t")
    plot_convergence(groups, tmp_path / "time.png", x="time")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "time.png").stat().st_size > 1000
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".")]  # no temp left


def test_space_from_shipped_inventory():
    from planner.fleet.inventory import load_inventory

    inv = load_inventory(ROOT / "inventories" / "table5.1-a.yaml")
    space = SearchSpace.from_inventory(inv, budget=512.0)
    assert [(t.name, t.available, t.price_per_hour, t.min_island) for t in space.types] == [
        ("H200", 64, 4.0, 2), ("H800", 64, 2.0, 2), ("H20", 128, 1.0, 2)]
    assert space.full_cost == 512.0 and not space.procures
    assert SearchSpace.from_inventory(inv, budget=300.0).procures
