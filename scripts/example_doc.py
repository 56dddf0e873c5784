"""Regenerate docs/example.md (and the README's excerpt of it) from a real run of the
README's first command.

    .venv/bin/python scripts/example_doc.py [--out docs/example.md]

Runs ``planner plan --inventory inventories/gpus.yaml --budget 512`` as a user would
(a fresh process, terminal width 100), keeps its output verbatim, and writes the
reading notes from the run's own plan.json -- so every figure in the page is the run's,
and re-running this script is the only way to change them.  The README's excerpt (the
lines between ``<!-- example:start -->`` and ``<!-- example:end -->``) is rewritten from
the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
COMMAND = ["plan", "--inventory", "inventories/gpus.yaml", "--budget", "512"]
START, END = "<!-- example:start -->", "<!-- example:end -->"


def run() -> tuple[str, dict, float]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "example-run"
        env = dict(os.environ, COLUMNS="100", NO_COLOR="1", TERM="dumb")
        t0 = time.perf_counter()
        proc = subprocess.run([str(Path(sys.executable).parent / "planner"), *COMMAND,
                               "--out", str(out)], cwd=REPO, env=env, capture_output=True,
                              text=True, check=True)
        wall = time.perf_counter() - t0
        plan = json.loads((out / "plan.json").read_text())
    text = proc.stdout.replace(str(out), "reports/example-run")
    return text, plan, wall


def _f(x: float, digits: int = 0) -> str:
    return f"{x:,.{digits}f}"


def reading(plan: dict, wall: float) -> list[str]:
    s = plan["summary"]
    loop = s.get("closed_loop") or {}
    roles: dict[str, list[dict]] = {}
    for isl in plan["islands"]:
        roles.setdefault(isl["role"], []).append(isl)
    used = ", ".join(f"{n} {g}" for g, n in s["gpus_used"].items())
    lines = [
        f"* **The plan** buys {used} for ${_f(s['cost_per_hour'], 2)}/h of the "
        f"${_f(s['budget'], 2)}/h budget, in {len(roles.get('prefill', []))} prefill and "
        f"{len(roles.get('decode', []))} decode islands"
        + (f" and {len(roles['both'])} colocated" if roles.get("both") else "") + ".",
        f"* **{_f(s['requests_per_s'])} requests/s** is the capacity to budget against: "
        f"the highest rate at which at least 99 % of requests met TTFT and TPOT in "
        f"simulation on every one of {len(loop.get('seeds') or [])} seeds "
        f"({100 * min(loop.get('slo_attainment_by_seed') or [0]):.1f} % on the worst), "
        f"three of them never used by the search.  The plan completes at most "
        f"{_f(loop.get('saturation_requests_per_s') or 0)} requests/s (its saturation "
        f"throughput, SLO or not); the perf model alone gave "
        f"{_f(loop.get('analytic_requests_per_s', 0))} requests/s; the loop's verdict: "
        f"{loop.get('note', '')}.",
    ]
    lat = loop.get("latency_at_headline_ms") or {}
    if lat:
        lines.append(f"* **Latency** simulated at that rate: TTFT p50 "
                     f"{_f(lat['ttft_p50_ms'])} ms / p90 {_f(lat['ttft_p90_ms'])} ms, TPOT "
                     f"p50 {_f(lat['tpot_p50_ms'], 1)} ms / p90 {_f(lat['tpot_p90_ms'], 1)} "
                     "ms (ceilings 2,000 ms and 50 ms; docs/slo.md).")
    alts = [a for a in s.get("alternatives") or [] if a.get("requests_per_s")]
    if alts:
        best = max(alts, key=lambda a: a["requests_per_s"])
        lines.append(f"* **Compared with** the same budget on one type, each planned and "
                     f"simulated the same way: the best is {best['label']} at "
                     f"{_f(best['requests_per_s'])} requests/s for "
                     f"${_f(best['cost_per_hour'], 2)}/h, so this plan is "
                     f"{s['requests_per_s'] / best['requests_per_s']:.2f}x it (`planner "
                     "whatif` answers where the next dollars go).")
    ex = s.get("exact")
    se = plan.get("search") or {}
    chosen = (se.get("settings") or {}).get("chosen", "")
    if ex and se.get("name") == "exact":
        lines.append(f"* **Search quality:** `--search auto` ran the exact MILP ({chosen}); "
                     f"HiGHS ended {ex['status']}, so {_f(ex['requests_per_s'])} requests/s "
                     "is the optimum of the perf model, before the simulation check.")
    elif ex and s.get("bo_gap") is not None:
        lines.append(f"* **Search quality:** the exact optimum of the model is "
                     f"{_f(ex['requests_per_s'])} requests/s ({ex['status']}); the "
                     f"{se.get('name')} search's layout is {100 * s['bo_gap']:.1f} % below "
                     "it on the same analytic footing.")
    t = plan.get("timings_s") or {}
    lines.append(f"* **Time:** {_f(wall)} s wall on this 2-core machine (search "
                 f"{_f(t.get('search', 0))} s, "
                 + (f"exact optimum {_f(t['exact'])} s, " if "exact" in t else "")
                 + f"single-type alternatives {_f(t.get('homogeneous', 0))} s, the rest the "
                 "closed-loop simulation and the report).")
    return lines


def page(text: str, plan: dict, wall: float) -> str:
    """docs/example.md from one run: the terminal output verbatim, then the notes."""
    search = (plan.get("search") or {}).get("name", "?")
    return "\n".join([
        f"# Worked example: `planner {' '.join(COMMAND)}`", "",
        "Generated by `.venv/bin/python scripts/example_doc.py` from a real run -- do "
        "not edit by hand (tests/cli/test_example_doc.py fails when the command's output "
        "no longer matches).  The thesis's three GPU types at its prices (64 H200 at $4, "
        "64 H800 at $2, 128 H20 at $1 per GPU-hour), DeepSeek-V3, the Azure conversation "
        f"workload (2023), `--search auto` (which ran the {search} search here), seed 0, "
        "default engine and SLO.", "",
        "```text", text.rstrip(), "```", "", "How to read it:", "", *reading(plan, wall),
        "", "The run folder holds `plan.json`, the CSV tables, the plots, `report.md` "
        "and `report.html`; `planner report RUN_DIR` re-renders them from `plan.json`.",
        ""])


def terminal_block(doc: str) -> str:
    """The command's output as docs/example.md quotes it."""
    return doc.split("```text\n", 1)[1].split("\n```", 1)[0]


def readme_head(text: str) -> str:
    """The README's excerpt: the first lines of the output, indented."""
    return "\n".join("    " + ln for ln in text.splitlines()[:9])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(REPO / "docs" / "example.md"))
    args = ap.parse_args()
    text, plan, wall = run()
    Path(args.out).write_text(page(text, plan, wall))
    readme = (REPO / "README.md").read_text()
    block = (f"{START}\n{readme_head(text)}\n\n({_f(wall)} s on 2 cores; the rest of the "
             f"output and how to read it are in `docs/example.md`.)\n{END}")
    new = re.sub(re.escape(START) + ".*?" + re.escape(END), lambda _m: block, readme,
                 flags=re.S)
    (REPO / "README.md").write_text(new)
    print(f"wrote {args.out} and the README excerpt ({wall:.0f} s run)")


if __name__ == "__main__":
    main()
