"""A solver-neutral (MI)LP in sparse-matrix form, and a vectorised builder for it.

Every inner formulation is written once, as numpy arrays (objective, CSR constraint
matrix, bounds, integrality); the back-ends in :mod:`planner.inner.backends` hand the
same arrays to HiGHS directly or rebuild them as a pulp model for CBC / pulp's HiGHS
interface.  Building with numpy instead of pulp expressions is what keeps a
64-range x 32-island solve within the 20 ms budget (pulp's per-term Python objects
cost more than the solve itself; see docs/inner.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

INF = float("inf")


@dataclass(frozen=True)
class SparseMILP:
    """``max cost @ x`` s.t. ``row_lower <= A x <= row_upper``, ``col_lower <= x <= col_upper``.

    ``A`` is CSR (``row_start``, ``col_index``, ``value``); ``integer[k]`` marks integer
    columns.  ``blocks`` names column ranges (``name -> (start, stop)``) so that a
    formulation can slice its variables out of a solution vector.
    """

    cost: np.ndarray
    col_lower: np.ndarray
    col_upper: np.ndarray
    integer: np.ndarray
    row_start: np.ndarray
    col_index: np.ndarray
    value: np.ndarray
    row_lower: np.ndarray
    row_upper: np.ndarray
    blocks: dict[str, tuple[int, int]]

    @property
    def n_cols(self) -> int:
        return int(self.cost.shape[0])

    @property
    def n_rows(self) -> int:
        return int(self.row_lower.shape[0])

    @property
    def is_mip(self) -> bool:
        return bool(np.any(self.integer))

    def col_names(self) -> list[str]:
        """Readable column names ``block_k`` (only pulp needs them)."""
        names = [""] * self.n_cols
        for block, (a, b) in self.blocks.items():
            for k in range(a, b):
                names[k] = f"{block}_{k - a}"
        return names

    def block(self, x: np.ndarray, name: str) -> np.ndarray:
        a, b = self.blocks[name]
        return x[a:b]

    def row_activity(self, x: np.ndarray) -> np.ndarray:
        """``A @ x`` (used by tests to check a solution against every row)."""
        rows = np.repeat(np.arange(self.n_rows), np.diff(self.row_start))
        return np.bincount(rows, weights=self.value * x[self.col_index], minlength=self.n_rows)


class MILPBuilder:
    """Accumulates column blocks and row blocks, then emits a :class:`SparseMILP`.

    Rows are added in blocks given as COO triplets local to the block (``row`` ids
    ``0..n-1``, global column ids, values); blocks are concatenated in order, so the
    final CSR needs one stable sort per block and no Python loop over terms.
    """

    def __init__(self) -> None:
        self._cols: list[tuple[str, int, np.ndarray, np.ndarray, np.ndarray, bool]] = []
        self._n_cols = 0
        self._rows: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        self._n_rows = 0
        self.blocks: dict[str, tuple[int, int]] = {}

    def add_cols(
        self,
        name: str,
        n: int,
        *,
        cost: float | np.ndarray = 0.0,
        lower: float | np.ndarray = 0.0,
        upper: float | np.ndarray = INF,
        integer: bool = False,
    ) -> np.ndarray:
        """Add ``n`` columns; returns their global indices."""
        start = self._n_cols
        self._cols.append(
            (
                name,
                n,
                np.broadcast_to(np.asarray(cost, dtype=float), (n,)),
                np.broadcast_to(np.asarray(lower, dtype=float), (n,)),
                np.broadcast_to(np.asarray(upper, dtype=float), (n,)),
                integer,
            )
        )
        self._n_cols += n
        self.blocks[name] = (start, self._n_cols)
        return np.arange(start, self._n_cols)

    def add_rows(
        self,
        n: int,
        row: np.ndarray,
        col: np.ndarray,
        val: Any,  # scalar or array, broadcast to the shape of ``row``
        *,
        lower: float | np.ndarray = -INF,
        upper: float | np.ndarray = INF,
    ) -> None:
        """Add ``n`` rows ``lower <= sum val * x[col] <= upper`` from COO triplets."""
        row = np.asarray(row, dtype=np.int64).ravel()
        col = np.asarray(col, dtype=np.int64).ravel()
        val = np.broadcast_to(np.asarray(val, dtype=float), row.shape).ravel()
        keep = val != 0.0  # explicit zeros make HiGHS warn and CBC slower
        row, col, val = row[keep], col[keep], val[keep]
        order = np.argsort(row, kind="stable")
        counts = np.bincount(row, minlength=n)
        self._rows.append(
            (
                counts,
                col[order],
                val[order],
                np.broadcast_to(np.asarray(lower, dtype=float), (n,)),
                np.broadcast_to(np.asarray(upper, dtype=float), (n,)),
            )
        )
        self._n_rows += n

    def build(self) -> SparseMILP:
        cost = np.concatenate([c[2] for c in self._cols])
        col_lower = np.concatenate([c[3] for c in self._cols])
        col_upper = np.concatenate([c[4] for c in self._cols])
        integer = np.concatenate([np.full(c[1], c[5]) for c in self._cols])
        counts = np.concatenate([r[0] for r in self._rows])
        row_start = np.zeros(counts.shape[0] + 1, dtype=np.int32)
        np.cumsum(counts, out=row_start[1:])
        return SparseMILP(
            cost=cost,
            col_lower=col_lower,
            col_upper=col_upper,
            integer=integer,
            row_start=row_start,
            col_index=np.concatenate([r[1] for r in self._rows]).astype(np.int32),
            value=np.concatenate([r[2] for r in self._rows]),
            row_lower=np.concatenate([r[3] for r in self._rows]),
            row_upper=np.concatenate([r[4] for r in self._rows]),
            blocks=dict(self.blocks),
        )


@dataclass(frozen=True)
class SolveOutcome:
    """What a backend (planner.inner.backends, planner.inner.bnb) returns for a
    :class:`SparseMILP`: status, solution vector (None if none), objective, wall
    seconds, the solver's message and the relative MIP gap it proved."""

    status: str
    x: np.ndarray | None
    objective: float
    seconds: float
    message: str = ""
    mip_gap: float = 0.0
