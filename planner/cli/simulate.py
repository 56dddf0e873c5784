"""`planner simulate RUN_DIR`: replay a workload or trace against a plan's islands in the
request-level simulator and add the latency it gives to the run's report.

    planner simulate runs/plan --workload azure-conv-2023 --rate 2x --router netkv
    planner simulate runs/plan --router range,round-robin,jsq --rate 0.8x

Each router writes ``RUN_DIR/simulation/<router>-<rate>-s<seed>/`` (metrics.json,
requests.csv, latency CDFs, utilisation over time, KV transfer time per tier);
``RUN_DIR/simulation.json`` indexes every run, and report.md / report.html gain a
"Simulated latency" section.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from planner.errors import PlannerError
from planner.sim.routers.registry import ROUTERS


def simulate(
    run_dir: Path = typer.Argument(..., help="A run folder written by `planner plan`."),
    router: str = typer.Option("range", "--router", help="Router, or several separated by "
                               f"commas. {ROUTERS.help()}."),
    rate: str = typer.Option("0.8x", "--rate", help="Requests/s (e.g. 300) or a multiple "
                             "of the plan's capacity (e.g. 0.8x, 2x)."),
    workload: str | None = typer.Option(None, "--workload", help="Workload to sample "
                                        "(default: the plan's)."),
    trace: Path | None = typer.Option(None, "--trace", help="Replay this trace file "
                                      "instead (timestamps scaled to --rate)."),
    trace_format: str = typer.Option("azure", "--trace-format", help="azure, azure2024, "
                                     "burstgpt, mooncake, csv, jsonl."),
    requests: int = typer.Option(20_000, "--requests", "-n", help="Requests to simulate."),
    arrivals: str = typer.Option("auto", "--arrivals", help="auto (trace timestamps, else "
                                 "gamma with the workload's CV), poisson or gamma."),
    seed: int = typer.Option(0, "--seed", help="Seed of the arrivals, lengths and router."),
    warmup: float = typer.Option(0.1, "--warmup", help="Fraction of the arrival span "
                                 "excluded from the metrics."),
    ttft_slo: float | None = typer.Option(None, "--ttft-slo", help="TTFT SLO in seconds "
                                          "(default: the plan's, else 2)."),
    tpot_slo: float | None = typer.Option(None, "--tpot-slo", help="TPOT SLO in seconds "
                                          "(default: the plan's, else 0.2)."),
    no_fair_sharing: bool = typer.Option(False, "--no-fair-sharing", help="Give every KV "
                                         "transfer its tier's full bandwidth (faster, "
                                         "optimistic)."),
    engine: str | None = typer.Option(None, "--engine", help="Perf-model engine: trtllm, "
                                      "sglang, vllm or roofline (default: the plan's)."),
) -> None:
    """Simulate the plan in RUN_DIR and write latency metrics and plots beside it."""
    from planner.inner.registry import needs_context
    from planner.report import load_plan, render_report
    from planner.sim.results import write_simulation
    from planner.sim.run import SimSettings, pipeline_settings, run_plan

    plan = load_plan(run_dir / "plan.json")
    names = [r.strip() for r in router.split(",") if r.strip()]
    if not names:
        raise PlannerError("--router: no router named")
    console = Console(stderr=True)
    runs = []
    for name in names:
        settings = SimSettings(router=name, rate=rate, requests=requests, arrivals=arrivals,
                               seed=seed, warmup_fraction=warmup, workload=workload,
                               trace=str(trace) if trace else None, trace_format=trace_format,
                               ttft_slo_s=ttft_slo, tpot_slo_s=tpot_slo,
                               fair_sharing=not no_fair_sharing, engine=engine)
        inner = (plan.get("request") or {}).get("inner")
        if needs_context(inner):  # "range" means JFFC on a pipeline plan
            settings = pipeline_settings(settings, inner)
        name = settings.router
        with console.status(f"simulating {requests:,} requests with router {name} ..."):
            run = run_plan(plan, settings)
        runs.append(run)
        console.print(f"{name}: {run.result.wall_s:.1f} s wall, "
                      f"{requests / max(run.result.wall_s, 1e-9):,.0f} simulated requests/s",
                      highlight=False)
    written = write_simulation(run_dir, runs)
    written += render_report(run_dir)
    Console().print(_table(runs))
    Console().print(f"wrote {len(written)} files in {run_dir}; open "
                    f"{run_dir / 'report.html'}", highlight=False)


def _table(runs) -> Table:
    from planner.run.simulations import summary_rows

    header, rows = summary_rows([r.summary() for r in runs])
    keep = [header.index(h) for h in TERMINAL_COLUMNS]  # the report has them all
    t = Table(title="Simulated latency (all columns in report.html)")
    for k in keep:
        t.add_column(header[k], justify="left" if k < 2 else "right")
    for row in rows:
        t.add_row(*(row[k] for k in keep))
    return t


TERMINAL_COLUMNS = ("router", "rate", "offered req/s", "completed req/s",
                    "TTFT mean / p99 (s)", "E2E mean / p99 (s)", "SLO attainment")
