"""`planner plan --profile PROFILE`: a reserved fleet and hourly scaling for a load profile.

    planner plan --profile enterprise-week --peak-rps 40 --inventory inventories/tiers-2026.yaml

Reads the profile (docs/profiles.md) and the inventory's price tiers, plans the
reserved fleet and every slot's on-demand and spot islands, holds every slot of the
busiest day to the SLO in simulation, and writes the run folder (schedule.json,
schedule.csv, report.md, schedule.png).
"""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path

from rich.console import Console

from perfmodel import SLO
from planner.cli import values
from planner.cli.progress import interrupt_on_sigterm, timed_say
from planner.core.errors import PlannerError
from planner.run.files import check_run_folder, new_folders, remove_new_folders

#: `planner plan` flags a profile run does not take (it minimises the period's cost).
NOT_WITH_PROFILE = ("--budget", "--target-rps", "--fleet", "--inner", "--objective",
                    "--resume", "--workers", "--ray-address", "--iterations",
                    "--batch-size", "--no-exact", "--no-homogeneous", "--plan-at",
                    "--search")
#: The most scenarios --scenarios takes (each is a full schedule solve).
MAX_SCENARIOS = 8


def refuse(given: list[str]) -> None:
    for flag in given:
        if flag in NOT_WITH_PROFILE:
            raise PlannerError(
                f"{flag} does not apply with --profile: a profile run finds the cheapest "
                "reserved fleet and hourly scaling that serve every slot (docs/profiles.md)")


def load_profile_arg(ref: str, peak_rps: float | None, flag: str = "--profile"):
    """A profile from the flag, scaled to ``peak_rps`` when given (required for a
    relative profile)."""
    from planner.workload.profile_io import load_profile

    prof = load_profile(ref)
    if peak_rps is not None:
        return prof.scaled(peak_rps)
    if prof.relative:
        raise PlannerError(f"{flag} {ref}: the profile's rates are fractions of its peak: "
                           "give --peak-rps (the busiest slot's requests/s)")
    return prof


def _default_out(profile: str) -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path("reports") / f"{stamp}-profile-{Path(profile).stem}"


def plan_profile(profile: str, inventory: Path, *, peak_rps: float | None, model: str,
                 workload: str, slo: SLO, engine: str | None, startup_s: float | None,
                 scenarios: str | None, seed: int, ranges: int, router: str,
                 island_granularity: str, sim_check: bool, out: str | None,
                 quiet: bool) -> None:
    from planner.fleet.inventory import load_inventory, require_gpus
    from planner.schedule.run import SCHEDULE_FILE, write_schedule_run
    from planner.schedule.solve import ScheduleRequest
    from planner.schedule.startup import default_startup_s
    from planner.workload import load_workload

    values.number(peak_rps, "--peak-rps", gt=0, le=values.MAX_RATE)
    values.number(startup_s, "--startup-s", ge=0, le=86400)
    prof = load_profile_arg(profile, peak_rps)
    inv = require_gpus(load_inventory(inventory), inventory)
    streams = dict(prof.workloads) or {prof.streams[0]: workload}
    for name, wl in streams.items():
        values.naming(f"--profile {profile}: workload of stream {name!r}", load_workload, wl)
    lag = default_startup_s(model) if startup_s is None else float(startup_s)
    others = []
    if scenarios:
        items = [s.strip() for s in scenarios.split(",") if s.strip()]
        if not items or len(items) > MAX_SCENARIOS:
            raise PlannerError(f"--scenarios: give 1 to {MAX_SCENARIOS} profiles, comma-"
                               f"separated; got {len(items)}")
        others = [load_profile_arg(s, peak_rps, "--scenarios") for s in items]
    req = ScheduleRequest(prof, inv, model, workload, slo, engine, lag, ranges,
                          seed=seed, island_granularity=island_granularity, where=profile)
    fleet = req.fleet_request()  # an engine that cannot run the inventory: exit 2, now
    fleet.engine_of(fleet.fleet.services[0])
    run_dir = Path(out) if out is not None else _default_out(profile)
    check_run_folder(out if out is not None else run_dir, run_file=SCHEDULE_FILE)
    console = Console(stderr=True, quiet=quiet)
    say = timed_say(console, quiet)

    created = new_folders(run_dir)
    try:
        with interrupt_on_sigterm():
            if others:
                from planner.schedule.scenarios import scenario_run

                run, plans = scenario_run(req, others, router=router, verify=sim_check,
                                          say=say)
            else:
                from planner.schedule.pipeline import schedule_run

                run, plans = schedule_run(req, router=router, verify=sim_check, say=say)
        write_schedule_run(run, plans, run_dir)
    except BaseException:
        remove_new_folders(created)
        raise
    if not quiet:
        for line in summary_lines(run):
            print(line)
    print(f"run folder: {run_dir}  (open {run_dir / 'report.md'})", file=sys.stdout)


def summary_lines(run: dict) -> list[str]:
    b = run["schedule"]["bill"]
    hours = run["profile"]["period_hours"]
    out = [f"period of {hours:g} h: ${b['total']:,.0f} (reserved ${b['reserved']:,.0f}, "
           f"on demand ${b['on_demand']:,.0f}, spot ${b['spot']:,.0f}; start-ups "
           f"${b['startup']:,.0f})"]
    for name, save in run["savings"].items():
        label = name.replace("_", " ")
        out.append(f"  vs {label}: " + ("cannot serve the profile" if save is None
                                        else f"{100 * save:+.1f} %"))
    low = run["summary"].get("lowest_attainment")
    if low is not None:
        out.append(f"lowest SLO attainment over the busiest day's slots: {100 * low:.2f} %")
    for sc in run.get("scenarios", []):
        out.append(f"  scenario {sc['name']}: ${sc['bill']['total']:,.0f}, regret "
                   f"${sc['regret']:,.0f}")
    return out


__all__ = ["NOT_WITH_PROFILE", "plan_profile", "refuse", "summary_lines"]
