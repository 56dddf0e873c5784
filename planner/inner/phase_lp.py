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

from planner.inner.highs import new_highs
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
    return PhaseLP(b, p).solve(c)


class PhaseLP:
    """The phase LP of one table, kept alive across capacity vectors.

    Proportional rows are merged once (the merge does not depend on ``c``); each
    :meth:`solve` only changes the capacity right-hand sides and re-solves from the
    previous basis, which is several times cheaper than a cold solve when successive
    ``c`` differ in a few groups (as consecutive candidates of the decomposition do).
    """

    def __init__(self, b: np.ndarray, p: np.ndarray, simplex_strategy: int = 4) -> None:
        self.b = b
        self.p = p
        G, J = b.shape
        self.peak = b.max(axis=1)
        ok = self.peak > 0
        norm = np.zeros_like(b)
        norm[ok] = b[ok] / self.peak[ok, None]
        keys = np.round(norm, _SIG_DIGITS - 1)
        _, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
        self.inverse = inverse.ravel()
        self.rows = norm[first]
        self.strategy = simplex_strategy
        self._h = None  # built on the first solve that needs an LP

    def solve(self, c: np.ndarray) -> PhaseSolution:
        b, p = self.b, self.p
        G, J = b.shape
        on = (c > 0) & (self.peak > 0)
        served = b[on].max(axis=0, initial=0.0) > 0 if on.any() else np.zeros(J, dtype=bool)
        if not np.all(served):
            # Some range gets no capacity: f = 0.  All dual weight on it makes every
            # group present have u_g = 0, so the cut is tight at c.
            j = int(np.flatnonzero(~served)[0])
            y = np.zeros(J)
            y[j] = 1.0 / p[j]
            return PhaseSolution(0.0, cut_from_dual(b, y), np.zeros((G, J)))
        K = self.rows.shape[0]
        # Capacity of each merged island in normalised time units.
        cap = np.bincount(self.inverse, weights=np.where(on, c * self.peak, 0.0), minlength=K)
        live = np.flatnonzero(cap > 0)
        if live.size == 1:
            r = self.rows[live[0]]
            h = float(np.sum(p / r))
            rate = cap[live[0]] / h
            y = (1.0 / r) / h
            t_virtual = np.zeros((K, J))
            t_virtual[live[0]] = p * rate / r
        else:
            rate, y, t_virtual = self._lp(cap)
        # Group g of a merged island holds c_g * peak_g of its cap normalised time units,
        # i.e. real time X_gj = t_j * c_g / cap: same per-range output, row sums <= c_g.
        time = np.zeros((G, J))
        gi = np.flatnonzero(on)
        time[gi] = t_virtual[self.inverse[gi]] * (c[gi] / cap[self.inverse[gi]])[:, None]
        y = np.maximum(y, 0.0)
        y = y / (p @ y)
        return PhaseSolution(float(rate), cut_from_dual(b, y), time)

    def _lp(self, cap: np.ndarray):
        """The LP on merged rows; returns (rate, cover-row duals y, time per merged row)."""
        import highspy

        rows, p = self.rows, self.p
        K, J = rows.shape
        if self._h is None:
            bld = MILPBuilder()
            t = bld.add_cols("T", 1, cost=1.0)[0]
            g, j = np.nonzero(rows > 0)
            x = bld.add_cols("X", g.size)
            bld.add_rows(J, np.concatenate([j, np.arange(J)]),
                         np.concatenate([x, np.full(J, t)]),
                         np.concatenate([rows[g, j], -p]), lower=0.0)
            bld.add_rows(K, g, x, 1.0, upper=cap)
            m = bld.build()
            h = new_highs()
            h.setOptionValue("output_flag", False)
            h.setOptionValue("threads", 1)
            h.setOptionValue("presolve", "off")
            h.setOptionValue("simplex_strategy", self.strategy)
            h.passModel(m.n_cols, m.n_rows, int(m.value.shape[0]),
                        int(highspy.MatrixFormat.kRowwise), int(highspy.ObjSense.kMaximize),
                        0.0, m.cost, m.col_lower, m.col_upper, m.row_lower, m.row_upper,
                        m.row_start, m.col_index, m.value, np.zeros(m.n_cols, dtype=np.int32))
            self._h, self._g, self._j, self._t, self._x = h, g, j, t, x
            self._caprows = np.arange(J, J + K, dtype=np.int32)
        else:
            h = self._h
            h.changeRowsBounds(K, self._caprows, np.full(K, -np.inf), cap)
        h.run()
        if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            raise RuntimeError(f"phase LP: {h.modelStatusToString(h.getModelStatus())}")
        sol = h.getSolution()
        col = np.asarray(sol.col_value)
        y = np.abs(np.asarray(sol.row_dual)[:J])
        X = np.zeros((K, J))
        X[self._g, self._j] = col[self._x]
        return float(col[self._t]), y, X
