"""Conditionally optimal cache allocation on fixed chains (seed 001, §4.1.2 "Optimal ILP", eq. 7).

With the chain set ``𝒦`` fixed (GCA's output), ``T_k`` and the per-server slot usage
``m_ij`` of every chain are constants and problem (7) collapses to an integer program
over the capacities alone:

    min  Σ_k c_k
    s.t. Σ_k μ_k c_k ≥ λ/ρ̄                                   (7b)
         Σ_{k ∋ j} m_{kj} c_k ≤ M̃_j          ∀ j             (7d, i.e. eq. 3)
         c_k ∈ ℕ                                               (7e)

It is NP-hard in general (Thm 3.1, a multidimensional knapsack) but small for the
``O(J²)`` GCA chains.  ``objective="max_rate"`` solves the companion problem
``max Σ_k μ_k c_k`` under the memory constraints only — the most throughput a fixed
chain set can carry — which the planner's outer loop can use as a capacity figure.

Also here: the two reference values Fig. 4 plots against, ``⌈λ/(ρ̄ μ_1)⌉`` (lower bound
on the number of job servers) and GBP-CR's ``c·K(c)`` (upper bound, see :mod:`gbp_cr`).
Solved with HiGHS through PuLP; CBC is the fallback when HiGHS is unavailable.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import pulp

from planner.inner.chains.placement import Chain


@dataclass(frozen=True)
class ILPResult:
    """Optimal capacities (``None`` if infeasible) and the objective value."""

    capacities: tuple[int, ...] | None
    objective: float
    status: str


def _solver(time_limit: float | None) -> pulp.LpSolver:
    if "HiGHS" in pulp.listSolvers(onlyAvailable=True):
        return pulp.HiGHS(msg=False, timeLimit=time_limit)
    return pulp.PULP_CBC_CMD(msg=False, timeLimit=time_limit)


def _int_var(prob: pulp.LpProblem, name: str, ub: int) -> pulp.LpVariable:
    # PuLP >= 3.3 attaches variables to the model; older releases only have LpVariable.
    if hasattr(prob, "add_variable"):
        return prob.add_variable(name, lowBound=0, upBound=ub, cat="Integer")
    return pulp.LpVariable(name, lowBound=0, upBound=ub, cat="Integer")


def capacity_ilp(
    chains: Sequence[Chain],
    slots: Sequence[int],
    required_rate: float = 0.0,
    *,
    objective: str = "min_servers",
    time_limit: float | None = 30.0,
) -> ILPResult:
    """Solve the fixed-chain ILP; ``required_rate`` is ``λ/ρ̄`` (ignored for ``max_rate``)."""
    if objective not in ("min_servers", "max_rate"):
        raise ValueError(f"unknown objective {objective!r}")
    K = len(chains)
    sense = pulp.LpMinimize if objective == "min_servers" else pulp.LpMaximize
    prob = pulp.LpProblem("seed001_capacity", sense)
    ub = [
        min(int(slots[j]) // m for j, m in k.slot_usage().items()) for k in chains
    ]  # tight per-chain bounds keep branch-and-bound small
    c = [_int_var(prob, f"c{k}", ub[k]) for k in range(K)]
    rate = pulp.lpSum(c[k] * chains[k].service_rate for k in range(K))
    if objective == "min_servers":
        prob += pulp.lpSum(c)
        prob += rate >= required_rate
    else:
        prob += rate
    usage: dict[int, list[tuple[int, int]]] = {}
    for k, ch in enumerate(chains):
        for j, m in ch.slot_usage().items():
            usage.setdefault(j, []).append((k, m))
    for j, terms in usage.items():
        prob += pulp.lpSum(m * c[k] for k, m in terms) <= int(slots[j])
    prob.solve(_solver(time_limit))
    status = pulp.LpStatus[prob.status]
    if status != "Optimal":
        return ILPResult(None, math.inf if objective == "min_servers" else 0.0, status)
    caps = tuple(int(round(v.value() or 0.0)) for v in c)
    value = (
        float(sum(caps))
        if objective == "min_servers"
        else sum(ck * ch.service_rate for ck, ch in zip(caps, chains, strict=True))
    )
    return ILPResult(caps, value, status)


def job_server_lower_bound(chains: Sequence[Chain], required_rate: float) -> int:
    """Fig. 4's lower bound ``⌈λ/(ρ̄ μ_1)⌉``: no job server beats the fastest chain."""
    mu1 = max(k.service_rate for k in chains)
    return math.ceil(required_rate / mu1 - 1e-12)
