"""The thesis's inner-loop test cases (seed 002 Table 5.2), as data.

Each case is a fixed island layout; §5.2 solves it for DeepSeek-V3 on the synthetic
workload of Fig. 4.2.  Used by tests/plan/test_table52_cases.py and
scripts/inner_cases.py (which redraws Figs. 5.1-5.4 for them).
"""

from __future__ import annotations

from perfmodel import get_gpu, get_model
from perfmodel.calibration import Calibration
from planner.context.evaluate import PlanningContext
from planner.outer.protocol import Layout, canonical_layout
from planner.workload import load_workload, make_ranges


def _rep(gpu: str, *size_count: tuple[int, int]) -> list[tuple[str, int]]:
    return [(gpu, size) for size, count in size_count for _ in range(count)]


TABLE_5_2: dict[str, Layout] = {
    "a": canonical_layout(_rep("DGX-B300", (32, 8))),
    "b": canonical_layout(_rep("DGX-B300", (32, 2), (16, 4), (8, 8), (4, 16))),
    "c": canonical_layout(_rep("DGX-B300", (32, 2)) + _rep("Rubin-NVL144", (32, 2))
                          + _rep("H800", (32, 2)) + _rep("H20", (32, 2))),
    "d": canonical_layout(_rep("DGX-B300", (32, 1), (16, 1), (8, 1), (4, 2))
                          + _rep("Rubin-NVL144", (32, 1), (16, 1), (8, 1), (4, 2))
                          + _rep("H200", (8, 4), (4, 8)) + _rep("H20", (8, 4), (4, 8))),
}

TITLES = {"a": "(a) homogeneous, same size", "b": "(b) homogeneous, different sizes",
          "c": "(c) heterogeneous, same size", "d": "(d) heterogeneous, different sizes"}

# §5.2 uses the range width of §4.6.3 over the 0..8000 support of Fig. 4.2.
RANGE_WIDTH = 250
WORKLOAD = "thesis-fig4.2"
MODEL = "deepseek-v3"
#: The thesis computed its tables with Shallowsim: rooflines at constant efficiencies.
THESIS_ENGINE = "roofline"


def context():
    """Planning context of §5.2: DeepSeek-V3, the Fig. 4.2 workload, catalog GPUs, and
    the thesis's own Shallowsim-style perf model (``engine="roofline"``), so its cases
    are priced as the thesis priced them."""

    w = load_workload(WORKLOAD)
    gpus = {g: get_gpu(g) for g in ("DGX-B300", "Rubin-NVL144", "H800", "H200", "H20")}
    return PlanningContext(get_model(MODEL), w, make_ranges(w, RANGE_WIDTH), gpus,
                           calib=Calibration(engine=THESIS_ENGINE), network=None, thesis=True)
