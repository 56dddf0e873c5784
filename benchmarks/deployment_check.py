"""Deployable as printed (issue 27): the goals table of docs/deployment.md.

    .venv/bin/python benchmarks/deployment_check.py [--cases all|issue|table51]
                                                    [--no-sim-check] [--doc]

Plans the five command lines of issue 27 and the six Table 5.1 cells (inventories a, b,
c x Azure code and conversation at 512 $/h, planner defaults) twice -- at
``--island-granularity server`` (the default) and ``gpu`` (free sizes) -- through the
CLI in-process, and counts on every server-granularity plan:

* islands straddling part of a server; servers holding two GPU types; servers used
  against the inventory's (planner.fleet.servers);
* layouts outside the engine's launch rules (perfmodel.launch.layout_violation);
* collectives over more than one GPU priced at 0 s, in one prefill pass and one decode
  step of every island at its own configuration (perfmodel.collectives);
* whether ``planner export`` writes launch files for the plan in both formats and the
  Kubernetes manifests validate.

It prints one row per plan: capacity and cost at server and at GPU granularity, and the
counts; ``--doc`` also writes the table into docs/deployment.md between its
``deployment-goals`` markers.  The README command is also timed as a user runs it, in
a fresh process (goal: <= 30 s on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

ISSUE = [
    ("README", ["--inventory", "inventories/gpus.yaml", "--budget", "512"]),
    ("qwen3 @256", ["--inventory", "inventories/marketplace-2025.yaml", "--budget", "256",
                    "--model", "qwen3-235b-a22b"]),
    ("llama70b code @128", ["--inventory", "inventories/marketplace-2025.yaml", "--budget",
                            "128", "--model", "llama-3.1-70b", "--workload",
                            "azure-code-2023"]),
    ("target 200", ["--inventory", "inventories/gpus.yaml", "--target-rps", "200"]),
    ("mixture @400", ["--inventory", "inventories/cloud-list-2026.yaml", "--budget", "400",
                      "--workload", "example-mixture"]),
]
TABLE51 = [(f"5.1{cell} {short}", ["--inventory", f"inventories/table5.1-{cell}.yaml",
                                   "--budget", "512", "--workload", workload])
           for cell in "abc" for short, workload in (("code", "azure-code-2023"),
                                                     ("conv", "azure-conv-2023"))]


def plan(args: list[str], out: Path, granularity: str, sim_check: bool
         ) -> tuple[dict, float]:
    from planner.cli.main import run

    t0 = time.perf_counter()
    rc = run(["plan", *args, "--out", str(out), "-q", "--island-granularity", granularity,
              *([] if sim_check else ["--no-sim-check"])])
    seconds = time.perf_counter() - t0
    if rc != 0:
        raise SystemExit(f"planner plan {' '.join(args)} failed (exit {rc})")
    return json.loads((out / "plan.json").read_text()), seconds


def checks(plan_dict: dict) -> dict[str, int]:
    """The counts of the module docstring for one plan."""
    from perfmodel import get_gpu, get_model
    from perfmodel.calibration import Calibration
    from perfmodel.collectives import decode_collectives, prefill_collectives
    from perfmodel.launch import layout_violation
    from perfmodel.parallel import ParallelConfig
    from planner.fleet.inventory import inventory_from_dict
    from planner.fleet.servers import server_errors

    req = plan_dict["request"]
    inv = inventory_from_dict(req["inventory"], "plan.json")
    shapes = {e.name: e.shape for e in inv.entries}
    gpus = {e.name: e.gpu for e in inv.entries}
    live = [i for i in plan_dict["islands"] if i["role"] != "idle"]
    errors = server_errors(live, plan_dict.get("servers") or [], shapes)
    model = get_model(req["model"])
    calib = Calibration(engine=req.get("engine") or "trtllm")
    outside = zero = 0
    for isl in live:
        cfg = ParallelConfig.from_label(isl["config"])
        gpu = gpus.get(isl["gpu"]) or get_gpu(isl["gpu"])
        node = shapes[isl["gpu"]].gpus_per_node
        if layout_violation(calib.engine, model, cfg, int(isl["size"]), node):
            outside += 1
        items = (prefill_collectives(gpu, model, cfg.tp, cfg.dp, cfg.ep, calib, 2000.0)
                 + decode_collectives(gpu, model, cfg.tp, cfg.dp, cfg.ep, calib,
                                      max(int(isl.get("batch") or 1), 1)))
        zero += sum(1 for c in items if int(c.get("group", 1)) > 1
                    and float(c["seconds"]) <= 0.0)
    used: dict[str, int] = {}
    for srv in plan_dict.get("servers") or []:
        used[srv["gpu"]] = used.get(srv["gpu"], 0) + 1
    have = {t: s.servers + (1 if s.partial else 0) for t, s in shapes.items()}
    return {"straddling": sum("not whole" in e for e in errors),
            "two_types": sum("one GPU type" in e for e in errors),
            "over_servers": sum(max(0, n - have[t]) for t, n in used.items()),
            "servers": sum(used.values()),
            "outside_rules": outside, "zero_collectives": zero}


def export_ok(run_dir: Path, work: Path) -> bool:
    """``planner export`` in both formats exits 0 (the export validates what it writes;
    the manifests are also checked against the Kubernetes schema where the validator is
    installed)."""
    from planner.cli.main import run

    for fmt in ("shell", "k8s"):
        if run(["export", str(run_dir), "--format", fmt, "--out", str(work / fmt)]) != 0:
            return False
    try:
        from planner.export.validate import validate_manifests
    except ImportError:
        return True
    return not validate_manifests((work / "k8s" / "manifests.yaml").read_text())


def readme_seconds(tmp: Path) -> float:
    """Wall time of the README command as a user runs it (a fresh process: interpreter,
    imports, search, closed loop, report)."""
    import subprocess

    exe = Path(sys.executable).parent / "planner"
    t0 = time.perf_counter()
    subprocess.run([str(exe), "plan", "--inventory", "inventories/gpus.yaml", "--budget",
                    "512", "--out", str(tmp / "readme"), "-q"], check=True, cwd=REPO,
                   capture_output=True)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", choices=("all", "issue", "table51"), default="all")
    ap.add_argument("--no-sim-check", action="store_true",
                    help="the perf model's capacity (faster); default: the closed loop's")
    ap.add_argument("--doc", action="store_true", help="write docs/deployment.md's table")
    a = ap.parse_args()
    import os

    os.chdir(REPO)
    cases = {"all": ISSUE + TABLE51, "issue": ISSUE, "table51": TABLE51}[a.cases]
    head = ("| plan | server: req/s | $/h | gpu: req/s | $/h | server ÷ gpu | servers | "
            "straddling | two types | over inventory | outside rules | 0-s collectives | "
            "export |")
    lines = [head, "|" + "|".join(["---"] * (head.count("|") - 1)) + "|"]
    totals = {"straddling": 0, "two_types": 0, "over_servers": 0, "outside_rules": 0,
              "zero_collectives": 0, "export_failed": 0}
    readme_s = None
    with tempfile.TemporaryDirectory() as tmp:
        if not a.no_sim_check:
            readme_s = readme_seconds(Path(tmp))
        for k, (label, args) in enumerate(cases):
            server, _ = plan(args, Path(tmp) / f"{k}-server", "server", not a.no_sim_check)
            free, _ = plan(args, Path(tmp) / f"{k}-gpu", "gpu", not a.no_sim_check)
            c = checks(server)
            ok = export_ok(Path(tmp) / f"{k}-server", Path(tmp) / f"{k}-export")
            for key in totals:
                totals[key] += c.get(key, 0) if key != "export_failed" else (not ok)
            rs, rg = (p["summary"]["requests_per_s"] for p in (server, free))
            cs, cg = (p["summary"]["cost_per_hour"] for p in (server, free))
            lines.append(f"| {label} | {rs:,.1f} | {cs:,.2f} | {rg:,.1f} | {cg:,.2f} | "
                         f"{rs / rg if rg else float('nan'):.3f} | {c['servers']} | "
                         f"{c['straddling']} | {c['two_types']} | {c['over_servers']} | "
                         f"{c['outside_rules']} | {c['zero_collectives']} | "
                         f"{'validates' if ok else 'FAILED'} |")
            print(lines[-1], flush=True)
    table = "\n".join(lines)
    print()
    print(table)
    print(f"\ntotals over {len(cases)} server plans: {json.dumps(totals)}")
    if readme_s is not None:
        print(f"README command (planner plan --inventory inventories/gpus.yaml --budget 512, "
              f"a fresh process): {readme_s:.1f} s (goal <= 30 s)")
    if a.doc:
        doc = REPO / "docs" / "deployment.md"
        text = doc.read_text()
        start, end = "<!-- deployment-goals:start -->", "<!-- deployment-goals:end -->"
        if start not in text or end not in text:
            raise SystemExit(f"{doc}: the markers {start} / {end} are missing")
        body = (f"{start}\n{table}\n\nTotals over {len(cases)} server-granularity plans: "
                + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in totals.items())
                + (f"; the README command took {readme_s:.1f} s" if readme_s else "")
                + f".\n{end}")
        head_, _, rest = text.partition(start)
        _, _, tail = rest.partition(end)
        doc.write_text(head_ + body + tail)


if __name__ == "__main__":
    main()
