"""Budget repair: the most a chosen GPU mix can keep when it costs more than the budget.

The procurement extension (issue 5, item 5) lets the search choose counts c_t <=
available_t of every type as well as how to split them.  A proposal whose counts cost
more than the budget B is not rejected (rejections waste evaluations and teach the
surrogate nothing, seed 002 §4.9.1's complaint about the direct encoding); it is
*repaired* by scaling the mix down, which keeps the proportions the search chose:

1. lambda = B / sum_t c_t p_t, ideal x_t = lambda c_t (so sum_t x_t p_t = B exactly).
2. A type whose ideal count is below its minimum island m_t cannot form an island: it
   is dropped (c_t := 0) and step 1 is redone for the rest, which can only raise the
   others' lambda.  Repeat until no type is dropped.
3. Largest remainder, as in the divider (§4.9.2): floor every x_t, then visit the
   types in order of decreasing fractional part and add one GPU to each whose price
   still fits the leftover budget (never above its chosen c_t); repeat the visit
   until no type can take one more.

Every step keeps sum_t c'_t p_t <= B, c'_t <= c_t, and each c'_t is 0 or >= m_t.  The
result is the largest (most expensive) scaled-down vector of the chosen proportions
that fits: no kept type below its chosen count could take one more GPU within the
budget.  It is not the knapsack optimum over all integer vectors, which would ignore
the proportions the search asked for.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from planner.outer.protocol import COST_TOL


def fit_budget(counts: Sequence[int], prices: Sequence[float], min_sizes: Sequence[int],
               budget: float | None) -> list[int]:
    """Counts scaled down to cost at most ``budget`` (unchanged if they already fit).

    Counts below their type's minimum island are zeroed in any case: such GPUs can
    never be placed in an island, so they are not procured.
    """
    if not (len(counts) == len(prices) == len(min_sizes)):
        raise ValueError("fit_budget: counts, prices and min_sizes differ in length")
    c = [int(n) if n >= m else 0 for n, m in zip(counts, min_sizes, strict=True)]
    if budget is None or _cost(c, prices) <= budget * (1 + COST_TOL):
        return c
    if any(p < 0 for p in prices):
        raise ValueError("fit_budget: negative price")
    keep = [n > 0 for n in c]
    while True:
        # Free GPUs (price 0) never strain the budget: they keep their chosen count.
        paid = sum(c[i] * prices[i] for i in range(len(c)) if keep[i])
        lam = min(1.0, budget / paid) if paid > 0 else 1.0
        ideal = [c[i] * lam if keep[i] else 0.0 for i in range(len(c))]
        too_small = [i for i in range(len(c))
                     if keep[i] and ideal[i] + 1e-9 < min_sizes[i]]
        if not too_small:
            break
        for i in too_small:
            keep[i] = False
    out = [int(math.floor(x)) for x in ideal]
    left = budget - _cost(out, prices)
    order = sorted(range(len(c)), key=lambda i: (-(ideal[i] - out[i]), i))
    # Passes in that order until no kept type can take another GPU: after drops in
    # step 2 or when one type's price exceeds what is left, a single pass can leave
    # room for several cheaper GPUs.
    grew = True
    while grew:
        grew = False
        for i in order:
            if keep[i] and out[i] < c[i] and prices[i] <= left * (1 + COST_TOL):
                out[i] += 1
                left -= prices[i]
                grew = True
    # Float noise can leave an ideal a hair under m_t (kept above) that floors below it.
    return [n if n >= m else 0 for n, m in zip(out, min_sizes, strict=True)]


def _cost(counts: Sequence[int], prices: Sequence[float]) -> float:
    return sum(n * p for n, p in zip(counts, prices, strict=True))
