"""Regenerate docs/validation.md: how well the perf model predicts what it did not fit.

    .venv/bin/python scripts/validation_table.py

(a) kernel level and (b) held-out GPUs come from ``perfmodel/data/kernels/
validation.json``, written by ``scripts/calibrate_kernels.py`` when it fits the tables
(it holds shapes and GPUs out of the fit); (c) end to end is computed here, now, by
posing every published figure of ``perfmodel/data/validation_cases.yaml`` and of
``perfmodel/data/posed/*.yaml`` to the model.  The same run writes the shipped summary
(``perfmodel/data/validation_summary.json``, with issue 29's held-out goals) and the
error bands (``perfmodel/data/error_bands.json``), and prints the goals beside their
figures, met or NOT met, with the breadth counts.
"""

from __future__ import annotations

import perfmodel.float_path  # noqa: F401  (before numpy: one float path on every CPU)

import json
import sys
from collections import defaultdict
from importlib import resources
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perfmodel import error_band as eb  # noqa: E402
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


def _set(r: dict) -> str:
    return "held out" if r["held_out"] else "calibration"


#: Column heads of the sensitivity columns, one per ``perfmodel.validation.FLIPS`` entry.
FLIP_LABELS = {"kv": "KV flipped", "fp8_attention": "FP8 attention flipped",
               "gpu_variant": "GPU variant flipped", "serving_stack": "serving stack off",
               "lengths": "mean lengths", "router": "router pooled",
               "fp8_scope": "FP8 scope flipped", "finite_run": "steady point",
               "output_law": "fixed answer lengths", "throughput_unit": "as total tokens",
               "stack_era": "as today's stack"}


def _flip_heads() -> tuple[str, str]:
    """The sensitivity columns' heads and their alignment cells."""
    return (" | ".join(FLIP_LABELS[k] for k in val.FLIPS),
            "|".join("---:" for _ in val.FLIPS))


def _flips(r: dict) -> str:
    f = r["flipped"]
    return " | ".join(_pct(f[k]) if k in f and np.isfinite(f[k]) else "--" for k in val.FLIPS)


def _from(r: dict) -> str:
    return "cases" if r["origin"] == val.CASES_FILE else r["origin"].removesuffix(".yaml")


def _err(x: float | None) -> str:
    return "--" if x is None else _pct(x)


def e2e_section(rows: list[dict], doc: dict, bands: dict) -> list[str]:
    older = doc["validation_cases"]
    heads, aligns = _flip_heads()
    lines = ["## (c) End to end: published serving figures", "",
             "Each row poses a published measurement to the model with what the source "
             "fixed: GPU, model and precision, engine, parallel layout, lengths, batch, "
             "concurrency or token budget.  Two files hold them: "
             "`perfmodel/data/validation_cases.yaml` (*cases*) and the rows posed under "
             "issue 29's protocol, `perfmodel/data/posed/*.yaml` (*posed/...*), each with "
             "the quote its figure comes from.  How each unit and mode is read off the "
             "model is stated in `perfmodel/validation.py`.  **Error, optimism sense**: "
             "positive = the model promises more than was measured -- ours / published - 1 "
             "for rates, published / ours - 1 for every time (TTFT, TPOT, ITL, latency).  "
             "No row sets a kernel: the kernel tables come from the measured database and "
             "the vendor priors from published kernel figures.  One thing is fitted on "
             "rows, and on calibration rows only: the serving-stack factors of GPUs priced "
             "from vendor priors (below).", "",
             f"**Scored rows: {doc['rows']} over {doc['gpus']} GPU types; median |error| "
             f"{_abs(doc['median_abs'])}, worst {_abs(doc['worst_abs'])}; median signed "
             f"error dense {_pct(doc['median_signed_dense'])}, MoE "
             f"{_pct(doc['median_signed_moe'])}.**  Of them validation_cases.yaml "
             f"(issue 14's goals): {older['rows']} rows, median |error| "
             f"{_abs(older['median_abs'])}, worst {_abs(older['worst_abs'])}, median signed "
             f"dense {_pct(older['median_signed_dense'])}, MoE "
             f"{_pct(older['median_signed_moe'])}.", "",
             _held_out_line(doc["held_out"]), ""]
    lines += goals_lines(doc) + [""] + breadth_lines(doc) + [""] + source_lines(rows) + [""]
    lines += ["**The protocol from issue 29 on** (`perfmodel/validation_split.py`, committed "
              "before any further fitting): a case is held out when "
              "`sha256(\"planner-validation-split-2026-11-27:\" + id)` falls in the lowest "
              "third of its range -- no figure, error or prediction enters it, and a case "
              "keeps its side for ever (`tests/perfmodel/test_validation_split.py` pins the "
              "sides of the validation_cases.yaml rows); headline errors are reported on the "
              "held-out rows, and only calibration rows may inform a change to the model.  "
              "New published rows are committed first to `perfmodel/data/posed/*.yaml` -- "
              "the figure and its quote, the source's URL, the fields the source states "
              "(`stated`) and every other field with the default assumed and why "
              "(`assumed`) -- with no prediction in the commit; a later commit scores them "
              "(here, read in place), and the history shows the order.", "",
              "*Set*: held out or calibration (`perfmodel.validation_split`, by case id "
              "alone).  *KV flipped*, *FP8 attention flipped* and *GPU variant flipped*: the "
              "row's error with that assumption the other way (bf16 <-> fp8 KV cache; FP8 "
              "attention on <-> off; where the source names only the GPU family, the other "
              "form factor, SXM <-> PCIe) -- how much the row's verdict rests on it (-- where "
              "the flipped posing has no feasible point or the row does not assume it).  "
              "*Serving stack off*: for a GPU priced from vendor priors, the row's error "
              "without the fitted serving-stack factors.  *Mean lengths*: for a row that "
              "ran a variable-length dataset (MLPerf), its error with the running batch "
              "priced at the mean lengths, isl + osl / 2, instead of the dataset's "
              "length-biased context a isl + b osl / 2 (`perfmodel/validation_lengths.py`; "
              "a, b from the dataset's per-sample table, `perfmodel/data/length_shapes.yaml`).  "
              "*Disaggregated*: prefill / decode rows whose posing says they come from a "
              "prefill/decode-split deployment (`DISAGGREGATED` in `perfmodel/validation.py`); "
              "rows of mode *disaggregated* are whole prefill/decode-split systems (Dynamo "
              "xPyD) read end to end: a closed-loop client over the prefill workers' passes, "
              "one KV transfer and the decode workers' batches, each side with its own "
              "layout and engine limits (`perfmodel/validation_disagg.py`, which lists the "
              "recipe keys it does not price and why); where the row states its client's "
              "number of prompts, its rate is that client's finite run played out request "
              "by request on the same station times -- start-up burst, queue behind a "
              "long prefill pass, drain (`perfmodel/benchmark_run.py`), with requests dealt "
              "to each side's workers in turn (Dynamo's frontend default) and within a "
              "worker to its attention-DP groups by the engine's rule (SGLang in turn, "
              "TensorRT-LLM and vLLM to the least loaded), a worker's groups running each "
              "pass and step together, as long as the fullest group's (the engines pad "
              "idle ranks so that the expert layers' collectives meet).  "
              "*Router pooled*: such a row's "
              "error with every request sent to the least-loaded group of its side "
              "instead (this reading's rule before the routers' defaults were looked up).  "
              "*FP8 scope flipped*: for a row on Meta's FP8 checkpoint, which leaves the "
              "attention projections and the first and last layers in BF16 (weights "
              "`fp8_ffn`, `perfmodel.models.ModelSpec.fp8_scope`), its error with every "
              "linear layer FP8 -- the posing these rows had until the scope was modelled, "
              "after their errors had been seen.  *Steady point*: for an aggregated rate "
              "row that states its client's number of prompts -- read as that client's "
              "finite run played out pass by pass, start, steady middle and drain "
              "(`perfmodel/aggregated_run.py`, `perfmodel/validation_finite.py`) -- its "
              "error read at the steady operating point instead, this reading's rule "
              "before the run was played out.  *Fixed answer lengths*: for such a row "
              "whose client draws its output lengths from a spread (uniform for sa-bench "
              "and sglang.bench_serving's random dataset, ShareGPT's assumed law, an "
              "MLPerf dataset's shape), its error with every answer at the mean.  "
              "*As total tokens*: for a row of AMD's performance-results page, whose "
              "unqualified throughput column is read as generated tokens "
              "(`OUTPUT_ONLY_READ` in `perfmodel/validation.py`), its error read as input "
              "+ output tokens -- the posing these rows had until 2026-12-06, changed after "
              "their errors had been seen.",
              "",
              "| case | from | GPU | model | mode | engine | unit | published | ours | error "
              f"| set | {heads} |",
              f"|---|---|---|---|---|---|---|---:|---:|---:|---|{aligns}|"]
    for r in rows:
        if r["scored"]:
            mode = r["mode"] + (" (disaggregated)" if r["deployment"] == "disaggregated"
                                and r["mode"] != "disaggregated" else "")
            lines.append(f"| {r['case']} | {_from(r)} | {r['gpu']} | {r['model']} | {mode} | "
                         f"{r['engine']} | {r['unit']} | {val.fmt_value(r['published'])} | "
                         f"{val.fmt_value(r['ours'])} | {_err(r['error'])} | {_set(r)} | "
                         f"{_flips(r)} |")
    lines += ["", "Not scored, each with its reason (rows before "
              f"{val.SCORED_FROM} ran engine releases whose kernels the database does not "
              "hold; their figures are shown for reference):", "",
              "| case | from | GPU | model | mode | unit | published | ours | error | set "
              f"| {heads} | reason |",
              f"|---|---|---|---|---|---|---:|---:|---:|---|{aligns}|---|"]
    for r in rows:
        if not r["scored"]:
            lines.append(f"| {r['case']} | {_from(r)} | {r['gpu']} | {r['model']} | "
                         f"{r['mode']} | {r['unit']} | {val.fmt_value(r['published'])} | "
                         f"{val.fmt_value(r['ours'])} | {_err(r['error'])} | {_set(r)} | "
                         f"{_flips(r)} | {r['reason']} |")
    lines += [""] + serving_lines() + [""] + band_lines(bands) + ["", "Sources:", ""]
    for key, src in val.sources().items():
        lines.append(f"- {key}: {src['title']} ({src['date']}), {src['url']}")
    return lines + [""]


_GOAL_LABELS = {"median_abs": "median |error|", "worst_abs": "worst |error|",
                "median_signed": "median signed error",
                "vendor_median_abs": "each vendor's median |error| (worst vendor)",
                "band_coverage": "band coverage, leave-one-out"}


def goal_rows(doc: dict) -> list[tuple[str, str, str, bool]]:
    """(figure, value, goal, met) for issue 29's held-out goals and breadth goals."""
    h = doc["held_out"]
    out = []
    for name, g in h.get("goals", {}).items():
        op, limit = g["goal"].split()
        shown = {"<=": "<=", ">=": ">=", "abs<=": "within +-"}[op]
        value = _pct(g["value"]) if name == "median_signed" else _abs(g["value"])
        out.append((_GOAL_LABELS[name], value, f"{shown} {_abs(float(limit))}", g["met"]))
    c = doc["counts"]
    sc, goal, met = c["scored"], c["breadth_goals"]["goal"], c["breadth_goals"]["met"]
    out += [("scored rows", str(sc["rows"]), f">= {goal['rows']}", met["rows"]),
            ("GPU types", str(len(sc["gpu_types"])), f">= {goal['gpu_types']}",
             met["gpu_types"]),
            ("AMD among the vendors", ", ".join(sc["vendors"]), "AMD included", met["amd"]),
            ("engines", str(len(sc["engines"])), f">= {goal['engines']}", met["engines"])]
    return out


def goals_lines(doc: dict) -> list[str]:
    h = doc["held_out"]
    lines = ["Issue 29's goals (held-out rows; breadth on all scored rows):", "",
             "| figure | value | goal | verdict |", "|---|---:|---|---|"]
    for label, value, goal, met in goal_rows(doc):
        cell = label.replace("|", "\\|")  # a pipe inside a table cell
        lines.append(f"| {cell} | {value} | {goal} | {'met' if met else 'NOT met'} |")
    lines += ["", "Held-out rows by vendor: " + "; ".join(
        f"{v} {s['rows']} rows, median |error| {_abs(s['median_abs'])}"
        for v, s in h.get("by_vendor", {}).items()) + "."]
    return lines


def breadth_lines(doc: dict) -> list[str]:
    c = doc["counts"]

    def one(label: str, b: dict) -> str:
        modes = ", ".join(f"{k} {n}" for k, n in b["modes"].items())
        return (f"| {label} | {b['rows']} | {b['held_out']} | {len(b['gpu_types'])} "
                f"({', '.join(b['gpu_types'])}) | {', '.join(b['engines'])} | "
                f"{', '.join(b['vendors'])} | {b['dense']} / {b['moe']} | {modes} |")

    reasons = "; ".join(f"{k}: {n}" for k, n in c["not_scored_by_reason"].items())
    return ["Breadth:", "",
            "| rows | count | held out | GPU types | engines | vendors | dense / MoE "
            "| modes |", "|---|---:|---:|---|---|---|---|---|",
            one("all (both files)", c["all"]), one("posed", c["posed"]),
            one("scored", c["scored"]), "",
            f"Posed rows scored: {c['posed_scored']} of {c['posed']['rows']}.  Not scored, "
            f"by reason: {reasons}."]


def _scored_by(rows: list[dict], key: str) -> dict[str, list[dict]]:
    """Scored rows grouped by ``key`` (first-seen order)."""
    by: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        if r["scored"]:
            by[r[key]].append(r)
    return by


def _medians(rs: list[dict]) -> tuple[str, str]:
    """(median |error|, median signed error) of rows, as the tables print them."""
    e = np.array([r["error"] for r in rs])
    return _abs(float(np.median(np.abs(e)))), _pct(float(np.median(e)))


def source_lines(rows: list[dict]) -> list[str]:
    """Scored rows by source and by file: where the model is close and where it is not.
    A source's rows share a client, a configuration habit and often a bias, so the
    spread between sources says more about a new deployment than the spread within
    one."""
    lines = ["By source (scored rows; a source's rows share its client and its habits of "
             "configuration, so their errors move together):", "",
             "| source | date | rows | held out | median \\|error\\| | median signed |",
             "|---|---|---:|---:|---:|---:|"]
    by_source = _scored_by(rows, "source_key")
    for key, rs in sorted(by_source.items(), key=lambda kv: (kv[1][0]["date"], kv[0])):
        med, signed = _medians(rs)
        lines.append(f"| {key} | {rs[0]['date']} | {len(rs)} | "
                     f"{sum(bool(r['held_out']) for r in rs)} | {med} | {signed} |")
    lines += ["", "By file (each posed file's rows were committed "
              "before they were first scored; `git log --follow` on a file shows it):", ""]
    for origin, rs in _scored_by(rows, "origin").items():
        med, signed = _medians(rs)
        ho = [r for r in rs if r["held_out"]]
        held = ""
        if ho:
            ho_med, ho_signed = _medians(ho)
            held = f"; held out {len(ho)}: median |error| {ho_med}, signed {ho_signed}"
        lines.append(f"- `{origin}`: {len(rs)} rows, median |error| {med}, signed {signed}"
                     + held)
    return lines


def serving_lines() -> list[str]:
    """The serving-stack factors (perfmodel.serving_stack) and what their fit did."""
    from perfmodel import serving_stack as st

    doc = st.shipped()
    lines = ["### Serving-stack factors (fitted on calibration rows)", "",
             "`perfmodel/serving_stack.py`, shipped as `perfmodel/data/serving_stack.yaml` "
             "by `scripts/fit_serving_stack.py`: a GPU priced from its vendor's kernel "
             "priors (AMD) has its priced prefill work and decode work multiplied by two "
             "factors per architecture and engine, fitted by least squares on log errors over the "
             f"calibration rows of that vendor and engine dated from {doc.get('fit_from')} "
             "on (held-out rows never: `tests/perfmodel/test_serving_stack.py` checks it, "
             "and that the shipped factors are the fit of today's rows).  Why: AMD's "
             "kernels check out against AMD's own per-kernel timings, but its serving "
             "stack is slower than their sum (InferenceX: an 8k-token DeepSeek-R1 prompt "
             "takes 1.44 s to its first token on 8 x MI300X where the priced prefill takes "
             "0.25 s).  The *serving stack off* column shows every AMD row without them.",
             "", "| vendor | architecture | engine | prefill x | decode x | calibration rows "
             "| median "
             "\\|error\\| before | after |", "|---|---|---|---:|---:|---:|---:|---:|"]
    for vendor, archs in (doc.get("factors") or {}).items():
        for arch, engines in archs.items():
            for engine, e in engines.items():
                lines.append(f"| {vendor} | {arch} | {engine} | {e['prefill']:.3f} | "
                             f"{e['decode']:.3f} | {e['rows']} | "
                             f"{_abs(e['median_abs_before'])} | "
                             f"{_abs(e['median_abs_after'])} |")
    lines += ["", "#### Earlier stacks (legacy era)", "",
              "A row whose source is dated before "
              f"{doc.get('fit_from')} measured an engine release older than the ones the "
              "kernels and the factors above describe; it is priced with one more pair of "
              "factors per vendor and engine, on every GPU of the vendor, fitted by the same "
              "rule on the calibration rows of that vendor and engine dated before it (at "
              "least four rows; `perfmodel/serving_stack.py`, \"Earlier stacks\").  Plans "
              "price today's stacks and never carry them; the *as today's stack* column "
              "shows every legacy row without them.", "",
              "| vendor | engine | prefill x | decode x | calibration rows | median "
              "\\|error\\| as today's stack | after |", "|---|---|---:|---:|---:|---:|---:|"]
    for vendor, engines in (doc.get("legacy") or {}).items():
        for engine, e in engines.items():
            lines.append(f"| {vendor} | {engine} | {e['prefill']:.3f} | {e['decode']:.3f} | "
                         f"{e['rows']} | {_abs(e['median_abs_before'])} | "
                         f"{_abs(e['median_abs_after'])} |")
    return lines


def band_lines(doc: dict) -> list[str]:
    """The error-band section from :func:`perfmodel.error_band.build`'s document."""
    loo, cal = doc["leave_one_out"], doc["calibration_leave_one_out"]
    lines = ["### Error bands", "",
             "`perfmodel/error_band.py` (shipped as `perfmodel/data/error_bands.json`): per "
             "class GPU family x engine x phase, a distribution-free prediction band for "
             "the 10th and 90th percentile of a new row's error from the scored held-out "
             "rows' signed errors (the k-th smallest and largest, k = floor(0.1 (n + 1)): "
             "it holds a new exchangeable row with probability >= 0.8, where the sample's "
             "own p10-p90 holds only about 0.8 (n - 1) / (n + 1)); a class with fewer than "
             f"{doc['min_rows']} rows falls back to family x phase, vendor x phase, phase, "
             "then all rows.  End-to-end rows of prefill/decode-split systems (mode "
             "disaggregated) have a phase of their own (`perfmodel.validation_units."
             "phase`); a plan's prefill or decode island, which serves only as one side "
             "of such a system, takes the union of its phase's band and that of "
             "disaggregated systems of its GPU and engine "
             "(`perfmodel.error_band.deployed_band`).  "
             "A predicted capacity C becomes C / (1 + p90) .. C / (1 + p10).  "
             f"**Leave-one-out coverage: {loo['inside']} of {loo['rows']} held-out rows "
             f"({_abs(loo['coverage'])}) fall inside the band of the other held-out rows** "
             f"(goal >= 80 %; 95 % interval of that share by chance alone "
             f"{_abs(loo['ci95'][0])}-{_abs(loo['ci95'][1])}).  The same rule checked on "
             f"the calibration rows, each against the bands of the other calibration rows: "
             f"{cal['inside']} of {cal['rows']} ({_abs(cal['coverage'])}, interval "
             f"{_abs(cal['ci95'][0])}-{_abs(cal['ci95'][1])}); those bands are not "
             "shipped, since the model was chosen on those rows.", "",
             "| class | p10 error | p90 error | rows |", "|---|---:|---:|---:|"]
    for b in doc["bands"]:
        lines.append(f"| {b['cls']} | {_pct(b['lo_error'])} | {_pct(b['hi_error'])} | "
                     f"{b['rows']} |")
    return lines


def _held_out_line(h: dict) -> str:
    if not h.get("rows"):
        return "**Held-out rows: none scored yet.**"
    return (f"**Held-out rows (the headline from issue 29 on): {h['rows']} over {h['gpus']} "
            f"GPU types; median |error| {_abs(h['median_abs'])}, worst "
            f"{_abs(h['worst_abs'])}, median signed {_pct(h['median_signed'])}.**")


def render(rows: list[dict], doc: dict, bands: dict) -> str:
    data = json.loads(resources.files("perfmodel").joinpath(
        "data/kernels/validation.json").read_text())
    head = ["# Validation of the performance model", "",
            "Generated by `.venv/bin/python scripts/validation_table.py` (kernel tables "
            "fitted by `scripts/calibrate_kernels.py`).  Three questions, each on data the "
            "model was not fitted to: does a fitted kernel table predict shapes it did not "
            "see (a); does the transfer rule predict a GPU it did not see (b); does the "
            "whole model predict published serving figures (c).", ""]
    return "\n".join(head + kernel_section(data) + transfer_section(data)
                     + published_kernel_section() + e2e_section(rows, doc, bands))


def _json(doc: dict) -> str:
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"


def summary_json(rows: list[dict] | None = None) -> str:
    """The shipped summary (perfmodel.validation.SUMMARY_FILE)."""
    return _json(val.summary_document(val.table() if rows is None else rows))


def report(doc: dict) -> list[str]:
    """The goals beside their figures and the breadth counts, as printed."""
    out = ["Issue 29 goals (held-out rows; breadth on all scored rows):"]
    for label, value, goal, met in goal_rows(doc):
        out.append(f"  {label:48s} {value:>14s}   goal {goal:14s} "
                   f"{'met' if met else 'NOT met'}")
    for v, s in doc["held_out"].get("by_vendor", {}).items():
        out.append(f"  held out, {v}: {s['rows']} rows, median |error| "
                   f"{_abs(s['median_abs'])}")
    c = doc["counts"]
    for key in ("all", "posed", "scored"):
        b = c[key]
        out.append(f"{key}: {b['rows']} rows ({b['held_out']} held out), "
                   f"{len(b['gpu_types'])} GPU types, engines {', '.join(b['engines'])}, "
                   f"vendors {', '.join(b['vendors'])}, dense {b['dense']} / MoE {b['moe']}, "
                   f"modes " + ", ".join(f"{k} {n}" for k, n in b["modes"].items()))
    out.append(f"posed rows scored: {c['posed_scored']} of {c['posed']['rows']}; not scored: "
               + "; ".join(f"{k} {n}" for k, n in c["not_scored_by_reason"].items()))
    return out


def main() -> None:
    rows = val.table()
    doc = val.summary_document(rows)
    bands = eb.build(rows)  # built once: the page and the shipped file show the same
    OUT.write_text(render(rows, doc, bands))
    summary_path = ROOT / "perfmodel" / val.SUMMARY_FILE
    summary_path.write_text(_json(doc))
    bands_path = ROOT / "perfmodel" / eb.BANDS_FILE
    bands_path.write_text(_json(bands))
    print("\n".join(report(doc)))
    for name, loo in (("held-out", bands["leave_one_out"]),
                      ("calibration (rule check)", bands["calibration_leave_one_out"])):
        lo, hi = loo["ci95"]
        print(f"  band coverage, {name} rows: {loo['inside']} of {loo['rows']} "
              f"({100 * loo['coverage']:.1f} %; 95 % interval {100 * lo:.1f}-{100 * hi:.1f} %)")
    print(f"wrote {OUT}, {summary_path} and {bands_path}")


if __name__ == "__main__":
    main()
