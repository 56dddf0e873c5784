"""Error bands: how far a predicted capacity may be from the measured one, from the
perf model's errors on held-out published figures (``perfmodel.validation``).

A *class* is GPU family x engine x phase.  The family is the GPU catalog's ``arch``
(``perfmodel/data/gpus.csv``: hopper, blackwell, ampere, ada, cdna3, ...), with
Blackwell Ultra counted as Blackwell (:data:`FAMILY_GROUPS`: the same SM, more HBM and
FP4 rate); the phase is prefill (prefill throughput, TTFT), decode (decode throughput,
TPOT, ITL) or aggregated (in-flight batching, static batches, other throughput).

A class's **band** bounds the 10th and 90th percentile of the error a *new* row of the
class will have, from the signed errors of its scored held-out rows in the optimism
sense (positive = the model promised more than was measured;
``perfmodel.validation_units``).  It is a distribution-free prediction interval, not
the sample's own p10 and p90: of n exchangeable errors sorted, the k-th smallest and
k-th largest with ``k = floor(0.1 (n + 1))`` enclose a new one with probability
``(n + 1 - 2k) / (n + 1) >= 0.8``.  The sample's p10-p90 would not: a new row falls
inside it with probability about 0.8 (n - 1) / (n + 1) -- 53 % at 5 rows, 72 % at 20 --
and a band that covers less than it says is the optimism this issue is about.  k >= 1
needs ``n >= 9`` (:data:`MIN_ROWS`); a class with fewer rows falls back to the next
coarser one:

    family x engine x phase -> family x phase -> vendor x phase -> phase -> all rows

The leave-one-out check (:func:`leave_one_out`) measures the coverage honestly: each
held-out row against the band of the *other* held-out rows, by the same rule.

A band turns a predicted capacity into (p10, p90) capacities: a model optimistic by
+20 % means the real capacity is predicted / 1.2, so ``capacity_p10 = predicted / (1 +
hi_error)`` and ``capacity_p90 = predicted / (1 + lo_error)``.  For a GPU whose kernels
are transferred from another vendor's part (``perfmodel.kernels.transfer.provenance``,
``cross_vendor``) and whose band comes from no row of its own family or vendor, the band
is widened by :data:`CROSS_VENDOR_WIDEN` about its middle: nothing validated that
transfer.  The shipped bands (:data:`BANDS_FILE`, written by
``scripts/validation_table.py``) let planning use them without re-running the cases.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources
from types import SimpleNamespace
from typing import Any

import numpy as np

from perfmodel.errors import InputError
from perfmodel.validation_units import normalise_phase

#: Held-out rows a class needs for its own band: the fewest with k >= 1 (module doc).
MIN_ROWS = 9
#: The percentiles of a new row's error the band bounds.
QUANTILES = (10.0, 90.0)


def prediction_bounds(errors: list[float]) -> tuple[float, float] | None:
    """(k-th smallest, k-th largest) of ``errors`` with k = floor(0.1 (n + 1)): an
    interval a new exchangeable error falls in with probability >= 0.8 (None when
    k < 1, i.e. fewer than 9 errors)."""
    e = np.sort(np.asarray(errors, float))
    k = int(math.floor(QUANTILES[0] / 100.0 * (e.size + 1) + 1e-9))
    if k < 1:
        return None
    return float(e[k - 1]), float(e[e.size - k])
#: Catalog architectures counted as one family.
FAMILY_GROUPS = {"blackwell-ultra": "blackwell"}
#: Widening of a band for a GPU priced from another vendor's kernels when no row of its
#: own family or vendor informs the band.  Not validated (there is nothing to validate it
#: on); a stated margin, not a measurement.
CROSS_VENDOR_WIDEN = 2.0
BANDS_FILE = "data/error_bands.json"
#: Class levels, finest first.
LEVELS = (("family", "engine", "phase"), ("family", "phase"), ("vendor", "phase"),
          ("phase",), ())


@dataclass(frozen=True)
class Band:
    lo_error: float  # p10 of the class's signed errors
    hi_error: float  # p90
    cls: str  # the class actually used, e.g. "family=hopper engine=trtllm phase=decode"
    rows: int  # held-out rows behind it
    widened: float = 1.0  # factor applied about the middle (1: as measured)

    def capacity(self, predicted: float) -> tuple[float, float]:
        """``(capacity_p10, capacity_p90)`` of a predicted capacity (tokens/s, requests/s
        or any rate): predicted / (1 + hi_error), predicted / (1 + lo_error) (inf when the
        band allows an error of -100 % or below)."""
        def real(e: float) -> float:
            return predicted / (1.0 + e) if 1.0 + e > 0 else math.inf
        return real(self.hi_error), real(self.lo_error)

    def contains(self, error: float) -> bool:
        return self.lo_error <= error <= self.hi_error

    def widen(self, factor: float) -> Band:
        """The band ``factor`` times as wide about its middle."""
        mid = 0.5 * (self.lo_error + self.hi_error)
        half = 0.5 * (self.hi_error - self.lo_error) * factor
        return replace(self, lo_error=mid - half, hi_error=mid + half,
                       widened=self.widened * factor)


def _gpu(gpu: Any) -> Any:
    if not isinstance(gpu, str):
        return gpu
    from perfmodel.hardware import get_gpu

    try:
        return get_gpu(gpu)
    except InputError:  # an inventory's own datasheet part: family and vendor unknown
        return SimpleNamespace(name=gpu, arch="")


def family(gpu: Any) -> str:
    """A GPU's family: its catalog ``arch`` with :data:`FAMILY_GROUPS` applied ("unknown"
    for a GPU the catalog lacks)."""
    arch = str(getattr(_gpu(gpu), "arch", "") or "").lower()
    return FAMILY_GROUPS.get(arch, arch) or "unknown"


def vendor(gpu: Any) -> str:
    """``perfmodel.launch.gpu_vendor`` of a GPU (name or object)."""
    from perfmodel.launch import gpu_vendor

    return gpu_vendor(_gpu(gpu))


def class_name(level: tuple[str, ...], values: dict[str, str]) -> str:
    return " ".join(f"{k}={values[k]}" for k in level) or "all"


def _keys(values: dict[str, str]) -> list[str]:
    return [class_name(level, values) for level in LEVELS]


def _values(row: dict[str, Any]) -> dict[str, str]:
    return {"family": row.get("family") or family(row["gpu"]),
            "vendor": row.get("vendor") or vendor(row["gpu"]),
            "engine": str(row["engine"]), "phase": normalise_phase(row["phase"])}


def fit(records: list[dict[str, Any]], min_rows: int = MIN_ROWS) -> dict[str, Band]:
    """Bands of every class with at least ``min_rows`` of ``records`` (rows with ``gpu``,
    ``engine``, ``phase``, ``error``; ``family`` / ``vendor`` derived when absent), and
    of all records together (class "all", from the 9 rows a prediction bound needs)."""
    groups: dict[str, list[float]] = {}
    for r in records:
        for key in _keys(_values(r)):
            groups.setdefault(key, []).append(float(r["error"]))
    out = {}
    for key, errs in groups.items():
        bounds = prediction_bounds(errs)
        if bounds is not None and (len(errs) >= min_rows or key == "all"):
            out[key] = Band(bounds[0], bounds[1], key, len(errs))
    return out


def choose(bands: dict[str, Band], values: dict[str, str]) -> Band:
    """The finest class of ``values`` that ``bands`` holds (the fallback rule)."""
    for key in _keys(values):
        if key in bands:
            return bands[key]
    raise LookupError("no band: fewer than 9 held-out rows")


def leave_one_out(records: list[dict[str, Any]], min_rows: int = MIN_ROWS
                  ) -> dict[str, Any]:
    """Out-of-sample coverage: each record against the band :func:`fit` gives the
    *other* records (same fallback rule); the share whose own error lies inside it."""
    inside = []
    for i, r in enumerate(records):
        others = records[:i] + records[i + 1:]
        try:
            b = choose(fit(others, min_rows), _values(r))
        except LookupError:
            continue
        inside.append(b.contains(float(r["error"])))
    return {"rows": len(inside), "inside": int(sum(inside)),
            "coverage": float(np.mean(inside)) if inside else float("nan")}


def wilson_interval(inside: int, rows: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval (95 % at the default ``z``) of a coverage of ``inside``
    of ``rows``: how far a measured coverage may be from the rule's own by chance
    alone."""
    if rows <= 0:
        return float("nan"), float("nan")
    p = inside / rows
    den = 1.0 + z * z / rows
    mid = (p + z * z / (2 * rows)) / den
    half = z * math.sqrt(p * (1 - p) / rows + z * z / (4 * rows * rows)) / den
    return max(mid - half, 0.0), min(mid + half, 1.0)


def build(rows: list[dict[str, Any]], min_rows: int = MIN_ROWS) -> dict[str, Any]:
    """The document :data:`BANDS_FILE` holds, from ``perfmodel.validation.table()`` rows:
    the bands of every class with enough scored held-out rows plus the coarser fallbacks,
    the leave-one-out coverage with its 95 % interval, and -- as a check of the band
    rule on rows it was not built from -- the same leave-one-out coverage of the
    calibration rows against bands of the other calibration rows (never shipped as
    bands: the model was chosen on those rows, so their errors flatter it)."""
    kept = [r for r in rows if r["scored"] and r["held_out"]]
    bands = fit(kept, min_rows)
    listed = sorted(bands.values(), key=lambda b: (-b.cls.count("="), b.cls))
    loo = leave_one_out(kept, min_rows)
    loo["ci95"] = list(wilson_interval(loo["inside"], loo["rows"]))
    calib = leave_one_out([r for r in rows if r["scored"] and not r["held_out"]], min_rows)
    calib["ci95"] = list(wilson_interval(calib["inside"], calib["rows"]))
    return {"min_rows": min_rows, "quantiles": list(QUANTILES),
            "family_groups": FAMILY_GROUPS, "levels": [list(lv) for lv in LEVELS],
            "bands": [{"cls": b.cls, "lo_error": b.lo_error, "hi_error": b.hi_error,
                       "rows": b.rows} for b in listed],
            "leave_one_out": loo, "calibration_leave_one_out": calib,
            "source": "scored held-out rows of docs/validation.md (c), "
                      "scripts/validation_table.py"}


@lru_cache(maxsize=1)
def shipped() -> dict[str, Band]:
    """The bands of :data:`BANDS_FILE` by class name, read once per process."""
    doc = json.loads(resources.files("perfmodel").joinpath(BANDS_FILE).read_text())
    return {b["cls"]: Band(float(b["lo_error"]), float(b["hi_error"]), b["cls"],
                           int(b["rows"])) for b in doc["bands"]}


def _cross_vendor(gpu: Any) -> bool:
    """Whether ``gpu``'s kernels come from another vendor's part without a validated
    prior (False for a part the catalog lacks: its provenance is the inventory's)."""
    from perfmodel.kernels.transfer import provenance

    g = _gpu(gpu)
    return False if isinstance(g, SimpleNamespace) else bool(provenance(g).cross_vendor)


def band(gpu: Any, engine: str, phase: str, *, cross_vendor: bool | None = None,
         bands: dict[str, Band] | None = None) -> Band:
    """The error band for ``gpu`` (catalog name or GPU) under ``engine`` in ``phase``
    (prefill / ttft, decode / itl / tpot, aggregated / static / throughput), from the
    shipped bands (or ``bands``) by the fallback rule.  ``cross_vendor`` (default: the
    GPU's kernel provenance) widens a band that no row of the GPU's family or vendor
    informs by :data:`CROSS_VENDOR_WIDEN`."""
    values = {"family": family(gpu), "vendor": vendor(gpu), "engine": str(engine),
              "phase": normalise_phase(phase)}
    b = choose(shipped() if bands is None else bands, values)
    if cross_vendor is None:
        cross_vendor = _cross_vendor(gpu)
    if cross_vendor and not b.cls.startswith(("family=", "vendor=")):
        b = b.widen(CROSS_VENDOR_WIDEN)
    return b


#: Phases a deployment runs only as one side of a disaggregated (prefill/decode-split)
#: system: a prefill or a decode island serves nothing alone.
SPLIT_PHASES = ("prefill", "decode")


def union(a: Band, b: Band) -> Band:
    """The narrowest band holding both: the lower of the two p10 errors and the higher
    of the two p90 errors (the class name joins both; one class is itself, its rows
    counted once)."""
    if a == b:
        return a
    return Band(min(a.lo_error, b.lo_error), max(a.hi_error, b.hi_error),
                f"{a.cls} + {b.cls}", a.rows + b.rows, max(a.widened, b.widened))


def deployed_band(gpu: Any, engine: str, phase: str, *,
                  bands: dict[str, Band] | None = None) -> Band:
    """The band of an island of ``phase`` as a plan deploys it: :func:`band` for an
    aggregated island; for a prefill or a decode island, the :func:`union` of its
    phase's band and the band of whole disaggregated systems (phase
    ``disaggregated``) of its GPU and engine.

    Why both: a phase row (a prefill pass, a decode step) measures the island's own
    work; an end-to-end disaggregated row also measures what only the whole system
    shows -- the hand-off of each request from a prefill to a decode worker, its
    transfer, the queue in front of the prefill workers -- and on those rows the model
    errs optimistic (docs/validation.md).  A prefill or decode island exists only in
    such a system, so its capacity carries that evidence too; which of the two classes
    describes a given deployment better, nothing measured says, so the band holds both.
    """
    b = band(gpu, engine, phase, bands=bands)
    if normalise_phase(phase) in SPLIT_PHASES:
        b = union(b, band(gpu, engine, "disaggregated", bands=bands))
    return b


__all__ = ["BANDS_FILE", "CROSS_VENDOR_WIDEN", "FAMILY_GROUPS", "LEVELS", "MIN_ROWS",
           "SPLIT_PHASES", "Band", "band", "build", "choose", "deployed_band", "family",
           "fit", "leave_one_out", "shipped", "union", "vendor", "wilson_interval"]
