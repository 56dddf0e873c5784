"""`planner report RUN_DIR`: redraw a run folder's tables, plots and pages from its
plan.json, without re-solving, and print the plan's summary."""

from __future__ import annotations

from pathlib import Path

import typer

from planner.cli.console import results_console


def report(
    run_dir: Path = typer.Argument(..., help="A run folder written by `planner plan` "
                                   "(it holds plan.json).", metavar="RUN_DIR"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Do not print the summary."),
) -> None:
    """Re-render report.html, report.md, the CSV tables and the plots from plan.json."""
    # imported here so that other commands do not pay for matplotlib at start-up
    from planner.report import load_plan, render_report, summary_text

    written = render_report(run_dir)
    console = results_console()
    if not quiet:
        console.print(summary_text(load_plan(run_dir / "plan.json")))
    html = next((p for p in written if p.name == "report.html"), None)
    console.print(f"re-rendered {len(written)} files in {run_dir}"
                  + (f"; open {html}" if html else ""), highlight=False)
