"""The two-stage schedule MILP: a reserved fleet, then each slot's on-demand and spot.

Columns are the island kinds of the static MILP (:mod:`planner.outer.joint`): one per
(stream, type, size, role), with that stream's range rates ``b[c, j]``.  An island
serves one stream (as in :mod:`planner.services`, a stream is a workload with its own
endpoint).  With ``d[t, s]`` the arrival rate of stream s in slot t, ``h[t]`` the slot's
hours, ``H`` the period's, ``p[s, j]`` stream s's range probabilities:

**Stage 1 (reserved).**  Reserved islands ``m[c]`` (integer) are bought for the whole
period; each slot adds on-demand ``o[c, t]`` and spot ``x[c, t]`` islands::

    minimise  H sum_c r_c g_c m_c + sum_t h_t sum_c g_c (a_c o_ct + s_c x_ct)
    s.t.  sum_j y_ctj <= m_c + o_ct + (1 - rho_c) x_ct           every c, t
          sum_{c of s, role} b_cj y_ctj >= p_sj d_ts             every t, s, role, j
          sum_c g_c o_ct <= OD_type,  sum_c g_c x_ct <= SPOT_type   every t, type
          reserved islands within the type's servers (planner.fleet.servers levels)

with ``g_c`` the island's GPUs and ``r, a, s`` the type's reserved, on-demand and spot
$/GPU-hour (:mod:`planner.fleet.tiers`).  Stage 1 keeps ``m`` integer and relaxes the
per-slot decisions, and groups the slots into at most ``levels`` load levels (slots of
similar total rate, each level carrying the largest demand of its slots per stream --
never less than a slot asks).  Its answer is the reserved fleet.

**Stage 2 (per slot).**  With ``m`` fixed every slot is its own small MILP, now with
integer ``o, x`` and the cost of starting islands: an island that is not up in the slot
before is rented ``lag`` hours ahead so that it serves from the slot's first second
(model weights over the loading path; docs/profiles.md)::

    minimise  h_t sum_c g_c (a_c o_c + s_c x_c) + lag sum_c g_c (a_c u_c + s_c v_c)
    s.t.  u_c >= o_c - o_c(t-1),  v_c >= x_c - x_c(t-1),  and the rows above for slot t

solved in time order from the quietest slot (whose predecessor is taken as running no
on-demand or spot island; the wrap-around start is then counted by
:func:`planner.schedule.accounting.account`, which prices the final schedule
cyclically).  The decomposition is not a proof of optimality: stage 1 sees level
demands and no start-up cost.  What it returns is a feasible schedule whose cost is
exactly accounted; docs/profiles.md states the gap to stage 1's own objective.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from planner.inner.backends import solve_model
from planner.inner.model import MILPBuilder
from planner.outer.columns import COLOCATED, ROLES

TIER_NAMES = ("reserved", "on_demand", "spot")


@dataclass(frozen=True)
class Kind:
    """One island kind (a column): stream, type, size, role and its rates on the
    stream's active ranges."""

    stream: int
    gpu: str
    size: int
    role: str
    rps: np.ndarray


@dataclass(frozen=True)
class TypeTiers:
    """One GPU type's tiers as the MILP reads them."""

    name: str
    prices: tuple[float, float, float]  # reserved, on-demand, spot $/GPU-h
    caps: tuple[int, int, int]  # GPUs: reservable, on demand at once, spot at once
    preemption: float
    #: (q, cap) packing rows of the reservable servers (planner.fleet.servers)
    levels: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True)
class Problem:
    kinds: tuple[Kind, ...]
    types: dict[str, TypeTiers]
    probs: tuple[np.ndarray, ...]  # per stream, over its active ranges
    demand: np.ndarray  # (T, S) requests/s
    hours: np.ndarray  # (T,)
    lag_h: float

    @property
    def period_hours(self) -> float:
        return float(self.hours.sum())

    def gpus(self) -> np.ndarray:
        return np.array([k.size for k in self.kinds], float)

    def price(self, tier: int) -> np.ndarray:
        """$/h of one island of each kind on ``tier`` (0 reserved, 1 on demand, 2 spot)."""
        return np.array([self.types[k.gpu].prices[tier] * k.size for k in self.kinds])

    def factor(self, tier: int) -> np.ndarray:
        if tier < 2:
            return np.ones(len(self.kinds))
        return np.array([1.0 - self.types[k.gpu].preemption for k in self.kinds])


@dataclass
class SlotDecision:
    on_demand: np.ndarray  # (C,) islands
    spot: np.ndarray  # (C,)
    #: (C,) the share of each island kind's capacity in use (0: its islands idle)
    load: np.ndarray


def _cap(p: Problem, tier: int) -> np.ndarray:
    """Upper bound on the islands of each kind on a per-slot tier."""
    return np.array([p.types[k.gpu].caps[tier] // k.size for k in p.kinds], float)


def _serve_rows(b: MILPBuilder, p: Problem, y_of: list[np.ndarray], demand: np.ndarray,
                scale: float) -> None:
    """sum_c b y >= p d for every stream, role and active range of one slot."""
    for s, prob in enumerate(p.probs):
        n_j = len(prob)
        need = np.asarray(prob) * float(demand[s])
        for role in ROLES:
            idx = [c for c, k in enumerate(p.kinds)
                   if k.stream == s and k.role in (role, COLOCATED)]
            if not idx:
                continue
            rows = np.tile(np.arange(n_j), len(idx))
            cols = np.concatenate([y_of[c] for c in idx])
            vals = np.concatenate([p.kinds[c].rps for c in idx]) / scale
            b.add_rows(n_j, rows, cols, vals, lower=need / scale)


def _y_block(b: MILPBuilder, p: Problem, name: str) -> list[np.ndarray]:
    widths = [len(p.probs[k.stream]) for k in p.kinds]
    y = b.add_cols(name, int(sum(widths)))
    starts = np.concatenate([[0], np.cumsum(widths)]).astype(int)
    return [y[starts[c]:starts[c + 1]] for c in range(len(p.kinds))]


def _capacity_rows(b: MILPBuilder, y_of: list[np.ndarray], islands: list[tuple[np.ndarray,
                   np.ndarray]], fixed: np.ndarray | None = None) -> None:
    """sum_j y_c - sum_tier f n_c <= fixed_c (the reserved islands when they are data)."""
    n_c = len(y_of)
    for c in range(n_c):
        cols = [y_of[c]] + [np.array([n[c]]) for n, _ in islands]
        vals = [np.ones(len(y_of[c]))] + [np.array([-f[c]]) for _, f in islands]
        b.add_rows(1, np.zeros(sum(len(x) for x in cols), int), np.concatenate(cols),
                   np.concatenate(vals), upper=0.0 if fixed is None else float(fixed[c]))


def _type_rows(b: MILPBuilder, p: Problem, cols: np.ndarray, tier: int,
               extra: float = 0.0) -> None:
    """GPUs of each type on a tier within its cap (and its server levels, reserved)."""
    sizes = p.gpus()
    for name, t in p.types.items():
        sel = [c for c, k in enumerate(p.kinds) if k.gpu == name]
        if not sel:
            continue
        rows = [(1, t.caps[tier])] + (list(t.levels) if tier == 0 else [])
        for q, cap in rows:
            pick = [c for c in sel if sizes[c] >= q]
            if pick:
                b.add_rows(1, np.zeros(len(pick), int), cols[pick], sizes[pick],
                           upper=float(cap) + extra)


def level_groups(demand: np.ndarray, levels: int) -> list[np.ndarray]:
    """Slots grouped by total rate into at most ``levels`` groups of similar load
    (equal-width bins of rate between the quietest and the busiest slot)."""
    total = demand.sum(axis=1)
    lo, hi = float(total.min()), float(total.max())
    if hi - lo <= 1e-12 * max(hi, 1.0) or len(total) <= levels:
        return [np.array([t]) for t in range(len(total))] if len(total) <= levels \
            else [np.arange(len(total))]
    edges = np.linspace(lo, hi, levels + 1)
    which = np.clip(np.searchsorted(edges, total, side="right") - 1, 0, levels - 1)
    return [np.flatnonzero(which == k) for k in range(levels) if np.any(which == k)]


@dataclass
class ReserveResult:
    reserved: np.ndarray  # (C,) islands
    objective: float  # stage 1's $ for the period (level demands, no start-ups)
    status: str
    seconds: float


def reserve(p: Problem, *, levels: int = 24, allow: Sequence[bool] = (True, True, True),
            time_limit: float = 60.0, mip_rel_gap: float = 1e-3) -> ReserveResult | None:
    """Stage 1 (module docstring); ``allow`` switches tiers off (the baselines: reserved
    only, on demand only).  None when no fleet within the caps serves every level."""
    import time

    t0 = time.perf_counter()
    groups = level_groups(p.demand, levels)
    scale = max(float(k.rps.max()) for k in p.kinds)
    b = MILPBuilder()
    res_cap = _cap(p, 0) if allow[0] else np.zeros(len(p.kinds))
    m = b.add_cols("m", len(p.kinds), cost=-p.price(0) * p.period_hours / scale,
                   integer=True, upper=res_cap)
    _type_rows(b, p, m, 0)
    for g, slots in enumerate(groups):
        hours = float(p.hours[slots].sum())
        need = p.demand[slots].max(axis=0)
        islands: list[tuple[np.ndarray, np.ndarray]] = [(m, np.ones(len(p.kinds)))]
        for tier in (1, 2):
            if not allow[tier]:
                continue
            n = b.add_cols(f"n{tier}_{g}", len(p.kinds), cost=-p.price(tier) * hours / scale,
                           upper=_cap(p, tier))
            _type_rows(b, p, n, tier)
            islands.append((n, p.factor(tier)))
        y_of = _y_block(b, p, f"y{g}")
        _capacity_rows(b, y_of, islands)
        _serve_rows(b, p, y_of, need, scale)
    model = b.build()
    out = solve_model(model, "highs", time_limit=time_limit, mip_rel_gap=mip_rel_gap)
    if out.x is None:
        return None
    mv = np.rint(model.block(out.x, "m")).astype(int)
    return ReserveResult(mv, -float(out.objective) * scale, out.status,
                         time.perf_counter() - t0)


def scale_slot(p: Problem, t: int, reserved: np.ndarray, before: SlotDecision | None, *,
               allow: Sequence[bool] = (True, True, True), demand_factor: float = 1.0,
               time_limit: float = 30.0) -> SlotDecision | None:
    """Stage 2 for slot ``t`` given the reserved islands and the slot before's on-demand
    and spot islands (None: none were up).  None when the caps cannot serve the slot."""
    n_c = len(p.kinds)
    scale = max(float(k.rps.max()) for k in p.kinds)
    hours = float(p.hours[t])
    need = p.demand[t] * demand_factor
    b = MILPBuilder()
    islands: list[tuple[np.ndarray, np.ndarray]] = []
    cols = {}
    for tier in (1, 2):
        up = _cap(p, tier) if allow[tier] else np.zeros(n_c)
        n = b.add_cols(f"n{tier}", n_c, cost=-p.price(tier) * hours / scale, integer=True,
                       upper=up)
        _type_rows(b, p, n, tier)
        islands.append((n, p.factor(tier)))
        cols[tier] = n
        # starts: u >= n - n_before, priced at lag hours of rent
        u = b.add_cols(f"u{tier}", n_c, cost=-p.price(tier) * p.lag_h / scale)
        prev = np.zeros(n_c) if before is None else \
            (before.on_demand if tier == 1 else before.spot).astype(float)
        rows = np.repeat(np.arange(n_c), 2)
        cc = np.ravel(np.column_stack([u, n]))
        vals = np.tile([1.0, -1.0], n_c)
        b.add_rows(n_c, rows, cc, vals, lower=-prev)
    y_of = _y_block(b, p, "y")
    _capacity_rows(b, y_of, islands, fixed=reserved.astype(float))
    _serve_rows(b, p, y_of, need, scale)
    # coverage: a range with demand needs an island able to serve it (as in the static
    # MILP: tiny demands are otherwise "served" within tolerances by no island)
    for s, prob in enumerate(p.probs):
        if need[s] <= 0:
            continue
        for role in ROLES:
            idx = [c for c, k in enumerate(p.kinds)
                   if k.stream == s and k.role in (role, COLOCATED)]
            for j in range(len(prob)):
                cover = [c for c in idx if p.kinds[c].rps[j] > 0]
                if not cover or reserved[cover].sum() >= 1:
                    continue
                sel = np.array(cover)
                b.add_rows(1, np.zeros(2 * len(sel), int),
                           np.concatenate([cols[1][sel], cols[2][sel]]),
                           np.ones(2 * len(sel)), lower=1.0)
    model = b.build()
    out = solve_model(model, "highs", time_limit=time_limit, mip_rel_gap=1e-4)
    if out.x is None:
        return None
    od = np.rint(model.block(out.x, "n1")).astype(int)
    sp = np.rint(model.block(out.x, "n2")).astype(int)
    load = np.zeros(n_c)
    y_all = model.block(out.x, "y")
    start = 0
    factor = p.factor(2)
    for c, k in enumerate(p.kinds):
        w = len(p.probs[k.stream])
        up = reserved[c] + od[c] + factor[c] * sp[c]
        load[c] = float(y_all[start:start + w].sum()) / up if up > 0 else 0.0
        start += w
    return SlotDecision(od, sp, np.clip(load, 0.0, 1.0))


def schedule_slots(p: Problem, reserved: np.ndarray, *,
                   allow: Sequence[bool] = (True, True, True),
                   demand_factor: np.ndarray | None = None,
                   progress: object = None) -> list[SlotDecision] | None:
    """Stage 2 for every slot, in time order from the quietest one (module docstring);
    None when a slot cannot be served."""
    n_t = len(p.hours)
    first = int(np.argmin(p.demand.sum(axis=1)))
    out: list[SlotDecision | None] = [None] * n_t
    before: SlotDecision | None = None
    factors = np.ones(n_t) if demand_factor is None else demand_factor
    for step in range(n_t):
        t = (first + step) % n_t
        got = scale_slot(p, t, reserved, before, allow=allow,
                         demand_factor=float(factors[t]))
        if got is None:
            return None
        out[t] = before = got
        if callable(progress):
            progress(step + 1, n_t)
    assert all(d is not None for d in out)
    return [d for d in out if d is not None]


__all__ = ["Kind", "Problem", "ReserveResult", "SlotDecision", "TypeTiers", "level_groups",
           "reserve", "schedule_slots", "scale_slot"]
