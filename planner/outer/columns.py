"""The columns of the island MILPs: candidate island sizes, dominance pruning, rounding.

Shared by the one-model MILP (:mod:`planner.outer.exact`) and the several-service one
(:mod:`planner.outer.joint`): which (type, size, role) columns exist, which of them can
be dropped without losing an optimum, and how an LP relaxation's fractional island
counts become whole ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from planner.outer.protocol import COST_TOL, SearchSpace, TypeSupply, affordable

ROLES = ("prefill", "decode")
#: The colocated role (both phases on one island), as the inner solver names it.
COLOCATED = "both"

#: (type, size) -> (bP, bD) range tables; (type, size) -> bA colocated range rates.
Tables = Mapping[tuple[str, int], tuple[np.ndarray, np.ndarray]]
BothTables = Mapping[tuple[str, int], np.ndarray]


@dataclass(frozen=True)
class Candidate:
    gpu: str
    size: int
    role: str
    rps: np.ndarray  # (J,) throughput on each range


#: Above this many GPUs of a type, candidate island sizes thin out geometrically.
LATTICE_FROM = 256


def size_lattice(lo: int, hi: int) -> list[int]:
    """Island sizes lo..hi: every size up to 32, then eight per octave (36, 40, ... 64,
    72, ..., 128, 144, ...).  At 4,096 GPUs of a type that is 88 sizes instead of 4,096
    perf-model tables; any count of GPUs is still reachable as a sum of sizes, and the
    throughput of an island grows near-linearly with its size, so a missing size costs
    a fraction of a per cent (the lattice's spacing relative to the size, 1/8 at most,
    shared over the islands of a plan)."""
    out = []
    g = max(1, lo)
    while g <= hi:
        out.append(g)
        step = 1 if g < 32 else 2 ** (int(np.log2(g)) - 3)
        g = g + step
    return out


def candidate_sizes(space: SearchSpace, max_island: int | None = None) -> dict[str, list[int]]:
    """Island sizes of each type the search may use: what the type allows
    (:meth:`~planner.outer.protocol.TypeSupply.sizes`: min_island .. available, whole
    servers and shares of one at server granularity) within what the budget allows, and
    at most ``max_island`` GPUs when given; a geometric lattice (:func:`size_lattice`,
    over server counts at server granularity) for types with more than
    ``LATTICE_FROM`` GPUs.

    The cap matters when availability is large (e.g. market availability of
    budget / price GPUs in ``planner whatif``): without it every size up to thousands of
    GPUs would be benchmarked.  With a cap the optimum is over islands of at most that
    size, which is a restriction of the model, not a relaxation."""
    out = {}
    for t in space.types:
        top = t.available
        if space.budget is not None and t.price_per_hour > 0:
            top = min(top, affordable(space.budget, t.price_per_hour))
        if max_island is not None:
            top = min(top, int(max_island))
        sizes = t.sizes(top)
        if t.available > LATTICE_FROM:
            node = t.gpus_per_node
            if node:  # whole servers on the lattice of server counts, shares all kept
                keep = {k * node for k in size_lattice(1, top // node)}
                sizes = [g for g in sizes if g < node or g in keep]
            else:
                sizes = size_lattice(max(1, t.min_island), top)
        out[t.name] = sizes
    return out


def _dominated(b: np.ndarray, g: int, options: list[int], allowed: set[int],
               column: Mapping[int, np.ndarray], tol: float) -> bool:
    """Whether an island of size ``g`` with rates ``b`` is matched, within ``tol`` in
    every range, by one smaller island or two smaller ones g1 + (g - g1) of the same
    type and role (``column[size]``: that role's rates)."""
    floor = (1.0 - tol) * b - 1e-12 * b.max()
    # a smaller island alone (the rest of the GPUs unused) ...
    if any(np.all(column[g1] >= floor) for g1 in options if g1 < g):
        return True
    # ... or two smaller islands side by side
    return any(np.all(column[g1] + column[g - g1] >= floor)
               for g1 in options if g1 <= g - g1 and (g - g1) in allowed)


def prune(tables: Tables, sizes: dict[str, list[int]], tol: float = 1e-9,
          both: BothTables | None = None) -> tuple[list[Candidate], int]:
    """Keep (type, size, role) columns that serve the role and are not dominated by one
    or two smaller islands of the same type delivering at least (1 - tol) of their
    throughput in every range.  With tol > 0 the pruned optimum is within a factor
    (1 - tol) of the full one (each dropped island can be replaced by islands giving
    (1 - tol) of its service), so bound / (1 - tol) bounds the full problem.

    ``both``: colocated range rates per (type, size) (role ``"both"``), None when the
    context offers no colocated islands.  A colocated column is pruned like the others
    (by smaller colocated islands), and also when a prefill island g1 and a decode
    island g2 of its type with g1 + g2 <= g each give (1 - tol) of its rate in every
    range: they put at least that into both phases' rows."""
    kept, dropped = [], 0
    for gpu, options in sizes.items():
        allowed = set(options)
        for r, role in enumerate(ROLES):
            column = {g: tables[(gpu, g)][r] for g in options}
            for g in options:
                b = column[g]
                if not np.any(b > 0) or _dominated(b, g, options, allowed, column, tol):
                    dropped += 1
                else:
                    kept.append(Candidate(gpu, g, role, b))
        if both is None:
            continue
        column = {g: np.asarray(both[(gpu, g)], float) for g in options}
        for g in options:
            b = column[g]
            if not np.any(b > 0) or _dominated(b, g, options, allowed, column, tol):
                dropped += 1
                continue
            floor = (1.0 - tol) * b - 1e-12 * b.max()
            # the smallest prefill island and the smallest decode island each covering it
            pre = [g1 for g1 in options if np.all(tables[(gpu, g1)][0] >= floor)]
            dec = [g2 for g2 in options if np.all(tables[(gpu, g2)][1] >= floor)]
            if pre and dec and min(pre) + min(dec) <= g:
                dropped += 1
            else:
                kept.append(Candidate(gpu, g, COLOCATED, b))
    return kept, dropped


def round_counts(n: np.ndarray, gpus: list[str], sizes: np.ndarray, cost: np.ndarray,
                 available: dict[str, int], budget: float | None,
                 supply: dict[str, TypeSupply] | None = None) -> np.ndarray:
    """Integer island counts from the LP relaxation's fractional ones ``n``.

    Rounding down alone is useless here: the LP likes to spread a type over many sizes
    at fractions below one, so the floor is often the empty layout.  So: floor, then
    round up in order of decreasing fractional part while the type's inventory (and,
    given ``supply``, its servers) and the budget allow -- the islands the LP wanted
    most are bought first."""
    counts = np.floor(n + 1e-6).astype(int)
    used = {g: 0 for g in available}
    held: dict[str, list[int]] = {g: [] for g in available}
    for g, size, k in zip(gpus, sizes, counts, strict=True):
        used[g] += int(size) * int(k)
        held[g].extend([int(size)] * int(k))
    money = float(counts @ cost)
    frac = n - counts
    for i in np.argsort(-frac, kind="stable"):
        if frac[i] <= 1e-6:
            break
        g = gpus[i]
        if used[g] + sizes[i] > available[g]:
            continue
        if supply is not None and not supply[g].holds([*held[g], int(sizes[i])]):
            continue
        if budget is not None and money + cost[i] > budget * (1 + COST_TOL):
            continue
        held[g].append(int(sizes[i]))
        counts[i] += 1
        used[g] += int(sizes[i])
        money += float(cost[i])
    return counts


__all__ = ["BothTables", "COLOCATED", "Candidate", "LATTICE_FROM", "ROLES", "Tables",
           "candidate_sizes", "prune", "round_counts", "size_lattice"]
