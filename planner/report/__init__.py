"""The report layer: a plan dict (docs/plan-schema.md) -> a run folder a person can read.

A run folder holds::

    plan.json            the plan, machine-readable (schema_version 1)
    islands.csv ranges.csv per_length.csv history.csv baselines.csv
    islands.png assignment.png per_length.png convergence.png
    report.md            Markdown, plots linked as the PNGs beside it
    report.html          one self-contained page, plots embedded

:func:`write_run` writes all of it; :func:`render_report` redraws everything but
``plan.json`` from an existing folder (``planner report RUN_DIR``), without re-solving;
:func:`summary_text` is the terminal summary.  Both writers render everything in
memory from the *JSON round trip* of the plan — what ``plan.json`` will hold — so a
re-render of an unchanged folder reproduces its files byte for byte, then publish
atomically (see :mod:`planner.run.files`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from planner.core.errors import PlannerError
from planner.report import csv_tables, html, markdown, plots, sim_section
from planner.report.terminal import summary_plain, summary_text
from planner.run import files
from planner.run.schema import SCHEMA_VERSION, check_plan, dumps_plan, load_plan
from planner.run.simulations import load_index

__all__ = ["SCHEMA_VERSION", "RENDERED", "load_plan", "render_report", "rendered_run",
           "summary_plain", "summary_text", "write_run"]

PLAN_FILE = "plan.json"
RENDERED = (*csv_tables.TABLES, *plots.FIGURES, "report.md", "report.html")


def _render(plan: Mapping[str, Any], sims: list[dict[str, Any]] | None = None
            ) -> dict[str, bytes]:
    """Every file but plan.json, in memory; ``sims`` are the records of the run's
    simulation.json (the "Simulated latency" section, absent without them)."""
    sims = sims or []
    out = {name: text.encode("utf-8") for name, text in csv_tables.all_tables(plan).items()}
    pngs = plots.render_pngs(plan)
    out.update(pngs)
    sim_pngs = sim_section.sim_pngs(sims)
    out.update(sim_pngs)
    out["report.md"] = markdown.render_markdown(plan, sims).encode("utf-8")
    out["report.html"] = html.render_html(plan, pngs, sims, sim_pngs).encode("utf-8")
    return out


def _simulations(run_dir: Path) -> list[dict[str, Any]]:

    return load_index(run_dir)


def write_run(plan_dict: Mapping[str, Any], run_dir: Path) -> list[Path]:
    """Write plan.json, the CSV tables, the PNG plots, report.md and report.html into
    ``run_dir``; returns the paths written (plan.json first).

    ``run_dir`` absent or empty: it appears complete in one rename.  ``run_dir`` with
    files in it: same-named files are replaced one by one (atomically each), others are
    kept.  Nothing is left half-written if rendering fails or is interrupted.
    """
    run_dir = Path(run_dir)
    if run_dir.exists() and not run_dir.is_dir():  # before the work of rendering
        raise PlannerError(f"{run_dir}: exists and is not a folder")
    return files.publish(rendered_run(plan_dict, run_dir, _simulations(run_dir)), run_dir)


def rendered_run(plan_dict: Mapping[str, Any], run_dir: Path,
                 sims: list[dict[str, Any]] | None = None) -> dict[str, bytes]:
    """plan.json (checked against its schema) and every file rendered from it, in
    memory, by name: what :func:`write_run` publishes into ``run_dir`` (named in
    errors), and what a fleet run publishes for each of its services."""
    source = str(Path(run_dir) / PLAN_FILE)
    try:
        text = dumps_plan(plan_dict)
    except (TypeError, ValueError) as err:
        raise PlannerError(f"{source}: the plan is not JSON-serialisable: {err}") from None
    plan = json.loads(text)
    check_plan(plan, source)
    return {PLAN_FILE: text.encode("utf-8"), **_render(plan, sims)}


def render_report(run_dir: Path, extra: Mapping[str, bytes] | None = None,
                  sims: list[dict[str, Any]] | None = None) -> list[Path]:
    """Redraw every table, plot and page of ``run_dir`` from its plan.json (not
    re-solving); returns the paths written.  A missing folder or plan.json, invalid
    JSON, or an unknown/missing ``schema_version`` is a one-line :class:`PlannerError`
    naming the file and field.  ``extra`` files (a simulation's) are published in the
    same step, with ``sims`` the simulation index records the report should show
    (default: the folder's simulation.json)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise PlannerError(f"{run_dir}: " + ("is not a folder" if run_dir.exists()
                                             else "no such run folder"))
    plan = load_plan(run_dir / PLAN_FILE)
    try:
        rendered = _render(plan, _simulations(run_dir) if sims is None else sims)
    except PlannerError as err:  # a field of plan.json: say which file it is in
        if PLAN_FILE in str(err):
            raise
        raise PlannerError(f"{run_dir / PLAN_FILE}: {err}", exit_code=err.exit_code) from None
    return files.publish({**(extra or {}), **rendered}, run_dir)
