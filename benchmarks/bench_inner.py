"""Inner-loop benchmark: solve time per layout and formulation x back-end (issue 4, item 7).

Seeded synthetic tables (:mod:`planner.inner.synthetic`) at 64 ranges x 32 islands, three
layout families:

* ``repeated`` -- random (type, size) pairs from 4 GPU types x {8, 16, 32}: identical
  islands repeat, as in the thesis's Table 5.2 layouts;
* ``divider``  -- the outer loop's divider encoding (§4.9.2): mostly distinct sizes;
* ``distinct`` -- ``repeated`` with every island's tables perturbed by +-5 %: no two
  islands alike (stress case for the pooling).

Run ``python benchmarks/bench_inner.py`` (default set), ``--quick`` (fewer layouts,
no CBC on the thesis MILP), ``--default-only`` (the default solver only), ``--sweep``
(the thesis M / tau sweep of docs/inner.md) or ``--compare`` (thesis vs weight-free
rates on the same layouts).  Every figure
printed is measured on this machine; timings are wall-clock per solve (model build +
solve + result), median over repeats, then summarised over layouts.
"""

from __future__ import annotations

import perfmodel.float_path  # noqa: F401  (before numpy: one float path on every CPU)

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from planner.inner import MaxRateMILP, ThesisMILP, evaluate  # noqa: E402
from planner.inner.backends import build_pulp  # noqa: E402
from planner.inner.synthetic import (  # noqa: E402
    divider_layout,
    random_layout,
    synthetic_problem,
)

INVENTORY = {"B300": 64, "H200": 128, "H800": 128, "H20": 256}
PER_TYPE = {"B300": 4, "H200": 8, "H800": 8, "H20": 12}


def layouts(family: str, n: int, *, islands: int = 32, ranges: int = 64):
    for seed in range(n):
        if family == "repeated":
            yield synthetic_problem(random_layout(islands, seed), ranges, seed=seed)[0]
        elif family == "distinct":
            yield synthetic_problem(random_layout(islands, seed), ranges, seed=seed,
                                    noise=0.05)[0]
        elif family == "divider":
            yield synthetic_problem(divider_layout(INVENTORY, PER_TYPE, seed), ranges,
                                    seed=seed, weights_gb=300.0)[0]
        else:
            raise ValueError(family)


def time_solver(solver, problems, repeats: int):
    per_layout, statuses, results = [], [], []
    for prob in problems:
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            res = solver.solve(prob)
            times.append(time.perf_counter() - t0)
        per_layout.append(statistics.median(times))
        statuses.append(res.status)
        results.append(res)
    return per_layout, statuses, results


def fmt(times):
    ms = np.array(times) * 1e3
    return (f"median {np.median(ms):8.1f} ms   p90 {np.percentile(ms, 90):8.1f}   "
            f"max {ms.max():8.1f}")


def bench(args) -> None:
    families = ["repeated", "divider", "distinct"]
    print(f"# inner solve time, {args.islands} islands x {args.ranges} ranges, "
          f"{args.layouts} layouts/family, {args.repeats} repeats")
    MaxRateMILP().solve(next(layouts("repeated", 1)))  # warm-up (imports, HiGHS init)
    configs = [
        ("maxrate", "bc", MaxRateMILP(solver="bc"), args.layouts, args.repeats),
        ("maxrate", "highs", MaxRateMILP(solver="highs"), args.layouts, 1),
        ("maxrate", "pulp-highs", MaxRateMILP(solver="pulp-highs"), args.slow_layouts, 1),
        ("maxrate", "cbc", MaxRateMILP(solver="cbc", time_limit=args.time_limit),
         args.slow_layouts, 1),
        ("thesis", "highs", ThesisMILP(solver="highs", time_limit=args.time_limit),
         args.thesis_layouts, 1),
        ("thesis", "pulp-highs", ThesisMILP(solver="pulp-highs", time_limit=args.time_limit),
         args.thesis_layouts, 1),
    ]
    if args.default_only:
        configs = configs[:1]
    elif not args.quick:
        configs.append(("thesis", "cbc", ThesisMILP(solver="cbc", time_limit=args.time_limit),
                        args.thesis_layouts, 1))
    for family in families:
        print(f"\n## {family}")
        for form, backend, solver, n, reps in configs:
            probs = list(layouts(family, n, islands=args.islands, ranges=args.ranges))
            times, statuses, _ = time_solver(solver, probs, reps)
            counts = {s: statuses.count(s) for s in sorted(set(statuses))}
            print(f"{form:8s} {backend:11s} n={n:2d}  {fmt(times)}  {counts}", flush=True)
    if args.default_only:
        return
    # Model-building overhead: numpy CSR (what "highs"/"bc" pass) vs a pulp model.
    print("\n## model build only (repeated family)")
    for form, solver in (("maxrate", MaxRateMILP()), ("thesis", ThesisMILP())):
        probs = list(layouts("repeated", 5, islands=args.islands, ranges=args.ranges))
        t_np, t_pulp = [], []
        for prob in probs:
            t0 = time.perf_counter()
            model = solver.build(prob)
            t_np.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            build_pulp(model)
            t_pulp.append(time.perf_counter() - t0)
        print(f"{form:8s} numpy {np.median(t_np) * 1e3:7.2f} ms   pulp rebuild "
              f"{np.median(t_pulp) * 1e3:7.1f} ms   ({model.n_cols} cols, {model.n_rows} rows)")


def compare(args) -> None:
    """Both formulations on the same layouts, at range and at full resolution."""
    print("# thesis MILP (defaults) vs weight-free max rate, same layouts; rates in req/s")
    print("# range resolution: T* (maxrate), thesis R_total / R_sustained / D_total;")
    print("# full resolution (evaluator): R_sustained (fixed split) and R_pooled of each")
    print("family    seed       T*  th.R_total  th.R_sust  ratio  th.D_tot |"
          "  sust.max  sust.th | pool.max  pool.th")
    for family in ("repeated", "divider"):
        for seed in range(args.thesis_layouts):
            prob, full = full_problem(family, seed, args.islands, args.ranges)
            best = MaxRateMILP().solve(prob)
            th = ThesisMILP(time_limit=args.time_limit).solve(prob)
            eb, et = evaluate(best, prob, full), evaluate(th, prob, full)
            print(f"{family:9s} {seed:4d} {best.extra['T']:8.2f} {th.R_total:11.2f} "
                  f"{th.R_sustained:10.2f} {th.R_sustained / best.extra['T']:6.3f} "
                  f"{th.D_total:9.2f} | {eb.R_sustained:9.2f} {et.R_sustained:8.2f} | "
                  f"{eb.R_pooled:8.2f} {et.R_pooled:8.2f}  [{th.status}]", flush=True)


def full_problem(family: str, seed: int, islands: int, ranges: int):
    if family == "repeated":
        return synthetic_problem(random_layout(islands, seed), ranges, seed=seed)
    return synthetic_problem(divider_layout(INVENTORY, PER_TYPE, seed), ranges, seed=seed,
                             weights_gb=300.0)


SWEEP_INV = {"B300": 32, "H200": 64, "H800": 64, "H20": 128}
SWEEP_PER = {"B300": 2, "H200": 4, "H800": 4, "H20": 6}


def sweep(args) -> None:
    """Thesis M / tau sweep behind the defaults (thesis_milp module docstring)."""
    sets = {
        "random 12x24": [synthetic_problem(random_layout(12, 100 + s, sizes=(8, 16, 32)),
                                           24)[0] for s in range(10)],
        "divider 16x32": [synthetic_problem(divider_layout(SWEEP_INV, SWEEP_PER, s), 32,
                                            weights_gb=300.0)[0] for s in range(10)],
    }
    print("# sustained rate of the thesis solution / T*: mean (min) over 10 layouts")
    for name, probs in sets.items():
        best = [MaxRateMILP(mip_rel_gap=1e-7).solve(p).extra["T"] for p in probs]
        print(f"\n## {name}")
        for M in (0.5, 1.0, None, 2.0, 4.0, 10.0):
            cells = []
            for tau in (0.0, 0.01, 0.05, 0.1):
                ratios = [ThesisMILP(M=M, tau=tau, time_limit=args.time_limit).solve(p)
                          .R_sustained / t for p, t in zip(probs, best, strict=True)]
                cells.append(f"tau={tau:4.2f} {np.mean(ratios):.3f} ({np.min(ratios):.3f})")
            label = "auto" if M is None else f"{M:4.1f}"
            print(f"M={label:5s} " + "  ".join(cells), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--islands", type=int, default=32)
    ap.add_argument("--ranges", type=int, default=64)
    ap.add_argument("--layouts", type=int, default=10, help="layouts per family")
    ap.add_argument("--slow-layouts", type=int, default=4,
                    help="layouts per family for the pulp back-ends")
    ap.add_argument("--thesis-layouts", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--default-only", action="store_true",
                    help="only the default solver (maxrate, bc)")
    ap.add_argument("--sweep", action="store_true")
    ap.add_argument("--compare", action="store_true")
    args = ap.parse_args()
    if args.quick:
        args.layouts, args.slow_layouts, args.thesis_layouts, args.repeats = 4, 2, 1, 3
    if args.sweep:
        sweep(args)
    elif args.compare:
        compare(args)
    else:
        bench(args)


if __name__ == "__main__":
    main()
