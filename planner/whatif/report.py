"""A what-if study as files: whatif.csv, whatif.json, PNG plots and whatif.md.

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
from typing import Any, cast

from planner.run.files import publish
from planner.run.schema import json_safe
from planner.whatif.pareto import STUDY_TITLES, pareto_points
from planner.whatif.run import WhatIfResult
from planner.whatif.scenarios import MIX
from planner.whatif.solve import Outcome

CSV_FIELDS = ["study", "scenario", "option", "workload", "budget", "availability",
              "requests_per_s", "vs_base", "vs_mix", "cost_per_hour", "output_tokens_per_s",
              "usd_per_m_output_tokens", "gpus", "islands", "status", "gap", "pareto",
              "seconds", "cached"]


def gpus_text(o: Outcome) -> str:
    return " + ".join(f"{n} {g}" for g, n in o.gpus.items()) or "none"


def islands_text(o: Outcome) -> str:
    return "; ".join(f"{r} {n} {g}" for (g, n), r in zip(o.layout, o.roles, strict=True))


def _mix_value(result: WhatIfResult, o: Outcome) -> float | None:
    if o.scenario.study not in ("budget", "equal_cost"):
        return None
    for p in result.outcomes:
        s = p.scenario
        if (s.study == o.scenario.study and s.budget == o.scenario.budget
                and s.option == MIX):
            return p.requests_per_s
    return None


def _ratio(a: float, b: float | None) -> float | None:
    return a / b if b and b > 0 else None


def rows(result: WhatIfResult) -> list[dict[str, Any]]:
    """One flat record per scenario (the CSV's rows)."""
    front = set(pareto_points(result))
    base = result.base.requests_per_s
    out = []
    for k, o in enumerate(result.outcomes):
        s = o.scenario
        out.append({
            "study": s.study, "scenario": s.name, "option": s.option, "workload": s.workload,
            "budget": s.budget, "availability": result.spec.availability,
            "requests_per_s": o.requests_per_s, "vs_base": _ratio(o.requests_per_s, base),
            "vs_mix": _ratio(o.requests_per_s, _mix_value(result, o)),
            "cost_per_hour": o.cost_per_hour, "output_tokens_per_s": o.output_tokens_per_s,
            "usd_per_m_output_tokens": o.usd_per_m_output_tokens, "gpus": gpus_text(o),
            "islands": islands_text(o), "status": o.status, "gap": o.gap,
            "pareto": k in front, "seconds": o.seconds, "cached": o.cached})
    return out


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
        "method": {"solver": "exact outer MILP (planner.outer.exact)",
                   "ranges": spec.ranges, "max_island": spec.solver.max_island,
                   "availability": spec.availability},
        "scenarios": [o.to_dict() for o in result.outcomes],
        "pareto": pareto_points(result),
        "marginal": None if result.marginal is None else result.marginal.to_dict(),
        "seconds": result.seconds, "problems_solved": result.problems})


# ------------------------------------------------------------------ display tables
def _f(x: float | None, digits: int = 2) -> str:
    return "-" if x is None or not math.isfinite(x) else f"{x:,.{digits}f}"


def _pct(r: float | None) -> str:
    return "-" if r is None else f"{r - 1:+.1%}"


def _status(o: Outcome) -> str:
    if o.status == "optimal":
        return "optimal"
    if o.status == "time_limit" and math.isfinite(o.gap):
        return f"time limit (gap {o.gap:.1%})"
    return o.status.replace("_", " ")


def tables(result: WhatIfResult) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, header, rows) per study, in study order: what the terminal and
    whatif.md show.  Columns common to every study follow its own first columns."""
    recs = rows(result)
    common = ["requests/s", "vs base", "$/h used", "$/M out tok", "GPUs", "status"]
    out = []
    for study, title in STUDY_TITLES.items():
        ks = [k for k, r in enumerate(recs) if r["study"] == study]
        if not ks:
            continue
        if study in ("budget", "equal_cost"):
            head = ["budget", "option"]
        elif study == "price":
            head = ["type", "price", "factor"]
        elif study == "marginal":
            head = ["spend +X $/h on", "gain, requests/s", "per extra $/h"]
        else:
            head = ["scenario"]
        header = head + common
        if study in ("budget", "equal_cost"):
            header.insert(len(head) + 2, "vs mix")
        body = []
        for k in ks:
            r, o = recs[k], result.outcomes[k]
            s, p = o.scenario, o.scenario.params
            if study in ("budget", "equal_cost"):
                first = [_f(s.budget, 0), s.option]
            elif study == "price":
                first = [p["gpu"], _f(p["price"]), f"{p['factor']:.2f}x"]
            elif study == "marginal":
                gain = o.requests_per_s - result.base.requests_per_s
                first = [s.name.split(": ", 1)[-1], f"{gain:+,.2f}",
                         _f(gain / cast(float, result.spec.marginal), 3)]
            else:
                first = [s.name]
            row = first + [_f(r["requests_per_s"]), _pct(r["vs_base"]),
                           _f(r["cost_per_hour"]), _f(r["usd_per_m_output_tokens"]),
                           r["gpus"], _status(o)]
            if study in ("budget", "equal_cost"):
                row.insert(len(head) + 2, _pct(r["vs_mix"]))
            body.append(row)
        out.append((title, header, body))
    return out


def notes(result: WhatIfResult) -> list[str]:
    spec = result.spec
    avail = ("inventory counts (a budget above the inventory's cost buys nothing more)"
             if spec.availability == "inventory" else
             "unlimited market availability (each type: as many GPUs as the budget buys)")
    return [
        f"Inventory '{spec.inventory.name}', model {spec.model}, base workload "
        f"{spec.workload}, base budget {spec.base_budget:g} $/h; availability: {avail}.",
        f"Every scenario is solved exactly (the outer MILP, global optimum of the model up "
        f"to a {spec.solver.mip_gap:g} MIP gap and {spec.solver.prune_tol:g} pruning "
        f"tolerance) at {spec.ranges} length ranges (what-if default 16; `planner plan` "
        f"uses 32) with islands of at most {spec.solver.max_island} GPUs; throughput is "
        "the sustained request rate, $/M out tok the $ per million output tokens at it.",
        f"{len(result.outcomes)} scenarios, {result.problems} distinct problems solved in "
        f"{result.seconds:.0f} s.",
    ]


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
    front = pareto_points(result)
    if front:
        lines += ["## Cost/throughput Pareto front", "",
                  "Scenarios no other scenario beats on both $/h and requests/s "
                  "(base workload only):", ""]
        points: dict[tuple[float, float], list[str]] = {}
        for k in sorted(front, key=lambda i: result.outcomes[i].cost_per_hour):
            o = result.outcomes[k]
            name = o.scenario.name + ("" if o.scenario.option == MIX
                                      else f" ({o.scenario.option})")
            points.setdefault((o.cost_per_hour, o.requests_per_s), []).append(name)
        for (cost, value), names in points.items():
            lines.append(f"- {value:,.2f} requests/s for {cost:,.2f} $/h: "
                         + "; ".join(names))
        lines.append("")
    if images:
        lines += ["## Plots", ""] + [f"![{Path(i).stem}]({i})" for i in images] + [""]
    lines.append("Files: whatif.csv (one row per scenario), whatif.json (everything).")
    return "\n".join(lines) + "\n"


def render(result: WhatIfResult) -> dict[str, bytes]:
    """Every file of the study folder, ``whatif.json`` last."""
    from planner.whatif.plots import figures

    pngs = figures(result)
    files: dict[str, bytes] = {"whatif.csv": whatif_csv(result).encode()}
    files.update(pngs)
    files["whatif.md"] = whatif_md(result, list(pngs)).encode()
    files["whatif.json"] = (json.dumps(whatif_dict(result), indent=1, allow_nan=False)
                            + "\n").encode()
    return files


def write_whatif(result: WhatIfResult, out: Path) -> list[Path]:
    return publish(render(result), Path(out))
