"""Seed 004's RL router: a Double-DQN policy over the head of the router queue (§5.3).

At every decision -- the engine offers the head of the router's FIFO queue on arrival,
again every ``hold_interval_s`` = Δt = 0.02 s while it waits, and at once after a
dispatch -- the router builds the state of :mod:`planner.sim.rl.features`, picks
a = argmax_a Q(s, a) over m + 1 actions and either routes the head to instance a
(a < m) or keeps it (a = m, the paper's no-op: :data:`HOLD`).

Safety valve [A]: a head that has waited longer than ``tau_max`` (default 10 s) is
routed to the best-valued instance even if the policy prefers to wait; the paper has no
such rule, but an untrained or unlucky policy could otherwise hold a request forever
(the simulation would never end).  The evaluation reports how often it fires.

Action mask [A; the paper's §2.4 routes "to an instance with available capacity" and
its notes leave masking optional].  Instance l is a valid action only while it has KV
room by the router's own estimate: the tokens resident there (prompts + tokens generated
so far, :class:`~planner.sim.routers.mixing.IslandLedger`) do not exceed its KV
capacity -- the rule on which the mixing greedy holds.  The no-op is always valid; with
no valid instance the router holds.  Without the mask an untrained policy preempts
freely (routing into a full instance is never better than waiting here, since the engine
would recompute the request's prefill), and the Q-learner has to discover that from a
delayed, noisy signal; the mask removes those actions from both the choice and the
Double-DQN bootstrap (:mod:`planner.sim.rl.agent`).  ``mask=False`` restores the
unmasked action set.

Training mode (``learner`` given): the router also records (s_t, a_t, r_t, s_{t+1}) and
the masks of s_t and s_{t+1} into the learner at each decision (reward of
:mod:`planner.sim.rl.reward`, normalised per term by ``normaliser`` when given, with the
guidance weight w of the decision taken from ``clock`` when given) and explores
ε-greedily over the valid actions with its seeded generator.  With a ``teacher`` (a
router, normally :class:`~planner.sim.routers.mixing.MixingRouter`) the teacher takes
every decision and the transitions are stored as demonstrations (the guided variant's
warm start, :mod:`planner.sim.rl.agent`).  The last transition of an episode (no
successor state) is dropped.

Weights: ``planner/sim/data/dqn_router.pt`` (workload-guided) by default, or
``dqn_router_<variant>.pt`` (``pretrained``: the guided variant's warm start before RL,
kept to measure what RL adds); a file holds the state dict, the state configuration and
the training settings (``meta``, including whether the policy was trained with the mask).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from planner.core.atomic import write_bytes_atomic
from planner.core.errors import PlannerError
from planner.sim.protocol import HOLD, BaseRouter, ClusterView, SimRequest
from planner.sim.rl.features import StateConfig, build_state, feature_scale, scan_instance
from planner.sim.rl.reward import DT_S, R_W, ideal_time, pending_work, step_reward
from planner.sim.routers.mixing import (
    IslandLedger,
    decode_estimate,
    heuristic_gap,
    island_gradients,
    island_step_s,
    mixing_scores,
    prefill_islands,
)

DATA_DIR = Path(__file__).resolve().parent.parent / "data"


def weights_path(variant: str = "guided") -> Path:
    """Committed weights of a variant (``guided`` is the default policy)."""
    return DATA_DIR / ("dqn_router.pt" if variant == "guided" else f"dqn_router_{variant}.pt")


def save_policy(path: Path, net: Any, cfg: StateConfig, meta: dict[str, Any]) -> None:
    """Write weights + state configuration atomically (planner.core.atomic)."""
    import io

    import torch

    blob = {"state_dict": net.state_dict(), "n_instances": cfg.n_instances,
            "decode_edges": list(cfg.decode_edges), "prompt_edges": list(cfg.prompt_edges),
            "w_cap": cfg.w_cap, "hidden": int(net[0].out_features), "meta": meta}
    buf = io.BytesIO()
    torch.save(blob, buf)
    write_bytes_atomic(path, buf.getvalue())


def load_policy(path: str | Path) -> tuple[Any, StateConfig, dict[str, Any]]:
    """(network, state configuration, metadata) from a weights file."""
    import torch

    from planner.sim.rl.agent import q_network

    p = Path(path)
    if not p.is_file():
        raise PlannerError(f"DQN router weights '{p}' not found (train them with "
                           "scripts/train_dqn_router.py)")
    try:
        blob = torch.load(p, map_location="cpu", weights_only=True)
        cfg = StateConfig(int(blob["n_instances"]), tuple(blob["decode_edges"]),
                          tuple(blob["prompt_edges"]), int(blob["w_cap"]))
        net = q_network(cfg.dim, cfg.n_actions, int(blob["hidden"]))
        net.load_state_dict(blob["state_dict"])
    except (KeyError, RuntimeError, ValueError, TypeError) as err:
        raise PlannerError(f"{p}: not a DQN router weights file ({err})") from None
    net.eval()
    return net, cfg, dict(blob.get("meta") or {})


class DQNRouter(BaseRouter):
    """Double-DQN routing policy (module docstring)."""

    name = "dqn"

    def __init__(self, weights: str | Path | None = None, *, variant: str = "guided",
                 net: Any = None, state_config: StateConfig | None = None,
                 learner: Any = None, epsilon: float = 0.0, guidance_weight: float = 0.0,
                 tau_max: float = 10.0, hold_interval_s: float = DT_S, r_w: float = R_W,
                 mask: bool | None = None, teacher: Any = None, normaliser: Any = None,
                 clock: Any = None) -> None:
        if net is None:
            net, state_config, self.meta = load_policy(weights or weights_path(variant))
        else:
            self.meta = {}
            if state_config is None:
                raise PlannerError("DQNRouter: a network needs its StateConfig")
        self.net, self.cfg = net, state_config
        self.learner, self.epsilon, self.weight = learner, epsilon, guidance_weight
        self.tau_max, self.hold_interval_s, self.r_w = tau_max, hold_interval_s, r_w
        self.mask = bool(self.meta.get("mask", True)) if mask is None else mask
        self.teacher, self.normaliser, self.clock = teacher, normaliser, clock
        if teacher is not None and learner is None:
            raise PlannerError("DQNRouter: a teacher only makes sense with a learner")

    # ------------------------------------------------------------------ lifecycle
    def reset(self, view: ClusterView, rng: np.random.Generator) -> None:
        super().reset(view, rng)
        self.targets = prefill_islands(view)
        if len(self.targets) != self.cfg.n_instances:
            raise PlannerError(f"DQN router was trained for {self.cfg.n_instances} instances; "
                               f"this cluster has {len(self.targets)} prefill-capable islands")
        grads = np.array([island_gradients(view, int(i)) for i in self.targets])
        self.grad_1, self.grad_2 = grads[:, 0], grads[:, 1]
        self.scale = feature_scale(self.cfg, max(view.islands[int(i)].max_batch
                                                 for i in self.targets))
        self.ledger = IslandLedger(len(view.islands))
        self.waiting: dict[int, SimRequest] = {}  # seen at the router, not yet placed
        self.t_hat: dict[int, float] = {}
        self.inv_t_sum, self.inv_t_n = 0.0, 0
        self.completed = 0
        # (x, a, gap, t, valid actions, guidance weight) of the open transition
        self.prev: tuple[np.ndarray, int, float, float, np.ndarray, float] | None = None
        self.episode_reward = 0.0
        self.reward_terms = np.zeros(3)
        self.decisions = self.holds = self.forced = self.masked_holds = 0
        if self.teacher is not None:
            self.teacher.reset(view, rng)

    def _ideal(self, req: SimRequest, view: ClusterView) -> float:
        d_hat = decode_estimate(req)
        best = math.inf
        for i in self.targets:
            i = int(i)
            t = ideal_time(view.prefill_time(i, req.input_len),
                           view.step_time(i, 1, req.input_len + d_hat / 2.0), d_hat)
            best = min(best, t)
        return best

    # ------------------------------------------------------------------ decision
    def _q(self, x: np.ndarray) -> np.ndarray:
        import torch

        with torch.no_grad():
            return self.net(torch.from_numpy(x)[None, :])[0].numpy()

    def route_arrival(self, req: SimRequest, view: ClusterView) -> int:
        if req.rid not in self.t_hat:
            t = self._ideal(req, view)
            self.t_hat[req.rid] = t
            self.inv_t_sum += 1.0 / t
            self.inv_t_n += 1
            self.waiting[req.rid] = req
        now = view.now
        scans = [scan_instance(self.ledger.at[int(i)].values(), self.cfg, now,
                               island_step_s(view, int(i)), self.t_hat) for i in self.targets]
        raw = build_state(self.cfg, view, req, self.targets, scans)
        x = (raw * self.scale).astype(np.float32)
        m = self.cfg.n_instances
        valid = self.valid_actions(view, scans)
        if self.learner is not None:
            self._record(x, view, scans, valid)
        self.decisions += 1
        if self.teacher is not None:
            t = int(self.teacher.route_arrival(req, view))
            a = m if t == HOLD else int(np.flatnonzero(self.targets == t)[0])
            q = None
        elif not valid[:m].any():
            a, q = m, None  # nowhere to go: the only valid action is the no-op
            self.masked_holds += 1
        elif self.learner is not None and self.rng.random() < self.epsilon:
            a, q = int(self.rng.choice(np.flatnonzero(valid))), None
        else:
            q = self._q(x)
            a = int(np.argmax(np.where(valid, q, -np.inf)))
        if self.teacher is None and a == m and view.now - req.arrival > self.tau_max:
            q = self._q(x) if q is None else q
            ok = valid[:m] if valid[:m].any() else np.ones(m, bool)
            a = int(np.argmax(np.where(ok, q[:m], -np.inf)))
            self.forced += 1
        if self.learner is not None:
            gap = 0.0
            if a < m:
                resident = np.array([sc.resident for sc in scans])
                s = mixing_scores(req.input_len, decode_estimate(req), resident, self.grad_1,
                                  self.grad_2)
                gap = min(heuristic_gap(s, a), 0.0)
            if self.clock is not None and self.teacher is None:
                self.learner.gamma, self.weight = self.clock.tick()
            self.prev = (x, a, gap, view.now, valid, self.weight)
        if a == m:
            self.holds += 1
            return HOLD
        island = int(self.targets[a])
        self.waiting.pop(req.rid, None)
        self.ledger.add(req, island)
        return island

    def valid_actions(self, view: ClusterView, scans) -> np.ndarray:
        """Boolean mask over the m + 1 actions (module docstring: KV room)."""
        m = self.cfg.n_instances
        out = np.ones(m + 1, bool)
        if self.mask:
            for k, i in enumerate(self.targets):
                out[k] = scans[k].resident <= view.islands[int(i)].kv_capacity_tokens
        return out

    def _record(self, x: np.ndarray, view: ClusterView, scans, valid: np.ndarray) -> None:
        """Close the previous transition with the reward earned since (eq. 3)."""
        if self.prev is None:
            return
        x_prev, a_prev, gap, t_prev, valid_prev, weight = self.prev
        pend = sum(sc.pending for sc in scans) + pending_work(self.waiting.values(),
                                                              self.t_hat)
        # queued behind the head, not yet offered to us: f = 0, T̂ unknown -> the mean 1/T̂
        unseen = max(view.router_queue - len(self.waiting), 0)
        if unseen:
            pend += unseen * self.inv_t_sum / max(self.inv_t_n, 1)
        terms = step_reward(pend, view.now - t_prev, self.completed, gap, weight,
                            r_w=self.r_w, dt=self.hold_interval_s)
        self.completed = 0
        self.reward_terms += (terms.pending, terms.completion, terms.guidance)
        self.episode_reward += terms.total
        r = terms.total if self.normaliser is None else self.normaliser(terms, gap, weight)
        self.learner.observe(x_prev, a_prev, r, x, valid=valid_prev, valid2=valid,
                             demo=self.teacher is not None)

    def on_complete(self, req: SimRequest) -> None:
        if self.teacher is not None:
            self.teacher.on_complete(req)
        self.ledger.remove(req)
        self.t_hat.pop(req.rid, None)
        self.completed += 1


__all__ = ["DATA_DIR", "DQNRouter", "load_policy", "save_policy", "weights_path"]
