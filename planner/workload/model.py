"""The workload object: p(s|w) over input lengths plus decode and arrival statistics.

Thesis 002 §4.3 models a workload class ``w`` by a probability mass function
``p(s | w)`` over input (prompt + system prompt) lengths ``s``, with
``sum_s p(s | w) = 1`` (§4.3.1), an *average* decode length used to characterise
decode performance and a *maximum* decode length every decode island must support
(§4.3.2).  :class:`Workload` holds exactly that at token resolution, plus what the
thesis leaves implicit but a capacity planner needs: the arrival rate and its
burstiness, the prefix-cache hit rate, and -- where the source trace has it -- the
joint histogram of (input, output) lengths so a decode model can use
``E[d | s]`` instead of one global mean (§4.3.2 notes the correlation is "often not
significant"; the joint lets a caller check that per workload).

Representation: ``pmf[s]`` for ``s = 0 .. max_len`` (``pmf[0] == 0``: a request with
no input tokens has no prefill and is not a request of the workload).  Mass beyond
``max_len`` is *not* piled onto ``max_len``: it is removed and the rest renormalised,
i.e. ``pmf`` is ``p(s | w, s <= max_len)``, and :attr:`Workload.clipped_mass` records
how much was removed so reports can state it.  Piling the tail onto the last length
would make the last range look artificially heavy and cheap; conditioning keeps the
shape of everything the planner does serve.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from planner.core.errors import PlannerError

#: Default maximum input length when a distribution has no natural upper bound (8k,
#: the thesis's evaluation range rounded to a power of two).
DEFAULT_MAX_LEN = 8192

_SUM_TOL = 1e-9


def _frozen(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


def _check_pmf(pmf: Any, what: str, owner: str) -> np.ndarray:
    """Validate and copy a pmf over lengths 0..n (pmf[0] == 0, non-negative, sums to 1)."""
    arr = np.array(pmf, dtype=np.float64)
    if arr.ndim != 1 or arr.size < 2:
        raise PlannerError(f"workload {owner!r}: {what} must be a 1-D array over lengths 0..max")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise PlannerError(f"workload {owner!r}: {what} has negative or non-finite entries")
    if arr[0] != 0:
        raise PlannerError(f"workload {owner!r}: {what}[0] must be 0 (length 0 is not a request)")
    total = arr.sum()
    if abs(total - 1.0) > _SUM_TOL:
        raise PlannerError(f"workload {owner!r}: {what} sums to {total!r}, not 1")
    # Remove the last ulps of float drift so sums are 1 to machine precision.
    return _frozen(arr / total)


@dataclass(frozen=True, eq=False)
class JointHistogram:
    """Joint histogram of (input length, output length), binned on both axes.

    Bin ``b`` of the input axis is ``[input_edges[b], input_edges[b+1])`` and bin ``c``
    of the output axis is ``[output_edges[c], output_edges[c+1])``; ``counts[b, c]`` is
    the (non-negative, unnormalised) weight of requests in that cell -- the request
    count for fitted traces.  ``output_mean[b]`` is the *exact* mean output length of
    the requests whose input falls in bin ``b`` (NaN where the bin is empty): kept
    separately because the mean cannot be recovered from the output bins, which are
    powers of two wide for fitted traces.
    """

    input_edges: np.ndarray
    output_edges: np.ndarray
    counts: np.ndarray
    output_mean: np.ndarray

    def __post_init__(self) -> None:
        ie = np.array(self.input_edges, dtype=np.int64)
        oe = np.array(self.output_edges, dtype=np.int64)
        counts = np.array(self.counts, dtype=np.float64)
        mean = np.array(self.output_mean, dtype=np.float64)
        for edges, axis in ((ie, "input_edges"), (oe, "output_edges")):
            if edges.ndim != 1 or edges.size < 2 or np.any(np.diff(edges) <= 0) or edges[0] < 0:
                raise PlannerError(f"joint histogram: {axis} must be >= 2 increasing integers >= 0")
        if counts.shape != (ie.size - 1, oe.size - 1):
            raise PlannerError(
                f"joint histogram: counts has shape {counts.shape}, "
                f"expected {(ie.size - 1, oe.size - 1)} from the edges"
            )
        if not np.all(np.isfinite(counts)) or np.any(counts < 0) or counts.sum() <= 0:
            raise PlannerError("joint histogram: counts must be finite, non-negative, not all 0")
        if mean.shape != (ie.size - 1,):
            raise PlannerError("joint histogram: output_mean needs one entry per input bin")
        for name, value in (("input_edges", ie), ("output_edges", oe), ("counts", counts),
                            ("output_mean", mean)):
            object.__setattr__(self, name, _frozen(value))

    @property
    def prob(self) -> np.ndarray:
        """``counts`` normalised to a joint probability table."""
        return self.counts / self.counts.sum()

    def input_bin(self, lengths: np.ndarray) -> np.ndarray:
        """Input bin of each length, -1 outside ``[input_edges[0], input_edges[-1])``."""
        s = np.asarray(lengths)
        idx = np.searchsorted(self.input_edges, s, side="right") - 1
        inside = (idx >= 0) & (s < self.input_edges[-1])
        return np.where(inside, idx, -1)


@dataclass(frozen=True, eq=False)
class Workload:
    """A workload class ``w`` of thesis §4.3: ``p(s|w)``, decode and arrival statistics.

    Instances are immutable (the arrays are read-only), so they can be shared and
    cached; equality is identity, use :attr:`fingerprint` to compare contents.

    ``input_spec`` / ``decode_spec`` are the YAML declarations the pmfs were built
    from (a parametric family or a histogram); ``workload_to_dict`` writes them back
    so a saved workload stays a few lines instead of ``max_len`` floats.  Only
    ``workload_from_dict`` sets them; when absent, ``workload_to_dict`` writes the pmf
    as a sparse histogram of its non-zero entries (both in
    :mod:`planner.workload.schema`, which builds on this module, never the reverse).
    ``trace_stats`` holds exact statistics of the source trace (count, duration,
    quantiles, dropped rows) for fitted workloads.
    """

    name: str
    pmf: np.ndarray
    decode_mean: float
    decode_max: int
    decode_pmf: np.ndarray | None = None
    joint: JointHistogram | None = None
    rate_rps: float | None = None
    cv: float | None = None
    idc: float | None = None  # index of dispersion of 1-s arrival counts (arrivals.py)
    prefix_hit_rate: float = 0.0
    provenance: str = ""
    description: str = ""
    clipped_mass: float = 0.0
    trace_stats: Mapping[str, Any] | None = None
    input_spec: Mapping[str, Any] | None = field(default=None, repr=False)
    decode_spec: Mapping[str, Any] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        name = str(self.name)
        object.__setattr__(self, "pmf", _check_pmf(self.pmf, "pmf", name))
        dmax = self.decode_max
        if isinstance(dmax, bool) or int(dmax) != dmax or dmax < 1:
            raise PlannerError(f"workload {name!r}: decode_max must be an integer >= 1")
        object.__setattr__(self, "decode_max", int(dmax))
        dmean = float(self.decode_mean)
        if not np.isfinite(dmean) or dmean < 1 or dmean > self.decode_max:
            raise PlannerError(
                f"workload {name!r}: decode_mean must be in [1, decode_max={self.decode_max}]"
                f", got {self.decode_mean!r}"
            )
        object.__setattr__(self, "decode_mean", dmean)
        if self.decode_pmf is not None:
            dp = _check_pmf(self.decode_pmf, "decode_pmf", name)
            if dp.size != self.decode_max + 1:
                raise PlannerError(
                    f"workload {name!r}: decode_pmf covers 0..{dp.size - 1}, "
                    f"expected 0..decode_max={self.decode_max}"
                )
            object.__setattr__(self, "decode_pmf", dp)
        for attr, low in (("rate_rps", 0.0), ("cv", 0.0), ("idc", 0.0)):
            value = getattr(self, attr)
            if value is not None:
                value = float(value)
                if not np.isfinite(value) or value < low or (attr == "rate_rps" and value == 0):
                    raise PlannerError(f"workload {name!r}: {attr} must be a positive number")
                object.__setattr__(self, attr, value)
        hit = float(self.prefix_hit_rate)
        if not 0.0 <= hit <= 1.0:
            raise PlannerError(f"workload {name!r}: prefix_hit_rate must be in [0, 1], got {hit!r}")
        object.__setattr__(self, "prefix_hit_rate", hit)
        clipped = float(self.clipped_mass)
        if not 0.0 <= clipped < 1.0:
            raise PlannerError(
                f"workload {name!r}: clipped_mass must be in [0, 1), got {clipped!r}")
        object.__setattr__(self, "clipped_mass", clipped)

    # ------------------------------------------------------------------ basic views
    @property
    def max_len(self) -> int:
        """Largest input length represented (``pmf`` has ``max_len + 1`` entries)."""
        return int(self.pmf.size - 1)

    @property
    def lengths(self) -> np.ndarray:
        """``np.arange(max_len + 1)``: the length each ``pmf`` entry refers to."""
        return np.arange(self.pmf.size)

    @cached_property
    def cdf(self) -> np.ndarray:
        """``cdf[s] = P(S <= s)``."""
        c = np.cumsum(self.pmf)
        c[-1] = 1.0
        return _frozen(c)

    @cached_property
    def mean_input(self) -> float:
        """``E[S] = sum_s s p(s|w)``."""
        return float(self.lengths @ self.pmf)

    def quantile(self, q: float | np.ndarray) -> int | np.ndarray:
        """Smallest ``s`` with ``P(S <= s) >= q`` (the inverted CDF), for ``q`` in [0, 1]."""
        return _quantile(self.cdf, q)

    def decode_quantile(self, q: float | np.ndarray) -> int | np.ndarray | None:
        """Quantile of the output length, or ``None`` when there is no ``decode_pmf``."""
        if self.decode_pmf is None:
            return None
        cdf = np.cumsum(self.decode_pmf)
        cdf[-1] = 1.0
        return _quantile(cdf, q)

    def decode_mean_given_input(self, lengths: np.ndarray | int) -> np.ndarray:
        """``E[d | s]`` for each input length ``s`` (float array of the same shape).

        Uses the joint histogram's per-input-bin exact mean output where the bin has
        data; everywhere else (no joint, empty bin, ``s`` outside the joint's range)
        it falls back to :attr:`decode_mean`, the thesis's single average (§4.3.2).
        """
        s = np.asarray(lengths)
        out = np.full(s.shape, self.decode_mean, dtype=np.float64)
        if self.joint is None:
            return out
        idx = self.joint.input_bin(s)
        safe = np.where(idx >= 0, idx, 0)
        means = self.joint.output_mean[safe]
        use = (idx >= 0) & np.isfinite(means)
        out[use] = means[use]
        return out

    @cached_property
    def decode_moments(self) -> tuple[np.ndarray, np.ndarray]:
        """``(E[d | s], E[d^2 | s])`` for every input length ``s`` of the pmf.

        The output law is the simulator's (planner.sim.arrivals): the joint histogram's
        row of ``s`` (uniform integers inside an output bin, clipped to ``decode_max``)
        where the joint has data, else ``decode_pmf``, else a geometric law of mean
        ``decode_mean``.  Outputs correlate with inputs in real traces (long prompts,
        long answers), so a decode island serving long prompts does more work per
        request than the global mean says; the decode tables use these per length.
        """
        dmax = int(self.decode_max)
        n = len(self.pmf)
        if self.decode_pmf is not None:
            p = np.asarray(self.decode_pmf, float)[: dmax + 1]
            d = np.arange(len(p), dtype=float)
            tot = p.sum()
            g1, g2 = float(p @ d) / tot, float(p @ d**2) / tot
        else:
            q = 1.0 / max(float(self.decode_mean), 1.0)  # geometric on {1, 2, ...}
            g1, g2 = 1.0 / q, (2.0 - q) / q**2
        m1, m2 = np.full(n, g1), np.full(n, g2)
        if self.joint is not None:
            j = self.joint
            lo = j.output_edges[:-1].astype(float)
            hi = np.minimum(j.output_edges[1:].astype(float), dmax + 1.0)
            hi = np.maximum(hi, lo + 1.0)
            # moments of the uniform integers on [lo, hi), in closed form
            b1 = (lo + hi - 1.0) / 2.0
            b2 = ((hi - 1.0) * hi * (2 * hi - 1.0) - (lo - 1.0) * lo * (2 * lo - 1.0)) \
                / 6.0 / (hi - lo)
            rows = j.counts.sum(axis=1)
            prob = j.counts / np.where(rows > 0, rows, 1.0)[:, None]
            idx = j.input_bin(self.lengths)
            ok = idx >= 0
            ok[ok] = rows[idx[ok]] > 0
            m1[ok] = (prob @ b1)[idx[ok]]
            m2[ok] = (prob @ b2)[idx[ok]]
        return _frozen(m1), _frozen(m2)

    @cached_property
    def decode_residence(self) -> float:
        """``E[d^2] / E[d]`` over the workload: twice the mean number of tokens a
        sequence *in a decode batch* has generated.

        A running batch samples requests in proportion to their lifetime ``d`` (the
        inspection paradox), so its sequences hold ``E[d^2] / (2 E[d])`` generated
        tokens on average, not ``E[d] / 2``: with a geometric law that is about
        ``E[d]``, twice the naive figure.  Per length: :attr:`decode_moments`.
        """
        m1, m2 = self.decode_moments
        e1 = float(self.pmf @ m1)
        return float(self.pmf @ m2) / e1 if e1 > 0 else 0.0

    @cached_property
    def pmf_fingerprint(self) -> str:
        """Hash of ``pmf`` alone: everything ranges depend on (their cache key)."""
        return hashlib.sha256(self.pmf.tobytes()).hexdigest()

    @cached_property
    def fingerprint(self) -> str:
        """Hash of the numeric content (pmfs, decode, joint, arrival, prefix)."""
        h = hashlib.sha256(self.pmf.tobytes())
        h.update(repr((self.decode_mean, self.decode_max, self.rate_rps, self.cv,
                       self.prefix_hit_rate) + ((self.idc,) if self.idc is not None else ())
                      ).encode())
        if self.decode_pmf is not None:
            h.update(self.decode_pmf.tobytes())
        if self.joint is not None:
            for arr in (self.joint.input_edges, self.joint.output_edges, self.joint.counts,
                        self.joint.output_mean):
                h.update(arr.tobytes())
        return h.hexdigest()


def _quantile(cdf: np.ndarray, q: float | np.ndarray) -> int | np.ndarray:
    qa = np.asarray(q, dtype=np.float64)
    if np.any(~np.isfinite(qa)) or np.any(qa < 0) or np.any(qa > 1):
        raise PlannerError(f"quantile level must be in [0, 1], got {q!r}")
    # The tolerance absorbs cumsum rounding so that e.g. q = 0.5 on an exact 50/50
    # split lands on the first half, as it would with exact arithmetic.
    # q = 0 maps to the smallest length with positive probability.
    idx = np.searchsorted(cdf, np.maximum(qa - 1e-12, np.finfo(np.float64).tiny), side="left")
    idx = np.minimum(idx, cdf.size - 1)
    return int(idx) if idx.ndim == 0 else idx
