"""Compare the thesis MILP, maxrate and the pipeline solvers of seeds 000/001 (issue 7 item 5).

    .venv/bin/python scripts/compare_inner.py [--out docs/inner-comparison.md] [--quick]

Two tables, every figure computed here:

1. **Fixed layouts** under three model/workload contexts (DeepSeek-V3 on the thesis's
   Fig. 4.2 workload and on Azure conversation 2023, Llama-3.1-70B on Azure code 2023):
   Table 5.2 (a) and (d), and layouts of islands too small to hold the model alone.
2. **Whole plans** (`make_plan`, divider BO, seed 0) on the same inventories and
   budgets with each inner solver: what each buys for the money.

Latency is compared at *capacity-sized batches without queueing* for every solver: for
the pipeline solvers the seeds' mean response (and seed 000's TTFT) at their design
load; for the MILPs the island tables' TTFT (prefill latency) and TTFT + d̄ · TPOT at the
island's decode batch, averaged over islands by the rate each serves, ranges by p_j.
"""

from __future__ import annotations

import perfmodel.float_path  # noqa: F401  (before numpy: one float path on every CPU)

import argparse
import math
import os
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np

from perfmodel import get_gpu, get_model
from planner.context.evaluate import LayoutEvaluator, PlanningContext
from planner.context.thesis_cases import TABLE_5_2, context
from planner.inner import make_inner_solver
from planner.inner.result import InnerResult
from planner.workload import load_workload, make_ranges

SOLVERS = ("thesis", "maxrate", "seed000", "seed001")
ROOT = Path(__file__).resolve().parents[1]


def contexts(quick: bool) -> dict[str, PlanningContext]:
    base = context()
    out = {"DeepSeek-V3, thesis-fig4.2": base}
    if quick:
        return out
    conv = load_workload("azure-conv-2023")
    out["DeepSeek-V3, azure-conv-2023"] = replace(base, workload=conv,
                                                  ranges=make_ranges(conv, 250))
    code = load_workload("azure-code-2023")
    out["Llama-3.1-70B, azure-code-2023"] = replace(
        base, model=get_model("llama-3.1-70b"), workload=code, ranges=make_ranges(code, 250),
        gpus={**base.gpus, "L40S": get_gpu("L40S"), "A100-80G": get_gpu("A100-80G")})
    return out


def layouts(model: str) -> dict[str, tuple]:
    small = ((("H20", 4),) * 4 if model.startswith("DeepSeek")
             else (("L40S", 1),) * 4)
    mixed = ((("H200", 4),) * 2 + (("H20", 4),) * 2 if model.startswith("DeepSeek")
             else (("A100-80G", 1),) * 2 + (("L40S", 1),) * 2)
    return {"5.2(a) 8 x 32 DGX-B300": TABLE_5_2["a"], "5.2(d) mixed sizes": TABLE_5_2["d"],
            "small islands " + "+".join(sorted({f"{g}x{s}" for g, s in small})): small,
            "mixed small " + "+".join(sorted({f"{g}x{s}" for g, s in mixed})): mixed}


def milp_latency(r: InnerResult, ev: LayoutEvaluator) -> tuple[float, float]:
    """(TTFT, E2E) in seconds of a MILP result: island-table latencies at the range
    midpoints, weighted by the rate each island serves per range, then by p_j."""
    if not r.feasible:
        return math.nan, math.nan
    p = np.asarray(r.range_prob)
    mid = ((np.asarray(r.range_start) + np.asarray(r.range_end)) / 2).astype(int)
    d = ev.context.workload.decode_mean
    ttft = np.zeros(len(p))
    tpot = np.zeros(len(p))
    wp = np.zeros(len(p))
    wd = np.zeros(len(p))
    for isl in r.islands:
        if isl.role == "idle":
            continue
        table = ev.island(isl.gpu, isl.size)
        phase = table.prefill if isl.role == "prefill" else table.decode
        idx = np.clip(mid, 0, phase.latency_ms.shape[0] - 1)
        rate = np.asarray(isl.shares) * phase.rps[idx]
        if isl.role == "prefill":
            ttft += rate * phase.latency_ms[idx] * 1e-3
            wp += rate
        else:
            tpot += rate * phase.latency_ms[idx] * 1e-3
            wd += rate
    ok = (p > 0) & (wp > 0) & (wd > 0)
    if not ok.any():
        return math.nan, math.nan
    t1 = float(np.sum(p[ok] * ttft[ok] / wp[ok]) / p[ok].sum())
    t2 = float(np.sum(p[ok] * tpot[ok] / wd[ok]) / p[ok].sum())
    return t1, t1 + d * t2


def latency(r: InnerResult, ev: LayoutEvaluator) -> tuple[float, float]:
    if r.solver.startswith("seed"):
        return r.extra.get("mean_ttft_s", math.nan), r.extra.get("mean_response_s", math.nan)
    return milp_latency(r, ev)


def layout_rows(quick: bool):
    out = []
    for cname, ctx in contexts(quick).items():
        for label, layout in layouts(cname).items():
            for name in SOLVERS:
                kw = {"context": ctx} if name.startswith("seed") else {}
                ev = LayoutEvaluator(ctx, make_inner_solver(name, **kw))
                r = ev.solve(layout)
                ttft, e2e = latency(r, ev)
                out.append((cname, label, name, r.status, r.R_sustained if r.feasible else 0.0,
                            ttft, e2e, sum(a.role != "idle" for a in r.islands)))
    return out


def plan_rows(quick: bool):
    from planner.core.errors import NoPlanError
    from planner.fleet.inventory import load_inventory
    from planner.plan import PlanRequest, make_plan

    cases = [("gpus.yaml", 128.0)] if quick else [("gpus.yaml", 128.0), ("gpus.yaml", 512.0),
                                                   ("marketplace-2025.yaml", 256.0)]
    out = []
    for inv_name, budget in cases:
        inv = load_inventory(ROOT / "inventories" / inv_name)
        for name in ("maxrate", "seed000", "seed001"):
            req = PlanRequest(inv, workload="azure-conv-2023", budget=budget, inner=name,
                              ranges=16, compare_exact=False, compare_homogeneous=False,
                              search_options={"iterations": 3 if quick else 6,
                                              "batch_size": 4 if quick else 8})
            try:
                plan = make_plan(req)
            except NoPlanError as err:  # said in the table, not a crash
                why = str(err).split(": ", 1)[-1]
                out.append((f"{inv_name} @ {budget:g} $/h", name, 0.0, math.nan, math.nan,
                            math.nan, math.nan, math.nan, f"no plan ({why[:160]})"))
                continue
            ev = LayoutEvaluator(plan.context, make_inner_solver("maxrate"))
            ttft, e2e = latency(plan.result, ev)
            used = ", ".join(f"{n} {g}" for g, n in sorted(plan.gpus_used.items()) if n)
            # per length: the same shares replayed at every input length, a range's
            # requests pooled over its islands (planner.inner.evaluator's R_pooled --
            # what a range router sustains); tokens/s at that rate
            ev_full = plan.evaluation
            per_request = ev_full.sustained_tokens_per_s / max(ev_full.R_sustained, 1e-12)
            out.append((f"{inv_name} @ {budget:g} $/h", name, plan.value,
                        ev_full.R_pooled, ev_full.R_pooled * per_request,
                        plan.cost_per_hour, ttft, e2e, used))
    return out


def fmt(x: float) -> str:
    if not isinstance(x, float | int) or not math.isfinite(x):
        return "-"
    return f"{x:,.3g}" if abs(x) < 100 else f"{x:,.0f}"


def winners(rows, key, higher=True) -> dict[tuple, str]:
    """Best solver per group (group = row[:2]) by column ``key``."""
    best: dict[tuple, tuple[float, str]] = {}
    for row in rows:
        v = row[key]
        if not (isinstance(v, float | int) and math.isfinite(v) and v > 0):
            continue
        score = v if higher else -v
        g = row[:2]
        if g not in best or score > best[g][0]:
            best[g] = (score, row[2])
    return {g: s for g, (_, s) in best.items()}


def layout_table(data) -> str:
    thr = winners(data, 4)
    lat = winners(data, 6, higher=False)
    head = ("| context | layout | solver | status | requests/s | TTFT (s) | mean E2E (s) "
            "| islands used |\n|---|---|---|---|---|---|---|---|\n")
    body = ""
    for a, b, c, d, e, f, g, h in data:
        mark = (" **(most req/s)**" if thr.get((a, b)) == c else "") + (
            " *(lowest E2E)*" if lat.get((a, b)) == c else "")
        body += (f"| {a} | {b} | {c}{mark} | {d} | {fmt(e)} | {fmt(f)} | {fmt(g)} | {h} |\n")
    return head + body


def plan_table(data) -> str:
    head = ("| inventory @ budget | inner | requests/s (solver) | requests/s (per length) "
            "| tokens/s (per length) | $/h | TTFT (s) | mean E2E (s) | GPUs used |\n"
            "|---|---|---|---|---|---|---|---|---|\n")
    return head + "".join(f"| {a} | {b} | {fmt(c)} | {fmt(d)} | {fmt(e)} | {fmt(f)} | "
                          f"{fmt(g)} | {fmt(h)} | {i} |\n"
                          for a, b, c, d, e, f, g, h, i in data)


def _splice(text: str, tag: str, table: str) -> str:
    start, end = f"<!-- {tag} -->\n", f"<!-- /{tag} -->"
    if start not in text:
        text += f"\n{start}{end}\n"
    i, j = text.index(start) + len(start), text.index(end)
    return text[:i] + table + text[j:]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default="docs/inner-comparison.md")
    ap.add_argument("--quick", action="store_true",
                    help="one context and one small plan case (used by the tests)")
    ap.add_argument("--no-plans", action="store_true", help="only the fixed-layout table")
    ap.add_argument("--no-layouts", action="store_true", help="only the whole-plan table")
    args = ap.parse_args()
    out = Path(args.out)
    shown, tables = "", {}
    if not args.no_layouts:
        shown = layout_table(layout_rows(args.quick))
        tables["TABLE"] = shown
    if not args.no_plans:
        tables["PLANS"] = plan_table(plan_rows(args.quick))
        shown += "\n" + tables["PLANS"]
    # Read the page only now: the tables take minutes, and its prose may change meanwhile.
    text = out.read_text() if out.exists() else "<!-- TABLE -->\n<!-- /TABLE -->\n"
    if tables.get("TABLE"):
        text = _splice(text, "TABLE", tables["TABLE"])
    if tables.get("PLANS"):
        text = _splice(text, "PLANS", tables["PLANS"])
    fd, tmp = tempfile.mkstemp(dir=out.parent, suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, out)
    print(shown + f"wrote {out}")


if __name__ == "__main__":
    main()
