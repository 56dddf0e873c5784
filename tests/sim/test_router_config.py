"""The simulated routing is the exported one: ``planner simulate --router-config`` runs
the range router on a router.json of ``planner export`` (issue 27, item 5)."""

from __future__ import annotations

import json

import numpy as np
import pytest


@pytest.fixture(scope="module")
def exported(tmp_path_factory, small_inventory):
    from planner.cli.main import run

    out = tmp_path_factory.mktemp("routercfg") / "run"
    assert run(["plan", "--inventory", str(small_inventory), "--budget", "80", "--search",
                "exact", "--ranges", "8", "--out", str(out), "-q", "--no-homogeneous",
                "--no-exact", "--no-sim-check"]) == 0
    assert run(["export", str(out)]) == 0
    return out


def _prefill_islands(plan: dict, settings) -> np.ndarray:
    from planner.sim.metrics import request_columns
    from planner.sim.run import run_plan

    return request_columns(run_plan(plan, settings).result)["prefill_island"]


def test_the_exported_weights_simulate_exactly_as_the_plans(exported):
    from planner.sim.run import SimSettings

    plan = json.loads((exported / "plan.json").read_text())
    cfg = str(exported / "export" / "router.json")
    a = _prefill_islands(plan, SimSettings(requests=1500, seed=3))
    b = _prefill_islands(plan, SimSettings(requests=1500, seed=3, router_config=cfg))
    assert np.array_equal(a, b)


def test_an_edited_file_is_simulated_as_edited(exported, tmp_path):
    from planner.sim.run import SimSettings

    plan = json.loads((exported / "plan.json").read_text())
    router = json.loads((exported / "export" / "router.json").read_text())
    prefill = [k for k, i in enumerate(plan["islands"]) if i["role"] == "prefill"]
    assert len(prefill) >= 2
    keep = prefill[0]
    for r in router["ranges"]:  # drain every prefill island but the first
        r["prefill"] = [{"island": keep, "weight": 1.0}]
    edited = tmp_path / "router.json"
    edited.write_text(json.dumps(router))
    used = _prefill_islands(plan, SimSettings(requests=800, router_config=str(edited)))
    serving = [k for k, i in enumerate(plan["islands"]) if i["role"] != "idle"]
    assert set(used.tolist()) == {serving.index(keep)}


@pytest.mark.parametrize("edit, field", [
    (lambda r: r.update(schema="other"), "schema"),
    (lambda r: r["ranges"].pop(), "ranges"),
    (lambda r: r["ranges"][0]["prefill"].append({"island": 99, "weight": 1}),
     "ranges[0].prefill"),
    (lambda r: r["ranges"][1]["prefill"][0].update(weight=-1), "ranges[1].prefill[0].weight"),
    (lambda r: r["ranges"][0]["prefill"].extend(r["ranges"][0]["prefill"] * 100_000),
     "ranges[0].prefill"),
])
def test_a_bad_file_is_one_line_naming_the_field(exported, tmp_path, run_cli, edit, field):
    router = json.loads((exported / "export" / "router.json").read_text())
    edit(router)
    bad = tmp_path / "router.json"
    bad.write_text(json.dumps(router))
    rc, _, err = run_cli("simulate", str(exported), "-n", "200", "--router-config", str(bad))
    assert rc == 2 and str(bad) in err and field in err
    assert len(err.strip().splitlines()) == 1
    assert not (exported / "simulation" / "range-config-0.8x-s0").exists()
