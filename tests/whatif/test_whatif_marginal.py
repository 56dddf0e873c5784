"""The marginal answer respects availability: under the inventory's counts no option
offers more GPUs of a type than the inventory lists, unless the spec says
``marginal_beyond_inventory: true``; and per-scenario progress counts every solve."""

from __future__ import annotations

from unittest import mock

import pytest
from test_whatif_fixtures import SMALL_INVENTORY, FakeRunner, fake_result, write_spec

from planner.whatif import load_spec, run_whatif
from planner.whatif.marginal import marginal_count, marginal_scenarios
from planner.whatif.scenarios import base_scenario
from planner.whatif.tables import rows

COUNTS = {g["type"]: g["count"] for g in SMALL_INVENTORY["gpus"]}  # 16 H200, 32 H20


def _spec(tmp_path, **studies):
    return load_spec(write_spec(tmp_path, {"marginal": 16, **studies}, budget=48))


def test_inventory_availability_offers_no_gpu_beyond_the_inventory(tmp_path):
    spec = _spec(tmp_path)
    todo, excluded = marginal_scenarios(spec, base_scenario(spec), {})
    assert excluded == ["4 more H200", "16 more H20"]
    # what is left: the budget binds (48 < 96 $/h), so spending more on the idle GPUs
    assert [gpu for _, gpu, _, _ in todo] == [None]
    for _, _, added, sc in todo:
        assert added == 0
        assert all(t.available <= COUNTS[t.name] for t in sc.supply)


def test_beyond_inventory_only_when_the_spec_says_so(tmp_path):
    spec = _spec(tmp_path, marginal_beyond_inventory=True)
    assert spec.marginal_beyond_inventory and spec.to_dict()["studies"][
        "marginal_beyond_inventory"] is True
    todo, excluded = marginal_scenarios(spec, base_scenario(spec), {})
    assert excluded == []
    beyond = {gpu: (label, sc) for label, gpu, n, sc in todo if n}
    assert set(beyond) == {"H200", "H20"}
    for gpu, (label, sc) in beyond.items():
        assert f"beyond the inventory's {COUNTS[gpu]}" in label
        assert {t.name: t.available for t in sc.supply}[gpu] > COUNTS[gpu]


def test_nothing_to_buy_within_the_inventory_says_why(tmp_path):
    # the base budget pays for the whole inventory (96 $/h): no idle GPU, and every
    # purchase would exceed the counts -> no option at all, and a sentence saying so
    result = fake_result(tmp_path, {"marginal": 16}, budget=96)
    answer = result.marginal
    assert answer is not None and answer.options == [] and answer.best is None
    assert answer.excluded == ["4 more H200", "16 more H20"]
    assert "buys nothing" in answer.sentence
    assert "4 more H200, 16 more H20" in answer.sentence
    assert "marginal_beyond_inventory" in answer.sentence
    assert not [r for r in rows(result) if r["study"] == "marginal"]
    assert answer.to_dict()["excluded_beyond_inventory"] == answer.excluded


@pytest.mark.parametrize("top", [{}, {"availability": "unlimited"},
                                 {"budget": 96}])
def test_progress_counts_every_solve_with_its_label(tmp_path, top):
    studies = {"budget_sweep": [32, 64], "marginal": 16}
    spec = load_spec(write_spec(tmp_path, studies, **{"budget": 48, **top}))
    calls: list[tuple[int, int, str]] = []
    with mock.patch("planner.whatif.run.WhatIfRunner", FakeRunner):
        result = run_whatif(spec, progress=lambda k, n, label: calls.append((k, n, label)))
    n = len(result.outcomes)  # every scenario, marginal options and the reference
    assert [k for k, _, _ in calls] == list(range(1, n + 1))
    assert {total for _, total, _ in calls} == {n}
    assert marginal_count(spec) == n - (1 + 2 * 3)  # base + 2 budgets x 3 options
    assert calls[0][2] == f"base {spec.base_budget:g} $/h"
    assert calls[2][2] == "budget 32 $/h, H200 only"
