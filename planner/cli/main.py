"""Entry point of the ``planner`` command."""

from __future__ import annotations

import re
import sys

import typer
from typer.exceptions import TyperException

from planner.cli import export as export_cmd
from planner.cli import perf as perf_cmd
from planner.cli import plan as plan_cmd
from planner.cli import report as report_cmd
from planner.cli import simulate as simulate_cmd
from planner.cli import whatif as whatif_cmd
from planner.cli import workload as workload_cmd
from planner.core.errors import PlannerError

#: Help is click's plain layout (``rich_markup_mode=None``): it wraps at the terminal's
#: width and never cuts a word, where the rich panels cut long ones ("inventories/gpus.…")
#: in an 80-column terminal or a pipe.
HELP_LAYOUT: dict = {"rich_markup_mode": None}

app = typer.Typer(
    name="planner",
    help="Capacity planner for LLM serving on heterogeneous GPU fleets.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    **HELP_LAYOUT,
)
# one-line summaries for `planner --help` (click would cut the docstrings' first lines)
app.command("plan", short_help="Plan GPUs, islands, roles and ranges for a budget "
            "(also `plan`).")(plan_cmd.plan)
app.command("perf", short_help="The perf model's answer for one island and request "
            "shape.")(perf_cmd.perf)
app.command("report", short_help="Re-render a run folder's report from its "
            "plan.json.")(report_cmd.report)
app.command("simulate", short_help="Simulate a plan: latency, SLO attainment, completed "
            "rate.")(simulate_cmd.simulate)
app.command("export", short_help="Launch files for the plan's engine, a router config, "
            "Kubernetes manifests.")(export_cmd.export)
app.command("whatif", short_help="Procurement what-ifs: budgets, prices, types, "
            "workloads.")(whatif_cmd.whatif)
app.add_typer(workload_cmd.app, name="workload", short_help="List, show and fit "
              "workloads (length distributions).")

#: The short ``plan`` console script: the one command, so its usage reads ``plan
#: [OPTIONS]`` (through ``app`` it read ``plan plan``).
plan_app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, **HELP_LAYOUT)
plan_app.command()(plan_cmd.plan)

#: Commands that solve MILPs: HiGHS's banner is silenced before they start.
SOLVING = ("plan", "whatif")


def silence_solver_banners() -> None:
    """Make HiGHS print its copyright banner nowhere.

    highspy writes "Running HiGHS ... Copyright ..." to file descriptor 1 the first time
    a ``Highs`` object is built in a process, whoever builds it -- our own solves
    (``planner.inner.highs.new_highs``) or PuLP's ``pulp.HiGHS`` (the seed solvers and
    the ``pulp-highs`` back-end).  ``new_highs`` builds that first object with fd 1 on
    /dev/null, so priming it once here, before the command runs, covers every later
    solver in the process.  Only the banner goes: solver messages stay off through
    ``output_flag``/``msg=False`` as before, and errors still raise."""
    from planner.inner.highs import new_highs

    new_highs()


def run(argv: list[str] | None = None, *, command: typer.Typer | None = None,
        prog: str = "planner") -> int:
    """Run the CLI and return its exit status.

    A :class:`PlannerError` becomes one line on stderr and its exit status; a usage
    error from the argument parser (an unknown flag, a value of the wrong type) too,
    naming the flag, with exit 2; Ctrl-C is 130.  ``command`` is the Typer app to run
    (``app``; ``plan_app`` for the ``plan`` script) and ``prog`` the name its usage
    lines show.
    """
    code = _run(argv, command, prog)
    _exit_cleanly_after_an_interrupted_solve(code)
    return code


def _exit_cleanly_after_an_interrupted_solve(code: int) -> None:
    """After an interrupted HiGHS solve the interpreter's teardown can abort in HiGHS's
    worker threads (C++ "terminate called", exit 134 instead of 130).  So the process
    then ends, at exit, with ``os._exit(code)`` once its output is flushed -- whoever
    exits it (the console script, ``sys.exit(run(...))``): every file of the run was
    written or removed before ``run`` returned."""
    import atexit
    import os

    from planner.inner.backends import INTERRUPTED

    if INTERRUPTED.is_set():
        def leave() -> None:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)

        atexit.register(leave)


def _run(argv: list[str] | None, command: typer.Typer | None, prog: str) -> int:
    command = command or app
    args = list(sys.argv[1:] if argv is None else argv)
    solving = command is plan_app or bool(args and args[0] in SOLVING)
    if solving and not {"--help", "-h"} & set(args):
        silence_solver_banners()
    try:
        result = command(args=args, prog_name=prog, standalone_mode=False)
    except PlannerError as err:
        print(f"error: {one_line(str(err))}", file=sys.stderr)
        return err.exit_code
    except typer.Exit as err:
        return err.exit_code
    except (typer.Abort, KeyboardInterrupt):
        print("interrupted", file=sys.stderr)
        return 130
    except TyperException as err:  # bad flags, missing arguments, wrong types
        if type(err).__name__ == "NoArgsIsHelpError":  # `planner`, `planner workload`
            print(err.format_message(), file=sys.stderr)  # the help, as click shows it
            print("error: no command given (see the commands above)", file=sys.stderr)
        else:
            print(f"error: {one_line(_usage_message(err))}", file=sys.stderr)
        return err.exit_code
    return result if isinstance(result, int) else 0


#: The longest error line printed; longer messages are cut in the middle, saying how long
#: they were.
MAX_ERROR_CHARS = 2000
#: The longest run of non-blank characters shown whole: longer ones are values echoed
#: back (a 10,000-character GPU name, a file pasted as a flag) and are cut at the value,
#: keeping its ends and its length, so the words around it -- the flag, the file, the
#: field -- stay readable.
MAX_VALUE_CHARS = 240
_LONG_VALUE = re.compile(rf"\S{{{MAX_VALUE_CHARS + 1},}}")


def _cut_value(match: re.Match[str]) -> str:
    value = match.group(0)
    return f"{value[:160]}...[{len(value):,} characters]...{value[-40:]}"


def one_line(message: str) -> str:
    """``message`` as one printable line: control characters escaped (a newline in a GPU
    name would otherwise split the error), each value longer than
    :data:`MAX_VALUE_CHARS` cut with its length stated, and the line cut to
    :data:`MAX_ERROR_CHARS`."""
    text = "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii")
                   for ch in message)
    text = _LONG_VALUE.sub(_cut_value, text)
    if len(text) > MAX_ERROR_CHARS:
        keep = MAX_ERROR_CHARS // 2
        text = (f"{text[:keep]} ... [{len(text) - 2 * keep:,} characters cut; "
                f"{len(text):,} in all] ... {text[-keep:]}")
    return text


def _usage_message(err: TyperException) -> str:
    """click's message on one line, with the command whose --help explains it."""
    message = " ".join(err.format_message().split())
    ctx = getattr(err, "ctx", None)
    if ctx is not None:
        message += f" (see {ctx.command_path} --help)"
    return message


def main() -> None:
    sys.exit(run(sys.argv[1:]))


def plan_main() -> None:
    """The short `plan` command: `plan --inventory gpus.yaml --budget 512`."""
    sys.exit(run(sys.argv[1:], command=plan_app, prog="plan"))
