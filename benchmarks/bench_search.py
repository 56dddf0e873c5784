"""Wall time of the default search and of the exact solver on the real evaluator
(issue 5 goals: divider BO <= 30 s, exact <= 60 s, on this 2-core machine).

    .venv/bin/python benchmarks/bench_search.py [--workload azure-conv-2023] [--seed 0]

Inventory: the thesis's three GPU types (inventories/gpus.yaml), budget 512 $/h,
DeepSeek-V3, 32 ranges, maxrate inner solver.  Island tables are built on first use
and cached, so the first search pays for them; both timings include that cost.
Prints both wall times and the BO's gap to the exact optimum.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from perfmodel.island import clear_cache
from planner.context.evaluate import LayoutEvaluator, PlanningContext
from planner.fleet.inventory import load_inventory
from planner.inner import make_inner_solver
from planner.outer import DividerBO
from planner.outer.exact import ExactSearch
from planner.plan import PlanRequest

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workload", default="azure-conv-2023")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    req = PlanRequest(load_inventory(REPO / "inventories" / "gpus.yaml"),
                      workload=args.workload, budget=512.0)

    clear_cache()
    ev = LayoutEvaluator(PlanningContext.for_request(req), make_inner_solver("maxrate"))
    t0 = time.perf_counter()
    found = DividerBO().search(req.space(), ev, seed=args.seed)
    t_bo = time.perf_counter() - t0

    clear_cache()
    ev = LayoutEvaluator(PlanningContext.for_request(req), make_inner_solver("maxrate"))
    t0 = time.perf_counter()
    exact = ExactSearch().solve(req.space(), ev)
    t_exact = time.perf_counter() - t0

    gap = (exact.value - found.best_score.value) / exact.value
    print(f"divider BO (defaults: {found.settings.get('iterations')} iterations x q="
          f"{found.settings.get('batch_size')}, {found.evaluations} distinct layouts): "
          f"{t_bo:.1f} s, best {found.best_score.value:.1f} requests/s")
    print(f"exact MILP ({exact.candidates} columns after pruning {exact.pruned}): "
          f"{t_exact:.1f} s, {exact.status}, {exact.value:.1f} requests/s "
          f"(proven bound {exact.bound:.1f})")
    print(f"BO gap to the exact optimum: {100 * gap:.2f} %")


if __name__ == "__main__":
    main()
