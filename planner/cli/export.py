"""`planner export RUN_DIR`: a plan as launch files for its engine, a router
configuration and Kubernetes manifests (planner.export; docs/deployment.md, "Export").

    planner export runs/plan                     # RUN_DIR/export/: island scripts, router.json
    planner export runs/plan --format k8s --out deploy/

A plan.json from another version or edited to break a rule is one line naming the file
and the field, exit 2; a plan whose engine cannot start one of its islands is one line
naming the island and the rule, exit 1.  Either way nothing is written.
"""

from __future__ import annotations

from pathlib import Path

import typer

from planner.cli.console import results_console


def export(
    run_dir: Path = typer.Argument(..., help="A run folder written by `planner plan` "
                                   "(it holds plan.json, or fleet.json for a fleet; "
                                   "checked: docs/limits.md).",
                                   metavar="RUN_DIR"),
    fmt: str = typer.Option("shell", "--format", help="shell: one launch script per island, "
                            "router.json and a README; k8s: manifests.yaml (Deployments, "
                            "LeaderWorkerSets, Services, ConfigMaps) and router.json."),
    out: str | None = typer.Option(None, "--out", help="Folder to write (created in one "
                                   "step).", show_default="RUN_DIR/export"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print only the folder written."),
) -> None:
    """Write launch commands for the plan's engine, a router configuration and (with
    --format k8s) Kubernetes manifests."""
    from planner.core.errors import PlannerError
    from planner.export import FORMATS, export_files
    from planner.run.files import check_run_folder, publish

    if fmt not in FORMATS:
        raise PlannerError(f"--format: {fmt!r} is not a format ({', '.join(FORMATS)})")
    target = Path(out) if out is not None else run_dir / "export"
    check_run_folder(out if out is not None else target,  # a str: Path("") would be "."
                     "--out", run_file="router.json")
    from planner.schedule.run import is_schedule_run
    from planner.services.run import is_fleet_run

    if is_schedule_run(run_dir):  # a profile run (planner plan --profile)
        from planner.schedule.export import schedule_export_files

        written = publish(schedule_export_files(run_dir, fmt), target)
        results_console().print(f"wrote {len(written)} files in {target}; start with "
                                f"{target / 'README.md'}", highlight=False, soft_wrap=True)
        return
    if is_fleet_run(run_dir):  # several services (planner plan --fleet)
        from planner.services.export import fleet_export_files

        written = publish(fleet_export_files(run_dir, fmt), target)
        results_console().print(f"wrote {len(written)} files in {target}; start with "
                                f"{target / 'README.md'}", highlight=False, soft_wrap=True)
        return
    dep, files = export_files(run_dir, fmt)
    written = publish(files, target)
    console = results_console()
    if not quiet:
        console.print(f"{len(dep.islands)} islands on {dep.servers} servers, "
                      f"{dep.engine.label}, {dep.model_path}", highlight=False)
    console.print(f"wrote {len(written)} files in {target}"
                  + (f"; start with {target / 'README.md'}" if fmt == "shell" else ""),
                  highlight=False, soft_wrap=True)
