"""Terminal hygiene: help texts whole and derived from the registries, defaults shown,
one-line usage errors, no solver banner, the simulate progress display."""

from __future__ import annotations

import inspect
import io
import re
import subprocess
import sys

import pytest
import typer
from rich.console import Console

from perfmodel.engines import ENGINES
from planner.cli import main
from planner.inner.registry import INNER_SOLVERS
from planner.outer.registry import OUTER_SEARCHES, iterative
from planner.sim.routers.registry import ROUTERS
from planner.workload.loaders import TRACE_FORMATS

COMMANDS = [[], ["plan"], ["perf"], ["report"], ["simulate"], ["whatif"], ["workload"],
            ["workload", "list"], ["workload", "show"], ["workload", "fit"]]
#: Options of our commands that have no default to show (alternative inputs).
NO_DEFAULT = {"target_rps", "trace"}


def _help(run_cli, *cmd: str) -> str:
    rc, out, err = run_cli(*cmd, "--help")
    assert rc == 0, err
    return out


@pytest.mark.parametrize("cmd", COMMANDS, ids=lambda c: " ".join(c) or "planner")
def test_every_help_is_whole_and_names_its_command(run_cli, cmd):
    out = _help(run_cli, *cmd)
    assert out.startswith(f"Usage: {' '.join(['planner', *cmd])} ")
    assert "…" not in out and "..." not in out.split("Commands:")[-1].replace(
        "[ARGS]...", "")  # no word or command summary cut short


def test_plan_script_usage_is_plan_not_plan_plan(capsys):
    rc = main.run(["--help"], command=main.plan_app, prog="plan")
    out = capsys.readouterr().out
    assert rc == 0 and out.startswith("Usage: plan [OPTIONS]") and "plan plan" not in out


def test_help_lists_every_registered_choice(run_cli):
    plan, simulate, perf = (_help(run_cli, c) for c in ("plan", "simulate", "perf"))
    # the help wraps at the terminal's width and may break a name at its hyphen
    # ("round-" / "robin"): join those before flattening
    flat = {k: " ".join(re.sub(r"-\n\s+", "-", v).split()) for k, v in
            (("plan", plan), ("simulate", simulate), ("perf", perf))}
    for name in (*INNER_SOLVERS, *OUTER_SEARCHES, *ENGINES):
        assert f"{name}:" in flat["plan"], name
    for name in ROUTERS:
        assert f"{name}:" in flat["simulate"], name
    for name in (*TRACE_FORMATS, *ENGINES):
        assert name in flat["simulate"], name
    for name in ENGINES:
        assert f"{name}:" in flat["perf"], name


def test_bo_defaults_come_from_the_searches(run_cli):
    flat = " ".join(_help(run_cli, "plan").split())
    for param in ("iterations", "batch_size"):
        for name in OUTER_SEARCHES:
            if iterative(name):
                value = inspect.signature(OUTER_SEARCHES[name]).parameters[param].default
                assert f"{name} {value}" in flat
    assert "[default: (the search's: divider 16, direct 8)]" in flat


def _options(command: typer.Typer, path: list[str]):
    group = typer.main.get_command(command)
    ctx = group.make_context("planner", list(path), resilient_parsing=True)
    cmd = group
    for name in path:
        cmd = cmd.get_command(ctx, name)  # type: ignore[attr-defined]
    return cmd, ctx


@pytest.mark.parametrize("cmd", [c for c in COMMANDS if c and c != ["whatif"]
                                 and c != ["workload"]], ids=" ".join)
def test_every_option_with_a_default_shows_it(cmd):
    command, ctx = _options(main.app, cmd)
    for param in command.params:
        record = param.get_help_record(ctx)
        if record is None or param.name in NO_DEFAULT or getattr(param, "required", False):
            continue
        if getattr(param, "is_flag", False) and not getattr(param, "secondary_opts", []):
            continue  # a plain switch (--quiet, --json): off unless given
        assert "[default:" in record[1], f"{' '.join(cmd)} --{param.name} shows no default"


@pytest.mark.parametrize("argv, flag", [
    (["plan", "--no-such-flag"], "--no-such-flag"),
    (["plan", "--budget", "cheap"], "'--budget'"),
    (["simulate", "somewhere", "-n", "x"], "'--requests'"),
    (["perf", "--gpus"], "'--gpus'"),
])
def test_usage_errors_are_one_line_naming_the_flag(run_cli, argv, flag):
    rc, out, err = run_cli(*argv)
    assert rc == 2 and out == ""
    assert err.startswith("error: ") and err.count("\n") == 1 and flag in err


def test_solving_commands_silence_the_banner_first(run_cli, monkeypatch, small_inventory):
    calls = []
    monkeypatch.setattr(main, "silence_solver_banners", lambda: calls.append(1))
    run_cli("plan", "--inventory", str(small_inventory), "--budget", "-1")
    assert calls == [1]
    run_cli("perf", "--gpus", "0")
    run_cli("plan", "--help")
    assert calls == [1]  # neither the perf model nor --help loads a solver
    main.run(["--budget", "-1"], command=main.plan_app, prog="plan")
    assert calls == [1, 1]


_PULP_HIGHS = ("import pulp; p = pulp.LpProblem('x', pulp.LpMaximize); "
               "x = pulp.LpVariable('x', 0, 1, cat='Integer'); p += x; p += x <= 1; "
               "p.solve(pulp.HiGHS(msg=False)); print('solved', x.varValue)")


@pytest.mark.parametrize("silence", [False, True])
def test_no_highs_banner_after_silencing(silence):
    """HiGHS writes its banner to fd 1 on the first solver a process builds -- here
    PuLP's, which sets no option first.  Silenced, only our own output remains."""
    code = ("from planner.cli.main import silence_solver_banners; "
            "silence_solver_banners(); " if silence else "") + _PULP_HIGHS
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=60)
    assert "solved 1.0" in proc.stdout
    assert ("HiGHS" in proc.stdout) is not silence  # the control shows the banner


def test_pulp_highs_backend_prints_no_banner():
    """The inner ``pulp-highs`` back-end primes HiGHS itself, for scripts that never pass
    through the CLI."""
    code = ("from planner.inner.model import MILPBuilder; "
            "from planner.inner.backends import solve_model; b = MILPBuilder(); "
            "x = b.add_cols('x', 1, cost=1.0, upper=1.0, integer=True); "
            "b.add_rows(1, [0], x, 1.0, upper=1.0); "
            "print('solved', solve_model(b.build(), 'pulp-highs').status)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=60)
    assert proc.stdout == "solved optimal\n"


def test_simulate_progress_shows_requests_and_simulated_time():
    from planner.cli.progress import sim_bars

    buf = io.StringIO()
    term = Console(file=buf, force_terminal=True, width=120)
    progress, bar = sim_bars(term, quiet=False)
    with progress:
        bar("range")(1_234, 20_000, 26.75)
        progress.refresh()
    shown = buf.getvalue()
    assert "1,234 of 20,000 requests done" in shown and "26.8 s simulated" in shown
    for console, quiet in ((term, True), (Console(file=io.StringIO()), False)):
        assert sim_bars(console, quiet)[0].disable  # --quiet, or not a terminal
