"""The outer loop of seed 002 (§4.9): search how to split GPUs into islands.

Every search implements :class:`~planner.outer.protocol.OuterSearch`: given a
:class:`~planner.outer.protocol.SearchSpace` (inventory, budget or throughput target)
and a layout objective (the inner loop), return the best layout and the convergence
history.  ``OUTER_SEARCHES`` maps the CLI's names to the classes:

* ``divider`` — :class:`~planner.outer.bo.DividerBO`, §4.9.2 (the default);
* ``direct`` — :class:`~planner.outer.bo.DirectBO`, §4.9.1, GP or SAASBO surrogate;
* ``random`` — :class:`~planner.outer.random_search.RandomSearch`, the baseline.

Ax and BoTorch are imported only when a Bayesian search runs (they take seconds).
"""

from planner.outer.bo import DirectBO, DividerBO
from planner.outer.divider import divide
from planner.outer.protocol import (
    HistoryPoint,
    Island,
    Layout,
    LayoutObjective,
    OuterSearch,
    Score,
    SearchResult,
    SearchSpace,
    TypeSupply,
)
from planner.outer.random_search import RandomSearch

OUTER_SEARCHES: dict[str, type] = {
    "divider": DividerBO,
    "direct": DirectBO,
    "random": RandomSearch,
}

__all__ = [
    "OUTER_SEARCHES", "DirectBO", "DividerBO", "HistoryPoint", "Island", "Layout",
    "LayoutObjective", "OuterSearch", "RandomSearch", "Score", "SearchResult",
    "SearchSpace", "TypeSupply", "divide",
]
