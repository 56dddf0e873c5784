"""Join-the-shortest-queue by work: send each request where the fewest tokens wait.

``view.outstanding_tokens[i]`` counts prompt tokens still to prefill plus decode tokens
still to generate at island ``i``, so "shortest" is measured in work, not in requests
(a queue of two 8k prompts is longer than one of five 100-token prompts).  Arrivals go
to the prefill (or colocated) island with the least outstanding tokens; a KV cache goes
to the decode island with the least outstanding tokens among those whose free KV memory
holds the request's context, or, if none has room now, the least loaded of all (it
queues there).  Ties go to the lowest index, so the policy is deterministic.
"""

from __future__ import annotations

import numpy as np

from planner.sim.protocol import BaseRouter, ClusterView, SimRequest


class JSQRouter(BaseRouter):
    name = "jsq"

    def reset(self, view: ClusterView, rng: np.random.Generator) -> None:
        super().reset(view, rng)
        self._front = np.array([x.index for x in view.islands if x.role in ("prefill", "both")],
                               dtype=np.int64)
        self._back = np.array([x.index for x in view.islands if x.role == "decode"],
                              dtype=np.int64)

    def route_arrival(self, req: SimRequest, view: ClusterView) -> int:
        f = self._front
        return int(f[int(np.argmin(view.outstanding_tokens[f]))])

    def route_decode(self, req: SimRequest, src: int, view: ClusterView) -> int:
        b = self._back
        load = view.outstanding_tokens[b]
        room = view.kv_free_tokens[b] >= req.input_len + req.output_len
        if room.any():
            load = np.where(room, load, np.iinfo(np.int64).max)
        return int(b[int(np.argmin(load))])


__all__ = ["JSQRouter"]
