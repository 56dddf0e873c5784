"""Capacity planner for LLM serving on heterogeneous GPU fleets.

Data flow (one sub-package per stage):
``perfmodel`` (analytic phase model) -> ``planner.workload`` (length distributions,
ranges) -> ``planner.inner`` (assign ranges to islands) -> ``planner.outer`` (search
island partitions) -> plan / report / what-if / simulation -> ``planner.cli``.
"""

__version__ = "0.1.0"
