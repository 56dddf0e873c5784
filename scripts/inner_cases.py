"""Regenerate Figs. 5.1-5.4-style plots for the thesis's inner-loop cases (Table 5.2).

    .venv/bin/python scripts/inner_cases.py [--out reports/inner-cases] [--inner thesis]

For each layout (a)-(d): Fig. 5.1 (each island's prefill and decode benchmark per
range), Fig. 5.2 (assignment shares per range), Fig. 5.3 (throughput per range per
island) and Fig. 5.4 (model vs evaluated per-length throughput against the workload).
Prints R_prefill, R_decode, R_total, D_total and the weight-free rate of each case.
"""

from __future__ import annotations

import perfmodel.float_path  # noqa: F401  (before numpy: one float path on every CPU)

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from planner.context.evaluate import LayoutEvaluator  # noqa: E402
from planner.context.thesis_cases import TABLE_5_2, TITLES, context  # noqa: E402
from planner.inner import evaluate, make_inner_solver  # noqa: E402
from planner.report.plots import assignment_figure, per_length_figure, png_bytes  # noqa: E402
from planner.run.plan_json import plan_dict  # noqa: E402


def benchmark_figure(ev, layout, title):
    """Fig. 5.1: b^P_ij and b^D_ij of every island, per range midpoint."""
    fig, axes = plt.subplots(1, 2, figsize=(12, 4), constrained_layout=True)
    mid = ev.context.ranges.mid
    for gpu, size in sorted(set(layout)):
        p, d = ev.range_tables(gpu, size)
        axes[0].plot(mid, p, label=f"{gpu} x{size}")
        axes[1].plot(mid, d, label=f"{gpu} x{size}")
    for ax, phase in zip(axes, ("prefill", "decode"), strict=True):
        ax.set(title=f"{phase} benchmark", xlabel="input length (range midpoint)",
               ylabel="requests/s")
        ax.grid(alpha=0.3)
    axes[1].legend(fontsize=7)
    fig.suptitle(f"Fig. 5.1-style: {title}")
    return fig


def per_range_figure(res, problem, title):
    """Fig. 5.3: throughput each island delivers on each range (share x benchmark),
    stacked per phase."""
    fig, axes = plt.subplots(1, 2, figsize=(12, 4), constrained_layout=True, sharey=True)
    mid = problem.range_mid
    width = float(np.diff(mid).mean()) if len(mid) > 1 else 1.0
    for ax, phase, table in ((axes[0], "prefill", problem.prefill_rps),
                             (axes[1], "decode", problem.decode_rps)):
        bottom = np.zeros(len(mid))
        for i, a in enumerate(res.islands):
            if a.role != phase:
                continue
            delivered = np.asarray(a.shares) * table[i]
            ax.bar(mid, delivered, width=width, bottom=bottom, label=f"{a.gpu} x{a.size}")
            bottom += delivered
        ax.set(title=f"{phase}", xlabel="input length (range)", ylabel="requests/s")
        ax.legend(fontsize=6, ncol=2)
    fig.suptitle(f"Fig. 5.3-style: throughput per range and island, {title}")
    return fig


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=Path("reports/inner-cases"))
    ap.add_argument("--inner", default="thesis")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    ctx = context()
    solver = make_inner_solver(args.inner)
    ev = LayoutEvaluator(ctx, solver, objective="thesis" if args.inner == "thesis" else
                         "sustained", range_rate="midpoint")
    exact = LayoutEvaluator(ctx, make_inner_solver("maxrate"), range_rate="midpoint")
    print(f"{'case':<36} {'R_prefill':>10} {'R_decode':>10} {'R_total':>10} "
          f"{'D_total':>9} {'eval R':>9} {'max-rate T':>10}")
    for case, layout in TABLE_5_2.items():
        title = TITLES[case]
        problem = ev.problem(layout)
        res = solver.solve(problem)
        full = evaluate(res, problem, ev.full_resolution(layout))
        t_exact = exact.solve(layout).R_sustained
        print(f"{title:<36} {res.R_prefill:10.1f} {res.R_decode:10.1f} {res.R_total:10.1f} "
              f"{res.D_total:9.2f} {full.R_sustained:9.1f} {t_exact:10.1f}")
        plan = plan_dict(request={"inventory": {"gpus": []}, "model": ctx.model.name,
                                  "workload": ctx.workload.name},
                         result=res, evaluation=full, ranges_mid=ctx.ranges.mid,
                         prices={g: 0.0 for g in ctx.gpus}, available={}, budget=None)
        figs = {"fig5.1": benchmark_figure(ev, layout, title),
                "fig5.2": assignment_figure(plan), "fig5.3": per_range_figure(
                    res, problem, title), "fig5.4": per_length_figure(plan)}
        for name, fig in figs.items():
            (args.out / f"{case}-{name}.png").write_bytes(png_bytes(fig))
            plt.close(fig)
    print(f"plots written to {args.out}/")


if __name__ == "__main__":
    main()
