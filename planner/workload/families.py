"""Length distributions declared in YAML, discretised to token resolution.

A *spec* is a mapping with a ``type`` key (docs/workloads.md lists the fields):

``point`` (``value``), ``uniform`` (``low``, ``high``, inclusive), ``normal``
(``mu``, ``sigma``, optional truncation ``low``/``high``; thesis Fig. 4.2 is
``normal`` with mu 500, sigma 2000 on 0..8000), ``lognormal`` (``sigma`` and one of
``mu``/``median``/``mean``, optional ``low``/``high``), ``mixture`` (``components``,
each a spec plus a positive ``weight``), and the two empirical forms ``histogram``
(exact lengths ``values`` with ``weights``) and ``binned`` (contiguous ``edges`` with
one weight per bin, spread uniformly over the integer lengths of the bin).

Discretisation of continuous families: length ``s`` receives the probability of the
cell ``[s - 1/2, s + 1/2)``, restricted to the truncation window and renormalised --
the thesis "truncated/normalised" its normal to ``0 <= s <= 8000`` (Fig. 4.2).  The
cell integral is used rather than the density at ``s`` so that narrow distributions
(sigma of a few tokens) still sum correctly.  Length 0 never gets mass: a request
without input tokens is not a request of the workload.

:func:`discretise` returns the mass on lengths ``1..n`` and the fraction of the
distribution lying above ``n`` (the caller's ``max_len``), which it reports rather
than hides.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, cast

import numpy as np

from planner.workload.fields import Loc

#: Longest length any distribution may reach (4M tokens): bounds memory of dense pmfs.
MAX_SUPPORTED_LEN = 1 << 22
#: Distributions a mixture may hold, counting those of mixtures inside it: each is a
#: dense pmf over every length, so the work grows with the count; a workload is a few.
MAX_COMPONENTS = 64

_ALIASES = {
    "point": "point", "constant": "point",
    "uniform": "uniform",
    "normal": "normal", "truncnormal": "normal", "truncated_normal": "normal",
    "lognormal": "lognormal",
    "mixture": "mixture",
    "histogram": "histogram", "empirical": "histogram",
    "binned": "binned",
}
FAMILY_TYPES = tuple(sorted(set(_ALIASES.values())))

_erfc = np.frompyfunc(math.erfc, 1, 1)


def family_of(spec: Any, loc: Loc) -> str:
    spec = loc.mapping(spec)
    kind = spec.get("type")
    if not isinstance(kind, str) or kind.lower() not in _ALIASES:
        raise loc.child("type").error(
            f"unknown distribution type {kind!r}; known: {', '.join(sorted(_ALIASES))}"
        )
    return _ALIASES[kind.lower()]


# ---------------------------------------------------------------------------- parameters
def _window(spec: Mapping[str, Any], loc: Loc) -> tuple[int, int | None]:
    """Integer lengths ``[lo, hi]`` of an optional ``low``/``high`` truncation."""
    low = loc.number(spec, "low", default=0.0, ge=0)
    high = loc.number(spec, "high", default=None, gt=low)
    lo = max(1, math.ceil(low))
    hi = None if high is None else math.floor(high)
    if hi is not None and hi < lo:
        raise loc.child("high").error(f"window [{low:g}, {high:g}] contains no length >= 1")
    if hi is not None and hi > MAX_SUPPORTED_LEN:
        raise loc.child("high").error(f"must be <= {MAX_SUPPORTED_LEN}")
    return lo, hi


def _continuous_cdf(kind: str, spec: Mapping[str, Any], loc: Loc
                    ) -> Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """(cdf, sf) evaluated at points x, for the normal and lognormal families."""
    if kind == "normal":
        loc.only_keys(spec, {"type", "mu", "sigma", "low", "high"})
        mu = loc.number(spec, "mu")
        sigma = loc.number(spec, "sigma", gt=0)

        def z(x: np.ndarray) -> np.ndarray:
            return (x - mu) / (sigma * math.sqrt(2.0))
    else:
        loc.only_keys(spec, {"type", "mu", "median", "mean", "sigma", "low", "high"})
        sigma = loc.number(spec, "sigma", gt=0)
        given = [k for k in ("mu", "median", "mean") if spec.get(k) is not None]
        if len(given) != 1:
            raise loc.error("lognormal needs exactly one of mu (log-space), median, mean")
        if given[0] == "mu":
            mu = loc.number(spec, "mu")
        elif given[0] == "median":
            mu = math.log(loc.number(spec, "median", gt=0))
        else:
            mu = math.log(loc.number(spec, "mean", gt=0)) - sigma * sigma / 2.0

        def z(x: np.ndarray) -> np.ndarray:
            with np.errstate(divide="ignore"):
                return (np.log(np.maximum(x, 0.0)) - mu) / (sigma * math.sqrt(2.0))

    def cdf_sf(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # A tiny sigma (1e-308) sends z to +-inf, where erfc is exact (0 or 2): the
        # family degenerates to a point mass, which is the right answer, not a warning.
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            zz = z(np.asarray(x, dtype=np.float64))
        return (0.5 * _erfc(-zz).astype(np.float64), 0.5 * _erfc(zz).astype(np.float64))

    return cdf_sf


def _cell_mass(cdf_sf: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]],
               lo: int, hi: int) -> np.ndarray:
    """P([s - 1/2, s + 1/2)) for s = lo..hi, taking differences on the accurate side."""
    edges = np.arange(lo, hi + 2, dtype=np.float64) - 0.5
    cdf, sf = cdf_sf(edges)
    by_cdf = np.diff(cdf)
    by_sf = -np.diff(sf)
    # Above the median the survival function has the precision, below it the cdf.
    return np.maximum(np.where(cdf[:-1] > 0.5, by_sf, by_cdf), 0.0)


# ---------------------------------------------------------------------------- support
def support_max(spec: Any, loc: Loc) -> int | None:
    """Largest length with positive probability, ``None`` for unbounded families."""
    kind = family_of(spec, loc)
    if kind == "point":
        return loc.integer(spec, "value", ge=1, le=MAX_SUPPORTED_LEN)
    if kind == "uniform":
        return loc.integer(spec, "high", ge=1, le=MAX_SUPPORTED_LEN)
    if kind in ("normal", "lognormal"):
        return _window(spec, loc)[1]
    if kind == "histogram":
        values, weights = _histogram(spec, loc)
        return int(values[weights > 0].max())
    if kind == "binned":
        edges, weights = _binned(spec, loc)
        return int(edges[1:][weights > 0].max() - 1)
    highs = [support_max(c, loc.child("components").child(i))
             for i, c in enumerate(_components(spec, loc)[0])]
    return None if any(h is None for h in highs) else max(cast("list[int]", highs))


# ---------------------------------------------------------------------------- empirical
def _histogram(spec: Mapping[str, Any], loc: Loc) -> tuple[np.ndarray, np.ndarray]:
    loc.only_keys(spec, {"type", "values", "weights"})
    values = loc.array(spec, "values", integer=True, ge=1)
    weights = loc.array(spec, "weights", ge=0)
    if values.size != weights.size:
        raise loc.child("weights").error(
            f"has {weights.size} entries but values has {values.size}")
    if values.max() > MAX_SUPPORTED_LEN:
        raise loc.child("values").error(f"lengths must be <= {MAX_SUPPORTED_LEN}")
    if weights.sum() <= 0:
        raise loc.child("weights").error("must not all be 0")
    return values, weights


def _binned(spec: Mapping[str, Any], loc: Loc) -> tuple[np.ndarray, np.ndarray]:
    loc.only_keys(spec, {"type", "edges", "weights"})
    edges = loc.array(spec, "edges", integer=True, ge=0, min_size=2)
    weights = loc.array(spec, "weights", ge=0)
    if weights.size != edges.size - 1:
        raise loc.child("weights").error(
            f"needs len(edges) - 1 = {edges.size - 1} entries, got {weights.size}")
    if np.any(np.diff(edges) <= 0):
        raise loc.child("edges").error("must be strictly increasing")
    if edges[-1] - 1 > MAX_SUPPORTED_LEN:
        raise loc.child("edges").error(f"lengths must be <= {MAX_SUPPORTED_LEN}")
    if weights.sum() <= 0:
        raise loc.child("weights").error("must not all be 0")
    if edges[0] == 0 and edges[1] == 1 and weights[0] > 0:
        raise loc.child("weights").error("bin [0, 1) holds only length 0, which has no mass")
    return edges, weights


def _components(spec: Mapping[str, Any], loc: Loc) -> tuple[list[dict[str, Any]], np.ndarray]:
    loc.only_keys(spec, {"type", "components"})
    comps = loc.require(spec, "components")
    if not isinstance(comps, list) or not comps:
        raise loc.child("components").error("expected a non-empty list of distributions")
    if _leaves(spec, MAX_COMPONENTS) > MAX_COMPONENTS:
        raise loc.child("components").error(
            f"holds more than {MAX_COMPONENTS} distributions (counting those of mixtures "
            "inside it)")
    specs, weights = [], []
    for i, comp in enumerate(comps):
        cloc = loc.child("components").child(i)
        comp = cloc.mapping(comp)
        weights.append(cloc.number(comp, "weight", gt=0))
        specs.append({k: v for k, v in comp.items() if k != "weight"})
    w = np.asarray(weights)
    return specs, w / w.sum()


def _leaves(spec: Any, cap: int) -> int:
    """Distributions under ``spec`` (1 unless it is a mixture), counted only until
    ``cap`` is passed: YAML aliases can nest a mixture in itself thousands of times over."""
    comps = spec.get("components") if isinstance(spec, Mapping) else None
    if not isinstance(comps, list):
        return 1
    total = 0
    for comp in comps:
        total += _leaves(comp, cap - total)
        if total > cap:
            break
    return total


# ---------------------------------------------------------------------------- discretise
def discretise(spec: Any, n: int, loc: Loc) -> tuple[np.ndarray, float]:
    """``(pmf over 0..n, clipped)``: the spec on lengths ``1..n``, renormalised, and the
    fraction of its probability above ``n``."""
    mass = _mass(spec, n, loc)
    kept = float(mass.sum())
    if kept <= 0:
        raise loc.error(f"has no probability on lengths 1..{n} (max_len too small?)")
    return mass / kept, max(0.0, 1.0 - kept)


def _mass(spec: Any, n: int, loc: Loc) -> np.ndarray:
    """Probability of each length 0..n under the (normalised) spec; sums to 1 - clipped."""
    kind = family_of(spec, loc)
    out = np.zeros(n + 1, dtype=np.float64)
    hi: int | None  # upper length: uniform's high, or a window's (None: unbounded)
    if kind == "point":
        loc.only_keys(spec, {"type", "value"})
        v = loc.integer(spec, "value", ge=1, le=MAX_SUPPORTED_LEN)
        if v <= n:
            out[v] = 1.0
    elif kind == "uniform":
        loc.only_keys(spec, {"type", "low", "high"})
        lo = loc.integer(spec, "low", ge=1)
        hi = loc.integer(spec, "high", ge=lo, le=MAX_SUPPORTED_LEN)
        out[lo:min(hi, n) + 1] = 1.0 / (hi - lo + 1)
    elif kind in ("normal", "lognormal"):
        cdf_sf = _continuous_cdf(kind, spec, loc)
        lo, hi = _window(spec, loc)
        cdf_lo, sf_lo = cdf_sf(np.array([lo - 0.5]))
        if hi is None:
            total = float(sf_lo[0])
        else:
            total = float(_cell_mass(cdf_sf, lo, hi).sum())
        if not total > 0:
            raise loc.error(f"has no probability mass on lengths >= {lo} (check mu/sigma)")
        top = n if hi is None else min(hi, n)
        if top >= lo:
            out[lo:top + 1] = _cell_mass(cdf_sf, lo, top) / total
    elif kind == "histogram":
        values, weights = _histogram(spec, loc)
        keep = values <= n
        np.add.at(out, values[keep], weights[keep] / weights.sum())
    elif kind == "binned":
        edges, weights = _binned(spec, loc)
        starts = np.maximum(edges[:-1], 1)
        widths = edges[1:] - starts
        # Each bin's weight spreads evenly over its lengths (a bin [0, w) over 1..w-1).
        per_len = np.where(widths > 0, weights / np.maximum(widths, 1), 0.0) / weights.sum()
        dense = np.zeros(int(edges[-1]), dtype=np.float64)
        dense[starts[0]:] = np.repeat(per_len, np.maximum(widths, 0))
        top = min(n + 1, dense.size)
        out[:top] = dense[:top]
    else:
        specs, w = _components(spec, loc)
        for i, (comp, wi) in enumerate(zip(specs, w, strict=True)):
            out += wi * _mass(comp, n, loc.child("components").child(i))
    out[0] = 0.0
    return out
