"""Validation (c) of issue 8: seed 004's ordering on its mixed workload.

    .venv/bin/python scripts/sim_validate_mixing.py [--episodes 8] [--requests 2000]

Runs round-robin, JSQ, the mixing-impact greedy and the committed DQN policies (each
variant whose weights exist) on the same fresh episodes of the mixed workload (seeds
disjoint from training), prints mean E2E, TTFT, TBT, router wait, preemptions and the
improvement over round-robin, and writes the table into ``docs/sim-routing-rl.md``
between its markers (atomically).  Per-episode improvements are averaged, as the paper
appears to do (notes §4.4).
"""

from __future__ import annotations

import perfmodel.float_path  # noqa: F401  (before numpy: one float path on every CPU)

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from planner.sim.engine import simulate  # noqa: E402
from planner.sim.routers.dqn import DQNRouter, weights_path  # noqa: E402
from planner.sim.routers.jsq import JSQRouter  # noqa: E402
from planner.sim.routers.mixing import MixingRouter  # noqa: E402
from planner.sim.routers.round_robin import RoundRobinRouter  # noqa: E402
from planner.sim.scenarios import mixed_workload as mw  # noqa: E402

BEGIN, END = "<!-- BEGIN mixing-table -->", "<!-- END mixing-table -->"
DOC = ROOT / "docs" / "sim-routing-rl.md"


def policies() -> list[tuple[str, object]]:
    out: list[tuple[str, object]] = [("round-robin", RoundRobinRouter), ("jsq", JSQRouter),
                                     ("mixing (greedy)", MixingRouter)]
    for v, label in (("baseline", "baseline RL"), ("aware", "workload-aware RL"),
                     ("pretrained", "guided RL, warm start only"),
                     ("guided", "workload-guided RL")):
        if weights_path(v).is_file():
            out.append((label, lambda v=v: DQNRouter(variant=v)))
    return out


def episode_metrics(res) -> dict[str, float]:
    done = [r for r in res.requests if r.t_done == r.t_done]
    e2e = np.array([r.t_done - r.arrival for r in done])
    ttft = np.array([r.t_first_token - r.arrival for r in done])
    tbt = np.array([(r.t_done - r.t_first_token) / (r.tokens_out - 1) for r in done
                    if r.tokens_out > 1])
    wait = np.array([r.t_routed - r.arrival for r in done])
    return {"e2e": e2e.mean(), "ttft": ttft.mean(), "tbt_ms": 1e3 * tbt.mean(),
            "wait": wait.mean(), "preempt": float(sum(r.preemptions for r in res.requests)),
            "unfinished": float(len(res.requests) - len(done))}


def run(episodes: int, requests: int, rate: float, seed0: int) -> dict[str, list[dict]]:
    cluster = mw.mixed_cluster()
    rows: dict[str, list[dict]] = {}
    for name, make in policies():
        rows[name] = []
        for k in range(episodes):
            router = make()
            t = time.perf_counter()
            res = simulate(cluster, mw.mixed_requests(requests, rate, seed0 + k), router, seed=k)
            m = episode_metrics(res)
            m["wall_s"] = time.perf_counter() - t
            m["forced"] = float(getattr(router, "forced", 0))
            rows[name].append(m)
        print(f"{name:20s} mean E2E {np.mean([m['e2e'] for m in rows[name]]):.3f} s", flush=True)
    return rows


def table(rows: dict[str, list[dict]], args) -> str:
    rr = [m["e2e"] for m in rows["round-robin"]]
    lines = [f"Scenario: 4 x A100-80G / Llama-3.1-8B colocated, max batch {mw.MAX_BATCH}, "
             f"{mw.SCENARIO_KV_TOKENS} KV tokens per instance; mixed workload at "
             f"{args.rate:g} req/s; {args.episodes} episodes x {args.requests} requests "
             f"(workload seeds {args.seed}..{args.seed + args.episodes - 1}).",
             "",
             "| policy | mean E2E (s) | ± sd over episodes | TTFT (s) | TBT (ms) | router wait (s) "
             "| preemptions / episode | improvement over RR | episodes better than RR |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, ms in rows.items():
        e = np.array([m["e2e"] for m in ms])
        imp = 100.0 * np.mean([(a - b) / a for a, b in zip(rr, e, strict=True)])
        better = int(np.sum(e < np.array(rr)))
        lines.append(
            f"| {name} | {e.mean():.3f} | {e.std():.3f} | "
            f"{np.mean([m['ttft'] for m in ms]):.3f} | {np.mean([m['tbt_ms'] for m in ms]):.2f} | "
            f"{np.mean([m['wait'] for m in ms]):.3f} | "
            f"{np.mean([m['preempt'] for m in ms]):.0f} | "
            + ("–" if name == "round-robin" else f"{imp:+.2f} %") + " | "
            + ("–" if name == "round-robin" else f"{better}/{len(ms)}") + " |")
    forced = {n: sum(m["forced"] for m in ms) for n, ms in rows.items() if "RL" in n}
    if forced:
        lines += ["", "DQN safety valve (τ_max = 10 s) fired: "
                  + ", ".join(f"{n} {int(v)}" for n, v in forced.items()) + " times in total."]
    order = sorted(rows, key=lambda n: np.mean([m["e2e"] for m in rows[n]]))
    lines += ["", "Ordering by mean E2E (best first): " + " < ".join(order) + "."]
    return "\n".join(lines)


def write_doc(text: str) -> None:
    doc = DOC.read_text() if DOC.exists() else f"# Seed 004 routing\n\n{BEGIN}\n{END}\n"
    if BEGIN not in doc or END not in doc:
        doc += f"\n{BEGIN}\n{END}\n"
    head, rest = doc.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    new = f"{head}{BEGIN}\n{text}\n{END}{tail}"
    fd, tmp = tempfile.mkstemp(dir=DOC.parent, suffix=".tmp")
    with os.fdopen(fd, "w") as fh:
        fh.write(new)
    os.chmod(tmp, 0o644)
    os.replace(tmp, DOC)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=8)
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--rate", type=float, default=mw.SCENARIO_RATE)
    ap.add_argument("--seed", type=int, default=50_000)
    ap.add_argument("--no-doc", action="store_true")
    args = ap.parse_args(argv)
    rows = run(args.episodes, args.requests, args.rate, args.seed)
    text = table(rows, args)
    print(text)
    if not args.no_doc:
        write_doc(text)
        print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
