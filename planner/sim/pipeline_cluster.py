"""Simulate a pipeline plan (seeds 000/001): each seed-001 chain becomes one colocated island.

A pipeline plan (``request.inner`` ``seed000`` or ``seed001``, docs/plan-schema.md)
records which blocks each island hosts but not its chains, capacities or times.  We
rebuild them deterministically and hand the engine one ``both`` island per chain.

**Rebuilding the chains.**  The planning context (model, workload, ranges, the
inventory's GPU types with their datasheets and prices) is rebuilt from
``plan.request`` with :meth:`planner.context.evaluate.PlanningContext.build`, the network with
:meth:`DataCentreNetwork.from_spec` as :func:`planner.plan.make_plan` does, and
:meth:`ChainsSolver.plan` is re-run on the plan's *whole* layout (idle islands
included: that is the input the planner gave it, and GBP-CR's placement depends on
every server it may use; re-planning on the non-idle islands alone could give other
chains).  Seed 001 is deterministic, so for a seed-001 plan we check the result
against the plan -- the same islands carry blocks, with the same ``config`` strings,
and ``ν`` equals ``summary.requests_per_s`` -- and refuse a plan that does not match
(made by another planner version).

**Seed-000 plans.**  Seed 000 has no chain capacities or online dispatch of its own
to simulate (its sessions are routed at design time, Alg. 2); we re-plan the plan's
layout with seed 001's chains and JFFC instead.  The simulated system is then seed
001's plan *on the same GPUs*, not seed 000's block placement: ``SimCluster.label``
says so, and the plan's ``summary.requests_per_s`` (seed 000's capacity, the rate the
user's ``0.8x`` refers to) is not that of the simulated chains.

**One chain -> one ``both`` island** (seed 001 §2.1: a chain ``k`` serves at most
``c_k`` jobs at once, each at a per-token speed that does not depend on how many run):

* ``max_batch = c_k``, ``tp = ep = 1``, ``dp = G`` the chain's prefill groups (next
  items; 1 with ``parallel_prefill=False``), ``size`` the GPUs of its hops (a GPU of an
  island shared by several chains is counted in each);
* ``step_coeffs``: ``c_k + 1`` identical rows ``(t_tok, 0, ..., 0)`` (the columns
  ``STEP_COLUMNS`` of :func:`planner.sim.cluster.step_time`, all but ``lin_fixed``
  zero), so every step takes
  ``t_tok = Σ_hops (m_h τ_h + RTT + 2H/B)`` whatever the batch and context -- the
  no-contention model of seed 001: ``m_h`` blocks at hop ``h`` times the per-block
  decode time ``τ_h`` (:func:`island_server`, already charged at the island's
  operating batch, as the planner priced it), plus one hidden state (``H`` bf16
  values) relayed per hop per token (:func:`chains_comm_time`);
* ``prefill_s[L] = Σ_hops (RTT + L (m_h t^I_h + 2H/B) / g_h)`` (``L = 0`` priced as 1),
  linear in ``L`` as footnote 11 is.  ``t^I_h`` is the *raw* per-block per-token prefill
  time of hop ``h``'s island (``prefill_per_token_s / b_g``: without the contention
  factor ``b_g`` the mapping adds, because the engine stalls the running decodes of a
  colocated island during a prefill itself).  ``g_h`` are the attention groups of hop
  ``h`` the chain's sessions occupy, ``clip(c_k / b_g, 1, dp_h)``: a real island
  prefills on its ``dp_h`` groups in parallel, but the engine prefills a colocated
  island's admissions as one serial pass, so without ``g_h`` a chain of ``c_k``
  sessions would see every one of their prefills in full -- ``c_k`` stalls per
  lifetime instead of the ``b_g`` the planner charged, a ``dp``-fold underestimate of
  the prefill capacity.  With ``g_h``, a saturated chain's throughput in the engine is
  ``c_k / (Σ_h (RTT + L̄ m_h b_g t^I_h + ...) + d̄ t_tok)``, seed 001's ``c_k μ_k`` up to
  one token step (next item).  The price: a lone prompt's own prefill (its TTFT) is
  ``g_h`` times too short.  ``parallel_prefill=False`` gives the literal one-group
  reading (``g_h = 1``) for comparison;
* the groups also admit prompts in parallel: the engine batches at most
  ``prefill_token_budget`` prompt tokens into one iteration (vLLM's 8192 per group), so
  a chain gets ``dp = G = ⌊one-group prefill time / chain prefill time⌋`` (``= g`` for a
  one-hop chain) and :func:`prefill_token_budget` (``8192 G``, the widest chain's; the
  engine has one budget for all islands) is what ``run_plan`` passes the engine.
  Without it a saturated 1044-slot chain admits ~4.6 mean prompts per iteration and
  delivers 0.74 of ``ν`` (measured on the test plan); seed 001 needs ``c_k / d̄``;
* the engine's first token comes one decode step after the prefill, footnote 11's with
  it, so a simulated job takes one ``t_tok`` more than seed 001's ``T_k`` (``d̄``
  steps, not ``d̄ - 1``; under 1 % at ``d̄ = 100``);
* ``kv_capacity_tokens = c_k (max_input + decode_reserve + 1)``: seed 001 reserves
  each job's cache statically for the maximum lengths (§2.1.2), so memory never binds
  and the engine never preempts;
* chains run independently: a server shared by several chains does not slow down when
  they all run, as seed 001 assumes (its ``τ_h`` is charged at the island's full
  operating batch, which bounds the sessions GCA gives it).  No KV moves between
  chains, so the islands' locations (``make_cluster``'s placement) do not matter.

What to expect (tests/sim/test_sim_jffc.py, the one-chain plan of thesis-fig4.2 at 64 $/h):
offered 2ν, the chain completes 1.01ν; at λ = 0.7ν the mean response is 18.4 s where
seed 001 predicts 43.3 s.  The prediction prices every job with the prefill stalls of
a full chain (``T_k`` is the lifetime at saturation); below saturation a job waits only
for the prompts that actually arrive, ``(t_pre + d̄ t_tok) / (1 - λ t_pre)``.

Pure computation: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from perfmodel.models import ModelSpec
from perfmodel.timing import STEP_COLUMNS, kv_bytes_per_token_per_gpu
from planner.context.evaluate import PlanningContext
from planner.context.request import PlanRequest
from planner.core.errors import NoPlanError, PlannerError
from planner.fleet.inventory import inventory_from_dict
from planner.fleet.network import DEFAULT_NETWORK, NetworkSpec, parse_network
from planner.inner.chains import ChainPlan, PlannedChain
from planner.inner.pipeline_map import DataCentreNetwork, IslandServer, PipelineWorkload
from planner.inner.pipeline_solvers import ChainsSolver
from planner.inner.problem import InnerProblem, IslandSpec
from planner.inner.protocol import NEEDS_CONTEXT
from planner.inner.registry import INNER_SOLVERS, needs_context
from planner.sim.cluster import make_cluster, plan_calibration
from planner.sim.protocol import SimCluster, SimIsland

#: Prompt tokens one attention group prefills per iteration (the engine's default, vLLM's
#: ``max_num_batched_tokens``).
PREFILL_TOKENS_PER_GROUP = 8192


@dataclass(frozen=True)
class ChainReplan:
    """Seed 001's chains of a plan's layout and what they were priced with.

    ``servers[k]`` is ``plan.islands[k]`` seen as a pipeline server (id ``"i{k}"``);
    ``edges`` the plan's range edges; ``max_input`` the last range's end."""

    chains: ChainPlan
    servers: tuple[IslandServer, ...]
    workload: PipelineWorkload
    model: ModelSpec
    network: DataCentreNetwork
    max_input: int
    edges: np.ndarray
    inner: str
    label: str


def _get(d: Any, key: str, where: str) -> Any:
    if not isinstance(d, Mapping) or key not in d:
        raise PlannerError(f"{where}.{key} is missing")
    return d[key]


def replan_chains(plan: Mapping[str, Any]) -> ChainReplan:
    """Rebuild the planning context of ``plan`` (a plan.json dict) and re-run seed 001's
    chain planning on its layout (module docstring)."""

    if not isinstance(plan, Mapping):
        raise PlannerError("plan must be a JSON object")
    req = _get(plan, "request", "plan")
    inner = _get(req, "inner", "plan.request")
    if not needs_context(inner):
        raise PlannerError(f"plan.request.inner is {inner!r}, not a pipeline plan "
                           f"({' or '.join(INNER_SOLVERS.having(NEEDS_CONTEXT))})")
    inventory = inventory_from_dict(_get(req, "inventory", "plan.request"),
                                    "plan.request.inventory")
    ranges = _get(req, "ranges", "plan.request")
    if isinstance(ranges, bool) or not isinstance(ranges, int):
        raise PlannerError(f"plan.request.ranges must be an integer, got {ranges!r}")
    model = str(_get(req, "model", "plan.request"))
    ctx = PlanningContext.for_request(PlanRequest(inventory, model=model,
                               workload=str(_get(req, "workload", "plan.request")),
                               ranges=ranges, inner=inner,
                               engine=plan_calibration(plan).engine))
    raw = _get(plan, "islands", "plan")
    if not isinstance(raw, list) or not raw:
        raise PlannerError("plan.islands must be a non-empty list")
    specs = []
    for i, isl in enumerate(raw):
        where = f"plan.islands[{i}]"
        gpu, size = _get(isl, "gpu", where), _get(isl, "size", where)
        if gpu not in ctx.gpus:
            raise PlannerError(f"{where}.gpu {gpu!r} is not in plan.request.inventory")
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise PlannerError(f"{where}.size must be an integer >= 1, got {size!r}")
        specs.append(IslandSpec(str(gpu), size))
    r = ctx.ranges
    zeros = np.zeros((len(specs), len(r.prob)))
    problem = InnerProblem(tuple(specs), r.prob, r.start, r.end, r.mid, zeros, zeros)
    net = DataCentreNetwork.from_spec(parse_network(inventory.network))
    try:
        chains, servers = ChainsSolver(ctx, net).plan(problem)
    except NoPlanError as err:
        raise PlannerError(f"plan.islands: seed 001 finds no chains on this layout: {err}"
                           ) from None
    if inner == "seed001":
        _check_same(plan, raw, chains, servers)
    w = ctx.workload
    wl = PipelineWorkload.from_pmf(w.pmf, w.decode_mean, w.decode_max)
    edges = np.concatenate([r.start, r.end[-1:]]).astype(float)
    label = str(req.get("workload", ""))
    label += " (seed 001 chains)" if inner == "seed001" else \
        " (seed 000 plan re-planned as seed 001 chains)"
    return ChainReplan(chains, tuple(servers), wl, ctx.model, net,
                       int(math.ceil(float(r.end[-1]))), edges, inner, label)


def _check_same(plan: Mapping[str, Any], raw: list, chains: ChainPlan,
                servers: Sequence[IslandServer]) -> None:
    """The re-planned chains are the plan's (same stages, same capacity)."""
    used = {h for k in chains.chains for h in k.server_ids}
    for k, isl in enumerate(raw):
        s = servers[k]
        want = ""
        if s.name in used:
            a, b = chains.hosted_blocks[s.name]
            want = f"pipeline blocks {a}-{b} tp{s.tp}-ep{s.ep}"
        have = str(isl.get("config") or "") if isl.get("role") != "idle" else ""
        if have != want:
            raise PlannerError(f"plan.islands[{k}].config: the plan says {have or 'idle'!r} "
                               f"but re-planning its layout with seed 001 gives "
                               f"{want or 'idle'!r} (plan made by another planner version?)")
    try:
        nu = float(plan["summary"]["requests_per_s"])
    except (KeyError, TypeError, ValueError):
        return  # a hand-made plan without a summary: the stages matched
    if not math.isclose(nu, chains.max_throughput, rel_tol=1e-6):
        raise PlannerError(f"plan.summary.requests_per_s is {nu:.6g} but the re-planned "
                           f"chains carry ν = {chains.max_throughput:.6g} req/s (plan made "
                           "by another planner version?)")


def chain_times(chain: PlannedChain, servers: Mapping[str, IslandServer], model: ModelSpec,
                net: DataCentreNetwork, *, parallel_prefill: bool = True
                ) -> tuple[float, float, float, float]:
    """``(t_tok, pre_per_token, pre_fixed, pre_contended_per_token)`` of a chain (seconds):
    the step time, the simulated prefill ``pre_fixed + L pre_per_token`` and the per-token
    prefill seed 001 priced (with the contention factors ``b_g``; module docstring)."""
    wire = 2.0 * model.hidden / net.bandwidth_bytes_s  # one hidden state over one hop
    t_tok = pre_tok = pre_fixed = pre_planned = 0.0
    for hop in chain.hops:
        s = servers[hop.server_id]
        m = hop.last_block - hop.first_block + 1
        dp = max(1, s.size // s.tp)
        b_g = max(1.0, math.ceil(s.batch / dp))
        raw = s.prefill_per_token_s / b_g
        groups = min(max(chain.capacity / b_g, 1.0), float(dp)) if parallel_prefill else 1.0
        t_tok += m * s.tau_decode_s + net.rtt_s + wire
        pre_tok += (m * raw + wire) / groups
        pre_planned += m * s.prefill_per_token_s + wire
        pre_fixed += net.rtt_s
    return t_tok, pre_tok, pre_fixed, pre_planned


def chain_island(index: int, chain: PlannedChain, servers: Mapping[str, IslandServer],
                 model: ModelSpec, net: DataCentreNetwork, max_input: int,
                 decode_reserve: int, *, parallel_prefill: bool = True) -> SimIsland:
    """The ``both`` island standing for ``chain`` (module docstring)."""
    t_tok, pre_tok, pre_fixed, _ = chain_times(chain, servers, model, net,
                                               parallel_prefill=parallel_prefill)
    _, one_group, _, _ = chain_times(chain, servers, model, net, parallel_prefill=False)
    c = int(chain.capacity)
    # prefill groups working in parallel, all hops together (1 unless parallel_prefill)
    groups = max(1, min(c, int(one_group / pre_tok * (1.0 + 1e-9))))
    lengths = np.maximum(np.arange(max_input + 1, dtype=np.float64), 1.0)
    prefill = pre_fixed + pre_tok * lengths
    coeffs = np.zeros((-(-c // groups) + 1, len(STEP_COLUMNS)))  # rows by group batch
    coeffs[:, 0] = t_tok
    for a in (prefill, coeffs):
        a.setflags(write=False)
    hops = [servers[h.server_id] for h in chain.hops]
    gpus = "+".join(dict.fromkeys(s.gpu for s in hops))
    name = f"chain{index} " + " > ".join(
        f"{s.gpu}x{s.size}#{s.name[1:]}[{h.first_block}-{h.last_block}]"
        for s, h in zip(hops, chain.hops, strict=True))
    return SimIsland(index=index, name=name, gpu=gpus, size=sum(s.size for s in hops),
                     role="both", tp=1, dp=groups, ep=1, max_batch=c,
                     kv_capacity_tokens=c * (int(max_input) + int(decode_reserve) + 1),
                     kv_bytes_per_token=float(kv_bytes_per_token_per_gpu(model, 1)),
                     location=None, prefill_s=prefill, step_coeffs=coeffs)


def prefill_token_budget(cluster: SimCluster) -> int:
    """The engine's ``prefill_token_budget`` for a cluster of chains: vLLM's 8192 tokens
    per iteration (the engine's default) for each prefill group of the widest chain."""
    return PREFILL_TOKENS_PER_GROUP * max(int(x.dp) for x in cluster.islands)


def cluster_from_chains(rp: ChainReplan, *, network: NetworkSpec = DEFAULT_NETWORK,
                        max_input: int | None = None,
                        parallel_prefill: bool = True) -> SimCluster:
    """One ``both`` island per chain of ``rp`` (fastest chain first, seed 001's order)."""
    top = rp.max_input if max_input is None else int(max_input)
    if top < 1:
        raise PlannerError(f"max_input must be >= 1, got {top}")
    by_id = {s.name: s for s in rp.servers}
    islands = [chain_island(k, ch, by_id, rp.model, rp.network, top,
                            rp.workload.output_reserve, parallel_prefill=parallel_prefill)
               for k, ch in enumerate(rp.chains.chains)]
    if not islands:
        raise PlannerError("plan.islands: the re-planned layout has no chain")
    return make_cluster(islands, network, rp.model.name, range_edges=rp.edges,
                        label=rp.label)


def cluster_from_pipeline_plan(plan: Mapping[str, Any], *,
                               network: NetworkSpec = DEFAULT_NETWORK,
                               max_input: int | None = None,
                               parallel_prefill: bool = True) -> SimCluster:
    """The cluster a pipeline plan.json describes: one ``both`` island per seed-001 chain
    (module docstring).  ``max_input`` defaults to the plan's last range end."""
    return cluster_from_chains(replan_chains(plan), network=network, max_input=max_input,
                               parallel_prefill=parallel_prefill)


__all__ = ["PREFILL_TOKENS_PER_GROUP", "ChainReplan", "chain_island",
           "chain_times", "cluster_from_chains", "cluster_from_pipeline_plan",
           "prefill_token_budget", "replan_chains"]
