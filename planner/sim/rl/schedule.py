"""Reward-guidance schedules of seed 004's three RL variants (§5.3, A.9; notes §1.6).

The paper's text and its experiment settings conflict on HuRL's mixing coefficient
(Cheng et al. 2021).  In HuRL the reshaped MDP has discount γ̃ = λγ and a guidance
weight (1 − λ)γ, with λ rising to 1 so the guidance fades; the paper's own training
discount γ̂ = (1 − e^{−β_d k})γ is that with λ_k = 1 − e^{−β_d k}.  So at episode k:

    γ̃_k = (1 − e^{−β_d k}) γ           discount used in the TD targets
    w_k  = γ − γ̃_k = γ e^{−β_d k}       weight of the guidance term + w_k · h

with β_d = 0.5 and γ = 0.99 (γ is never given).  The two other variants:

* ``baseline``: no guidance (γ − γ̃ = 0): discount γ, weight 0;
* ``aware``: the mixing penalty added with constant weight (γ − γ̃ = 1 in the paper's
  words): discount γ, weight 1 (a discount γ − 1 < 0 is meaningless, so the weight,
  not the discount, carries the "1").

Clock in decisions [A].  The paper advances k once per episode of 2,000 requests.  We
advance it continuously with the agent's own decisions, k = n / :data:`DECISIONS_PER_EPISODE`
(2,500: what a 2,000-request episode of the scenario takes, holds included), so the
schedule does not depend on how long our training episodes are, and the discount and
weight change smoothly rather than jumping at episode boundaries.  The demonstration
phase of the guided variant (:mod:`planner.sim.rl.train`) does not advance the clock:
k counts decisions the agent itself takes.
"""

from __future__ import annotations

import math

from planner.core.errors import PlannerError

VARIANTS = ("baseline", "aware", "guided")
DECISIONS_PER_EPISODE = 2500
GAMMA = 0.99
BETA_D = 0.5


def guidance(episode: float, variant: str, *, gamma: float = GAMMA, beta: float = BETA_D
             ) -> tuple[float, float]:
    """(TD discount, guidance weight) at ``episode`` (0-based, may be fractional) for
    ``variant``."""
    if variant not in VARIANTS:
        raise PlannerError(f"RL variant must be one of {', '.join(VARIANTS)}, got {variant!r}")
    if episode < 0:
        raise PlannerError(f"episode must be >= 0, got {episode}")
    if variant == "baseline":
        return gamma, 0.0
    if variant == "aware":
        return gamma, 1.0
    decay = math.exp(-beta * episode)
    return (1.0 - decay) * gamma, gamma * decay


class GuidanceClock:
    """The schedule driven by decisions (module docstring): :meth:`tick` once per
    decision of the agent returns that decision's (discount, weight)."""

    def __init__(self, variant: str, *, per_episode: int = DECISIONS_PER_EPISODE,
                 beta: float = BETA_D, gamma: float = GAMMA) -> None:
        guidance(0, variant)  # validates the variant
        if per_episode <= 0:
            raise PlannerError(f"decisions per episode must be > 0, got {per_episode}")
        self.variant, self.per_episode, self.beta, self.gamma = variant, per_episode, beta, \
            gamma
        self.decisions = 0

    @property
    def k(self) -> float:
        return self.decisions / self.per_episode

    def current(self) -> tuple[float, float]:
        return guidance(self.k, self.variant, gamma=self.gamma, beta=self.beta)

    def tick(self) -> tuple[float, float]:
        out = self.current()
        self.decisions += 1
        return out


__all__ = ["BETA_D", "DECISIONS_PER_EPISODE", "GAMMA", "VARIANTS", "GuidanceClock",
           "guidance"]
