"""Hostile command lines (issue 19): bounds on every numeric flag, output paths checked
before any work, and nothing left behind when a run fails."""

from __future__ import annotations

import json

import pytest

from planner.core.errors import PlannerError


def _tree(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def _one_error_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    return lines[0]


PLAN = ("plan", "--model", "llama-3.1-70b", "--ranges", "8", "--no-sim-check",
        "--no-homogeneous", "-q")


@pytest.mark.parametrize("flag, value, says", [
    ("--budget", "inf", "must be finite"),
    ("--budget", "nan", "must be finite"),
    ("--budget", "1e308", "must be <= 1e+12"),
    ("--target-rps", "1e300", "must be <= 1e+09"),
    ("--seed", "-5", "must be >= 0"),
    ("--ranges", "100000000", "must be <= 4096"),
    ("--iterations", "100000", "must be <= 64"),
    ("--batch-size", "0", "must be >= 1"),
    ("--exact-time-limit", "0", "must be > 0"),
    ("--exact-time-limit", "-1", "must be > 0"),
    ("--exact-time-limit", "nan", "must be finite"),
    ("--ttft", "inf", "must be finite"),
    ("--engine", "warp-drive", "unknown engine"),
    ("--router", "teleport", "unknown router"),
    ("--model", "gpt-9", "unknown model"),
    ("--workload", "nope", "unknown workload"),
])
def test_plan_flag_bounds(run_cli, small_inventory, tmp_path, flag, value, says, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rc, _, err = run_cli(*PLAN, "--inventory", str(small_inventory), "--out", "run",
                         flag, value)
    line = _one_error_line(err)
    assert rc == 2 and flag in line and says in line
    assert _tree(tmp_path) == []


@pytest.mark.parametrize("argv, flag, says", [
    (("perf", "--gpus", "1000000000"), "--gpus", "must be <= 4096"),
    (("perf", "--input", "1000000000"), "--input", "must be <= 262144"),
    (("perf", "--output", "0"), "--output", "must be >= 1"),
    (("perf", "--ttft", "-1"), "--ttft", "must be > 0"),
    (("perf", "--gpu", "H9000"), "--gpu", "unknown GPU"),
    (("perf", "--kv-dtype", "fp3"), "--kv-dtype", "unknown kv dtype"),
    (("perf", "--csv", "."), "--csv", "is a folder"),
    (("workload", "fit", "t.csv", "--format", "azure", "--out", "w.yaml", "--max-len",
      "-3"), "--max-len", "must be >= 1"),
    (("workload", "fit", "t.csv", "--format", "nope", "--out", "w.yaml"), "--format",
     "unknown trace format"),
    (("whatif", "--budget-sweep", "1e308"), "--budget-sweep", "must be <= 1e+12"),
    (("whatif", "--budget-sweep", "128,256", "--time-limit", "nan"), "--time-limit",
     "must be finite"),
])
def test_other_commands_flag_bounds(run_cli, tmp_path, argv, flag, says, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.csv").write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n")
    before = _tree(tmp_path)
    rc, _, err = run_cli(*argv)
    line = _one_error_line(err)
    assert rc == 2 and flag in line and says in line, line
    assert _tree(tmp_path) == before


def test_whatif_spec_mip_gap_is_bounded(run_cli, tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text("solver: {mip_gap: 2}\nstudies: {budget_sweep: [128, 256]}\n")
    rc, _, err = run_cli("whatif", str(spec), "--out", str(tmp_path / "s"))
    line = _one_error_line(err)
    assert rc == 2 and "spec.yaml" in line and "mip_gap" in line and "<= 0.5" in line
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize("out, says", [
    ("taken", "exists and is not a folder"),
    ("taken/run", "is a file, not a folder"),
    ("", "empty path"),
    (".", "not a run folder"),
    ("mine", "not a run folder"),
])
def test_plan_out_is_checked_before_the_search(run_cli, small_inventory, tmp_path,
                                               monkeypatch, out, says):
    """A bad --out fails at once (the search is never entered) and writes nothing."""
    from planner import plan as plan_module

    monkeypatch.chdir(tmp_path)
    (tmp_path / "taken").write_text("the user's file\n")
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("the user's notes\n")
    before = _tree(tmp_path)
    monkeypatch.setattr(plan_module, "make_plan", lambda *a, **k: pytest.fail("searched"))
    rc, _, err = run_cli(*PLAN, "--inventory", str(small_inventory), "--out", out)
    line = _one_error_line(err)
    assert rc == 2 and "--out" in line and says in line
    assert _tree(tmp_path) == before


@pytest.mark.parametrize("failure, rc_expected", [
    (PlannerError("no layout serves this"), 2),
    (RuntimeError("a bug"), None),
])
def test_failed_search_leaves_no_checkpoint_or_folders(run_cli, small_inventory, tmp_path,
                                                        evaluation_fault, failure, rc_expected):
    """A search that fails (not interrupted) removes its checkpoint and the folders made
    for it; only Ctrl-C keeps a checkpoint (test_cli_plan's resume test)."""
    evaluation_fault.arm(3, failure)
    out = tmp_path / "new" / "deeper" / "run"
    argv = (*PLAN, "--inventory", str(small_inventory), "--search", "divider",
            "--iterations", "1", "--batch-size", "2", "--no-exact", "--out", str(out))
    if rc_expected is None:
        with pytest.raises(RuntimeError):
            run_cli(*argv)
    else:
        rc, _, err = run_cli(*argv)
        assert rc == rc_expected and "no layout serves this" in err
    assert evaluation_fault.calls == 3  # the search ran, and saved a checkpoint before failing
    assert _tree(tmp_path) == []


def test_resume_without_checkpoint_says_so(run_cli, small_inventory, tmp_path):
    rc, _, err = run_cli(*PLAN, "--inventory", str(small_inventory), "--out",
                         str(tmp_path / "run"), "--resume")
    line = _one_error_line(err)
    assert rc == 2 and "nothing to resume" in line
    assert _tree(tmp_path) == []


def test_simulate_names_the_plan_file(run_cli, tmp_path, run_copy):
    """The simulator checks a plan by field; from the CLI the message names the file."""
    run_dir = run_copy
    plan = json.loads((run_dir / "plan.json").read_text())
    plan["islands"][0]["range_rps"] = "many"
    (run_dir / "plan.json").write_text(json.dumps(plan))
    before = _tree(tmp_path)
    rc, _, err = run_cli("simulate", str(run_dir), "-n", "200", "-q")
    line = _one_error_line(err)
    assert rc == 2 and str(run_dir / "plan.json") in line and "range_rps" in line
    assert _tree(tmp_path) == before


@pytest.mark.parametrize("argv, says", [
    (("--seed", "-5"), "--seed"),
    (("--rate", "1e-300"), "--rate"),
    (("--rate", "fast"), "--rate"),
    (("-n", "0"), "--requests"),
    (("--engine", "warp"), "--engine"),
])
def test_simulate_flag_bounds(run_cli, tmp_path, run_copy, argv, says):
    run_dir = run_copy
    before = _tree(tmp_path)
    rc, _, err = run_cli("simulate", str(run_dir), *argv)
    line = _one_error_line(err)
    assert rc == 2 and says in line
    assert _tree(tmp_path) == before


def test_a_million_gpus_under_a_budget_is_planned_from_what_it_buys():
    """1,000,000 H200 at 512 $/h: the search space holds what 512 $/h buys (146), not a
    million -- the divider found 7 feasible layouts of 256 samples before."""
    from planner.fleet.inventory import inventory_from_dict
    from planner.outer.protocol import SearchSpace

    inv = inventory_from_dict({"gpus": [{"type": "H200", "count": 1_000_000,
                                         "price_per_hour": 3.5},
                                        {"type": "H20", "count": 8, "price_per_hour": 1.2}]},
                              "big.yaml")
    space = SearchSpace.from_inventory(inv, budget=512.0)
    assert {t.name: t.available for t in space.types} == {"H200": 146, "H20": 8}
    assert SearchSpace.from_inventory(inv).types[0].available == 1_000_000


@pytest.mark.parametrize("argv, line", [
    (["--no-slo", "--ttft", "100"],
     "--ttft and --no-slo contradict: --no-slo plans with no latency ceilings"),
    (["--search", "exact", "--iterations", "5", "--workers", "2"],
     "--iterations, --workers: --search exact has no iterations or batches; they apply to "
     "the BO and random searches"),
])
def test_plan_flags_that_would_be_dropped_are_refused(run_cli, small_inventory, tmp_path,
                                                      argv, line):
    """Both used to plan, dropping the flag without a word."""
    rc, _, err = run_cli(*PLAN, "--inventory", str(small_inventory), "--budget", "64",
                         "--out", str(tmp_path / "r"), *argv)
    assert rc == 2 and _one_error_line(err) == f"error: {line}"
    assert not (tmp_path / "r").exists()


def test_iteration_flags_auto_does_not_use_are_named(run_cli, small_inventory, tmp_path):
    """--search auto picks the exact MILP on this inventory; --iterations is then unused,
    which the run says (stderr) rather than refusing: auto's choice depends on the size
    of the problem, not on the flags."""
    rc, _, err = run_cli("plan", "--model", "llama-3.1-70b", "--ranges", "8",
                         "--no-sim-check", "--no-homogeneous", "--no-exact",
                         "--inventory", str(small_inventory), "--budget", "64",
                         "--iterations", "5", "--out", str(tmp_path / "r"))
    assert rc == 0 and (tmp_path / "r" / "plan.json").is_file()
    assert ("note: --iterations unused: --search auto ran the exact search, which has no "
            "iterations or batches") in err
