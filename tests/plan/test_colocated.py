"""Colocated islands (issue 15): the aggregated step model as a third role, chosen by the
inner solver where it wins, and run by the simulator; and the simulated objective."""

from __future__ import annotations

import json

import numpy as np
import pytest

from perfmodel import SLO, get_model
from perfmodel.colocated import colocated_table
from perfmodel.hardware import get_gpu
from planner.inner.max_rate import MaxRateMILP
from planner.inner.problem import InnerProblem, IslandSpec

ONE_ISLAND = "name: one\nmin_island: 2\ngpus:\n  - {type: L40S, count: 2, price_per_hour: 0.44}\n"


def _problem(bp, bd, ba, p=(0.5, 0.5)):
    n = len(bp)
    return InnerProblem(tuple(IslandSpec("G", 1) for _ in range(n)), np.array(p),
                        np.array([0.0, 10.0]), np.array([10.0, 20.0]), np.array([5.0, 15.0]),
                        np.array(bp, float), np.array(bd, float), both_rps=np.array(ba, float))


def test_one_island_can_only_serve_colocated():
    # a single island cannot be both a prefill and a decode island; colocated it serves
    prob = _problem([[10.0, 10.0]], [[10.0, 10.0]], [[4.0, 4.0]])
    res = MaxRateMILP().solve(prob)
    assert [a.role for a in res.islands] == ["both"]
    assert res.R_sustained == pytest.approx(4.0, rel=1e-4)


def test_the_solver_mixes_roles_where_each_wins():
    # island 0 is a poor colocated server but a good prefill; island 1 the reverse for
    # decode; island 2 colocated only.  T = 10 prefill + 8 colocated ... checked exactly:
    prob = _problem([[10.0, 10.0], [0.0, 0.0], [0.0, 0.0]],
                    [[0.0, 0.0], [10.0, 10.0], [0.0, 0.0]],
                    [[1.0, 1.0], [1.0, 1.0], [6.0, 6.0]])
    res = MaxRateMILP().solve(prob)
    assert [a.role for a in res.islands] == ["prefill", "decode", "both"]
    assert res.R_sustained == pytest.approx(16.0, rel=1e-4)
    # and the monolithic back-end agrees with the default path
    assert MaxRateMILP(solver="highs").solve(prob).R_sustained == pytest.approx(16.0,
                                                                                 rel=1e-4)


def test_colocated_table_meets_the_ceilings():
    from planner.workload import load_workload

    w = load_workload("azure-conv-2023")
    from planner.context.evaluate import PlanningContext
    from planner.workload import make_ranges

    ctx = PlanningContext(get_model("llama-3.1-8b"), w, make_ranges(w, count=8),
                          {"L40S": get_gpu("L40S")}, SLO(4000, 50), colocated=True)
    t = colocated_table(get_gpu("L40S"), 2, ctx.model, ctx.shape, ctx.table_slo, ctx.calib)
    ok = t.rps > 0
    assert ok[1:2000].all()
    assert np.all(t.latency_ms[ok] <= 50.0 + 1e-6)  # TPOT
    assert np.all(t.ttft_ms[ok] <= 2000.0 + 1e-6)  # half the TTFT ceiling per pass
    # the tighter the TPOT, the lower the rate
    tight = colocated_table(get_gpu("L40S"), 2, ctx.model, ctx.shape, SLO(2000, 25),
                            ctx.calib)
    both = ok & (tight.rps > 0)
    assert np.all(tight.rps[both] <= t.rps[both] * (1 + 1e-6))


@pytest.mark.slow
def test_colocated_plan_end_to_end(run_cli, tmp_path):
    inv = tmp_path / "one.yaml"
    inv.write_text(ONE_ISLAND)
    out = tmp_path / "run"
    rc, _, err = run_cli("plan", "--inventory", str(inv), "--model", "llama-3.1-8b",
                         "--ttft", "4000", "--out", str(out), "-q")
    assert rc == 0, err
    plan = json.loads((out / "plan.json").read_text())
    (isl,) = plan["islands"]
    assert isl["role"] == "both" and isl["ttft_ms"] > 0 and isl["tpot_ms"] > 0
    loop = plan["summary"]["closed_loop"]
    assert min(loop["slo_attainment_by_seed"]) >= 0.99 and loop["sustained_fraction"] >= 0.95
    # chunked prefill with the plan's budget (operating.colocated_token_budget)
    assert isl["token_budget"] > 0
    # the island's own saturation is close to the perf model's: the simulator runs the
    # chunked prefill the perf model's colocated pass assumes
    assert 0.85 <= loop["saturation_requests_per_s"] / loop["analytic_requests_per_s"] <= 1.1
    assert "colocated" in (out / "report.md").read_text().lower() or isl["role"] == "both"


def test_colocated_is_off_for_moe_by_default_and_can_be_forced():
    from planner.fleet.inventory import load_inventory
    from planner.plan import PlanRequest

    inv = load_inventory("inventories/gpus.yaml")
    assert not PlanRequest(inv).offers_colocated  # DeepSeek-V3 is MoE
    assert PlanRequest(inv, colocated="on").offers_colocated
    assert PlanRequest(inv, model="llama-3.1-70b").offers_colocated
    assert not PlanRequest(inv, model="llama-3.1-70b", thesis=True).offers_colocated


@pytest.mark.slow
def test_simulated_objective_searches_on_simulated_goodput(tmp_path):
    from planner.fleet.inventory import load_inventory
    from planner.plan import PlanRequest, make_plan

    p = tmp_path / "inv.yaml"
    p.write_text("name: t\ngpus:\n  - {type: H200, count: 16, price_per_hour: 4.0, "
                 "min_island: 8}\n  - {type: H20, count: 32, price_per_hour: 1.0, "
                 "min_island: 8}\n")
    req = PlanRequest(load_inventory(p), budget=80.0, ranges=8, search="divider",
                      objective="simulated", compare_exact=False, compare_homogeneous=False,
                      search_options={"iterations": 2, "batch_size": 4})
    plan = make_plan(req)
    hist = plan.search.history
    assert plan.value > 0 and hist
    analytic = PlanRequest(load_inventory(p), budget=80.0, ranges=8, search="divider",
                           compare_exact=False, compare_homogeneous=False,
                           search_options={"iterations": 2, "batch_size": 4})
    ref = make_plan(analytic)
    # the simulated objective never reports more than the analytic capacity (+5 %)
    by_layout = {h.layout: h.value for h in ref.search.history}
    for h in hist:
        if h.feasible and h.layout in by_layout:
            assert h.value <= by_layout[h.layout] * 1.05 + 1e-9
    assert plan.to_dict()["request"]["objective"] == "simulated"
