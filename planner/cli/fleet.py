"""`planner plan --fleet FLEET.yaml`: several services on one inventory and budget.

    planner plan --fleet fleets/example.yaml --inventory inventories/gpus.yaml --budget 512

Reads the fleet file (docs/fleet.md), plans every service's islands jointly, closes
each through the simulator, compares the joint plan with the best independent split,
writes the fleet's run folder and prints the answer.
"""

from __future__ import annotations

import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from rich.console import Console

from planner.cli.progress import interrupt_on_sigterm, timed_say
from planner.core.errors import PlannerError
from planner.fleet.inventory import load_inventory, require_gpus
from planner.run.files import check_run_folder, new_folders, remove_new_folders

#: `planner plan` flags that describe one model; a fleet file gives them per service.
PER_SERVICE = ("--model", "--workload", "--ttft", "--tpot", "--no-slo", "--engine",
               "--target-rps", "--max-running", "--max-tokens", "--mem-fraction")
#: Flags of the single-model search that a fleet's joint MILP does not take.
SINGLE_ONLY = ("--inner", "--objective", "--resume", "--workers", "--ray-address",
               "--no-sim-check", "--no-exact", "--no-homogeneous")


def refuse(given: list[str]) -> None:
    """One line for the first flag that does not apply to a fleet (exit 2)."""
    for flag in given:
        if flag in PER_SERVICE:
            raise PlannerError(f"{flag} does not apply with --fleet: each service of the "
                               "fleet file gives its own (docs/fleet.md)")
        if flag in SINGLE_ONLY:
            raise PlannerError(f"{flag} does not apply with --fleet: a fleet is planned "
                               "jointly (the MILP, or --search divider/direct/random over "
                               "joint layouts) and always closed in simulation")


def _default_out(fleet: Path, inventory: Path) -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path("reports") / f"{stamp}-{inventory.stem}-{fleet.stem}"


def summary_lines(fleet: dict[str, Any]) -> list[str]:
    """The terminal summary of a fleet run."""
    s = fleet["summary"]
    out = []
    if s["mode"] == "shares":
        out.append(f"fleet λ: {s['lambda_requests_per_s']:,.1f} requests/s at every "
                   f"service's SLO, ${s['cost_per_hour']:,.2f}/h of "
                   f"${fleet['request']['budget']:,.2f}/h")
    else:
        out.append(f"every target holds for ${s['cost_per_hour']:,.2f}/h")
    out.append("GPUs: " + ", ".join(f"{n} × {t}" for t, n in s["gpus_used"].items()))
    for svc in fleet["services"]:
        out.append(f"  {svc['name']:<12} {svc['model']:<18} {svc['requests_per_s']:>9,.1f} "
                   f"requests/s  ${svc['cost_per_hour']:>8,.2f}/h  "
                   + ", ".join(f"{n} × {t}" for t, n in svc["gpus"].items()))
    c = fleet["comparison"]
    if c.get("margin") is not None:
        what = "λ" if s["mode"] == "shares" else "cost saved"
        out.append(f"joint plan against the best independent split ({what}): "
                   f"{100 * c['margin']:+.1f} %; the answer is the "
                   f"{s['answer_from']}")
    return out


def choose_search(search: str, n_services: int, space) -> tuple[str, str]:
    """The fleet's search and why: the joint MILP unless the services' island tables
    are too many to tabulate (the single-model rule, planner.plan.choose_search)."""
    from planner.outer.columns import candidate_sizes
    from planner.plan import EXACT_TABLE_LIMIT

    if search != "auto":
        return search, "as asked (--search)"
    tables = n_services * sum(len(v) for v in candidate_sizes(space).values())
    if tables > EXACT_TABLE_LIMIT:
        return "divider", (f"{tables:,} island tables are too many for the joint MILP: "
                           "divider BO over joint layouts")
    return "exact", f"the joint MILP over {tables:,} island tables"


def plan_fleet(fleet_path: Path, inventory: Path, budget: float | None, *, seed: int,
               ranges: int, router: str, plan_at: str, colocated: str,
               island_granularity: str, exact_time_limit: float, out: str | None,
               quiet: bool, search: str = "auto",
               search_options: dict[str, int] | None = None) -> None:
    from planner.services.promise import close_fleet
    from planner.services.run import FLEET_FILE, fleet_dict, write_fleet_run
    from planner.services.solve import FleetRequest, ServiceModel
    from planner.services.spec import load_fleet

    fleet = load_fleet(fleet_path)
    inv = require_gpus(load_inventory(inventory), inventory)
    req = FleetRequest(fleet, inv, budget=budget, seed=seed, ranges=ranges, plan_at=plan_at,
                       colocated=colocated, island_granularity=island_granularity,
                       exact_time_limit=exact_time_limit, where=str(fleet_path))
    for svc in fleet.services:  # an engine that cannot run the inventory: exit 2, now
        req.engine_of(svc)
    from dataclasses import replace

    chosen, why = choose_search(search, len(fleet.services), req.space())
    req = replace(req, search=chosen,
                  search_options=dict(search_options or {}) if chosen != "exact" else {})
    run_dir = Path(out) if out is not None else _default_out(fleet_path, inventory)
    check_run_folder(out if out is not None else run_dir, run_file=FLEET_FILE)
    console = Console(stderr=True, quiet=quiet)
    t0 = time.perf_counter()
    say = timed_say(console, quiet)

    created = new_folders(run_dir)
    try:
        say(f"planning {len(fleet.services)} services: "
            + ", ".join(f"{s.name} ({s.model})" for s in fleet.services) + f"; {why}")
        with interrupt_on_sigterm():  # SIGTERM as Ctrl-C: nothing left behind
            models = [ServiceModel.build(req, s) for s in fleet.services]
            seconds = {"setup": time.perf_counter() - t0}
            res = close_fleet(req, models, seed=seed, router=router, say=say)
        seconds["plan_and_simulate"] = time.perf_counter() - t0 - seconds["setup"]
        d = fleet_dict(req, res, router=router, fleet_file=str(fleet_path), seconds=seconds)
        write_fleet_run(d, res.answer.plans, run_dir)
    except BaseException:
        remove_new_folders(created)
        raise
    if not quiet:
        for line in summary_lines(d):
            print(line)
    print(f"run folder: {run_dir}  (open {run_dir / 'report.html'})", file=sys.stdout)
    if not quiet:
        print(f"launch files: planner export {run_dir} [--format shell|k8s]")


__all__ = ["PER_SERVICE", "SINGLE_ONLY", "plan_fleet", "refuse", "summary_lines"]
