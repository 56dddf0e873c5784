"""Entities and the router protocol of the request-level simulator (issue 8).

Kept apart, as in Vidur: *entities* (requests, island specs), the *engine* that moves
them through time (``planner.sim.engine``) and the *routers* that decide where a request
goes (``planner.sim.routers``).  Routers see the cluster only through
:class:`ClusterView`, a read-only window on the engine's live state, so every policy
(plan-following, round-robin, JSQ, cache+load-aware, NetKV, mixing-impact, DQN, JFFC)
plugs into the same two decisions:

* ``route_arrival(req, view)``: the island that prefills a new request (a ``prefill`` or
  ``both`` island), or :data:`HOLD` to keep it in the router's central FIFO queue; held
  requests are offered again (head first) every ``hold_interval_s`` of simulated time
  and whenever an island frees capacity (seed 004 §5.3's "no-op" action; JFFC's
  central queue, seed 001 §3.1);
* ``route_decode(req, src, view)``: for a disaggregated plan, the ``decode`` island that
  receives the KV cache of a request prefilled on island ``src`` (seed 003 Alg. 1's
  decision), or :data:`HOLD` to retry after ``hold_interval_s`` (the KV stays on
  ``src`` meanwhile).

Hooks (``on_transfer_done``, ``on_complete``) let stateful routers keep counters (seed
003's self-contention counter ``n_k(p)``).  :class:`BaseRouter` gives no-op hooks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    from planner.fleet.network import Location, NetworkSpec

#: ``route_*`` return value meaning "not now: keep the request at the router".
HOLD = -1

ROLES = ("prefill", "decode", "both")


@dataclass(slots=True, eq=False)
class SimRequest:
    """One request and what happens to it (times in seconds of simulated time; -1 or
    NaN until the event happens)."""

    rid: int
    arrival: float
    input_len: int
    output_len: int
    prefix_hashes: tuple[int, ...] = ()  # block hashes of the prompt (seed 003 §II-B)
    task: int = 0  # workload class (seed 004 §4.1); routers may use it as a hint
    predicted_output: int = -1  # a router-side prediction (seed 004 §5.1); -1: none
    prefill_island: int = -1
    decode_island: int = -1
    t_routed: float = float("nan")  # left the router queue
    t_prefill_start: float = float("nan")
    t_prefill_end: float = float("nan")
    t_kv_start: float = float("nan")
    t_kv_end: float = float("nan")
    t_first_token: float = float("nan")
    t_done: float = float("nan")
    kv_tier: int = -1  # locality tier of the KV transfer (-1: none, colocated)
    kv_bytes: float = 0.0
    cached_tokens: int = 0  # prompt tokens found in the destination's prefix cache
    tokens_out: int = 0
    preemptions: int = 0


@dataclass(frozen=True)
class SimIsland:
    """What the simulator knows of one island (all from the plan and the perf model).

    ``max_batch`` is the island's decode batch (sequences over all its attention groups);
    ``kv_capacity_tokens`` the KV tokens its free HBM holds; ``kv_bytes_per_token`` the
    bytes one token's KV cache occupies *per tensor-parallel shard* (what one GPU-pair
    flow carries, seed 003 §II-B); ``step_coeffs`` the decode step time per group batch
    size (see :func:`planner.sim.cluster.step_time`); ``prefill_s`` the prefill time of a
    request of each input length on one attention group.
    """

    index: int
    name: str
    gpu: str
    size: int
    role: str
    tp: int
    dp: int
    ep: int
    max_batch: int
    kv_capacity_tokens: int
    kv_bytes_per_token: float
    location: Location | None  # None until make_cluster places the island
    prefill_s: np.ndarray = field(repr=False, compare=False)
    step_coeffs: np.ndarray = field(repr=False, compare=False)  # (B+1, 9): STEP_COLUMNS
    range_shares: tuple[float, ...] = ()  # the inner solution's shares per range
    #: Prefill tokens per forward pass (vLLM ``max_num_batched_tokens``); 0: the
    #: engine's.  A plan under a TTFT ceiling runs some islands at a smaller budget.
    token_budget: int = 0
    #: The plan's flow of each range through this island (requests/s at its capacity;
    #: planner.context.operating): the split the plan-following router reproduces.  Empty: the
    #: router derives one from ``range_shares`` and the island's own speed.
    range_flows: tuple[float, ...] = ()
    #: Colocated islands: the engine shares each iteration's token budget between decodes
    #: and prompt chunks (vLLM / SGLang chunked prefill, planner.sim.decode_batching).  False: it
    #: prefills newly admitted prompts whole inside the iteration (Orca, vLLM without
    #: chunked prefill), stalling the running decodes -- seed 004's engine.
    chunked_prefill: bool = True
    #: Chunked prefill with prompt chunks in the decodes' iteration (TRT-LLM, vLLM);
    #: False: an iteration with prompt chunks is a prefill pass of its own and the
    #: decodes wait (SGLang's default scheduler; ``EngineProfile.mixed_prefill``).
    mixed_prefill: bool = True


@dataclass(frozen=True)
class SimCluster:
    """The islands of a plan (or a hand-built scenario) and the network between them.
    ``range_edges`` (J+1,) are the plan's input-length range edges (``[a_j, a_{j+1})``;
    empty for a scenario without ranges)."""

    islands: tuple[SimIsland, ...]
    network: NetworkSpec
    model: str
    range_edges: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    label: str = ""


@dataclass
class SimResult:
    """Everything a run produced; :mod:`planner.sim.metrics` turns it into figures.

    ``requests`` holds every generated request (unfinished ones have ``t_done`` NaN);
    ``util_timeline`` is each island's busy fraction per ``util_bin_s`` bin;
    ``decision_times_s`` the wall time of every routing decision.
    """

    cluster: SimCluster
    requests: list[SimRequest]
    router: str
    seed: int
    t_end: float
    warmup_s: float
    busy_s: np.ndarray  # (I,)
    util_bin_s: float
    util_timeline: np.ndarray  # (I, bins)
    decision_times_s: np.ndarray
    wall_s: float
    events: int
    offered_rps: float = float("nan")


@runtime_checkable
class ClusterView(Protocol):
    """Read-only window on the engine's state at the current event (live, not copied)."""

    now: float
    islands: tuple[SimIsland, ...]
    router_queue: int  # requests held at the router

    # read-only: the engine assembles these on each read (plain attributes also fit)
    @property
    def queued(self) -> np.ndarray:
        """(I,) requests waiting at each island (prefill or decode admission)."""
        ...

    @property
    def running(self) -> np.ndarray:
        """(I,) sequences in the running decode batch."""
        ...

    @property
    def outstanding_tokens(self) -> np.ndarray:
        """(I,) prompt tokens to prefill + decode tokens to go."""
        ...

    @property
    def kv_free_tokens(self) -> np.ndarray:
        """(I,) KV tokens still free (reserved by admitted requests)."""
        ...

    def step_time(self, island: int, batch: int, context: float) -> float:
        """Decode step time of ``island`` at ``batch`` sequences of ``context`` tokens."""
        ...

    def prefill_time(self, island: int, tokens: int) -> float: ...

    def tier(self, a: int, b: int) -> int: ...

    def prefix_hit_tokens(self, island: int, hashes: tuple[int, ...]) -> int:
        """Prompt tokens of ``hashes`` already in ``island``'s prefix cache (LCP)."""
        ...

    def congestion_estimate(self) -> np.ndarray:
        """Per-tier external utilisation ``ĉ_k`` as last refreshed (seed 003 §III-C)."""
        ...

    def inflight_transfers(self, src: int) -> np.ndarray:
        """(4,) KV transfers in flight from ``src`` per tier."""
        ...


#: Capability of a router that places KV caches between prefill and decode islands
#: (seed 003's NetKV and its ablations): a plan without such islands -- a pipeline
#: plan's chains -- gives it nothing to decide.
KV_PLACEMENT = "kv-placement"


@runtime_checkable
class Router(Protocol):
    """A routing policy (module docstring)."""

    name: str
    hold_interval_s: float

    def reset(self, view: ClusterView, rng: np.random.Generator) -> None: ...

    def route_arrival(self, req: SimRequest, view: ClusterView) -> int: ...

    def route_decode(self, req: SimRequest, src: int, view: ClusterView) -> int: ...

    def on_transfer_done(self, req: SimRequest, src: int, dst: int) -> None: ...

    def on_complete(self, req: SimRequest) -> None: ...


class BaseRouter:
    """No-op hooks and helpers shared by the routers."""

    name = "base"
    hold_interval_s = 0.02

    def reset(self, view: ClusterView, rng: np.random.Generator) -> None:
        self.rng = rng

    def route_decode(self, req: SimRequest, src: int, view: ClusterView) -> int:
        raise NotImplementedError(f"router {self.name!r} has no decode decision")

    def on_transfer_done(self, req: SimRequest, src: int, dst: int) -> None:
        return None

    def on_complete(self, req: SimRequest) -> None:
        return None


__all__ = ["HOLD", "ROLES", "BaseRouter", "ClusterView", "Router", "SimCluster", "SimIsland",
           "SimRequest", "SimResult"]
