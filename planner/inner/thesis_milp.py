"""The thesis's inner MILP, exactly as printed in seed 002 §4.8.1.

Variables: :math:`x^P_{ij}, x^D_{ij} \\ge 0`, :math:`z_i \\in \\{0,1\\}` (1 = decode),
:math:`\\delta^P_j, \\delta^D_j, \\delta^M_j \\ge 0` and :math:`D_{total}`.  The
intermediate quantities :math:`R^P_j = \\sum_i b^P_{ij}x^P_{ij}`, :math:`R^D_j`,
:math:`R_{prefill} = \\sum_j R^P_j`, :math:`R_{decode}` are carried as columns with
defining equalities (same feasible set; it keeps every constraint row short instead
of repeating all ``I*J`` terms of :math:`R_{prefill}` in each of the ``6J`` deviation
rows).

1. :math:`\\sum_j (x^P_{ij} + x^D_{ij}) = 1 \\; \\forall i`.  The printed constraint sums
   over ``i`` "for all i", a typo: the text says each island allocates one unit of
   capacity, so the sum runs over ranges.
2. :math:`x^P_{ij} \\le 1 - z_i`, :math:`x^D_{ij} \\le z_i`.
3. :math:`R_{prefill} \\ge \\varepsilon`, :math:`R_{decode} \\ge \\varepsilon` (bounds).
4.-5. :math:`|R^\\phi_j - p_j R_\\phi| \\le \\delta^\\phi_j \\le \\tau p_j R_\\phi`.
6. :math:`|R^D_j - R^P_j| \\le \\delta^M_j`.
7. :math:`\\sum_j (\\delta^D_j + \\delta^P_j + \\delta^M_j) = D_{total}`.

Objective: :math:`\\max R_{decode} + R_{prefill} - \\sum_j \\lambda_j
(\\delta^D_j + \\delta^P_j + \\delta^M_j)` with :math:`\\lambda_j = M/(1+p_j)`.

Choice of ``M`` and ``tau`` (the thesis gives no values)
---------------------------------------------------------
*Units.*  Every ``delta`` is a rate in the same unit as ``R`` (requests/s), so ``M`` is
dimensionless and the optimal ``x`` does not change when all throughputs are scaled
(only ``eps = 0.01`` is absolute, and it is far below any real island's rate).  No
normalisation by the throughput scale is needed.

*Lower bound on M.*  Because :math:`\\sum_j |R^D_j - R^P_j| \\ge |R_{decode} -
R_{prefill}|` and :math:`\\lambda_j \\ge M/(1+\\max_j p_j)`, any ``M > 1 + max p_j``
(so ``M >= 2`` for every workload) makes a surplus in one phase cost more than it
adds to ``R_decode + R_prefill``: the objective is then at most
``2 min(R_prefill, R_decode)`` and the solver balances the phases.  With ``M < 1`` a
surplus pays, and it maximises ``R_prefill + R_decode``, giving each island the phase
in which it is fastest regardless of the bottleneck.

*Upper side.*  As ``M`` grows the objective turns lexicographic (minimise deviation
first, throughput second): per-range matching ``|R^D_j - R^P_j|`` is not needed to
sustain the mix (each phase only has to cover ``p_j T``), yet it is bought with
sustainable rate.  So the best ``M`` is the smallest one that still balances the
phases, and the default is ``M = 1.05 (1 + max_j p_j)`` (5 % above the bound; set ``M``
to override).  ``tau`` is a hard cap: each range's served share may deviate from
``p_j`` by at most ``tau p_j R`` in either phase; the freedom is used to raise
``R_prefill + R_decode`` at the expense of the least-served range.  Default
``tau = 0.01``: a 1 % tolerance keeps constraints (4)-(5) and their deviation terms
alive (``tau = 0`` turns them into equalities) for about 0.5 % of sustained rate.

*Measured* (``benchmarks/bench_inner.py --sweep``): sustained rate of the thesis
solution divided by the exact maximum ``T*`` of the weight-free MILP, mean (min) over
10 seeded synthetic layouts of 12 islands x 24 ranges (random) / 16 x 32 (divider):

=========  ============================  ============================
M          random, tau = 0 / 0.01 / 0.1  divider, tau = 0 / 0.01 / 0.1
=========  ============================  ============================
0.5        0.095 / 0.094 / 0.090         0.033 / 0.033 / 0.041
1.0        0.992 / 0.986 / 0.934         0.948 / 0.942 / 0.894
auto       1.000 / 0.994 / 0.935         0.996 / 0.992 / 0.931
2.0        0.975 / 0.970 / 0.916         0.987 / 0.983 / 0.926
10.0       0.919 / 0.918 / 0.902         0.976 / 0.980 / 0.964
=========  ============================  ============================

With the defaults (auto, 0.01) the worst layout reached 0.993 (random) and 0.965
(divider) of ``T*``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.inner.common import solve_formulation, usable_islands
from planner.inner.model import MILPBuilder, SparseMILP
from planner.inner.problem import InnerProblem
from planner.inner.result import InnerResult

#: ``M = None`` means auto: ``AUTO_M_MARGIN * (1 + max_j p_j)`` (module docstring).
DEFAULT_M: float | None = None
AUTO_M_MARGIN = 1.05
DEFAULT_TAU = 0.01
DEFAULT_EPS = 0.01


def build_thesis_milp(
    problem: InnerProblem, usable: np.ndarray, *, M: float, tau: float, eps: float
) -> tuple[SparseMILP, np.ndarray]:
    """The §4.8.1 model over the ``usable`` islands; returns (model, island indices)."""
    isl = np.flatnonzero(usable)
    bp = problem.prefill_rps[isl]
    bd = problem.decode_rps[isl]
    p = problem.range_prob
    I, J = bp.shape
    lam = M / (1.0 + p)

    b = MILPBuilder()
    xp = b.add_cols("xP", I * J, upper=1.0).reshape(I, J)
    xd = b.add_cols("xD", I * J, upper=1.0).reshape(I, J)
    z = b.add_cols("z", I, upper=1.0, integer=True)
    rjp = b.add_cols("RjP", J)
    rjd = b.add_cols("RjD", J)
    rp = b.add_cols("RP", 1, cost=1.0, lower=eps)[0]  # constraint 3 as a bound
    rd = b.add_cols("RD", 1, cost=1.0, lower=eps)[0]
    dp = b.add_cols("dP", J, cost=-lam)
    dd = b.add_cols("dD", J, cost=-lam)
    dm = b.add_cols("dM", J, cost=-lam)
    dtot = b.add_cols("Dtot", 1)[0]

    jj = np.arange(J)
    ii = np.arange(I)
    # Definitions: R_j - sum_i b_ij x_ij = 0 and R - sum_j R_j = 0.
    for rj, x, tab in ((rjp, xp, bp), (rjd, xd, bd)):
        rows = np.concatenate([jj, np.broadcast_to(jj, (I, J)).ravel()])
        cols = np.concatenate([rj, x.ravel()])
        vals = np.concatenate([np.ones(J), -tab.ravel()])
        b.add_rows(J, rows, cols, vals, lower=0.0, upper=0.0)
    for r, rj in ((rp, rjp), (rd, rjd)):
        b.add_rows(1, np.zeros(J + 1), np.concatenate([[r], rj]),
                   np.concatenate([[1.0], -np.ones(J)]), lower=0.0, upper=0.0)
    # (1) each island allocates exactly one unit over phases and ranges.
    rows = np.repeat(ii, 2 * J)
    cols = np.concatenate([xp, xd], axis=1).ravel()
    b.add_rows(I, rows, cols, 1.0, lower=1.0, upper=1.0)
    # (2) x^P_ij + z_i <= 1 and x^D_ij - z_i <= 0.
    n = I * J
    r2 = np.arange(n)
    zz = np.repeat(z, J)
    b.add_rows(n, np.concatenate([r2, r2]), np.concatenate([xp.ravel(), zz]), 1.0, upper=1.0)
    b.add_rows(n, np.concatenate([r2, r2]), np.concatenate([xd.ravel(), zz]),
               np.concatenate([np.ones(n), -np.ones(n)]), upper=0.0)
    # (4)/(5) R_j - p_j R <= d_j, p_j R - R_j <= d_j, d_j - tau p_j R <= 0.
    r3 = np.concatenate([jj, jj, jj])
    ones = np.ones(J)
    for rj, r, d in ((rjd, rd, dd), (rjp, rp, dp)):
        rcol = np.full(J, r)
        b.add_rows(J, r3, np.concatenate([rj, rcol, d]),
                   np.concatenate([ones, -p, -ones]), upper=0.0)
        b.add_rows(J, r3, np.concatenate([rj, rcol, d]),
                   np.concatenate([-ones, p, -ones]), upper=0.0)
        b.add_rows(J, np.concatenate([jj, jj]), np.concatenate([d, rcol]),
                   np.concatenate([ones, -tau * p]), upper=0.0)
    # (6) |R^D_j - R^P_j| <= d^M_j.
    b.add_rows(J, r3, np.concatenate([rjd, rjp, dm]),
               np.concatenate([ones, -ones, -ones]), upper=0.0)
    b.add_rows(J, r3, np.concatenate([rjp, rjd, dm]),
               np.concatenate([ones, -ones, -ones]), upper=0.0)
    # (7) D_total definition.
    b.add_rows(1, np.zeros(3 * J + 1), np.concatenate([dd, dp, dm, [dtot]]),
               np.concatenate([np.ones(3 * J), [-1.0]]), lower=0.0, upper=0.0)
    return b.build(), isl


def _extract(
    model: SparseMILP, x: np.ndarray, ctx: tuple[np.ndarray, int, int]
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    isl, n_islands, J = ctx
    z = np.rint(model.block(x, "z")).astype(int)
    xp = np.zeros((n_islands, J))
    xd = np.zeros((n_islands, J))
    xp[isl] = model.block(x, "xP").reshape(-1, J)
    xd[isl] = model.block(x, "xD").reshape(-1, J)
    roles = ["idle"] * n_islands
    for k, i in enumerate(isl):
        roles[i] = "decode" if z[k] == 1 else "prefill"
    # Constraint 2 makes the other phase's shares zero up to solver tolerance.
    xp[np.array([r != "prefill" for r in roles], dtype=bool)] = 0.0
    xd[np.array([r != "decode" for r in roles], dtype=bool)] = 0.0
    return xp, xd, roles


@dataclass
class ThesisMILP:
    """Seed 002 §4.8.1 inner MILP.

    ``solver``: ``"highs"`` (highspy, default: fastest, see docs/inner.md), ``"cbc"``
    (pulp + CBC, as in the thesis) or ``"pulp-highs"``.  ``time_limit`` in seconds;
    ``mip_rel_gap`` None keeps the solver's default.
    """

    solver: str = "highs"
    M: float | None = DEFAULT_M
    tau: float = DEFAULT_TAU
    eps: float = DEFAULT_EPS
    time_limit: float | None = 60.0
    mip_rel_gap: float | None = None
    name: str = "thesis"

    def __post_init__(self) -> None:
        if (self.M is not None and self.M < 0) or self.tau < 0 or self.eps < 0:
            raise ValueError("ThesisMILP: M, tau and eps must be >= 0")

    def effective_M(self, problem: InnerProblem) -> float:
        """``M``, or the auto value ``1.05 (1 + max_j p_j)`` when ``M`` is None."""
        if self.M is not None:
            return float(self.M)
        return AUTO_M_MARGIN * (1.0 + float(problem.range_prob.max()))

    def build(self, problem: InnerProblem) -> SparseMILP:

        return build_thesis_milp(problem, usable_islands(problem),
                                 M=self.effective_M(problem), tau=self.tau, eps=self.eps)[0]

    def solve(self, problem: InnerProblem) -> InnerResult:
        M = self.effective_M(problem)

        def build(prob: InnerProblem, usable: np.ndarray):
            model, isl = build_thesis_milp(prob, usable, M=M, tau=self.tau, eps=self.eps)
            return model, (isl, prob.n_islands, prob.n_ranges)

        return solve_formulation(
            problem,
            name=self.name,
            build=build,
            extract=_extract,
            backend=self.solver,
            time_limit=self.time_limit,
            mip_rel_gap=self.mip_rel_gap,
            extra=lambda m, x, ctx: {
                "solver_D_total": float(m.block(x, "Dtot")[0]),
                "M": M,
                "tau": self.tau,
            },
        )
