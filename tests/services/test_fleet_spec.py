"""Fleet files (planner.services.spec): the shipped example loads; every mistake is one
line naming the file, the service and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.core.errors import PlannerError
from planner.services.spec import fleet_from_dict, load_fleet

REPO = Path(__file__).resolve().parents[2]


def service(**kw):
    out = {"name": "chat", "model": "llama-3.1-8b", "workload": "azure-conv-2023",
           "share": 1.0}
    out.update(kw)
    return {k: v for k, v in out.items() if v is not None}


def test_example_fleet_loads():
    fleet = load_fleet(REPO / "fleets" / "example.yaml")
    assert [s.name for s in fleet.services] == ["chat", "code", "draft"]
    assert fleet.mode == "shares"
    assert sum(s.share for s in fleet.services) == pytest.approx(1.0)
    assert len({s.model for s in fleet.services}) == 3
    assert len({(s.slo.ttft_ms, s.slo.tpot_ms) for s in fleet.services}) == 3


def test_targets_and_defaults():
    fleet = fleet_from_dict({"services": [service(share=None, target_rps=5),
                                          service(name="b", share=None, target_rps=2.5,
                                                  workload=None)]}, "f.yaml")
    assert fleet.mode == "targets"
    assert fleet.services[1].workload == "azure-conv-2023"  # the planner's default
    assert fleet.services[0].engine is None


def test_paths_beside_the_fleet_file(tmp_path):
    cfg = (REPO / "perfmodel" / "data" / "models" / "llama-3.1-8b.json").read_text()
    (tmp_path / "my-model.json").write_text(cfg)
    (tmp_path / "fleet.yaml").write_text(
        "services:\n  - {name: a, model: my-model.json, share: 1}\n")
    fleet = load_fleet(tmp_path / "fleet.yaml")
    assert fleet.services[0].model == str(tmp_path / "my-model.json")


@pytest.mark.parametrize("services,where,field", [
    ([service(share=0.0)], "service 'chat'", "'share'"),
    ([service(share=-0.2)], "service 'chat'", "'share'"),
    ([service(share=1e-300), service(name="b", share=1.0)], "service 'chat'",
     "field 'share' must be >= 1e-06"),
    ([service(share=0.5), service(name="b", share=0.4)], "f.yaml", "sum to 0.9"),
    ([service(), service()], "f.yaml: services: field 'name'", "'chat' is used twice"),
    ([service(share=0.5), service(name="Chat", share=0.5)], "field 'name'",
     "'chat' and 'Chat' differ only in case or in '.', '_', '-'"),
    ([service(name="c.d", share=0.5), service(name="c_d", share=0.5)], "field 'name'",
     "'c.d' and 'c_d' differ only in case"),
    ([service(name="../x")], "services[0]", "field 'name' must be 1-64 letters"),
    ([service(share=0.5), service(name="b", share=None, target_rps=3)], "service 'b'",
     "mixes targets"),
    ([service(share=None)], "service 'chat'", "'share'"),
    ([service(share=0.5, target_rps=3)], "service 'chat'", "'share'"),
    ([service(model="no-such-model")], "service 'chat'", "field 'model'"),
    ([service(model=None)], "service 'chat'", "field 'model' is missing"),
    ([service(model="llama\n-3.1-8b")], "service 'chat'", "field 'model' must be"),
    ([service(workload="x" * 5000)], "service 'chat'", "field 'workload' must be"),
    ([service(workload="no-such-workload")], "service 'chat'", "field 'workload'"),
    ([service(engine="nonsense")], "service 'chat'", "field 'engine'"),
    ([service(slo={"ttft_ms": -1})], "service 'chat'", "'slo.ttft_ms'"),
    ([service(slo={"p99": 3})], "service 'chat'", "field 'slo'"),
    ([service(name="a/b")], "services[0]", "field 'name'"),
    ([service(name="x" * 100)], "services[0]", "field 'name'"),
    ([service(colour="red")], "service 'chat'", "unknown field"),
    ([service(target_rps=float("nan"), share=None)], "service 'chat'", "'target_rps'"),
])
def test_bad_fleet_files(services, where, field):
    with pytest.raises(PlannerError) as err:
        fleet_from_dict({"services": services}, "f.yaml")
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith("f.yaml")
    assert where in msg and field in msg
    assert err.value.exit_code == 2


@pytest.mark.parametrize("data,field", [
    ({}, "'services'"), ({"services": []}, "'services'"), ([1, 2], "mapping"),
    ({"services": [service()], "extra": 1}, "unknown field"),
    ({"services": ["chat"]}, r"services\[0\] must be a mapping"),
])
def test_bad_fleet_top_level(data, field):
    with pytest.raises(PlannerError, match=field):
        fleet_from_dict(data, "f.yaml")


def test_missing_or_special_fleet_file(tmp_path):
    with pytest.raises(PlannerError, match="does not exist"):
        load_fleet(tmp_path / "nope.yaml")
    with pytest.raises(PlannerError, match="not a file"):
        load_fleet(tmp_path)
