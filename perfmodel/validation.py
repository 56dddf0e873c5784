"""Published serving figures posed to the perf model (``docs/validation.md``, part c).

Each case (``perfmodel/data/validation_cases.yaml``) fixes what the publication fixed --
GPU, model and precision, engine, parallel layout, input and output lengths, batch or
token budget -- and reads the same quantity off the model.  Nothing here is fitted: the
model's kernels come from the measured database and its serving behaviour from the
engine profiles; these rows only score it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np
import yaml

from perfmodel.aggregated import aggregated_point
from perfmodel.calibration import Calibration
from perfmodel.decode import step_model
from perfmodel.hardware import get_gpu
from perfmodel.models import get_model
from perfmodel.prefill import prefill_pass_time, prefill_time

MODES = ("prefill", "ttft", "decode", "static", "aggregated")
#: Sources older than this ran engine releases whose kernels the database does not hold;
#: their rows are reported but not scored.
SCORED_FROM = "2024-06"


@dataclass(frozen=True)
class Case:
    id: str
    source: str
    gpu: str
    gpus: int
    model: str
    weights: str
    kv: str
    engine: str
    tp: int
    dp: int
    ep: int
    mode: str
    isl: int
    unit: str
    value: float
    quote: str
    osl: int = 0
    batch: int = 0
    budget: int = 0
    context: int = 0
    mtp_acceptance: float = 0.0
    mtp_draft: int = 1
    eplb: str = "auto"
    overlap: bool | None = None
    fp8_attention: bool = False

    @property
    def dense(self) -> bool:
        return not get_model(self.model).is_moe

    def calibration(self) -> Calibration:
        return Calibration(engine=self.engine, mtp_acceptance=self.mtp_acceptance,
                           mtp_draft_tokens=self.mtp_draft, eplb=self.eplb,
                           micro_batch_overlap=self.overlap, fp8_attention=self.fp8_attention,
                           prefill_token_budget=self.budget or None)

    def spec(self):
        m = get_model(self.model)
        weights = {"fp8_block": ("fp8", True), "fp8": ("fp8", False), "fp4": ("fp4", False),
                   "bf16": ("bf16", False)}[self.weights]
        return replace(m, weight_dtype=weights[0], weight_block_scaled=weights[1],
                       kv_dtype=self.kv)


@lru_cache(maxsize=1)
def load_cases() -> tuple[tuple[Case, ...], dict[str, dict[str, str]]]:
    raw = yaml.safe_load(resources.files("perfmodel").joinpath(
        "data/validation_cases.yaml").read_text())
    cases = []
    for row in raw["cases"]:
        row = dict(row)
        if row["mode"] not in MODES:
            raise ValueError(f"validation case {row['id']}: unknown mode {row['mode']}")
        cases.append(Case(**row))
    return tuple(cases), raw["sources"]


def _col(x: float) -> np.ndarray:
    return np.array([[float(x)]])


def predict(case: Case) -> float:
    """Our figure for a case, in the case's unit."""
    gpu, model, calib = get_gpu(case.gpu), case.spec(), case.calibration()
    tp, dp, ep = _col(case.tp), _col(case.dp), _col(case.ep)
    per_gpu: float
    if case.mode == "ttft":
        return float(np.ravel(prefill_time(gpu, model, float(case.isl), tp, dp, ep, 0.0,
                                           calib))[0]) * 1e3
    if case.mode == "prefill":
        budget = float(calib.profile.prefill_token_budget)
        prompts = max(budget / case.isl, 1.0)
        t = float(np.ravel(prefill_pass_time(gpu, model, float(case.isl), tp, dp, ep, 0.0,
                                             calib, prompts))[0])
        per_gpu = prompts * case.isl / t / case.tp
    elif case.mode == "decode":
        group = float(case.batch * case.tp)
        sm = step_model(gpu, model, _col(group), tp, dp, ep, calib)
        context = case.context or case.isl + 0.5 * case.osl
        per_gpu = group / float(np.ravel(sm.step_time(context))[0]) / case.tp
    elif case.mode == "static":
        group = float(case.batch * case.tp)
        pre = float(np.ravel(prefill_pass_time(gpu, model, float(case.isl), tp, dp, ep, 0.0,
                                               calib, group))[0])
        sm = step_model(gpu, model, _col(group), tp, dp, ep, calib)
        dec = float(np.ravel(sm.request_time(float(case.isl), float(case.osl)))[0])
        per_gpu = group * case.osl / (pre + dec) / case.tp
    else:
        pt = aggregated_point(gpu, model, case.tp, case.dp, case.ep, case.isl,
                              float(case.osl), 0.0, calib)
        per_gpu = pt.rps * case.osl / case.gpus
    scale = {"gpu": 1.0, "node": 8.0, "instance": float(case.gpus)}[case.unit.rsplit("_", 1)[1]]
    return per_gpu * scale


def error(case: Case, ours: float) -> float:
    """Ours / published - 1; for TTFT published / ours - 1, so that a model that is too
    fast reads negative like the others."""
    return (case.value / ours - 1.0) if case.unit == "ttft_ms" else (ours / case.value - 1.0)


#: Assumptions whose sensitivity every row reports (issue 29): the error with the row's
#: KV-cache dtype flipped (bf16 <-> fp8) and with FP8 attention flipped.
FLIPS = {"kv": lambda c: replace(c, kv="bf16" if c.kv == "fp8" else "fp8"),
         "fp8_attention": lambda c: replace(c, fp8_attention=not c.fp8_attention)}


def sensitivity(case: Case) -> dict[str, float]:
    """The row's error with each assumption of :data:`FLIPS` flipped."""
    return {name: error(case, predict(flip(case))) for name, flip in FLIPS.items()}


def table() -> list[dict[str, Any]]:
    from perfmodel.validation_split import held_out

    cases, sources = load_cases()
    rows = []
    for c in cases:
        ours = predict(c)
        src = sources[c.source]
        rows.append({"case": c.id, "gpu": c.gpu, "model": c.model, "mode": c.mode,
                     "dense": c.dense, "engine": c.engine, "unit": c.unit,
                     "published": c.value, "ours": ours, "error": error(c, ours),
                     "held_out": held_out(c.id), "flipped": sensitivity(c),
                     "scored": str(src["date"]) >= SCORED_FROM, "date": str(src["date"]),
                     "source": src["title"], "url": src["url"], "quote": c.quote})
    return rows


#: The scored rows' statistics as shipped (written by scripts/validation_table.py, kept
#: current by tests/perfmodel/test_perfmodel_validation.py): what a report quotes as
#: "how sure we are" without re-running the cases.
SUMMARY_FILE = "data/validation_summary.json"


@lru_cache(maxsize=1)
def shipped_summary() -> dict[str, Any]:
    """:func:`summary` and :func:`by_gpu` of the scored rows as shipped (package data),
    read once per process (every report quotes it)."""
    import json

    return json.loads(resources.files("perfmodel").joinpath(SUMMARY_FILE).read_text())


def by_gpu(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per GPU type: scored rows and their median |error|."""
    out: dict[str, dict[str, float]] = {}
    for gpu in sorted({r["gpu"] for r in rows if r["scored"]}):
        e = np.array([r["error"] for r in rows if r["scored"] and r["gpu"] == gpu])
        out[gpu] = {"rows": int(e.size), "median_abs": float(np.median(np.abs(e)))}
    return out


def held_out_summary(rows: list[dict[str, Any]]) -> dict[str, float]:
    """:func:`summary` of the scored held-out rows (perfmodel.validation_split): the
    figures no change to the model may be tuned on."""
    kept = [r for r in rows if r["scored"] and r["held_out"]]
    if not kept:
        return {"rows": 0}
    e = np.array([r["error"] for r in kept])
    return {"rows": len(kept), "gpus": len({r["gpu"] for r in kept}),
            "median_abs": float(np.median(np.abs(e))), "worst_abs": float(np.abs(e).max()),
            "median_signed": float(np.median(e))}


def summary(rows: list[dict[str, Any]]) -> dict[str, float]:
    """The scored rows' error statistics (the issue's goals: median |error| <= 15 %,
    worst <= 35 %, median signed error of dense and of MoE rows within +-10 %)."""
    scored = [r for r in rows if r["scored"]]
    e = np.array([r["error"] for r in scored])
    dense = np.array([r["dense"] for r in scored])
    return {"rows": len(scored), "gpus": len({r["gpu"] for r in scored}),
            "median_abs": float(np.median(np.abs(e))), "worst_abs": float(np.abs(e).max()),
            "median_signed_dense": float(np.median(e[dense])),
            "median_signed_moe": float(np.median(e[~dense]))}
