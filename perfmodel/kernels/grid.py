"""Multilinear interpolation grids in log2 coordinates, and their least-squares fit.

A fitted kernel table stores one quantity (a log efficiency, or a log latency) at the
nodes of a regular grid over D log2 coordinates.  Between nodes the value is the
multilinear interpolation of the 2^D surrounding nodes; outside the grid the
coordinates are clamped to its edge (kernels beyond the measured range behave like the
largest or smallest measured shape, which is what an efficiency plateau does).

Fit: given observations (u_i, z_i) the node values g minimise

    sum_i (sum_c w_c(u_i) g_c - z_i)^2  +  lam^2 sum_edges (g_a - g_b)^2

i.e. a multilinear least-squares fit with a first-difference (membrane) penalty that
fills nodes no observation touches by smooth continuation of their neighbours.  It is
one sparse linear least-squares problem (LSQR).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from itertools import product

import numpy as np


@dataclass(frozen=True)
class LogGrid:
    """Node values over a regular grid: ``lo[d] + step[d] * i`` for i < ``shape[d]``
    along each log2 coordinate d."""

    lo: tuple[float, ...]
    step: tuple[float, ...]
    values: np.ndarray  # shape = number of nodes along each coordinate

    @property
    def dims(self) -> int:
        return len(self.lo)

    def _corners(self, coords):
        """Flat node indices and multilinear weights of the 2^D corners (arrays of the
        broadcast shape of ``coords``); used by the fit."""
        shape = self.values.shape
        base = []
        frac = []
        for d, u in enumerate(coords):
            x = (np.asarray(u, dtype=float) - self.lo[d]) / self.step[d]
            x = np.clip(x, 0.0, shape[d] - 1.000001)
            i = np.floor(x)
            base.append(i.astype(np.intp))
            frac.append(x - i)
        strides = [int(np.prod(shape[d + 1:])) for d in range(self.dims)]
        out = []
        for bits in product((0, 1), repeat=self.dims):
            idx = 0
            w = 1.0
            for d, b in enumerate(bits):
                idx = idx + (base[d] + b) * strides[d]
                w = w * (frac[d] if b else 1.0 - frac[d])
            out.append((idx, w))
        return out

    def __call__(self, *coords) -> np.ndarray:
        """Interpolated value at log2 coordinates ``coords`` (broadcasting arrays).

        Gathers the 2^D corner values and blends them one coordinate at a time
        (2^D - 1 lerps): the hot path of every kernel-time evaluation.
        """
        shape, flat, strides, offsets = self._layout
        base: np.ndarray | int = 0
        fracs: list[np.ndarray | float] = []
        for d, u in enumerate(coords):
            if np.ndim(u) == 0:  # a scalar coordinate: the same IEEE steps on a float,
                # without numpy's per-call overhead on 0-d arrays
                v = (float(u) - self.lo[d]) * (1.0 / self.step[d])
                v = min(max(v, 0.0), shape[d] - 1.000001)
                k = int(v)
                base = base + k * strides[d]
                fracs.append(v - k)
                continue
            x = np.array(u, dtype=float)  # a copy: in place from here
            x -= self.lo[d]
            x *= 1.0 / self.step[d]
            np.maximum(x, 0.0, out=x)
            np.minimum(x, shape[d] - 1.000001, out=x)
            i = x.astype(np.intp)
            base = base + i * strides[d]
            x -= i
            fracs.append(x)
        base = np.asarray(base)
        # all corners in one gather: (2^D, *shape), last coordinate varying fastest
        vals = np.take(flat, offsets.reshape((-1,) + (1,) * base.ndim) + base)
        for d in range(self.dims - 1, -1, -1):
            lo = vals[0::2]
            vals = lo + (vals[1::2] - lo) * fracs[d]
        return vals[0]

    @cached_property
    def _layout(self):
        """(shape, flat values, strides, flat offsets of the 2^D corners with the last
        coordinate varying fastest) -- computed once per grid."""
        shape = self.values.shape
        strides = [int(np.prod(shape[d + 1:])) for d in range(self.dims)]
        offsets = np.array([sum(b * st for b, st in zip(bits, strides, strict=True))
                            for bits in product((0, 1), repeat=self.dims)], dtype=np.intp)
        return shape, np.ascontiguousarray(self.values).ravel(), strides, offsets

    def to_dict(self) -> dict:
        return {"lo": list(self.lo), "step": list(self.step),
                "shape": list(self.values.shape),
                "values": [round(float(v), 3) for v in self.values.ravel()]}

    @classmethod
    def from_dict(cls, d: dict) -> LogGrid:
        values = np.asarray(d["values"], dtype=float).reshape(d["shape"])
        return cls(tuple(float(x) for x in d["lo"]), tuple(float(x) for x in d["step"]),
                   values)


def fit_grid(coords: list[np.ndarray], z: np.ndarray, lo: tuple[float, ...],
             step: tuple[float, ...], shape: tuple[int, ...], smooth: float = 0.1,
             weights: np.ndarray | None = None) -> LogGrid:
    """Least-squares node values of a :class:`LogGrid` through observations ``z`` at
    log2 ``coords`` (one array per coordinate), with membrane smoothing ``smooth``."""
    import scipy.sparse as sp
    from scipy.sparse.linalg import lsqr

    z = np.asarray(z, dtype=float)
    n_obs = len(z)
    n_nodes = int(np.prod(shape))
    probe = LogGrid(lo, step, np.zeros(shape))
    corners = probe._corners(coords)
    w_obs = np.ones(n_obs) if weights is None else np.sqrt(np.asarray(weights, float))
    rows = np.tile(np.arange(n_obs), len(corners))
    cols = np.concatenate([np.broadcast_to(idx, (n_obs,)) for idx, _ in corners])
    vals = np.concatenate([np.broadcast_to(w, (n_obs,)) * w_obs for _, w in corners])
    a = sp.csr_matrix((vals, (rows, cols)), shape=(n_obs, n_nodes))
    flat = np.arange(n_nodes).reshape(shape)
    pen_rows, pen_cols, pen_vals = [], [], []
    k = 0
    for d in range(len(shape)):
        if shape[d] < 2:
            continue
        a0 = np.take(flat, range(shape[d] - 1), axis=d).ravel()
        a1 = np.take(flat, range(1, shape[d]), axis=d).ravel()
        r = np.arange(k, k + len(a0))
        k += len(a0)
        pen_rows += [r, r]
        pen_cols += [a0, a1]
        pen_vals += [np.full(len(a0), -smooth), np.full(len(a0), smooth)]
    if k:
        pen = sp.csr_matrix((np.concatenate(pen_vals),
                             (np.concatenate(pen_rows), np.concatenate(pen_cols))),
                            shape=(k, n_nodes))
        a = sp.vstack([a, pen]).tocsr()
    rhs = np.concatenate([z * w_obs, np.zeros(k)])
    # Start from the mean so that untouched nodes converge to a sensible level.
    x0 = np.full(n_nodes, float(np.average(z)) if n_obs else 0.0)
    sol = lsqr(a, rhs - a @ x0, atol=1e-10, btol=1e-10, iter_lim=20000)[0] + x0
    return LogGrid(tuple(map(float, lo)), tuple(map(float, step)), sol.reshape(shape))


def node_range(values: np.ndarray, step: float, lo_cap: float | None = None,
               hi_cap: float | None = None) -> tuple[float, int]:
    """(lo, count) of grid nodes spaced ``step`` apart covering log2 ``values``."""
    v = np.asarray(values, dtype=float)
    lo = np.floor(v.min() / step) * step
    hi = np.ceil(v.max() / step) * step
    if lo_cap is not None:
        lo = max(lo, lo_cap)
    if hi_cap is not None:
        hi = min(hi, hi_cap)
    return float(lo), int(round((hi - lo) / step)) + 1
