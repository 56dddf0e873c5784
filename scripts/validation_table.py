"""Regenerate docs/validation.md: how well the perf model predicts what it did not fit.

    .venv/bin/python scripts/validation_table.py

(a) kernel level and (b) held-out GPUs come from ``perfmodel/data/kernels/
validation.json``, written by ``scripts/calibrate_kernels.py`` when it fits the tables
(it holds shapes and GPUs out of the fit); (c) end to end is computed here, now, by
posing every published figure of ``perfmodel/data/validation_cases.yaml`` to the model.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from importlib import resources
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perfmodel import kernel_benchmarks as kb  # noqa: E402
from perfmodel import validation as val  # noqa: E402

OUT = ROOT / "docs" / "validation.md"


def _pct(x: float) -> str:
    return f"{100 * x:+.1f} %" if x < 0 or x > 0 else "0.0 %"


def _abs(x: float) -> str:
    return f"{100 * x:.1f} %"


def kernel_section(data: dict) -> list[str]:
    rows = data["kernels"]
    lines = ["## (a) Kernels: held-out shapes", "",
             f"Database: {data['database']}.  For every measured GPU, engine and operation, "
             "20 % of the shape groups (a GEMM's (n, k), an attention's head layout, a MoE "
             "model's expert shape and parallelism, an all-reduce's message size) are left "
             "out of the fit and predicted; the shipped tables are then fitted on all rows.  "
             "Errors are |predicted / measured - 1| per held-out row.", ""]
    by_gpu: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_gpu[r["gpu"]].append(r)
    pooled = []
    lines += ["| GPU | tables | held-out rows | median | 90th pct | worst table median | "
              "worst row |", "|---|---:|---:|---:|---:|---:|---:|"]
    for gpu in sorted(by_gpu):
        rs = by_gpu[gpu]
        n = sum(r["n"] for r in rs)
        med = float(np.average([r["median_abs"] for r in rs], weights=[r["n"] for r in rs]))
        p90 = float(np.average([r["p90_abs"] for r in rs], weights=[r["n"] for r in rs]))
        pooled += [(r["median_abs"], r["n"]) for r in rs]
        worst = max(rs, key=lambda r: r["median_abs"])
        lines.append(f"| {gpu} | {len(rs)} | {n:,} | {_abs(med)} | {_abs(p90)} | "
                     f"{_abs(worst['median_abs'])} ({worst['engine']} {worst['op']}) | "
                     f"{_abs(max(r['max_abs'] for r in rs))} |")
    total = sum(n for _, n in pooled)
    overall = float(np.average([m for m, _ in pooled], weights=[n for _, n in pooled]))
    lines += ["", f"**All GPUs: {total:,} held-out rows, row-weighted median error "
              f"{_abs(overall)}.**", "", "By operation (all GPUs and engines):", "",
              "| operation | tables | held-out rows | median | worst table median |",
              "|---|---:|---:|---:|---:|"]
    by_op: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_op[r["op"].split(":")[0]].append(r)
    for op in sorted(by_op):
        rs = by_op[op]
        med = float(np.average([r["median_abs"] for r in rs], weights=[r["n"] for r in rs]))
        lines.append(f"| {op} | {len(rs)} | {sum(r['n'] for r in rs):,} | {_abs(med)} | "
                     f"{_abs(max(r['median_abs'] for r in rs))} |")
    return lines + [""]


def transfer_section(data: dict) -> list[str]:
    lines = ["## (b) GPUs the database lacks: held-out transfer", "",
             "A measured GPU is predicted from another GPU's fitted tables and its own "
             "datasheet, by the transfer rule of `perfmodel/kernels/transfer.py` "
             "(docs/perfmodel.md): compute operations from the named source, communication "
             "from the nearest GPU with the same interconnect class.  Bias is the median "
             "signed error.", "",
             "| target | from | engine | operation | rows | median | bias |",
             "|---|---|---|---|---:|---:|---:|"]
    pairs: dict[tuple, list[dict]] = defaultdict(list)
    for r in data["transfer"]:
        pairs[(r["target"], r["source"])].append(r)
        lines.append(f"| {r['target']} | {r['source']} | {r['engine']} | {r['op']} | "
                     f"{r['n']:,} | {_abs(r['median_abs'])} | {_pct(r['median_signed'])} |")
    lines += ["", "Summary (row-weighted over operations and engines):", "",
              "| target | compute from | median | bias |", "|---|---|---:|---:|"]
    by_target: dict[str, list[dict]] = defaultdict(list)
    for r in data["transfer"]:
        by_target[r["target"]].append(r)
    for target, rs in by_target.items():
        compute = [r for r in rs if not r["op"].startswith(("allreduce", "alltoall"))]
        src = compute[0]["source"] if compute else rs[0]["source"]
        w = [r["n"] for r in rs]
        lines.append(f"| {target} | {src} | "
                     f"{_abs(float(np.average([r['median_abs'] for r in rs], weights=w)))} | "
                     f"{_pct(float(np.average([r['median_signed'] for r in rs], weights=w)))} |")
    return lines + [""]


def published_kernel_section() -> list[str]:
    rows = kb.table()
    summ = kb.summary(rows)
    _, sources = kb.load()
    lines = ["### A GPU outside the database: published kernel benchmarks", "",
             "Every pair above has the same tensor rate per SM.  The H20 does not (the "
             "Hopper SM, tensor cores throttled to a quarter of the H100's rate), and there "
             "the rule departs most from carrying a kernel's efficiency over; it is "
             "checked on published DeepGEMM benchmarks of one kernel on both GPUs "
             "(`perfmodel/data/kernel_benchmarks.yaml`, "
             "`perfmodel/kernel_benchmarks.py`): a masked grouped FP8 GEMM of `groups` "
             "experts, each m x n x k, predicted from SGLang's fitted FP8-block GEMM "
             "tables as one m x (groups n) x k GEMM.  The H100 rows check that proxy on a "
             "measured GPU; the H20 rows the transfer rule, and the efficiency carried over "
             "(the fitted GPU's efficiency at the shape on the H20's roofline).",
             "",
             "| GPU | tables of | groups, m, n, k | measured | ours | error "
             "| efficiency carried over |",
             "|---|---|---|---:|---:|---:|---:|"]
    for r in rows:
        g, m, n, k = r["shape"]
        lines.append(f"| {r['gpu']} | {r['fitted_on']} | {g}, {m}, {n}, {k} | "
                     f"{r['measured_us']:,.0f} us | {r['ours_us']:,.0f} us | "
                     f"{_pct(r['error'])} | {_pct(r['carried_error'])} |")
    lines.append("")
    for gpu, v in summ.items():
        lines.append(f"- **{gpu}**: median |error| {_abs(v['median_abs'])}, worst "
                     f"{_abs(v['worst_abs'])} (efficiency carried over: median "
                     f"{_abs(v['carried_median_abs'])}, "
                     f"worst {_abs(v['carried_worst_abs'])}).")
    lines += ["", "Sources:", ""]
    lines += [f"- {k}: {v['title']} ({v['date']}), {v['url']}" for k, v in sources.items()]
    return lines + [""]


def e2e_section(rows: list[dict], summary: dict) -> list[str]:
    lines = ["## (c) End to end: published serving figures", "",
             "Each row poses a published measurement to the model with what the source "
             "fixed: GPU, model and precision, engine, parallel layout, lengths, batch or "
             "token budget (`perfmodel/data/validation_cases.yaml`, with the quote each "
             "figure comes from).  Error = ours / published - 1 (for TTFT, published / ours "
             "- 1, so that a model that is too fast reads negative everywhere).  None of "
             "these rows is used to fit anything.", "",
             f"**Scored rows: {summary['rows']} over {summary['gpus']} GPU types; median "
             f"|error| {_abs(summary['median_abs'])}, worst {_abs(summary['worst_abs'])}; "
             f"median signed error dense {_pct(summary['median_signed_dense'])}, MoE "
             f"{_pct(summary['median_signed_moe'])}.**", "",
             _held_out_line(val.held_out_summary(rows)), "",
             "**The protocol from issue 29 on** (`perfmodel/validation_split.py`, committed "
             "before any further fitting): a case is held out when "
             "`sha256(\"planner-validation-split-2026-11-27:\" + id)` falls in the lowest "
             "third of its range -- no figure, error or prediction enters it, and a case "
             "keeps its side for ever (`tests/perfmodel/test_validation_split.py` pins the "
             "sides of the rows below); headline errors are reported on the held-out rows, "
             "and only calibration rows may inform a change to the model.  New published "
             "rows are committed first to `perfmodel/data/posed/*.yaml` -- the figure and "
             "its quote, the source's URL, the fields the source states (`stated`) and "
             "every other field with the default assumed and why (`assumed`) -- with no "
             "prediction in the commit; a later commit scores them, and the history shows "
             "the order.", "",
             "*Set*: held out or calibration (`perfmodel.validation_split`, by case id "
             "alone).  *KV flipped* and *FP8 attention flipped*: the row's error with that "
             "assumption the other way (bf16 <-> fp8 KV cache; FP8 attention on <-> off) -- "
             "how much the row's verdict rests on it.", "",
             "| case | GPU | model | mode | engine | unit | published | ours | error | set "
             "| KV flipped | FP8 attention flipped |",
             "|---|---|---|---|---|---|---:|---:|---:|---|---:|---:|"]
    for r in rows:
        if r["scored"]:
            f = r["flipped"]
            lines.append(f"| {r['case']} | {r['gpu']} | {r['model']} | {r['mode']} | "
                         f"{r['engine']} | {r['unit']} | {r['published']:,.0f} | "
                         f"{r['ours']:,.0f} | {_pct(r['error'])} | "
                         f"{'held out' if r['held_out'] else 'calibration'} | "
                         f"{_pct(f['kv'])} | {_pct(f['fp8_attention'])} |")
    lines += ["", f"Not scored (engine releases before {val.SCORED_FROM}, whose kernels the "
              "database does not hold):", "",
              "| case | GPU | model | mode | unit | published | ours | error |",
              "|---|---|---|---|---|---:|---:|---:|"]
    for r in rows:
        if not r["scored"]:
            lines.append(f"| {r['case']} | {r['gpu']} | {r['model']} | {r['mode']} | "
                         f"{r['unit']} | {r['published']:,.0f} | {r['ours']:,.0f} | "
                         f"{_pct(r['error'])} |")
    _, sources = val.load_cases()
    lines += ["", "Sources:", ""]
    for key, src in sources.items():
        lines.append(f"- {key}: {src['title']} ({src['date']}), {src['url']}")
    return lines + [""]


def _held_out_line(h: dict) -> str:
    if not h.get("rows"):
        return "**Held-out rows: none scored yet.**"
    return (f"**Held-out rows (the headline from issue 29 on): {h['rows']} over {h['gpus']} "
            f"GPU types; median |error| {_abs(h['median_abs'])}, worst "
            f"{_abs(h['worst_abs'])}, median signed {_pct(h['median_signed'])}.**")


def render() -> str:
    data = json.loads(resources.files("perfmodel").joinpath(
        "data/kernels/validation.json").read_text())
    rows = val.table()
    summary = val.summary(rows)
    head = ["# Validation of the performance model", "",
            "Generated by `.venv/bin/python scripts/validation_table.py` (kernel tables "
            "fitted by `scripts/calibrate_kernels.py`).  Three questions, each on data the "
            "model was not fitted to: does a fitted kernel table predict shapes it did not "
            "see (a); does the transfer rule predict a GPU it did not see (b); does the "
            "whole model predict published serving figures (c).", ""]
    return "\n".join(head + kernel_section(data) + transfer_section(data)
                     + published_kernel_section() + e2e_section(rows, summary))


def summary_json() -> str:
    """The shipped summary (perfmodel.validation.SUMMARY_FILE) of the scored rows."""
    rows = val.table()
    return json.dumps({**val.summary(rows), "by_gpu": val.by_gpu(rows),
                       "held_out": val.held_out_summary(rows),
                       "source": "docs/validation.md (c), scripts/validation_table.py"},
                      indent=1, sort_keys=True) + "\n"


def main() -> None:
    OUT.write_text(render())
    summary_path = ROOT / "perfmodel" / val.SUMMARY_FILE
    summary_path.write_text(summary_json())
    print(f"wrote {OUT} and {summary_path}")


if __name__ == "__main__":
    main()
