"""planner.sim.closed_loop: the plan's headline is what holds in simulation at the SLO.

The loop's logic is tested on a scripted "simulator" (what each check returns is set
by the test), then end to end on a small real plan."""

from __future__ import annotations

import math

import pytest

from planner.sim import closed_loop as cl
from planner.sim.closed_loop import Check, close_loop, measured_factors, with_loop


def _plan(rate: float, islands=None) -> dict:
    islands = islands or [
        {"gpu": "A", "size": 8, "role": "prefill", "requests_per_s": rate},
        {"gpu": "B", "size": 8, "role": "decode", "requests_per_s": rate}]
    return {"summary": {"requests_per_s": rate, "cost_per_hour": 10.0,
                        "input_tokens_per_s": rate * 100, "output_tokens_per_s": rate * 10,
                        "tokens_per_s": rate * 110, "usd_per_million_tokens": 1.0,
                        "usd_per_million_output_tokens": 2.0},
            "islands": islands}


def _check(offered, arrived, completed, attain=1.0, caps=(math.nan, math.nan)):
    return Check(offered, arrived, completed, attain, 100.0, 200.0, 20.0, 30.0, caps)


def test_a_confirmed_capacity_is_the_headline(monkeypatch):
    calls = []

    def fake(plan, rate, seed, **_):
        calls.append(rate)
        return _check(rate, rate, rate * 0.99)

    monkeypatch.setattr(cl, "simulate_at", fake)
    plan, loop = close_loop(_plan(100.0), lambda f: pytest.fail("no re-solve expected"))
    assert loop.headline_rps == 100.0 and loop.bound == "analytic" and loop.rounds == 0
    assert calls == [100.0, 90.0]  # the check, then the SLO check at 90 %


def test_a_saturated_island_is_corrected_and_the_layout_resolved(monkeypatch):
    # island A (prefill) finishes 80 % of its planned rate while its inflow outruns it
    resolved = []

    def fake(plan, rate, seed, **_):
        if plan["summary"]["requests_per_s"] == 100.0:
            return _check(rate, rate, 80.0, caps=(80.0, math.nan))
        return _check(rate, rate, rate)

    def resolve(factors):
        resolved.append(dict(factors))
        return _plan(80.0)

    monkeypatch.setattr(cl, "simulate_at", fake)
    plan, loop = close_loop(_plan(100.0), resolve)
    assert resolved == [{"A:8:prefill": pytest.approx(0.8)}]
    assert loop.headline_rps == 80.0 and loop.bound == "simulated" and loop.rounds == 1
    assert loop.factors == {"A:8:prefill": pytest.approx(0.8)}


def test_an_slo_miss_lowers_the_headline_until_it_holds(monkeypatch):
    # attainment is met only below 60 requests/s offered
    def fake(plan, rate, seed, **_):
        return _check(rate, rate, rate, attain=1.0 if rate < 60.0 else 0.9)

    monkeypatch.setattr(cl, "simulate_at", fake)
    _, loop = close_loop(_plan(100.0), lambda f: pytest.fail("no re-solve"))
    assert loop.bound == "slo"
    assert 0.9 * loop.headline_rps < 60.0
    assert 0.9 * loop.headline_rps > 60.0 * (1 - 1 / 64)  # bisection to 1/128
    assert loop.attainment_at_90 >= cl.ATTAIN_TARGET


def test_an_unfixable_shortfall_promises_the_simulated_rate(monkeypatch):
    def fake(plan, rate, seed, **_):
        return _check(rate, rate, min(rate, 70.0))  # no island reports saturation

    monkeypatch.setattr(cl, "simulate_at", fake)
    _, loop = close_loop(_plan(100.0), lambda f: pytest.fail("nothing to correct"))
    assert loop.headline_rps == 70.0 and "not a capacity" in loop.note


def test_measured_factors_average_islands_of_a_kind():
    plan = _plan(100.0, [
        {"gpu": "A", "size": 8, "role": "prefill", "requests_per_s": 50.0},
        {"gpu": "A", "size": 8, "role": "prefill", "requests_per_s": 50.0},
        {"gpu": "B", "size": 8, "role": "idle"},
        {"gpu": "B", "size": 8, "role": "decode", "requests_per_s": 100.0}])
    f = measured_factors(plan, _check(100, 100, 80, caps=(40.0, 45.0, math.nan)))
    assert f == {"A:8:prefill": pytest.approx(0.85)}


def test_with_loop_states_one_capacity_everywhere():
    loop = cl.LoopResult(analytic_rps=100.0, headline_rps=80.0, simulated_rps=79.0,
                         sustained=0.99, attainment_at_90=0.995, rounds=0, bound="slo",
                         note="n")
    out = with_loop(_plan(100.0), loop)
    s = out["summary"]
    assert s["requests_per_s"] == 80.0 and s["analytic_requests_per_s"] == 100.0
    assert s["tokens_per_s"] == pytest.approx(80.0 * 110)
    assert s["usd_per_million_tokens"] == pytest.approx(1.0 / 0.8)
    assert [i["requests_per_s"] for i in out["islands"]] == [80.0, 80.0]
    assert s["closed_loop"]["bound"] == "slo"


def test_closed_loop_on_a_real_plan(run_cli, tmp_path):
    import json

    inv = tmp_path / "inv.yaml"
    inv.write_text("name: t\ngpus:\n  - {type: H200, count: 16, price_per_hour: 4.0, "
                   "min_island: 8}\n  - {type: H20, count: 32, price_per_hour: 1.0, "
                   "min_island: 8}\n")
    out = tmp_path / "run"
    rc, _, err = run_cli("plan", "--inventory", str(inv), "--budget", "80", "--search",
                         "exact", "--ranges", "8", "--out", str(out), "-q", "--no-exact",
                         "--no-homogeneous")
    assert rc == 0, err
    plan = json.loads((out / "plan.json").read_text())
    s = plan["summary"]
    loop = s["closed_loop"]
    assert s["requests_per_s"] == loop["headline_requests_per_s"]
    assert loop["sustained_fraction"] >= 0.95
    assert loop["slo_attainment_at_90pct"] >= 0.99
    assert s["requests_per_s"] <= loop["analytic_requests_per_s"] * 1.05
    # the report states the check beside the headline, and no second capacity
    md = (out / "report.md").read_text()
    assert "**How sure:** in a simulation of this plan" in md \
        and "re-evaluated per input length" not in md
    # the same plan simulated again (another seed) keeps its promise
    from planner.sim.closed_loop import simulate_at

    again = simulate_at(plan, s["requests_per_s"], seed=7)
    assert again.sustained >= 0.93
