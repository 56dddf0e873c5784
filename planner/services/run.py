"""A fleet's run folder: fleet.json, the fleet report, and one run folder per service.

    OUT/fleet.json              the answer: what to buy, λ, every service's promise,
                                the joint plan against the best split, every round
    OUT/report.md, report.html  the fleet report (planner.services.report)
    OUT/services/NAME/          each service's run folder, as ``planner plan`` writes
                                one (plan.json, CSVs, plots, report) -- what
                                ``planner simulate`` and ``planner export`` read

Everything is published in one step (:func:`planner.run.files.publish`): the folder is
complete or absent.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from planner.core.errors import PlannerError
from planner.core.names import check_distinct, check_name
from planner.report import rendered_run
from planner.run import files
from planner.run.schema import load_plan
from planner.services.outcome import FleetOutcome, Outcome, fleet_band, gpus_of, rate_of
from planner.services.report import render_fleet_html, render_fleet_markdown
from planner.services.solve import FleetRequest

FLEET_FILE = "fleet.json"
FLEET_SCHEMA = "fleet/1"
SERVICES = "services"


def _num(x: Any) -> float | None:
    return float(x) if isinstance(x, int | float) and math.isfinite(x) else None


def _service_entry(req: FleetRequest, out: Outcome, name: str) -> dict[str, Any]:
    svc = req.fleet.service(name)
    plan = out.plans[name]
    s = plan["summary"]
    checks = out.checks.get(name) or []
    return {"name": name, "model": svc.model, "workload": svc.workload,
            "engine": plan["request"].get("engine"),
            "slo": {"ttft_ms": svc.slo.ttft_ms, "tpot_ms": svc.slo.tpot_ms},
            "share": svc.share, "target_rps": svc.target_rps,
            "requests_per_s": rate_of(req, out, name),
            "headline_requests_per_s": _num(s.get("requests_per_s")),
            "analytic_requests_per_s": _num(s.get("analytic_requests_per_s")),
            "cost_per_hour": float(s["cost_per_hour"]), "gpus": gpus_of(plan),
            "islands": sum(1 for i in plan["islands"] if i.get("role") != "idle"),
            "islands_from": out.sources.get(name, out.label),
            "slo_attainment_at_promise": [
                {"seed": c.get("seed"), "offered_rps": c.get("offered_rps"),
                 "attainment": c.get("attainment")} for c in checks],
            "folder": f"{SERVICES}/{name}"}


def _comparison(req: FleetRequest, res: FleetOutcome) -> dict[str, Any]:
    joint, split, milp = res.joint, res.split, res.milp

    def margin(a: Outcome | None) -> float | None:
        if a is None or split is None or a.rate <= 0:
            return None
        if req.targets:  # what the joint fleet saves on the split's cost
            return split.cost_per_hour / a.cost_per_hour - 1.0 if a.cost_per_hour > 0 \
                else None
        return a.rate / split.rate - 1.0 if split.rate > 0 else None

    out: dict[str, Any] = {"joint": joint.record() if joint else None,
                           "joint_sources": dict(joint.sources) if joint else None,
                           "joint_milp": milp.record() if milp else None,
                           "split": split.record() if split else None,
                           "margin": margin(joint), "milp_round_margin": margin(milp),
                           "milp_margin": None}
    if joint is None or split is None:
        return out
    first_joint = next((r for r in res.rounds if r["label"] == "joint, round 1"), None)
    first_split = next((r for r in res.rounds if r["label"] == "best split, round 1"), None)
    if first_joint and first_split and not req.targets and first_split["milp_lambda_rps"]:
        out["milp_margin"] = (first_joint["milp_lambda_rps"]
                              / first_split["milp_lambda_rps"] - 1.0)
    return out


def fleet_dict(req: FleetRequest, res: FleetOutcome, *, router: str, fleet_file: str,
               seconds: Mapping[str, float]) -> dict[str, Any]:
    """fleet.json's content (docs/fleet.md, "fleet.json")."""
    ans = res.answer
    avail = {e.name: e.count for e in req.inventory.entries}
    prices = {e.name: e.price_per_hour for e in req.inventory.entries}
    return {
        "schema": FLEET_SCHEMA,
        "fleet": req.fleet.to_dict(),
        "request": {"fleet_file": fleet_file, "inventory": req.inventory.to_dict(),
                    "budget": req.budget, "seed": req.seed, "ranges": req.ranges,
                    "router": router, "plan_at": req.plan_at, "colocated": req.colocated,
                    "search": req.search, "search_options": dict(req.search_options),
                    "island_granularity": req.island_granularity},
        "summary": {
            "mode": req.fleet.mode,
            "lambda_requests_per_s": None if req.targets else ans.rate,
            "targets_met": bool(req.targets and ans.rate > 0),
            "cost_per_hour": ans.cost_per_hour, "budget": req.budget,
            "gpus_used": ans.gpus(),
            "gpus_available": avail, "prices": prices,
            "answer_from": ans.label, "answer_kind": ans.kind,
            "answer_sources": dict(ans.sources),
            "capacity_band": None if req.targets else fleet_band(ans),
        },
        "services": [_service_entry(req, ans, s.name) for s in req.fleet.services],
        "comparison": _comparison(req, res),
        "rounds": res.rounds,
        "timings": {k: round(float(v), 3) for k, v in seconds.items()},
    }


def rendered_fleet(fleet: Mapping[str, Any], plans: Mapping[str, Mapping[str, Any]],
                   run_dir: Path) -> dict[str, bytes]:
    """Every file of a fleet run folder, in memory, by name."""
    text = json.dumps(fleet, indent=2, allow_nan=False)
    out: dict[str, bytes] = {}
    for name, plan in plans.items():
        where = Path(run_dir) / SERVICES / name
        for fname, data in rendered_run(plan, where).items():
            out[f"{SERVICES}/{name}/{fname}"] = data
    out["report.md"] = render_fleet_markdown(fleet).encode("utf-8")
    out["report.html"] = render_fleet_html(fleet).encode("utf-8")
    return {FLEET_FILE: text.encode("utf-8"), **out}


def write_fleet_run(fleet: Mapping[str, Any], plans: Mapping[str, Mapping[str, Any]],
                    run_dir: Path) -> list[Path]:
    """Publish the fleet run folder (complete, or not at all)."""
    return files.publish(rendered_fleet(fleet, plans, run_dir), Path(run_dir))


def is_fleet_run(run_dir: Path | str) -> bool:
    return (Path(run_dir) / FLEET_FILE).is_file()


def load_fleet_run(run_dir: Path | str) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """(fleet.json, each service's plan.json by name); one-line errors naming the file
    and field."""
    run_dir = Path(run_dir)
    path = run_dir / FLEET_FILE
    from perfmodel.reading import read_json

    fleet = read_json(path, "fleet run file")
    if not isinstance(fleet, dict) or fleet.get("schema") != FLEET_SCHEMA:
        raise PlannerError(f"{path}: field 'schema' must be {FLEET_SCHEMA!r}")
    services = fleet.get("services")
    if not isinstance(services, list) or not services:
        raise PlannerError(f"{path}: field 'services' must be a non-empty list")
    names = [check_name(svc.get("name") if isinstance(svc, dict) else None, str(path),
                        f"services[{i}].name", "the service's folder")
             for i, svc in enumerate(services)]
    check_distinct(names, str(path), "services")
    plans = {name: load_plan(run_dir / SERVICES / name / "plan.json") for name in names}
    return fleet, plans


def rerender_fleet(run_dir: Path | str) -> tuple[dict[str, Any], list[Path]]:
    """Redraw a fleet run's report and every service's from fleet.json and the services'
    plan.json files, without re-solving: (fleet.json, the paths written)."""
    from planner.report import render_report
    from planner.services.report import render_fleet_html, render_fleet_markdown

    run_dir = Path(run_dir)
    fleet, _plans = load_fleet_run(run_dir)
    try:
        pages = {"report.md": render_fleet_markdown(fleet).encode("utf-8"),
                 "report.html": render_fleet_html(fleet).encode("utf-8")}
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise PlannerError(f"{run_dir / FLEET_FILE}: a field is missing or malformed "
                           f"({type(err).__name__}: {err})") from None
    written = []
    for svc in fleet["services"]:
        written += render_report(run_dir / SERVICES / str(svc["name"]))
    written += files.publish(pages, run_dir)
    return fleet, written


__all__ = ["FLEET_FILE", "FLEET_SCHEMA", "SERVICES", "fleet_dict", "is_fleet_run",
           "load_fleet_run", "rendered_fleet", "rerender_fleet", "write_fleet_run"]
