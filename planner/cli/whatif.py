"""`planner whatif`: procurement what-if studies from a YAML spec and/or flags.

    planner whatif --inventory inventories/gpus.yaml --budget-sweep 128,256,512 --marginal 100
    planner whatif docs/whatif-example.yaml --out reports/whatif

Validates everything first (one line naming the file or flag and the field, exit 2),
plans every scenario as `planner plan` plans it and reports the capacity `planner plan`
would print for it -- its closed loop's, or for a large study a sample's closed loops
and the others' analytic figures corrected, with the correction's measured error
(docs/whatif.md) -- (a progress line on stderr: scenario k of n and its label; off with
--quiet or when stderr is not a terminal), writes the study folder atomically
(whatif.csv, whatif.json, plots, whatif.md, whatif.html) and prints the tables and the
marginal-value answer.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from perfmodel.engines import DEFAULT_ENGINE, ENGINES
from planner.cli import values
from planner.cli.console import results_console
from planner.cli.progress import interrupt_on_sigterm, resume_command
from planner.core.defaults import MAX_BUDGETS, MAX_SCENARIOS, MAX_WORKLOADS
from planner.core.errors import PlannerError
from planner.core.execution import make_executor
from planner.fleet.inventory import MAX_TYPES
from planner.run.files import check_run_folder, new_folders, remove_new_folders

_NUMERIC = {"requests/s", "analytic", "vs base", "vs mix", "$/h used", "$/M out tok",
            "budget", "price", "factor", "gain, requests/s", "per extra $/h"}


def _default_out(spec) -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path("reports") / f"{stamp}-whatif-{Path(spec.inventory.name).stem}"


def scenario_progress(console: Console, quiet: bool
                      ) -> tuple[Progress, Callable[[int, int, str], None]]:
    """A one-line display on ``console``: "scenario k of n: <label>", a bar and the time
    taken; disabled with ``quiet`` or when the console is not a terminal.  The callback
    is run_whatif's ``progress`` (called as each scenario is settled)."""
    progress = Progress(TextColumn("{task.description}"), BarColumn(bar_width=24),
                        TimeElapsedColumn(), console=console, transient=True,
                        disable=quiet or not console.is_terminal)
    task = progress.add_task("what-if", total=None)

    def step(k: int, n: int, label: str) -> None:
        short = label if len(label) <= 60 else label[:59] + "…"
        progress.update(task, description=f"scenario {k} of {n} done: {short}",
                        completed=k, total=n)
        progress.refresh()

    return progress, step


def whatif(
    spec_file: Path = typer.Argument(None, metavar="SPEC.yaml",
                                     help="What-if spec (docs/whatif.md); flags override it. A "
                                     f"study expands to at most {MAX_SCENARIOS:,} scenarios "
                                     "(every cap on an input: docs/limits.md)."),
    inventory: Path = typer.Option(None, help="Inventory YAML (default: the spec's, else "
                                   "inventories/gpus.yaml)."),
    budget: float = typer.Option(None, help="Base $/h (default: the inventory's full cost)."),
    budget_sweep: str = typer.Option(None, help="Budgets, e.g. 128,256,512 or 128..2048 "
                                     "(doubling) or 100..500:100; at most "
                                     f"{MAX_BUDGETS:,}."),
    price: list[str] = typer.Option(None, help="Price sweep of a type: H200=0.8x,1.0x,1.2x "
                                    "(factors) or H200=3.2,4,4.8 ($/GPU-h); repeatable, at "
                                    f"most {MAX_BUDGETS:,} prices of {MAX_TYPES} types."),
    add: list[str] = typer.Option(None, help="Add a catalog type: TYPE:COUNT:PRICE; "
                                  f"repeatable, at most {MAX_TYPES}."),
    remove: list[str] = typer.Option(None, help="Remove a type; repeatable, at most "
                                     f"{MAX_TYPES}."),
    workloads: str = typer.Option(None, help="Other workloads to compare, comma-separated "
                                  f"(mixtures: in the spec file); at most {MAX_WORKLOADS}."),
    equal_cost: bool = typer.Option(None, "--equal-cost/--no-equal-cost",
                                    help="Mix vs each single type at the base budget."),
    marginal: float = typer.Option(None, help="What is the next X $/h best spent on? Under "
                                   "inventory availability no option buys more GPUs of a "
                                   "type than the inventory lists."),
    marginal_beyond_inventory: bool = typer.Option(
        None, "--marginal-beyond-inventory/--no-marginal-beyond-inventory",
        help="Let the marginal study buy more GPUs than the inventory lists (inventory "
        "availability; spec: studies.marginal_beyond_inventory)."),
    model: str = typer.Option(None, help="Built-in model or config.json path "
                              "(default deepseek-v3)."),
    workload: str = typer.Option(None, help="Base workload (default azure-conv-2023)."),
    ranges: int = typer.Option(None, help="Input-length ranges (default 32, as `planner "
                               "plan`)."),
    availability: str = typer.Option(None, help="inventory (the inventory's counts, default) "
                                     "or unlimited (as many as the budget buys)."),
    max_island: int = typer.Option(None, help="Largest island size considered (default: "
                                   "up to availability, as `planner plan`)."),
    time_limit: float = typer.Option(None, help="Safety net, seconds per exact solve "
                                     "(`planner plan`'s --exact-time-limit; default 600)."),
    ttft_ms: float = typer.Option(None, "--ttft", help="TTFT ceiling, ms (default 2000, as "
                                  "`planner plan`)."),
    tpot_ms: float = typer.Option(None, "--tpot", help="TPOT ceiling, ms (default 50, as "
                                  "`planner plan`)."),
    no_slo: bool = typer.Option(None, "--no-slo/--slo", help="No latency ceilings "
                                "(`planner plan --no-slo`; spec: slo: none)."),
    seed: int = typer.Option(None, help="Seed of every random choice, as `planner plan "
                             "--seed` (default 0)."),
    island_granularity: str = typer.Option(None, help="Island sizes: server or gpu, as "
                                           "`planner plan` (default server)."),
    closed_loop: str = typer.Option(None, help="Capacity of each scenario: every (its own "
                                    "closed loop, what `planner plan` prints), sample "
                                    "(closed for --sample scenarios per workload, the "
                                    "others' analytic figures corrected; the error is "
                                    "stated), off (analytic, `planner plan "
                                    "--no-sim-check`) or auto (every up to 24 distinct "
                                    "problems, else sample; default)."),
    sample: int = typer.Option(None, help="Scenarios per workload whose loop a sampled "
                               "study closes, the base always among them (default 6)."),
    out: str = typer.Option(None, help="Study folder (default reports/<time>-whatif-"
                             "<inventory>)."),
    engine: str = typer.Option(None, help="Serving engine of the perf model: "
                               f"{', '.join(ENGINES)} (default {DEFAULT_ENGINE})."),
    workers: int = values.workers_option("Solve the scenarios side by side"),
    ray_address: str = values.ray_address_option(),
    resume: bool = typer.Option(False, help="Keep the scenarios an interrupted run of this "
                                "study (same --out) finished; solve only the rest."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress display or tables."),
    fleet: Path = typer.Option(None, "--fleet", help="A fleet of services (docs/fleet.md): "
                               "every scenario planned as `planner plan --fleet` plans it.",
                               show_default="one model"),
    remove_service: list[str] = typer.Option(None, "--remove-service", help="With --fleet: "
                                             "the fleet without this service; repeatable."),
    add_service: list[str] = typer.Option(None, "--add-service", help="With --fleet: the "
                                          "fleet with the services of this fleet file "
                                          "(their shares, below 1 in total, are their part "
                                          "of the new fleet); repeatable."),
    share: list[str] = typer.Option(None, "--share", help="With --fleet: NAME=X, a "
                                    "service's share set to X (the others scaled); "
                                    "repeatable."),
    target: list[str] = typer.Option(None, "--target", help="With --fleet of targets: "
                                     "NAME=R, a service's target set to R req/s; "
                                     "repeatable."),
    router: str = typer.Option("range", "--router", help="With --fleet: the router the "
                               "fleet will run (as planner plan --router)."),
) -> None:
    """Procurement what-if: budget/price sweeps, add/remove a type, workload shifts,
    homogeneous vs heterogeneous, Pareto front and the marginal value of X $/h."""
    if fleet is not None:
        from planner.cli.fleet_whatif import refuse, whatif_fleet
        from planner.cli.plan import DEFAULT_INVENTORY

        refuse([flag for flag, value in (
            ("SPEC.yaml", spec_file), ("--model", model), ("--workload", workload),
            ("--workloads", workloads), ("--equal-cost", equal_cost),
            ("--availability", availability), ("--ttft", ttft_ms), ("--tpot", tpot_ms),
            ("--no-slo", no_slo), ("--engine", engine), ("--closed-loop", closed_loop),
            ("--sample", sample), ("--max-island", max_island), ("--resume", resume or None),
            ("--workers", workers), ("--ray-address", ray_address),
            ("--marginal-beyond-inventory", marginal_beyond_inventory))
            if value is not None])
        values.number(budget, "--budget", gt=0, le=values.MAX_BUDGET)
        values.number(marginal, "--marginal", gt=0, le=values.MAX_BUDGET)
        values.seed(seed if seed is not None else 0)
        values.number(ranges, "--ranges", integer=True, ge=1, le=values.MAX_RANGES)
        values.number(time_limit, "--time-limit", gt=0, le=values.MAX_TIME_LIMIT)
        from planner.sim.routers.registry import ROUTERS

        ROUTERS.lookup(router)
        if island_granularity not in (None, "server", "gpu"):
            raise PlannerError("--island-granularity must be server or gpu, got "
                               f"{island_granularity!r}")
        whatif_fleet(fleet, inventory or DEFAULT_INVENTORY, budget,
                     budget_sweep=budget_sweep, price=list(price or []), add=list(add or []),
                     remove=list(remove or []), remove_service=list(remove_service or []),
                     add_service=list(add_service or []),
                     share=list(share or []), target=list(target or []), marginal=marginal,
                     seed=seed if seed is not None else 0,
                     ranges=ranges if ranges is not None else 32,
                     island_granularity=island_granularity or "server",
                     time_limit=time_limit if time_limit is not None else 600.0,
                     router=router, out=out, quiet=quiet)
        return
    if remove_service or add_service or share or target or router != "range":
        raise PlannerError("--remove-service, --add-service, --share, --target and --router "
                           "apply to a fleet study (--fleet FLEET.yaml)")
    from planner.whatif import Flags, load_spec, run_whatif, write_whatif
    from planner.whatif.cells import CellStore, cells_folder
    from planner.whatif.tables import notes, tables

    flags = Flags(inventory=inventory, model=model, workload=workload, budget=budget,
                  availability=availability, ranges=ranges, budget_sweep=budget_sweep,
                  price=list(price or []), add=list(add or []), remove=list(remove or []),
                  workloads=workloads, equal_cost=equal_cost, marginal=marginal,
                  marginal_beyond_inventory=marginal_beyond_inventory,
                  time_limit=time_limit, max_island=max_island, ttft_ms=ttft_ms,
                  tpot_ms=tpot_ms, no_slo=no_slo, engine=engine, seed=seed,
                  island_granularity=island_granularity, closed_loop=closed_loop,
                  sample=sample)
    spec = load_spec(spec_file, flags)
    study = Path(out) if out is not None else _default_out(spec)
    check_run_folder(out if out is not None else study,  # a str: Path("") would be "."
                     "--out", run_file="whatif.json")
    if resume and out is None:
        raise PlannerError("--resume needs the --out folder of the interrupted study")
    executor = make_executor(workers, ray_address)
    console = Console(stderr=True, quiet=quiet)
    loop = {"auto": "closed loop per scenario (a sample's for a large study)",
            "every": "closed loop per scenario", "off": "analytic figures (closed loop off)",
            "sample": f"closed loop for a sample of {spec.closed_loop.sample} per workload, "
                      "the others corrected"}[spec.closed_loop.mode]
    console.print(f"what-if: each scenario planned as `planner plan` plans it, {loop}; "
                  f"{spec.engine} perf model, {spec.ranges} length ranges, "
                  f"{spec.availability} availability"
                  + (f", on {executor.workers} Ray workers" if executor.name == "ray" else ""))
    progress, step = scenario_progress(console, quiet)
    created = new_folders(cells_folder(study))
    cells = CellStore(study, spec.to_dict(), resume=resume)
    try:
        with interrupt_on_sigterm(), progress:
            result = run_whatif(spec, progress=step, executor=executor, cells=cells)
        written = write_whatif(result, study)
    except KeyboardInterrupt:
        print(f"interrupted: the {cells.saved} scenarios solved so far are saved in "
              f"{cells.folder}; resume with\n  {resume_command(study)}", file=sys.stderr)
        raise typer.Exit(130) from None
    except BaseException:
        if not resume:  # the cells of a study it was asked to resume stay
            cells.discard()
        remove_new_folders(created)
        raise
    finally:
        executor.close()
    cells.discard()
    if resume and not quiet:
        console.print(f"resumed: {cells.resumed} scenarios from the interrupted run")
    if not quiet:
        term = results_console()
        for title, header, body in tables(result):
            t = Table(title=title, title_justify="left", title_style="bold",
                      header_style="bold")
            for h in header:
                t.add_column(h, justify="right" if h in _NUMERIC else "left")
            for row in body:
                t.add_row(*row)
            term.print(t)
        for n in notes(result):
            term.print(n, style="dim", markup=False)
        if result.marginal is not None:
            term.print(Text.assemble(("Marginal value: ", "bold"), result.marginal.sentence))
    page = next((p for p in written if p.name == "whatif.html"), study / "whatif.html")
    print(f"what-if folder: {study}  (open {page})")
