"""What running an MoE model's prefill attention-DP groups in lockstep costs a plan.

    .venv/bin/python benchmarks/prefill_lockstep.py [-- PLAN ARGS...]

The engines run an MoE model's attention-DP ranks in lockstep, and so do the simulator
and the planner's closed loop by default (planner.sim.engine, ``prefill_lockstep``;
docs/simulation.md).  This makes the README's plan (``planner plan --inventory
inventories/gpus.yaml --budget 512``, in-process, seed 0) and simulates it at its
headline on seeds the planner never used (11, 12, 13), with the prefill groups in
lockstep (what the headline is verified with) and on their own (``planner simulate
--independent-prefill``), then at 1.5x the headline to show what each completes when
overloaded.  Prints one row per setting.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SEEDS = (11, 12, 13)
README = ["--inventory", "inventories/gpus.yaml", "--budget", "512"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("plan_args", nargs="*", default=README,
                    help="planner plan arguments (default: the README's)")
    args = ap.parse_args()
    from planner.cli.main import run
    from planner.sim.closed_loop import simulate_at

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        rc = run(["plan", *args.plan_args, "--out", str(out), "-q"])
        if rc != 0:
            raise SystemExit(f"planner plan exited {rc}")
        plan = json.loads((out / "plan.json").read_text())
    s = plan["summary"]
    rate = float(s["requests_per_s"])
    router = s["closed_loop"].get("router", "range")
    print(f"plan: {s['cost_per_hour']:.2f} $/h, headline {rate:.1f} requests/s "
          f"(router {router}); seeds {', '.join(map(str, SEEDS))}")
    print(f"{'prefill groups':15s} {'rate':>7s} {'SLO held (min)':>15s} {'completed':>10s} "
          f"{'TTFT p50':>9s} {'TTFT p90':>9s}")
    for lockstep in (True, False):
        for k in (1.0, 1.5):
            checks = [simulate_at(plan, k * rate, seed, router=router,
                                  prefill_lockstep=lockstep) for seed in SEEDS]
            worst = min(checks, key=lambda c: c.attainment)
            done = sum(c.completed_rps for c in checks) / len(checks)
            print(f"{'lockstep' if lockstep else 'on their own':15s} {k * rate:7.1f} "
                  f"{100 * worst.attainment:14.1f}% {done:10.1f} "
                  f"{worst.ttft_p50_ms:8.0f}ms {worst.ttft_p90_ms:8.0f}ms", flush=True)


if __name__ == "__main__":
    main()
