"""The fleet promise's pieces on hand-made closed loops (planner.services.outcome):
what a loop measured becomes a correction of the right phase, corrections from several
rounds merge, and the joint choice of measured islands respects inventory, servers and
budget while taking the best λ (or, with targets, the cheapest that holds)."""

from __future__ import annotations

import pytest

from planner.fleet.inventory import inventory_from_dict
from planner.services.outcome import NO_LOAD_FACTOR, Outcome, combine, corrections, measured
from planner.services.solve import Correction, FleetRequest, FleetSolution
from planner.services.spec import fleet_from_dict

INVENTORY = {"name": "t", "gpus": [{"type": "H20", "count": 16, "price_per_hour": 1.0},
                                   {"type": "H800", "count": 8, "price_per_hour": 2.0}]}


def fleet(targets: bool = False):
    kind = "target_rps" if targets else "share"
    return fleet_from_dict({"services": [
        {"name": "a", "model": "llama-3.1-8b", kind: 10.0 if targets else 0.5},
        {"name": "b", "model": "llama-3.1-8b", kind: 5.0 if targets else 0.5}]}, "f.yaml")


def request(budget=None, targets=False):
    return FleetRequest(fleet(targets), inventory_from_dict(INVENTORY, "inv.yaml"),
                        budget=budget)


def plan(islands, head, cost, *, sat=None, checks=(), factors=None):
    """A closed plan dict with just what the promise reads."""
    return {"islands": [{"gpu": g, "size": n, "role": r} for g, n, r in islands],
            "request": {"engine": "vllm"},
            "summary": {"requests_per_s": head, "cost_per_hour": cost,
                        "analytic_requests_per_s": head * 1.5,
                        "closed_loop": {"headline_requests_per_s": head,
                                        "saturation_requests_per_s": sat or head,
                                        "capacity_factors": factors or {},
                                        "seeds": [0], "router": "range",
                                        "checks": list(checks)}}}


def outcome(label, plans):
    sol = FleetSolution(0.0, {}, {})
    return Outcome(label, sol, plans, 0.0, 0.0)


def check(rate, attainment, ttft_miss, tpot_miss):
    return {"offered_rps": rate, "attainment": attainment, "ttft_miss": ttft_miss,
            "tpot_miss": tpot_miss, "seed": 0, "router": "range"}


def test_measured_charges_the_phase_that_broke():
    p = plan([("H20", 2, "prefill"), ("H20", 2, "decode")], 60.0, 2.0, sat=100.0,
             checks=[check(100.0, 0.8, 0.01, 0.2), check(80.0, 0.97, 0.0, 0.03),
                     check(60.0, 0.999, 0.0, 0.0)],
             factors={"H20:2:decode": 0.9})
    c = measured(p)
    assert c.phases == {"decode": pytest.approx(0.6)}
    assert c.kinds == {"H20:2:decode": 0.9}
    # every decode column of the service is charged, measured or not
    assert c.factor("H800", 8, "decode") == pytest.approx(0.6)
    assert c.factor("H20", 2, "decode") == pytest.approx(0.54)
    assert c.factor("H20", 2, "prefill") == 1.0
    assert c.factor("H20", 2, "both") == pytest.approx(0.6)


def test_a_failure_of_colocated_islands_alone_charges_colocation():
    """Long code prompts on colocated islands held no load; charging both phases charged
    every kind alike and the next solves bought more colocated islands (a fleet of two
    2-requests/s targets was refused after 5 rounds, each service alone planned)."""
    p = plan([("A100-80G", 1, "both"), ("H100-SXM", 1, "both")], 0.0, 8.0, sat=20.0,
             checks=[check(1.0, 0.9, 0.0, 0.1)])
    c = measured(p)
    assert c.phases == {"both": NO_LOAD_FACTOR}
    assert c.factor("H100-SXM", 1, "both") == NO_LOAD_FACTOR
    assert c.factor("H100-SXM", 1, "prefill") == c.factor("A100-80G", 1, "decode") == 1.0
    # beside a dedicated island, a failure still charges the phases
    mixed = plan([("H100-SXM", 1, "both"), ("H100-SXM", 1, "decode")], 0.0, 8.0, sat=20.0)
    assert measured(mixed).phases == {"prefill": NO_LOAD_FACTOR, "decode": NO_LOAD_FACTOR}


def test_measured_up_to_saturation_charges_nothing():
    p = plan([("H20", 2, "prefill"), ("H20", 2, "decode")], 90.0, 2.0, sat=90.0,
             checks=[check(90.0, 0.999, 0.0, 0.0)])
    assert measured(p) == Correction({}, {})


def test_corrections_merge_rounds():
    ttft = plan([("H20", 2, "prefill")], 50.0, 1.0, sat=100.0,
                checks=[check(70.0, 0.5, 0.4, 0.0)])
    fine = plan([("H20", 2, "prefill")], 80.0, 1.0, sat=80.0)
    merged = corrections([outcome("r1", {"a": ttft}), outcome("r2", {"a": fine}), None])
    # measured in one round of two: the other held to saturation (1)
    assert merged["a"].phases == {"prefill": pytest.approx(0.75)}


def test_combine_takes_the_best_fitting_islands():
    req = request(budget=20.0)
    # a is strong in round 1, b in round 2; neither round alone is the best
    r1 = outcome("joint, round 1", {"a": plan([("H20", 8, "both")], 40.0, 8.0),
                                    "b": plan([("H20", 4, "both")], 10.0, 4.0)})
    r2 = outcome("best split, round 1", {"a": plan([("H20", 4, "both")], 20.0, 4.0),
                                         "b": plan([("H800", 4, "both")], 30.0, 8.0)})
    out = combine(req, [r1, r2])
    assert out is not None
    assert out.sources == {"a": "joint, round 1", "b": "best split, round 1"}
    assert out.rate == pytest.approx(min(40.0, 30.0) / 0.5)
    assert out.cost_per_hour == pytest.approx(16.0)


def test_combine_respects_budget_and_inventory():
    req = request(budget=12.0)
    r1 = outcome("r1", {"a": plan([("H20", 8, "both")], 40.0, 8.0),
                        "b": plan([("H20", 4, "both")], 10.0, 4.0)})
    r2 = outcome("r2", {"a": plan([("H20", 4, "both")], 20.0, 4.0),
                        "b": plan([("H800", 4, "both")], 30.0, 8.0)})
    out = combine(req, [r1, r2])  # a from r1 + b from r2 costs 16 > 12
    assert out is not None and out.cost_per_hour <= 12.0
    assert out.rate == pytest.approx(max(min(40, 10), min(20, 30)) / 0.5)
    # 16 H20 at most: two 16-GPU islands never fit together
    big = outcome("big", {"a": plan([("H20", 16, "both")], 99.0, 16.0),
                          "b": plan([("H20", 16, "both")], 99.0, 16.0)})
    assert combine(request(budget=100.0), [big]) is None


def test_combine_with_targets_is_the_cheapest_that_holds():
    req = request(targets=True)
    r1 = outcome("r1", {"a": plan([("H20", 8, "both")], 12.0, 8.0),
                        "b": plan([("H20", 2, "both")], 4.0, 2.0)})  # b short of 5
    r2 = outcome("r2", {"a": plan([("H20", 4, "both")], 11.0, 4.0),
                        "b": plan([("H800", 2, "both")], 6.0, 4.0)})
    out = combine(req, [r1, r2])
    assert out is not None
    assert out.sources == {"a": "r2", "b": "r2"}
    assert out.cost_per_hour == pytest.approx(8.0)


class _FakePlan:
    """What the closure memo reads of a service plan: its dict and its context."""

    def __init__(self, islands: int, context: object, created: str = "t0") -> None:
        self.islands, self.context, self.created = islands, context, created

    def to_dict(self) -> dict:
        return {"islands": [{"gpu": "H20", "size": 8}] * self.islands,
                "created_utc": self.created}


def test_a_service_plan_is_closed_once_per_run(monkeypatch):
    from planner.services import promise

    closed = []

    def fake_close_one(plan, *, seed, router):
        closed.append((plan.islands, seed, router))
        return {"summary": {"requests_per_s": 10.0 * plan.islands}}

    monkeypatch.setattr(promise, "close_one", fake_close_one)
    ctx = object()
    with promise.closure_memo():
        first = promise._closed(_FakePlan(2, ctx), 0, "range")
        first["summary"]["requests_per_s"] = -1.0  # a caller's edit must not reach it
        again = promise._closed(_FakePlan(2, ctx, created="t1"), 0, "range")  # round 2
        assert again == {"summary": {"requests_per_s": 20.0}}
        assert closed == [(2, 0, "range")]
        # another plan, seed, router or planning context is closed on its own
        promise._closed(_FakePlan(3, ctx), 0, "range")
        promise._closed(_FakePlan(2, ctx), 1, "range")
        promise._closed(_FakePlan(2, ctx), 0, "jsq")
        promise._closed(_FakePlan(2, object()), 0, "range")
        assert len(closed) == 5
    # outside a run (a schedule's busiest slot) every closure is simulated, none kept
    assert promise._CLOSED is None
    promise._closed(_FakePlan(2, ctx), 0, "range")
    promise._closed(_FakePlan(2, ctx), 0, "range")
    assert len(closed) == 7
    assert promise._CLOSED is None
    # a new run does not see the last run's closures
    with promise.closure_memo():
        promise._closed(_FakePlan(2, ctx), 0, "range")
    assert len(closed) == 8
