"""``planner export RUN_DIR``: a plan as files a cluster runs (issue 27, item 5).

* :mod:`~planner.export.deployment` -- plan.json read once (through the run folder's
  reader) and checked for what a launch needs;
* :mod:`~planner.export.engines` -- each island's launch command for the engine the plan
  was priced with (SGLang 0.5, vLLM 0.24, TensorRT-LLM 1.3), flags checked against the
  lists in ``data/``;
* :mod:`~planner.export.router` -- router.json: each length range's islands and weights,
  prefill -> decode pairs, the simulator's range-router weights;
* :mod:`~planner.export.shell` / :mod:`~planner.export.k8s` -- the two formats.

It sits with the report and the what-if studies (layer 10): it reads plan dicts
(``planner.run``) and builds the simulator's cluster for the router weights
(``planner.sim``).
"""

from __future__ import annotations

from pathlib import Path

from planner.export.deployment import CannotLaunch, LaunchPlan, Placement, read_deployment

FORMATS = ("shell", "k8s")


def export_files(run_dir: Path | str, fmt: str = "shell", placement: Placement | None = None
                 ) -> tuple[LaunchPlan, dict[str, bytes]]:
    """(the deployment, file name -> content) of ``RUN_DIR``'s export in ``fmt``;
    nothing is written.  ``placement``: where its servers and ports sit among other
    plans' (a fleet's services, :class:`~planner.export.deployment.Placement`)."""
    if fmt not in FORMATS:
        from planner.core.errors import PlannerError

        raise PlannerError(f"--format: {fmt!r} is not a format ({', '.join(FORMATS)})")
    dep = read_deployment(run_dir, placement)
    if fmt == "shell":
        from planner.export.shell import shell_files

        return dep, shell_files(dep)
    import json

    from planner.export.k8s import manifests_text
    from planner.export.router import router_config

    router = router_config(dep, lambda i: f"http://{i.name}:{i.port}")
    return dep, {"manifests.yaml": manifests_text(dep).encode(),
                 "router.json": (json.dumps(router, indent=1) + "\n").encode()}


def export_run(run_dir: Path | str, fmt: str = "shell",
               out: Path | str | None = None) -> list[Path]:
    """Write ``RUN_DIR``'s export into ``out`` (default ``RUN_DIR/export``) in one step
    (:func:`planner.run.files.publish`: the folder appears whole, or not at all);
    returns the paths written.  A folder that holds files but no router.json is
    refused before any work."""
    from planner.run.files import check_run_folder, publish

    target = Path(out) if out is not None else Path(run_dir) / "export"
    check_run_folder(target, "--out", run_file="router.json")
    _, files = export_files(run_dir, fmt)
    return publish(files, target)


__all__ = ["FORMATS", "CannotLaunch", "LaunchPlan", "Placement", "export_files",
           "export_run", "read_deployment"]
