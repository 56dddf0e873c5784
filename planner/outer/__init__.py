"""The outer loop of seed 002 (§4.9): search how to split GPUs into islands.

Every search implements :class:`~planner.outer.protocol.OuterSearch`: given a
:class:`~planner.outer.protocol.SearchSpace` (inventory, budget or throughput target)
and a layout objective (the inner loop), return the best layout and the convergence
history.  ``OUTER_SEARCHES`` (:mod:`planner.outer.registry`) maps the CLI's names to
the classes:

* ``divider`` — :class:`~planner.outer.bo.DividerBO`, §4.9.2;
* ``direct`` — :class:`~planner.outer.bo.DirectBO`, §4.9.1, GP or SAASBO surrogate;
* ``random`` — :class:`~planner.outer.random_search.RandomSearch`, the baseline;
* ``exact`` — :class:`~planner.outer.exact.ExactSearch`, the MILP over every island
  size (what ``--search auto`` picks for the analytic objective).

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
from planner.outer.registry import OUTER_SEARCHES, make_search

__all__ = [
    "OUTER_SEARCHES", "make_search", "DirectBO", "DividerBO", "HistoryPoint", "Island", "Layout",
    "LayoutObjective", "OuterSearch", "RandomSearch", "Score", "SearchResult",
    "SearchSpace", "TypeSupply", "divide",
]
