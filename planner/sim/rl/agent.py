"""Double DQN (van Hasselt et al. 2016) for seed 004's router (A.9.3; notes §2.4), on CPU,
with action masks and an optional demonstration buffer (DQfD, Hester et al. 2018).

Network (paper): Linear(dim → 64) → ReLU → Linear(64 → 64) → ReLU → Linear(64 → m+1).
Update: the online net picks a' = argmax_{a valid in s'} Q(s', a), the target net
evaluates it,

    y = r + γ̃_k · Q_target(s', a'),     L_TD = Huber(Q(s, a) − y)

on minibatches from a replay buffer; the target net is copied from the online net every
``target_sync`` updates.  Actions invalid in s' (an instance without KV room, see
:mod:`planner.sim.routers.dqn`) are excluded from the argmax, so the bootstrap never
values an action the router could not take.

Warm start from the heuristic [A, our reading of HuRL].  The workload-guided variant's
guidance is a heuristic (the mixing impact, eq. 4); HuRL (Cheng et al. 2021) uses the
heuristic to shorten the horizon the agent must plan over, and a heuristic *policy* is
the most direct form of that knowledge.  So transitions in which the mixing greedy chose
the action are kept in a separate, permanent demonstration buffer, and -- as in DQfD --
the loss on a demonstrated transition adds a large-margin classification term

    L_E = max_{a valid in s} [Q(s, a) + ℓ(a_E, a)] − Q(s, a_E),   ℓ = margin · [a ≠ a_E]

which makes the demonstrated action's value exceed every other action's by the margin
unless the TD term says otherwise.  :meth:`DoubleDQN.pretrain` runs updates on the
demonstrations alone (DQfD's pre-training phase); afterwards each minibatch mixes a
fraction ``demo_frac`` of demonstrations with the agent's own transitions (DQfD's
fine-tuning phase, without its prioritised replay and n-step returns).  With an empty
demonstration buffer the agent is plain Double DQN.

The paper gives the architecture, the minibatch (512), the completion reward and
"random actions until episode 20"; everything else here is ours [A]: Adam with learning
rate 1e-3, Huber loss, gradient-norm clip 10, a 100k ring buffer, one update every 4
transitions once ``warmup`` are stored, a hard target copy every 250 updates, margin 0.8
and weight 1 (DQfD's values), 25 % demonstrations per minibatch.  Rewards arrive
already normalised per term (:class:`planner.sim.rl.reward.RewardNormaliser`), so
``reward_scale`` defaults to 1.

Determinism: the network is initialised from ``torch.Generator(seed)``, minibatches are
drawn with ``numpy.random.default_rng(seed)``; torch runs single-threaded during
training (the caller sets ``torch.set_num_threads(1)``), so a run repeats bit for bit.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import torch
from torch import nn


@dataclass(frozen=True)
class DQNConfig:
    hidden: int = 64
    lr: float = 1e-3
    batch: int = 512
    buffer: int = 100_000
    warmup: int = 1_000
    train_every: int = 4
    target_sync: int = 250
    grad_clip: float = 10.0
    reward_scale: float = 1.0
    margin: float = 0.8
    margin_weight: float = 1.0
    demo_frac: float = 0.25

    def to_dict(self) -> dict:
        return asdict(self)


def q_network(dim: int, n_actions: int, hidden: int = 64) -> nn.Sequential:
    """The paper's 27→64→64→5 MLP (for m = 4)."""
    return nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden),
                         nn.ReLU(), nn.Linear(hidden, n_actions))


def init_network(net: nn.Module, seed: int) -> None:
    """Deterministic init (PyTorch's default Kaiming-uniform bounds, own generator)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in net.modules():
            if isinstance(m, nn.Linear):
                bound = 1.0 / np.sqrt(m.in_features)
                m.weight.uniform_(-bound, bound, generator=gen)
                m.bias.uniform_(-bound, bound, generator=gen)


class ReplayBuffer:
    """Ring buffer of (s, a, r, s', valid(s), valid(s')) in preallocated numpy arrays."""

    def __init__(self, capacity: int, dim: int, n_actions: int) -> None:
        self.s = np.zeros((capacity, dim), np.float32)
        self.s2 = np.zeros((capacity, dim), np.float32)
        self.a = np.zeros(capacity, np.int64)
        self.r = np.zeros(capacity, np.float32)
        self.m = np.ones((capacity, n_actions), bool)
        self.m2 = np.ones((capacity, n_actions), bool)
        self.capacity, self.size, self.pos = capacity, 0, 0

    def push(self, s: np.ndarray, a: int, r: float, s2: np.ndarray, m: np.ndarray | None,
             m2: np.ndarray | None) -> None:
        i = self.pos
        self.s[i], self.a[i], self.r[i], self.s2[i] = s, a, r, s2
        self.m[i] = True if m is None else m
        self.m2[i] = True if m2 is None else m2
        self.pos = (i + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def sample_idx(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.integers(0, self.size, size=n)

    def take(self, idx: np.ndarray) -> tuple[torch.Tensor, ...]:
        return (torch.from_numpy(self.s[idx]), torch.from_numpy(self.a[idx]),
                torch.from_numpy(self.r[idx]), torch.from_numpy(self.s2[idx]),
                torch.from_numpy(self.m[idx]), torch.from_numpy(self.m2[idx]))


def margin_loss(q: torch.Tensor, a_e: torch.Tensor, valid: torch.Tensor, margin: float
                ) -> torch.Tensor:
    """DQfD's L_E (module docstring), averaged over the rows of ``q`` (B, A)."""
    bump = torch.full_like(q, margin)
    bump.scatter_(1, a_e[:, None], 0.0)
    best = (q + bump).masked_fill(~valid, -torch.inf).max(dim=1).values
    q_e = q.gather(1, a_e[:, None]).squeeze(1)
    # a demonstrated action outside the mask (the heuristic's τ_max dispatch) still counts
    return (torch.maximum(best, q_e) - q_e).mean()


class DoubleDQN:
    """Online/target networks, replay, demonstrations and the update rule (module
    docstring)."""

    def __init__(self, dim: int, n_actions: int, *, config: DQNConfig | None = None,
                 seed: int = 0) -> None:
        self.cfg = config or DQNConfig()
        self.dim, self.n_actions = dim, n_actions
        self.online = q_network(dim, n_actions, self.cfg.hidden)
        init_network(self.online, seed)
        self.target = q_network(dim, n_actions, self.cfg.hidden)
        self.target.load_state_dict(self.online.state_dict())
        self.opt = torch.optim.Adam(self.online.parameters(), lr=self.cfg.lr)
        self.replay = ReplayBuffer(self.cfg.buffer, dim, n_actions)
        self.demo = ReplayBuffer(self.cfg.buffer, dim, n_actions)
        self.rng = np.random.default_rng(seed)
        self.gamma = 0.99
        self.pushed = self.updates = 0
        self.losses: list[float] = []

    def q_values(self, x: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return self.online(torch.as_tensor(x, dtype=torch.float32)[None, :])[0].numpy()

    def observe(self, s: np.ndarray, a: int, r: float, s2: np.ndarray, *,
                valid: np.ndarray | None = None, valid2: np.ndarray | None = None,
                demo: bool = False) -> None:
        """Store a transition (reward scaled by ``reward_scale``) and, unless it is a
        demonstration (those wait for :meth:`pretrain`), learn on schedule."""
        r = r * self.cfg.reward_scale
        if demo:
            self.demo.push(s, a, r, s2, valid, valid2)
            return
        self.replay.push(s, a, r, s2, valid, valid2)
        self.pushed += 1
        if (self.replay.size + self.demo.size >= self.cfg.warmup
                and self.pushed % self.cfg.train_every == 0):
            self.update()

    def pretrain(self, steps: int) -> float:
        """``steps`` updates on the demonstrations alone; the mean loss."""
        if self.demo.size == 0:
            raise ValueError("pretrain needs demonstrations (observe(..., demo=True))")
        return float(np.mean([self.update(demo_only=True) for _ in range(steps)])) \
            if steps else 0.0

    def _batch(self, demo_only: bool) -> tuple[tuple[torch.Tensor, ...], int]:
        """A minibatch: demonstrations first (their count returned), then own data."""
        n = self.cfg.batch
        if demo_only or self.replay.size == 0:
            n_demo = min(n, self.demo.size)
        elif self.demo.size == 0:
            n_demo = 0
        else:
            n_demo = int(round(self.cfg.demo_frac * n))
        n_own = min(n, self.replay.size) - n_demo if not demo_only else 0
        parts = []
        if n_demo:
            parts.append(self.demo.take(self.demo.sample_idx(self.rng, n_demo)))
        if n_own > 0:
            parts.append(self.replay.take(self.replay.sample_idx(self.rng, n_own)))
        if len(parts) == 1:
            return parts[0], n_demo
        return tuple(torch.cat(x) for x in zip(*parts, strict=True)), n_demo

    def update(self, *, demo_only: bool = False) -> float:
        (s, a, r, s2, m, m2), n_demo = self._batch(demo_only)
        with torch.no_grad():
            a2 = self.online(s2).masked_fill(~m2, -torch.inf).argmax(dim=1, keepdim=True)
            y = r + self.gamma * self.target(s2).gather(1, a2).squeeze(1)
        q_all = self.online(s)
        q = q_all.gather(1, a[:, None]).squeeze(1)
        loss = nn.functional.smooth_l1_loss(q, y)
        if n_demo and self.cfg.margin_weight:
            loss = loss + self.cfg.margin_weight * margin_loss(
                q_all[:n_demo], a[:n_demo], m[:n_demo], self.cfg.margin)
        self.opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(self.online.parameters(), self.cfg.grad_clip)
        self.opt.step()
        self.updates += 1
        if self.updates % self.cfg.target_sync == 0:
            self.target.load_state_dict(self.online.state_dict())
        value = float(loss.detach())
        self.losses.append(value)
        return value


__all__ = ["DQNConfig", "DoubleDQN", "ReplayBuffer", "init_network", "margin_loss",
           "q_network"]
