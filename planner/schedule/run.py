"""A schedule run folder: schedule.json, schedule.csv, report.md and the chart.

The folder is published whole or not at all (:func:`planner.run.files.publish`).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from perfmodel.errors import at, check_number
from planner.core.errors import PlannerError
from planner.core.names import check_distinct, check_name
from planner.run import files
from planner.run.schema import MAX_FIGURE
from planner.schedule.report_data import CSV_FIELDS, csv_rows
from planner.sim.closed_loop import HEADROOM

SCHEDULE_FILE = "schedule.json"
SCHEDULE_SCHEMA = "hetero-planner/schedule/1"


def savings(bill: float, base: Mapping[str, Any]) -> dict[str, float | None]:
    """Saving of the plan's period cost against each baseline (fraction of its cost)."""
    out: dict[str, float | None] = {}
    for name, b in base.items():
        out[name] = None if b is None else 1.0 - bill / float(b["bill"]["total"])
    return out


def _csv(data: Mapping[str, Any]) -> bytes:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(CSV_FIELDS), lineterminator="\n")
    w.writeheader()
    for row in csv_rows(data):
        w.writerow(row)
    return buf.getvalue().encode()


def _money(x: float | None) -> str:
    return "-" if x is None else f"${x:,.0f}"


def _slo_text(slo: Mapping[str, Any]) -> str:
    """``TTFT 2000 ms, TPOT 50 ms``; a ceiling a run planned without (``--no-slo``) is
    null, and says so."""
    parts = [f"{k} {slo[key]:g} ms" for k, key in (("TTFT", "ttft_ms"), ("TPOT", "tpot_ms"))
             if slo.get(key) is not None]
    return ", ".join(parts) if parts else "none (no latency ceilings)"


def render_markdown(run: Mapping[str, Any]) -> str:
    s = run["schedule"]
    bill = s["bill"]
    prof = run["profile"]
    lines = [f"# Schedule: {run['model']} over profile {prof['name']}", "",
             f"{len(s['slots'])} slots over {prof['period_hours']:g} h; peak "
             f"{run['summary']['peak_rps']:,.1f} requests/s, mean "
             f"{run['summary']['mean_rps']:,.1f}.  SLO: {_slo_text(run['slo'])}.  Islands start "
             f"{run['startup_s']:g} s before their slot ({run['startup_source']}).", "",
             "## Cost of the period", "",
             "| | reserved | on demand | spot | of which start-ups | total | saving |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    rows = [("this schedule", bill, None)] + [
        (name.replace("_", " "), b["bill"] if b else None, run["savings"].get(name))
        for name, b in run["baselines"].items()]
    for name, b, save in rows:
        if b is None:
            lines.append(f"| {name} | cannot serve the profile within the tier caps "
                         "| | | | | |")
            continue
        lines.append(f"| {name} | {_money(b['reserved'])} | {_money(b['on_demand'])} | "
                     f"{_money(b['spot'])} | {_money(b['startup'])} | "
                     f"{_money(b['total'])} | "
                     + ("" if save is None else f"{100 * save:+.1f} % vs this") + " |")
    lines += ["", "Savings are the schedule's cost below each baseline's: (a) reserved "
              "islands alone, sized so that every slot (the peak) is served; (b) on-demand "
              "islands alone, scaled slot by slot.  Both are planned on the same tables "
              "and rules.", "", "## Reserved fleet", "",
              "| stream | GPU | size | role | islands |", "|---|---|---:|---|---:|"]
    for r in s["reserved"]:
        lines.append(f"| {r['stream']} | {r['gpu']} | {r['size']} | {r['role']} | "
                     f"{r['islands']} |")
    checks = run.get("checks") or []
    if checks:
        worst = min(c["attainment"] for c in checks)
        lines += ["", "## The promise, slot by slot", "",
                  f"The {len({c['slot'] for c in checks})} slots of the busiest day were "
                  f"simulated on unseen seeds ({run['hold_rounds']} round(s); a slot whose "
                  f"islands have less than {HEADROOM:.0%} to spare on as many seeds as a "
                  f"static headline); the lowest SLO attainment is {100 * worst:.2f} %.", "",
                  "| slot | stream | rate (req/s) | seed | SLO attainment |",
                  "|---:|---|---:|---:|---:|"]
        for c in checks:
            lines.append(f"| {c['slot']} | {c['stream']} | {c['rate_rps']:,.2f} | "
                         f"{c.get('seed', '')} | {100 * c['attainment']:.2f} % |")
    if run.get("scenarios"):
        pr = run["procurement"]
        lines += ["", "## Scenarios (drift)", "",
                  f"One reserved fleet for every scenario, kept by the {pr['rule']}: "
                  f"**{pr['kept']}**.  Regret: the scenario's cost with this fleet less its "
                  "cost with the fleet planned for it alone.", "",
                  "| scenario | peak (req/s) | cost | own fleet's cost | regret | lowest SLO "
                  "attainment |", "|---|---:|---:|---:|---:|---:|"]
        for sc in run["scenarios"]:
            low = sc["lowest_attainment"]
            lines.append(f"| {sc['name']} | {sc['peak_rps']:,.1f} | "
                         f"{_money(sc['bill']['total'])} | {_money(sc['own_bill'])} | "
                         f"{_money(sc['regret'])} | "
                         + ("-" if low is None else f"{100 * low:.2f} %") + " |")
        lines += ["", "| candidate reserved fleet | worst-case regret |", "|---|---:|"]
        for c in pr["candidates"]:
            lines.append(f"| {c['label']} | {_money(c['worst_regret'])} |")
    lines += ["", "## Schedule", "", "Every slot's GPUs up by type and tier (the full "
              "table, one row per island kind and slot: schedule.csv).", "",
              "| slot | start (h) | demand (req/s) | GPUs up (reserved + on demand + spot) |",
              "|---:|---:|---:|---|"]
    for slot in s["slots"]:
        up = ", ".join(f"{g} {v['reserved']}+{v['on_demand']}+{v['spot']}"
                       for g, v in slot["gpus"].items()
                       if v["reserved"] + v["on_demand"] + v["spot"])
        lines.append(f"| {slot['slot']} | {slot['start_h']:g} | "
                     f"{sum(slot['demand_rps'].values()):,.2f} | {up} |")
    lines += ["", "![demand and capacity](schedule.png)", ""]
    return "\n".join(lines)


def render_chart(run: Mapping[str, Any]) -> bytes:
    """Hour by hour: demand against the GPUs up per type (stacked), PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    slots = run["schedule"]["slots"]
    x = [s["start_h"] for s in slots]
    demand = [sum(s["demand_rps"].values()) for s in slots]
    cap = [sum(s["capacity_rps"].values()) for s in slots]
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(10, 6), sharex=True)
    a1.step(x, demand, where="post", label="demand")
    a1.step(x, cap, where="post", label="capacity on the tables (at least)")
    a1.set_ylabel("requests/s")
    a1.legend(loc="upper right")
    types = sorted({g for s in slots for g in s["gpus"]})
    bottom = [0.0] * len(slots)
    for g in types:
        for tier in ("reserved", "on_demand", "spot"):
            v = [float(s["gpus"].get(g, {}).get(tier, 0)) for s in slots]
            if any(v):
                a2.bar(x, v, width=[s["hours"] for s in slots], bottom=bottom, align="edge",
                       label=f"{g} {tier.replace('_', ' ')}")
                bottom = [b + w for b, w in zip(bottom, v, strict=True)]
    a2.set_ylabel("GPUs up")
    a2.set_xlabel("hour of the period")
    a2.legend(loc="upper right", fontsize=7, ncol=3)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    return buf.getvalue()


#: The folder of every stream's busiest-slot plan (what ``planner export`` launches).
STREAMS = "streams"


def write_schedule_run(run: Mapping[str, Any], plans: Mapping[str, Mapping[str, Any]],
                       run_dir: Path) -> list[Path]:
    """Publish the schedule run folder (complete, or not at all)."""
    from planner.run.schema import dumps_plan

    body = {"schema": SCHEDULE_SCHEMA, **run}
    out = {SCHEDULE_FILE: json.dumps(body, indent=2, allow_nan=False).encode(),
           "schedule.csv": _csv(run["schedule"]),
           "report.md": render_markdown(run).encode(),
           "schedule.png": render_chart(run)}
    for name, plan in plans.items():
        out[f"{STREAMS}/{name}/plan.json"] = dumps_plan(dict(plan)).encode()
    return files.publish(out, Path(run_dir))


def rerender_schedule(run_dir: Path | str) -> tuple[dict[str, Any], list[Path]]:
    """report.md, schedule.csv and schedule.png redrawn from schedule.json."""
    from planner.core.atomic import write_bytes_atomic

    run = load_schedule_run(run_dir)
    out = {"schedule.csv": _csv(run["schedule"]), "report.md": render_markdown(run).encode(),
           "schedule.png": render_chart(run)}
    written = []
    for name, data in out.items():
        write_bytes_atomic(Path(run_dir) / name, data)
        written.append(Path(run_dir) / name)
    return run, written


def is_schedule_run(run_dir: Path | str) -> bool:
    return (Path(run_dir) / SCHEDULE_FILE).is_file()


def load_schedule_run(run_dir: Path | str) -> dict[str, Any]:
    from perfmodel.reading import read_json

    path = Path(run_dir) / SCHEDULE_FILE
    data = read_json(path, "schedule run file")
    if not isinstance(data, dict) or data.get("schema") != SCHEDULE_SCHEMA:
        raise PlannerError(f"{path}: field 'schema' must be {SCHEDULE_SCHEMA!r}")
    for key in ("schedule", "profile", "request"):
        if not isinstance(data.get(key), dict):
            raise PlannerError(f"{path}: field '{key}' is missing or not a mapping")
    for key in ("summary", "slo"):
        if not isinstance(data.get(key), dict):
            raise PlannerError(f"{path}: field '{key}' is missing or not a mapping")
    for key in ("peak_rps", "mean_rps"):  # the report's headline
        check_number(data["summary"].get(key), at(f"{path}: field 'summary.{key}'"), ge=0,
                     le=MAX_FIGURE)
    check_number(data.get("startup_s"), at(f"{path}: field 'startup_s'"), ge=0,
                 le=MAX_FIGURE)
    streams = data.get("streams")
    if not isinstance(streams, dict) or not streams:
        raise PlannerError(f"{path}: field 'streams' must be a non-empty mapping")
    for stream in streams:  # each is read as a folder of the run
        check_name(stream, str(path), "streams", "the stream's folder")
    check_distinct(streams, str(path), "streams")
    return data


__all__ = ["SCHEDULE_FILE", "is_schedule_run", "load_schedule_run", "render_markdown",
           "savings", "write_schedule_run"]
