"""The run folder's index of simulation results: ``RUN_DIR/simulation.json``.

One record per simulation run (settings, offered rate, the plan's capacity, the
metrics, compact latency and utilisation curves); :mod:`planner.sim.results` writes
them, the report reads them through :func:`load_index` and tabulates them with
:func:`summary_rows`.  Reading needs no simulator, so the report does not import one.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from planner.core.errors import PlannerError

INDEX = "simulation.json"
FOLDER = "simulation"


def load_index(run_dir: Path) -> list[dict[str, Any]]:
    """The records of ``simulation.json`` ([] if there is none)."""
    path = Path(run_dir) / INDEX
    if not path.exists():
        return []
    try:
        data = json.loads(path.read_text())
        runs = data["runs"]
        if not isinstance(runs, list):
            raise TypeError
    except (json.JSONDecodeError, KeyError, TypeError):
        raise PlannerError(f"{path}: not a simulation index (field 'runs' missing or "
                           "invalid); delete it to start afresh") from None
    return runs



def _fmt(x: Any, scale: float = 1.0, digits: int = 3) -> str:
    if not isinstance(x, int | float) or not math.isfinite(x):
        return "—"
    v = x * scale
    return f"{v:,.{digits}g}" if abs(v) < 1000 else f"{v:,.0f}"


def completed_cell(m: Mapping[str, Any]) -> str:
    """``"449 ± 6"``: the completed rate with the half-width of its 95 % confidence
    interval (records written before it had one show the rate alone)."""
    rate, ci = m.get("throughput_rps"), m.get("throughput_ci95_rps")
    if isinstance(ci, int | float) and math.isfinite(ci) and isinstance(rate, int | float):
        return f"{_fmt(rate)} ± {_fmt(ci, digits=2)}"
    return _fmt(rate)


def summary_rows(records: Sequence[Mapping[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """The table of the terminal and the report: one row per run."""
    header = ["router", "rate", "offered req/s", "completed req/s", "TTFT mean / p99 (s)",
              "TPOT mean / p99 (ms)", "E2E mean / p99 (s)", "SLO attainment",
              "goodput req/s", "KV transfer mean (ms)", "decision (µs)"]
    rows = []
    for r in records:
        m = r["metrics"]
        rows.append([r["settings"]["router"], r["settings"]["rate"], _fmt(r["offered_rps"]),
                     completed_cell(m),
                     f"{_fmt(m.get('ttft_mean_s'))} / {_fmt(m.get('ttft_p99_s'))}",
                     f"{_fmt(m.get('tpot_mean_s'), 1e3)} / {_fmt(m.get('tpot_p99_s'), 1e3)}",
                     f"{_fmt(m.get('e2e_mean_s'))} / {_fmt(m.get('e2e_p99_s'))}",
                     _fmt(m.get("slo_attainment"), 100, 3) + " %",
                     _fmt(m.get("goodput_rps")), _fmt(m.get("kv_transfer_mean_s"), 1e3),
                     _fmt(m.get("decision_mean_s"), 1e6)])
    return header, rows




__all__ = ["FOLDER", "INDEX", "completed_cell", "load_index", "summary_rows"]
