"""`planner whatif --fleet`: scenarios planned as `planner plan --fleet` plans them, the
marginal question per service, and one-line refusals of what a fleet study cannot take."""

from __future__ import annotations

import json

import pytest
from fleet_data import FLEET, INVENTORY

from planner.cli.main import run
from planner.core.errors import PlannerError
from planner.fleet.inventory import inventory_from_dict
from planner.services.solve import FleetRequest
from planner.services.spec import fleet_from_dict
from planner.services.whatif import scenarios


def base_request(targets=False):
    import yaml

    fleet = yaml.safe_load(FLEET)
    budget = 6.0
    if targets:
        for s in fleet["services"]:
            s["target_rps"] = 5.0
            del s["share"]
        budget = None
    return FleetRequest(fleet_from_dict(fleet, "f.yaml"),
                        inventory_from_dict(yaml.safe_load(INVENTORY), "inv.yaml"),
                        budget=budget)


def test_scenarios_are_fleets():
    base = base_request()
    scs = scenarios(base, remove_service=["code"], share=["chat=0.8"],
                    price=["H800=0.5x,2x"], add=["L40S:8:0.9"], remove=["H20"],
                    budgets=[12.0])
    labels = [s.label for s in scs]
    assert labels[0] == "base"
    without = scs[1].request.fleet
    assert [s.name for s in without.services] == ["chat"]
    assert without.services[0].share == pytest.approx(1.0)  # renormalised
    shares = {s.name: s.share for s in scs[2].request.fleet.services}
    assert shares == {"chat": pytest.approx(0.8), "code": pytest.approx(0.2)}
    h800 = [s for s in scs if s.kind == "price"]
    assert [e.price_per_hour for s in h800 for e in s.request.inventory.entries
            if e.name == "H800"] == [1.0, 4.0]
    # the GPU's own price moves with the entry's: plans read their costs from it
    assert all(e.gpu.price_per_hour == e.price_per_hour for s in h800
               for e in s.request.inventory.entries)
    added = next(s for s in scs if s.label.startswith("add"))
    assert "L40S" in added.request.inventory.types
    assert "H20" not in next(s for s in scs if s.label == "without H20").request.inventory.types
    assert scs[-1].request.budget == 12.0


@pytest.mark.parametrize("kw,message", [
    ({"remove_service": ["nope"]}, "no service 'nope'"),
    ({"share": ["chat=1.0"]}, "below 1"),
    ({"share": ["chat"]}, "NAME=VALUE"),
    ({"target": ["chat=3"]}, "use --share"),
    ({"price": ["B200=0.8x"]}, "TYPE=FACTOR"),
    ({"price": ["H800=cheap"]}, "--price"),
    ({"add": ["H20:4:1.0"]}, "already lists"),
    ({"add": ["B200"]}, "TYPE:COUNT"),
    ({"remove": ["B200"]}, "no B200"),
    ({"budgets": [1.0] * 30}, "at most"),
])
def test_bad_scenarios(kw, message):
    with pytest.raises(PlannerError, match=message) as err:
        scenarios(base_request(), **kw)
    assert "\n" not in str(err.value)


def test_targets_fleet_takes_targets_not_shares():
    scs = scenarios(base_request(targets=True), target=["chat=7"])
    assert {s.name: s.target_rps for s in scs[1].request.fleet.services} == \
        {"chat": 7.0, "code": 5.0}
    with pytest.raises(PlannerError, match="use --target"):
        scenarios(base_request(targets=True), share=["chat=0.5"])


def test_fleet_study_end_to_end(tmp_path):
    (tmp_path / "inv.yaml").write_text(INVENTORY)
    (tmp_path / "fleet.yaml").write_text(FLEET)
    out = tmp_path / "study"
    rc = run(["whatif", "--fleet", str(tmp_path / "fleet.yaml"), "--inventory",
              str(tmp_path / "inv.yaml"), "--budget", "6", "--remove-service", "code",
              "--marginal", "2", "--out", str(out), "--quiet"])
    assert rc == 0
    st = json.loads((out / "whatif.json").read_text())
    base, without = st["scenarios"]
    assert base["scenario"] == "base" and base["vs_base"] == pytest.approx(1.0)
    assert without["services"] == ["chat"]
    assert base["lambda_rps"] > 0 and without["lambda_rps"] > 0
    assert base["cost_per_hour"] <= 6.0 + 1e-9 and without["cost_per_hour"] <= 6.0 + 1e-9
    # the marginal question: one option per service, never a loss
    assert {o["service"] for o in st["marginal"]} == {"chat", "code"}
    for o in st["marginal"]:
        assert o["headline_after"] >= o["headline_before"]
        assert o["cost_added"] <= 2.0 + 1e-9
    assert st["marginal_best"] in {"chat", "code"}
    assert "Where the next 2 $/h should go" in (out / "whatif.md").read_text()


@pytest.mark.parametrize("extra,message", [
    (["--model", "llama-3.1-8b"], "--model does not apply with --fleet"),
    (["--ttft", "100"], "--ttft does not apply with --fleet"),
    (["--share", "nope=0.3"], "no service 'nope'"),
])
def test_fleet_study_refusals(tmp_path, run_cli, extra, message):
    (tmp_path / "inv.yaml").write_text(INVENTORY)
    (tmp_path / "fleet.yaml").write_text(FLEET)
    out = tmp_path / "study"
    rc, _o, err = run_cli("whatif", "--fleet", str(tmp_path / "fleet.yaml"), "--inventory",
                          str(tmp_path / "inv.yaml"), "--budget", "6", "--out", str(out),
                          *extra)
    assert rc == 2
    assert message in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_fleet_flags_need_a_fleet(run_cli):
    rc, _o, err = run_cli("whatif", "--share", "chat=0.5")
    assert rc == 2 and "--fleet" in err


def test_add_service_scenario(tmp_path):
    (tmp_path / "more.yaml").write_text(
        "services:\n  - {name: draft, model: llama-3.1-8b, share: 0.2,"
        " slo: {ttft_ms: 500, tpot_ms: 20}}\n")
    scs = scenarios(base_request(), add_service=[str(tmp_path / "more.yaml")])
    fleet = scs[1].request.fleet
    assert scs[1].label == "with draft"
    shares = {s.name: s.share for s in fleet.services}
    assert shares == {"chat": pytest.approx(0.48), "code": pytest.approx(0.32),
                      "draft": pytest.approx(0.2)}
    assert sum(shares.values()) == pytest.approx(1.0)


@pytest.mark.parametrize("text,message", [
    ("services:\n  - {name: chat, model: llama-3.1-8b, share: 0.2}\n", "already in the fleet"),
    ("services:\n  - {name: d, model: llama-3.1-8b, share: 1.0}\n", "sum to 1"),
    ("services:\n  - {name: d, model: llama-3.1-8b, target_rps: 3}\n", "have targets"),
    ("services:\n  - {name: d, model: nope, share: 0.1}\n", "field 'model'"),
])
def test_bad_add_service(tmp_path, text, message):
    (tmp_path / "more.yaml").write_text(text)
    with pytest.raises(PlannerError, match=message):
        scenarios(base_request(), add_service=[str(tmp_path / "more.yaml")])


def test_marginal_on_a_fleet_of_targets(tmp_path):
    """With targets there is no λ: the marginal options say so (null), and the study's
    JSON is still written (a NaN there once failed it)."""
    (tmp_path / "inv.yaml").write_text(INVENTORY)
    fleet = FLEET.replace("share: 0.6", "target_rps: 30").replace("share: 0.4",
                                                                   "target_rps: 15")
    (tmp_path / "fleet.yaml").write_text(fleet)
    out = tmp_path / "study"
    assert run(["whatif", "--fleet", str(tmp_path / "fleet.yaml"), "--inventory",
                str(tmp_path / "inv.yaml"), "--marginal", "2", "--out", str(out),
                "--quiet"]) == 0
    st = json.loads((out / "whatif.json").read_text())
    assert st["scenarios"][0]["targets_met"]
    assert {o["service"] for o in st["marginal"]} == {"chat", "code"}
    for o in st["marginal"]:
        assert o["lambda_after"] is None
        assert o["headline_after"] >= o["headline_before"]
        assert o["cost_added"] <= 2.0 + 1e-9
