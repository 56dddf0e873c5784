"""Outer searches by name (the CLI's ``--search``): one :class:`~perfmodel.registry.Registry`.

Each search declares its capabilities (:data:`~planner.outer.protocol.BLACK_BOX`,
:data:`~planner.outer.protocol.ITERATIVE`); ``auto`` is not a search but the planner's
choice among these (:func:`planner.plan.choose_search`).
"""

from __future__ import annotations

from typing import Any

from perfmodel.registry import Registry
from planner.outer.bo import DirectBO, DividerBO
from planner.outer.exact import ExactSearch
from planner.outer.protocol import BLACK_BOX, ITERATIVE
from planner.outer.random_search import RandomSearch

OUTER_SEARCHES: Registry[type] = Registry("search", "--search")
OUTER_SEARCHES.add("divider", DividerBO,
                   "Bayesian optimisation over divider positions (seed 002 §4.9.2)")
OUTER_SEARCHES.add("direct", DirectBO,
                   "Bayesian optimisation over island counts (§4.9.1; GP or SAASBO)")
OUTER_SEARCHES.add("random", RandomSearch, "random layouts (a baseline)")
OUTER_SEARCHES.add("exact", ExactSearch,
                   "the MILP over every island size: the model's optimum (docs/outer.md)")


def make_search(name: str, **options: Any) -> Any:
    """An outer search by its CLI name, built with ``options``."""
    return OUTER_SEARCHES.create(name, **options)


def takes_any_objective(name: str) -> bool:
    """Whether the search ``name`` treats the objective as a black box."""
    return OUTER_SEARCHES.can(name, BLACK_BOX)


def iterative(name: str) -> bool:
    """Whether the search ``name`` takes ``iterations`` and ``batch_size``."""
    return OUTER_SEARCHES.can(name, ITERATIVE)


__all__ = ["OUTER_SEARCHES", "iterative", "make_search", "takes_any_objective"]
