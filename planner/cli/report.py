"""`planner report RUN_DIR`: redraw a run folder's tables, plots and pages from its
plan.json, without re-solving, and print the plan's summary."""

from __future__ import annotations

from pathlib import Path

import typer

from planner.cli.console import results_console


def report(
    run_dir: Path = typer.Argument(..., help="A run folder written by `planner plan` "
                                   "(it holds plan.json, or fleet.json for a fleet); its "
                                   "plan.json is checked as strictly as the planner writes "
                                   "it (docs/plan-schema.md, docs/limits.md).",
                                   metavar="RUN_DIR"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Do not print the summary."),
) -> None:
    """Re-render report.html, report.md, the CSV tables and the plots from plan.json."""
    # imported here so that other commands do not pay for matplotlib at start-up
    from planner.report import load_plan, render_report, summary_text
    from planner.schedule.run import is_schedule_run
    from planner.services.run import is_fleet_run

    if is_schedule_run(run_dir):  # a profile run: report.md, schedule.csv and the chart
        from planner.cli.profile_plan import summary_lines as schedule_lines
        from planner.schedule.run import rerender_schedule

        run, written = rerender_schedule(run_dir)
        if not quiet:
            for line in schedule_lines(run):
                print(line)
        print(f"re-rendered {len(written)} files in {run_dir}; open {run_dir / 'report.md'}")
        return
    if is_fleet_run(run_dir):  # a fleet: its report and every service's
        from planner.cli.fleet import summary_lines
        from planner.services.run import rerender_fleet

        fleet, written = rerender_fleet(run_dir)
        if not quiet:
            for line in summary_lines(fleet):
                print(line)
        print(f"re-rendered {len(written)} files in {run_dir}; open {run_dir / 'report.html'}")
        return
    written = render_report(run_dir)
    console = results_console()
    if not quiet:
        console.print(summary_text(load_plan(run_dir / "plan.json")))
    html = next((p for p in written if p.name == "report.html"), None)
    console.print(f"re-rendered {len(written)} files in {run_dir}"
                  + (f"; open {html}" if html else ""), highlight=False)
