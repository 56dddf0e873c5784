"""Simulator cost in machine instructions per simulated request (needs valgrind).

Wall-clock figures from ``bench_sim.py`` move by 10 % between runs on a shared machine,
which hides the effect of a small change.  This counts instructions instead: it builds
the same inputs as ``bench_sim.py`` (64 x 8 H200 max-rate plan, fabric-400g, 0.8x
load), pickles them, and runs ``simulate()`` under ``valgrind --tool=callgrind`` on the
first ``n`` requests and on the first one; the difference over ``n - 1`` is the
per-request cost with interpreter start-up and imports cancelled out.  About a minute
for the default 20,000 requests.

    .venv/bin/python benchmarks/bench_sim_instructions.py [--requests 20000]
"""

from __future__ import annotations

import argparse
import pickle
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

_CHILD = """
import pickle, sys
from planner.sim.engine import simulate
from planner.sim.routers import make_router
cluster, reqs = pickle.load(open(sys.argv[1], "rb"))
simulate(cluster, reqs[:int(sys.argv[2])], make_router("range"), seed=0)
"""


def instructions(inputs: Path, n: int) -> int:
    """Instructions callgrind counts for a child process simulating ``n`` requests."""
    out = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
         "-c", _CHILD, str(inputs), str(n)], capture_output=True, text=True, check=True)
    m = re.search(r"Collected\s*:\s*(\d+)", out.stderr)
    if m is None:
        raise SystemExit("valgrind printed no instruction count:\n" + out.stderr[-2000:])
    return int(m.group(1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=20_000)
    args = ap.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("bench_sim_instructions: valgrind is not installed")
    if args.requests < 2:
        raise SystemExit("bench_sim_instructions: --requests must be >= 2")
    sys.path.insert(0, str(Path(__file__).parent))
    from bench_sim import NETWORKS, build_plan

    from planner.context.thesis_cases import WORKLOAD
    from planner.fleet.network import parse_network
    from planner.sim.arrivals import requests_from_workload
    from planner.sim.cluster import cluster_from_plan
    from planner.workload import load_workload

    plan = build_plan()
    cluster = cluster_from_plan(plan, network=parse_network(NETWORKS["fabric-400g"]))
    rate = 0.8 * plan["summary"]["requests_per_s"]
    reqs = requests_from_workload(load_workload(WORKLOAD), args.requests, rate, seed=0)
    with tempfile.TemporaryDirectory() as tmp:
        inputs = Path(tmp) / "inputs.pkl"
        inputs.write_bytes(pickle.dumps((cluster, reqs)))
        base = instructions(inputs, 1)
        full = instructions(inputs, args.requests)
    per = (full - base) / (args.requests - 1)
    print(f"simulate(): {per:,.0f} instructions per simulated request "
          f"({args.requests} requests, range router, fabric-400g, 0.8x)")


if __name__ == "__main__":
    main()
