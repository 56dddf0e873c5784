"""Wall time of the default outer search (issue 5 item 10: goal <= 30 s on 2 cores).

    .venv/bin/python benchmarks/bench_outer.py [--delay 0.02] [--runs 1] [--seed 0]
    .venv/bin/python benchmarks/bench_outer.py --compare [--trials 3] [--out DIR]

Default: the BO loop alone, ``DividerBO(iterations=15, warm_start=False, polish=0)``
(16 Sobol + 15 batches of q = 16, i.e. 256 proposals; the LP warm start needs the real
evaluator's tables and the polish is plain objective calls, so neither is loop cost)
on the synthetic objective of ``planner.outer.synthetic``, each evaluation sleeping
``--delay`` s to stand in for an inner-loop solve, on two spaces with three
GPU types and a $512/h budget: the thesis's Table 5.1 (a) inventory, which costs
exactly $512/h (6 parameters: n_t, s_t), and a $1120/h inventory where the budget binds
and the search also chooses how many GPUs to buy (9 parameters: + u_t).  Prints the wall time of
the search — once including the first import of Ax/BoTorch (cold), then per run — and
where it goes: objective calls, GP fits, acquisition optimisation, the rest (Ax
bookkeeping, decoding, our loop).

``--compare``: the thesis's outer-loop comparison (Figs. 5.5-5.12) on the same
objective and the Table 5.1 (a) space (``--procure``: the budget-binding one) —
divider BO, direct BO with a GP, direct SAASBO and random search, several seeds each,
equal proposal budgets — written as ``convergence.png``, ``convergence-time.png`` and
``results.json`` under ``--out``, with a table of final best values and times.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from planner.outer.synthetic import SyntheticObjective, default_space, thesis_space


class _Timer:
    """Accumulates the time spent in wrapped callables."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def wrap(self, name: str, fn):
        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - t0
        return timed


def _instrument(timer: _Timer) -> None:
    import ax.generators.torch.botorch_modular.acquisition as acq
    import ax.generators.torch.botorch_modular.utils as axutils

    acq.optimize_acqf = timer.wrap("acquisition", acq.optimize_acqf)
    axutils.fit_gpytorch_mll = timer.wrap("gp_fit", axutils.fit_gpytorch_mll)


def bench_default(args: argparse.Namespace) -> None:
    t0 = time.perf_counter()
    import planner.outer.ax_backend  # noqa: F401  (Ax, BoTorch, GPyTorch)
    from planner.outer import DividerBO

    import_s = time.perf_counter() - t0
    timer = _Timer()
    _instrument(timer)
    search = DividerBO(iterations=15, warm_start=False, polish=0)  # the BO loop alone
    print(f"DividerBO defaults: {search.settings()}")
    print(f"import of Ax + BoTorch: {import_s:.1f} s")
    for label, space in (("Table 5.1 (a), budget $512/h = inventory", thesis_space(512.0)),
                         ("$1120/h inventory, budget $512/h (procures)",
                          default_space(512.0))):
        print(f"-- {label}")
        walls = []
        for run in range(args.runs):
            timer.seconds.clear()
            obj = SyntheticObjective(space, delay=args.delay)
            call = timer.wrap("objective", obj)
            t0 = time.perf_counter()
            res = search.search(space, call, seed=args.seed + run)
            wall = time.perf_counter() - t0
            walls.append(wall)
            rest = wall - sum(timer.seconds.values())
            parts = ", ".join(f"{k} {v:.1f} s" for k, v in sorted(timer.seconds.items()))
            print(f"run {run}: {wall:.1f} s for {len(res.history)} proposals "
                  f"({res.evaluations} evaluated, {res.cache_hits} cache hits); {parts}, "
                  f"other {rest:.1f} s; best {res.best_score.value:.2f} rps at "
                  f"${res.best_score.cost_per_hour:.1f}/h")
        print(f"wall time of the default search: median {statistics.median(walls):.1f} s "
              f"(+{import_s:.1f} s first import), goal <= 30 s")


def bench_compare(args: argparse.Namespace) -> None:
    from planner.outer import DirectBO, DividerBO, RandomSearch
    from planner.outer.convergence import plot_convergence, summarise

    space = default_space(512.0) if args.procure else thesis_space(512.0)
    q, it = args.batch, args.iterations
    n = q + it * q
    searches = {
        "divider BO": DividerBO(iterations=it, batch_size=q, warm_start=False, polish=0),
        "direct BO (GP)": DirectBO(slots=args.slots, iterations=it, batch_size=q),
        "direct SAASBO": DirectBO(slots=args.slots, surrogate="saasbo", iterations=it,
                                  batch_size=q, saas_warmup=args.saas_warmup,
                                  saas_samples=args.saas_samples, saas_thinning=8),
        "random (divider)": RandomSearch(evaluations=n),
    }
    groups: dict[str, list] = {}
    for label, search in searches.items():
        groups[label] = []
        for seed in range(args.trials):
            t0 = time.perf_counter()
            res = search.search(space, SyntheticObjective(space, delay=args.delay), seed=seed)
            groups[label].append(res)
            print(f"{label:18s} seed {seed}: best {res.best_score.value:7.2f} rps "
                  f"after {len(res.history)} proposals, {time.perf_counter() - t0:6.1f} s",
                  flush=True)
    out = Path(args.out)
    plot_convergence(groups, out / "convergence.png",
                     title=f"synthetic objective, \\${1120 if args.procure else 512}/h "
                           f"inventory, budget \\$512/h, {args.trials} trials")
    plot_convergence(groups, out / "convergence-time.png", x="time")
    (out / "results.json").write_text(json.dumps(
        {k: [r.to_json() for r in v] for k, v in groups.items()}))
    print(f"\n{'search':18s} {'mean best':>10s} {'min':>8s} {'max':>8s} {'mean s':>8s}")
    for label, results in groups.items():
        s = summarise(results)
        print(f"{label:18s} {s.mean[-1]:10.2f} {s.low[-1]:8.2f} {s.high[-1]:8.2f} "
              f"{statistics.mean(r.wall_time for r in results):8.1f}")
    print(f"plots and histories in {out}/")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--delay", type=float, default=0.02, help="seconds per evaluation")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--compare", action="store_true")
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--slots", type=int, default=16)
    ap.add_argument("--saas-warmup", type=int, default=128)
    ap.add_argument("--saas-samples", type=int, default=64)
    ap.add_argument("--procure", action="store_true",
                    help="compare on the $1120/h inventory (budget binds) instead of "
                         "Table 5.1 (a)")
    ap.add_argument("--out", default=str(Path(tempfile.gettempdir()) / "outer-bench"))
    args = ap.parse_args()
    if args.compare:
        bench_compare(args)
    else:
        bench_default(args)


if __name__ == "__main__":
    main()
