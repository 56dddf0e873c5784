"""Entry point of the ``planner`` command."""

from __future__ import annotations

import sys

import typer
from typer.exceptions import TyperException

from planner.cli import perf as perf_cmd
from planner.cli import plan as plan_cmd
from planner.cli import report as report_cmd
from planner.cli import simulate as simulate_cmd
from planner.cli import whatif as whatif_cmd
from planner.cli import workload as workload_cmd
from planner.errors import PlannerError

app = typer.Typer(
    name="planner",
    help="Capacity planner for LLM serving on heterogeneous GPU fleets.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.command("plan")(plan_cmd.plan)
app.command("perf")(perf_cmd.perf)
app.command("report")(report_cmd.report)
app.command("simulate")(simulate_cmd.simulate)
app.command("whatif")(whatif_cmd.whatif)
app.add_typer(workload_cmd.app, name="workload")


def run(argv: list[str] | None = None) -> int:
    """Run the CLI and return its exit status.

    A :class:`PlannerError` becomes one line on stderr and its exit status; a usage error
    from the argument parser is shown as the parser formats it (exit 2); Ctrl-C is 130.
    """
    try:
        result = app(args=argv, standalone_mode=False)
    except PlannerError as err:
        print(f"error: {err}", file=sys.stderr)
        return err.exit_code
    except typer.Exit as err:
        return err.exit_code
    except (typer.Abort, KeyboardInterrupt):
        print("interrupted", file=sys.stderr)
        return 130
    except TyperException as err:  # bad flags, missing arguments, wrong types
        if hasattr(err, "show"):
            err.show()
        else:
            print(f"error: {err.format_message()}", file=sys.stderr)
        return err.exit_code
    return result if isinstance(result, int) else 0


def main() -> None:
    sys.exit(run(sys.argv[1:]))


def plan_main() -> None:
    """The short `plan` command: `plan --inventory gpus.yaml --budget 512`."""
    sys.exit(run(["plan", *sys.argv[1:]]))
