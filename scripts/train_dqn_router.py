"""Train seed 004's Double-DQN router on the simulator and save the committed weights.

    .venv/bin/python scripts/train_dqn_router.py                       # all three variants
    .venv/bin/python scripts/train_dqn_router.py --variants guided --episodes 20

Each variant (``guided``: workload-guided, the paper's method; ``aware``; ``baseline``)
is trained on fresh mixed-workload episodes of the scenario in
:mod:`planner.sim.scenarios.mixed_workload` (the guided variant after a warm start from
demonstrations of the mixing-impact greedy, see :mod:`planner.sim.rl.train`) and
written to
``planner/sim/data/dqn_router[_<variant>].pt`` with a JSON sidecar (settings, per-episode
training curve, wall time).  Deterministic for a given ``--seed``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from planner.sim.rl.agent import DQNConfig, q_network  # noqa: E402
from planner.sim.rl.schedule import VARIANTS  # noqa: E402
from planner.sim.rl.train import TrainConfig, train  # noqa: E402
from planner.sim.routers.dqn import save_policy, weights_path  # noqa: E402
from planner.sim.scenarios import mixed_workload as mw  # noqa: E402


def _write_json(path: Path, data: dict) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "w") as fh:
        json.dump(data, fh, indent=1)
        fh.write("\n")
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variants", default="guided,aware,baseline")
    ap.add_argument("--episodes", type=int, default=20, help="RL episodes")
    ap.add_argument("--explore-episodes", type=int, default=10)
    ap.add_argument("--eps-start", type=float, default=None,
                    help="initial ε (default: 0.2 with a warm start, else 1.0)")
    ap.add_argument("--demo-episodes", type=int, default=None,
                    help="mixing-greedy demonstration episodes (default: 8 guided, 0 else)")
    ap.add_argument("--pretrain-steps", type=int, default=3000)
    ap.add_argument("--finetune-lr", type=float, default=1e-4,
                    help="learning rate after the warm start (0: keep --lr)")
    ap.add_argument("--demo-frac", type=float, default=0.25)
    ap.add_argument("--warmup", type=int, default=1000, help="transitions before learning")
    ap.add_argument("--beta-d", type=float, default=0.5)
    ap.add_argument("--no-mask", action="store_true", help="allow routing into full KV")
    ap.add_argument("--no-normalise", action="store_true",
                    help="raw eq. 3 rewards (x 0.01) instead of per-term normalisation")
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--rate", type=float, default=mw.SCENARIO_RATE)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--out-dir", type=Path, default=None)
    args = ap.parse_args(argv)
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    bad = [v for v in variants if v not in VARIANTS]
    if bad:
        print(f"error: --variants: unknown variant {bad[0]!r} (known: {', '.join(VARIANTS)})",
              file=sys.stderr)
        return 2
    for v in variants:
        dqn = DQNConfig(batch=args.batch, warmup=args.warmup, demo_frac=args.demo_frac,
                        reward_scale=0.01 if args.no_normalise else 1.0)
        cfg = TrainConfig(variant=v, episodes=args.episodes,
                          explore_episodes=args.explore_episodes, eps_start=args.eps_start,
                          requests=args.requests, rate=args.rate, seed=args.seed,
                          mask=not args.no_mask, normalise=not args.no_normalise,
                          demo_episodes=args.demo_episodes,
                          pretrain_steps=args.pretrain_steps, beta_d=args.beta_d,
                          finetune_lr=args.finetune_lr or None, dqn=dqn)

        def show(row, v=v):
            print(f"[{v}] {row['phase']:4s} {row['episode']:3d} eps {row['epsilon']:.2f} "
                  f"w {row['guidance_w']:.3f} reward {row['reward']:10.0f} "
                  f"e2e {row['mean_e2e_s']:.3f}s holds {row['holds']:5d} "
                  f"forced {row['forced']:3d} preempt {row['preemptions']:4d} "
                  f"loss {row['loss']:.4f} "
                  f"t {row['wall_s']:.0f}s", flush=True)

        res = train(cfg, progress=show)
        path = weights_path(v)
        if args.out_dir is not None:
            path = args.out_dir / path.name
        meta = {"variant": v, "mask": cfg.mask, "train": cfg.to_dict(), **res.meta,
                "scenario": {
            "gpu": mw.GPU, "model": mw.MODEL, "instances": mw.N_INSTANCES,
            "max_batch": mw.MAX_BATCH, "kv_capacity_tokens": mw.SCENARIO_KV_TOKENS,
            "rate": args.rate}, "wall_s": res.wall_s}
        save_policy(path, res.agent.online, res.state_config, meta)
        if res.pretrained is not None:  # the warm start alone, for the validation table
            net = q_network(res.state_config.dim, res.state_config.n_actions, cfg.dqn.hidden)
            net.load_state_dict(res.pretrained)
            save_policy(path.with_name(weights_path("pretrained").name), net,
                        res.state_config, {**meta, "variant": "pretrained",
                                           "note": "guided warm start before RL"})
        _write_json(path.with_suffix(".json"), {**meta, "curve": res.curve})
        print(f"[{v}] wrote {path} ({path.stat().st_size} bytes) in {res.wall_s:.0f}s",
              flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
