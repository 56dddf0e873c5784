"""The inner solver's answer: pipelines with capacities, throughput and response time.

A :class:`PipelinePlan` is what the outer loop consumes.  Blocks are reported 1-based
and inclusive-exclusive as ``first_block`` + ``n_blocks`` (the paper's ``a_j``,
``m_j``); block ``b`` is model layer ``b − 1``.

Two views of routing are kept:

* ``pipelines`` — the method's own routing of the design load (``|R|`` concurrent
  requests): for CG-BPRR one chain per client (Alg. 1 line 13), for the MILP the
  chains of (13), for PETALS its sequential heuristic;
* ``capacity_pipelines`` — the placement saturated with sessions by
  :func:`~.routing.fill_capacity`; its total is ``concurrency_capacity``.

Throughput follows the paper's no-contention model (§2.2, Fig. 2: per-token time does
not depend on concurrency while memory suffices): a session slot on a chain with
response time ``W`` turns over every ``W`` seconds, so the saturated request rate is
``Σ_p n_p / W_p`` (Little's law) and tokens/s is that times ``l_max``.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ServerBlocks:
    """Placement on one server: ``a_j``, ``m_j`` and cache slots (block-sessions)."""

    server: str
    first_block: int
    n_blocks: int
    cache_slots: int


@dataclass(frozen=True)
class Hop:
    """One server of a chain and the blocks it processes (overlap rule of §3.1)."""

    server: str
    first_block: int
    n_blocks: int


@dataclass(frozen=True)
class Pipeline:
    """A chain of servers for one client, with sessions routed on it and eq. (1) times."""

    client: str
    hops: tuple[Hop, ...]
    sessions: int
    ttft_s: float
    tbt_s: float
    response_s: float
    per_token_s: float

    @property
    def servers(self) -> tuple[str, ...]:
        return tuple(h.server for h in self.hops)


@dataclass(frozen=True)
class PipelinePlan:
    """Result of :func:`~.solver.solve_blocks`.

    Times in seconds.  ``mean_*`` are over the design load's requests (no waiting:
    the design load fits by construction for CG-BPRR and the MILP).  ``bound_17`` and
    ``completion_bound_22`` are set for CG-BPRR / CG-BP placements only;
    ``lower_bound_b8`` is a valid lower bound on any method's ``mean_per_token_s``
    under the instance objective (Lemma B.1).  ``simulated_*`` come from an online
    simulation (Alg. 2 for CG-BPRR) when requested, else ``None``.

    For PETALS the design requests are routed one after another as if they arrived
    together; those that find no cache wait (eq. (20)) and ``mean_response_s`` /
    ``mean_ttft_s`` include the mean wait, so ``feasible`` only means "every block is
    placed and every request got a chain".  ``utilisation`` is
    ``arrival_rate · mean_response_s / concurrency_capacity`` (Little's law); above 1
    the placement cannot keep up without queueing.
    """

    method: str
    objective: str
    feasible: bool
    design_concurrency: int
    placement: tuple[ServerBlocks, ...]
    pipelines: tuple[Pipeline, ...]
    capacity_pipelines: tuple[Pipeline, ...]
    concurrency_capacity: int
    throughput_rps: float
    throughput_tokens_per_s: float
    mean_response_s: float
    mean_ttft_s: float
    mean_tbt_s: float
    mean_per_token_s: float
    bound_17: float | None
    completion_bound_22: float | None
    lower_bound_b8: float
    feasible_18: bool
    max_concurrency_18: int
    max_concurrency_19: int
    arrival_rate: float | None = None
    utilisation: float | None = None
    simulated_mean_response_s: float | None = None
    simulated_mean_ttft_s: float | None = None
    simulated_mean_wait_s: float | None = None
    simulated_per_token_s: float | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
