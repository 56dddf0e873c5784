"""Build the simulator's islands from a plan (plan.json) or by hand (issue 8).

Every number the engine needs of an island is precomputed here from the perf model, so
that the event loop never calls it:

* ``prefill_s[s]``: seconds to prefill one prompt of ``s`` tokens on one attention group
  (:meth:`perfmodel.timing.IslandTiming.prefill_s`, seed 002 §4.2.3), for
  ``s = 0 .. max_input`` in one vectorised call (length 0 evaluated as 1, as the island
  benchmark does);
* ``step_coeffs[b]``: the six coefficients of :class:`perfmodel.decode.StepModel` at group
  batch ``b`` (``b = 0 .. batch``), so the step time at any mean context ``L`` is
  ``lin_fixed + lin_slope L + count max(fixed + slope L, floor)`` (:func:`step_time`);
* ``kv_capacity_tokens``: KV tokens the island's free HBM holds, ``dp`` attention groups
  each holding ``(usable - weights) / kv_bytes_per_token_per_gpu`` tokens;
* ``kv_bytes_per_token``: bytes of one token's KV cache on *one* GPU of a tensor-parallel
  group -- what one GPU-pair flow of a KV transfer carries (seed 003 §II-B).

All of it comes from the perf model's timing interface (:mod:`perfmodel.timing`), which
caches the tables by what they depend on (GPU physical figures, configuration, model,
batch, max_input, calibration), so a 64-island plan of a few GPU types costs a handful
of perf-model calls.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from perfmodel.calibration import DEFAULT_CALIBRATION, Calibration
from perfmodel.hardware import GPU
from perfmodel.models import ModelSpec
from perfmodel.timing import IslandTiming
from planner.core.errors import PlannerError
from planner.fleet.network import DEFAULT_NETWORK, Location, NetworkSpec
from planner.run.deployment import Deployment, as_gpu, as_model, plan_calibration
from planner.run.deployment import parse_config as parse_parallel
from planner.sim.protocol import ROLES, SimCluster, SimIsland

#: Input lengths covered by a hand-built island's prefill table unless told otherwise.
DEFAULT_MAX_INPUT = 8192



def step_time(coeffs_row, context: float) -> float:
    """Decode time per generated token (s) from one row of ``SimIsland.step_coeffs`` at
    mean ``context``: ``lf + dc max(df + ds L, dfl) + mc max(mf + ms L, mfl)`` (the
    :class:`perfmodel.decode.StepModel` form: dense and MoE layers)."""
    lf, dc, df, ds, dfl, mc, mf, ms, mfl = coeffs_row
    t = lf
    if dc:
        x = df + ds * context
        t += dc * (x if x > dfl else dfl)
    if mc:
        x = mf + ms * context
        t += mc * (x if x > mfl else mfl)
    return t


def _sum_max(u: float, slope: float, floor: float, k: int, tri: float) -> float:
    """sum_{i=1}^{k} max(u + slope i, floor): ``j`` steps on the floor, then arithmetic
    (``tri`` = k (k + 1) / 2), as ``perfmodel.decode._sum_max_linear``."""
    if slope > 0.0:
        j = math.ceil((floor - u) / slope) - 1
        j = 0 if j < 0 else (k if j > k else j)
    else:
        j = k if u < floor else 0
    return (k - j) * u + slope * (tri - 0.5 * j * (j + 1.0)) + j * floor


def steps_time(coeffs_row, context: float, k: int) -> float:
    """Seconds of ``k`` consecutive decode steps of a fixed batch whose mean context is
    ``context`` before the first: ``sum_{i=1}^{k} t(context + i)`` (every sequence gains
    one token per step, so the mean context grows by one; the first step attends
    ``context + 1`` tokens as in :meth:`StepModel.request_time`), in closed form."""
    lf, dc, df, ds, dfl, mc, mf, ms, mfl = coeffs_row
    tri = 0.5 * k * (k + 1.0)
    total = k * lf
    if dc:
        total += dc * _sum_max(df + ds * context, ds, dfl, k, tri)
    if mc:
        total += mc * _sum_max(mf + ms * context, ms, mfl, k, tri)
    return total


def steps_until(coeffs_row, context: float, k_max: int, elapsed: float) -> int:
    """Smallest ``k`` in ``[1, k_max]`` with ``steps_time(k) >= elapsed`` (``k_max`` if
    none): the first iteration boundary at or after ``elapsed`` seconds into an epoch.

    Step times grow with the context, so ``steps_time(k) >= k t_1``: ``elapsed / t_1``
    is an upper estimate that is off by a step or two; we walk from it."""
    if elapsed <= 0.0:
        return 1
    t1 = step_time(coeffs_row, context + 1.0)
    k = int(elapsed / t1) if t1 > 0 else k_max
    k = 1 if k < 1 else (k_max if k > k_max else k)
    while k > 1 and steps_time(coeffs_row, context, k - 1) >= elapsed:
        k -= 1
    while k < k_max and steps_time(coeffs_row, context, k) < elapsed:
        k += 1
    return k


def prefill_split(prefill_s: np.ndarray) -> tuple[list[float], float, float]:
    """Split a prefill table into a part linear in the new tokens and the attention core.

    In seed 002's prefill model (perfmodel/prefill.py) a prompt of ``s`` tokens costs
    ``L(n) + a P(s)``: ``L`` gathers the weight GEMMs (tile-padded rooflines),
    all-reduces, all-to-alls and per-layer overheads of the ``n`` new tokens, and
    ``a P(s)`` is the causal attention core with ``P(s) = s (s + 1) / 2`` query-key pairs.
    A batch of prompts runs as one forward pass over the concatenated tokens -- the GEMMs
    see ``sum n_i`` rows -- while attention stays per sequence, so

        t_batch = L(sum_i n_i) + a sum_i (P(s_i) - P(h_i))        (h_i cached tokens).

    ``a`` is recovered from the table itself: ``P`` has second difference 1 and the rest
    is piecewise linear (kinks at GEMM tile edges), so the median second difference over
    the upper half of the lengths is ``a`` exactly (tile kinks are ~2 points in 64).
    Returns (``L`` as a list, ``a``, the slope of ``L`` beyond the table).
    """
    t = np.asarray(prefill_s, dtype=np.float64)
    n = t.size
    a = 0.0
    if n >= 16:
        d2 = t[2:] - 2.0 * t[1:-1] + t[:-2]
        a = max(float(np.median(d2[len(d2) // 2:])), 0.0)
    s = np.arange(n, dtype=np.float64)
    lin = t - a * 0.5 * s * (s + 1.0)
    w = min(64, n - 1)
    tail = float((lin[-1] - lin[-1 - w]) / w) if w > 0 else 0.0
    return lin.tolist(), a, max(tail, 0.0)


def prefill_linear(lin: list[float], tail: float, n: int) -> float:
    """``L(n)``, the part of :func:`prefill_split` linear in ``n`` new tokens: the
    table's entry, or beyond the table its last entry plus ``tail`` per token."""
    last = len(lin) - 1
    return lin[n] if n <= last else lin[last] + (n - last) * tail


def parse_config(text: Any, size: int, where: str) -> tuple[int, int, int]:
    """``"tpX-dpY-epZ"`` -> (tp, dp, ep), checking tp * dp == size."""
    cfg = parse_parallel(text, size, where)
    return cfg.tp, cfg.dp, cfg.ep


def _tables(gpu: GPU, size: int, tp: int, dp: int, ep: int, model: ModelSpec, batch: int,
            max_input: int, calib: Calibration, time_scale: float = 1.0):
    """(prefill_s, step_coeffs, kv_capacity_tokens, kv_bytes_per_token) from the perf
    model's timing interface (which caches the tables), scaled by ``time_scale``."""
    timing = IslandTiming(gpu, model, tp, dp, ep, calib)
    pre, coeffs = timing.tables(batch, max_input)
    if time_scale != 1.0:
        pre = pre * time_scale
        coeffs = coeffs.copy()
        coeffs[:, [0, 2, 3, 4, 6, 7, 8]] *= time_scale  # every time term (not the counts)
        for a in (pre, coeffs):
            a.setflags(write=False)
    return pre, coeffs, timing.kv_capacity_tokens, float(timing.kv_bytes_per_token_per_gpu)


def make_island(index: int, name: str, gpu: str | GPU, size: int, role: str, tp: int,
                dp: int, ep: int, model: str | ModelSpec, *, batch: int | None = None,
                location: Location | None = None, calib: Calibration = DEFAULT_CALIBRATION,
                max_input: int = DEFAULT_MAX_INPUT, gpus: Mapping[str, GPU] | None = None,
                range_shares: Sequence[float] = (), time_scale: float = 1.0) -> SimIsland:
    """One island from its GPU type, size, role and parallel configuration.

    ``batch`` is the decode batch *per attention group* (the plan's ``batch``); by
    default the thesis rule (seed 002 §4.6.2) at a context of ``max_input`` tokens, i.e.
    the batch whose sequences all fit at the longest prompt.  ``max_batch`` is
    ``batch x dp``.  A ``location`` of ``None`` is left for :func:`make_cluster` to fill.
    ``time_scale`` multiplies every prefill and step time (the raw perf model at 1.0).
    """
    where = f"island {name!r}"
    g = as_gpu(gpu, gpus or {}, where)
    m = as_model(model, where)
    if role not in ROLES:
        raise PlannerError(f"{where}: role must be one of {', '.join(ROLES)}, got {role!r}")
    for field_name, v in (("size", size), ("tp", tp), ("dp", dp), ("ep", ep)):
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 1:
            raise PlannerError(f"{where}: {field_name} must be an integer >= 1, got {v!r}")
    if tp * dp != size:
        raise PlannerError(f"{where}: tp x dp = {tp * dp} differs from size {size}")
    if int(max_input) < 1:
        raise PlannerError(f"{where}: max_input must be >= 1")
    if not IslandTiming(g, m, tp, dp, ep, calib).weights_fit:
        raise PlannerError(f"{where}: {m.name} weights do not fit on {g.name} at "
                           f"tp{tp}-dp{dp}-ep{ep}")
    if batch is None:
        col = lambda x: np.array([[float(x)]])  # noqa: E731
        rule = IslandTiming(g, m, col(tp), col(dp), col(ep), calib).decode_batch(col(max_input))
        batch = max(int(rule[0, 0]), 1)
    if isinstance(batch, bool) or int(batch) != batch or batch < 1:
        raise PlannerError(f"{where}: batch must be an integer >= 1, got {batch!r}")
    if not (math.isfinite(time_scale) and time_scale > 0):
        raise PlannerError(f"{where}: time_scale must be > 0, got {time_scale!r}")
    pre, coeffs, cap, kv = _tables(g, int(size), int(tp), int(dp), int(ep), m, int(batch),
                                   int(max_input), calib, float(time_scale))
    return SimIsland(index=int(index), name=str(name), gpu=g.name, size=int(size), role=role,
                     tp=int(tp), dp=int(dp), ep=int(ep), max_batch=int(batch) * int(dp),
                     kv_capacity_tokens=cap, kv_bytes_per_token=kv, location=location,
                     prefill_s=pre, step_coeffs=coeffs,
                     range_shares=tuple(float(x) for x in range_shares),
                     mixed_prefill=bool(calib.profile.mixed_prefill))


def make_cluster(islands: Sequence[SimIsland], network: NetworkSpec = DEFAULT_NETWORK,
                 model_name: str = "", *,
                 range_edges: Sequence[float] | np.ndarray | None = None,
                 label: str = "") -> SimCluster:
    """A cluster of ``islands`` (re-indexed in order); islands without a location are
    placed by ``network.place`` over all island sizes (plan order, docs in
    :mod:`planner.fleet.network`)."""
    if not islands:
        raise PlannerError("a cluster needs at least one island")
    places = network.place([isl.size for isl in islands])
    fixed = []
    for i, isl in enumerate(islands):
        loc = isl.location if isl.location is not None else places[i]
        fixed.append(dataclasses.replace(isl, index=i, location=loc))
    roles = {isl.role for isl in fixed}
    if "prefill" in roles and "decode" not in roles and "both" not in roles:
        raise PlannerError("cluster has prefill islands but no decode (or both) island")
    if "decode" in roles and "prefill" not in roles and "both" not in roles:
        raise PlannerError("cluster has decode islands but no prefill (or both) island")
    edges = np.asarray(range_edges if range_edges is not None else [], dtype=float)
    return SimCluster(tuple(fixed), network, model_name, edges, label)


def cluster_from_plan(plan: Mapping[str, Any], *, model: str | ModelSpec | None = None,
                      gpus: Mapping[str, GPU] | None = None,
                      calib: Calibration | None = None,
                      network: NetworkSpec = DEFAULT_NETWORK, max_input: int | None = None,
                      locations: Sequence[Location] | None = None,
                      time_scale: float | None = None) -> SimCluster:
    """The cluster a plan.json dict describes: :meth:`Deployment.from_plan` (which
    reads and checks it) then :func:`cluster_from_deployment`."""
    return cluster_from_deployment(Deployment.from_plan(plan, model=model, gpus=gpus,
                                                        calib=calib),
                                   network=network, max_input=max_input,
                                   locations=locations, time_scale=time_scale)


def cluster_from_deployment(dep: Deployment, *, network: NetworkSpec = DEFAULT_NETWORK,
                            max_input: int | None = None,
                            locations: Sequence[Location] | None = None,
                            time_scale: float | None = None) -> SimCluster:
    """The simulator's cluster of a deployment's serving islands (plan order, with
    their ``shares``, range flows and token budgets).

    ``time_scale`` (default 1) multiplies every prefill and step time: the simulator runs
    the islands at the perf model's own step times, the same ones the plan priced.
    ``max_input`` defaults to the last range's end.  ``locations`` (one per serving
    island) overrides the deployment's own (planner.context.placement), which overrides
    ``network.place``.
    """
    edges = dep.range_edges
    if max_input is None:
        max_input = int(math.ceil(edges[-1])) if len(edges) else DEFAULT_MAX_INPUT
    scale = 1.0 if time_scale is None else float(time_scale)
    islands: list[SimIsland] = []
    for isl in dep.islands:
        try:
            island = make_island(len(islands), f"{isl.gpu.name}x{isl.size}#{isl.index}",
                                 isl.gpu, isl.size, isl.role, isl.tp, isl.dp, isl.ep,
                                 dep.model, batch=isl.batch, calib=dep.calibration,
                                 max_input=max_input, range_shares=isl.shares,
                                 time_scale=scale)
        except PlannerError as err:
            raise PlannerError(f"plan.islands[{isl.index}]: {err}") from None
        if isl.token_budget or isl.range_rps:
            island = dataclasses.replace(island, token_budget=isl.token_budget,
                                         range_flows=isl.range_rps or ())
        islands.append(island)
    if locations is None:
        locations = dep.locations
    if locations is not None:
        if len(locations) != len(islands):
            raise PlannerError(f"locations: need {len(islands)} entries (one per non-idle "
                               "island)")
        islands = [dataclasses.replace(x, location=loc)
                   for x, loc in zip(islands, locations, strict=True)]
    return make_cluster(islands, network, dep.model.name, range_edges=edges,
                        label=dep.workload)


__all__ = ["DEFAULT_MAX_INPUT", "cluster_from_deployment", "cluster_from_plan",
           "make_cluster", "make_island", "parse_config", "plan_calibration",
           "prefill_linear", "prefill_split", "step_time", "steps_time", "steps_until"]
