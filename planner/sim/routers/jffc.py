"""Join the Fastest Free Chain (seed 001 §3.1, Alg. 3) over colocated islands.

Seed 001 dispatches jobs to chains of servers, chain ``k`` holding at most ``c_k``
jobs at once and serving each at rate ``μ_k``: an arriving job joins the fastest chain
with a free slot; when every chain is full it waits in one central FIFO queue; when a
job leaves chain ``k`` the head of the queue takes the freed slot -- more exactly (Alg.
3's "fastest free" applied again) the fastest chain that has a free slot then, which is
``k`` unless a faster slot freed at the same instant.

In the simulator a chain is a ``both`` island with ``max_batch = c_k``
(:mod:`planner.sim.pipeline_cluster`).  An island's slots in use are its running
sequences plus the requests routed to it that it has not admitted yet (they are
committed to it: the engine admits them at its next iteration boundary), so an island
is free while ``running + queued < max_batch``.  "Fastest" is the lowest per-token step
time at a full batch (``view.step_time(i, max_batch, 0)``; batch-independent for a
chain, whose ``μ_k`` ranks the same way on equal lengths), computed once at
:meth:`reset`; ties go to the lower index, so the policy is deterministic.  When no
island is free the router returns :data:`HOLD`: the engine keeps the request in its
central FIFO queue (later arrivals queue behind it) and offers the head again whenever
an island frees capacity and every ``hold_interval_s``.

On islands that are not chains (any ``both`` island) JFFC is still well defined: it
keeps each island at most ``max_batch`` deep and queues the rest centrally.
"""

from __future__ import annotations

import numpy as np

from planner.core.errors import PlannerError
from planner.inner.chains.jffc import JFFCPolicy, fastest_first
from planner.sim.protocol import HOLD, BaseRouter, ClusterView, SimRequest


class JFFCRouter(BaseRouter):
    name = "jffc"

    def reset(self, view: ClusterView, rng: np.random.Generator) -> None:
        super().reset(view, rng)
        both = [x for x in view.islands if x.role == "both"]
        if not both or len(both) != len(view.islands):
            raise PlannerError("router 'jffc' needs a cluster of colocated ('both') islands "
                               "(the chains of a pipeline plan); use range, jsq or netkv "
                               "for a disaggregated plan")
        step = np.array([view.step_time(x.index, x.max_batch, 0.0) for x in both])
        self._idx = np.array([x.index for x in both], dtype=np.int64)
        # Seed 001's rule itself (planner.inner.chains.jffc): minus the step time ranks
        # the islands as their service rates do.
        self.policy = JFFCPolicy(-step, [x.max_batch for x in both])
        self.order = self._idx[fastest_first(-step)]  # fastest first (for inspection)

    def route_arrival(self, req: SimRequest, view: ClusterView) -> int:
        idx = self._idx
        k = self.policy.select(view.running[idx] + view.queued[idx])
        return HOLD if k is None else int(idx[k])


__all__ = ["JFFCRouter"]
