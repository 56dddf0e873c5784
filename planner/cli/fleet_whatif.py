"""`planner whatif --fleet FLEET.yaml`: what-if studies on a fleet of services.

    planner whatif --fleet fleets/example.yaml --inventory inventories/gpus.yaml \\
        --budget 512 --price H200=0.8x --remove-service draft --marginal 100

Every scenario is planned as `planner plan --fleet` plans it (planner.services.whatif);
the study folder holds whatif.json, whatif.md and whatif.html.
"""

from __future__ import annotations

import json
import time
from datetime import datetime
from pathlib import Path

from rich.console import Console

from planner.cli.progress import interrupt_on_sigterm
from planner.core.errors import PlannerError

#: `planner whatif` flags of a one-model study that a fleet study does not take.
ONE_MODEL = ("SPEC.yaml", "--model", "--workload", "--workloads", "--equal-cost",
             "--availability", "--ttft", "--tpot", "--no-slo", "--engine", "--closed-loop",
             "--sample", "--max-island", "--resume", "--workers", "--ray-address",
             "--marginal-beyond-inventory")


def refuse(given: list[str]) -> None:
    for flag in given:
        raise PlannerError(f"{flag} does not apply with --fleet: a fleet study plans every "
                           "scenario as `planner plan --fleet` does, each service with the "
                           "fleet file's model, workload, SLO and engine (docs/fleet.md)")


def whatif_fleet(fleet_path: Path, inventory: Path, budget: float | None, *,
                 budget_sweep: str | None, price: list[str], add: list[str],
                 remove: list[str], remove_service: list[str], add_service: list[str],
                 share: list[str],
                 target: list[str], marginal: float | None, seed: int, ranges: int,
                 island_granularity: str, time_limit: float, router: str,
                 out: str | None, quiet: bool) -> None:
    from planner.fleet.inventory import load_inventory
    from planner.run.files import check_run_folder, new_folders, publish, remove_new_folders
    from planner.services.report import render_study_html, render_study_markdown
    from planner.services.solve import FleetRequest
    from planner.services.spec import load_fleet
    from planner.services.whatif import run_study, scenarios, study_dict

    fleet = load_fleet(fleet_path)
    inv = load_inventory(inventory)
    base = FleetRequest(fleet, inv, budget=budget, seed=seed, ranges=ranges,
                        island_granularity=island_granularity, exact_time_limit=time_limit,
                        where=str(fleet_path))
    for svc in fleet.services:
        base.engine_of(svc)
    budgets: list[float] = []
    if budget_sweep:
        if ".." in budget_sweep:
            raise PlannerError("--budget-sweep: a fleet study takes a list of budgets "
                               "(128,256,512), not a range (each is a whole fleet plan)")
        from perfmodel.errors import at, check_number

        budgets = [check_number(b, at("--budget-sweep"), gt=0, le=1e9, parse_text=True)
                   for b in budget_sweep.split(",")]
    scs = scenarios(base, remove_service=remove_service, add_service=add_service,
                    share=share, target=target,
                    price=price, add=add, remove=remove, budgets=budgets)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    study = Path(out) if out is not None else Path("reports") / f"{stamp}-whatif-{fleet_path.stem}"
    check_run_folder(out if out is not None else study, "--out", run_file="whatif.json")
    console = Console(stderr=True, quiet=quiet)
    t0 = time.perf_counter()

    def say(msg: str) -> None:
        console.print(f"[{time.perf_counter() - t0:6.1f} s] {msg}", style="dim",
                      highlight=False)

    say(f"fleet what-if: {len(scs)} scenario(s), each a whole fleet plan (about a minute "
        "each on 2 cores)" + (f", then where the next {marginal:g} $/h should go"
                              if marginal else ""))
    created = new_folders(study)
    try:
        with interrupt_on_sigterm():  # SIGTERM as Ctrl-C: nothing left behind
            results, options = run_study(scs, seed=seed, router=router, extra=marginal,
                                         say=say)
        st = study_dict(results, options, fleet_file=str(fleet_path), seed=seed,
                        router=router)
        publish({"whatif.json": (json.dumps(st, indent=2, allow_nan=False) + "\n").encode(),
                 "whatif.md": render_study_markdown(st).encode(),
                 "whatif.html": render_study_html(st).encode()}, study)
    except BaseException:
        remove_new_folders(created)
        raise
    if not quiet:
        for r in st["scenarios"]:
            figure = ("no plan: " + r["error"][:80]) if r.get("error") else (
                f"${r['cost_per_hour']:,.2f}/h" if base.targets else
                f"λ {r['lambda_rps']:,.1f} requests/s for ${r['cost_per_hour']:,.2f}/h")
            print(f"  {r['scenario']:<28} {figure}")
        if st.get("marginal_best"):
            print(f"the next {marginal:g} $/h raises the fleet's λ most on service "
                  f"{st['marginal_best']}")
    print(f"what-if folder: {study}  (open {study / 'whatif.html'})")


__all__ = ["ONE_MODEL", "refuse", "whatif_fleet"]
