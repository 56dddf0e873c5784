"""Seconds to solve a week of hourly slots: issue 31's speed goal (<= 60 s on 2 cores).

    .venv/bin/python benchmarks/profile_solve.py

For each case -- a built-in week profile (168 hourly slots) on
``inventories/tiers-2026.yaml`` (three GPU types with reserved, on-demand and spot
prices) -- it times what ``planner plan --profile`` does before simulation: building
every stream's range tables over the candidate islands, stage 1 (the reserved fleet),
stage 2 (168 per-slot MILPs in time order) and the rebalancing rounds.  The closed
loop's simulations are not in the figure (they are the promise, timed in
docs/profiles.md).  Prints one line per case and the largest.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

CASES = (
    ("enterprise-week", "deepseek-v3", "azure-conv-2023", 100.0),
    ("chat-week", "deepseek-v3", "azure-conv-2023", 100.0),
    ("chat-code-week", "llama-3.1-70b", "azure-conv-2023", 40.0),
    ("enterprise-week", "llama-3.1-70b", "azure-code-2023", 40.0),
)
INVENTORY = REPO / "inventories" / "tiers-2026.yaml"
RANGES = 8  # planner plan --profile's default (planner.cli.plan.PROFILE_RANGES)


def main() -> None:
    from planner.core.defaults import DEFAULT_SLO
    from planner.fleet.inventory import load_inventory
    from planner.schedule.pipeline import first_schedule
    from planner.schedule.solve import Columns, ScheduleRequest
    from planner.schedule.startup import default_startup_s
    from planner.workload.profile_io import load_profile

    inv = load_inventory(INVENTORY)
    worst = 0.0
    for profile, model, workload, peak in CASES:
        prof = load_profile(profile).scaled(peak)
        req = ScheduleRequest(prof, inv, model, workload, DEFAULT_SLO,
                              startup_s=default_startup_s(model), ranges=RANGES)
        t0 = time.perf_counter()
        cols = Columns.build(req)
        sched = first_schedule(cols, lambda _m: None)
        seconds = time.perf_counter() - t0
        worst = max(worst, seconds)
        print(f"{profile:16s} {model:14s} peak {peak:5.0f} req/s: {len(prof.slots)} slots, "
              f"{len(sched.problem.kinds)} island kinds, ${sched.bill.total:,.0f} for the "
              f"week, solved in {seconds:.1f} s")
    print(f"largest: {worst:.1f} s (goal <= 60 s)")


if __name__ == "__main__":
    main()
