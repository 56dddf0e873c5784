"""Error bands on plans (issue 29, item 4): per-island classes, the headline's band,
and planning at the pessimistic bound."""

from __future__ import annotations

import json

import numpy as np
import pytest

from perfmodel.aggregated import mixed_pass
from perfmodel.calibration import Calibration
from perfmodel.decode import step_model
from perfmodel.error_band import band, deployed_band, union
from perfmodel.hardware import get_gpu
from perfmodel.models import get_model
from perfmodel.prefill import prefill_pass_time
from planner.capacity_band import band_text, island_band, plan_band


def col(x):
    return np.array([[float(x)]])


def _plan(islands, rate=100.0, plan_at="point", engine="trtllm"):
    return {"request": {"engine": engine, "plan_at": plan_at},
            "summary": {"requests_per_s": rate}, "islands": islands}


def test_headline_band_is_bounded_by_the_island_that_falls_shortest():
    islands = [{"gpu": "H200", "role": "prefill", "requests_per_s": 60.0},
               {"gpu": "H200", "role": "prefill", "requests_per_s": 40.0},
               {"gpu": "H20", "role": "decode", "requests_per_s": 100.0},
               {"gpu": "L40S", "role": "idle", "requests_per_s": 0.0}]
    out = plan_band(_plan(islands))
    assert out is not None
    kinds = [(i["gpu"], i["role"]) for i in out["islands"]]
    assert kinds == [("H200", "prefill"), ("H20", "decode")]  # one per kind, idle left out
    pre, dec = island_band("H200", "trtllm", "prefill"), island_band("H20", "trtllm", "decode")
    assert out["p10"] == pytest.approx(100.0 * min(pre["p10_factor"], dec["p10_factor"]))
    assert out["p90"] == pytest.approx(100.0 * min(pre["p90_factor"], dec["p90_factor"]))
    assert out["p10"] <= out["p90"]
    b = deployed_band("H20", "trtllm", "decode")
    assert dec["p10_factor"] == pytest.approx(1.0 / (1.0 + b.hi_error))
    assert band_text({"summary": {"capacity_band": out}}).startswith("p10–p90 ")
    assert plan_band(_plan(islands, rate=0.0)) is None


@pytest.mark.parametrize("gpu,engine", [("H200", "trtllm"), ("B200", "sglang"),
                                        ("MI300X", "vllm")])
def test_split_phase_islands_carry_the_disaggregated_systems_evidence(gpu, engine):
    e2e = band(gpu, engine, "disaggregated")
    for phase in ("prefill", "decode"):
        own, deployed = band(gpu, engine, phase), deployed_band(gpu, engine, phase)
        # the union: it holds both classes' bands, and no more
        assert deployed.lo_error == min(own.lo_error, e2e.lo_error)
        assert deployed.hi_error == max(own.hi_error, e2e.hi_error)
        assert own.cls in deployed.cls and e2e.cls in deployed.cls
    assert union(e2e, e2e) == e2e  # one class is not counted twice
    # an aggregated island's band is its own class's, unchanged
    assert deployed_band(gpu, engine, "aggregated") == band(gpu, engine, "aggregated")


def test_a_plan_made_at_p10_has_its_headline_as_the_lower_bound():
    islands = [{"gpu": "H200", "role": "both", "requests_per_s": 10.0}]
    point, low = plan_band(_plan(islands)), plan_band(_plan(islands, plan_at="p10"))
    assert low["p10"] == pytest.approx(100.0)
    assert low["p90"] / low["p10"] == pytest.approx(point["p90"] / point["p10"])


@pytest.mark.parametrize("gpu", ["H100-SXM", "MI300X"])
def test_planning_at_p10_derates_every_phase_by_its_class(gpu):
    g, m = get_gpu(gpu), get_model("llama-3.1-70b")
    engine = "vllm"
    point, low = Calibration(engine=engine), Calibration(engine=engine, plan_at="p10")
    for phase in ("prefill", "decode", "aggregated"):
        want = max(1.0, 1.0 + deployed_band(gpu, engine, phase).hi_error)
        assert low.time_factor(g, phase) == pytest.approx(want)
        assert point.time_factor(g, phase) == 1.0
    args = (g, m, col(1000.0), col(8), col(1), col(1), 0.0)
    assert float(np.ravel(prefill_pass_time(*args, low))[0]) == pytest.approx(
        low.time_factor(g, "prefill") * float(np.ravel(prefill_pass_time(*args, point))[0]))
    sm = [step_model(g, m, col(64), col(8), col(1), col(1), c) for c in (point, low)]
    assert float(np.ravel(sm[1].step_time(2000.0))[0]) == pytest.approx(
        low.time_factor(g, "decode") * float(np.ravel(sm[0].step_time(2000.0))[0]))
    t = [sum(v for k, v in mixed_pass(g, m, 32.0, 1000.0, 200.0, 8.0, 1.0, 1.0, 0.0,
                                      c).items() if not k.startswith("_"))
         for c in (point, low)]
    assert float(np.ravel(t[1])[0]) == pytest.approx(
        low.time_factor(g, "aggregated") * float(np.ravel(t[0])[0]))


def test_plan_at_p10_through_the_cli(run_cli, small_inventory, tmp_path):
    rates = {}
    for at in ("point", "p10"):
        run = tmp_path / at
        rc, _, err = run_cli("plan", "--inventory", str(small_inventory), "--plan-at", at,
                             "--no-sim-check", "--ranges", "8", "--out", str(run), "-q")
        assert rc == 0, err
        plan = json.loads((run / "plan.json").read_text())
        assert plan["request"]["plan_at"] == at
        b = plan["summary"]["capacity_band"]
        assert b["p10"] <= plan["summary"]["requests_per_s"] * (1 + 1e-9) <= b["p90"]
        rates[at] = plan["summary"]["requests_per_s"]
    assert 0 < rates["p10"] <= rates["point"]
    rc, _, err = run_cli("plan", "--inventory", str(small_inventory), "--plan-at", "p5",
                         "--out", str(tmp_path / "bad"), "-q")
    assert rc == 2 and "--plan-at" in err and len(err.strip().splitlines()) == 1


def test_what_if_outcomes_carry_the_band_through_cells():
    from planner.whatif.cells import outcome_cell, outcome_from_cell
    from planner.whatif.scenarios import Scenario
    from planner.whatif.solve import CLOSED, outcome_from_plan

    sc = Scenario("base", "base", "mix", "conv", 100.0, ())
    islands = [{"gpu": "H200", "role": "both", "requests_per_s": 50.0, "size": 8}]
    plan = _plan(islands, rate=50.0)
    plan["summary"].update(cost_per_hour=32.0, capacity_band=plan_band(plan),
                           analytic_requests_per_s=55.0)
    out = outcome_from_plan(sc, plan, CLOSED, 1.0, 200.0)
    b = plan["summary"]["capacity_band"]
    assert out.requests_per_s_p10 == pytest.approx(b["p10"])
    assert out.requests_per_s_p90 == pytest.approx(b["p90"])
    back = outcome_from_cell(sc, json.loads(json.dumps(outcome_cell(out))), "cell")
    assert (back.band_p10_factor, back.band_p90_factor) == (out.band_p10_factor,
                                                            out.band_p90_factor)
