"""Serving-stack factors: what a vendor's serving stack adds to its kernel priors, fitted
on calibration rows (issue 29).

A GPU whose vendor has no measured kernels is priced kernel by kernel from the vendor's
priors (:mod:`perfmodel.kernels.priors`), each set from a published kernel-level figure.
On AMD Instinct parts the kernels check out against AMD's own per-kernel timings -- the
AITER fused MoE at DeepSeek's TP8 shape, 329 us for 64 tokens where the prior gives 333
(aiter ``op_tests/moe_benchmarking_profiling/results/mi300_benchmark_best_kernels.csv``),
its block-scaled GEMMs at 650-700 TFLOPS, FlashAttention at 550-590 TFLOPS (aiter
``op_tests/cpp/mha/README.md``) -- yet the serving stack around them is slower than their
sum: on 8 x MI300X under SGLang (InferenceX, 2026) an 8k-token DeepSeek-R1 prompt takes
1.44 s to its first token where the priced prefill takes 0.25 s, while short-context
decode steps are priced within 10 %.  What the stack adds is not in any kernel table, so
it is measured where it shows: in serving rows.

Two factors per vendor, architecture and engine multiply the priced times of a GPU
priced from priors (per architecture: CDNA 3 and CDNA 4 run different kernel builds --
AITER's gfx942 and gfx950 code objects -- and their calibration rows disagree in sign,
MI300X/MI325X optimistic by half, MI355X within about a tenth of its kernels' sum, so
one pair cannot describe both):
``prefill`` its prefill work (prefill passes, and the prompt tokens' increment of a mixed
pass) and ``decode`` its decode work (decode steps, and the decode rows of a mixed pass).
They are fitted by least squares on ``log(ours / published)`` over the **calibration**
rows of that vendor, architecture and engine (never a held-out row:
:mod:`perfmodel.validation_split`)
whose sources date from :data:`FIT_FROM` on -- the software stacks a buyer deploys today;
older stacks stay in the validation and show what the fit does not cover.  The rule was
fixed before the fit was first run; ``scripts/fit_serving_stack.py`` runs it and writes
:data:`FACTORS_FILE`, and ``tests/perfmodel/test_serving_stack.py`` checks the shipped
factors are that fit's optimum and that no held-out row entered it.

GPUs priced from measured kernels (every NVIDIA part) have no factor: their kernels were
timed inside the engines they serve with.

**Earlier stacks** (the ``legacy`` era).  The kernels, measured or priors, are today's;
a row published before :data:`FIT_FROM` measured an engine release that ran slower
kernels around a slower scheduler (vLLM 0.6 before its V1 engine, SGLang 0.4 on ROCm
before AITER's MLA and fused-MoE kernels), and its calibration rows say so by class:
median signed error +50 % on NVIDIA vLLM and +82 % on AMD SGLang aggregated rows dated
before 2025-06, against -5..+7 % on every vendor x engine class of current aggregated
rows (calibration rows, 2026-12-06).  Pricing such a row with today's
stack poses it wrongly, as pricing it on the wrong GPU would.  So a row's **era** is a
fact of its source (its date: :func:`era_of`), and a legacy row is priced with one more
pair of factors per vendor and engine (all GPUs of the vendor), fitted by the same rule
on the calibration rows of that vendor and engine dated *before* :data:`FIT_FROM`
(never a held-out row; at least :data:`LEGACY_MIN_ROWS` rows, else no factor).  They
multiply the current factors: they state how much slower that era's stack was than
today's.  Plans price today's stacks (``Calibration.stack_era`` "current", the default);
the legacy factors exist so that the validation poses each row's own stack, and the
*as today's stack* column of ``docs/validation.md`` shows every legacy row without them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np

from perfmodel.data_yaml import load_yaml
from perfmodel.hardware import GPU

#: Sources dated from this month on describe current serving stacks (ROCm 6.4 and later,
#: SGLang 0.5 / vLLM 0.9 and later on AMD); the fit reads only their rows.
FIT_FROM = "2025-06"
FACTORS_FILE = "data/serving_stack.yaml"
#: Bounds of a factor (a stack is not faster than its kernels by more than 2x, and the
#: fit must not run away where a row is unscorable).
BOUNDS = (0.5, 10.0)
#: Stack eras (module docstring): "current" prices today's stacks, "legacy" those of
#: sources dated before FIT_FROM.
ERAS = ("current", "legacy")
#: Fewest calibration rows a legacy factor pair is fitted on (two parameters).
LEGACY_MIN_ROWS = 4


@dataclass(frozen=True)
class Factors:
    prefill: float = 1.0
    decode: float = 1.0

    def of(self, phase: str) -> float:
        return self.prefill if phase == "prefill" else self.decode


NONE = Factors()


@lru_cache(maxsize=1)
def shipped() -> dict[str, Any]:
    """The factors file as shipped (package data)."""
    path = resources.files("perfmodel").joinpath(FACTORS_FILE)
    if not path.is_file():
        return {"factors": {}}
    return load_yaml(path.read_text()) or {"factors": {}}


def priced_from_priors(gpu: GPU) -> bool:
    """Whether ``gpu``'s kernels come from its vendor's priors (no measured system of
    its own vendor: :class:`perfmodel.kernels.library.KernelSet`, rule 4)."""
    from perfmodel.kernels.priors import priors_for
    from perfmodel.kernels.store import measured_systems
    from perfmodel.kernels.transfer import same_vendor

    systems = measured_systems()
    if gpu.kernel_system in systems or same_vendor(gpu, systems):
        return False
    return priors_for(gpu) is not None


@lru_cache(maxsize=256)
def _factors_for(gpu: GPU, engine: str) -> Factors:
    from perfmodel.launch import gpu_vendor

    if not priced_from_priors(gpu):
        return NONE
    by_arch = (shipped().get("factors") or {}).get(gpu_vendor(gpu), {})
    entry = (by_arch.get(gpu.arch) or {}).get(engine)
    if not entry:
        return NONE
    return Factors(float(entry["prefill"]), float(entry["decode"]))


def factors_for(gpu: GPU, engine: str) -> Factors:
    """The shipped factors of ``gpu`` under ``engine`` (1, 1 where none apply)."""
    return _factors_for(gpu, str(engine))


def era_of(date: str) -> str:
    """The stack era of a source dated ``date`` ("YYYY-MM"; "" is current)."""
    return "legacy" if date and str(date) < FIT_FROM else "current"


@lru_cache(maxsize=64)
def legacy_factors_for(vendor: str, engine: str) -> Factors:
    """The shipped legacy-era factors of ``vendor``'s GPUs under ``engine`` (1, 1 where
    none were fitted)."""
    entry = ((shipped().get("legacy") or {}).get(vendor) or {}).get(str(engine))
    if not entry:
        return NONE
    return Factors(float(entry["prefill"]), float(entry["decode"]))


# ----------------------------------------------------------------------------- the fit
def fit_rows(rows: Iterable[dict[str, Any]], vendor: str, arch: str, engine: str
             ) -> list[str]:
    """Ids of the rows the fit of (``vendor``, ``arch``, ``engine``) reads: scored
    calibration rows of that vendor, GPU architecture and engine dated from
    :data:`FIT_FROM` on (module docstring)."""
    from perfmodel.hardware import get_gpu

    return [r["case"] for r in rows
            if r["scored"] and not r["held_out"] and r["vendor"] == vendor
            and get_gpu(r["gpu"]).arch == arch and r["engine"] == engine
            and str(r["date"]) >= FIT_FROM]


def legacy_fit_rows(rows: Iterable[dict[str, Any]], vendor: str, engine: str) -> list[str]:
    """Ids of the rows the legacy fit of (``vendor``, ``engine``) reads: scored
    calibration rows of that vendor and engine dated before :data:`FIT_FROM` (module
    docstring); none when there are fewer than :data:`LEGACY_MIN_ROWS`."""
    ids = [r["case"] for r in rows
           if r["scored"] and not r["held_out"] and r["vendor"] == vendor
           and r["engine"] == engine and era_of(str(r["date"])) == "legacy"]
    return ids if len(ids) >= LEGACY_MIN_ROWS else []


def fit(cases: list, published: list[float], predict: Callable[[Any], float],
        error: Callable[[Any, float], float], field: str = "serving"
        ) -> tuple[Factors, dict[str, float]]:
    """The (prefill, decode) factors minimising the squared log errors of ``cases``
    (``perfmodel.validation.Case`` objects priced with a candidate's factors through
    the case's ``field``: "serving" for today's factors, ``Calibration.serving_override``;
    "legacy" for a legacy era's, ``Calibration.legacy_override``), and the fit's figures
    (rows, median |error| before and after)."""
    from dataclasses import replace

    from scipy.optimize import least_squares

    lo, hi = np.log(BOUNDS[0]), np.log(BOUNDS[1])

    def residuals(p: np.ndarray) -> np.ndarray:
        over = (float(np.exp(p[0])), float(np.exp(p[1])))
        out = []
        for c in cases:
            e = error(c, predict(replace(c, **{field: over})))
            out.append(np.log1p(e))
        return np.asarray(out)

    before = np.expm1(residuals(np.zeros(2)))
    sol = least_squares(residuals, np.zeros(2), bounds=([lo, lo], [hi, hi]),
                        diff_step=1e-3, xtol=1e-6, ftol=1e-8)
    after = np.expm1(residuals(sol.x))
    f = Factors(round(float(np.exp(sol.x[0])), 3), round(float(np.exp(sol.x[1])), 3))
    return f, {"rows": len(cases), "median_abs_before": float(np.median(np.abs(before))),
               "median_abs_after": float(np.median(np.abs(after))),
               "median_signed_after": float(np.median(after))}


__all__ = ["BOUNDS", "ERAS", "FACTORS_FILE", "FIT_FROM", "LEGACY_MIN_ROWS", "Factors",
           "era_of", "factors_for", "fit", "fit_rows", "legacy_factors_for",
           "legacy_fit_rows", "priced_from_priors", "shipped"]
