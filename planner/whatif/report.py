"""A what-if study as files: whatif.csv, whatif.json, PNG plots, whatif.md and
whatif.html.

Pure rendering (``render``: result -> {file name: bytes}) separate from the one write
(``write_whatif``), which goes through planner.run.files.publish: the folder either
appears complete or is left as it was, and ``whatif.json`` is replaced last.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import Any

from planner.run.files import publish
from planner.run.schema import json_safe
from planner.whatif.html import whatif_html
from planner.whatif.pareto import pareto_points
from planner.whatif.run import WhatIfResult
from planner.whatif.tables import (
    PARETO_RULE,
    capacity_text,
    front_groups,
    method_text,
    notes,
    rows,
    tables,
)

CSV_FIELDS = ["study", "scenario", "option", "workload", "budget", "availability",
              "requests_per_s", "capacity", "requests_per_s_p10", "requests_per_s_p90",
              "analytic_requests_per_s", "correction",
              "vs_base", "vs_mix", "cost_per_hour", "output_tokens_per_s",
              "usd_per_m_output_tokens", "gpus", "islands", "status", "gap", "pareto",
              "seconds", "cached"]


def _cell(x: Any) -> Any:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return ""
    return repr(x) if isinstance(x, float) else x


def whatif_csv(result: WhatIfResult) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_FIELDS)
    for r in rows(result):
        w.writerow([_cell(r[f]) for f in CSV_FIELDS])
    return buf.getvalue()


def whatif_dict(result: WhatIfResult) -> dict[str, Any]:
    spec = result.spec
    return json_safe({
        "format": "planner-whatif/1",
        "spec": spec.to_dict(),
        "method": {"planner": "each scenario planned as `planner plan` plans it "
                              "(planner.plan.make_plan on the same request), then "
                              "planner.closed_plan.close_plan",
                   "closed_loop": result.mode, "plan": method_text(result),
                   "capacity": capacity_text(result),
                   "ranges": spec.ranges, "seed": spec.seed,
                   "island_granularity": spec.island_granularity,
                   "max_island": spec.solver.max_island,
                   "solver_differences": spec.solver.differences(),
                   "availability": spec.availability,
                   "closed_loops": result.closed_loops,
                   "correction": None if result.correction is None
                   else result.correction.to_dict()},
        "scenarios": [o.to_dict() for o in result.outcomes],
        "pareto": pareto_points(result),
        "pareto_rule": PARETO_RULE,
        "marginal": None if result.marginal is None else result.marginal.to_dict(),
        "seconds": result.seconds, "problems_solved": result.problems})


def whatif_md(result: WhatIfResult, images: list[str]) -> str:
    lines = [f"# What-if study: {result.spec.inventory.name}", ""]
    if result.marginal is not None:
        lines += [f"**Marginal value.** {result.marginal.sentence}", ""]
    lines += [f"- {n}" for n in notes(result)] + [""]
    for title, header, body in tables(result):
        lines += [f"## {title}", "", "| " + " | ".join(header) + " |",
                  "|" + "|".join("---" for _ in header) + "|"]
        lines += ["| " + " | ".join(c.replace("|", "/") for c in row) + " |" for row in body]
        lines.append("")
    front = front_groups(result)
    if front:
        lines += ["## Cost/throughput Pareto front", "",
                  "Scenarios no other scenario beats on both $/h and requests/s; "
                  f"{PARETO_RULE}:", ""]
        for value, cost, names in front:
            lines.append(f"- {value:,.2f} requests/s for {cost:,.2f} $/h: "
                         + "; ".join(names))
        lines.append("")
    if images:
        lines += ["## Plots", ""] + [f"![{Path(i).stem}]({i})" for i in images] + [""]
    lines.append("Files: whatif.html (the same study as one page), whatif.csv (one row per "
                 "scenario), whatif.json (everything).")
    return "\n".join(lines) + "\n"


def render(result: WhatIfResult) -> dict[str, bytes]:
    """Every file of the study folder, ``whatif.json`` last."""
    from planner.whatif.plots import figures

    pngs = figures(result)
    files: dict[str, bytes] = {"whatif.csv": whatif_csv(result).encode()}
    files.update(pngs)
    files["whatif.md"] = whatif_md(result, list(pngs)).encode()
    files["whatif.html"] = whatif_html(result, pngs).encode()
    files["whatif.json"] = (json.dumps(whatif_dict(result), indent=1, allow_nan=False)
                            + "\n").encode()
    return files


def write_whatif(result: WhatIfResult, out: Path) -> list[Path]:
    return publish(render(result), Path(out))
