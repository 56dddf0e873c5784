"""Round-robin: the baseline that ignores load, plan and network.

Arrivals cycle over the prefill (and colocated) islands in index order; KV caches cycle
over the decode islands, independently.  Deterministic, O(1) per decision.
"""

from __future__ import annotations

import numpy as np

from planner.sim.protocol import BaseRouter, ClusterView, SimRequest


class RoundRobinRouter(BaseRouter):
    name = "round-robin"

    def reset(self, view: ClusterView, rng: np.random.Generator) -> None:
        super().reset(view, rng)
        self._front = [x.index for x in view.islands if x.role in ("prefill", "both")]
        self._back = [x.index for x in view.islands if x.role == "decode"]
        self._i = self._j = 0

    def route_arrival(self, req: SimRequest, view: ClusterView) -> int:
        i = self._front[self._i]
        self._i = (self._i + 1) % len(self._front)
        return i

    def route_decode(self, req: SimRequest, src: int, view: ClusterView) -> int:
        d = self._back[self._j]
        self._j = (self._j + 1) % len(self._back)
        return d


__all__ = ["RoundRobinRouter"]
