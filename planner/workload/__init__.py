"""Workloads: length distributions p(s|w), decode/arrival statistics, ranges (thesis §4.3,
§4.6.3), built-in workloads and trace loaders.

>>> from planner.workload import load_workload, make_ranges
>>> w = load_workload("thesis-fig4.2")
>>> r = make_ranges(w, 250)
"""

from planner.workload.families import FAMILY_TYPES, MAX_SUPPORTED_LEN
from planner.workload.fit import FitReport, fit_trace
from planner.workload.loaders import TRACE_FORMATS, TraceChunk, iter_trace
from planner.workload.model import DEFAULT_MAX_LEN, JointHistogram, Workload
from planner.workload.ranges import DEFAULT_RANGE_COUNT, Ranges, make_ranges
from planner.workload.registry import builtin_dir, list_workloads, load_workload, shared_dir
from planner.workload.schema import with_max_len, workload_from_dict, workload_to_dict
from planner.workload.stats import workload_summary
from planner.workload.yaml_io import read_workload, write_workload

__all__ = [
    "with_max_len",
    "workload_from_dict",
    "workload_to_dict",
    "DEFAULT_MAX_LEN",
    "DEFAULT_RANGE_COUNT",
    "FAMILY_TYPES",
    "MAX_SUPPORTED_LEN",
    "TRACE_FORMATS",
    "FitReport",
    "JointHistogram",
    "Ranges",
    "TraceChunk",
    "Workload",
    "builtin_dir",
    "fit_trace",
    "iter_trace",
    "list_workloads",
    "load_workload",
    "make_ranges",
    "read_workload",
    "shared_dir",
    "workload_summary",
    "write_workload",
]
