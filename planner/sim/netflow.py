"""Flow-level network for KV-cache transfers: max-min fair sharing on a tiered fat-tree.

Seed 003 §4.1 simulates the fabric at flow level: per-link max-min fair sharing (the
fixed point RDMA congestion control converges to), background traffic as a steady
utilisation that scales each link's capacity to ``1 − c``, every KV transfer as one
GPU-to-GPU flow per tensor-parallel shard, and rates re-evaluated on every flow arrival
or completion.  Its validation (reproduced in ``tests/sim/test_sim_netflow.py``): a single
flow on an idle path gets its tier bandwidth; ``N`` flows on one bottleneck get ``1/N``
each; a completion re-allocates at once.

**Which resources.**  :class:`planner.fleet.network.NetworkSpec` gives ``B_k`` as what *one
GPU-pair flow* gets at tier ``k`` on an idle path after the tier's oversubscription
(seed 003 eq. 4 prices ``B_k (1 − c_k) / (1 + n_k(p))``).  We read this as a
rail-optimised fat-tree with *pinned* paths: each GPU owns

* an NVLink port (tier 0, capacity ``B_0``) and a NIC/access link (``B_1``), each way;
* a slice ``B_2 = B_1 / o_2`` of its rack's uplinks (``o_2`` the aggregation
  oversubscription, 2:1 in seed 003 §4.2) and a slice ``B_3 = B_1 / o_3`` of its pod's
  core uplinks (4:1), each way.

The rack uplink as a whole is ``gpus_per_rack · B_2`` and the pod uplink
``gpus_per_pod · B_3`` -- the per-flow figure times the number of flows the tier carries
when every GPU sends, which is what "per-flow bandwidth after oversubscription" means --
but with paths pinned per GPU (rail-optimised fabrics; static ECMP), the aggregate
splits into per-GPU slices.  A tier-``k`` flow crosses its source GPU's egress and its
destination GPU's ingress at every level on its path: level 0 alone for ``k = 0``,
levels ``1..k`` otherwise (a cross-pod flow also crosses the access links and the rack
uplinks).  Background ``c_l`` scales the capacity of every level-``l`` resource to
``B_l (1 − c_l)``.  Consequences, all intended:

* one flow on an idle path gets ``min_{l ∈ path(k)} B_l (1 − c_l)``, which is exactly
  ``B_k (1 − c_k)`` whenever the farther tier is the narrower one (the defaults, any
  equal background, and seed 003's sweep ``c ∈ [0, 0.4]``); :meth:`idle_rate` is that
  minimum and is also what the contention-free mode and :meth:`transfer_time_estimate`
  use, so all three agree;
* ``n`` transfers from one island on the same tier share each GPU's slice: each gets
  ``1/n`` (eq. 4's self-contention ``1 / (1 + n_k(p))``, but now measured, not assumed);
  transfers converging on one destination share its ingress in the same way;
* transfers on different tiers from the same GPU share its NIC (max-min: the narrow
  cross-pod flow keeps its ``B_3``, the rack flow takes the rest).

Not modelled: random ECMP collisions between *different* sources (seed 003 §4.1 draws
an uplink per flow): with pinned slices a collision would need a shared slice, so the
only cross-source contention is at destinations.  The paper gives no link counts from
which to size a random-hash model, and pinned slices keep a single transfer's isolated
time equal to eq. 3 -- the property its validation states.

**Shards and groups.**  One transfer is ``n_flows`` parallel flows, one per TP shard,
shard ``i`` of the source's group to shard ``i`` of the destination's.  All flows of a
transfer see the same resources (same levels, one GPU each), so the simulator solves at
transfer level: a transfer spreads its bytes evenly over the ``g`` GPUs of the group it
uses, i.e. it puts ``m = n_flows / g`` flows' worth of load on each of them (``m = 1``
when TP matches; ``m = 2`` when a TP-2 island receives a TP-4 cache, whose GPUs each
take two shards; ``m = 1/2`` when a TP-8 island receives it, resharded over twice the
NICs -- a fluid reading of resharding), and max-min at flow level equals weighted
progressive filling at transfer level.  An island of
``G`` GPUs in groups of ``g`` (its TP) has ``G // g`` groups; the engine does not say
which replica holds a KV cache, so a transfer takes the group with the fewest transfers
in flight on that side (what a balanced island does).  Without ``gpus``/``group_gpus``
an island is one group.

**Latency.**  Paid once per transfer: bytes start moving ``ℓ_k`` after ``start`` (first
byte's propagation and RDMA setup), so an isolated transfer ends at ``ℓ_k + S / B``
exactly (eq. 3).  The transfer holds its fair share during those ``ℓ_k`` (the sender has
posted its work request); the error is microseconds of bandwidth against transfers of
milliseconds to seconds.

**Cost.**  Each resource keeps its load ``Σ m · rate``.  A start whose idle rate fits in
the headroom of all its resources saturates nothing that others use, so every other
rate stays max-min: it takes its idle rate in O(1) -- also inside :meth:`batched`, where
the starts of one prefill pass take that test in order.  A completion that leaves no shared
saturated resource frees nothing anyone is waiting for: O(1).  Otherwise the connected
component (transfers linked by shared resources) is advanced and re-filled -- in plain
Python while fewer than ``_NUMPY_MIN`` transfers are in flight (numpy's per-call
overhead dominates there), else every transfer at once by the vectorised
:func:`waterfill` (walking a large component in Python costs more than filling all).
Bytes advance lazily: only transfers whose rate changes are touched.  Finish times sit in
a heap with lazy invalidation.  What a path implies (resources, weights, idle rate, the
fast-path limits) is cached per (groups, tier, flows), and a transfer's row in the dense
arrays is written only when a dense filling runs while it is in flight: on an uncongested
fabric most transfers start and end without one, and then cost no numpy call at all.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import NamedTuple, cast

import numpy as np

#: Transfers in flight from which a re-fill uses the numpy filling of all of them
#: rather than the Python filling of the touched component.  A lockstep prefill pass
#: starts a burst of transfers at once (one per attention group); at 24 the numpy path
#: ran for components of a few transfers.  Measured (benchmarks/bench_sim.py, 60,000
#: requests, lockstep prefill): 7.8 s at 24, 6.4 s at 96; the README plan's closed-loop
#: check 1.7 -> 1.2 s.  Same rates either way (both fill max-min exactly).
_NUMPY_MIN = 96
_TOL = 1e-9  # relative tolerance of "this resource is saturated"
_WMIN = 1e-9  # a resource's unfrozen weight below this is zero (float weights)
_SAT = 1e-6  # a resource loaded to within this (relative) of capacity counts as saturated
_EPS_T = 1e-12  # a flow whose finish is within this (s) of ``now`` counts as done


@dataclass(frozen=True)
class Background:
    """A seeded, slowly varying background: ``c_k(t) = clip(c̄_k + a · u_k(t), 0, 0.95)``
    with ``u_k(t) = 0.7 sin(2πt/P + φ_k) + 0.3 sin(2.7 · 2πt/P + ψ_k)`` -- two sinusoids
    of periods ``P = period_s`` and ``P / 2.7`` with seeded phases per tier, so
    ``|u| ≤ 1`` and ``amplitude`` bounds the deviation.  ``c̄_k`` is the spec's
    ``background``.
    Seed 003 §4.1 uses a static mean field; the perturbation lets the congestion
    oracle's staleness (its Exp. 4) matter.
    """

    amplitude: float = 0.0
    period_s: float = 60.0
    seed: int = 0


def waterfill(res: np.ndarray, weight: np.ndarray, capacity: np.ndarray,
              active: np.ndarray | None = None) -> np.ndarray:
    """Max-min fair rates by progressive filling (vectorised).

    Transfer ``t`` puts ``weight[t, j]`` flows on resource ``res[t, j]`` (a padded
    ``(T, J)`` layout: unused columns have weight 0); resource ``r`` holds
    ``Σ weight · rate_t ≤ capacity_r``.  Progressive filling raises all unfrozen rates
    together; a resource saturates at its share ``s_r = (capacity_r − used_r) / W_r``
    (``W_r`` the unfrozen weight on it) and freezes its transfers there.

    Rounds are batched: shares only *grow* during filling (freezing a transfer at a level
    below ``s_r`` frees more of ``r`` than its fair share), so a resource whose share is
    no larger than that of every resource it shares an unfrozen transfer with saturates
    at exactly ``s_r`` whatever else happens.  Every such locally minimal resource
    freezes its transfers in the same round -- one round per link of the longest chain
    of bottlenecks rather than per distinct level (the textbook loop).  Rows with
    ``active`` False get 0.
    """
    n_t, n_res = res.shape[0], capacity.shape[0]
    active = np.ones(n_t, dtype=bool) if active is None else active.copy()
    rate = np.zeros(n_t)
    used = np.zeros(n_res)
    share = np.empty(n_res)
    flat = res.ravel()
    on = weight > 0
    while active.any():
        w = np.bincount(flat, weights=(weight * active[:, None]).ravel(), minlength=n_res)
        share.fill(np.inf)
        np.divide(capacity - used, w, out=share, where=w > _WMIN)
        t_min = share[res].min(axis=1)  # pad columns point at an infinite resource
        t_min[~active] = np.inf
        near = np.full(n_res, np.inf)
        np.minimum.at(near, flat, np.repeat(t_min, res.shape[1]))
        local = share <= near * (1.0 + _TOL)
        hit = active & (local[res] & on).any(axis=1)
        if not hit.any():  # rows on no finite resource: unbounded (not expected)
            rate[active] = np.inf
            break
        rate[hit] = t_min[hit]
        active &= ~hit
        used += np.bincount(flat, weights=(weight * (hit * rate)[:, None]).ravel(),
                            minlength=n_res)
    return rate


#: Per resource of a transfer's path: (resource, its load at the idle rate, the most load
#: the resource takes) -- the fast-path test of a start.
_Adds = tuple[tuple[int, float, float], ...]


class _Shape(NamedTuple):
    """What a transfer's path implies, cached per (groups, tier, flows)."""

    res: tuple[int, ...]  # resources it crosses
    w: tuple[float, ...]  # flows' worth of load it puts on each
    adds: _Adds  # (resource, load at idle rate, max load)
    idle: float  # its rate on an idle path at the static capacities


class _Transfer:
    __slots__ = ("key", "src", "tier", "res", "w", "gs", "rem", "rate", "t_ref", "finish",
                 "ver", "new", "slot")

    def __init__(self, key, src, tier, res, w, gs, rem, t_ref):
        self.key, self.src, self.tier, self.res, self.w, self.gs = key, src, tier, res, w, gs
        self.rem, self.t_ref = rem, t_ref
        self.rate = 0.0
        self.finish = math.inf
        self.ver = 0
        self.new = -1.0  # scratch: rate being computed in a filling
        self.slot = -1  # row in the dense arrays (fair sharing only)


class FlowNetwork:
    """KV transfers between islands over ``spec``'s tiers (module docstring for the
    model).  ``locations[i]`` is island ``i``'s place; ``gpus[i]`` / ``group_gpus[i]``
    (optional) its GPU count and TP degree; ``fair_sharing=False`` gives every transfer its
    idle-path rate regardless of others (contention-free, O(log n) per event);
    ``background`` an optional time-varying background (default: the spec's static
    ``c_k``)."""

    def __init__(self, spec, locations: Sequence, *, fair_sharing: bool = True,
                 gpus: Sequence[int] | None = None, group_gpus: Sequence[int] | None = None,
                 background: Background | None = None) -> None:
        n = len(locations)
        if len(spec.tiers) != 4:
            raise ValueError("FlowNetwork needs exactly 4 tiers")
        self.spec = spec
        self.fair_sharing = bool(fair_sharing)
        self._bw = [float(t.bandwidth_bytes_s) for t in spec.tiers]
        self._lat = [float(t.latency_s) for t in spec.tiers]
        self._cbar = np.array([float(t.background) for t in spec.tiers])
        self._tier = np.array([[spec.tier_between(a, b) for b in locations] for a in locations],
                              dtype=np.int64).reshape(n, n)
        self._tier_list = self._tier.tolist()
        # groups: island i owns groups [gbase[i], gbase[i] + ngroups[i])
        if (gpus is None) != (group_gpus is None):
            raise ValueError("give both gpus and group_gpus, or neither")
        if gpus is None:
            self._ngroups = [1] * n
            self._width = [0] * n  # 0: as wide as the transfer (m = 1)
        else:
            group_gpus = cast("Sequence[int]", group_gpus)  # both given (checked above)
            if len(gpus) != n or len(group_gpus) != n:
                raise ValueError("gpus and group_gpus need one entry per location")
            self._width = [max(1, int(g)) for g in group_gpus]
            self._ngroups = [max(1, int(s) // w) for s, w in zip(gpus, self._width, strict=True)]
        self._gbase = np.concatenate([[0], np.cumsum(self._ngroups)]).astype(int).tolist()
        n_gs = 2 * self._gbase[-1]  # group-sides: 2g egress, 2g + 1 ingress
        self._members: list[dict[int, _Transfer]] = [{} for _ in range(4 * n_gs)]
        self._gs_load = [0] * n_gs
        self._gsides = [[[2 * g + side for g in range(self._gbase[i], self._gbase[i + 1])]
                         for side in (0, 1)] for i in range(n)]
        # an island's group-side when it has only one, else -1 (pick the least loaded)
        self._only_group = [[s[0] if len(s) == 1 else -1 for s in sides]
                            for sides in self._gsides]
        self._levels = [(0,), (1,), (1, 2), (1, 2, 3)]
        self._transfers: dict[int, _Transfer] = {}
        self._heap: list[tuple[float, int, _Transfer, int]] = []
        self._seq = 0
        self._inflight = [[0] * 4 for _ in range(n)]
        # _Shape per (egress group-side, ingress group-side, tier, n_flows): thousands of
        # keys on a 64-island cluster (5,640 in the benchmark's first 40,000 transfers), so
        # a miss must be cheap: the group-independent part is a template per (widths,
        # tier, n_flows), a handful of keys
        self._shape: dict[tuple[int, int, int, int], _Shape] = {}
        self._templates: dict[tuple[int, int, int, int], tuple] = {}
        # resources a tier-k transfer crosses on group-side gs: 4 gs + level
        self._side_res = [[tuple(4 * gs + x for x in lv) for lv in self._levels]
                          for gs in range(n_gs)]
        self._bg = background if background is not None and background.amplitude > 0 else None
        if self._bg is not None:
            rng = np.random.default_rng(self._bg.seed)
            self._phase = rng.uniform(0.0, 2.0 * math.pi, size=(2, 4))
        self._static_caps = self._caps_for(self._cbar)
        # dense mirror of the active transfers for the global numpy filling: row = slot,
        # padded to 6 resources (3 levels x 2 sides); pad column -> resource n_res (inf)
        self._n_res = 4 * n_gs
        self._lvl = np.arange(self._n_res) & 3
        self._er = np.full((0, 6), self._n_res, dtype=np.int64)
        self._ew = np.zeros((0, 6))
        self._load = [0.0] * self._n_res  # Σ m · rate per resource (kept exact-ish)
        self._cap_vec = np.append(np.asarray(self._static_caps)[self._lvl], np.inf)
        self._occ = np.zeros(0, dtype=bool)
        self._rate_s = np.zeros(0)  # the rates of the slots' transfers (mirror)
        self._slot_t: list[_Transfer | None] = []
        self._free: list[int] = []
        # slots not yet mirrored: written only when a dense filling needs them, so the many
        # transfers that start and end between fillings cost no numpy writes
        self._unwritten: dict[int, _Transfer] = {}
        #: (transfer, fast-path loads, idle rate) of the starts inside :meth:`batched`
        #: (None outside one)
        self._deferred: list[tuple[_Transfer, _Adds, float]] | None = None

    # --- background and capacities ------------------------------------------------------

    def external_utilisation(self, now: float) -> np.ndarray:
        """(4,) background utilisation ``c_k`` per tier at ``now`` (the telemetry oracle's
        reading, seed 003 §1.6)."""
        if self._bg is None:
            return self._cbar.copy()
        w = 2.0 * math.pi * float(now) / self._bg.period_s
        u = 0.7 * np.sin(w + self._phase[0]) + 0.3 * np.sin(2.7 * w + self._phase[1])
        return np.clip(self._cbar + self._bg.amplitude * u, 0.0, 0.95)

    def _caps_for(self, c) -> list[float]:
        return [self._bw[k] * (1.0 - float(c[k])) for k in range(4)]

    def _caps(self, now: float) -> list[float]:
        return self._static_caps if self._bg is None else self._caps_for(
            self.external_utilisation(now))

    def _idle(self, tier: int, caps: list[float]) -> float:
        return min(caps[lv] for lv in self._levels[tier])

    def idle_rate(self, src: int, dst: int, now: float = 0.0) -> float:
        """Per-flow rate of a lone transfer ``src → dst`` (``B_k (1 − c_k)`` normally)."""
        return self._idle(self._tier_list[src][dst], self._caps(now))

    # --- queries --------------------------------------------------------------------------

    def tier_of(self, src: int, dst: int) -> int:
        return self._tier_list[src][dst]

    def inflight(self, src: int) -> np.ndarray:
        """(4,) transfers in flight from ``src`` per tier (a copy)."""
        return np.array(self._inflight[src], dtype=np.int64)

    def transfer_time_estimate(self, src: int, dst: int, nbytes_per_flow: float) -> float:
        """Eq. 3 without contention at the mean background: ``ℓ_k + S / (B_k (1 − c_k))``."""
        k = self._tier_list[src][dst]
        return self._lat[k] + float(nbytes_per_flow) / self._idle(k, self._static_caps)

    def __len__(self) -> int:
        return len(self._transfers)

    def rate_of(self, key: int) -> float:
        """Current per-flow rate (bytes/s) of transfer ``key`` (for tests and plots)."""
        return self._transfers[key].rate

    # --- events ---------------------------------------------------------------------------

    def start(self, now: float, key: int, src: int, dst: int, nbytes_per_flow: float,
              n_flows: int) -> float:
        """Start transfer ``key``: ``n_flows`` flows of ``nbytes_per_flow`` bytes each from
        island ``src`` to island ``dst``.  Returns the earliest finish the start can have
        brought forward: the new transfer's own when no other rate changed (the O(1)
        case), else :meth:`next_finish` -- so a caller that keeps a wake-up at or before
        every finish need not ask again."""
        if key in self._transfers:
            raise ValueError(f"transfer {key} already in flight")
        if n_flows < 1 or not nbytes_per_flow >= 0:
            raise ValueError(f"transfer {key}: need n_flows >= 1 and bytes >= 0")
        k = self._tier_list[src][dst]
        now = float(now)
        t_ref = now + self._lat[k]
        if not self.fair_sharing or nbytes_per_flow == 0:
            t = _Transfer(key, src, k, (), (), (), float(nbytes_per_flow), t_ref)
            t.rate = self._idle(k, self._caps(now))
            t.finish = t_ref + t.rem / t.rate
            self._transfers[key] = t
            self._inflight[src][k] += 1
            self._push(t)
            return t.finish
        gs_load = self._gs_load
        ge, gi = self._only_group[src][0], self._only_group[dst][1]
        if ge < 0:
            ge = self._pick_group(src, 0)
        if gi < 0:
            gi = self._pick_group(dst, 1)
        shape = self._shape.get((ge, gi, k, n_flows))
        if shape is None:
            shape = self._make_shape(src, dst, ge, gi, k, n_flows)
        res, w, adds, idle = shape
        t = _Transfer(key, src, k, res, w, (ge, gi), float(nbytes_per_flow), t_ref)
        # bookkeeping (pop_finished undoes it)
        self._transfers[key] = t
        self._inflight[src][k] += 1
        members = self._members
        for r in res:
            members[r][key] = t
        gs_load[ge] += 1
        gs_load[gi] += 1
        if not self._free:
            self._grow()
        t.slot = slot = self._free.pop()
        self._unwritten[slot] = t
        self._slot_t[slot] = t
        if self._deferred is not None:  # inside batched(): filled once, at its end
            self._deferred.append((t, adds, idle))
            return math.inf
        if self._bg is None:
            caps = self._static_caps
        else:  # time-varying capacities: the cached idle rate and limits do not apply
            caps = self._caps(now)
            idle = min(caps[r & 3] / m for r, m in zip(res, w, strict=True))
            adds = tuple((r, m * idle, caps[r & 3] * (1.0 + _TOL))
                         for r, m in zip(res, w, strict=True))
        if self._at_idle(t, adds, idle):
            return t.finish
        self._rebalance(res, now, caps)
        return self.next_finish()

    def _at_idle(self, t: _Transfer, adds: _Adds, idle: float) -> bool:
        """The fast path of a start: if ``t`` at its idle rate saturates nothing that
        others use (its own bottleneck is its alone), every other rate stays max-min and
        ``t`` takes its idle rate in O(1) (True); else nothing changes (False)."""
        load = self._load
        for r, load_r, limit in adds:
            if load[r] + load_r > limit:
                return False
        t.rate = idle
        for r, load_r, _ in adds:
            load[r] += load_r
        t.finish = f = t.t_ref + t.rem / idle
        t.ver = 1
        self._seq = seq = self._seq + 1
        heapq.heappush(self._heap, (f, seq, t, 1))
        return True

    @contextmanager
    def batched(self, now: float) -> Iterator[None]:
        """Start several transfers at one instant -- the prompts a prefill pass finishes
        together, 24 at once in a lockstep pass of 24 attention groups -- with one
        max-min filling at the end instead of one per start that saturates a resource.
        The rates are the ones the starts one by one would give (max-min fairness has
        one answer); inside the block :meth:`start` returns ``inf``, so the caller asks
        :meth:`next_finish` after it."""
        if self._deferred is not None:
            raise RuntimeError("FlowNetwork.batched() does not nest")
        started: list[tuple[_Transfer, _Adds, float]] = []
        self._deferred = started
        try:
            yield
        finally:
            self._deferred = None
        # Most passes finish one prompt, or prompts whose paths are idle: each takes the
        # start's fast path in order, as one-by-one starts would.  From the first that
        # cannot, the rest are filled together (the filling walks their component,
        # which includes any fast-pathed transfer they share a resource with).
        seeds: list[int] = []
        for j, (t, adds, idle) in enumerate(started):
            if self._bg is not None or not self._at_idle(t, adds, idle):
                for t2, _, _ in started[j:]:
                    seeds.extend(t2.res)
                break
        if seeds:
            self._rebalance(seeds, float(now), self._caps(float(now)))

    def next_finish(self) -> float:
        """Earliest completion under the current rates (``inf`` if nothing is in flight)."""
        heap = self._heap
        while heap:
            f, _, t, ver = heap[0]
            if t.ver == ver:  # a removed transfer's version is -1
                return f
            heapq.heappop(heap)
        return math.inf

    def pop_finished(self, now: float) -> list[int]:
        """Advance to ``now``; remove and return the keys of transfers done by then."""
        now = float(now)
        heap, transfers = self._heap, self._transfers
        done: list[int] = []
        seeds: list[int] = []
        limit = now + _EPS_T * max(1.0, abs(now))
        caps = self._static_caps if self._bg is None else self._caps(now)
        load, members = self._load, self._members
        gs_load, inflight = self._gs_load, self._inflight
        while heap and heap[0][0] <= limit:
            _, _, t, ver = heapq.heappop(heap)
            if t.ver != ver:
                continue
            key = t.key
            done.append(key)
            del transfers[key]
            inflight[t.src][t.tier] -= 1
            t.ver = -1
            if not t.res:
                continue
            # others can speed up only if it left a saturated resource (one that is
            # somebody's bottleneck); conservative test, exact either way
            rate = t.rate
            freed = False
            for r, m in zip(t.res, t.w, strict=True):
                mr = members[r]
                del mr[key]
                if mr:
                    lr = load[r]
                    if not freed and lr >= caps[r & 3] * (1.0 - _SAT):
                        freed = True
                    load[r] = lr - m * rate
                else:
                    load[r] = 0.0  # empty: no drift
            if freed:
                seeds.extend(t.res)
            ge, gi = t.gs
            gs_load[ge] -= 1
            gs_load[gi] -= 1
            slot = t.slot
            if self._unwritten.pop(slot, None) is None:
                self._occ[slot] = False
            self._slot_t[slot] = None
            self._free.append(slot)
        if seeds and transfers:
            self._rebalance(seeds, now, caps)
        return done

    def refresh(self, now: float) -> None:
        """Re-fill every component at ``now``'s capacities (only matters with a
        time-varying :class:`Background`; call it at the oracle period)."""
        if self.fair_sharing and self._transfers:
            self._fill_dense(float(now), self._caps(now))

    # --- internals ------------------------------------------------------------------------

    def _pick_group(self, island: int, side: int) -> int:
        """The island's group-side (on ``side``) with the fewest transfers in flight,
        the lowest index on ties."""
        sides, load = self._gsides[island][side], self._gs_load
        best = sides[0]
        for g in sides:
            if load[g] < load[best]:
                best = g
        return best

    def _make_shape(self, src: int, dst: int, ge: int, gi: int, k: int,
                    n_flows: int) -> _Shape:
        """The cached :class:`_Shape` of a transfer; what does not depend on the groups
        (weights, idle rate, per-column loads and limits) is cached per (widths, tier,
        flows), so a miss costs two tuple concatenations and a zip."""
        tkey = (self._width[src], self._width[dst], k, n_flows)
        tpl = self._templates.get(tkey)
        if tpl is None:
            me = n_flows / self._width[src] if self._width[src] else 1.0
            mi = n_flows / self._width[dst] if self._width[dst] else 1.0
            lv = self._levels[k]
            levels = lv + lv
            w = (me,) * len(lv) + (mi,) * len(lv)
            caps = self._static_caps
            idle = min(caps[x] / m for x, m in zip(levels, w, strict=True))  # static caps
            # per column: the load at the idle rate and the most load it takes (the
            # fast-path test)
            tpl = (w, tuple(m * idle for m in w),
                   tuple(caps[x] * (1.0 + _TOL) for x in levels), idle)
            self._templates[tkey] = tpl
        w, loads, limits, idle = tpl
        res = self._side_res[ge][k] + self._side_res[gi][k]
        shape = _Shape(res, w, tuple(zip(res, loads, limits, strict=True)), idle)
        self._shape[(ge, gi, k, n_flows)] = shape
        return shape

    def _row(self, t: _Transfer) -> tuple[tuple[int, ...], tuple[float, ...]]:
        """``t``'s resources and weights padded to the dense layout's 6 columns (pad
        columns point at the infinite resource ``n_res`` with weight 0)."""
        pad = 6 - len(t.res)
        return t.res + (self._n_res,) * pad, t.w + (0.0,) * pad

    def _grow(self) -> None:
        old = self._er.shape[0]
        new = max(32, 2 * old)
        self._er = np.vstack([self._er, np.full((new - old, 6), self._n_res, dtype=np.int64)])
        self._ew = np.vstack([self._ew, np.zeros((new - old, 6))])
        self._occ = np.concatenate([self._occ, np.zeros(new - old, dtype=bool)])
        self._rate_s = np.concatenate([self._rate_s, np.zeros(new - old)])
        self._slot_t.extend([None] * (new - old))
        self._free.extend(range(new - 1, old - 1, -1))  # lowest slot first

    def _push(self, t: _Transfer) -> None:
        t.ver += 1
        self._seq += 1
        heapq.heappush(self._heap, (t.finish, self._seq, t, t.ver))

    def _rebalance(self, seeds: Sequence[int], now: float, caps: list[float]) -> None:
        """Re-fill after a start or completion touching resources ``seeds``: the
        component alone (plain Python) while few transfers are in flight, else all of them
        at once with numpy -- finding a large component in Python costs more than
        filling every transfer vectorised."""
        if len(self._transfers) >= _NUMPY_MIN:
            self._fill_dense(now, caps)
            return
        comp = self._component(seeds)
        if comp:
            self._fill_python(comp, caps)
            for t in comp:
                self._set_rate(t, t.new, now)

    def _set_rate(self, t: _Transfer, rate: float, now: float) -> None:
        """Give ``t`` a new rate from ``now`` on.  Unchanged rates (to 1e-9) are left
        alone: the finish time ``t_ref + rem / rate`` is invariant while the rate is, so
        bytes are advanced lazily, only when the rate changes."""
        if abs(rate - t.rate) <= 1e-9 * rate:
            return
        if now > t.t_ref:
            t.rem = max(0.0, t.rem - t.rate * (now - t.t_ref))
            t.t_ref = now
        load, delta = self._load, rate - t.rate
        # incremental loads; a resource's load resets to 0 whenever it empties, so float
        # drift cannot accumulate past one busy period (and it is ~1e-16 per update)
        for r, m in zip(t.res, t.w, strict=True):
            load[r] += m * delta
        t.rate = rate
        if t.slot >= 0 and t.slot not in self._unwritten:
            self._rate_s[t.slot] = rate
        t.finish = t.t_ref + t.rem / rate
        self._push(t)

    def _component(self, seeds: Sequence[int]) -> list[_Transfer]:
        """Transfers linked to resources ``seeds`` through shared resources."""
        members = self._members
        seen: set[int] = set()
        comp: dict[int, _Transfer] = {}
        stack = list(seeds)
        while stack:
            r = stack.pop()
            if r in seen:
                continue
            seen.add(r)
            for key, t in members[r].items():
                if key not in comp:
                    comp[key] = t
                    stack.extend(t.res)
        return list(comp.values())

    def _fill_python(self, comp: list[_Transfer], caps: list[float]) -> None:
        """:func:`waterfill` in plain Python over one component (sets ``t.new``)."""
        rem: dict[int, float] = {}
        wsum: dict[int, float] = {}
        for t in comp:
            t.new = -1.0
            for r, m in zip(t.res, t.w, strict=True):
                if r in wsum:
                    wsum[r] += m
                else:
                    wsum[r] = m
                    rem[r] = caps[r & 3]
        members, left = self._members, len(comp)
        while left:
            lam = min(rem[r] / w for r, w in wsum.items() if w > _WMIN)
            thr = lam * (1.0 + _TOL)
            for r in [r for r, w in wsum.items() if w > _WMIN and rem[r] <= thr * w]:
                for t in members[r].values():
                    if t.new < 0:
                        t.new = lam
                        left -= 1
                        for r2, m in zip(t.res, t.w, strict=True):
                            rem[r2] -= m * lam
                            wsum[r2] -= m

    def _fill_dense(self, now: float, caps: list[float]) -> None:
        """:func:`waterfill` over every transfer in flight (one matrix, no graph walk)."""
        cap = self._cap_vec if caps is self._static_caps else np.append(
            np.asarray(caps)[self._lvl], np.inf)
        er, ew, occ, rate_s = self._er, self._ew, self._occ, self._rate_s
        for slot, t in self._unwritten.items():
            # whole padded rows: a reused slot may hold a longer path's columns
            er[slot], ew[slot] = self._row(t)
            occ[slot] = True
            rate_s[slot] = t.rate
        self._unwritten.clear()
        rows = np.flatnonzero(occ)
        rate = waterfill(er[rows], ew[rows], cap)
        old = rate_s[rows]
        moved = np.flatnonzero(np.abs(rate - old) > 1e-9 * rate)  # the rest keep finish
        slot_t = self._slot_t
        for i, x in zip(rows[moved].tolist(), rate[moved].tolist(), strict=True):
            self._set_rate(slot_t[i], x, now)


__all__ = ["Background", "FlowNetwork", "waterfill"]
