"""Seeds 000 and 001 behind the inner-solver protocol (issue 7 item 3).

The pipeline solvers cannot work from the ``b_ij`` tables of an :class:`InnerProblem`:
they need per-block times and memory, so they are built with the planning context
(``BlocksSolver(context)``) and map each island of ``problem.islands`` to a server with
:mod:`planner.inner.pipeline_map`.

Representation in :class:`InnerResult` (the least invasive honest one; plan.json, the
report and the exact outer search only know the roles ``prefill``/``decode``/``idle``):

* every request runs prefill *and* decode on its chain, so the workload mix is served
  as it comes: per range ``R^P_j = R^D_j = p_j T`` with ``T`` the pipeline throughput
  (requests/s), hence ``R_prefill = R_decode = R_total = R_sustained = T`` and
  ``D_total = 0``;
* an island that carries at least one chain gets role ``"prefill"`` (read: "pipeline
  stage, serves both phases"), its ``config`` says ``pipeline blocks a-b`` and its
  ``shares`` are ``p`` (its time split over ranges in proportion to the mix, an
  approximation: longer prompts take longer); islands without blocks are ``"idle"``;
* ``status`` is ``"time_limit"`` (a feasible answer of a heuristic, not a proven
  optimum); chains, capacities and mean response time go to ``note`` and ``extra``.

``T`` is the *capacity* of the plan, as for the MILPs: seed 000 saturates the placement
with sessions (:func:`~planner.inner.blocks.routing.fill_capacity`, Little's law); seed
001 reports ``ν = Σ c_k μ_k`` (eq. 7b).  Response times are at a design load:
seed 000 at its design concurrency ``|R|`` (no waiting), seed 001 at
``λ = ρ̄ ν`` (JFFC, CTMC or Thm 3.7 lower bound).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar, Protocol

import numpy as np

from perfmodel import GPU, Calibration, ModelSpec
from planner.core.errors import NoPlanError
from planner.inner.blocks import Load, solve_blocks
from planner.inner.chains import ChainPlan, plan_chains
from planner.inner.pipeline_map import (
    DataCentreNetwork,
    IslandServer,
    PipelineWorkload,
    blocks_model,
    blocks_server,
    chains_model,
    chains_server,
    island_server,
)
from planner.inner.problem import InnerProblem
from planner.inner.protocol import NEEDS_CONTEXT
from planner.inner.result import InnerResult, IslandAssignment, infeasible_result
from planner.workload import Workload


def geometric_grid(top: int, points: int = 12) -> list[int]:
    """Distinct integers from 1 to ``top``, roughly geometric (searching every value of
    ``|R|`` or ``c`` is linear in memory size; the throughput is flat between them)."""
    if top < 1:
        return []
    return sorted({int(round(v)) for v in np.geomspace(1, top, points)} | {top})


def _pipeline_result(problem: InnerProblem, solver: str, T: float,
                     stages: dict[int, tuple[str, int]], t0: float, note: str,
                     extra: dict[str, float]) -> InnerResult:
    """The result of the module docstring for throughput ``T`` and island -> (config,
    cache slots) of the islands that carry chains."""
    p = problem.range_prob
    J = problem.n_ranges
    islands = []
    for i, spec in enumerate(problem.islands):
        if i in stages:
            cfg, slots = stages[i]
            islands.append(IslandAssignment(spec.gpu, spec.size, "prefill", cfg, int(slots),
                                            tuple(map(float, p))))
        else:
            islands.append(IslandAssignment(spec.gpu, spec.size, "idle", "", 0, (0.0,) * J))
    per_range = tuple(map(float, p * T))
    m_in = float(p @ problem.input_tokens())
    wall = time.perf_counter() - t0
    return InnerResult(
        solver=solver, status="time_limit", reason="", islands=tuple(islands),
        range_start=tuple(map(float, problem.range_start)),
        range_end=tuple(map(float, problem.range_end)), range_prob=tuple(map(float, p)),
        prefill_rps=per_range, decode_rps=per_range, R_prefill=T, R_decode=T, R_total=T,
        R_sustained=T, prefill_tokens_per_s=T * m_in,
        decode_tokens_per_s=T * problem.decode_mean,
        total_tokens_per_s=T * (m_in + problem.decode_mean),
        sustained_tokens_per_s=T * (m_in + problem.decode_mean), D_total=0.0,
        objective=T, mip_gap=math.inf, solve_time_s=wall, wall_time_s=wall,
        note="; ".join(n for n in (problem.note, note) if n), extra=extra)


class PipelineContext(Protocol):
    """What the pipeline solvers read of the planning context (a
    :class:`planner.context.evaluate.PlanningContext` satisfies it; the inner layer names only
    what it uses, so it does not depend on the layer above)."""

    @property
    def model(self) -> ModelSpec: ...
    @property
    def workload(self) -> Workload: ...
    @property
    def gpus(self) -> Mapping[str, GPU]: ...
    @property
    def calib(self) -> Calibration: ...


@dataclass
class _PipelineBase:
    """Shared mapping: context (:class:`PipelineContext`), network, decode batch
    override (``None``: each island's own batch, see :mod:`planner.inner.pipeline_map`)."""

    capabilities: ClassVar[frozenset[str]] = frozenset({NEEDS_CONTEXT})

    context: PipelineContext
    network: DataCentreNetwork = DataCentreNetwork()
    batch: int | None = None

    def _map(self, problem: InnerProblem):
        ctx = self.context
        w = ctx.workload
        wl = PipelineWorkload.from_pmf(w.pmf, w.decode_mean, w.decode_max)
        servers = [island_server(f"i{k}", ctx.gpus[s.gpu], s.size, ctx.model, wl,
                                 batch=self.batch, calib=ctx.calib)
                   for k, s in enumerate(problem.islands)]
        return wl, servers


@dataclass
class BlocksSolver(_PipelineBase):
    """Seed 000, CG-BPRR (Alg. 1): the best saturated throughput over a grid of design
    concurrencies ``|R| ≤ (18)``'s largest."""

    name: str = "seed000"

    def solve(self, problem: InnerProblem) -> InnerResult:
        t0 = time.perf_counter()
        if not problem.islands:
            return infeasible_result(problem, self.name, "empty layout: no islands to assign")
        wl, isl = self._map(problem)
        model = blocks_model(self.context.model, wl)
        servers = [blocks_server(s) for s in isl]
        net = self.network.to_blocks()
        first = solve_blocks(servers, model, Load(concurrency=1), network=net)
        best = None
        # Sessions beyond the islands' batches add nothing (pipeline_map, "contention").
        top = min(first.max_concurrency_18, sum(s.batch for s in isl))
        for r in geometric_grid(top):
            plan = first if r == 1 else solve_blocks(servers, model, Load(concurrency=r),
                                                     network=net)
            if plan.feasible and (best is None or plan.throughput_rps > best.throughput_rps):
                best = plan
        if best is None or best.throughput_rps <= 0:
            return infeasible_result(
                problem, self.name, "the islands together cannot hold the model's blocks "
                "plus one session's cache (seed 000 condition (18))",
                wall_time_s=time.perf_counter() - t0)
        idx = {s.name: k for k, s in enumerate(isl)}
        stages = {}
        used = {h.server for p in best.capacity_pipelines for h in p.hops}
        for b in best.placement:
            if b.server in used:
                k = idx[b.server]
                stages[k] = (f"pipeline blocks {b.first_block}-{b.first_block + b.n_blocks - 1}"
                             f" tp{isl[k].tp}-ep{isl[k].ep}", b.cache_slots)
        chains = sorted({" > ".join(p.servers) for p in best.capacity_pipelines})
        note = (f"seed000 CG-BPRR: |R|={best.design_concurrency}, capacity "
                f"{best.concurrency_capacity} sessions on {len(chains)} chain(s) "
                f"[{'; '.join(chains)}], mean response {best.mean_response_s:.3f} s, "
                f"TTFT {best.mean_ttft_s:.3f} s at |R|")
        extra = {"design_concurrency": float(best.design_concurrency),
                 "session_capacity": float(best.concurrency_capacity),
                 "n_chains": float(len(chains)),
                 "mean_response_s": float(best.mean_response_s),
                 "mean_ttft_s": float(best.mean_ttft_s),
                 "mean_tbt_s": float(best.mean_tbt_s)}
        return _pipeline_result(problem, self.name, float(best.throughput_rps), stages, t0,
                                note, extra)


@dataclass
class ChainsSolver(_PipelineBase):
    """Seed 001, GBP-CR + GCA + JFFC.  The choice of ``c`` depends on the load (§3.2.3),
    and the load we want is a fraction ``rho_bar`` of the capacity the plan reaches, so
    the design load is found by a fixed point: start at ``c = 1``'s capacity and re-plan
    at ``λ = ρ̄ ν`` until ``ν`` stops growing (at most ``iterations`` rounds)."""

    rho_bar: float = 0.7
    iterations: int = 6
    name: str = "seed001"

    def plan(self, problem: InnerProblem) -> tuple[ChainPlan, list[IslandServer]]:
        """The chain plan of ``problem.islands`` and the island servers it was made on
        (server ``"i{k}"`` is ``problem.islands[k]``); only the islands are read.
        Deterministic (no random choice), so a plan.json's chains can be rebuilt from
        its layout (``planner.sim.pipeline_cluster``).  Raises :class:`NoPlanError` when
        no chain plan exists."""
        wl, isl = self._map(problem)
        ctx_model = self.context.model
        model = chains_model(ctx_model, wl)
        servers = [chains_server(s, ctx_model, wl, self.network) for s in isl]
        plan = plan_chains(servers, model, 1e-9, rho_bar=self.rho_bar, c=1)
        best_free = max(s.memory for s in servers)
        c_max = int((best_free - model.block_memory) // model.cache_slot_memory)
        grid = geometric_grid(c_max, 16)
        for _ in range(self.iterations):
            try:
                nxt = plan_chains(servers, model, self.rho_bar * plan.max_throughput,
                                  rho_bar=self.rho_bar, c_candidates=grid)
            except NoPlanError:
                break
            grew = nxt.max_throughput > plan.max_throughput * 1.01
            if nxt.max_throughput >= plan.max_throughput:
                plan = nxt
            if not grew:
                break
        if plan.arrival_rate < 1e-6:  # only the c = 1 probe: price it at the design load
            plan = plan_chains(servers, model, self.rho_bar * plan.max_throughput,
                               rho_bar=self.rho_bar, c=1)
        return plan, isl

    def solve(self, problem: InnerProblem) -> InnerResult:
        t0 = time.perf_counter()
        if not problem.islands:
            return infeasible_result(problem, self.name, "empty layout: no islands to assign")
        try:
            plan, isl = self.plan(problem)
        except NoPlanError as exc:
            return infeasible_result(problem, self.name, str(exc),
                                     wall_time_s=time.perf_counter() - t0)
        idx = {s.name: k for k, s in enumerate(isl)}
        stages = {}
        used = {h for k in plan.chains for h in k.server_ids}
        for sid, (a, b) in plan.hosted_blocks.items():
            if sid in used:
                k = idx[sid]
                stages[k] = (f"pipeline blocks {a}-{b} tp{isl[k].tp}-ep{isl[k].ep}",
                             sum(ch.capacity for ch in plan.chains if sid in ch.server_ids))
        chains = [f"{' > '.join(k.server_ids)} (c={k.capacity})" for k in plan.chains]
        note = (f"seed001 GBP-CR+GCA+JFFC: c={plan.c}, {len(chains)} chain(s) "
                f"[{'; '.join(chains)}], mean response {plan.response_time:.3f} s "
                f"({plan.response_time_method}) at λ={plan.arrival_rate:.3g}/s")
        extra = {"c": float(plan.c), "n_chains": float(len(chains)),
                 "job_servers": float(plan.job_servers),
                 "design_arrival_rps": float(plan.arrival_rate),
                 "mean_response_s": float(plan.response_time),
                 "response_time_lower_s": float(plan.response_time_lower)}
        return _pipeline_result(problem, self.name, float(plan.max_throughput), stages, t0,
                                note, extra)

