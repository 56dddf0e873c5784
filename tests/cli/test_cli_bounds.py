"""Issue 32: bounded work -- every count a flag or file gives is capped with a message
before any work (what-if --add, budget lists, a study's scenarios, simulate -n)."""

from __future__ import annotations

import pytest


def _one_line(err: str) -> str:
    lines = [x for x in err.strip().splitlines() if x.strip()]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("argv,needle", [
    (("--add", "B200:1e308:6"), "--add: must be <= 1e+06"),
    (("--add", "B200:8:1e300"), "--add: must be <= 1e+06"),
    (("--budget-sweep", ",".join(str(100 + k) for k in range(1001))), "at most 1000"),
])
def test_whatif_flags_are_bounded(run_cli, small_inventory, tmp_path, argv, needle):
    rc, _, err = run_cli("whatif", "--inventory", str(small_inventory), "--budget", "64",
                         *argv, "--out", str(tmp_path / "w"))
    line = _one_line(err)
    assert rc == 2 and needle in line and not (tmp_path / "w").exists()


def test_a_study_of_too_many_scenarios_is_refused(run_cli, small_inventory, tmp_path):
    spec = tmp_path / "spec.yaml"
    budgets = ", ".join(str(50 + k) for k in range(900))
    spec.write_text(f"inventory: {small_inventory}\nbudget: 64\nstudies:\n"
                    f"  budget_sweep: [{budgets}]\n  equal_cost: true\n")
    rc, _, err = run_cli("whatif", str(spec), "--out", str(tmp_path / "w"))
    line = _one_line(err)
    assert rc == 2 and "scenarios" in line and "2,000" in line
    assert not (tmp_path / "w").exists()


def test_simulate_requests_are_capped(run_cli, tmp_path):
    rc, _, err = run_cli("simulate", str(tmp_path), "-n", "2000001")
    assert rc == 2 and "must be <= 2e+06" in _one_line(err)


def test_errors_are_one_printable_line(run_cli, tmp_path):
    inv = tmp_path / "inv.yaml"
    inv.write_text('gpus:\n  - {type: "H2\\n00x", count: 4}\n')
    rc, _, err = run_cli("plan", "--inventory", str(inv), "--out", str(tmp_path / "o"))
    line = _one_line(err)
    assert rc == 2 and "H2\\n00x" in line
    inv.write_text("gpus:\n  - {type: " + "A" * 10_000 + ", count: 4}\n")
    rc, _, err = run_cli("plan", "--inventory", str(inv), "--out", str(tmp_path / "o"))
    line = _one_line(err)
    assert rc == 2 and len(line) < 2200 and "characters cut" in line


def test_no_command_says_so(run_cli):
    rc, _, err = run_cli()
    assert rc == 2 and err.strip().splitlines()[-1].startswith("error: no command")
