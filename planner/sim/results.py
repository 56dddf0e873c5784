"""Simulation results on disk: ``RUN_DIR/simulation.json`` and one folder per run
(the writing side; the run folder's :mod:`planner.run.simulations` owns the index and
reads it).

``simulation.json`` is the index the report reads: one record per run (settings, offered
rate, the plan's capacity, the metrics, and compact curves -- latency quantiles and a
down-sampled utilisation timeline -- so that the report can draw them without the
per-request data).  A new run replaces the record with the same tag (router, rate,
seed).  Per run, ``simulation/<tag>/`` holds metrics.json, requests.csv and its plots.
Everything is written atomically (temp file + rename).
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from planner.run.simulations import FOLDER, INDEX, load_index
from planner.sim.metrics import CSV_FIELDS, to_csv_rows
from planner.sim.metrics import _columns as request_columns
from planner.sim.protocol import SimResult

QUANTILES = np.linspace(0.0, 1.0, 101)
MAX_BINS = 120


def latency_arrays(result: SimResult) -> dict[str, np.ndarray]:
    """TTFT, TPOT and E2E (seconds) of the requests that arrived after the warm-up and
    finished (the population of :func:`planner.sim.metrics.summarise`)."""
    c = request_columns(result)
    keep = (c["arrival"] >= result.warmup_s) & np.isfinite(c["done"])
    return {k: c[k][keep & np.isfinite(c[k])] for k in ("ttft", "tpot", "e2e")}


def curves(result: SimResult) -> dict[str, Any]:
    """Compact curves for the report: 101 quantiles per latency, utilisation in at most
    :data:`MAX_BINS` bins per island."""
    q = {k: (np.quantile(v, QUANTILES).tolist() if v.size else [])
         for k, v in latency_arrays(result).items()}
    tl = np.asarray(result.util_timeline, dtype=float)
    step = max(1, math.ceil(tl.shape[1] / MAX_BINS)) if tl.ndim == 2 and tl.size else 1
    if tl.ndim == 2 and tl.size:
        pad = (-tl.shape[1]) % step
        tl = np.pad(tl, ((0, 0), (0, pad)), constant_values=np.nan)
        tl = np.nanmean(tl.reshape(tl.shape[0], -1, step), axis=2)
    return {"quantiles": q,
            "utilisation": {"islands": [f"{i.name} ({i.role})" for i in result.cluster.islands],
                            "bin_s": result.util_bin_s * step,
                            "timeline": np.round(np.nan_to_num(tl), 4).tolist()}}


def requests_csv(result: SimResult) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=CSV_FIELDS, lineterminator="\n")
    w.writeheader()
    w.writerows(to_csv_rows(result))
    return buf.getvalue()


def simulation_files(run_dir: Path, runs: Sequence[Any]
                     ) -> tuple[dict[str, bytes], list[dict[str, Any]]]:
    """The files the runs (``planner.sim.run.SimRun``) add to ``run_dir`` -- one
    folder per run and the updated simulation.json -- and the index's records, in
    memory: the caller publishes them with the re-rendered report in one step
    (planner.run.files.publish), so a failure leaves the folder as it was."""
    from planner.sim import plots

    run_dir = Path(run_dir)
    records = {r["tag"]: r for r in load_index(run_dir)}
    files: dict[str, bytes] = {}
    for run in runs:
        rec = {**run.summary(), **curves(run.result)}
        records[rec["tag"]] = rec
        sub = f"{FOLDER}/{rec['tag']}"
        files[f"{sub}/metrics.json"] = (json.dumps(rec, indent=1) + "\n").encode()
        files[f"{sub}/requests.csv"] = requests_csv(run.result).encode()
        for name, png in plots.run_pngs(run.result, run.metrics).items():
            files[f"{sub}/{name}"] = png
    ordered = sorted(records.values(), key=lambda r: (r["offered_rps"], r["tag"]))
    files[INDEX] = (json.dumps({"runs": ordered}, indent=1) + "\n").encode()
    return files, ordered


__all__ = ["curves", "latency_arrays", "requests_csv", "simulation_files"]
