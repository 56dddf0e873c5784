"""The deployment a plan describes, as one typed object: :class:`Deployment`.

A plan is deployed as printed: serving islands, each a GPU type on whole servers (or a
share of one), a parallel layout the engine launches, a role, the length ranges it
serves (its share of time and its requests/s per range), the servers and the network
location it sits at; the prefill -> decode KV routes follow from the islands' range
flows (:func:`planner.context.placement.pair_flows`).  The simulator
(:func:`planner.sim.cluster.cluster_from_deployment`), the export
(:mod:`planner.export`) and the report read these fields from here, never from the
plan.json dict: ``plan.json`` is the deployment's serialisation
(:mod:`planner.run.plan_json`), read back by :meth:`Deployment.from_plan`, once, at
the edge, with every field checked and named in its error.

Pipeline plans (``--inner seed000|seed001``) describe chains of blocks, not islands
with a parallel layout; their simulator rebuilds them from the planning context
(:mod:`planner.sim.pipeline_cluster`), so they are not a :class:`Deployment`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from perfmodel.calibration import DEFAULT_CALIBRATION, PLAN_AT, Calibration
from perfmodel.engines import EngineLimits, get_engine
from perfmodel.hardware import GPU, get_gpu, resolve_gpu
from perfmodel.models import ModelSpec, get_model
from perfmodel.parallel import ParallelConfig
from planner.core.errors import PlannerError
from planner.fleet.network import Location
from planner.fleet.servers import Server
from planner.inner.registry import needs_context

#: The roles of a serving island.
ROLES = ("prefill", "decode", "both")


@dataclass(frozen=True)
class DeployedIsland:
    """One island of a deployment and what it serves at the plan's capacity.

    ``parallel`` is None for an idle island and for a pipeline plan's island, whose
    ``config`` describes its chain of blocks instead of a (tp, dp, ep) layout."""

    index: int  # position in plan.json's islands (idle ones included)
    gpu: GPU
    size: int
    role: str  # prefill | decode | both | idle
    parallel: ParallelConfig | None
    batch: int  # decode: sequences per attention group; prefill: prompts per pass
    shares: tuple[float, ...]  # share of the island's time per range
    range_rps: tuple[float, ...] | None = None  # requests/s it serves per range
    token_budget: int = 0  # prefill tokens per pass (0: the engine's)
    location: Location | None = None
    servers: tuple[int, ...] = ()  # server indices (server granularity)
    config: str = ""  # the plan's label of its layout ("tp1-dp16-ep16")
    requests_per_s: float | None = None  # what it serves at the plan's capacity
    ttft_ms: float | None = None  # flow-weighted, planned (prefill and colocated)
    tpot_ms: float | None = None  # flow-weighted, planned (decode and colocated)

    @property
    def layout(self) -> ParallelConfig:
        """The (tp, dp, ep) layout; ``PlannerError`` for an island without one."""
        if self.parallel is None:
            raise PlannerError(f"island {self.index} ({self.role}, {self.config!r}) has no "
                               "(tp, dp, ep) layout")
        return self.parallel

    @property
    def tp(self) -> int:
        return self.layout.tp

    @property
    def dp(self) -> int:
        return self.layout.dp

    @property
    def ep(self) -> int:
        return self.layout.ep


@dataclass(frozen=True)
class Deployment:
    """A plan's serving islands with the model, engine and ranges they run."""

    model: ModelSpec
    calibration: Calibration  # the engine whose kernels and behaviour priced the plan
    workload: str
    islands: tuple[DeployedIsland, ...]  # serving islands, plan order
    #: islands that serve nothing (a plan repairs them away; older files may list them)
    idle_islands: tuple[DeployedIsland, ...] = ()
    #: ``[start_0, ..., start_{J-1}, end_{J-1}]``: range j is ``[start_j, start_{j+1})``
    range_edges: np.ndarray = field(default_factory=lambda: np.zeros(0))
    #: GPUs per server of each type (server granularity; empty for older plans)
    gpus_per_node: Mapping[str, int] = field(default_factory=dict)
    #: the servers the islands use, one GPU type each (server granularity)
    servers: tuple[Server, ...] = ()
    #: islands describe chains of blocks (``--inner seed000|seed001``), not layouts
    pipeline: bool = False

    @property
    def engine(self) -> str:
        return self.calibration.engine

    @property
    def idle(self) -> tuple[int, ...]:
        """Plan indices of the idle islands."""
        return tuple(i.index for i in self.idle_islands)

    @property
    def every(self) -> tuple[DeployedIsland, ...]:
        """Every island, serving or idle, in plan order."""
        return tuple(sorted(self.islands + self.idle_islands, key=lambda i: i.index))

    @property
    def locations(self) -> list[Location] | None:
        """Every serving island's location, or None unless all have one."""
        locs = [i.location for i in self.islands]
        return None if any(loc is None for loc in locs) else locs  # type: ignore[return-value]

    def kv_routes(self) -> np.ndarray:
        """(P, K, J) requests/s from prefill island p to decode island k per range, as the
        plan's range router pairs them (:func:`planner.context.placement.pair_flows`);
        P and K index the prefill and decode islands in plan order."""
        pre = [i for i in self.islands if i.role == "prefill"]
        dec = [i for i in self.islands if i.role == "decode"]
        j = len(self.range_edges) - 1 if len(self.range_edges) else 0
        flows = lambda isl: np.asarray(isl.range_rps or [0.0] * j, float)  # noqa: E731
        p = np.array([flows(i) for i in pre]).reshape(len(pre), j)
        d = np.array([flows(i) for i in dec]).reshape(len(dec), j)
        demand = d.sum(axis=0)
        share = np.divide(d, demand, out=np.zeros_like(d), where=demand > 0)
        return p[:, None, :] * share[None, :, :]

    @classmethod
    def from_solution(cls, result: Any, operating: Any, *, model: ModelSpec,
                      calibration: Calibration, workload: str, gpus: Mapping[str, GPU],
                      gpus_per_node: Mapping[str, int] | None = None) -> Deployment:
        """The deployment of a solved plan, from the solver's objects
        (:class:`planner.inner.result.InnerResult` and
        :class:`planner.context.operating.OperatingPoint`): what the planner hands the
        simulator in its own process, and what :mod:`planner.run.plan_json` writes
        (``Deployment.from_plan(plan.to_dict())`` reads the same deployment back)."""
        islands: list[DeployedIsland] = []
        idle: list[DeployedIsland] = []
        op = operating
        for i, a in enumerate(result.islands):
            shares = tuple(float(x) for x in a.shares)
            if a.role == "idle":
                idle.append(DeployedIsland(i, gpus[a.gpu], int(a.size), "idle", None,
                                           int(a.batch), shares, config=str(a.config)))
                continue
            point = op.islands[i] if op is not None else None
            flows = (tuple(round(float(x), 9) for x in op.range_flows[i])
                     if op is not None and op.range_flows else None)
            loc = op.locations[i] if op is not None and op.locations else None
            on = tuple(op.island_servers[i]) if op is not None and op.island_servers else ()
            islands.append(DeployedIsland(
                i, gpus[a.gpu], int(a.size), a.role, ParallelConfig.from_label(a.config),
                max(int(a.batch), 1), shares, flows,
                int(point.token_budget) if point is not None else 0, loc, on, str(a.config),
                *(_finite(getattr(point, k, None)) for k in
                  ("requests_per_s", "ttft_ms", "tpot_ms"))))
        if not islands:
            raise PlannerError("the plan has no serving island")
        start = np.asarray(result.range_start, float)
        edges = (np.concatenate([start, np.asarray(result.range_end, float)[-1:]])
                 if len(start) else np.zeros(0))
        edges.setflags(write=False)
        servers = tuple(op.servers) if op is not None else ()
        return cls(model, calibration, workload, tuple(islands), tuple(idle), edges,
                   dict(gpus_per_node or {}), servers)

    @classmethod
    def from_plan(cls, plan: Mapping[str, Any], *, model: str | ModelSpec | None = None,
                  gpus: Mapping[str, GPU] | None = None, calib: Calibration | None = None,
                  serving: bool = True) -> Deployment:
        """The deployment a plan.json dict describes (docs/plan-schema.md).

        GPU types come from ``gpus`` (e.g. the inventory's, with datasheet GPUs), the
        plan's inventory datasheets, or the catalog.  ``model`` and ``calib`` override
        the plan's own ``request.model`` and ``request.engine``.  Every problem is one
        ``PlannerError`` naming the field (``plan.islands[3].size must be ...``)."""
        if not isinstance(plan, Mapping):
            raise PlannerError("plan must be a JSON object")
        request = plan.get("request") or {}
        if calib is None:
            calib = plan_calibration(plan)
        if model is None:
            model = _field(request, "model", "plan.request")
        spec = as_model(model, "plan.request.model")
        known = dict(gpus or {})
        inv = request.get("inventory") if isinstance(request, Mapping) else None
        nodes: dict[str, int] = {}
        for k, g in enumerate((inv or {}).get("gpus") or []):
            if not isinstance(g, Mapping):
                continue
            if g.get("type") not in known and (g.get("datasheet") or g.get("type")):
                try:
                    gpu = resolve_gpu(str(g["type"]),
                                      dict(g["datasheet"]) if g.get("datasheet") else None,
                                      f"plan.request.inventory.gpus[{k}].datasheet")
                except PlannerError:
                    if g.get("datasheet"):
                        raise
                    continue  # an island of it names the problem
                price = g.get("price_per_hour")  # the plan's price, not the catalog's
                if isinstance(price, int | float) and not isinstance(price, bool):
                    gpu = replace(gpu, price_per_hour=float(price))
                known[str(g["type"])] = gpu
            node = g.get("gpus_per_node")
            if isinstance(node, int) and not isinstance(node, bool) and node > 0:
                nodes[str(g.get("type"))] = node
        server = isinstance(request, Mapping) and not request.get("thesis") and \
            request.get("island_granularity") == "server"
        if not server:
            nodes = {}
        for name, node in nodes.items():  # a server below the scale-up domain bounds it,
            g = as_gpu(name, known, "plan.request.inventory")  # as the planner priced it
            if node < g.gpus_per_domain:
                known[name] = replace(g, gpus_per_domain=node)
        raw = _field(plan, "islands", "plan")
        if not isinstance(raw, list) or (serving and not raw):
            raise PlannerError("plan.islands must be a non-empty list")
        first = raw[0] if raw and isinstance(raw[0], Mapping) else {}
        n_ranges = len(first.get("shares") or []) if raw else \
            len((plan.get("ranges") or {}).get("start") or [])
        try:
            edges = _range_edges(plan, n_ranges) if "ranges" in plan or n_ranges \
                else np.zeros(0)
        except PlannerError:
            if serving:
                raise
            edges = np.zeros(0)  # a report reads the plan's ranges itself
        pipeline = isinstance(request, Mapping) and needs_context(str(request.get("inner")))
        islands: list[DeployedIsland] = []
        idle: list[DeployedIsland] = []
        for i, isl in enumerate(raw):
            island = _island(isl, i, known, n_ranges, pipeline)
            (idle if island.role == "idle" else islands).append(island)
        if serving and not islands:
            raise PlannerError("plan.islands: every island is idle")
        label = str(request.get("workload", "")) if isinstance(request, Mapping) else ""
        edges.setflags(write=False)
        return cls(spec, calib, label, tuple(islands), tuple(idle), edges, nodes,
                   _servers(plan.get("servers")), pipeline)


def _field(d: Mapping[str, Any], key: str, where: str) -> Any:
    if not isinstance(d, Mapping):
        raise PlannerError(f"{where} must be a mapping")
    if key not in d:
        raise PlannerError(f"{where}.{key} is missing")
    return d[key]


def as_gpu(gpu: Any, gpus: Mapping[str, GPU], where: str) -> GPU:
    """A GPU by name: ``gpus`` (the inventory's, datasheets included), else the catalog;
    errors prefixed by ``where``."""
    if isinstance(gpu, GPU):
        return gpu
    if not isinstance(gpu, str) or not gpu:
        raise PlannerError(f"{where}: GPU type must be a name, got {gpu!r}")
    if gpu in gpus:
        return gpus[gpu]
    try:
        return get_gpu(gpu)
    except PlannerError as err:
        raise PlannerError(f"{where}: {err}") from None


def as_model(model: str | ModelSpec, where: str) -> ModelSpec:
    """A model by name (built-in or config.json); errors prefixed by ``where``."""
    if isinstance(model, ModelSpec):
        return model
    if not isinstance(model, str) or not model:
        raise PlannerError(f"{where}: model must be a name, got {model!r}")
    try:
        return get_model(model)
    except PlannerError as err:
        raise PlannerError(f"{where}: {err}") from None


def parse_config(text: Any, size: int, where: str) -> ParallelConfig:
    """``"tpX-dpY-epZ"`` checked against the island size (tp x dp == size)."""
    try:
        cfg = ParallelConfig.from_label(text)
    except ValueError as e:
        raise PlannerError(f"{where}: {e}") from None
    if cfg.tp * cfg.dp != size:
        raise PlannerError(f"{where}: {text!r} needs tp x dp = island size {size}")
    return cfg


def _numbers(values: Any, n: int, where: str) -> tuple[float, ...]:
    if not isinstance(values, list) or len(values) != n:
        raise PlannerError(f"{where} must be a list of {n} numbers")
    try:
        out = tuple(float(x) for x in values)
    except (TypeError, ValueError):
        raise PlannerError(f"{where} must be numbers") from None
    if any(not math.isfinite(x) or x < 0 for x in out):
        raise PlannerError(f"{where} must be finite and >= 0")
    return out


def _island(isl: Any, i: int, known: Mapping[str, GPU], n_ranges: int, pipeline: bool
            ) -> DeployedIsland:
    """One plan.json island, checked (an idle one only for what it is)."""
    where = f"plan.islands[{i}]"
    role = _field(isl, "role", where)
    if role not in (*ROLES, "idle"):
        raise PlannerError(f"{where}.role must be prefill, decode, both or idle, got "
                           f"{role!r}")
    gpu = as_gpu(_field(isl, "gpu", where), known, f"{where}.gpu")
    size = _field(isl, "size", where)
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise PlannerError(f"{where}.size must be an integer >= 1, got {size!r}")
    if role == "idle":
        shares = isl.get("shares") or [0.0] * n_ranges
        return DeployedIsland(i, gpu, size, "idle", None, 0,
                              tuple(float(x or 0.0) for x in shares),
                              config=str(isl.get("config") or ""))
    label = _field(isl, "config", where)
    cfg = None if pipeline else parse_config(label, size, f"{where}.config")
    batch = isl.get("batch", 1)
    if isinstance(batch, bool) or not isinstance(batch, int | float) or batch < 0 \
            or int(batch) != batch:
        raise PlannerError(f"{where}.batch must be an integer >= 0, got {batch!r}")
    shares = isl.get("shares") or []
    if len(shares) != n_ranges:
        raise PlannerError(f"{where}.shares has {len(shares)} entries, expected {n_ranges}")
    shares = _numbers(list(shares), n_ranges, f"{where}.shares")
    flows = isl.get("range_rps")
    if flows is not None:
        flows = _numbers(flows, n_ranges, f"{where}.range_rps")
    budget = isl.get("token_budget", 0)
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
        raise PlannerError(f"{where}.token_budget must be an integer >= 0, got {budget!r}")
    servers = isl.get("servers") or []
    if not isinstance(servers, list) or any(
            isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in servers):
        raise PlannerError(f"{where}.servers must be a list of server indices")
    return DeployedIsland(i, gpu, size, role, cfg, max(int(batch), 1), shares, flows,
                          int(budget), _location(isl.get("location"), where),
                          tuple(int(s) for s in servers), str(label),
                          *(_finite(isl.get(k)) for k in ("requests_per_s", "ttft_ms",
                                                          "tpot_ms")))


def _finite(x: Any) -> float | None:
    """A finite float, or None (null, NaN, missing)."""
    if isinstance(x, bool) or not isinstance(x, int | float):
        return None
    return float(x) if math.isfinite(x) else None


def _servers(raw: Any) -> tuple[Server, ...]:
    """The plan's ``servers`` list (checked by its schema) as :class:`Server` s."""
    if not isinstance(raw, list):
        return ()
    out = []
    for k, srv in enumerate(raw):
        if not isinstance(srv, Mapping):
            continue
        try:
            out.append(Server(int(srv["index"]), str(srv["gpu"]), int(srv["gpus"]),
                              tuple(int(i) for i in srv.get("islands") or []),
                              int(srv["gpus_used"]), bool(srv.get("partial"))))
        except (KeyError, TypeError, ValueError) as err:
            raise PlannerError(f"plan.servers[{k}]: must have integer index, gpus, "
                               f"gpus_used and island indices, and a gpu name ({err})") \
                from None
    return tuple(out)


def _location(loc: Any, where: str) -> Location | None:
    if not isinstance(loc, Mapping):
        return None
    try:
        vals = [int(loc[k]) for k in ("pod", "rack", "node")]
    except (KeyError, TypeError, ValueError):
        raise PlannerError(f"{where}.location must have integer pod, rack and node") \
            from None
    for key, v in zip(("pod", "rack", "node"), vals, strict=True):
        if v < 0:
            raise PlannerError(f"{where}.location.{key} must be >= 0, got {v}")
    return Location(*vals)


def _range_edges(plan: Mapping[str, Any], n_ranges: int) -> np.ndarray:
    """``[start_0, ..., start_{J-1}, end_{J-1}]``: range j is ``[start_j, start_{j+1})``.

    Plans write ``end`` exclusive (planner.workload.Ranges); taking the next range's start
    as the boundary also reads a plan with inclusive ends correctly."""
    ranges = _field(plan, "ranges", "plan")
    start = _field(ranges, "start", "plan.ranges")
    end = _field(ranges, "end", "plan.ranges")
    try:
        start = np.asarray(start, dtype=float)
        end = np.asarray(end, dtype=float)
    except (TypeError, ValueError):
        raise PlannerError("plan.ranges.start/end must be lists of numbers") from None
    if start.ndim != 1 or start.shape != end.shape or len(start) != n_ranges:
        raise PlannerError(f"plan.ranges.start/end must both have {n_ranges} entries (one per "
                           "share of each island)")
    if n_ranges and (np.any(np.diff(start) <= 0) or end[-1] <= start[-1]
                     or not np.all(np.isfinite(start))):
        raise PlannerError("plan.ranges.start must increase and end after it")
    return np.concatenate([start, end[-1:]]) if n_ranges else np.zeros(0)


def plan_calibration(plan: Mapping[str, Any]) -> Calibration:
    """The perf-model calibration a plan was made with: its ``request.engine`` (plans
    written before engines were recorded used the default) under its
    ``request.engine_limits`` (``--max-running``, ``--max-tokens``, ``--mem-fraction``)."""
    request = plan.get("request") if isinstance(plan, Mapping) else None
    request = request if isinstance(request, Mapping) else {}
    engine = request.get("engine")
    limits = EngineLimits.from_dict(request.get("engine_limits"), "plan.request.engine_limits")
    plan_at = request.get("plan_at", "point")
    if plan_at not in PLAN_AT:
        raise PlannerError(f"plan.request.plan_at must be one of {', '.join(PLAN_AT)}, got "
                           f"{plan_at!r}")
    try:
        base = DEFAULT_CALIBRATION if engine is None else Calibration(
            engine=get_engine(str(engine)).name)
    except PlannerError as err:
        raise PlannerError(f"plan.request.engine: {err}") from None
    return replace(base.with_limits(limits), plan_at=plan_at)


__all__ = ["ROLES", "DeployedIsland", "Deployment", "as_gpu", "as_model", "parse_config",
           "plan_calibration"]
