"""Colocated islands in simulation against the perf model (issue 28, item 5).

For one colocated (``both``) island of 1, 2, 4 and 8 H100s serving a workload, the
island is planned as the planner plans it -- ``planner.plan.layout_plan_dict`` on the
one-island layout, ``--colocated on``, GPU granularity, TTFT 2,000 ms and TPOT 50 ms,
the default engine -- and its plan dict is simulated as the closed loop checks a plan
(``planner.sim.closed_loop.simulate_at``: the range router, the workload's own
burstiness, a 30 s warm-up, completions counted in the window after it) with arrivals
at ``--load`` x the perf model's rate, so the island runs saturated.  The table gives
the perf model's rate (the plan's ``requests_per_s``: the colocated table's rate over
the workload mix), the simulated completion rate and their ratio (the mean over
``--seeds``; the spread when more than one), and the simulated TPOT.

    .venv/bin/python benchmarks/colocated_sim.py [--models llama-3.1-70b,llama-3.1-8b]
        [--workloads azure-code-2023,azure-conv-2023] [--sizes 1,2,4,8] [--load 1.3]
        [--seeds 0]

Llama-3.1-70B's weights (141 GB) do not fit one H100, and on two its KV cache is too
small for the SLO: those rows say "no plan".  A few seconds per row on 2 cores.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

GPU = "H100-SXM"


def colocated_plan(model: str, workload: str, gpus: int, ttft_ms: float, tpot_ms: float
                   ) -> tuple[dict | None, str]:
    """(plan dict of one colocated island of ``gpus`` H100s, or None; why not)."""
    from perfmodel import SLO
    from planner.context.evaluate import LayoutEvaluator, PlanningContext
    from planner.context.request import PlanRequest
    from planner.fleet.inventory import inventory_from_dict
    from planner.inner import make_inner_solver
    from planner.plan import layout_plan_dict

    inv = inventory_from_dict({"name": f"one-{GPU}x{gpus}", "gpus": [
        {"type": GPU, "count": gpus, "price_per_hour": 1.0}]}, "benchmark")
    req = PlanRequest(inv, model=model, workload=workload, slo=SLO(ttft_ms, tpot_ms),
                      colocated="on", island_granularity="gpu")
    ctx = PlanningContext.for_request(req)
    solver = make_inner_solver(req.inner)
    ev = LayoutEvaluator(ctx, solver)
    plan, _ = layout_plan_dict(req, ctx, ev, solver, ((GPU, gpus),))
    if plan is None:
        table = ev.colocated_table(GPU, gpus)
        why = table.reason if table is not None and table.reason else "no length served"
        return None, why
    return plan, ""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="llama-3.1-70b,llama-3.1-8b")
    ap.add_argument("--workloads", default="azure-code-2023,azure-conv-2023")
    ap.add_argument("--sizes", default="1,2,4,8")
    ap.add_argument("--load", type=float, default=1.3,
                    help="offered rate as a multiple of the perf model's")
    ap.add_argument("--seeds", default="0", help="comma-separated simulation seeds")
    ap.add_argument("--ttft", type=float, default=2000.0)
    ap.add_argument("--tpot", type=float, default=50.0)
    args = ap.parse_args()

    from planner.sim.closed_loop import simulate_at

    seeds = [int(x) for x in args.seeds.split(",")]
    head = (f"{'model':<14} {'workload':<16} {'GPUs':>4} {'config':<12} {'batch':>5} "
            f"{'perf model':>10} {'offered':>8} {'simulated':>9} {'sim/perf':>8} "
            f"{'TPOT p50':>8} {'TPOT p90':>8} {'wall s':>6}")
    print(f"one colocated {GPU} island, TTFT {args.ttft:g} ms, TPOT {args.tpot:g} ms; "
          f"offered {args.load:g}x the perf model's rate; seeds {args.seeds}; "
          "rates in requests/s, TPOT in ms (simulated)")
    print(head)
    print("-" * len(head))
    for model in args.models.split(","):
        for workload in args.workloads.split(","):
            for size in (int(x) for x in args.sizes.split(",")):
                t0 = time.perf_counter()
                plan, why = colocated_plan(model, workload, size, args.ttft, args.tpot)
                if plan is None:
                    print(f"{model:<14} {workload:<16} {size:>4} no plan: {why}")
                    continue
                (isl,) = plan["islands"]
                rate = float(plan["summary"]["requests_per_s"])
                checks = [simulate_at(plan, args.load * rate, seed) for seed in seeds]
                done = [c.completed_rps for c in checks]
                mean = sum(done) / len(done)
                spread = (f" ±{(max(done) - min(done)) / 2 / rate:.3f}"
                          if len(done) > 1 else "")
                p50 = sum(c.tpot_p50_ms for c in checks) / len(checks)
                p90 = sum(c.tpot_p90_ms for c in checks) / len(checks)
                wall = time.perf_counter() - t0
                ratio = mean / rate if rate > 0 else math.nan
                print(f"{model:<14} {workload:<16} {size:>4} {isl['config']:<12} "
                      f"{int(isl['batch']):>5} {rate:>10.2f} {args.load * rate:>8.2f} "
                      f"{mean:>9.2f} {ratio:>8.3f}{spread} {p50:>8.1f} {p90:>8.1f} "
                      f"{wall:>6.1f}", flush=True)


if __name__ == "__main__":
    main()
