"""Published serving figures the model is compared against (docs/validation.md).

Each case fixes a GPU, model, island, parallel configuration and request shape as the
publication describes it, and reads the same quantity off our model.  Cases marked
``fitted`` were used to fit :attr:`Calibration.production_utilisation`; the others are
out-of-sample checks.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from perfmodel.calibration import DEFAULT_CALIBRATION, Calibration
from perfmodel.hardware import get_gpu
from perfmodel.island import SLO, WorkloadShape, benchmark_island
from perfmodel.models import get_model
from perfmodel.parallel import ParallelConfig

# DeepSeek's day-6 post (Feb 2025): 608B input and 168B output tokens a day, so the
# mean output is 168/608 of the ~4.4k mean input.
_DS_INPUT = 4400
_DS_OUTPUT = round(_DS_INPUT * 168 / 608)


@dataclass(frozen=True)
class Case:
    name: str
    source: str
    gpu: str
    model: str
    gpus: int
    config: ParallelConfig
    phase: str  # "prefill": input tokens/s per node; "decode": output tokens/s per node
    input_len: int
    output_len: int
    published: float
    hit_rate: float = 0.0
    tpot_ms: float | None = None
    fitted: bool = False
    note: str = ""


CASES: tuple[Case, ...] = (
    Case("DeepSeek-V3 prefill, H800 production", "DeepSeek inference-system post, 2025-02",
         "H800", "deepseek-v3", 32, ParallelConfig(1, 32, 32), "prefill", _DS_INPUT, _DS_OUTPUT,
         73_700, hit_rate=0.563, fitted=True,
         note="4-node units, EP32, DP32 attention; per node, cache hits included"),
    Case("DeepSeek-V3 decode, H800 production", "DeepSeek inference-system post, 2025-02",
         "H800", "deepseek-v3", 144, ParallelConfig(1, 144, 144), "decode", _DS_INPUT,
         _DS_OUTPUT, 14_800, tpot_ms=1000 / 21, fitted=True,
         note="18-node units, EP144, DP144; 20-22 tokens/s per user (TPOT ceiling 47.6 ms)"),
    Case("DeepSeek-V3 prefill, SGLang 2k input", "LMSYS blog 'large-scale EP', 2025-05",
         "H100-SXM", "deepseek-v3", 32, ParallelConfig(1, 32, 32), "prefill", 2000, 100,
         52_300, note="4 prefill nodes, EP32; benchmark at full load"),
    Case("DeepSeek-V3 prefill, SGLang 4k input", "LMSYS blog 'large-scale EP', 2025-05",
         "H100-SXM", "deepseek-v3", 32, ParallelConfig(1, 32, 32), "prefill", 4000, 100,
         50_302, note="4 prefill nodes, EP32; benchmark at full load"),
    Case("DeepSeek-V3 decode, SGLang 2k input", "LMSYS blog 'large-scale EP', 2025-05",
         "H100-SXM", "deepseek-v3", 72, ParallelConfig(1, 72, 72), "decode", 2000, 100,
         22_300, note="9 decode nodes, EP72; benchmark at full load"),
)


def predict(case: Case, calib: Calibration = DEFAULT_CALIBRATION) -> float:
    """Our figure for a case, in the case's unit (tokens/s per 8-GPU node)."""
    gpu = get_gpu(case.gpu)
    pmf = np.zeros(case.input_len + 1)
    pmf[case.input_len] = 1.0
    shape = WorkloadShape(pmf, float(case.output_len), 2 * case.output_len, case.hit_rate)
    table = benchmark_island(gpu, case.gpus, get_model(case.model), shape,
                             SLO(tpot_ms=case.tpot_ms), calib, configs=[case.config])
    nodes = case.gpus / 8
    if case.phase == "prefill":
        return float(table.prefill.rps[case.input_len]) * case.input_len / nodes
    return float(table.decode.rps[case.input_len]) * case.output_len / nodes


def fit_production_utilisation(calib: Calibration = DEFAULT_CALIBRATION) -> float:
    """Least-squares fit in log space of the one production constant to the fitted cases:
    the geometric mean of published / predicted-at-utilisation-1."""
    base = replace(calib, production_utilisation=1.0)
    ratios = [c.published / predict(c, base) for c in CASES if c.fitted]
    return float(np.exp(np.mean(np.log(ratios))))


def table(calib: Calibration = DEFAULT_CALIBRATION) -> list[dict]:
    rows = []
    for case in CASES:
        ours = predict(case, calib)
        rows.append({"case": case.name, "source": case.source, "published": case.published,
                     "ours": ours, "error": ours / case.published - 1.0,
                     "use": "fitted" if case.fitted else "check", "note": case.note})
    return rows
