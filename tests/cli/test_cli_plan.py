"""`planner plan` end to end on a small inventory, and every kind of bad input."""

from __future__ import annotations

import json

import pytest


@pytest.mark.slow
def test_plan_exact_writes_run_folder(run_cli, small_inventory, tmp_path):
    out = tmp_path / "run"
    rc, stdout, err = run_cli("plan", "--inventory", str(small_inventory), "--budget", "80",
                              "--search", "exact", "--ranges", "8", "--out", str(out), "-q")
    assert rc == 0, err
    plan = json.loads((out / "plan.json").read_text())
    assert plan["schema_version"] == 1
    s = plan["summary"]
    assert 0 < s["cost_per_hour"] <= 80 and s["requests_per_s"] > 0
    used = s["gpus_used"]
    assert used.get("H200", 0) <= 16 and used.get("H20", 0) <= 32
    roles = {i["role"] for i in plan["islands"]}
    assert {"prefill", "decode"} <= roles
    for name in ("report.html", "report.md", "islands.csv", "convergence.png"):
        assert (out / name).is_file()
    # homogeneous alternatives spend the same money on one type, as far as the
    # inventory has it (16 H200, 32 H20 available; $80/h would buy 20 and 80)
    labels = [b["label"] for b in plan["baselines"]["homogeneous"]]
    assert labels == ["16 x H200 only", "32 x H20 only"]
    # the exact search's optimum is this plan's analytic capacity; the headline is what
    # holds in simulation at the SLO (planner.sim.closed_loop)
    analytic = s["closed_loop"]["analytic_requests_per_s"]
    assert s["exact"]["requests_per_s"] == pytest.approx(analytic, rel=1e-6)
    assert 0 < s["requests_per_s"] <= analytic * 1.05
    assert "run folder" in stdout


@pytest.mark.slow
def test_plan_is_deterministic(run_cli, small_inventory, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for out in (a, b):
        rc, _, err = run_cli("plan", "--inventory", str(small_inventory), "--search", "exact",
                             "--ranges", "8", "--out", str(out), "-q", "--no-homogeneous")
        assert rc == 0, err
    pa, pb = (json.loads((d / "plan.json").read_text()) for d in (a, b))
    assert pa["islands"] == pb["islands"] and pa["summary"]["requests_per_s"] == (
        pb["summary"]["requests_per_s"])


BAD = [
    ("name: x\ngpus: [\n", ":3", "invalid YAML"),
    ("gpus:\n  - {type: H9000, count: 4}\n", "gpus[0] (H9000): field 'type'", "known GPUs"),
    ("gpus:\n  - {type: H200, count: -4}\n", "field 'count'", "must be >= 0"),
    ("gpus:\n  - {type: H200, count: 8, price_per_hour: -1}\n", "field 'price_per_hour'",
     "must be >= 0"),
    ("gpus:\n  - {type: X, count: 8, price_per_hour: 1, datasheet: {hbm_gb: 80}}\n",
     "datasheet", "is missing"),
    ("gpus: []\n", "field 'gpus'", "non-empty"),
    ("gpus:\n  - {type: H200, count: 8, colour: red}\n", "unknown field", "colour"),
    ("name: [1, 2]\ngpus:\n  - {type: H200, count: 8}\n", "field 'name'",
     "must be text, got [1, 2]"),
    ("source: {a: 1}\ngpus:\n  - {type: H200, count: 8}\n", "field 'source'",
     "must be text"),
]


@pytest.mark.parametrize("text,field,message", BAD)
def test_bad_inventory_one_line_exit_2_nothing_written(run_cli, tmp_path, text, field,
                                                       message):
    inv = tmp_path / "bad.yaml"
    inv.write_text(text)
    out = tmp_path / "run"
    rc, _, err = run_cli("plan", "--inventory", str(inv), "--out", str(out), "-q")
    assert rc == 2
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert str(inv) in err and field in err and message in err
    assert not out.exists()


def test_budget_below_cheapest_island(run_cli, small_inventory, tmp_path):
    out = tmp_path / "run"
    rc, _, err = run_cli("plan", "--inventory", str(small_inventory), "--budget", "5",
                         "--out", str(out), "-q")
    assert rc == 2 and "--budget 5" in err and "cheapest plan" in err
    assert "raise the budget to at least" in err and str(small_inventory) in err
    assert not out.exists()


def test_target_beyond_inventory_explains(run_cli, small_inventory, tmp_path):
    rc, _, err = run_cli("plan", "--inventory", str(small_inventory), "--target-rps", "1e6",
                         "--search", "exact", "--ranges", "8", "--out", str(tmp_path / "r"),
                         "-q")
    # the real cause: the target is above what the whole inventory can serve
    assert rc == 1 and "more than the whole inventory can serve" in err
    assert "at most" in err and "requests/s" in err


def test_usage_errors(run_cli, small_inventory):
    rc, _, err = run_cli("plan", "--inventory", str(small_inventory), "--search", "psychic")
    assert rc == 2 and "--search must be one of" in err
    rc, _, err = run_cli("plan", "--inventory", "nope.yaml")
    assert rc == 2 and "does not exist" in err
    rc, _, err = run_cli("plan", "--inventory", str(small_inventory), "--budget", "-3")
    assert rc == 2 and "--budget must be > 0" in err


@pytest.mark.slow
def test_ctrl_c_saves_and_resume_completes(run_cli, small_inventory, tmp_path,
                                           evaluation_fault):
    """Ctrl-C during the search keeps a checkpoint and prints how to resume; the resumed
    run does not re-evaluate what was finished and writes the run folder."""
    out = tmp_path / "run"
    evaluation_fault.arm(3, KeyboardInterrupt())
    args = ("plan", "--inventory", str(small_inventory), "--search", "divider",
            "--iterations", "2", "--batch-size", "4", "--ranges", "8", "--no-exact",
            "--no-homogeneous", "--out", str(out), "-q")
    rc, _, err = run_cli(*args)
    assert rc == 130
    assert "interrupted" in err and "--resume" in err
    checkpoint = out.parent / f".{out.name}.checkpoint.json"
    assert checkpoint.is_file() and not out.exists()

    evaluation_fault.disarm()
    rc, _, err = run_cli(*args, "--resume")
    assert rc == 0, err
    plan = json.loads((out / "plan.json").read_text())
    assert plan["search"]["resumed"] is True
    assert not checkpoint.exists()


@pytest.mark.parametrize("gpus, says", [
    ("{type: H200, count: 8, price_per_hour: 4.0}",
     "a plan needs one for prefill and one for decode, 16 GPUs at $64.00/h, but the "
     "inventory lists 8"),
    ("{type: H200, count: 8, price_per_hour: 4.0, min_island: 64}",
     "no island can be formed (8 x H200): each type's min_island is above its count; "
     "lower min_island or add GPUs"),
])
def test_an_inventory_too_small_for_two_islands_says_so(run_cli, tmp_path, gpus, says):
    """Both used to blame something else: the budget, or the GPUs' memory."""
    inv = tmp_path / "inv.yaml"
    inv.write_text(f"gpus:\n  - {gpus}\n")
    rc, _, err = run_cli("plan", "--inventory", str(inv), "--budget", "128", "-q",
                         "--out", str(tmp_path / "r"))
    assert rc == 1 and says in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "r").exists()


def test_a_budget_below_one_colocated_island_names_what_costs_that(run_cli, tmp_path):
    """With colocation on, the cheapest plan is one colocated island; the message named
    the prefill and decode islands' prices beside the colocated island's total."""
    inv = tmp_path / "inv.yaml"
    inv.write_text("gpus:\n  - {type: A100-80G, count: 8, price_per_hour: 3.5, "
                   "min_island: 1}\n")
    rc, _, err = run_cli("plan", "--inventory", str(inv), "--model", "llama-3.1-8b",
                         "--budget", "1", "-q", "--out", str(tmp_path / "r"))
    assert rc == 2 and len(err.strip().splitlines()) == 1
    assert ("one colocated island (1 x A100-80G) needs $3.50/h; one prefill island "
            "(1 x A100-80G, $3.50/h) and one decode island (1 x A100-80G, $3.50/h) need "
            "$7.00/h; raise the budget to at least $3.50/h") in err


def test_a_plan_whose_slo_holds_at_no_rate_is_exit_1(run_cli, tmp_path):
    """One H100 on the code workload: the search finds a layout, but its SLO holds at no
    rate in simulation; the run printed a plan of 0 requests/s 'that holds the SLO' and
    exited 0."""
    inv = tmp_path / "one.yaml"
    inv.write_text("gpus:\n  - {type: H100-SXM, count: 1, price_per_hour: 3.0}\n")
    out = tmp_path / "r"
    rc, _, err = run_cli("plan", "--inventory", str(inv), "--model", "llama-3.1-8b",
                         "--workload", "azure-code-2023", "--ranges", "8", "-q",
                         "--out", str(out))
    assert rc == 1 and len(err.strip().splitlines()) == 1
    assert "no plan holds the SLO in simulation: the SLO holds at no rate" in err
    assert not out.exists()
