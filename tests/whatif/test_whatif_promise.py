"""What-if speaks `planner plan`'s promise (issue 28, item 8): each scenario is the
request `planner plan` builds for it, the base scenario's capacity is `planner plan`'s
headline, and a sampled study's corrected capacities state their measured error."""

from __future__ import annotations

import json
import math
from unittest import mock

import pytest
import yaml
from test_whatif_fixtures import SMALL_INVENTORY, FakeRunner, fake_ratio, write_spec

from planner.core.errors import PlannerError
from planner.whatif import expand, load_spec, run_whatif
from planner.whatif.correction import choose_sample, interpolate, measure, median_ratio
from planner.whatif.report import render
from planner.whatif.request import plan_request, scenario_inventory, scenario_workload
from planner.whatif.scenarios import base_scenario
from planner.whatif.solve import CLOSED, CLOSED_LOOP, CORRECTED, PLANNED
from planner.whatif.tables import notes


def promise_spec(folder, studies=None, **top):
    """A spec on the small inventory with `planner plan`'s defaults (no solver block,
    the default SLO); the workload study of the base workload is the base's problem, so
    the study solves one problem."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "small.yaml").write_text(yaml.safe_dump(SMALL_INVENTORY))
    data = {"inventory": "small.yaml", "budget": 48, **top,
            "studies": studies or {"workloads": ["azure-conv-2023"]}}
    path = folder / "spec.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.fixture
def plan_cli_request(run_cli, monkeypatch, tmp_path):
    """The PlanRequest `planner plan ARGV` builds (captured where it is checked, before
    anything is planned or written)."""
    import planner.plan as plan_module

    def build(*argv):
        seen = []

        def capture(req, source="inventory"):
            seen.append(req)
            raise PlannerError("captured")

        monkeypatch.setattr(plan_module, "check_budget", capture)
        rc, _, err = run_cli("plan", *argv, "--out", str(tmp_path / "run"), "-q")
        assert rc == 2 and "captured" in err, err
        monkeypatch.undo()
        return seen[0]

    return build


@pytest.mark.parametrize("top,argv", [
    ({}, []),
    ({"seed": 7, "ranges": 12, "slo": {"ttft_ms": 3000, "tpot_ms": 80},
      "island_granularity": "gpu", "solver": {"time_limit": 60}, "engine": "vllm"},
     ["--seed", "7", "--ranges", "12", "--ttft", "3000", "--tpot", "80",
      "--island-granularity", "gpu", "--exact-time-limit", "60", "--engine", "vllm"]),
    ({"slo": "none", "model": "qwen3-32b", "workload": "azure-code-2023"},
     ["--no-slo", "--model", "qwen3-32b", "--workload", "azure-code-2023"]),
])
def test_base_request_is_the_one_planner_plan_builds(tmp_path, plan_cli_request, top, argv):
    spec = load_spec(promise_spec(tmp_path / "w", **top))
    req = plan_cli_request("--inventory", str(tmp_path / "w" / "small.yaml"),
                           "--budget", "48", *argv)
    assert plan_request(spec, base_scenario(spec)) == req


def test_scenario_requests_change_only_what_the_scenario_changes(tmp_path):
    spec = load_spec(promise_spec(tmp_path, {
        "prices": {"H200": ["0.5x"]}, "remove": ["H20"], "budget_sweep": [40],
        "workloads": [{"mix": ["azure-conv-2023", "azure-code-2023"], "share": 0.25}],
        "add": [{"type": "H800", "count": 8, "price_per_hour": 2.0}]}))
    base = plan_request(spec, base_scenario(spec))
    for sc in expand(spec)[1:]:
        req = plan_request(spec, sc)
        assert req.budget == sc.budget and req.seed == base.seed
        assert (req.model, req.ranges, req.slo, req.engine) == \
            (base.model, base.ranges, base.slo, base.engine)
        entries = {e.name: e for e in req.inventory.entries}
        supply = {t.name: t for t in sc.supply if t.available > 0}
        assert set(entries) == set(supply)
        for name, e in entries.items():
            # the price `planner plan` charges is the GPU's (planner.plan.Plan.cost_per_hour)
            assert e.count == supply[name].available
            assert e.price_per_hour == e.gpu.price_per_hour == supply[name].price_per_hour
    price = next(sc for sc in expand(spec) if sc.study == "price")
    assert scenario_inventory(spec, price).entry("H200").gpu.price_per_hour == 2.0
    mix = next(sc for sc in expand(spec) if sc.study == "workload")
    from planner.whatif.workloads import load_mix
    from planner.workload import load_workload

    path = scenario_workload(mix)
    assert path.endswith(".yaml") and scenario_workload(mix) == path  # one file per mix
    import numpy as np

    assert np.array_equal(load_workload(path).pmf, load_mix(mix.components, "m").pmf)


def test_base_capacity_is_planner_plans_headline(tmp_path, plan_cli_request):
    """The base scenario of a what-if study and `planner plan` on the same inventory,
    model, budget and seed (make_plan, then close_plan, as planner/cli/plan.py) promise
    the same capacity."""
    from planner.closed_plan import close_plan
    from planner.plan import make_plan

    path = promise_spec(tmp_path / "w", closed_loop="every")
    result = run_whatif(load_spec(path))
    req = plan_cli_request("--inventory", str(tmp_path / "w" / "small.yaml"),
                           "--budget", "48")
    d = close_plan(make_plan(req), seed=req.seed)
    base, s = result.base, d["summary"]
    assert base.capacity == CLOSED_LOOP and result.closed_loops == 1
    assert base.requests_per_s == s["requests_per_s"] > 0
    assert base.analytic_requests_per_s == s["analytic_requests_per_s"]
    assert base.cost_per_hour == s["cost_per_hour"]
    assert base.requests_per_s < base.analytic_requests_per_s  # not the analytic figure
    # the workload study's scenario is the same problem: solved once, the same figure
    same = result.study("workload")[0]
    assert same.cached and same.requests_per_s == base.requests_per_s
    table = render(result)["whatif.md"].decode()
    assert f"{base.requests_per_s:,.2f}" in table and "analytic" in table


# ------------------------------------------------------------------ sampled studies
SAMPLED = {"budget_sweep": [16, 24, 32, 40, 48, 56, 64, 72, 80, 96], "equal_cost": True,
           "workloads": ["azure-code-2023"], "marginal": 16}


def _fake(tmp_path, **top):
    spec = load_spec(write_spec(tmp_path, dict(SAMPLED), budget=48, **top))
    FakeRunner.calls = {}
    try:
        with mock.patch("planner.whatif.run.WhatIfRunner", FakeRunner):
            return run_whatif(spec), dict(FakeRunner.calls)
    finally:
        FakeRunner.calls = None


def test_every_mode_closes_each_distinct_problem_once(tmp_path):
    result, calls = _fake(tmp_path, closed_loop="every")
    assert result.mode == "every"
    assert set(calls.values()) == {1}  # identical problems solved once
    assert {kind for _, kind in calls} == {CLOSED}
    distinct = {o.scenario.key() for o in result.outcomes}
    assert len(calls) == len(distinct) == result.problems == result.closed_loops
    for o in result.outcomes:
        if o.requests_per_s > 0:
            assert o.capacity == CLOSED_LOOP
            assert o.requests_per_s == pytest.approx(
                o.analytic_requests_per_s * fake_ratio(o.analytic_requests_per_s))


def test_sample_mode_closes_a_sample_and_corrects_the_rest(tmp_path):
    result, calls = _fake(tmp_path, closed_loop={"mode": "sample", "sample": 3})
    assert result.mode == "sample"
    closed = {key for key, kind in calls if kind == CLOSED}
    planned = {key for key, kind in calls if kind == PLANNED}
    assert set(calls.values()) == {1}
    assert closed <= planned  # every problem planned, a sample closed
    base = result.base
    assert base.capacity == CLOSED_LOOP and base.scenario.key() in closed
    # the other workload is its own sample (its only problem is closed)
    assert all(o.capacity == CLOSED_LOOP for o in result.study("workload"))
    conv = {o.scenario.key() for o in result.outcomes
            if o.scenario.components == base.scenario.components and o.requests_per_s > 0
            and o.scenario.study != "marginal"}
    assert len(closed & conv) == 3 < len(conv)
    corrected = [o for o in result.outcomes if o.capacity == CORRECTED]
    assert corrected and result.correction is not None
    w = result.correction.for_outcome(base)
    assert len(w.points) == 3 and w.corrected == len(corrected)
    for o in corrected:
        assert o.scenario.key() not in closed
        assert o.requests_per_s == pytest.approx(
            o.analytic_requests_per_s * w.factor(o.analytic_requests_per_s))
        assert o.correction_error == w.max_error
    # the stated error is the leave-one-out error on the sample
    errors = []
    for p in w.points:
        others = [(q.analytic, q.ratio) for q in w.points if q is not p]
        pred = p.analytic * median_ratio(others, p.analytic)
        errors.append(abs(pred - p.closed) / p.closed)
    assert w.max_error == pytest.approx(max(errors)) and w.max_error > 0
    assert result.correction.max_error == w.max_error
    said = " ".join(notes(result))
    assert f"{w.max_error:.1%}" in said and "leave-one-out" in said
    files = render(result)
    data = json.loads(files["whatif.json"])
    assert data["method"]["closed_loop"] == "sample"
    assert data["method"]["correction"]["max_leave_one_out_error"] == pytest.approx(
        w.max_error)
    assert f"{w.max_error:.1%}" in files["whatif.md"].decode()
    assert f"{w.max_error:.1%}" in files["whatif.html"].decode()
    assert "corrected x" in files["whatif.md"].decode()
    csv_text = files["whatif.csv"].decode()
    assert ",corrected," in csv_text and ",closed loop," in csv_text


def test_auto_mode_samples_only_large_studies(tmp_path):
    small, _ = _fake(tmp_path / "a", closed_loop="auto")
    assert small.mode == "every"  # the study has fewer than 24 distinct problems
    with mock.patch("planner.whatif.values.AUTO_EVERY_LIMIT", 5):
        large, _ = _fake(tmp_path / "b", closed_loop="auto")
    assert large.mode == "sample"


def test_sample_spreads_over_the_analytic_range():
    class Planned:
        def __init__(self, k, value, comps=(("w", 1.0),)):
            self.analytic_requests_per_s = value
            self.scenario = mock.Mock(components=comps)
            self.scenario.key.return_value = (k,)

    # the base, ten more, a no plan, another workload's only problem, a repeat
    outs = [Planned(0, 50.0), *(Planned(k, float(k)) for k in range(1, 11)), Planned(11, 0.0),
            Planned(12, 7.0, (("x", 1.0),)), Planned(1, 1.0)]
    picks = choose_sample(outs, 4)
    assert 0 in picks and 12 in picks  # the base, the other workload's only problem
    conv = sorted(outs[i].analytic_requests_per_s for i in picks if i not in (0, 12))
    assert conv[0] == 1.0 and conv[-1] == 10.0 and len(conv) == 3  # both ends
    assert 11 not in picks and 13 not in picks
    assert choose_sample(outs, 20) == [k for k in range(11)] + [12]


def test_leave_one_out_of_a_constant_ratio_is_exact():
    w = measure("w", (), [("a", 10.0, 8.0), ("b", 20.0, 16.0), ("c", 40.0, 32.0)])
    assert w.max_error == pytest.approx(0.0, abs=1e-12)
    assert w.factor(30.0) == pytest.approx(0.8)
    one = measure("w", (), [("a", 10.0, 8.0)])
    assert math.isnan(one.max_error)


def test_the_median_ignores_an_odd_sampled_scenario():
    # ratios 0.9, 0.9, 0.4, 0.92: the median keeps the usual ratio; leave-one-out says
    # the odd one would have been off by more than 100 %
    w = measure("w", (), [("a", 100.0, 90.0), ("b", 200.0, 180.0), ("odd", 30.0, 12.0),
                          ("c", 400.0, 368.0)])
    assert w.factor(250.0) == pytest.approx(0.9)
    assert w.max_error == pytest.approx(0.9 / 0.4 - 1)
    assert w.median_error < 0.03
    assert interpolate([(10.0, 0.5), (1000.0, 0.9)], 100.0) == pytest.approx(0.7)


@pytest.mark.parametrize("top,needle", [
    ({"closed_loop": "sometimes"}, "field 'closed_loop'"),
    ({"closed_loop": {"mode": "never"}}, "field 'closed_loop.mode'"),
    ({"closed_loop": {"mode": "sample", "sample": 1}}, "field 'closed_loop.sample'"),
    ({"closed_loop": {"sample": 3, "samples": 2}}, "field 'closed_loop'"),
    ({"slo": "fast"}, "field 'slo'"),
    ({"seed": -1}, "field 'seed'"),
    ({"island_granularity": "rack"}, "field 'island_granularity'"),
])
def test_bad_closed_loop_fields_are_one_line(tmp_path, run_cli, top, needle):
    spec = write_spec(tmp_path, {"budget_sweep": [32]}, **top)
    rc, _, err = run_cli("whatif", str(spec), "--out", str(tmp_path / "o"), "-q")
    assert rc == 2 and len(err.strip().splitlines()) == 1 and needle in err, err
    assert not (tmp_path / "o").exists()


def test_flags_set_the_promise_fields(tmp_path):
    from planner.whatif import Flags

    spec = load_spec(write_spec(tmp_path, {"budget_sweep": [32]}),
                     Flags(closed_loop="sample", sample=4, seed=3, no_slo=False,
                           island_granularity="gpu", ttft_ms=1500.0))
    assert (spec.closed_loop.mode, spec.closed_loop.sample) == ("sample", 4)
    assert spec.seed == 3 and spec.island_granularity == "gpu"
    assert spec.slo.ttft_ms == 1500.0 and spec.slo.tpot_ms == 50.0  # plan's default TPOT
    with pytest.raises(PlannerError, match="--no-slo"):
        load_spec(write_spec(tmp_path, {"budget_sweep": [32]}),
                  Flags(no_slo=True, ttft_ms=1500.0))
