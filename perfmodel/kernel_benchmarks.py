"""Published kernel benchmarks posed to the fitted kernels (``docs/validation.md``, part b).

The held-out transfer of part (b) can only pair GPUs the database measured, and every
such pair has the same tensor-core rate per SM within an architecture.  The H20 does
not: it keeps the Hopper SM with its tensor cores throttled to about a quarter of the
H100's rate.  Published DeepGEMM benchmarks of one kernel on both GPUs
(``perfmodel/data/kernel_benchmarks.yaml``) check the term of the transfer rule that
handles that (:meth:`perfmodel.kernels.models.EfficiencyModel.time_on`): each row is
predicted from the shipped tables, once with the rule and once with the efficiency
simply carried over (``floor + max(C', M') / eta``: the fitted GPU's efficiency at the
shape, applied to the target's roofline).

A grouped masked GEMM of ``groups`` experts, each ``m`` x ``n`` x ``k``, is posed as one
GEMM of ``m`` rows and ``groups x n`` columns: the same FLOPs, weights and output tiles
(the kernel tiles each group's m x n block exactly as one m x (groups n) block), with
the activations read once instead of per group -- a few per cent of the bytes at these
shapes.  The tables are SGLang's FP8 block-scaled GEMMs, which SGLang runs on DeepGEMM.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np

from perfmodel.data_yaml import load_yaml
from perfmodel.hardware import get_gpu
from perfmodel.kernels import ops
from perfmodel.kernels.library import kernels_for

ENGINE = "sglang"
KIND = "fp8_block"


@dataclass(frozen=True)
class KernelRow:
    gpu: str
    source: str
    groups: int
    m: int
    n: int
    k: int
    us: float


@lru_cache(maxsize=1)
def load() -> tuple[tuple[KernelRow, ...], dict[str, dict[str, str]]]:
    text = resources.files("perfmodel").joinpath("data/kernel_benchmarks.yaml").read_text()
    doc = load_yaml(text)
    rows = tuple(KernelRow(**r) for r in doc["rows"])
    return rows, {k: dict(v) for k, v in doc["sources"].items()}


def predict_us(row: KernelRow, carried: bool = False) -> float:
    """Microseconds the shipped tables give for ``row`` on its GPU; ``carried``: with the
    fitted efficiency carried over to the target's roofline instead of the rule."""
    gpu = get_gpu(row.gpu)
    ks = kernels_for(gpu, ENGINE)
    m, n, k = row.m, row.groups * row.n, row.k
    if carried:
        flops, nbytes = ops.gemm_work(m, n, k, KIND)
        t_roof = ops.roofline(flops, nbytes, ks.peak(KIND), ks.bandwidth)
        t = ks.model(f"gemm:{KIND}").time(t_roof, *ops.gemm_coords(m, n, k))
    else:
        t = ks.gemm(m, n, k, KIND)
    return float(np.ravel(t)[0]) * 1e6


def table() -> list[dict[str, Any]]:
    """One row per benchmark: measured and predicted microseconds, errors
    (ours / measured - 1), and the source system the tables came from."""
    rows, _ = load()
    out = []
    for r in rows:
        ks = kernels_for(get_gpu(r.gpu), ENGINE)
        _, system, _ = ks.resolve(f"gemm:{KIND}")
        ours = predict_us(r)
        carried = predict_us(r, carried=True)
        out.append({"gpu": r.gpu, "source": r.source, "shape": (r.groups, r.m, r.n, r.k),
                    "fitted_on": system, "measured_us": r.us, "ours_us": ours,
                    "error": ours / r.us - 1.0, "carried_us": carried,
                    "carried_error": carried / r.us - 1.0})
    return out


def summary(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per GPU: median and worst |error| with the rule and with the efficiency carried
    over."""
    out: dict[str, dict[str, float]] = {}
    for gpu in sorted({r["gpu"] for r in rows}):
        ours = [abs(r["error"]) for r in rows if r["gpu"] == gpu]
        carried = [abs(r["carried_error"]) for r in rows if r["gpu"] == gpu]
        out[gpu] = {"rows": float(len(ours)), "median_abs": float(np.median(ours)),
                    "worst_abs": float(max(ours)),
                    "carried_median_abs": float(np.median(carried)),
                    "carried_worst_abs": float(max(carried))}
    return out
