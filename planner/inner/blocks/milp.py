"""Exact BPRR as the MILP (13) of seed 000 (§3.2.2, App. B.3), for small instances.

Variables: placement ``a_j, m_j`` (integers), per-request link indicators ``f^r_ij``
(binary) and the McCormick auxiliaries ``α = a_j f``, ``β = a_i f``, ``γ = m_j f``,
``δ = m_i f`` of (B.4)–(B.7), so that ``α + γ − β − δ = k_ij f`` (blocks processed at
``j`` on link ``(i, j)``).  Rows:

* (13a) objective ``Σ_r Σ_(i,j) comm_cj f + τ_j (α + γ − β − δ)`` (per-token cost of the
  instance objective; links into the D-client cost 0);
* (13b) memory ``s_m m_j + s_c Σ (α + γ − β − δ) ≤ M_j`` (divided by ``s_c`` for scaling);
* (13c) flow conservation from the request's S-client to its D-client — printed with
  ``d^r_j``, read ``d^c_j`` (reading guide §7.5);
* (13d) ``a_j + m_j − 1 ≤ L``; (13e) ``α ≤ a_i + m_i``; (13f) ``β + δ ≤ a_j + m_j − 1``.

For the client copies ``a, m`` are constants (S: ``a=0, m=1``; D: ``a=L+1, m=1``), so
their products are constants times ``f`` and need no auxiliary (as in the authors'
code).  Each request only gets the links among the servers and its own client's two
copies: flow conservation forces zero flow through other clients' copies anyway.

The paper's (13h) has ``m_j ∈ [L]``: every server holds at least one block, so a
layout with a server too small for one block is infeasible.  ``allow_idle=True``
relaxes this to ``m_j ∈ {0..L}`` (our extension, reading guide §7.2(c)); condition
(3) then automatically bars every link into an idle server.  The McCormick envelopes
stay exact for binary ``f`` because ``0`` is a valid lower bound of ``a`` and ``m``.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from typing import Any, Literal, cast

import numpy as np
import pulp

from planner.inner.blocks.instance import Instance
from planner.inner.blocks.routing import (
    INF,
    Placement,
    Route,
    is_feasible_route,
    make_route,
    memory_slots,
)

_SIZE_LIMIT = 20000  # binary variables; (13) is for small instances only


@dataclass(frozen=True)
class MilpResult:
    """Solution of (13): status, placement, one route per request, objective."""

    status: str
    placement: Placement | None
    routes: tuple[Route, ...]
    total_cost: float
    runtime_s: float
    n_binaries: int

    @property
    def optimal(self) -> bool:
        return self.status == "Optimal"

    @property
    def mean_cost(self) -> float:
        return self.total_cost / len(self.routes) if self.routes else INF


def solve_milp(
    inst: Instance,
    *,
    allow_idle: bool = False,
    symmetry_breaking: bool = True,
    solver: Literal["highs", "cbc"] = "highs",
    time_limit_s: float = 60.0,
) -> MilpResult:
    """Solve (13) for the instance's requests ``|R_c|`` with an open solver via pulp.

    ``symmetry_breaking`` (ours, valid for any instance) orders the identical requests
    of a client by the index of their first server, which removes most of the
    ``|R_c|!`` equivalent relabellings the branch and bound would otherwise explore.
    The status is ``"Optimal"`` only when the solver proved optimality; a time-limited
    incumbent is reported as ``"Feasible"``.
    """
    n_s, n_blocks = inst.n_servers, inst.n_blocks
    big = float(n_blocks)
    req_clients = np.repeat(np.arange(inst.n_clients), inst.requests)
    n_links = n_s + n_s * (n_s - 1) + n_s
    n_bin = len(req_clients) * n_links
    if n_bin > _SIZE_LIMIT:
        raise ValueError(f"solve_milp: {n_bin} binaries exceed the small-instance limit "
                         f"{_SIZE_LIMIT}; use CG-BPRR")
    prob = pulp.LpProblem("bprr_13", pulp.LpMinimize)
    lo_m = 0 if allow_idle else 1
    hi_m = np.minimum(cast(np.ndarray, inst.max_blocks), n_blocks)  # set in __post_init__
    a = [prob.add_variable(f"a_{j}", 1, n_blocks, cat="Integer") for j in range(n_s)]
    m = [prob.add_variable(f"m_{j}", lo_m, int(hi_m[j]), cat="Integer") for j in range(n_s)]
    objective = []
    mem_terms: list[list] = [[] for _ in range(n_s)]
    # nodes are "S", the server indices and "D"
    flows: list[dict[tuple[Any, Any], pulp.LpVariable]] = []

    def product(name: str, x: pulp.LpVariable, f: pulp.LpVariable, upper: float):
        """McCormick for ``x·f`` with ``x ∈ [0, upper]``, ``f ∈ {0,1}`` ((B.4)–(B.7))."""
        z = prob.add_variable(name, 0, upper)
        prob.addConstraint(z <= upper * f)
        prob.addConstraint(z <= x)
        prob.addConstraint(x + upper * f - z <= upper)
        return z

    for r, c in enumerate(req_clients):
        f: dict[tuple[Any, Any], pulp.LpVariable] = {}
        nodes: list[Any] = ["S", *range(n_s), "D"]
        for i in nodes[:-1]:
            for j in nodes[1:]:
                if i == j or (i == "S" and j == "D"):
                    continue
                f[(i, j)] = prob.add_variable(f"f_{r}_{i}_{j}", 0, 1, cat="Binary")
        flows.append(f)
        if symmetry_breaking and r > 0 and req_clients[r - 1] == c:
            prev = flows[r - 1]
            prob.addConstraint(pulp.lpSum(j * prev[("S", j)] for j in range(n_s))
                               <= pulp.lpSum(j * f[("S", j)] for j in range(n_s)))
        for (i, j), fij in f.items():
            tag = f"{r}_{i}_{j}"
            if j == "D":
                alpha, gamma = (n_blocks + 1) * fij, fij
                rhs_f = n_blocks + 1  # a_D + m_D - 1
            else:
                alpha = product(f"al_{tag}", a[j], fij, big)
                gamma = product(f"ga_{tag}", m[j], fij, big)
                rhs_f = a[j] + m[j] - 1
            if i == "S":
                beta, delta, end_i = 0, fij, 1
            else:
                beta = product(f"be_{tag}", a[i], fij, big)
                delta = product(f"de_{tag}", m[i], fij, big)
                end_i = a[i] + m[i]
            prob.addConstraint(alpha <= end_i)  # (13e)
            prob.addConstraint(beta + delta <= rhs_f)  # (13f)
            if j != "D":
                k = alpha + gamma - beta - delta
                objective.append(float(inst.comm[c, j]) * fij + float(inst.tau_eff[j]) * k)
                mem_terms[j].append(k)
        # (13c): out − in = d^c_j
        for v in nodes:
            out = [x for (i, _), x in f.items() if i == v]
            inn = [x for (_, j), x in f.items() if j == v]
            d = 1 if v == "S" else (-1 if v == "D" else 0)
            prob.addConstraint(pulp.lpSum(out) - pulp.lpSum(inn) == d)
    for j in range(n_s):
        prob.addConstraint(a[j] + m[j] - 1 <= n_blocks)  # (13d)
        ratio = inst.block_bytes / inst.cache_bytes
        prob.addConstraint(ratio * m[j] + pulp.lpSum(mem_terms[j])
                           <= inst.memory[j] / inst.cache_bytes)  # (13b) / s_c
    prob.setObjective(pulp.lpSum(objective))
    if solver == "highs":
        backend = pulp.HiGHS(msg=False, timeLimit=time_limit_s, threads=1,
                             gapRel=1e-9, gapAbs=1e-12)
    elif solver == "cbc":
        with warnings.catch_warnings():  # pulp 3.3 flags its bundled CBC as deprecated
            warnings.simplefilter("ignore", DeprecationWarning)
            backend = pulp.PULP_CBC_CMD(msg=False, timeLimit=time_limit_s, threads=1,
                                        gapRel=1e-9, gapAbs=1e-12)
    else:
        raise ValueError(f"solve_milp: unknown solver {solver!r}")
    t0 = time.perf_counter()
    prob.solve(backend)
    runtime = time.perf_counter() - t0
    status = pulp.LpStatus[prob.status]
    if status == "Optimal" and prob.sol_status != pulp.LpSolutionOptimal:
        status = "Feasible"  # pulp maps a time-limited incumbent to "Optimal"
    if status not in ("Optimal", "Feasible") or any(v.value() is None for v in a + m):
        return MilpResult(status, None, (), INF, runtime, n_bin)
    count = np.array([round(v.value()) for v in m], dtype=np.int64)
    first = np.array([round(v.value()) for v in a], dtype=np.int64)
    first = np.where(count > 0, first, 0)
    placement = Placement(first, count, memory_slots(inst, count))
    routes = []
    for r, f in enumerate(flows):
        path, v = [], "S"
        while v != "D":
            v = next(j for (i, j), x in f.items() if i == v and x.value() > 0.5)
            if v != "D":
                path.append(v)
        if not is_feasible_route(placement, n_blocks, tuple(path)):
            raise RuntimeError("solve_milp: solver returned an infeasible chain (13e/13f)")
        routes.append(make_route(placement, int(req_clients[r]), tuple(path)))
    total = float(sum(inst.comm[rt.client, list(rt.servers)].sum()
                      + np.dot(inst.tau_eff[list(rt.servers)], rt.blocks) for rt in routes))
    return MilpResult(status, placement, tuple(routes), total, runtime, n_bin)
