"""`planner plan` (also installed as `plan`): the product's main command.

    planner plan --inventory inventories/gpus.yaml --budget 512

Loads the inventory, searches island layouts, writes a run folder (plan.json, CSVs,
plots, report.md, report.html) and prints a summary.  Ctrl-C during the search keeps
the search's checkpoint and prints the command that resumes it.
"""

from __future__ import annotations

import inspect
import sys
from datetime import datetime
from pathlib import Path

import typer
from rich.console import Console

from perfmodel import SLO, get_model
from perfmodel.calibration import PLAN_AT
from perfmodel.engines import DEFAULT_ENGINE, ENGINES, get_engine
from perfmodel.launch import engine_flag_error, fleet_engine
from perfmodel.reading import file_kind
from planner.cli import values
from planner.cli.console import results_console
from planner.cli.progress import interrupt_on_sigterm, resume_command, step_bars
from planner.core.defaults import DEFAULT_MODEL, DEFAULT_SLO, DEFAULT_WORKLOAD
from planner.core.errors import NoPlanError, PlannerError
from planner.core.execution import make_executor
from planner.fleet.inventory import MAX_TYPES
from planner.inner.registry import DEFAULT_INNER, INNER_SOLVERS, needs_context
from planner.outer.registry import OUTER_SEARCHES, iterative
from planner.run.files import check_run_folder, new_folders, remove_new_folders
from planner.services.spec import MAX_SERVICES
from planner.workload.profile import MAX_SLOTS

DEFAULT_INVENTORY = Path(__file__).resolve().parents[2] / "inventories" / "gpus.yaml"
SEARCHES = ("auto", *OUTER_SEARCHES)
#: Input-length ranges of a profile run: every slot is a MILP over islands x ranges, and
#: 168 of them at the static default of 32 take minutes (docs/profiles.md, "Speed").
PROFILE_RANGES = 8
#: ``auto`` is the planner's choice among the registered searches (planner.plan).
AUTO_HELP = {"auto": "the exact MILP for the analytic objective, BO where a MILP cannot "
                     "go; the report says which and why (default)"}


def search_defaults(param: str) -> str:
    """``--iterations``/``--batch-size``'s default as the help shows it, from the
    registry: ``the search's: divider 16, direct 8``."""
    parts = []
    for name in OUTER_SEARCHES:
        if iterative(name):
            p = inspect.signature(OUTER_SEARCHES[name]).parameters.get(param)
            if p is not None and p.default is not inspect.Parameter.empty:
                parts.append(f"{name} {p.default}")
    return f"the search's: {', '.join(parts)}"


def _default_out(inventory: Path, workload: str) -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path("reports") / f"{stamp}-{inventory.stem}-{Path(workload).stem}"


def _check_router(name: str) -> None:
    """--router: a router the simulator has (one line naming the choices if not)."""
    from planner.sim.routers.registry import ROUTERS

    ROUTERS.lookup(name)  # an unknown name: one line listing the routers


def _close_loop(plan, seed: int, router: str, console: Console, quiet: bool):
    """Simulate the plan and its single-type alternatives, find the rate at which each
    holds the SLO (planner.closed_plan); returns the answer's plan dict."""
    from planner.closed_plan import close_plan

    def say(msg: str) -> None:
        if not quiet:
            console.print(f"closed loop: {msg}", style="dim")

    return close_plan(plan, seed=seed, router=router, progress=say)


def plan(
    inventory: Path = typer.Option(DEFAULT_INVENTORY, help="Inventory YAML (GPU types, "
                                   "counts available, $/hour; see docs/inventory.md); at "
                                   f"most {MAX_TYPES} GPU types (every cap on an input: "
                                   "docs/limits.md).",
                                   show_default="inventories/gpus.yaml, shipped with the "
                                   "planner"),
    budget: float = typer.Option(None, help="$/hour ceiling.",
                                 show_default="the whole inventory's cost"),
    target_rps: float = typer.Option(None, help="Instead of a budget: serve this many "
                                     "requests/s at the lowest $/hour."),
    model: str = typer.Option(DEFAULT_MODEL, help="Built-in model, config.json path, or "
                              "a checkpoint folder holding one."),
    workload: str = typer.Option(DEFAULT_WORKLOAD, help="Built-in workload or YAML path."),
    search: str = typer.Option("auto", help=f"Outer search. {OUTER_SEARCHES.help(AUTO_HELP)}."),
    inner: str = typer.Option(DEFAULT_INNER, help=f"Inner solver. {INNER_SOLVERS.help()}."),
    seed: int = typer.Option(0, help="Seed of every random choice."),
    out: str = typer.Option(None, help="Run folder.",
                             show_default="reports/<time>-<inventory>-<workload>"),
    ranges: int = typer.Option(None, help="Number of input-length ranges (§4.6.3).",
                               show_default="32; 8 with --profile (one MILP per slot)"),
    iterations: int = typer.Option(None, help="BO iterations (BO searches only).",
                                   show_default=search_defaults("iterations")),
    batch_size: int = typer.Option(None, help="BO candidates per iteration, q (BO "
                                   "searches only).",
                                   show_default=search_defaults("batch_size")),
    ttft_ms: float = typer.Option(DEFAULT_SLO.ttft_ms, "--ttft",
                                  help="TTFT ceiling, ms (interactive-chat default; "
                                  "docs/slo.md)."),
    tpot_ms: float = typer.Option(DEFAULT_SLO.tpot_ms, "--tpot", help="TPOT ceiling, ms."),
    no_slo: bool = typer.Option(False, "--no-slo", help="No latency ceilings: the "
                                "thesis's throughput-only mode."),
    sim_check: bool = typer.Option(True, "--sim-check/--no-sim-check",
                                   help="End with a seeded simulation of the plan: the "
                                   "headline is the rate that holds in it at the SLO "
                                   "(docs/plan-vs-sim.md)."),
    router: str = typer.Option("range", "--router", help="The router the fleet will run; "
                               "the plan's SLO is verified with it (planner simulate "
                               "--help lists them).  The report also shows the SLO under "
                               "jsq."),
    objective: str = typer.Option("analytic", help="What the search maximises: analytic "
                                  "(the perf model's capacity) or simulated (goodput at "
                                  "the SLO in a short simulation per layout; minutes; "
                                  "docs/objective-simulated.md)."),
    colocated: str = typer.Option("auto", help="Colocated islands (both phases on one "
                                  "island, aggregated serving) beside prefill and decode "
                                  "ones: auto (dense models), on, off."),
    island_granularity: str = typer.Option(
        "server", help="Island sizes: server (whole servers of the inventory's "
        "gpus_per_node, or a power-of-two share of one; one GPU type per server) or gpu "
        "(any size, the thesis's free sizes, for study; docs/deployment.md)."),
    exact: bool = typer.Option(True, help="Also solve the exact MILP (BO's optimality gap)."),
    homogeneous: bool = typer.Option(True, help="Also find the best single-type plans."),
    exact_time_limit: float = typer.Option(600.0, help="Safety net, seconds per exact "
                                           "solve (they stop on a node limit, the same on "
                                           "any machine)."),
    resume: bool = typer.Option(False, help="Resume an interrupted search in --out."),
    engine: str = typer.Option(
        None, show_default=f"{DEFAULT_ENGINE} for NVIDIA GPUs, vllm for other vendors or a mix",
        help=f"Serving engine whose measured kernels and behaviour the perf model uses. "
        f"{ENGINES.help()}."),
    max_running: int = values.max_running_option(),
    max_tokens: int = values.max_tokens_option(),
    mem_fraction: float = values.mem_fraction_option(),
    plan_at: str = typer.Option("point", "--plan-at", help="Plan against the perf model's "
                                "figures (point) or the pessimistic bound of each island's "
                                "held-out error band (p10; docs/validation.md)."),
    workers: int = values.workers_option("Score each batch of a BO or random search's "
                                         "proposals side by side"),
    ray_address: str = values.ray_address_option(),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bars or summary."),
    fleet: Path = typer.Option(None, "--fleet", help="Several services (model, workload, "
                               "SLO, share or target each) on the one inventory and "
                               "budget: a fleet file (docs/fleet.md; fleets/example.yaml); "
                               f"at most {MAX_SERVICES} services.",
                               show_default="one model"),
    profile: str = typer.Option(None, "--profile", help="Load over time: a profile file or "
                                "built-in profile (docs/profiles.md); plans a reserved fleet "
                                "and each slot's on-demand and spot islands at the least "
                                f"cost for the period; at most {MAX_SLOTS:,} slots.",
                                show_default="one static rate"),
    peak_rps: float = typer.Option(None, "--peak-rps", help="With --profile: scale the "
                                   "profile so that its busiest slot is this many "
                                   "requests/s (required for a relative profile).",
                                   show_default="the profile's own rates"),
    startup_s: float = typer.Option(None, "--startup-s", help="With --profile: seconds an "
                                    "island takes to start serving; it is started (and "
                                    "paid) that long before its slot.",
                                    show_default="the weights at 1.55 GB/s + 20 s "
                                    "(docs/profiles.md)"),
    scenarios: str = typer.Option(None, "--scenarios", help="With --profile: other "
                                  "profiles (comma-separated, at most 8) the reserved fleet "
                                  "must also serve; the one with the smallest worst-case "
                                  "regret is kept.", show_default="none"),
) -> None:
    """Choose GPUs, islands, roles, parallelism and length ranges for a budget."""
    from planner.fleet.inventory import load_inventory, require_gpus
    from planner.plan import PlanRequest, check_budget, make_plan
    from planner.report import summary_text, write_run
    from planner.workload import load_workload

    if search not in SEARCHES:
        raise PlannerError(f"--search must be one of {', '.join(SEARCHES)}, got {search!r}")
    if objective not in ("analytic", "simulated"):
        raise PlannerError(f"--objective must be analytic or simulated, got {objective!r}")
    if island_granularity not in ("server", "gpu"):
        raise PlannerError("--island-granularity must be server or gpu, got "
                           f"{island_granularity!r}")
    budget = values.number(budget, "--budget", gt=0, le=values.MAX_BUDGET)
    target_rps = values.number(target_rps, "--target-rps", gt=0, le=values.MAX_RATE)
    for value, flag in ((ttft_ms, "--ttft"), (tpot_ms, "--tpot")):
        values.number(value, flag, gt=0, le=values.MAX_LATENCY_MS)
    if no_slo:  # a ceiling beside --no-slo would be dropped without a word
        ceilings = [flag for flag, value, default in (
            ("--ttft", ttft_ms, DEFAULT_SLO.ttft_ms), ("--tpot", tpot_ms, DEFAULT_SLO.tpot_ms))
            if value != default]
        if ceilings:
            raise PlannerError(f"{', '.join(ceilings)} and --no-slo contradict: --no-slo "
                               "plans with no latency ceilings")
    values.seed(seed)
    _check_router(router)
    values.number(ranges, "--ranges", integer=True, ge=1, le=values.MAX_RANGES)
    values.number(iterations, "--iterations", integer=True, ge=1, le=values.MAX_ITERATIONS)
    values.number(batch_size, "--batch-size", integer=True, ge=1, le=values.MAX_BATCH_SIZE)
    values.number(exact_time_limit, "--exact-time-limit", gt=0, le=values.MAX_TIME_LIMIT)
    if ranges is None:
        ranges = PROFILE_RANGES if profile is not None else 32
    if profile is None:
        for flag, value in (("--peak-rps", peak_rps), ("--startup-s", startup_s),
                            ("--scenarios", scenarios)):
            if value is not None:
                raise PlannerError(f"{flag} applies only with --profile")
    if profile is not None:
        from planner.cli.profile_plan import plan_profile
        from planner.cli.profile_plan import refuse as refuse_profile

        refuse_profile([flag for flag, value, default in (
            ("--budget", budget, None), ("--target-rps", target_rps, None),
            ("--fleet", fleet, None), ("--inner", inner, DEFAULT_INNER),
            ("--objective", objective, "analytic"), ("--resume", resume, False),
            ("--workers", workers, None), ("--ray-address", ray_address, None),
            ("--iterations", iterations, None), ("--batch-size", batch_size, None),
            ("--no-exact", exact, True), ("--no-homogeneous", homogeneous, True),
            ("--plan-at", plan_at, "point"), ("--search", search, "auto"))
            if value != default])
        if engine is not None:
            engine = values.naming("--engine", get_engine, engine).name
        values.naming("--model", get_model, model)
        plan_profile(profile, inventory, peak_rps=peak_rps, model=model, workload=workload,
                     slo=SLO() if no_slo else SLO(ttft_ms, tpot_ms), engine=engine,
                     startup_s=startup_s, scenarios=scenarios, seed=seed, ranges=ranges,
                     router=router, island_granularity=island_granularity,
                     sim_check=sim_check, out=out, quiet=quiet)
        return
    if fleet is not None:
        from planner.cli.fleet import plan_fleet, refuse

        refuse([flag for flag, value, default in (
            ("--model", model, DEFAULT_MODEL), ("--workload", workload, DEFAULT_WORKLOAD),
            ("--ttft", ttft_ms, DEFAULT_SLO.ttft_ms), ("--tpot", tpot_ms, DEFAULT_SLO.tpot_ms),
            ("--no-slo", no_slo, False), ("--engine", engine, None),
            ("--target-rps", target_rps, None), ("--max-running", max_running, None),
            ("--max-tokens", max_tokens, None), ("--mem-fraction", mem_fraction, None),
            ("--inner", inner, DEFAULT_INNER), ("--objective", objective, "analytic"),
            ("--resume", resume, False),
            ("--workers", workers, None), ("--ray-address", ray_address, None),
            ("--no-sim-check", sim_check, True), ("--no-exact", exact, True),
            ("--no-homogeneous", homogeneous, True)) if value != default])
        if plan_at not in PLAN_AT:
            raise PlannerError(f"--plan-at must be one of {', '.join(PLAN_AT)}, got "
                               f"{plan_at!r}")
        if search not in SEARCHES:
            raise PlannerError(f"--search must be one of {', '.join(SEARCHES)}, got "
                               f"{search!r}")
        values.number(iterations, "--iterations", integer=True, ge=1,
                      le=values.MAX_ITERATIONS)
        values.number(batch_size, "--batch-size", integer=True, ge=1,
                      le=values.MAX_BATCH_SIZE)
        plan_fleet(fleet, inventory, budget, seed=seed, ranges=ranges, router=router,
                   plan_at=plan_at, colocated=colocated,
                   island_granularity=island_granularity,
                   exact_time_limit=exact_time_limit, out=out, quiet=quiet, search=search,
                   search_options={k: v for k, v in (("iterations", iterations),
                                                     ("batch_size", batch_size))
                                   if v is not None})
        return
    if resume and out is None:
        raise PlannerError("--resume needs the --out folder of the interrupted run")
    if engine is not None:
        engine = values.naming("--engine", get_engine, engine).name
    limits = values.engine_limits(max_running, max_tokens, mem_fraction)
    if plan_at not in PLAN_AT:
        raise PlannerError(f"--plan-at must be one of {', '.join(PLAN_AT)}, got {plan_at!r}")
    values.naming("--model", get_model, model)
    values.naming("--workload", load_workload, workload)
    inv = require_gpus(load_inventory(inventory), inventory)
    gpus = [e.gpu for e in inv.entries]
    if engine is None:
        engine = fleet_engine(gpus)
    else:  # a named engine that cannot run some of the inventory's GPUs: a usage error
        wrong = engine_flag_error(engine, gpus)
        if wrong:
            raise PlannerError(f"{inventory}: {wrong}")
    search_flags = [flag for flag, value in (
        ("--iterations", iterations), ("--batch-size", batch_size), ("--workers", workers),
        ("--ray-address", ray_address)) if value is not None]
    if search_flags and search != "auto" and search in SEARCHES and not iterative(search):
        raise PlannerError(f"{', '.join(search_flags)}: --search {search} has no iterations "
                           "or batches; they apply to the BO and random searches")
    options = {k: v for k, v in (("iterations", iterations), ("batch_size", batch_size))
               if v is not None and (search == "auto" or iterative(search))}
    req = PlanRequest(inv, model=model, workload=workload, budget=budget,
                      target_rps=target_rps, search=search, inner=inner, seed=seed,
                      ranges=ranges, slo=SLO() if no_slo else SLO(ttft_ms, tpot_ms),
                      search_options=options,
                      compare_homogeneous=homogeneous, compare_exact=exact,
                      exact_time_limit=exact_time_limit, engine=engine,
                      engine_limits=limits, plan_at=plan_at,
                      objective=objective, colocated=colocated,
                      island_granularity=island_granularity)
    run_dir = Path(out) if out is not None else _default_out(inventory, workload)
    check_run_folder(out if out is not None else run_dir)  # a str: Path("") would be "."
    checkpoint = run_dir.parent / f".{run_dir.name}.checkpoint.json"
    # A checkpoint is an earlier run's work: never deleted by a run that does not
    # finish, never silently replaced (issue 32)
    kind = file_kind(checkpoint)
    if resume and kind is None:
        raise PlannerError(f"--resume: nothing to resume in {run_dir} (no {checkpoint.name} "
                           "beside it); run without --resume")
    if resume and kind != "file":
        raise PlannerError(f"--resume: {checkpoint} is a {kind}, not a checkpoint file; move "
                           "it away to start over")
    if kind is not None and not resume:
        raise PlannerError(f"{checkpoint}: an interrupted run's checkpoint is there; resume "
                           "it with --resume and that run's flags, or delete it to start "
                           "over")
    console = Console(stderr=True, quiet=quiet)
    check_budget(req, str(inventory))

    progress, step = step_bars(console, quiet, 24)
    executor = make_executor(workers, ray_address)
    created = new_folders(checkpoint)
    try:
        with interrupt_on_sigterm(), progress:
            result = make_plan(req, progress=step, checkpoint=checkpoint, executor=executor,
                               resume=resume)
        used = result.search.name if result.search is not None else ""
        if search_flags and used and used in SEARCHES and not iterative(used):
            console.print(f"note: {', '.join(search_flags)} unused: --search auto ran the "
                          f"{used} search, which has no iterations or batches",
                          highlight=False, soft_wrap=True)
        if sim_check and not needs_context(inner):
            plan_dict = _close_loop(result, seed, router, console, quiet)
            held = plan_dict["summary"]
            if not float(held.get("requests_per_s") or 0.0) > 0:
                # a plan whose SLO holds at no rate is no plan (README: exit 1)
                note = str((held.get("closed_loop") or {}).get("note") or "")
                raise NoPlanError(f"no plan holds the SLO in simulation: the SLO holds at "
                                  f"no rate ({note}); raise --ttft/--tpot, add GPUs or "
                                  "plan with --no-slo")
        else:
            plan_dict = result.to_dict()
        written = write_run(plan_dict, run_dir)
    except KeyboardInterrupt:
        if not checkpoint.exists():
            remove_new_folders(created)
            print("interrupted: nothing saved (the search keeps a checkpoint only when it "
                  "is iterative: --search divider, direct or random)", file=sys.stderr)
            raise typer.Exit(130) from None
        print(f"interrupted: the search so far is saved in {checkpoint}; resume with\n"
              f"  {resume_command(run_dir)}", file=sys.stderr)
        raise typer.Exit(130) from None
    except BaseException:
        # Not resumable (no plan, a failed write, a bug): leave nothing of this run
        # behind -- but a checkpoint it was asked to resume is the user's, and stays.
        if not resume:
            checkpoint.unlink(missing_ok=True)
        remove_new_folders(created)
        raise
    finally:
        executor.close()
    checkpoint.unlink(missing_ok=True)
    if not quiet:
        results_console().print(summary_text(plan_dict))
    html = next((p for p in written if p.name == "report.html"), run_dir / "report.html")
    print(f"run folder: {run_dir}  (open {html})")
    if not quiet:
        print(f"launch files: planner export {run_dir} [--format shell|k8s]")
