"""Maximum rate of one phase (prefill or decode) for given island counts, with its dual.

For one phase with tables ``b[g, j]`` (requests/s of one island of group ``g`` on range
``j``) and ``c[g]`` islands of each group, the largest rate whose mix ``p`` it serves is

.. math::

    f(c) = \\max\\{T : \\textstyle\\sum_g b_{gj} X_{gj} \\ge p_j T\\;\\forall j,\\;
                       \\sum_j X_{gj} \\le c_g\\;\\forall g,\\; X \\ge 0\\}
         = \\min_{y \\ge 0,\\, p^\\top y = 1} \\textstyle\\sum_g c_g \\max_j b_{gj} y_j

(LP duality).  Any ``y >= 0`` with ``p @ y = 1`` therefore gives a *cut*
:math:`f(c') \\le u^\\top c'` with :math:`u_g = \\max_j b_{gj} y_j`, valid for every
``c'``, and tight at ``c`` when ``y`` is the optimal dual.  These cuts drive the
decomposition in :mod:`planner.inner.max_rate_bc`.

Exact reductions keep the LP small: groups with ``c_g = 0`` are left out (their ``u_g``
still comes from ``y``), and groups whose tables are proportional (``b_g = r b_h``)
are merged into one island of capacity ``c_g max b_g + c_h max b_h`` on the common
normalised table, which is the same feasible set of served rates.  If a single merged
table remains, :math:`f = C / \\sum_j p_j / r_j` in closed form.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.inner.model import MILPBuilder

#: Rows equal to this many significant digits after normalisation count as proportional.
_SIG_DIGITS = 12


@dataclass(frozen=True)
class PhaseSolution:
    rate: float  # f(c)
    cut: np.ndarray  # (G,) u: f(c') <= u @ c' for all c'
    time: np.ndarray  # (G, J) pooled island time X (row sums <= c)


def heuristic_dual(b: np.ndarray, weights: np.ndarray, p: np.ndarray) -> np.ndarray:
    """A valid dual ``y`` (``p @ y = 1``) exact when all rows of ``b`` are proportional:
    ``y_j`` inversely proportional to the ``weights``-weighted column sums."""
    col = weights @ b
    y = np.where(col > 0, 1.0 / np.where(col > 0, col, 1.0), 0.0)
    return y / (p @ y)


def cut_from_dual(b: np.ndarray, y: np.ndarray) -> np.ndarray:
    return (b * y).max(axis=1)


def phase_rate(b: np.ndarray, p: np.ndarray, c: np.ndarray) -> PhaseSolution:
    """``f(c)`` with an optimal dual cut and pooled times; ``p > 0`` on every column."""
    G, J = b.shape
    on = np.flatnonzero((c > 0) & (b.max(axis=1) > 0))
    served = b[on].max(axis=0, initial=0.0) > 0 if on.size else np.zeros(J, dtype=bool)
    if not np.all(served):
        # Some range gets no capacity: f = 0.  Put all dual weight on it; then every
        # group present has u_g = 0, so the cut is tight at c.
        j = int(np.flatnonzero(~served)[0])
        y = np.zeros(J)
        y[j] = 1.0 / p[j]
        return PhaseSolution(0.0, cut_from_dual(b, y), np.zeros((G, J)))
    peak = b[on].max(axis=1)
    norm = b[on] / peak[:, None]
    keys = np.round(norm, _SIG_DIGITS - 1)
    _, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    inverse = inverse.ravel()
    cap = np.bincount(inverse, weights=c[on] * peak)  # capacity in normalised units
    rows = norm[first]
    if rows.shape[0] == 1:
        r = rows[0]
        h = float(np.sum(p / r))
        rate = cap[0] / h
        y = (1.0 / r) / h
        t_virtual = (p * rate / r)[None, :]
    else:
        rate, y, t_virtual = _solve_lp(rows, p, cap)
    # Group g of a merged island holds c_g * peak_g of its cap normalised time units,
    # i.e. real time X_gj = t_j * c_g / cap: same per-range output, row sums <= c_g.
    time = np.zeros((G, J))
    time[on] = t_virtual[inverse] * (c[on] / cap[inverse])[:, None]
    y = np.maximum(y, 0.0)
    y = y / (p @ y)
    return PhaseSolution(float(rate), cut_from_dual(b, y), time)


def _solve_lp(rows: np.ndarray, p: np.ndarray, cap: np.ndarray):
    """The phase LP on merged rows; returns (rate, cover-row duals y, time X)."""
    import highspy

    K, J = rows.shape
    bld = MILPBuilder()
    t = bld.add_cols("T", 1, cost=1.0)[0]
    g, j = np.nonzero(rows > 0)
    x = bld.add_cols("X", g.size)
    bld.add_rows(J, np.concatenate([j, np.arange(J)]), np.concatenate([x, np.full(J, t)]),
                 np.concatenate([rows[g, j], -p]), lower=0.0)
    bld.add_rows(K, g, x, 1.0, upper=cap)
    m = bld.build()
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    h.setOptionValue("presolve", "off")
    # X = 0, T = 0 is feasible, so primal simplex starts from the slack basis.
    h.setOptionValue("simplex_strategy", 4)
    h.passModel(m.n_cols, m.n_rows, int(m.value.shape[0]), int(highspy.MatrixFormat.kRowwise),
                int(highspy.ObjSense.kMaximize), 0.0, m.cost, m.col_lower, m.col_upper,
                m.row_lower, m.row_upper, m.row_start, m.col_index, m.value,
                np.zeros(m.n_cols, dtype=np.int32))
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        raise RuntimeError(f"phase LP: {h.modelStatusToString(h.getModelStatus())}")
    sol = h.getSolution()
    col = np.asarray(sol.col_value)
    y = np.abs(np.asarray(sol.row_dual)[:J])
    X = np.zeros((K, J))
    X[g, j] = col[x]
    return float(col[t]), y, X
