"""Weight-free inner formulation: the maximum sustainable request rate.

.. math::

    \\max T \\quad\\text{s.t.}\\quad
    \\sum_i b^P_{ij} x^P_{ij} \\ge p_j T,\\;
    \\sum_i b^D_{ij} x^D_{ij} \\ge p_j T \\;\\; \\forall j, \\qquad
    \\sum_j x^P_{ij} = 1 - z_i,\\; \\sum_j x^D_{ij} = z_i,\\; z_i \\in \\{0, 1\\}.

``T`` is the largest arrival rate at which every range's demand :math:`p_j T` is met
in both phases, i.e. the true maximum rate for the workload mix at range resolution;
there are no weights (``M``, ``tau``, ``lambda``) to tune.  The role constraints are the
per-island convex-hull form of the thesis's constraints 1-2 (§4.8.1): for integer
``z`` they describe exactly the same assignments, and their LP relaxation is tighter.

Exact reductions (each leaves the optimal ``T`` unchanged)
---------------------------------------------------------
* Ranges with :math:`p_j = 0` impose nothing; their columns would only waste time.
* A column :math:`x^\\phi_{ij}` with :math:`b^\\phi_{ij} = 0` adds nothing to any
  cover row; time not needed can sit on any positive column instead.
* **Identical islands are pooled.**  Islands with the same spec and the same tables
  form a group ``g`` of ``k_g`` islands; the model has pooled shares
  :math:`X^\\phi_{gj}` and one integer :math:`n_g \\in [0, k_g]` (how many of them
  decode) with :math:`\\sum_j X^P_{gj} = k_g - n_g`, :math:`\\sum_j X^D_{gj} = n_g`.
  Any per-island solution sums to such a pooled one, and any pooled one splits back
  (``n_g`` islands decode with shares :math:`X^D_{gj}/n_g`, the rest prefill with
  :math:`X^P_{gj}/(k_g - n_g)`) with identical per-range capacities.  This removes the
  ``k_g!`` symmetric copies of every solution that a branch-and-bound would
  otherwise explore; outer-loop layouts repeat (type, size) pairs a lot.
* Throughputs are divided by their maximum so that ``T`` and the coefficients are
  O(1) for the solver; the answer is scaled back.

Solving
-------
The model above goes to any back-end of :mod:`planner.inner.backends` (HiGHS MIP, CBC,
pulp's HiGHS, our LP branch-and-bound).  The default, ``solver="bc"``, is the exact
decomposition of :mod:`planner.inner.max_rate_bc`, which exploits the LP relaxation
without giving up exactness: per phase, for fixed island counts, the LP and its dual
are solved and the dual becomes a cut that bounds the phase rate *everywhere*; a small
master over the counts, solved by branch-and-bound on its LP relaxation, only prunes
on such upper bounds, and every candidate it proposes is re-evaluated exactly.  It
returns the MILP optimum to the same relative gap as a MILP solver, 10-100x faster
on 64 ranges x 32 islands (docs/inner.md).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from planner.inner.common import run_inner, solve_formulation, usable_islands
from planner.inner.max_rate_bc import solve_max_rate_bc
from planner.inner.model import MILPBuilder, SparseMILP
from planner.inner.pooling import pooled_tables3
from planner.inner.problem import InnerProblem
from planner.inner.result import InnerResult

#: Default relative optimality gap: "optimal" means proven within 0.01 % of the maximum
#: rate (HiGHS's own default MIP gap); pass 0 for a proof to LP tolerance.
DEFAULT_GAP = 1e-4


@dataclass(frozen=True)
class _Groups:
    members: list[np.ndarray]  # island indices of each group
    active: np.ndarray  # range indices with p_j > 0
    pcols: tuple[np.ndarray, np.ndarray]  # (group, range-position) of each X^P column
    dcols: tuple[np.ndarray, np.ndarray]
    acols: tuple[np.ndarray, np.ndarray] = (np.zeros(0, int), np.zeros(0, int))


def build_max_rate(
    problem: InnerProblem, usable: np.ndarray, *, aggregate: bool = True
) -> tuple[SparseMILP, _Groups, float]:
    r"""The pooled max-rate MILP; returns (model, grouping, throughput scale).

    With colocated tables (``problem.both_rps``) each group also has ``m_g`` colocated
    islands with shares :math:`X^A_{gj}` that count in both phases' cover rows:
    :math:`\sum_g b^P X^P + b^A X^A \ge p_j T`, :math:`\sum_g b^D X^D + b^A X^A \ge
    p_j T`, and :math:`\sum_j X^P = k_g - n_g - m_g`, :math:`\sum_j X^A = m_g`."""
    members, active, k, scale, bp, bd, ba, p = pooled_tables3(problem, usable, aggregate)
    G, J = bp.shape
    can_p = bp.max(axis=1) > 0
    can_d = bd.max(axis=1) > 0
    can_a = ba.max(axis=1) > 0
    colocated = bool(can_a.any())

    b = MILPBuilder()
    t = b.add_cols("T", 1, cost=1.0)[0]
    pg, pj = np.nonzero(bp > 0)
    dg, dj = np.nonzero(bd > 0)
    ag, aj = np.nonzero(ba > 0)
    xp = b.add_cols("XP", pg.size)
    xd = b.add_cols("XD", dg.size)
    xa = b.add_cols("XA", ag.size) if colocated else np.zeros(0, dtype=int)
    # n_g = number of decoding islands in the group; fixed where one phase is impossible.
    n_lo = np.where(can_p | can_a, 0.0, k) if colocated else np.where(can_p, 0.0, k)
    n_hi = np.where(can_d, k, 0.0)
    n = b.add_cols("n", G, lower=n_lo, upper=n_hi, integer=True)
    m = b.add_cols("m", G, upper=np.where(can_a, k, 0.0), integer=True) if colocated \
        else np.zeros(0, dtype=int)
    # Cover rows: sum_g b_gj X_gj (+ b^A_gj X^A_gj) - p_j T >= 0, per active range/phase.
    for cols, g, j, tab in ((xp, pg, pj, bp), (xd, dg, dj, bd)):
        rows = np.concatenate([j, aj, np.arange(J)])
        allc = np.concatenate([cols, xa, np.full(J, t)])
        vals = np.concatenate([tab[g, j], ba[ag, aj], -p])
        b.add_rows(J, rows, allc, vals, lower=0.0)
    # Capacity rows: sum_j X^P_gj + n_g (+ m_g) = k_g, sum_j X^D_gj - n_g = 0,
    # sum_j X^A_gj - m_g = 0.
    if colocated:
        b.add_rows(G, np.concatenate([pg, np.arange(G), np.arange(G)]),
                   np.concatenate([xp, n, m]), 1.0, lower=k, upper=k)
    else:
        b.add_rows(G, np.concatenate([pg, np.arange(G)]), np.concatenate([xp, n]), 1.0,
                   lower=k, upper=k)
    b.add_rows(G, np.concatenate([dg, np.arange(G)]), np.concatenate([xd, n]),
               np.concatenate([np.ones(dg.size), -np.ones(G)]), lower=0.0, upper=0.0)
    if colocated:
        b.add_rows(G, np.concatenate([ag, np.arange(G)]), np.concatenate([xa, m]),
                   np.concatenate([np.ones(ag.size), -np.ones(G)]), lower=0.0, upper=0.0)
    return b.build(), _Groups(members, active, (pg, pj), (dg, dj), (ag, aj)), scale


def _extract(model: SparseMILP, x: np.ndarray, ctx):
    groups, n_islands, J = ctx
    Xp = np.zeros((len(groups.members), J))
    Xd = np.zeros_like(Xp)
    Xa = np.zeros_like(Xp)
    Xp[groups.pcols[0], groups.active[groups.pcols[1]]] = model.block(x, "XP")
    Xd[groups.dcols[0], groups.active[groups.dcols[1]]] = model.block(x, "XD")
    colocated = groups.acols[0].size > 0
    if colocated:
        Xa[groups.acols[0], groups.active[groups.acols[1]]] = model.block(x, "XA")
        n_both = np.rint(model.block(x, "m")).astype(int)
    else:
        n_both = np.zeros(len(groups.members), dtype=int)
    n_dec = np.rint(model.block(x, "n")).astype(int)
    xp = np.zeros((n_islands, J))
    xd = np.zeros((n_islands, J))
    xa = np.zeros((n_islands, J))
    roles = ["idle"] * n_islands
    for g, members in enumerate(groups.members):
        nd, na = int(n_dec[g]), int(n_both[g])
        npf = len(members) - nd - na
        for r, i in enumerate(members):
            if r < nd:
                roles[i] = "decode"
                xd[i] = Xd[g] / nd
            elif r < nd + na:
                roles[i] = "both"
                xa[i] = Xa[g] / na
            else:
                roles[i] = "prefill"
                xp[i] = Xp[g] / npf
    if colocated:
        return xp, xd, roles, xa
    return xp, xd, roles


@dataclass
class MaxRateMILP:
    """Weight-free exact inner solver: maximise the sustainable request rate ``T``.

    ``solver``:

    * ``"bc"`` (default) -- the exact decomposition of :mod:`planner.inner.max_rate_bc`
      (branch-and-check over the pooled island counts, HiGHS for the LPs);
    * ``"highs"``, ``"cbc"``, ``"pulp-highs"``, ``"bnb"`` -- the monolithic pooled MILP
      above through that back-end (:mod:`planner.inner.backends`).

    All return the same ``T`` up to ``mip_rel_gap`` (relative; 1e-4 by default, the usual
    MILP-solver default).  ``aggregate=False`` disables the pooling of identical islands
    (monolithic back-ends only; for measurements).  ``result.extra["T"]`` is the solver's
    ``T``; ``result.R_sustained`` recomputes it from the per-island shares.
    """

    solver: str = "bc"
    aggregate: bool = True
    time_limit: float | None = 60.0
    mip_rel_gap: float | None = DEFAULT_GAP
    name: str = "maxrate"

    def build(self, problem: InnerProblem) -> SparseMILP:

        return build_max_rate(problem, usable_islands(problem), aggregate=self.aggregate)[0]

    def solve(self, problem: InnerProblem) -> InnerResult:
        # The decomposition works phase by phase; colocated islands couple the phases,
        # so problems that offer them go to the monolithic MILP (HiGHS).
        if self.solver == "bc" and problem.both_rps is None:

            gap = DEFAULT_GAP if self.mip_rel_gap is None else self.mip_rel_gap
            return run_inner(
                problem, name=self.name, time_limit=self.time_limit,
                core=lambda prob, usable: solve_max_rate_bc(
                    prob, usable, gap=gap, time_limit=self.time_limit),
            )
        scale_box: list[float] = []

        def build(prob: InnerProblem, usable: np.ndarray):
            model, groups, scale = build_max_rate(prob, usable, aggregate=self.aggregate)
            scale_box.append(scale)
            return model, (groups, prob.n_islands, prob.n_ranges)

        def extra(model: SparseMILP, x: np.ndarray, ctx) -> dict[str, float]:
            return {"T": float(model.block(x, "T")[0]) * scale_box[0],
                    "groups": float(len(ctx[0].members))}

        res = solve_formulation(
            problem, name=self.name, build=build, extract=_extract,
            backend="highs" if self.solver == "bc" else self.solver,
            time_limit=self.time_limit, mip_rel_gap=self.mip_rel_gap, extra=extra,
        )
        if res.objective is not None and scale_box:  # report T in requests/s
            res = replace(res, objective=res.objective * scale_box[0])
        return res
