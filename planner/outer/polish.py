"""Local refinement of a layout: the last stretch a global search leaves.

The BO's surrogate locates the good region of the divider space; inside it, the
optimum usually differs from the incumbent by a few GPUs moved between islands or an
island split or merged -- steps the two-parameters-per-type divider cannot express
exactly.  :func:`polish` walks those steps (first-improvement hill climbing over a
fixed, deterministic neighbourhood: the first neighbour that ranks higher is taken and
the walk restarts from it) until no step improves or the evaluation budget is spent:

* **resize**: an island grows or shrinks by 1, 2, 4, ... GPUs, or to the next size
  its type allows (at server granularity: the next whole server or share; within the
  type's availability and servers, the minimum island size and the budget);
* **move**: GPUs pass from one island to another of the same type;
* **split** an island in two (halves, or a quarter, an eighth, or 1, 2, 4, 8 GPUs
  split off), or **merge** two islands of one type;
* **add** an island of a type, at a size already used for it or the minimum,
  or **drop** one.

Every neighbour is scored by the search's own objective through its tracker, so the
cache, the history and the best-so-far include the refinement (phase ``"polish"``);
a step is taken only to a *qualifying* layout that ranks higher
(:meth:`~planner.outer.protocol.SearchSpace.rank_key`), so in target mode it lowers
$/h at the target and in throughput mode it raises requests/s within the budget.
"""

from __future__ import annotations

from collections.abc import Iterable

from planner.outer.protocol import Layout, SearchSpace, canonical_layout


def neighbours(layout: Layout, space: SearchSpace) -> list[Layout]:
    """Every layout one step away (module docstring), deduplicated, in a fixed order,
    and within the inventory, minimum island sizes and budget."""
    supply = {t.name: t for t in space.types}
    isl = list(layout)
    used: dict[str, int] = {}
    for t, g in isl:
        used[t] = used.get(t, 0) + g
    out: list[Layout] = []

    def emit(cand: Iterable[tuple[str, int]]) -> None:
        lay = canonical_layout(cand)
        if lay and lay != layout and space.fits(lay):
            out.append(lay)

    for i, (t, g) in enumerate(isl):
        rest = isl[:i] + isl[i + 1:]
        free = supply[t].available - used[t]
        step = 1
        while step <= max(g, free):
            if step <= free:
                emit(rest + [(t, g + step)])
            if g - step >= supply[t].min_island:
                emit(rest + [(t, g - step)])
            step *= 2
        if supply[t].shape is not None:  # the allowed sizes on either side
            allowed = supply[t].sizes(g + free)
            k = allowed.index(g) if g in allowed else -1
            for j in (k - 1, k + 1):
                if 0 <= j < len(allowed) and k >= 0:
                    emit(rest + [(t, allowed[j])])
        lo = supply[t].min_island
        for part in sorted({g // 2, g // 4, g // 8, 1, 2, 4, 8}):
            if lo <= part and g - part >= lo and part <= g - part:
                emit(rest + [(t, part), (t, g - part)])
        emit(rest)  # drop it
        for j in range(i + 1, len(isl)):
            u, h = isl[j]
            if u != t:
                continue
            others = [x for k, x in enumerate(isl) if k not in (i, j)]
            emit(others + [(t, g + h)])  # merge
            for d in (1, 2, 4, 8):
                if g - d >= supply[t].min_island:
                    emit(others + [(t, g - d), (t, h + d)])
                if h - d >= supply[t].min_island:
                    emit(others + [(t, g + d), (t, h - d)])
    for t, sup in supply.items():
        free = sup.available - used.get(t, 0)
        smallest = sup.sizes()[:1] or [sup.min_island]
        sizes = sorted({g for u, g in isl if u == t} | set(smallest))
        for g in sizes:
            if g <= free:
                emit(isl + [(t, g)])
    seen, unique = set(), []
    for lay in out:
        if lay not in seen:
            seen.add(lay)
            unique.append(lay)
    return unique


def polish(tracker, start: Layout, space: SearchSpace, budget: int) -> int:
    """Hill-climb from ``start`` with ``tracker.evaluate`` (module docstring); returns
    the number of objective calls made (cached repeats are free)."""
    spent = 0
    current = canonical_layout(start)
    score = tracker.evaluate(current, "polish")
    improved = True
    while improved and spent < budget:
        improved = False
        for cand in neighbours(current, space):
            if spent >= budget:
                break
            before = tracker.evaluations
            s = tracker.evaluate(cand, "polish")
            spent += tracker.evaluations - before
            if space.qualifies(s) and (not space.qualifies(score)
                                       or space.rank_key(s) > space.rank_key(score)):
                current, score, improved = cand, s, True
                break
    return spent


__all__ = ["neighbours", "polish"]
