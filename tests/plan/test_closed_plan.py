"""planner.closed_plan: target mode verifies the target; alternatives are judged by the
same promise and the best plan found is the answer.

The logic runs on scripted loops (what each plan "holds" in simulation is set by the
test); the end-to-end behaviour is in tests/sim/test_closed_loop.py and the CLI tests."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest

from planner import closed_plan as cp
from planner.context.request import PlanRequest
from planner.core.errors import NoPlanError
from planner.fleet.inventory import inventory_from_dict

INV = inventory_from_dict({"name": "two", "gpus": [
    {"type": "H100-SXM", "count": 16, "price_per_hour": 4.0},
    {"type": "H200", "count": 8, "price_per_hour": 5.0}]}, "inv.yaml")


@dataclass
class FakePlan:
    """What close_plan reads of a solved plan: its request and cost (the rest is the
    scripted loop's business).  A plan made for more requests/s costs more."""

    request: PlanRequest

    @property
    def cost_per_hour(self) -> float:
        return float(self.request.target_rps or 0.0) / 10.0


def _dict(req: PlanRequest, rate: float, cost: float, gpu: str = "H100-SXM") -> dict:
    return {"request": {"target_rps": req.target_rps, "inventory": INV.to_dict()},
            "islands": [{"gpu": gpu, "size": 8, "role": "both"}],
            "summary": {"requests_per_s": rate, "cost_per_hour": cost,
                        "analytic_requests_per_s": rate * 1.1,
                        "closed_loop": {"headline_requests_per_s": rate, "checks": [
                            {"offered_rps": rate / 2, "attainment": 0.5,
                             "ttft_miss": 0.5, "tpot_miss": 0.0}]}}}


def test_target_mode_replans_from_the_shortfall_until_the_target_holds(monkeypatch):
    """The first plan holds 80 of a 100 target; the re-plan asks for 100/80 x 1.02 more,
    which holds; then plans between the two are tried for a cheaper one that holds
    (here: whatever is planned for at least 110)."""
    asked = []

    def fake_loop(plan, seed, router, say):
        t = plan.request.target_rps
        asked.append(t)
        return _dict(plan.request, 80.0 if t < 110.0 else 130.0, t / 10.0)

    monkeypatch.setattr(cp, "_loop", fake_loop)
    monkeypatch.setattr(cp, "make_plan", lambda req: FakePlan(req))
    monkeypatch.setattr(cp, "_target_check", lambda out, target, seed, router: (
        out["summary"]["requests_per_s"] >= target, 0.996))
    out = cp.close_one(FakePlan(PlanRequest(INV, target_rps=100.0)))
    first = 100.0 * 100.0 / 80.0 * 1.02
    mid = (100.0 * first) ** 0.5
    assert asked == [100.0, pytest.approx(first), pytest.approx(mid),
                     pytest.approx((100.0 * mid) ** 0.5)]
    loop = out["summary"]["closed_loop"]
    assert out["request"]["target_rps"] == 100.0  # the user's target, not the re-plan's
    assert [r["met"] for r in loop["target_rounds"]] == [False, True, True, False]
    assert loop["planned_for_rps"] == pytest.approx(mid)  # the cheapest that held
    assert out["summary"]["cost_per_hour"] == pytest.approx(mid / 10.0)
    assert loop["target_attainment"] == 0.996


def test_a_replan_that_costs_no_less_is_not_simulated(monkeypatch):
    simulated = []

    def fake_loop(plan, seed, router, say):
        simulated.append(plan.request.target_rps)
        return _dict(plan.request, 50.0 if len(simulated) == 1 else 200.0, 10.0)

    monkeypatch.setattr(cp, "_loop", fake_loop)
    monkeypatch.setattr(cp, "make_plan", lambda req: replace(FakePlan(req)))
    monkeypatch.setattr(FakePlan, "cost_per_hour", property(lambda self: 10.0))
    monkeypatch.setattr(cp, "_target_check", lambda out, target, seed, router: (
        out["summary"]["requests_per_s"] >= target, 0.999))
    cp.close_one(FakePlan(PlanRequest(INV, target_rps=100.0)))
    assert simulated == [100.0, 200.0]  # the refinements cost the same: not simulated


def test_a_target_no_plan_meets_is_an_error_never_a_short_plan(monkeypatch):
    monkeypatch.setattr(cp, "_loop", lambda plan, seed, router, say:
                        _dict(plan.request, 50.0, 10.0))
    monkeypatch.setattr(cp, "make_plan", lambda req: FakePlan(req))
    monkeypatch.setattr(cp, "_target_check", lambda *a: (False, 0.9))
    with pytest.raises(NoPlanError, match="no plan meets the target of 100 requests/s"):
        cp.close_one(FakePlan(PlanRequest(INV, target_rps=100.0)))


def test_a_target_the_slo_forbids_at_any_load_says_why(monkeypatch):
    """No load holds the SLO: the plan is made again for twice the rate each round (more
    islands absorb bursts), and when none holds the error says what misses."""
    asked = []

    def fake_loop(plan, seed, router, say):
        asked.append(plan.request.target_rps)
        return _dict(plan.request, 0.0, 10.0)

    monkeypatch.setattr(cp, "_loop", fake_loop)
    monkeypatch.setattr(cp, "make_plan", lambda req: FakePlan(req))
    with pytest.raises(NoPlanError, match="50 % of requests miss the TTFT"):
        cp.close_one(FakePlan(PlanRequest(INV, target_rps=5.0)))
    assert asked == [5.0 * cp.GROWTH ** k for k in range(cp.TARGET_ROUNDS + 1)]


def test_a_large_shortfall_raises_the_planned_rate_by_at_most_the_growth(monkeypatch):
    asked = []

    def fake_loop(plan, seed, router, say):
        asked.append(plan.request.target_rps)
        return _dict(plan.request, 1.0 if len(asked) == 1 else 200.0, 10.0)

    monkeypatch.setattr(cp, "_loop", fake_loop)
    monkeypatch.setattr(cp, "make_plan", lambda req: FakePlan(req))
    monkeypatch.setattr(cp, "_target_check", lambda out, target, seed, router: (
        out["summary"]["requests_per_s"] >= target, 0.999))
    cp.close_one(FakePlan(PlanRequest(INV, target_rps=100.0)))
    assert asked[:2] == [100.0, 100.0 * cp.GROWTH]  # not 100 x (100 / 1)


def test_alternatives_spend_the_budget_within_availability():
    req = PlanRequest(INV, budget=100.0)
    alts = {name: (r, capped, gpus)
            for name, r, capped, gpus in cp._single_type_requests(req)}
    # 100 $/h buys 25 H100 (16 available: capped) or 20 H200 (8 available: capped)
    assert alts["H100-SXM"][1:] == (True, 16) and alts["H200"][1:] == (True, 8)
    r = alts["H100-SXM"][0]
    assert [e.name for e in r.inventory.entries] == ["H100-SXM"]
    assert r.budget == 100.0 and not r.compare_homogeneous
    small = cp._single_type_requests(replace(req, budget=20.0))
    assert [(n, c, g) for n, _, c, g in small] == [("H100-SXM", False, 5), ("H200", False, 4)]


def test_an_alternative_that_beats_the_search_is_the_answer(monkeypatch):
    def fake_loop(plan, seed, router, say):
        types = [e.name for e in plan.request.inventory.entries]
        if types == ["H200"]:
            return _dict(plan.request, 60.0, 40.0, "H200")
        if types == ["H100-SXM"]:
            raise NoPlanError("no island of H100-SXM serves prompts of 9,000 tokens")
        return _dict(plan.request, 50.0, 100.0)

    monkeypatch.setattr(cp, "_loop", fake_loop)
    monkeypatch.setattr(cp, "make_plan", lambda req: FakePlan(req))
    out = cp.close_plan(FakePlan(PlanRequest(INV, budget=100.0)), background=False)
    s = out["summary"]
    assert s["requests_per_s"] == 60.0 and out["islands"][0]["gpu"] == "H200"
    assert s["answer_from"]["label"] == "8 x H200 only"
    assert "60.0 against 50.0 requests/s" in s["answer_from"]["why"]
    assert out["request"]["inventory"] == INV.to_dict()  # the user's whole inventory
    by = {a["label"]: a for a in s["alternatives"]}
    assert by["the search's plan"]["requests_per_s"] == 50.0
    h100 = by["16 x H100-SXM only"]
    assert h100["cost_per_hour"] == 0.0 and h100["status"] == "serves nothing"
    assert "9,000 tokens" in h100["why"]


def test_the_search_plan_stays_the_answer_when_no_alternative_beats_it(monkeypatch):
    def fake_loop(plan, seed, router, say):
        n = len(plan.request.inventory.entries)
        return _dict(plan.request, 90.0 if n == 2 else 30.0, 100.0 if n == 2 else 50.0)

    monkeypatch.setattr(cp, "_loop", fake_loop)
    monkeypatch.setattr(cp, "make_plan", lambda req: FakePlan(req))
    out = cp.close_plan(FakePlan(PlanRequest(INV, budget=100.0)), background=False)
    s = out["summary"]
    assert s["requests_per_s"] == 90.0 and "answer_from" not in s
    assert [a["requests_per_s"] for a in s["alternatives"]] == [30.0, 30.0]
    assert all(a["requests_per_s_per_dollar"] == pytest.approx(0.6)
               for a in s["alternatives"])


@pytest.mark.slow
def test_alternatives_in_a_second_process_are_the_serial_ones():
    """The background process plans the same alternatives as the serial path (same
    seeds, same loop), and the answer does not depend on where they ran."""
    from planner.plan import make_plan

    inv = inventory_from_dict({"name": "t", "gpus": [
        {"type": "H200", "count": 16, "price_per_hour": 4.0, "min_island": 8},
        {"type": "H20", "count": 32, "price_per_hour": 1.0, "min_island": 8}]}, "t.yaml")
    plan = make_plan(PlanRequest(inv, budget=80.0, ranges=8, compare_exact=False))
    serial = cp.close_plan(plan, background=False)
    parallel = cp.close_plan(plan, background=True)
    assert serial["summary"]["alternatives"] == parallel["summary"]["alternatives"]
    assert serial["summary"]["requests_per_s"] == parallel["summary"]["requests_per_s"]
    assert len(serial["summary"]["alternatives"]) == 2


@pytest.mark.slow
def test_llama_code_target_5_is_the_cheapest_plan_the_run_found(run_cli, tmp_path):
    """Issue 28's target case: the perf model's cheapest plan ($21.75/h of H100 and H200
    islands since issue 29's launch floors; $23.75/h after its aggregated model, a $18/h
    colocated island before) misses the SLO in
    simulation at any load (bursts of the code trace), so target mode re-plans until the
    target holds; a single-type alternative planned the same way came out cheaper than
    the search's mixed plan ($90 against $92.50 when measured), and the run answers with
    the cheapest plan that holds whichever found it."""
    import json

    inv = tmp_path / "three.yaml"
    inv.write_text("name: three\nmin_island: 1\ngpus:\n"
                   "  - {type: H100-SXM, count: 64, price_per_hour: 4.50}\n"
                   "  - {type: H200, count: 64, price_per_hour: 5.75}\n"
                   "  - {type: A100-80G, count: 64, price_per_hour: 3.50}\n")
    out = tmp_path / "run"
    rc, _, err = run_cli("plan", "--inventory", str(inv), "--target-rps", "5", "--model",
                         "llama-3.1-70b", "--workload", "azure-code-2023", "--ttft", "2000",
                         "--tpot", "50", "--out", str(out), "-q")
    assert rc == 0, err
    s = json.loads((out / "plan.json").read_text())["summary"]
    loop = s["closed_loop"]
    assert loop["target_attainment"] >= 0.995
    assert s["cost_per_hour"] > 21.75  # the perf model's plan did not hold
    rounds = loop["target_rounds"]
    assert rounds[0]["cost_per_hour"] == pytest.approx(21.75) and not rounds[0]["met"]
    held = [a for a in s["alternatives"] if a["requests_per_s"] > 0]
    assert held and all(s["cost_per_hour"] <= a["cost_per_hour"] + 1e-9 for a in held)
    if s.get("answer_from"):  # an alternative won: the search's own plan is listed
        assert any(a["label"] == "the search's plan" for a in s["alternatives"])
        assert "beats the search's plan" in s["answer_from"]["why"]
