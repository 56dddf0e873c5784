"""Capacity planner for LLM serving on heterogeneous GPU fleets.

Data flow (one sub-package per stage):
``perfmodel`` (analytic phase model) -> ``planner.workload`` (length distributions,
ranges) -> ``planner.inner`` (assign ranges to islands) -> ``planner.outer`` (search
island partitions) -> plan / report / what-if / simulation -> ``planner.cli``.
"""

import perfmodel.float_path  # noqa: F401  (first: one numpy float path on every machine)

__version__ = "0.1.0"
