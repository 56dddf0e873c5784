"""Search-space encodings of island layouts: divider (§4.9.2) and direct (§4.9.1).

An encoding turns a point of a box (plus linear constraints) into a valid layout, and
draws valid points at random.  It is pure — no Ax here — so that the Bayesian
searches, random search and the tests share one definition of each space.

**Divider** (seed 002 §4.9.2), per usable GPU type t:

* ``n{t}``: integer target island count n_t in [1, N_t], N_t = floor(available_t /
  I_min,t), optionally capped by ``max_islands_per_type``;
* ``s{t}``: float skew s_t in [-S, S] (thesis: S = 5);
* ``u{t}`` (procurement only): float share u_t in [0, 1] of the available count to
  use, c_t = min(available_t, floor(u_t (available_t + 1))) — every count 0..available
  gets an equal slice of [0, 1].  Counts over the budget are scaled down by
  :func:`planner.outer.procurement.fit_budget`.  Without procurement (no budget, or
  the whole inventory fits it: throughput never falls when GPUs are added) u_t is
  omitted and c_t = available_t, exactly as in the thesis.

The islands of type t are ``divide(c_t, n_t, s_t, I_min,t)``.  A parameter whose range
is a single point (N_t = 1: its skew has no effect either) is left out of the box and
held at that value, so the surrogate never sees a constant input.

**Direct** (seed 002 §4.9.1), per usable type t, K slots x_{t,k} (U_t = available_t,
or fewer if a single slot alone would break the budget) with

    sum_k x_{t,k} <= available_t          for every t (when K U_t > available_t)
    sum_t price_t sum_k x_{t,k} <= B      (when the budget can bind)

The thesis declares the slots integer.  Here they are continuous in [0, U_t + 1) and
the island size is floor(x_{t,k}): flooring never raises a sum, so every point that
satisfies the constraints decodes to a layout that satisfies them too, and each
integer size owns an interval of equal width.  (Ax 1.x's own handling of integer
parameters either rounds relaxed values to nearest — measured to overshoot the budget
constraint by up to $86/h over 48 slots, after which BoTorch rejects the whole batch —
or optimises them with a discrete optimiser several times slower; §4.9.1 itself
reports that rejected proposals were the direct encoding's main inefficiency.)
A slot of size 0 < floor(x) < I_min,t is not an island: its GPUs stay idle (dropping
it keeps every constraint, unlike rounding it up).  The slots choose the counts
themselves, so procurement needs no extra parameter.

I_min,t = max(the search's ``min_island``, the inventory's ``min_island`` of t): the
search may ask for larger islands than the inventory demands, never smaller ones.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from planner.core.errors import PlannerError
from planner.outer.divider import divide
from planner.outer.procurement import fit_budget
from planner.outer.protocol import (
    COST_TOL,
    Island,
    Layout,
    SearchSpace,
    affordable,
    canonical_layout,
)

Params = dict[str, float | int]

# Direct slots live in [0, U + SLOT_TOP] and decode by floor: the top size U keeps an
# interval of (almost) unit width like every other size.
SLOT_TOP = 0.999
# floor(x + eps): an optimiser landing 1e-9 below an integer means that integer.
FLOOR_EPS = 1e-7


@dataclass(frozen=True)
class Param:
    name: str
    lower: float
    upper: float
    is_int: bool


@dataclass(frozen=True)
class LinearConstraint:
    """sum_i coeffs[i] * param_i <= rhs."""

    coeffs: tuple[tuple[str, float], ...]
    rhs: float

    def to_ax(self) -> str:
        terms = " + ".join(n if c == 1 else f"{c!r} * {n}" for n, c in self.coeffs)
        return f"{terms} <= {self.rhs!r}"

    def holds(self, x: Mapping[str, float]) -> bool:
        lhs = sum(c * float(x[n]) for n, c in self.coeffs)
        return lhs <= self.rhs * (1 + COST_TOL) + COST_TOL


def _uniforms(n: int, d: int, seed: int, quasi: bool) -> np.ndarray:
    """``n x d`` points in [0, 1): scrambled Sobol (``quasi``) or iid uniform."""
    if d == 0:
        return np.zeros((n, 0))
    if quasi:
        from scipy.stats import qmc  # scipy.stats takes ~1 s to import: only when used

        with warnings.catch_warnings():  # n not a power of two: fine for a warm start
            warnings.simplefilter("ignore")
            return qmc.Sobol(d, scramble=True, seed=seed).random(n)
    return np.random.default_rng(seed).random((n, d))


def _int_from_unit(u: float, lower: float, upper: float) -> int:
    lo, hi = int(lower), int(upper)
    return min(hi, lo + int(math.floor(u * (hi - lo + 1))))


@dataclass(frozen=True)
class _TypeInfo:
    index: int
    name: str
    available: int
    price: float
    min_island: int


def _usable_types(space: SearchSpace, min_island: int | None) -> list[_TypeInfo]:
    out = []
    for i, t in enumerate(space.types):
        m = max(min_island or 1, t.min_island)
        cap = t.available
        if space.budget is not None and t.price_per_hour > 0:
            cap = min(cap, affordable(space.budget, t.price_per_hour))
        if t.snap_down(cap) >= m:
            out.append(_TypeInfo(i, t.name, t.available, t.price_per_hour, m))
    if not out:
        raise PlannerError("search space: no GPU type has enough GPUs (within the budget) "
                           "for one island of its minimum size")
    return out


class DividerEncoding:
    """Seed 002 §4.9.2: (n_t, s_t[, u_t]) per type -> ``divide`` per type."""

    name = "divider"

    def __init__(self, space: SearchSpace, *, skew_range: float = 5.0,
                 min_island: int | None = 2, max_islands_per_type: int | None = None):
        if not skew_range >= 0:
            raise PlannerError("divider: skew_range must be >= 0")
        if max_islands_per_type is not None and max_islands_per_type < 1:
            raise PlannerError("divider: max_islands_per_type must be >= 1")
        self.space = space
        self.skew_range = float(skew_range)
        self.types = _usable_types(space, min_island)
        self.procures = space.procures
        self.n_max = {}
        params: list[Param] = []
        for t in self.types:
            n_max = t.available // t.min_island
            if max_islands_per_type is not None:
                n_max = min(n_max, max_islands_per_type)
            self.n_max[t.index] = n_max
            if n_max > 1:
                params.append(Param(f"n{t.index}", 1, n_max, True))
                if self.skew_range > 0:
                    params.append(Param(f"s{t.index}", -self.skew_range, self.skew_range,
                                        False))
            if self.procures:
                params.append(Param(f"u{t.index}", 0.0, 1.0, False))
        self.params: tuple[Param, ...] = tuple(params)
        self.constraints: tuple[LinearConstraint, ...] = ()
        self._settings = {"encoding": "divider", "skew_range": self.skew_range,
                          "min_island": min_island,
                          "max_islands_per_type": max_islands_per_type}

    def settings(self) -> dict:
        return dict(self._settings)

    def counts(self, x: Mapping[str, float]) -> list[int]:
        """GPUs of each usable type the point procures (after the budget repair)."""
        if not self.procures:
            return [t.available for t in self.types]
        raw = [min(t.available, int(math.floor(float(x[f"u{t.index}"]) * (t.available + 1))))
               for t in self.types]
        return fit_budget(raw, [t.price for t in self.types],
                          [t.min_island for t in self.types], self.space.budget)

    def decode(self, x: Mapping[str, float]) -> Layout:
        islands: list[Island] = []
        for t, c in zip(self.types, self.counts(x), strict=True):
            n = int(round(float(x.get(f"n{t.index}", self.n_max[t.index]))))
            s = float(x.get(f"s{t.index}", 0.0))
            sizes = divide(c, n, s, t.min_island)
            # at server granularity: whole servers or shares of one, packed
            sizes = self.space.types[t.index].fit_sizes(sizes, t.min_island)
            islands.extend((t.name, g) for g in sizes)
        return canonical_layout(islands)

    def sample(self, n: int, seed: int, quasi: bool = True) -> list[Params]:
        u = _uniforms(n, len(self.params), seed, quasi)
        out = []
        for row in u:
            p: Params = {}
            for v, par in zip(row, self.params, strict=True):
                p[par.name] = (_int_from_unit(v, par.lower, par.upper) if par.is_int
                               else par.lower + float(v) * (par.upper - par.lower))
            out.append(p)
        return out


class DirectEncoding:
    """Seed 002 §4.9.1: K integer slots per type, per-type and budget sum constraints."""

    name = "direct"

    def __init__(self, space: SearchSpace, *, slots: int = 16, min_island: int | None = 2):
        if slots < 1:
            raise PlannerError("direct: slots must be >= 1")
        self.space = space
        self.slots = int(slots)
        self.types = _usable_types(space, min_island)
        params: list[Param] = []
        cons: list[LinearConstraint] = []
        budget_terms: list[tuple[str, float]] = []
        most = 0.0  # the most the slots can cost when every per-type constraint holds
        for t in self.types:
            cap = t.available
            if space.budget is not None and t.price > 0:
                cap = min(cap, affordable(space.budget, t.price))
            names = [f"x{t.index}_{k}" for k in range(self.slots)]
            params.extend(Param(nm, 0.0, cap + SLOT_TOP, False) for nm in names)
            if self.slots * (cap + SLOT_TOP) > t.available:
                cons.append(LinearConstraint(tuple((nm, 1.0) for nm in names),
                                             float(t.available)))
            budget_terms.extend((nm, t.price) for nm in names if t.price > 0)
            most += t.price * min(self.slots * (cap + SLOT_TOP), t.available)
        if space.budget is not None and most > space.budget * (1 + COST_TOL):
            cons.append(LinearConstraint(tuple(budget_terms), float(space.budget)))
        self.params = tuple(params)
        self.constraints = tuple(cons)
        self._settings = {"encoding": "direct", "slots": self.slots, "min_island": min_island}

    def settings(self) -> dict:
        return dict(self._settings)

    def slot_values(self, x: Mapping[str, float]) -> dict[int, list[int]]:
        """floor(x_{t,k}), then a guard against optimiser tolerance: if the floors still
        exceed a type's count or the budget (possible only when the point violates a
        constraint by ~1e-6 on an integer boundary), shave the largest slots."""
        out = {t.index: [max(0, int(math.floor(float(x[f"x{t.index}_{k}"]) + FLOOR_EPS)))
                         for k in range(self.slots)] for t in self.types}
        for t in self.types:
            s = out[t.index]
            while sum(s) > t.available:
                s[s.index(max(s))] -= 1
        b = self.space.budget
        paid = [t for t in self.types if t.price > 0]
        while b is not None and paid and (sum(t.price * sum(out[t.index]) for t in paid)
                                          > b * (1 + COST_TOL)):
            t = max(paid, key=lambda t: (max(out[t.index]), t.price))
            s = out[t.index]
            s[s.index(max(s))] -= 1
        return out

    def decode(self, x: Mapping[str, float]) -> Layout:
        slots = self.slot_values(x)
        return canonical_layout((t.name, g) for t in self.types
                                for g in self.space.types[t.index].fit_sizes(
                                    slots[t.index], t.min_island))

    def sample(self, n: int, seed: int, quasi: bool = True) -> list[Params]:
        """Valid points spread over the constrained polytope.

        Per type, K + 1 exponentials (from Sobol or uniform draws by -log u) normalised
        to a Dirichlet(1, ..., 1) split of the type's GPUs over the K slots and a slack,
        i.e. uniform over {x >= 0, sum_k x_k <= available}.  When the search procures
        (target mode or a binding budget) the total used is drawn uniformly instead, so
        that small fleets are proposed as often as large ones.  Floors keep every
        per-type sum; a point over the budget is scaled down whole and floored again.
        """
        k = self.slots
        d = len(self.types) * (k + 1)
        u = _uniforms(n, d, seed, quasi)
        u = np.clip(u, 1e-12, 1 - 1e-12)
        out = []
        for row in u:
            x: dict[int, np.ndarray] = {}
            for j, t in enumerate(self.types):
                seg = row[j * (k + 1):(j + 1) * (k + 1)]
                e = -np.log(seg[:k])
                share = e / e.sum()
                if self.space.procures:
                    total = seg[k] * t.available
                else:
                    slack = -math.log(seg[k])
                    total = (1 - slack / (e.sum() + slack)) * t.available
                x[t.index] = np.floor(share * total)
            cost = sum(t.price * x[t.index].sum() for t in self.types)
            b = self.space.budget
            if b is not None and cost > b:
                for t in self.types:
                    x[t.index] = np.floor(x[t.index] * (b / cost))
            p: Params = {}
            for t in self.types:
                for s in range(k):
                    p[f"x{t.index}_{s}"] = float(x[t.index][s])
            out.append(p)
        return out


Encoding = DividerEncoding | DirectEncoding
