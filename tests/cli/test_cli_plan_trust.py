"""Issue 32: a plan.json read back (planner report, simulate, export) is checked as
strictly as the planner writes it -- values within the schema's bounds and the fields
against each other -- one line naming the file and the field, exit 2, nothing written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest


def _idle_all(p):
    for isl in p["islands"]:
        isl["role"] = "idle"


def _decode_idle(p):
    for isl in p["islands"]:
        if isl["role"] == "decode":
            isl["role"] = "idle"


def _shares_zero(p):
    for isl in p["islands"]:
        isl["shares"] = [0.0] * len(isl["shares"])


def _gpu_not_listed(p):
    listed = {g["type"] for g in p["request"]["inventory"]["gpus"]}
    other = next(g for g in ("B200", "H100-SXM", "MI300X") if g not in listed)
    p["islands"][0]["gpu"] = other


def _too_many(p):
    inv = p["request"]["inventory"]["gpus"][0]
    inv["count"] = 1
    for isl in p["islands"]:
        isl["gpu"] = inv["type"]


def _ranges_backwards(p):
    r = p["ranges"]
    r["start"][1], r["end"][1] = r["end"][1], r["start"][1] - 1


@pytest.mark.parametrize("edit,field", [
    (lambda p: p["summary"].update(requests_per_s=1e308), "summary.requests_per_s"),
    (lambda p: p["request"].update(model="no-such-model"), "request.model"),
    (_idle_all, "islands"),
    (_decode_idle, "islands"),
    (_shares_zero, "islands"),
    (_gpu_not_listed, "islands[0].gpu"),
    (_too_many, "islands"),
    (_ranges_backwards, "ranges.start[1]"),
])
def test_report_refuses_an_inconsistent_plan(run_cli, run_copy, edit, field):
    run_dir = run_copy
    plan = json.loads((run_dir / "plan.json").read_text())
    edit(plan)
    (run_dir / "plan.json").write_text(json.dumps(plan))
    before = sorted(p.name for p in run_dir.iterdir())
    for argv in (("report", str(run_dir)), ("simulate", str(run_dir), "-n", "100", "-q"),
                 ("export", str(run_dir))):
        rc, _, err = run_cli(*argv)
        lines = [x for x in err.strip().splitlines() if x.strip()]
        assert rc == 2 and len(lines) == 1, (argv, err)
        assert f"field '{field}'" in lines[0] and "plan.json" in lines[0]
    assert sorted(p.name for p in run_dir.iterdir()) == before


def test_nan_in_plan_json_names_its_field(run_cli, run_copy):
    run_dir = run_copy
    text = (run_dir / "plan.json").read_text()
    plan = json.loads(text)
    rate = json.dumps(plan["summary"]["requests_per_s"])
    (run_dir / "plan.json").write_text(text.replace(f'"requests_per_s": {rate}',
                                                    '"requests_per_s": NaN', 1))
    rc, _, err = run_cli("report", str(run_dir))
    lines = [x for x in err.strip().splitlines() if x.strip()]
    assert rc == 2 and len(lines) == 1 and "field 'summary.requests_per_s'" in lines[0]


def _with_servers(plan):
    """One server per island, as a server-granularity plan lists them."""
    plan["servers"] = [{"index": i, "gpu": isl["gpu"], "gpus": isl["size"], "islands": [i],
                        "gpus_used": isl["size"], "partial": False}
                       for i, isl in enumerate(plan["islands"])]
    for i, isl in enumerate(plan["islands"]):
        isl["servers"] = [i]
    return plan


@pytest.fixture(scope="module")
def with_servers(tmp_path_factory, written_run):
    """The written run with one server per island, which ``planner report`` accepts."""
    from planner.cli.main import run

    run_dir = Path(shutil.copytree(written_run, tmp_path_factory.mktemp("servers") / "run"))
    plan = _with_servers(json.loads((run_dir / "plan.json").read_text()))
    (run_dir / "plan.json").write_text(json.dumps(plan))
    assert run(["report", str(run_dir), "--quiet"]) == 0  # the servers as written are valid
    return run_dir


def _other_type(p):
    first = p["islands"][0]["gpu"]
    k = next(i for i, isl in enumerate(p["islands"]) if isl["gpu"] != first)
    p["islands"][0]["servers"] = [k]


@pytest.mark.parametrize("edit,field", [
    (lambda p: p["servers"].extend([p["servers"][0]] * 100_000), "servers"),
    (lambda p: p["servers"][1].update(index=0), "servers[1].index"),
    (lambda p: p["servers"][0].update(gpus_used=p["servers"][0]["gpus"] + 1),
     "servers[0].gpus_used"),
    (lambda p: p["servers"][0].update(islands=[0, 0]), "servers[0].islands"),
    (lambda p: p["islands"][0].update(servers=[0] * 100_000), "islands[0].servers"),
    (lambda p: p["islands"][0].update(servers=[len(p["servers"])]), "islands[0].servers"),
    (_other_type, "islands[0].servers"),
    (lambda p: p["islands"].extend([dict(p["islands"][0], role="idle")] * 100_000),
     "islands"),
    (lambda p: [p["ranges"][k].extend([1] * 5000) for k in ("start",)], "ranges.start"),
    (lambda p: p["search"]["history"].extend([p["search"]["history"][0]] * 100_001),
     "search.history"),
    (lambda p: p["search"].update(best_layout="H200:1*10000000000000"), "search.best_layout"),
    (lambda p: p["search"].update(best_layout=[["H200", 1]] * 100_000), "search.best_layout"),
    (lambda p: p["summary"].update(capacity_band={"islands": [{}] * 100_000}),
     "summary.capacity_band"),
])
def test_servers_and_list_lengths_are_checked_against_the_islands(run_cli, tmp_path,
                                                                   with_servers, edit, field):
    """A plan.json's lists are as long as what they describe (servers for the islands'
    GPUs, islands for the inventory's, ranges up to --ranges' cap) and its servers agree
    with its islands: numbered in order, one GPU type, within their GPUs."""
    run_dir = Path(shutil.copytree(with_servers, tmp_path / "run"))
    plan = json.loads((run_dir / "plan.json").read_text())
    edit(plan)
    (run_dir / "plan.json").write_text(json.dumps(plan))
    rc, _, err = run_cli("report", str(run_dir))
    lines = [x for x in err.strip().splitlines() if x.strip()]
    assert rc == 2 and len(lines) == 1, err
    assert f"field '{field}'" in lines[0], lines[0]
