"""Issue 32: bounded work -- every count a flag or file gives is capped with a message
before any work (what-if --add, budget lists, a study's scenarios, simulate -n)."""

from __future__ import annotations

import re

import pytest


def _one_line(err: str) -> str:
    lines = [x for x in err.strip().splitlines() if x.strip()]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("argv,needle", [
    (("--add", "B200:1e308:6"), "--add COUNT: must be <= 1e+06"),
    (("--add", "B200:8:1e300"), "--add PRICE: must be <= 1e+06"),
    (("--budget-sweep", ",".join(str(100 + k) for k in range(1001))), "at most 1,000"),
    (("--budget-sweep", "100..500:-100"), "--budget-sweep: must be > 0, got -100"),
    (("--budget-sweep", "-100..500"), "--budget-sweep: must be > 0, got -100"),
    (("--add", "B200:0:6"), "--add COUNT: must be > 0, got 0"),
    (("--add", "B200:8:-1"), "--add PRICE: must be >= 0, got -1"),
    (("--add", "B200:8:1e-9"), "must be 0 or at least 1e-06 $/GPU-hour"),
])
def test_whatif_flags_are_bounded(run_cli, small_inventory, tmp_path, argv, needle):
    rc, _, err = run_cli("whatif", "--inventory", str(small_inventory), "--budget", "64",
                         *argv, "--out", str(tmp_path / "w"))
    line = _one_line(err)
    assert rc == 2 and needle in line and not (tmp_path / "w").exists()


def test_whatif_adds_gpus_one_owns_at_no_price(run_cli, small_inventory, tmp_path):
    """0 $/h is an inventory's price for GPUs one owns; --add refused it."""
    rc, _, err = run_cli("whatif", "--inventory", str(small_inventory), "--budget", "64",
                         "--ranges", "8", "--add", "L40S:2:0", "--closed-loop", "off",
                         "--out", str(tmp_path / "w"), "-q")
    assert rc == 0, err
    assert (tmp_path / "w" / "whatif.json").is_file()


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
    # cut at the value (its ends and its length kept), so the file and field stay
    assert rc == 2 and len(line) < 1000 and re.search(r"\[10,00\d characters\]", line)
    assert str(inv) in line and "gpus[0]" in line
    from planner.cli.main import one_line

    long = "x " * 3000  # many short words: no one value to cut, so the line is cut
    assert "characters cut; 6,000 in all" in one_line(long)


def test_no_command_says_so(run_cli):
    rc, _, err = run_cli()
    assert rc == 2 and err.strip().splitlines()[-1].startswith("error: no command")


def test_an_inventory_of_no_gpus_says_so(run_cli, tmp_path):
    inv = tmp_path / "inv.yaml"
    inv.write_text("gpus:\n  - {type: H200, count: 0, price_per_hour: 4}\n")
    rc, _, err = run_cli("plan", "--inventory", str(inv), "--out", str(tmp_path / "o"))
    assert rc == 2 and "the inventory has no GPUs" in _one_line(err)


def test_an_out_path_nothing_can_be_made_in_fails_first(run_cli, small_inventory,
                                                         evaluation_fault):
    evaluation_fault.arm(10**9, RuntimeError("never reached"))  # counts evaluations
    rc, _, err = run_cli("plan", "--inventory", str(small_inventory), "--out",
                         "/proc/planner-test-run")
    assert rc == 2 and "/proc" in _one_line(err)
    assert evaluation_fault.calls == 0  # refused before any layout was evaluated


def test_simulate_blames_the_flag_not_the_plan(run_cli, tmp_path, run_copy):
    run_dir = run_copy
    rc, _, err = run_cli("simulate", str(run_dir), "--router", "range,foo", "-n", "100")
    line = _one_line(err)
    assert rc == 2 and line.startswith("error: --router") and "plan.json" not in line
    assert not (run_dir / "simulation").exists()  # range was not run first
    rc, _, err = run_cli("simulate", str(run_dir), "--trace", str(tmp_path / "no.csv"))
    line = _one_line(err)
    assert rc == 2 and line.startswith("error: --trace") and "plan.json" not in line


@pytest.mark.parametrize("argv, line", [
    (["--arrivals", "foo"], "--arrivals must be one of auto, poisson, gamma, got 'foo'"),
    (["--trace-format", "csv"], "--trace-format applies only with --trace"),
    (["--trace", "TRACE", "--trace-format", "csv"],
     "--trace-format csv needs a column mapping, which simulate does not take: fit a "
     "workload from the trace (planner workload fit TRACE --format csv --columns ...) and "
     "simulate with --workload"),
])
def test_simulate_flags_are_refused_by_name_before_the_run(run_cli, tmp_path, run_copy,
                                                           argv, line):
    """The first two used to blame plan.json (or be ignored); the third sent the user to
    a --columns flag simulate does not have."""
    trace = tmp_path / "t.csv"
    trace.write_text("ts,prompt,completion\n0,10,5\n")
    argv = [str(trace) if a == "TRACE" else a for a in argv]
    rc, _, err = run_cli("simulate", str(run_copy), "-n", "100", *argv)
    assert rc == 2 and _one_line(err) == f"error: {line}"
    assert not (run_copy / "simulation").exists()


def test_the_mixing_router_on_a_plan_with_decode_islands_is_refused(run_cli, run_copy):
    """Seed 004's router places a prompt where its prefill mixes with decodes; on a
    disaggregated plan it reached a decode hand-off it has no rule for and ended in a
    NotImplementedError traceback."""
    rc, _, err = run_cli("simulate", str(run_copy), "--router", "mixing", "-n", "100")
    assert rc == 2 and "router 'mixing' routes colocated ('both') islands" in _one_line(err)
    assert not (run_copy / "simulation").exists()


def test_a_budget_that_buys_no_gpu_names_its_flag(run_cli, small_inventory, tmp_path):
    for argv, flag in ((("--budget", "0.5", "--budget-sweep", "64"), "--budget"),
                       (("--budget", "64", "--budget-sweep", "1,2"), "--budget-sweep")):
        rc, _, err = run_cli("whatif", "--inventory", str(small_inventory), *argv, "--out",
                             str(tmp_path / "w"))
        line = _one_line(err)
        assert rc == 2 and line.startswith(f"error: {flag}") and "buys no island" in line


def test_a_time_limit_too_short_for_the_milp_names_the_flag(run_cli, small_inventory,
                                                            tmp_path):
    rc, _, err = run_cli("plan", "--inventory", str(small_inventory), "--ranges", "8",
                         "--no-sim-check", "--no-homogeneous", "--exact-time-limit", "1e-300",
                         "--out", str(tmp_path / "o"), "-q")
    line = _one_line(err)
    assert rc == 1 and "--exact-time-limit" in line and not (tmp_path / "o").exists()
