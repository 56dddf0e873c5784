"""Aggregated validation rows read as their client's finite run (:mod:`perfmodel.aggregated_run`).

A posed aggregated row that states its client's ``num_prompts`` and reports a rate
(tokens/s over the run) is read as that run played out -- the start, the steady middle
and the drain -- instead of as the steady operating point; TTFT, TPOT and SLO rows, and
rows without ``num_prompts``, keep the point (``perfmodel.validation`` module docstring).
The steady reading stays visible as a sensitivity column
(``perfmodel.validation.FLIPS["finite_run"]``), and so does the output-length law of
every row whose client does not ask for fixed lengths (``FLIPS["output_law"]``: the same
run with every answer at the mean).

**Which law a row's client draws its output lengths from** (:func:`output_law`), by what
the source text states or the client's documented default:

* ShareGPT (the row's ``dataset``, or its id, names it): :data:`SHAREGPT`;
* SemiAnalysis's ``sa-bench`` (InferenceX rows): uniform on ``[0.8 L, L]`` (bench.sh
  ``RANDOM_RANGE_RATIO=${12:-0.8}``; :data:`perfmodel.benchmark_run.RANGE_RATIO`);
* ``sglang.bench_serving --dataset-name random`` without ``--random-range-ratio`` (the
  SGLang cookbook rows): uniform on ``[1, L]`` (its ``random_range_ratio`` default 0.0:
  ``randint(max(int(L * ratio), 1), L + 1)``; the posed file's header says so);
* an MLPerf dataset with a length shape (:mod:`perfmodel.validation_lengths`): a gamma law
  whose spread is the shape's, ``CV^2 = b - 1``;
* anything else -- vLLM ``benchmark_throughput`` / ``bench serve --dataset-name random``
  (range ratio 0: fixed), ``trtllm-bench`` datasets of ``--output-stdev 0`` --
  fixed lengths.

A row with a spread of lengths also holds a length-biased context in its running batch,
``b osl / 2`` generated tokens on average (``b = E[d^2] / E[d]^2`` of the law: the rule
of :mod:`perfmodel.validation_lengths`), unless its dataset has a measured shape.
"""

from __future__ import annotations

import math
from typing import Protocol

from perfmodel.aggregated_run import FIXED, FiniteRun, OutputLaw, finite_run, island_table
from perfmodel.benchmark_run import RANGE_RATIO
from perfmodel.calibration import Calibration
from perfmodel.decode import mtp_yield
from perfmodel.hardware import get_gpu
from perfmodel.models import ModelSpec
from perfmodel.validation_lengths import shape_for
from perfmodel.validation_units import parse


class Case(Protocol):
    """What this module reads of a posed row (``perfmodel.validation.Case``, which
    imports this module)."""

    @property
    def id(self) -> str: ...
    @property
    def source(self) -> str: ...
    @property
    def gpu(self) -> str: ...
    @property
    def mode(self) -> str: ...
    @property
    def unit(self) -> str: ...
    @property
    def dataset(self) -> str: ...
    @property
    def isl(self) -> int: ...
    @property
    def osl(self) -> float: ...
    @property
    def tp(self) -> int: ...
    @property
    def ep(self) -> int: ...
    @property
    def replicas(self) -> int: ...
    @property
    def num_prompts(self) -> int: ...
    @property
    def slo_ttft_ms(self) -> float: ...
    @property
    def slo_tpot_ms(self) -> float: ...
    @property
    def reading(self) -> str: ...
    @property
    def outputs(self) -> str: ...
    @property
    def instance_dp(self) -> int: ...
    def spec(self) -> ModelSpec: ...
    def calibration(self) -> Calibration: ...

#: Clients that draw output lengths uniformly on ``[ratio L, L]``, by source (module
#: docstring for where each ratio is stated).
CLIENT_RANGE_RATIO = {"IX_DSR1": RANGE_RATIO, "SGL_COOKBOOK": 0.0}

#: ShareGPT answers as ``bench serve --dataset-name sharegpt`` samples them: the answer
#: of each conversation's first turn, a pair dropped when its prompt is over 1,024 tokens
#: or prompt + answer over 2,048 (vLLM's sampler), so at most ``2048 - prompt`` tokens.
#: **The spread is an assumption.**  No source we can reach states the spread of that
#: sample (HuggingFace, where the file is, is unreachable here; the vLLM paper, arXiv
#: 2309.06180 section 6.1, gives means and a histogram of the unfiltered first turns
#: only: 'higher variance' than Alpaca's).  The law borrows the one chat-answer spread
#: the project holds: the Azure LLM inference 2023 conversation trace (19,366 requests,
#: CC-BY 4.0; Patel et al., Splitwise, ISCA 2024), whose output lengths have CV 0.771
#: (``workloads/azure-conv-2023.yaml``, decode histogram; mean 211 tokens against the
#: ShareGPT runs' 195-203), as a gamma law -- not the trace's own histogram, which that
#: service cut at 1,000 tokens where the sampler cuts at 2,048 - prompt.  Every row
#: that takes it reports its error at fixed lengths (``FLIPS["output_law"]``); an
#: exponential law (CV 1) would lower each of them further (by 4 to 63 points when the
#: law was chosen, 2026-12-06).
SHAREGPT = OutputLaw("gamma", cv=0.77, cap=2048,
                     source="assumed: gamma, CV of the Azure LLM 2023 conversation trace")


def output_law(case: Case) -> OutputLaw:
    """The law a row's client draws output lengths from (module docstring)."""
    if case.outputs == "fixed":
        return FIXED
    if "sharegpt" in (case.dataset or case.id).lower():
        # the sampler's cap is on prompt + answer: at the mean prompt, 2,048 - isl
        return OutputLaw(SHAREGPT.kind, SHAREGPT.ratio, SHAREGPT.cv,
                         max(SHAREGPT.cap - int(case.isl), 1), SHAREGPT.source)
    if case.source in CLIENT_RANGE_RATIO:
        return OutputLaw("uniform", ratio=CLIENT_RANGE_RATIO[case.source],
                         source=f"{case.source} client default")
    shape = shape_for(case.dataset)
    if shape is not None:
        return OutputLaw("gamma", cv=math.sqrt(max(shape.output_ratio - 1.0, 0.0)),
                         source=f"length shape {shape.name}")
    return FIXED


def spread(law: OutputLaw) -> float:
    """``b = E[d^2] / E[d]^2`` of a law (the cap ignored)."""
    if law.kind == "uniform":
        r = law.ratio
        return 4.0 * (1.0 + r + r * r) / (3.0 * (1.0 + r) ** 2)
    return 1.0 + law.cv ** 2 if law.kind == "gamma" else 1.0


def held_tokens(case: Case) -> float | None:
    """Generated tokens a decoding sequence of the row's running batch holds on average
    (None: ``osl / 2``, fixed lengths): the dataset's measured shape where it has one,
    else the law's spread (module docstring)."""
    shape = shape_for(case.dataset)
    if shape is not None:
        return shape.held(case.isl, case.osl)
    law = output_law(case) if reads_finite_run(case) else FIXED
    return None if law.kind == "fixed" else 0.5 * spread(law) * float(case.osl)


def reads_finite_run(case: Case) -> bool:
    """Whether an aggregated row is read as its client's finite run: it states
    ``num_prompts``, reports a rate and holds no SLO, and the flip does not ask for the
    steady point."""
    if case.mode != "aggregated" or not case.num_prompts or case.reading == "steady":
        return False
    if case.slo_ttft_ms or case.slo_tpot_ms:
        return False
    return parse(case.unit)[0] in ("output_tok_s", "input_tok_s", "total_tok_s")


def run_of(case: Case, slots: int, held: float | None) -> FiniteRun:
    """One instance's run: its share of the row's prompts (``num_prompts / replicas``)
    over its attention groups, ``slots`` sequences each, decoding at the mean context
    ``isl + held`` (``osl / 2`` when None)."""
    gpu, model, calib = get_gpu(case.gpu), case.spec(), case.calibration()
    context = float(case.isl) + (0.5 * float(case.osl) if held is None else held)
    table = island_table(gpu, model, case.tp, case.instance_dp, case.ep, float(case.isl),
                         context, calib, slots)
    requests = max(int(round(case.num_prompts / max(case.replicas, 1))), 1)
    outputs = output_law(case).draw(float(case.osl), requests)
    _, per_step = mtp_yield(calib, model)
    return finite_run(table, outputs, case.instance_dp, float(case.isl), per_step)


__all__ = ["CLIENT_RANGE_RATIO", "SHAREGPT", "held_tokens", "output_law", "reads_finite_run",
           "run_of", "spread"]
