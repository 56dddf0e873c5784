"""`planner export` of a schedule run: launch files and the hour-by-hour schedule.

    EXPORT/<stream>/...      what `planner export` writes for the stream's busiest-slot
                             plan (RUN/streams/<stream>/plan.json): one launch file per
                             island, host variables prefixed by the stream
    EXPORT/schedule.csv      slot, start hour, stream, island, GPU, size, role, tier, up:
                             which of those islands run in every slot
    EXPORT/README.md         how to drive the schedule

The busiest slot runs the most islands of the schedule; every other slot runs some of
them.  A slot's islands are matched to the launch files' islands of the same GPU and
size, those of the same role first.  An island whose role in the slot is not its launch
file's (``launch_role``) changes role: restart it with the other role's engine flags,
``startup_s`` ahead like any start.  A slot that needs more islands of a GPU and size
than the busiest slot has gets rows with island ``extra``: start one more copy of a
launch file of that GPU and size (the README says so).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from planner.export import export_files
from planner.run.schema import load_plan
from planner.schedule.run import STREAMS, load_schedule_run
from planner.services.export import (
    _k8s_named,
    _prefixed,
    env_prefix,
    fleet_placement,
    k8s_prefix,
)

_TEXT = (".json", ".yaml", ".yml", ".md", ".sh", ".txt")
FIELDS = ("slot", "start_h", "hours", "stream", "island", "gpu", "size", "role",
          "launch_role", "tier")
Pool = dict[tuple[str, int], list[tuple[str, str]]]


def _pool(plan: dict[str, Any]) -> Pool:
    """(island name, launch role) of the launch files by (GPU, size), in plan order."""
    out: Pool = {}
    for i, isl in enumerate(x for x in plan["islands"] if x["role"] != "idle"):
        out.setdefault((str(isl["gpu"]), int(isl["size"])), []).append(
            (f"island-{i:02d}", str(isl["role"])))
    return out


def schedule_rows(run: dict[str, Any], pools: dict[str, Pool]) -> list[dict[str, Any]]:
    """Every island up in every slot, named after its launch file where there is one
    (module docstring: same GPU and size, same role first)."""
    rows = []
    for slot in run["schedule"]["slots"]:
        free = {s: {k: list(v) for k, v in p.items()} for s, p in pools.items()}
        wanted = []
        for isl in slot["islands"]:
            for tier in ("reserved", "on_demand", "spot"):
                wanted += [(isl, tier)] * int(isl[tier])
        # same-role matches first, so that a role change is only where one is needed
        wanted.sort(key=lambda w: not any(r == w[0]["role"] for _, r in free.get(
            w[0]["stream"], {}).get((w[0]["gpu"], int(w[0]["size"])), [])))
        for isl, tier in wanted:
            names = free.get(isl["stream"], {}).get((isl["gpu"], int(isl["size"])), [])
            pick = next((k for k, (_, r) in enumerate(names) if r == isl["role"]),
                        0 if names else None)
            name, launch = names.pop(pick) if pick is not None else ("extra", isl["role"])
            rows.append({"slot": slot["slot"], "start_h": slot["start_h"],
                         "hours": slot["hours"], "stream": isl["stream"], "island": name,
                         "gpu": isl["gpu"], "size": int(isl["size"]), "role": isl["role"],
                         "launch_role": launch, "tier": tier})
    rows.sort(key=lambda r: (r["slot"], r["stream"], r["island"]))
    return rows


def schedule_export_files(run_dir: Path | str, fmt: str = "shell") -> dict[str, bytes]:
    """Every file of a schedule run's export in ``fmt``; nothing is written."""
    run_dir = Path(run_dir)
    run = load_schedule_run(run_dir)
    out: dict[str, bytes] = {}
    # a stream with no load in the busiest slot has no plan; the others' islands share
    # the servers the schedule buys
    plans = {stream: load_plan(run_dir / STREAMS / stream / "plan.json")
             for stream in run["streams"]
             if (run_dir / STREAMS / stream / "plan.json").is_file()}
    placements = fleet_placement(plans)
    pools = {}
    for stream, plan in plans.items():
        folder = run_dir / STREAMS / stream
        pools[stream] = _pool(plan)
        _dep, files = export_files(folder, fmt, placements[stream])
        for fname, data in files.items():
            if fname.endswith(_TEXT):
                data = _prefixed(data, env_prefix(stream))
                if fmt == "k8s":
                    data = _k8s_named(data, k8s_prefix(stream))
            out[f"{stream}/{fname}"] = data
    rows = schedule_rows(run, pools)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(FIELDS), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    out["schedule.csv"] = buf.getvalue().encode("utf-8")
    extra = sum(1 for r in rows if r["island"] == "extra")
    changes = sum(1 for r in rows if r["island"] != "extra" and r["role"] != r["launch_role"])
    lines = [f"# Schedule {run['profile']['name']}: launch files", "",
             "One folder per workload stream, as `planner export` writes it for the "
             "stream's busiest-slot plan.  `schedule.csv` says which of those islands run "
             "in every slot and on which tier (reserved, on_demand, spot).",
             "", f"Start an island {run['startup_s']:g} s before its slot begins "
             f"({run['startup_source']}); stop it when the next slot no longer lists it.",
             ""]
    if extra:
        lines += [f"{extra} row(s) of schedule.csv name island `extra`: that slot needs "
                  "one more island of that GPU, size and role than the busiest slot has; "
                  "start another copy of a launch file of the same kind.", ""]
    if changes:
        lines += [f"{changes} row(s) run an island in another role than its launch file's "
                  "(`role` is not `launch_role`): restart it with that role's engine flags "
                  "before the slot, like a start.", ""]
    out["README.md"] = ("\n".join(lines) + "\n").encode("utf-8")
    return out


__all__ = ["schedule_export_files", "schedule_rows"]
