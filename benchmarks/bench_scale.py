"""Planning at scale: 8 GPU types x 4,096 GPUs each, budget 20,000 $/h (issue 16 goal:
<= 5 min wall on this 2-core machine, no island that cannot hold the model, plan.json
<= 2 MB).

    .venv/bin/python benchmarks/bench_scale.py [--count 4096] [--budget 20000]
                                               [--search auto] [--out DIR]

The inventory is inventories/eight-types-2026.yaml (list and market prices) with every
count set to ``--count``.  The run is the real command -- ``planner plan`` in a
subprocess, comparisons and simulation check included -- so the figure is what a user
waits for.  Printed: wall time, search used (and why), the headline, the number of
islands and the smallest island per type against the model's footprint on that type
(the smallest island of it that can serve a phase), and plan.json's size.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def footprints(plan: dict) -> dict[str, int | None]:
    """Smallest island of each used type that serves a phase, by the plan's own model."""
    from planner.context.evaluate import LayoutEvaluator, PlanningContext
    from planner.fleet.inventory import inventory_from_dict
    from planner.inner import make_inner_solver
    from planner.plan import PlanRequest, _smallest_serving

    r = plan["request"]
    inv = inventory_from_dict(r["inventory"], "plan.json request.inventory")
    req = PlanRequest(inv, model=r["model"], workload=r["workload"], engine=r["engine"])
    ev = LayoutEvaluator(PlanningContext.for_request(req), make_inner_solver("maxrate"))
    out = {}
    for gpu in plan["summary"]["gpus_used"]:
        sizes = [_smallest_serving(ev, gpu, 1, 128, phase) for phase in ("prefill", "decode")]
        sizes = [s for s in sizes if s is not None]
        out[gpu] = min(sizes) if sizes else None
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=4096)
    ap.add_argument("--budget", type=float, default=20_000.0)
    ap.add_argument("--search", default="auto")
    ap.add_argument("--out", type=Path, default=None, help="keep the run folder here")
    ap.add_argument("--doc", action="store_true",
                    help="also write the figures into docs/outer.md (between "
                         "<!-- bench-scale-SEARCH:start/end --> markers)")
    args = ap.parse_args()
    inv = yaml.safe_load((REPO / "inventories" / "eight-types-2026.yaml").read_text())
    for g in inv["gpus"]:
        g["count"] = args.count
    inv["name"] = f"eight-types-{args.count}"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "inventory.yaml"
        path.write_text(yaml.safe_dump(inv, sort_keys=False))
        out = args.out or Path(tmp) / "run"
        cmd = [str(Path(sys.executable).parent / "planner"), "plan", "--inventory",
               str(path), "--budget", f"{args.budget:g}", "--search", args.search,
               "--out", str(out), "--quiet"]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True,
                              env=dict(os.environ, NO_COLOR="1"))
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            sys.exit(f"planner plan failed ({proc.returncode}): {proc.stderr.strip()}")
        plan_path = out / "plan.json"
        size = plan_path.stat().st_size
        plan = json.loads(plan_path.read_text())
    s = plan["summary"]
    need = footprints(plan)
    smallest: dict[str, int] = {}
    for isl in plan["islands"]:
        smallest[isl["gpu"]] = min(smallest.get(isl["gpu"], 10**9), int(isl["size"]))
    below = {g: (smallest[g], need[g]) for g in smallest
             if need.get(g) is None or smallest[g] < need[g]}
    search = plan["search"]
    lines = [
        f"{len(inv['gpus'])} types x {args.count:,} GPUs, budget {args.budget:,.0f} $/h, "
        f"`--search {args.search}`: {wall:.0f} s wall (goal <= 300 s)",
        f"search: {search['name']} -- {search['settings'].get('chosen', '')}; "
        f"status {search['settings'].get('status', '-')}",
        f"plan: {s['requests_per_s']:,.1f} requests/s for {s['cost_per_hour']:,.0f} $/h, "
        f"{len(plan['islands'])} islands, GPUs {s['gpus_used']}",
        "smallest island / footprint per type: " + ", ".join(
            f"{g} {smallest[g]}/{need.get(g)}" for g in sorted(smallest)),
        f"islands that cannot hold the model: {len(below)} {below or ''}".rstrip(),
        f"plan.json: {size / 1e6:.2f} MB (goal <= 2 MB); timings "
        + ", ".join(f"{k} {v:.0f} s" for k, v in plan.get("timings_s", {}).items()),
    ]
    print("\n".join(lines))
    if args.doc:
        doc = REPO / "docs" / "outer.md"
        start = f"<!-- bench-scale-{args.search}:start -->"
        end = f"<!-- bench-scale-{args.search}:end -->"
        text = doc.read_text()
        head, rest = text.split(start, 1)
        _, tail = rest.split(end, 1)
        block = "\n".join(f"    {x}" for x in lines)
        doc.write_text(f"{head}{start}\n{block}\n{end}{tail}")


if __name__ == "__main__":
    main()
