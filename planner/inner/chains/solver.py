"""Seed 001 as one inner solver: servers + model + load → :class:`ChainPlan` (§3.6 pipeline).

Pipeline (the paper's proposed solution, §3.1–3.2):

1. choose ``c`` (default: Thm 3.7 lower bound, §3.2.3; or eq. 14; or fixed) — :mod:`tuning`;
2. GBP-CR(c) places blocks (Alg. 1) — :mod:`gbp_cr`;
3. GCA composes chains and capacities on that placement (Alg. 2, corrected link
   removal) — :mod:`gca`; optionally the §4.1.2 ILP re-optimises the capacities of
   GCA's chains (``capacities="ilp"``: fewest job servers with ``ν ≥ λ/ρ̄``) — :mod:`ilp`;
4. JFFC dispatches online (Alg. 3) — :mod:`jffc`; its mean response time is predicted
   exactly when the CTMC is small enough (:mod:`ctmc`), else exactly for two chains
   (:mod:`two_chain`), else by the Thm 3.7 lower bound, the paper's best proxy
   (Fig. 6).  Both Thm 3.7 bounds are always reported; ``response_time_method`` says
   which estimate ``response_time`` is.

Times and rates are in the caller's units (see :mod:`servers`).  Pure computation: no
I/O; bad arguments raise :class:`PlannerError`, "valid but no stable plan" raises
:class:`NoPlanError`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from planner.core.errors import NoPlanError, PlannerError
from planner.inner.chains.bounds import jffc_bounds
from planner.inner.chains.ctmc import solve_jffc_ctmc, state_count
from planner.inner.chains.ilp import capacity_ilp
from planner.inner.chains.placement import Chain, slots_after_placement
from planner.inner.chains.servers import ChainModel, Server, max_capacity, validate_inputs
from planner.inner.chains.tuning import CRITERIA, Candidate, choose_c, evaluate_c
from planner.inner.chains.two_chain import two_chain_exact


@dataclass(frozen=True)
class ChainHop:
    """One server on a chain and the blocks (1-based, inclusive) it processes there."""

    server_id: str
    first_block: int
    last_block: int


@dataclass(frozen=True)
class PlannedChain:
    """A chain ``k``: hops, capacity ``c_k`` (concurrent jobs) and mean service time ``T_k``."""

    hops: tuple[ChainHop, ...]
    capacity: int
    service_time: float

    @property
    def server_ids(self) -> tuple[str, ...]:
        return tuple(h.server_id for h in self.hops)

    @property
    def service_rate(self) -> float:
        """``μ_k = 1/T_k`` per job server; the chain carries ``c_k μ_k`` jobs per unit time."""
        return 1.0 / self.service_time


@dataclass(frozen=True)
class ResponseTimePrediction:
    """Predicted JFFC mean response time, the method used and the Thm 3.7 bracket."""

    response_time: float
    method: str
    lower: float
    upper: float
    waiting_time: float | None
    service_time: float | None


@dataclass(frozen=True)
class ChainPlan:
    """Output of :func:`plan_chains`; chains are listed fastest first (JFFC order).

    ``hosted_blocks`` maps every server GBP-CR placed blocks on to its hosted range
    ``(a_j, a_j + m_j − 1)`` (a server of an incomplete trailing chain may carry no
    chain).  ``max_throughput`` is ``ν = Σ c_k μ_k`` and ``load`` is ``λ/ν``;
    ``c_scores`` holds the criterion value of every ``c`` tried.
    """

    c: int
    criterion: str
    capacity_mode: str
    chains: tuple[PlannedChain, ...]
    hosted_blocks: dict[str, tuple[int, int]]
    arrival_rate: float
    rho_bar: float
    max_throughput: float
    load: float
    response_time: float
    response_time_method: str
    response_time_lower: float
    response_time_upper: float
    waiting_time: float | None
    service_time: float | None
    c_scores: dict[int, float]

    @property
    def job_servers(self) -> int:
        """``Σ_k c_k``, the objective (7a)."""
        return sum(k.capacity for k in self.chains)


def predict_response_time(
    rates: Sequence[float],
    capacities: Sequence[int],
    arrival_rate: float,
    *,
    exact_state_limit: int = 5_000,
) -> ResponseTimePrediction:
    """Best available estimate of the JFFC mean response time for fixed chains."""
    b = jffc_bounds(rates, capacities, arrival_rate)
    if not math.isfinite(b.lower):
        return ResponseTimePrediction(math.inf, "unstable", b.lower, b.upper, None, None)
    live = [(r, c) for r, c in zip(rates, capacities, strict=True) if c > 0]
    if state_count([c for _, c in live]) <= exact_state_limit:
        res = solve_jffc_ctmc([r for r, _ in live], [c for _, c in live], arrival_rate)
        return ResponseTimePrediction(
            res.response_time, "ctmc", b.lower, b.upper, res.waiting_time, res.service_time
        )
    if len(live) == 2:
        try:
            t2 = two_chain_exact((live[0][0], live[1][0]), (live[0][1], live[1][1]), arrival_rate)
            return ResponseTimePrediction(
                t2.response_time, "two-chain", b.lower, b.upper, None, None
            )
        except FloatingPointError:
            pass
    return ResponseTimePrediction(b.lower, "thm3.7-lower", b.lower, b.upper, None, None)


def _check_args(
    arrival_rate: float, rho_bar: float, c: int | None, criterion: str, capacities: str
) -> None:
    if not (isinstance(arrival_rate, int | float) and math.isfinite(arrival_rate)
            and arrival_rate > 0):
        raise PlannerError(f"chains: arrival_rate must be a positive number, got {arrival_rate!r}")
    if not (isinstance(rho_bar, int | float) and 0 < rho_bar < 1):
        raise PlannerError(f"chains: rho_bar must be in (0, 1), got {rho_bar!r}")
    if c is not None and (isinstance(c, bool) or not isinstance(c, int) or c < 1):
        raise PlannerError(f"chains: c must be a positive integer, got {c!r}")
    if criterion not in CRITERIA:
        raise PlannerError(f"chains: criterion must be one of {CRITERIA}, got {criterion!r}")
    if capacities not in ("gca", "ilp"):
        raise PlannerError(f"chains: capacities must be 'gca' or 'ilp', got {capacities!r}")


def _to_planned(servers: Sequence[Server], chain: Chain, cap: int) -> PlannedChain:
    hops = tuple(
        ChainHop(servers[j].id, lo, hi)
        for j, (lo, hi) in zip(chain.servers, chain.block_ranges(), strict=True)
    )
    return PlannedChain(hops, cap, chain.service_time)


def plan_chains(
    servers: Sequence[Server],
    model: ChainModel,
    arrival_rate: float,
    *,
    rho_bar: float = 0.7,
    c: int | None = None,
    criterion: str = "lower",
    c_candidates: Iterable[int] | None = None,
    capacities: str = "gca",
    exact_state_limit: int = 5_000,
) -> ChainPlan:
    """Place blocks, compose chains and predict JFFC performance at load ``arrival_rate``.

    ``c`` fixes the reservation parameter; otherwise it is searched over ``c_candidates``
    (default ``1..c_max``) by ``criterion``.
    """
    validate_inputs(servers, model)
    _check_args(arrival_rate, rho_bar, c, criterion, capacities)
    c_max = max_capacity(servers, model)
    if c_max < 1:
        raise NoPlanError("chains: no server can hold one block plus one cache slot")
    cand: Candidate | None
    if c is not None:
        cand = evaluate_c(servers, model, c, arrival_rate, rho_bar, criterion)
        scores = {c: cand.score}
        if not math.isfinite(cand.bounds.lower):  # a fixed c only has to be stable
            cand = None
    else:
        cands = c_candidates if c_candidates is not None else range(1, c_max + 1)
        cand, scores = choose_c(servers, model, arrival_rate, rho_bar, criterion, cands)
    if cand is None:
        raise NoPlanError(
            f"chains: no stable chain plan for arrival_rate={arrival_rate:g} "
            f"(best total service rate is below the load)"
        )

    chains = list(cand.allocation.chains)
    caps = list(cand.allocation.capacities)
    if capacities == "ilp":
        slots = slots_after_placement(servers, model, cand.placement.placement)
        ilp = capacity_ilp(chains, slots, arrival_rate / rho_bar)
        if ilp.capacities is None:
            raise NoPlanError(
                f"chains: ILP found no capacities with total rate >= arrival_rate/rho_bar "
                f"= {arrival_rate / rho_bar:g} on the GCA chains (status {ilp.status})"
            )
        caps = list(ilp.capacities)
    pairs = sorted(
        ((k, ck) for k, ck in zip(chains, caps, strict=True) if ck > 0),
        key=lambda kc: -kc[0].service_rate,
    )
    rates = [k.service_rate for k, _ in pairs]
    ks = [ck for _, ck in pairs]
    pred = predict_response_time(rates, ks, arrival_rate, exact_state_limit=exact_state_limit)
    if not math.isfinite(pred.response_time):
        raise NoPlanError(f"chains: capacities chosen cannot carry arrival_rate={arrival_rate:g}")
    nu = sum(r * ck for r, ck in zip(rates, ks, strict=True))
    pl = cand.placement.placement
    hosted = {
        servers[j].id: (pl.first_block[j], pl.end(j)) for j in pl.used()
    }
    return ChainPlan(
        c=cand.c,
        criterion=criterion,
        capacity_mode=capacities,
        chains=tuple(_to_planned(servers, k, ck) for k, ck in pairs),
        hosted_blocks=hosted,
        arrival_rate=float(arrival_rate),
        rho_bar=float(rho_bar),
        max_throughput=nu,
        load=arrival_rate / nu,
        response_time=pred.response_time,
        response_time_method=pred.method,
        response_time_lower=pred.lower,
        response_time_upper=pred.upper,
        waiting_time=pred.waiting_time,
        service_time=pred.service_time,
        c_scores=scores,
    )
