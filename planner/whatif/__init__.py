"""Procurement what-if studies (``planner whatif``): budget and price sweeps, adding or
removing a GPU type, workload mix shifts, homogeneous vs heterogeneous at equal cost,
the cost/throughput Pareto front and the marginal value of the next X $/h.

>>> from pathlib import Path
>>> from planner.whatif import load_spec, run_whatif, write_whatif
>>> spec = load_spec(Path("docs/whatif-example.yaml"))          # doctest: +SKIP
>>> result = run_whatif(spec)                                    # doctest: +SKIP
>>> write_whatif(result, Path("reports/whatif"))                 # doctest: +SKIP

Pipeline: spec.py (YAML + flags -> WhatIfSpec) -> scenarios.py (studies -> scenarios)
-> run.py: each scenario planned as ``planner plan`` plans it (request.py: the
PlanRequest ``planner plan`` builds; solve.py: make_plan, then close_plan -- every
scenario's capacity is the headline ``planner plan`` would print; correction.py: a
large study's sample and the correction of the others, with its measured error) ->
marginal.py (next X $/h) -> report.py (files: tables.py for the figures and words,
plots.py, html.py for whatif.html).  pareto.py says which scenarios share a front.
docs/whatif.md describes the format and the method.
"""

from planner.whatif.correction import Correction
from planner.whatif.marginal import MarginalAnswer, MarginalOption
from planner.whatif.pareto import pareto_mask
from planner.whatif.report import render, write_whatif
from planner.whatif.request import plan_request
from planner.whatif.run import WhatIfResult, run_whatif
from planner.whatif.scenarios import Scenario, expand
from planner.whatif.solve import Outcome, WhatIfRunner
from planner.whatif.spec import Flags, WhatIfSpec, load_spec
from planner.whatif.workloads import mix_workloads

__all__ = [
    "Correction",
    "Flags",
    "MarginalAnswer",
    "MarginalOption",
    "Outcome",
    "Scenario",
    "WhatIfResult",
    "WhatIfRunner",
    "WhatIfSpec",
    "expand",
    "load_spec",
    "mix_workloads",
    "pareto_mask",
    "plan_request",
    "render",
    "run_whatif",
    "write_whatif",
]
