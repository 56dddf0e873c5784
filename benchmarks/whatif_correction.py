"""How good is a sampled what-if study's correction, and its stated error?

    .venv/bin/python benchmarks/whatif_correction.py [SPEC] [--from STUDY] \
        [--samples 3,4,6,8] [--workers N]

A study closed in full (``closed_loop: every``: every scenario's `planner plan`
headline, with its analytic figure) is the truth.  For each sample size n, the sample
``closed_loop: sample`` would draw (planner.whatif.correction.choose_sample) is taken
from it, the others are corrected from the sample -- by the median ratio the planner
uses, the mean ratio, and the ratio interpolated in the analytic figure -- and the
table compares, per workload with corrected scenarios:

* the error the study would *state* (leave-one-out on the sample: max, and median),
* the *true* error of the corrected scenarios against their own closed loops (max and
  mean ``|corrected - closed| / closed``).

SPEC defaults to docs/whatif-example.yaml; ``--from STUDY`` reads a study folder
already written with ``closed_loop: every`` (its whatif.json) instead of planning
again (minutes).  Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def closed_study(spec_path: Path, study: Path | None, workers: int | None):
    """The outcomes of the spec's scenarios (marginal options left out), every one
    through the closed loop: planned now, or read from ``study``'s whatif.json."""
    from planner.core.execution import make_executor
    from planner.whatif import expand, load_spec, run_whatif
    from planner.whatif.solve import CLOSED_LOOP, NO_PLAN, Outcome
    from planner.whatif.values import ClosedLoopOptions

    spec = replace(load_spec(spec_path), closed_loop=ClosedLoopOptions("every"),
                   marginal=None)
    if study is None:
        ex = make_executor(workers)
        try:
            return run_whatif(spec, executor=ex).outcomes
        finally:
            ex.close()
    rows = json.loads((study / "whatif.json").read_text())["scenarios"]
    out = []
    for sc, row in zip(expand(spec), rows, strict=False):
        if (row["study"], row["scenario"], row["option"]) != (sc.study, sc.name, sc.option):
            raise SystemExit(f"{study}: scenario {row['scenario']!r} is not the spec's "
                             f"{sc.name!r}; give the spec the study was run with")
        if row["capacity"] not in (CLOSED_LOOP, NO_PLAN):
            raise SystemExit(f"{study}: not closed in full (closed_loop: every)")
        out.append(Outcome(sc, row["status"], row["requests_per_s"], row["cost_per_hour"],
                           (), (), math.nan, math.nan, 0.0, 0.0, bool(row["cached"]),
                           analytic_requests_per_s=row["analytic_requests_per_s"] or 0.0,
                           capacity=row["capacity"]))
    return out


def evaluate(outcomes, n: int, predict):
    """Per workload: (label, sampled, corrected, stated error max and median, true
    error max and mean)."""
    from planner.whatif.correction import choose_sample, measure

    picks = set(choose_sample(outcomes, n))
    keys = {outcomes[i].scenario.key() for i in picks}
    groups: dict[tuple, list] = {}
    for o in outcomes:
        if o.analytic_requests_per_s > 0:
            groups.setdefault(o.scenario.components, []).append(o)
    rows = []
    for comps, outs in groups.items():
        sample = [outcomes[i] for i in sorted(picks)
                  if outcomes[i].scenario.components == comps]
        w = measure(outs[0].scenario.workload, comps,
                    [(o.scenario.name, o.analytic_requests_per_s, o.requests_per_s)
                     for o in sample], predict)
        seen, errors = set(), []
        for o in outs:
            key = o.scenario.key()
            if key in keys or key in seen:
                continue
            seen.add(key)
            pred = o.analytic_requests_per_s * w.factor(o.analytic_requests_per_s)
            errors.append(abs(pred - o.requests_per_s) / o.requests_per_s
                          if o.requests_per_s > 0 else math.inf)
        if errors:
            rows.append((w.workload, len(sample), len(errors), w.max_error,
                         w.median_error, max(errors), sum(errors) / len(errors)))
    return rows


def pct(x: float) -> str:
    return "-" if not math.isfinite(x) else f"{x:.1%}"


def main() -> None:
    from planner.whatif.correction import interpolate, mean_ratio, median_ratio

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("spec", nargs="?", default=str(REPO / "docs" / "whatif-example.yaml"))
    ap.add_argument("--from", dest="study", default=None,
                    help="a study folder written with closed_loop: every")
    ap.add_argument("--samples", default="3,4,6,8")
    ap.add_argument("--workers", type=int, default=None)
    args = ap.parse_args()
    outcomes = closed_study(Path(args.spec), Path(args.study) if args.study else None,
                            args.workers)
    print("| sample n | rule | workload | closed | corrected | stated error (LOO), max | "
          "stated, median | true error, max | true error, mean |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n in (int(x) for x in args.samples.split(",")):
        for name, predict in (("median", median_ratio), ("mean", mean_ratio),
                              ("interpolated", interpolate)):
            for label, k, c, stated, typical, worst, mean in evaluate(outcomes, n, predict):
                print(f"| {n} | {name} | {label} | {k} | {c} | {pct(stated)} | "
                      f"{pct(typical)} | {pct(worst)} | {pct(mean)} |")


if __name__ == "__main__":
    main()
