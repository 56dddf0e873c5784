"""`planner simulate RUN_DIR`: replay a workload or trace against a plan's islands in the
request-level simulator and add the latency it gives to the run's report.

    planner simulate runs/plan --workload azure-conv-2023 --rate 2x --router netkv
    planner simulate runs/plan --router range,round-robin,jsq --rate 0.8x

Each router writes ``RUN_DIR/simulation/<router>-<rate>-s<seed>/`` (metrics.json,
requests.csv, latency CDFs, utilisation over time, KV transfer time per tier);
``RUN_DIR/simulation.json`` indexes every run, and report.md / report.html gain a
"Simulated latency" section.  The figures are read in a window of simulated time
after a 30 s warm-up (``--warmup``), so the completed rate and its confidence interval
do not depend on ``-n`` (planner.sim.run, planner.sim.metrics); warnings (a trace
shorter than ``-n``, a run too short for the window) are one line each on stderr and
are kept in the record.  A progress display (requests done, simulated time) runs on
stderr when it is a terminal.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from perfmodel.engines import ENGINES, get_engine
from planner.cli import values
from planner.cli.console import results_console
from planner.cli.progress import sim_bars
from planner.core.errors import PlannerError
from planner.sim.routers.registry import ROUTERS
from planner.workload.loaders import MAPPED_FORMATS, TRACE_FORMATS


def simulate(
    run_dir: Path = typer.Argument(..., help="A run folder written by `planner plan` "
                                   "(its plan.json is checked: docs/limits.md).",
                                   metavar="RUN_DIR"),
    router: str | None = typer.Option(None, "--router", help="Router, or several "
                                      f"separated by commas. {ROUTERS.help()}.",
                                      show_default="the router the plan was verified "
                                      "with (planner plan --router), else range"),
    router_config: Path | None = typer.Option(
        None, "--router-config", help="A router.json of `planner export` (edited or not): "
        "the range router follows its weights, so the simulated routing is the exported "
        "one.", show_default="the plan's weights"),
    rate: str = typer.Option("0.8x", "--rate", help="Requests/s (e.g. 300) or a multiple "
                             "of the plan's capacity (e.g. 0.8x, 2x)."),
    workload: str | None = typer.Option(None, "--workload", help="Workload to sample.",
                                        show_default="the plan's"),
    trace: Path | None = typer.Option(None, "--trace", help="Replay this trace file "
                                      "instead (timestamps scaled to --rate)."),
    trace_format: str = typer.Option("azure", "--trace-format", help="Format of --trace: "
                                     f"{', '.join(TRACE_FORMATS)}."),
    requests: int | None = typer.Option(None, "--requests", "-n", help="Requests to "
                                        "simulate (a longer run narrows the completed "
                                        "rate's confidence interval); at most "
                                        f"{values.MAX_SIM_REQUESTS:,}.",
                                        show_default="enough for the warm-up and a 60 s "
                                        "window at --rate"),
    arrivals: str = typer.Option("auto", "--arrivals", help="auto (trace timestamps, else "
                                 "gamma with the workload's CV), poisson or gamma."),
    seed: int = typer.Option(0, "--seed", help="Seed of the arrivals, lengths and router."),
    warmup: str = typer.Option("30s", "--warmup", help="Simulated seconds after the first "
                               "arrival before the figures are measured (e.g. 30s), or a "
                               "fraction of the arrival span (e.g. 0.1: the window then "
                               "moves with -n)."),
    ttft_slo: float | None = typer.Option(None, "--ttft-slo", help="TTFT SLO in seconds.",
                                          show_default="the plan's, else 2"),
    tpot_slo: float | None = typer.Option(None, "--tpot-slo", help="TPOT SLO in seconds.",
                                          show_default="the plan's, else 0.2"),
    no_fair_sharing: bool = typer.Option(False, "--no-fair-sharing", help="Give every KV "
                                         "transfer its tier's full bandwidth (faster, "
                                         "optimistic)."),
    independent_prefill: bool = typer.Option(
        False, "--independent-prefill", help="Let an MoE model's prefill attention-DP "
        "groups run on their own instead of in lockstep (the engines' way, and the "
        "closed loop's): optimistic about TTFT."),
    engine: str | None = typer.Option(None, "--engine", help="Perf-model engine. "
                                      f"{ENGINES.help()}.", show_default="the plan's"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress display, timing "
                               "lines or table (warnings and the files written still "
                               "print)."),
    profile: bool = typer.Option(False, "--profile", help="A schedule run (planner plan "
                                 "--profile): replay its busiest day slot by slot on "
                                 "unseen seeds and report each slot's SLO attainment "
                                 "(day-replay.json)."),
) -> None:
    """Simulate the plan in RUN_DIR and write latency metrics and plots beside it."""
    from planner.inner.registry import needs_context
    from planner.report import load_plan, render_report
    from planner.sim.arrivals import parse_rate
    from planner.sim.results import simulation_files
    from planner.sim.run import (
        ARRIVALS,
        SimSettings,
        parse_warmup,
        pipeline_settings,
        run_plan,
    )
    from planner.workload import load_workload

    values.seed(seed)
    if profile or (run_dir / "schedule.json").is_file():
        given = [flag for flag, value, default in (
            ("--router-config", router_config, None), ("--rate", rate, "0.8x"),
            ("--workload", workload, None), ("--trace", trace, None),
            ("-n/--requests", requests, None), ("--arrivals", arrivals, "auto"),
            ("--warmup", warmup, "30s"), ("--ttft-slo", ttft_slo, None),
            ("--tpot-slo", tpot_slo, None), ("--engine", engine, None),
            ("--no-fair-sharing", no_fair_sharing, False),
            ("--independent-prefill", independent_prefill, False)) if value != default]
        _replay_schedule(run_dir, profile, router, seed, given, quiet)
        return
    values.number(requests, "-n/--requests", integer=True, ge=1, le=values.MAX_SIM_REQUESTS)
    if arrivals not in ARRIVALS:  # here, not in the run, which names the plan's file
        raise PlannerError(f"--arrivals must be one of {', '.join(ARRIVALS)}, got "
                           f"{arrivals!r}")
    if trace is None and trace_format != "azure":
        raise PlannerError("--trace-format applies only with --trace")
    for value, flag in ((ttft_slo, "--ttft-slo"), (tpot_slo, "--tpot-slo")):
        values.number(value, flag, gt=0, le=values.MAX_LATENCY_MS / 1000)
    warmup_s, fraction = values.naming("--warmup", parse_warmup, warmup)
    values.naming("--rate", parse_rate, rate, 1.0)  # its form; "0.8x" needs the plan
    if engine is not None:
        engine = values.naming("--engine", get_engine, engine).name
    if workload is not None:
        values.naming("--workload", load_workload, workload)
    plan_path = run_dir / "plan.json"
    if (run_dir / "fleet.json").is_file() and not plan_path.exists():
        raise PlannerError(f"{run_dir}: a fleet run (fleet.json): simulate one of its "
                           f"services, {run_dir}/services/NAME; each was closed in "
                           "simulation at the rate the fleet promises it (fleet.json, "
                           "services[].slo_attainment_at_promise)")
    plan = load_plan(plan_path)
    if router is None:
        router = str(((plan.get("summary") or {}).get("closed_loop") or {}).get("router")
                     or "range")
    if router_config is not None:  # checked before any run: one line naming the field
        from planner.sim.routers.router_config import load_router_weights

        if [r.strip() for r in router.split(",") if r.strip()] != ["range"]:
            raise PlannerError("--router-config: the file sets the range router's weights; "
                               f"use it with --router range, not {router!r}")
        load_router_weights(router_config, plan)
    names = [r.strip() for r in router.split(",") if r.strip()]
    if not names:
        raise PlannerError("--router: no router named")
    for name in names:  # every flag before any run: --router range,foo fails now
        values.naming("--router", ROUTERS.lookup, name)
    if trace is not None:
        from planner.workload.loaders.common import check_file

        if trace_format not in TRACE_FORMATS:
            raise PlannerError(f"--trace-format: unknown trace format {trace_format!r}; "
                               f"known formats: {', '.join(TRACE_FORMATS)}")
        if trace_format in MAPPED_FORMATS:
            raise PlannerError(f"--trace-format {trace_format} needs a column mapping, which "
                               "simulate does not take: fit a workload from the trace "
                               f"(planner workload fit TRACE --format {trace_format} "
                               "--columns ...) and simulate with --workload")
        values.naming("--trace", check_file, trace)
    console = Console(stderr=True)
    progress, bar = sim_bars(console, quiet)
    runs = []
    with progress:
        for name in names:
            settings = SimSettings(router=name, rate=rate, requests=requests,
                                   arrivals=arrivals, seed=seed, warmup_s=warmup_s,
                                   warmup_fraction=0.1 if fraction is None else fraction,
                                   workload=workload, trace=str(trace) if trace else None,
                                   trace_format=trace_format, ttft_slo_s=ttft_slo,
                                   tpot_slo_s=tpot_slo, fair_sharing=not no_fair_sharing,
                                   engine=engine,
                                   prefill_lockstep=not independent_prefill,
                                   router_config=None if router_config is None
                                   else str(router_config))
            inner = (plan.get("request") or {}).get("inner")
            if needs_context(inner):  # "range" means JFFC on a pipeline plan
                settings = pipeline_settings(settings, inner)
            name = settings.router
            # The simulator checks the plan it is given by field ("plan.islands[3]
            # ..."); here that plan is a file, which the message should name.
            run = values.naming(str(plan_path), run_plan, plan, settings,
                                progress=bar(name))
            runs.append(run)
            for warning in run.warnings:
                console.print(f"warning: {name}: {warning}", soft_wrap=True, markup=False,
                              highlight=False)
            if not quiet:
                wall = max(run.result.wall_s, 1e-9)
                console.print(f"{name}: {run.requests_simulated:,} requests in "
                              f"{run.result.wall_s:.1f} s wall "
                              f"({run.requests_simulated / wall:,.0f} simulated requests/s)",
                              highlight=False)
    sim_files, records = simulation_files(run_dir, runs)
    written = render_report(run_dir, sim_files, records)
    out = results_console()
    if not quiet:
        out.print(_table(runs))
    out.print(f"wrote {len(written)} files in {run_dir}; open {run_dir / 'report.html'}",
              highlight=False, soft_wrap=True)


def _replay_schedule(run_dir: Path, profile: bool, router: str | None, seed: int,
                     given: list[str], quiet: bool) -> None:
    """``--profile``: the schedule run's busiest day, slot by slot."""
    import json

    from planner.core.atomic import write_text_atomic
    from planner.schedule.replay import replay_day
    from planner.schedule.run import SCHEDULE_FILE, load_schedule_run

    if not (run_dir / SCHEDULE_FILE).is_file():
        raise PlannerError(f"{run_dir}: --profile replays a schedule run (planner plan "
                           f"--profile), which writes {SCHEDULE_FILE}; this folder has none")
    if not profile:
        raise PlannerError(f"{run_dir}: a schedule run ({SCHEDULE_FILE}): give --profile "
                           "to replay its busiest day slot by slot")
    if given:
        raise PlannerError(f"{given[0]} does not apply with --profile: each slot is "
                           "simulated at its own rate and workload mix")
    names = [r.strip() for r in (router or "range").split(",") if r.strip()]
    if len(names) != 1:
        raise PlannerError("--router: --profile replays one router at a time")
    ROUTERS.lookup(names[0])
    run = load_schedule_run(run_dir)
    console = Console(stderr=True, quiet=quiet)
    where = str(run_dir / SCHEDULE_FILE)
    out = replay_day(run, where, router=names[0], seed=seed,
                     say=lambda m: console.print(m, style="dim", highlight=False))
    write_text_atomic(run_dir / "day-replay.json", json.dumps(out, indent=2))
    res = results_console()
    if not quiet:
        t = Table(title="Busiest day, slot by slot", title_justify="left")
        for h in ("slot", "stream", "rate (req/s)", "SLO attainment"):
            t.add_column(h, justify="right")
        for c in out["checks"]:
            t.add_row(str(c["slot"]), c["stream"], f"{c['rate_rps']:,.2f}",
                      f"{100 * c['attainment']:.2f} %")
        res.print(t)
    low = out["lowest_attainment"]
    res.print(f"lowest SLO attainment {100 * (low or 0):.2f} % over {len(out['slots'])} "
              f"slots; {len(out['slots_below_99'])} below 99 %; wrote "
              f"{run_dir / 'day-replay.json'}", highlight=False, soft_wrap=True)


def _table(runs) -> Table:
    from planner.run.simulations import summary_rows

    header, rows = summary_rows([r.summary() for r in runs])
    keep = [header.index(h) for h in TERMINAL_COLUMNS]  # the report has them all
    t = Table(title="Simulated latency", title_justify="left", title_style="bold",
              caption="completed req/s: rate ± 95 % confidence interval in the steady-state "
                      "window (docs/simulation.md); all columns in report.html",
              caption_justify="left")
    for k in keep:
        t.add_column(header[k], justify="left" if k < 2 else "right")
    for row in rows:
        t.add_row(*(row[k] for k in keep))
    return t


TERMINAL_COLUMNS = ("router", "rate", "offered req/s", "completed req/s",
                    "TTFT mean / p99 (s)", "E2E mean / p99 (s)", "SLO attainment")
