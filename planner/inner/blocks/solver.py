"""One entry point for the seed-000 inner solvers: servers + model + load -> PipelinePlan.

Methods:

* ``"cg-bprr"`` — Alg. 1 with ``|R|`` the design concurrency; online this is Alg. 2's
  CG-BP, and the optional simulation routes arrivals with WS-RR;
* ``"milp"`` — the exact MILP (13) (small instances only; ``allow_idle`` lets servers
  hold no block, our extension);
* ``"petals"`` — the PETALS baseline (random join order from ``seed`` unless an order is
  given), routed by PETALS's heuristic.

The design concurrency is ``load.concurrency`` if given, else the paper's rule
(§3.3.1) from ``load.arrival_rate``.  Infeasible inputs give a plan with
``feasible=False`` and infinite times (the outer loop prices it); malformed inputs
raise :class:`~planner.core.errors.PlannerError`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, cast

import numpy as np

from planner.core.errors import PlannerError
from planner.inner.blocks.bounds import (
    bound_17,
    completion_bound_22,
    feasible_18,
    lower_bound_mean,
    max_concurrency_18,
    max_concurrency_19,
)
from planner.inner.blocks.cg_bprr import cg_bp, route_clients
from planner.inner.blocks.instance import Instance, Objective, build_instance
from planner.inner.blocks.milp import solve_milp
from planner.inner.blocks.online import (
    design_concurrency,
    poisson_arrivals,
    simulate,
    split_requests,
    ws_rr,
)
from planner.inner.blocks.petals import (
    PetalsConfig,
    join_order,
    petals_placement,
    petals_router,
)
from planner.inner.blocks.plan import Hop, Pipeline, PipelinePlan, ServerBlocks
from planner.inner.blocks.routing import INF, Placement, Route, fill_capacity, route_times
from planner.inner.blocks.servers import BlockModel, Client, NetworkDescription, Server

Method = Literal["cg-bprr", "milp", "petals"]


@dataclass(frozen=True)
class Load:
    """Demand: a design concurrency ``|R|`` and/or a total arrival rate (requests/s).

    ``client_weights`` splits both over clients (default: equal).
    """

    concurrency: int | None = None
    arrival_rate: float | None = None
    client_weights: Mapping[str, float] | None = None

    def __post_init__(self) -> None:
        if self.concurrency is None and self.arrival_rate is None:
            raise PlannerError("blocks solver: load needs field concurrency or arrival_rate")
        if self.concurrency is not None and (
            not isinstance(self.concurrency, int) or self.concurrency < 1
        ):
            raise PlannerError("blocks solver: load field concurrency must be an integer >= 1")
        if self.arrival_rate is not None and not self.arrival_rate > 0:
            raise PlannerError("blocks solver: load field arrival_rate must be > 0")


def _pipelines(inst: Instance, routed: Sequence[tuple[Route, int]]) -> tuple[Pipeline, ...]:
    merged: dict[tuple[int, tuple[int, ...]], tuple[Route, int]] = {}
    for route, n in routed:
        key = (route.client, route.servers)
        merged[key] = (route, merged.get(key, (route, 0))[1] + n)
    out = []
    for route, n in merged.values():
        t = route_times(inst, route)
        hops = tuple(Hop(inst.server_names[j], f, k) for j, f, k in
                     zip(route.servers, route.first_blocks, route.blocks, strict=True))
        out.append(Pipeline(inst.client_names[route.client], hops, int(n), t.ttft_s, t.tbt_s,
                            t.response_s, t.per_token_s))
    return tuple(out)


def _weighted_mean(pipes: Sequence[Pipeline], attr: str) -> float:
    n = sum(p.sessions for p in pipes)
    return sum(p.sessions * getattr(p, attr) for p in pipes) / n if n else INF


def solve_instance(
    inst: Instance,
    design: int,
    *,
    method: Method = "cg-bprr",
    arrival_rate: float | None = None,
    milp_solver: Literal["highs", "cbc"] = "highs",
    milp_time_limit_s: float = 60.0,
    allow_idle: bool = True,
    petals: PetalsConfig | None = None,
    petals_order: Sequence[int] | None = None,
    seed: int = 0,
    simulate_requests: int = 0,
    backoff: bool = False,
    initial_delay_s: float = 0.0,
    allocation_delay_s: float = 0.0,
) -> PipelinePlan:
    """Array-level solve: ``inst.requests`` give the client mix, ``design`` is ``|R|``."""
    weights = inst.requests.astype(float)
    design_inst = inst.with_requests(split_requests(design, weights))
    notes: list[str] = []
    b17 = b22 = None
    router = ws_rr
    placement: Placement | None = None
    routed: list[tuple[Route, int]] = []
    waited: list[float] = []
    if method == "cg-bprr":
        res = cg_bp(inst, design)
        if res.feasible:
            placement = res.placement
            routed = [(r, n) for r, n, _ in route_clients(design_inst, placement)]
            b17, b22 = bound_17(inst, res), completion_bound_22(inst, res)
        else:
            notes.append(f"CG-BP infeasible at |R|={design}: condition (18) fails")
    elif method == "milp":
        try:
            res_m = solve_milp(design_inst, allow_idle=allow_idle, solver=milp_solver,
                               time_limit_s=milp_time_limit_s)
        except ValueError as exc:  # too large for the exact model: a configuration mistake
            raise PlannerError(f"blocks solver: method 'milp' {exc}") from None
        notes.append(f"MILP (13) status {res_m.status}, {res_m.runtime_s:.3f} s")
        if res_m.placement is not None:
            placement = res_m.placement
            routed = [(r, 1) for r in res_m.routes]
    elif method == "petals":
        if petals is None:
            raise PlannerError("blocks solver: method 'petals' needs a PetalsConfig "
                               "(field hidden_size of the model)")
        order = join_order(inst.n_servers, seed) if petals_order is None else petals_order
        pp = petals_placement(inst, petals, order)
        placement = pp.placement
        router = petals_router(petals, pp.session_capacity)
        clients = np.repeat(np.arange(inst.n_clients), design_inst.requests)
        sim = simulate(inst, placement, np.zeros(clients.shape[0]), clients, router=router)
        routed = [(r, 1) for r in sim.routes if r is not None]
        waited = list(sim.wait_s[np.isfinite(sim.wait_s)])
        if waited and max(waited) > 0:
            notes.append("PETALS design routing makes some requests wait for cache")
    else:
        raise PlannerError(f"blocks solver: unknown method {method!r}")

    feasible = (placement is not None and placement.is_complete(inst.n_blocks)
                and sum(n for _, n in routed) == design)
    pipes = _pipelines(inst, routed)
    # feasible implies placement is not None
    cap_pipes = (_pipelines(inst, fill_capacity(inst, cast(Placement, placement), weights))
                 if feasible else ())
    capacity = sum(p.sessions for p in cap_pipes)
    thr = sum(p.sessions / p.response_s for p in cap_pipes) if cap_pipes else 0.0
    mean_wait = float(np.mean(waited)) if waited else 0.0
    mean_resp = _weighted_mean(pipes, "response_s") + mean_wait if feasible else INF
    plan_kwargs = {}
    if feasible and arrival_rate is not None:
        plan_kwargs["arrival_rate"] = arrival_rate
        plan_kwargs["utilisation"] = arrival_rate * mean_resp / capacity if capacity else INF
        if simulate_requests > 0:
            arr, cl = poisson_arrivals(arrival_rate, simulate_requests, seed, weights)
            sim = simulate(inst, cast(Placement, placement), arr, cl, router=router,
                           backoff=backoff, initial_delay_s=initial_delay_s,
                           allocation_delay_s=allocation_delay_s)
            plan_kwargs.update(
                simulated_mean_response_s=float(np.mean(sim.response_s)),
                simulated_mean_ttft_s=float(np.mean(sim.ttft_s)),
                simulated_mean_wait_s=float(np.mean(sim.wait_s)),
                simulated_per_token_s=sim.mean_per_token_s(inst.output_len),
            )
    blocks = () if placement is None else tuple(
        ServerBlocks(inst.server_names[j], int(placement.first[j]), int(placement.count[j]),
                     int(placement.cache_slots[j])) for j in range(inst.n_servers))
    return PipelinePlan(
        method=method, objective=inst.objective, feasible=feasible, design_concurrency=design,
        placement=blocks, pipelines=pipes, capacity_pipelines=cap_pipes,
        concurrency_capacity=capacity, throughput_rps=thr,
        throughput_tokens_per_s=thr * inst.output_len,
        mean_response_s=mean_resp,
        mean_ttft_s=_weighted_mean(pipes, "ttft_s") + mean_wait if feasible else INF,
        mean_tbt_s=_weighted_mean(pipes, "tbt_s") if feasible else INF,
        mean_per_token_s=_weighted_mean(pipes, "per_token_s") if feasible else INF,
        bound_17=b17, completion_bound_22=b22,
        lower_bound_b8=lower_bound_mean(design_inst),
        feasible_18=feasible_18(inst, design), max_concurrency_18=max_concurrency_18(inst),
        max_concurrency_19=max_concurrency_19(inst), notes=tuple(notes), **plan_kwargs,
    )


def solve_blocks(
    servers: Sequence[Server],
    model: BlockModel,
    load: Load,
    *,
    clients: Sequence[Client] | None = None,
    network: NetworkDescription | None = None,
    method: Method = "cg-bprr",
    objective: Objective = "all_tokens",
    petals: PetalsConfig | None = None,
    **kwargs,
) -> PipelinePlan:
    """Plan block placement and routing for ``servers`` serving ``model`` under ``load``.

    ``kwargs`` go to :func:`solve_instance` (MILP solver/time limit, ``allow_idle``,
    PETALS join order, ``seed``, simulation size and delays).  For ``method="petals"``
    the PETALS constants default from ``model.hidden_size``/``num_kv_groups``.
    """
    clients = list(clients) if clients else [Client("client")]
    names = [c.name for c in clients]
    if load.client_weights is not None:
        unknown = set(load.client_weights) - set(names)
        if unknown:
            raise PlannerError(f"blocks solver: load field client_weights names unknown "
                               f"client(s) {sorted(unknown)}")
        w = np.array([float(load.client_weights.get(n, 0.0)) for n in names])
        if np.any(w < 0) or w.sum() <= 0:
            raise PlannerError("blocks solver: load field client_weights must be >= 0, "
                               "not all zero")
    else:
        w = np.ones(len(names))
    # Integer request mix for the instance; only its proportions matter downstream.
    mix = np.maximum(np.round(w / w.sum() * 1000).astype(np.int64), (w > 0).astype(np.int64))
    inst = build_instance(servers, model, clients=clients, network=network, requests=mix,
                          objective=objective)
    if method == "petals" and petals is None:
        if model.hidden_size is None:
            raise PlannerError("blocks solver: method 'petals' needs model field hidden_size")
        petals = PetalsConfig(hidden_size=model.hidden_size, num_kv_groups=model.num_kv_groups,
                              kv_bytes_per_token=model.kv_bytes_per_token)
    design = load.concurrency
    if design is None:
        # Load.__post_init__: arrival_rate is set when concurrency is not
        design = design_concurrency(inst, cast(float, load.arrival_rate),
                                    initial_delay_s=kwargs.get("initial_delay_s", 0.0))
        if design < 1:
            design = 1  # nothing can be guaranteed; the plan will report infeasible
    return solve_instance(inst, design, method=method, arrival_rate=load.arrival_rate,
                          petals=petals, **kwargs)
