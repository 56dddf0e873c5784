"""The plan-following router: send each range's requests where the plan put them.

The inner solution (seed 002 §4.8) gives every island a share ``x_ij`` of its time for
each input-length range ``j``.  Island ``i`` spending ``x_ij`` of its time on range ``j``
serves ``x_ij b_ij`` requests/s of it, with ``b_ij`` its throughput at the range's
midpoint (§4.6.3), so the plan's split of range ``j`` across islands is proportional
to ``x_ij b_ij``.  We rebuild ``b_ij`` from the simulator's own tables:

* the plan's own flows, when its islands record them (``range_rps``, planner.context.operating:
  the demand of each range split over its islands in proportion to the capacity each
  gives it -- colocated islands included);
* else, prefill (and colocated) islands: ``b_ij = dp_i / prefill_s_i[mid_j]``;
* decode islands: ``b_ij = dp_i B_i / t_step,i(B_i, mid_j)`` tokens/s at the full group
  batch ``B_i`` (the decode length is common to all islands of a range, so tokens/s is
  proportional to requests/s).

Within a range the router follows these weights *deterministically*: a stride schedule
(island ``i``'s ``k``-th turn at virtual time ``(k + 1/2) / w_i``, merged over islands,
ties to the lower index) precomputed for ``cycle`` decisions and replayed cyclically, so
every window of ``cycle`` requests of a range is split within one request per island of
the weights, and a decision costs a bisection and a list lookup.  A request whose length
lies outside every range goes to the nearest range.  A range no island has a share of
(the plan did not expect it) is split by capacity alone.  Colocated (``both``) islands
are chosen once, at arrival, and decode where they prefilled.
"""

from __future__ import annotations

import bisect
from typing import cast

import numpy as np

from planner.sim.cluster import step_time
from planner.sim.protocol import BaseRouter, ClusterView, SimRequest


def stride_schedule(weights: np.ndarray, length: int) -> list[int]:
    """First ``length`` picks of stride scheduling over ``weights`` (indices with w > 0)."""
    w = np.asarray(weights, dtype=np.float64)
    idx = np.flatnonzero(w > 0)
    if idx.size == 0:
        raise ValueError("stride_schedule needs a positive weight")
    share = w[idx] / w[idx].sum()
    counts = np.ceil(length * share).astype(np.int64) + 1
    ids = np.repeat(idx, counts)
    k = np.arange(ids.size) - np.repeat(np.cumsum(counts) - counts, counts)
    times = (k + 0.5) / np.repeat(share, counts)
    order = np.argsort(times, kind="stable")
    return ids[order][:length].tolist()


class RangeRouter(BaseRouter):
    """Plan-following router (module docstring)."""

    name = "range"

    def __init__(self, cycle: int = 1024, range_edges=None, weights=None) -> None:
        """``weights``: (prefill, decode) weights to follow instead of the plan's, as
        (islands of the role x ranges) arrays in the cluster's island order -- a router
        configuration file (planner.sim.routers.router_config); ``range_edges`` then
        gives its ranges."""
        if int(cycle) < 1:
            raise ValueError("cycle must be >= 1")
        self.cycle = int(cycle)
        self._edges_given = range_edges
        self._weights_given = weights

    def reset(self, view: ClusterView, rng: np.random.Generator) -> None:
        super().reset(view, rng)
        isl = view.islands
        edges = self._edges_given
        if edges is None:
            edges = getattr(view, "range_edges", None)
        edges = np.asarray(edges if edges is not None else [], dtype=np.float64)
        n_ranges = max(len(edges) - 1, 0)
        if n_ranges == 0 or not any(len(x.range_shares) == n_ranges for x in isl):
            # no plan ranges: one range over all lengths, weights by capacity
            edges = np.array([0.0, float(max(len(x.prefill_s) for x in isl))])
            n_ranges = 1
        mids = 0.5 * (edges[:-1] + edges[1:])
        front = [x for x in isl if x.role in ("prefill", "both")]
        back = [x for x in isl if x.role == "decode"]
        if self._weights_given is not None:
            pre, dec = (None if w is None else np.asarray(w, float)
                        for w in self._weights_given)
            if pre is None or pre.shape != (len(front), n_ranges) or (back and (
                    dec is None or dec.shape != (len(back), n_ranges))):
                raise ValueError("router weights do not match the cluster's islands and "
                                 "ranges")
            dec = dec if back else None
        else:
            pre = self._weights(front, mids, n_ranges, self._prefill_rate)
            dec = self._weights(back, mids, n_ranges, self._decode_rate) if back else None
        self._edges = edges[1:-1].tolist()  # interior edges: bisect gives the range
        fi = [x.index for x in front]
        bi = [x.index for x in back]
        self._front = [[fi[p] for p in stride_schedule(pre[:, j], self.cycle)]
                       for j in range(n_ranges)]
        self._back = ([[bi[p] for p in stride_schedule(dec[:, j], self.cycle)]
                       for j in range(n_ranges)] if dec is not None else None)
        self._pf = [0] * n_ranges
        self._pd = [0] * n_ranges
        self.weights = (pre, dec)  # (islands of the role x ranges), for inspection

    @staticmethod
    def _prefill_rate(x, mid: float) -> float:
        t = x.prefill_s[min(max(int(mid), 1), len(x.prefill_s) - 1)]
        return x.dp / float(t)

    @staticmethod
    def _decode_rate(x, mid: float) -> float:
        b = len(x.step_coeffs) - 1
        return x.dp * b / step_time(x.step_coeffs[b], float(mid))

    @staticmethod
    def _weights(islands, mids, n_ranges, rate) -> np.ndarray:
        """(len(islands), J) weights: the plan's flows when every island records them
        (planner.context.operating), else share x rate; capacity alone where a range has none."""
        cap = np.array([[rate(x, m) for m in mids] for x in islands]).reshape(
            len(islands), n_ranges)
        if islands and all(len(x.range_flows) == n_ranges for x in islands):
            w = np.array([x.range_flows for x in islands], dtype=float).reshape(
                len(islands), n_ranges)
            empty = w.sum(axis=0) <= 0
            w[:, empty] = cap[:, empty]
            return w
        shares = np.array([x.range_shares if len(x.range_shares) == n_ranges
                           else (0.0,) * n_ranges for x in islands]).reshape(
            len(islands), n_ranges)
        w = shares * cap
        empty = w.sum(axis=0) <= 0
        w[:, empty] = cap[:, empty]
        return w

    def route_arrival(self, req: SimRequest, view: ClusterView) -> int:
        j = bisect.bisect_right(self._edges, req.input_len)
        k = self._pf[j]
        self._pf[j] = k + 1 if k + 1 < self.cycle else 0
        return self._front[j][k]

    def route_decode(self, req: SimRequest, src: int, view: ClusterView) -> int:
        j = bisect.bisect_right(self._edges, req.input_len)
        k = self._pd[j]
        self._pd[j] = k + 1 if k + 1 < self.cycle else 0
        # a decode is routed only when the cluster has decode islands (_back is set)
        return cast("list[list[int]]", self._back)[j][k]


__all__ = ["RangeRouter", "stride_schedule"]
