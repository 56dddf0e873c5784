"""Training loop of seed 004's DQN router on the request-level simulator (A.9; notes §2.4).

The environment is the real simulator: each episode is one :func:`planner.sim.engine.simulate`
run of the mixed workload (fresh Poisson arrivals and lengths per episode) with a
:class:`~planner.sim.routers.dqn.DQNRouter` in training mode; the router feeds every
transition to the :class:`~planner.sim.rl.agent.DoubleDQN`, which learns online.

Phases (the guided variant; the two others skip 1-2):

1. *Demonstrations* [A]: ``demo_episodes`` episodes in which the mixing-impact greedy
   (the guidance heuristic of eq. 4 as a policy) takes every decision while the DQN
   router records the transitions into the agent's demonstration buffer;
2. *Pre-training* [A]: ``pretrain_steps`` Double-DQN updates with DQfD's margin loss on
   the demonstrations alone (:mod:`planner.sim.rl.agent`); an ``eval`` row of the curve
   records the pre-trained greedy policy on one episode (no learning);
3. *RL*: ``episodes`` episodes in which the agent acts (ε-greedy over the valid actions)
   and learns online from minibatches mixing its own transitions and the demonstrations,
   at learning rate ``finetune_lr`` (1e-4, a tenth of the pre-training rate [A]: with
   1e-3 our first run drifted away from the warm start within ten episodes -- mean E2E
   from ≈ 2.9 s to 3.8–5.3 s with preemptions -- as the TD targets grew with γ̃_k while
   the per-decision reward stayed noisy).

HuRL schedule: the TD discount and guidance weight come from a
:class:`planner.sim.rl.schedule.GuidanceClock` advanced per decision of the agent
(phase 3); rewards are normalised per term (:class:`planner.sim.rl.reward.RewardNormaliser`).
Exploration: ε falls linearly from ``eps_start`` to ``eps_end`` over the first
``explore_episodes`` RL episodes and is 0 afterwards.  The paper explores with random
actions until episode 20 (ε = 1); that default is kept without a warm start, but a
warm-started agent starts from ε = 0.2 -- purely random routing for 20 episodes would
fill the replay with transitions far from the policy it already has and, in our runs
without a warm start, taught nothing.  Everything takes the run's seed: network init,
replay sampling, ε draws (the router's generator, seeded by the engine from ``seed + k``)
and the workloads (``workload_seed + k`` for RL episodes, ``workload_seed + 5000 + j``
for demonstrations, ``workload_seed + 9000`` for the evaluation episode).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import torch

from planner.sim.rl.agent import DoubleDQN, DQNConfig
from planner.sim.rl.features import StateConfig
from planner.sim.rl.reward import RewardNormaliser
from planner.sim.rl.schedule import BETA_D, DECISIONS_PER_EPISODE, GuidanceClock


@dataclass(frozen=True)
class TrainConfig:
    variant: str = "guided"
    episodes: int = 20
    explore_episodes: int = 10
    eps_start: float | None = None  # None: 0.2 with a warm start, else 1.0 (the paper)
    eps_end: float = 0.0
    requests: int = 2000
    rate: float = 0.0  # 0: the scenario's documented rate
    seed: int = 0
    workload_seed: int = 10_000
    tau_max: float = 10.0
    mask: bool = True
    normalise: bool = True
    demo_episodes: int | None = None  # None: 8 for the guided variant, else 0
    pretrain_steps: int = 3000
    finetune_lr: float | None = 1e-4  # None: keep DQNConfig.lr after the warm start
    beta_d: float = BETA_D
    decisions_per_episode: int = DECISIONS_PER_EPISODE
    dqn: DQNConfig = field(default_factory=DQNConfig)

    @property
    def n_demo(self) -> int:
        if self.demo_episodes is not None:
            return self.demo_episodes
        return 8 if self.variant == "guided" else 0

    @property
    def eps0(self) -> float:
        if self.eps_start is not None:
            return self.eps_start
        return 0.2 if self.n_demo else 1.0

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["dqn"] = self.dqn.to_dict()
        d["demo_episodes"], d["eps_start"] = self.n_demo, self.eps0
        return d


def epsilon(k: int, cfg: TrainConfig) -> float:
    """ε of RL episode k: linear eps_start → eps_end over the exploration episodes, then 0."""
    if k >= cfg.explore_episodes:
        return 0.0
    frac = k / max(cfg.explore_episodes - 1, 1)
    return cfg.eps0 + (cfg.eps_end - cfg.eps0) * frac


@dataclass
class TrainResult:
    agent: DoubleDQN
    state_config: StateConfig
    curve: list[dict[str, float]]
    wall_s: float
    meta: dict[str, Any] = field(default_factory=dict)
    pretrained: dict[str, Any] | None = None  # online-net state dict after phase 2


def train(cfg: TrainConfig, *, progress: Callable[[dict[str, float]], None] | None = None
          ) -> TrainResult:
    """Train one variant (module docstring); returns the agent and the per-episode curve."""
    from planner.sim.engine import simulate
    from planner.sim.routers.dqn import DQNRouter
    from planner.sim.routers.mixing import MixingRouter
    from planner.sim.scenarios.mixed_workload import (
        N_INSTANCES,
        SCENARIO_RATE,
        mixed_cluster,
        mixed_requests,
    )

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    torch.manual_seed(cfg.seed)
    try:
        cluster = mixed_cluster()
        scfg = StateConfig(N_INSTANCES)
        agent = DoubleDQN(scfg.dim, scfg.n_actions, config=cfg.dqn, seed=cfg.seed)
        norm = RewardNormaliser() if cfg.normalise else None
        clock = GuidanceClock(cfg.variant, per_episode=cfg.decisions_per_episode,
                              beta=cfg.beta_d)
        rate = cfg.rate or SCENARIO_RATE
        curve: list[dict[str, float]] = []
        pretrained = None
        t0 = time.perf_counter()

        def episode(phase: str, k: int, wl_seed: int, sim_seed: int, **kw) -> None:
            router = DQNRouter(net=agent.online, state_config=scfg, tau_max=cfg.tau_max,
                               mask=cfg.mask, **kw)
            n_loss = len(agent.losses)
            res = simulate(cluster, mixed_requests(cfg.requests, rate, wl_seed), router,
                           seed=sim_seed)
            done = np.array([r.t_done - r.arrival for r in res.requests
                             if r.t_done == r.t_done])
            row = {"phase": phase, "episode": k, "epsilon": kw.get("epsilon", 0.0),
                   "gamma": agent.gamma, "guidance_w": router.weight,
                   "k_clock": clock.k,
                   "reward": router.episode_reward,
                   "reward_pending": float(router.reward_terms[0]),
                   "reward_completion": float(router.reward_terms[1]),
                   "reward_guidance": float(router.reward_terms[2]),
                   "mean_e2e_s": float(done.mean()) if len(done) else float("nan"),
                   "completed": int(len(done)), "decisions": router.decisions,
                   "holds": router.holds, "forced": router.forced,
                   "masked_holds": router.masked_holds,
                   "preemptions": int(sum(r.preemptions for r in res.requests)),
                   "loss": float(np.mean(agent.losses[n_loss:])) if len(agent.losses) > n_loss
                   else float("nan"), "updates": agent.updates,
                   "wall_s": time.perf_counter() - t0}
            curve.append(row)
            if progress is not None:
                progress(row)

        for j in range(cfg.n_demo):
            agent.gamma, w0 = clock.current()
            episode("demo", j, cfg.workload_seed + 5000 + j, cfg.seed + 5000 + j,
                    learner=agent, teacher=MixingRouter(), normaliser=norm,
                    guidance_weight=w0)
        if cfg.n_demo:
            agent.gamma = clock.current()[0]
            agent.pretrain(cfg.pretrain_steps)
            pretrained = {k: v.clone() for k, v in agent.online.state_dict().items()}
            if cfg.finetune_lr is not None:
                for group in agent.opt.param_groups:
                    group["lr"] = cfg.finetune_lr
            episode("eval", 0, cfg.workload_seed + 9000, cfg.seed + 9000)
        for k in range(cfg.episodes):
            episode("rl", k, cfg.workload_seed + k, cfg.seed + k, learner=agent,
                    epsilon=epsilon(k, cfg), normaliser=norm, clock=clock)
        meta = {"normaliser": norm.to_dict() if norm else None, "clock_k": clock.k}
        return TrainResult(agent, scfg, curve, time.perf_counter() - t0, meta, pretrained)
    finally:
        torch.set_num_threads(threads)


__all__ = ["TrainConfig", "TrainResult", "epsilon", "train"]
