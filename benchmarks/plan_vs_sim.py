"""Does a plan's promise hold on seeds it never saw?  Regenerates docs/plan-vs-sim.md.

    .venv/bin/python benchmarks/plan_vs_sim.py [--out docs/plan-vs-sim.md]
                                               [--cases all|issue|table51|target]
                                               [--no-sweep] [--workers N]

The goals of issue 28, on the five plans of issue 27 (``benchmarks/deployment_check.py``),
the six Table 5.1 cells (seed 002: inventories a/b/c x Azure code and conversation at
512 $/h) and the Llama-3.1-70B / code target cases 5 and 20 req/s on a three-type
inventory.  Each plan is made as a user makes it -- ``planner plan`` in-process, seed 0,
its defaults (closed loop, alternatives) -- then simulated with the router it was
verified with on three seeds the planner never used (:data:`SEEDS`; the planner's are 0
and ``planner.sim.closed_loop.verify_seeds(0)``):

* **SLO at the promise**: the lowest share of requests meeting TTFT and TPOT over the
  three seeds, with arrivals at the headline (target mode: at the target).  Goal >= 99 %;
* **beaten**: whether an alternative in the plan's own report beats it by the same
  promise (more requests/s at the SLO, or the target for less).  Goal: never;
* **vs sweep** (target mode): the plan's cost over the cheapest plan that passes at the
  target, found by planning for a sweep of raised targets (:data:`SWEEP`) and checking
  each on the planner's own seeds.  Goal <= 1.05;
* **README s**: the README command timed in a fresh process.  Goal <= 30 s on 2 cores.

It prints each row as it finishes and writes the table (about 20 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SEEDS = (11, 12, 13)
SWEEP = (1.0, 1.1, 1.2, 1.35, 1.5, 1.75, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0)
THREE = ("name: three\nmin_island: 1\ngpus:\n"
         "  - {type: H100-SXM, count: 64, price_per_hour: 4.50}\n"
         "  - {type: H200, count: 64, price_per_hour: 5.75}\n"
         "  - {type: A100-80G, count: 64, price_per_hour: 3.50}\n")
LLAMA_CODE = ["--model", "llama-3.1-70b", "--workload", "azure-code-2023", "--ttft", "2000",
              "--tpot", "50"]
# the five plans of issue 27 and the six Table 5.1 cells, as the deployment goals use them
sys.path.insert(0, str(REPO / "benchmarks"))
from deployment_check import ISSUE, TABLE51  # noqa: E402

TARGET = [(f"llama code target {t}", ["--inventory", "{three}", "--target-rps", str(t),
                                      *LLAMA_CODE]) for t in (5, 20)]


def _args(args: list[str], tmp: Path) -> list[str]:
    three = tmp / "three.yaml"
    three.write_text(THREE)
    return [a.replace("{three}", str(three)) for a in args]


def plan(args: list[str], out: Path, *extra: str) -> dict | None:
    """``planner plan ARGS`` in-process; the plan dict, or None on exit 1 (no plan)."""
    from planner.cli.main import run

    rc = run(["plan", *args, "--out", str(out), "-q", *extra])
    if rc == 1:
        return None
    if rc != 0:
        raise SystemExit(f"planner plan {' '.join(args)} exited {rc}")
    return json.loads((out / "plan.json").read_text())


def held(plan_dict: dict, rate: float, seeds=SEEDS) -> float:
    """The lowest SLO attainment at ``rate`` over ``seeds`` under the plan's router."""
    from planner.sim.closed_loop import simulate_at

    router = plan_dict["summary"]["closed_loop"].get("router", "range")
    return min(simulate_at(plan_dict, rate, s, router=router).attainment for s in seeds)


def beaten(plan_dict: dict) -> bool:
    s = plan_dict["summary"]
    target = plan_dict["request"].get("target_rps")
    for a in s.get("alternatives") or []:
        if not a.get("gpu") or not a.get("requests_per_s"):
            continue
        if target is None and a["requests_per_s"] > s["requests_per_s"] * (1 + 1e-9):
            return True
        if target is not None and a["cost_per_hour"] < s["cost_per_hour"] * (1 - 1e-9):
            return True
    return False


def sweep(args: list[str], target: float, tmp: Path) -> float:
    """The cheapest cost of a plan made for ``target x k`` (k in :data:`SWEEP`, no
    closed loop) that keeps the planner's promise at ``target``: its SLO holds at the
    target on the planner's own seeds and, on the search's seed, with the closed loop's
    headroom of load above it (``HEADROOM``).  Without the headroom the sweep would
    accept plans the planner's own promise refuses (a $304/h plan holding 200 req/s but
    not 210 made the target-200 row read 1.105), and compare two different promises."""
    from planner.sim.closed_loop import ATTAIN_TARGET, HEADROOM, verify_seeds

    best = math.inf
    base = [a for a in args]
    i = base.index("--target-rps")
    for k in SWEEP:
        asked = [*base[:i + 1], f"{target * k:g}", *base[i + 2:]]
        d = plan(asked, tmp / f"sweep-{k}", "--no-sim-check", "--no-homogeneous",
                 "--no-exact")
        if d is None:
            break
        cost = float(d["summary"]["cost_per_hour"])
        if cost >= best:
            continue
        d["summary"]["closed_loop"] = {"router": "range"}
        if held(d, target * (1 + HEADROOM), (0,)) >= ATTAIN_TARGET and \
                held(d, target, (0, *verify_seeds(0))) >= ATTAIN_TARGET:
            best = cost
    return best


def run_case(label: str, args: list[str], do_sweep: bool) -> dict:
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        args = _args(args, tmp)
        d = plan(args, tmp / "run")
        seconds = time.perf_counter() - t0
        if d is None:
            return {"case": label, "headline": 0.0, "seconds": seconds, "failed": True}
        s = d["summary"]
        loop = s["closed_loop"]
        target = d["request"].get("target_rps")
        rate = float(target) if target else float(s["requests_per_s"])
        row = {"case": label, "cost": float(s["cost_per_hour"]),
               "analytic": float(loop["analytic_requests_per_s"]),
               "saturation": float(loop.get("saturation_requests_per_s") or 0.0),
               "headline": float(s["requests_per_s"]), "target": target,
               "router": loop.get("router"), "attain": held(d, rate) if rate > 0 else 0.0,
               "jsq": loop.get("reference_router_attainment"), "beaten": beaten(d),
               "answer_from": (s.get("answer_from") or {}).get("label"),
               "seconds": seconds, "failed": False, "sweep": None}
        if target and do_sweep:
            row["sweep"] = sweep(args, float(target), tmp)
    return row


def readme_seconds() -> float:
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        subprocess.run([str(Path(sys.executable).parent / "planner"), "plan",
                        "--inventory", "inventories/gpus.yaml", "--budget", "512", "--out",
                        f"{tmp}/run", "-q"], cwd=REPO, check=True, capture_output=True)
        return time.perf_counter() - t0


def _pct(x) -> str:
    return "—" if x is None or not math.isfinite(float(x)) else f"{100 * float(x):.1f} %"


def render(rows: list[dict], readme_s: float) -> str:
    def ok(r: dict) -> bool:
        if r["failed"]:
            return False
        vs = (r["cost"] / r["sweep"]) if r.get("sweep") else None
        return r["attain"] >= 0.99 and not r["beaten"] and (vs is None or vs <= 1.05)

    lines = [
        "# Plan versus simulation",
        "",
        "Generated by `.venv/bin/python benchmarks/plan_vs_sim.py` -- do not edit by hand.",
        "",
        "Every row is a plan made as `planner plan` makes it (seed 0, its defaults: the "
        "closed loop of planner.sim.closed_loop verifies the headline on seed 0 and three "
        "more; each single-type alternative goes through the same loop), then simulated "
        f"on seeds {', '.join(map(str, SEEDS))}, which the planner never used, with "
        "arrivals at the headline (target mode: at the target).  *SLO held* is the lowest "
        "share of requests meeting TTFT and TPOT over those seeds (goal >= 99 %); "
        "*saturation* the most the plan completes when overloaded; *jsq* the SLO "
        "attainment at the headline under the jsq router (the report's second router); "
        "*beaten* whether an alternative in the plan's own report beats it (goal: no); "
        "*÷ sweep* the target-mode cost over the cheapest plan that keeps the planner's "
        "promise at the target (the SLO held there on its four seeds, and 5 % above it "
        "on seed 0) "
        f"among plans made for the target x {', '.join(f'{k:g}' for k in SWEEP)} "
        "(goal <= 1.05).",
        "",
        "| case | $/h | perf model req/s | saturation req/s | headline req/s | SLO held "
        "(seeds 11-13) | jsq | beaten | ÷ sweep | plan s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if r["failed"]:
            lines.append(f"| {r['case']} | — | — | — | no plan (exit 1) | — | — | — | — | "
                         f"{r['seconds']:.0f} |")
            continue
        head = f"{r['headline']:,.1f}"
        if r.get("target"):
            head += f" (target {r['target']:g})"
        if r.get("answer_from"):
            head += f"; answer: {r['answer_from']}"
        vs = f"{r['cost'] / r['sweep']:.3f}" if r.get("sweep") and \
            math.isfinite(r["sweep"]) else "—"
        lines.append(f"| {r['case']} | {r['cost']:,.2f} | {r['analytic']:,.1f} | "
                     f"{r['saturation']:,.1f} | {head} | {_pct(r['attain'])} | "
                     f"{_pct(r['jsq'])} | {'yes' if r['beaten'] else 'no'} | {vs} | "
                     f"{r['seconds']:.0f} |")
    every = all(ok(r) for r in rows)
    lines += ["", f"README command: {readme_s:.1f} s in a fresh process (goal <= 30 s).",
              "", f"All goals met: **{'yes' if every and readme_s <= 30 else 'no'}**.", ""]
    return "\n".join(lines)


def _run(case: tuple) -> dict:
    return run_case(*case)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(REPO / "docs" / "plan-vs-sim.md"))
    ap.add_argument("--cases", choices=("all", "issue", "table51", "target"), default="all")
    ap.add_argument("--no-sweep", action="store_true", help="skip the target sweeps")
    ap.add_argument("--workers", type=int, default=1,
                    help="cases side by side on a local Ray (planner.core.execution)")
    args = ap.parse_args()
    from planner.core.execution import make_executor

    cases = {"issue": ISSUE, "table51": TABLE51, "target": TARGET,
             "all": ISSUE + TABLE51 + TARGET}[args.cases]

    def done(_: int, row: dict) -> None:
        print(json.dumps(row), flush=True)

    readme_s = readme_seconds()
    print(f"README command: {readme_s:.1f} s", flush=True)
    executor = make_executor(args.workers, None)
    try:
        rows = executor.map(_run, [(lbl, a, not args.no_sweep) for lbl, a in cases],
                            done=done)
    finally:
        executor.close()
    Path(args.out).write_text(render(rows, readme_s))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
