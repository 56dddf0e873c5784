"""The run folder's CSV tables, as text (pure; the writer puts them on disk).

* ``islands.csv`` — one row per island: GPU, size, role, parallel configuration,
  batch, $/h, the shortest and longest input it serves and how many ranges.
* ``ranges.csv`` — one row per length range j: bounds, probability p_j, the served
  rates R^P_j and R^D_j (thesis §4.8.1), the demand p_j·T at the sustained rate T, and
  one ``share_i<k>`` column per island: the fraction of island k's time on range j.
* ``per_length.csv`` — one row per input length: pmf, demand and the model's and the
  evaluator's prefill/decode rates (seed 002 §5.2.2).
* ``history.csv`` — one row per search proposal, in order, with the best-so-far.
* ``baselines.csv`` — the plan, the best plan of each single GPU type and the exact
  optimum, with the plan's throughput ratio to each.

Missing values (null in ``plan.json``) are empty cells; floats keep full precision
(``repr``) so the tables are data, not a rounded display.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from planner.report.facts import arr, deployment, layout_label, num, prices, served_span

TABLES = ("islands.csv", "ranges.csv", "per_length.csv", "history.csv", "baselines.csv")


def _cell(x: Any) -> Any:
    if x is None:
        return ""
    if isinstance(x, float):
        return repr(x) if math.isfinite(x) else ""
    return x


def _csv(header: list[str], rows: Iterable[Iterable[Any]]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    for row in rows:
        w.writerow([_cell(x) for x in row])
    return buf.getvalue()


def islands_csv(plan: Mapping[str, Any]) -> str:
    p = prices(plan)
    rows = []
    for isl in deployment(plan).every:
        price = p.get(isl.gpu.name, math.nan)
        span = served_span(isl, plan) or (None, None, 0, True)
        rows.append([isl.index, isl.gpu.name, isl.size, isl.role, isl.config, isl.batch,
                     price * isl.size, *span[:3]])
    return _csv(["island", "gpu", "size", "role", "config", "batch", "cost_per_hour",
                 "shortest_input", "longest_input", "ranges_served"], rows)


def ranges_csv(plan: Mapping[str, Any]) -> str:
    r, pr = plan["ranges"], plan["per_range"]
    rate = num(plan["summary"]["requests_per_s"])
    prob = arr(r["prob"])
    shares = [np.asarray(isl.shares, float) for isl in deployment(plan).every]
    header = ["range", "start", "end", "mid", "prob", "prefill_rps", "decode_rps",
              "demand_rps"] + [f"share_i{k}" for k in range(len(shares))]
    rows = ([j, r["start"][j], r["end"][j], r["mid"][j], r["prob"][j],
             pr["prefill_rps"][j], pr["decode_rps"][j], float(prob[j] * rate)]
            + [float(s[j]) for s in shares] for j in range(len(prob)))
    return _csv(header, rows)


def per_length_csv(plan: Mapping[str, Any]) -> str:
    pl = plan["per_length"]
    rate = num(plan["summary"]["requests_per_s"])
    demand = arr(pl["pmf"]) * rate
    keys = ["model_prefill", "eval_prefill", "model_decode", "eval_decode"]
    rows = ([pl["length"][s], pl["pmf"][s], float(demand[s])] + [pl[k][s] for k in keys]
            for s in range(len(pl["length"])))
    return _csv(["length", "pmf", "demand_rps"] + keys, rows)


def history_csv(plan: Mapping[str, Any]) -> str:
    rows = ([h.get("index"), h.get("wall_time"), h.get("phase", ""), h.get("value"),
             h.get("cost"), h.get("feasible"), h.get("best"), h.get("cached", False),
             layout_label(h.get("layout"), "")]
            for h in plan["search"]["history"])
    return _csv(["index", "wall_time_s", "phase", "requests_per_s", "cost_per_hour",
                 "feasible", "best_so_far", "cached", "layout"], rows)


def baselines_csv(plan: Mapping[str, Any]) -> str:
    s = plan["summary"]
    mine = num(s["requests_per_s"])
    rows = [["plan", "this plan", mine, s["cost_per_hour"], s.get("status"), None, None,
             1.0, layout_label(plan["search"].get("best_layout"), "")]]
    b = plan["baselines"]
    entries = [("homogeneous", h) for h in b.get("homogeneous") or []]
    if b.get("exact"):
        entries.append(("exact", b["exact"]))
    for kind, e in entries:
        v = num(e.get("requests_per_s"))
        rows.append([kind, e.get("label"), e.get("requests_per_s"), e.get("cost_per_hour"),
                     e.get("status"), e.get("bound"), e.get("gap"),
                     mine / v if v > 0 else None,
                     layout_label(e.get("layout"), "")])
    return _csv(["kind", "label", "requests_per_s", "cost_per_hour", "status", "bound",
                 "mip_gap", "plan_ratio", "layout"], rows)


def all_tables(plan: Mapping[str, Any]) -> dict[str, str]:
    """File name -> CSV text, for every table in :data:`TABLES`."""
    return {"islands.csv": islands_csv(plan), "ranges.csv": ranges_csv(plan),
            "per_length.csv": per_length_csv(plan), "history.csv": history_csv(plan),
            "baselines.csv": baselines_csv(plan)}
