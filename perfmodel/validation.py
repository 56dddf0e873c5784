"""Published serving figures posed to the perf model (``docs/validation.md``, part c).

Each case fixes what the publication fixed -- GPU, model and precision, engine,
parallel layout, input and output lengths, batch, concurrency or token budget -- and
reads the same quantity off the model.  Two files hold them: the older
``perfmodel/data/validation_cases.yaml`` and the rows posed under issue 29's protocol,
``perfmodel/data/posed/*.yaml`` (read through :func:`perfmodel.validation_split.load_posed`,
never moved or edited here).  Nothing here is fitted: the model's kernels come from the
measured database and its serving behaviour from the engine profiles; these rows only
score it.

**How each unit and mode is read off the model** (units: ``perfmodel.validation_units``):

* ``ttft`` mode, ``ttft_ms`` / ``ttft_mean_ms``: one prompt alone on an idle attention
  group (``prefill_time``): what a batch-1 TTFT measures.
* ``prefill`` mode, ``input_tok_s_*``: forward passes that fill the engine's token
  budget (``budget`` or the engine profile's), ``budget / isl`` prompts per pass (at
  least one).  With ``concurrency`` the client holds that many requests over the ``dp``
  attention groups, so a pass holds at most ``concurrency / dp`` prompts.
  ``total_tok_s_*`` adds the ``osl`` output tokens each prompt produces ((isl + osl) /
  isl times the input rate; with osl = 1 the first token comes out of the prefill pass,
  which is how ``vllm bench`` counts it).
* ``decode`` mode, ``output_tok_s_*``: steady decode at ``batch`` sequences and context
  ``context`` (default isl + osl / 2), ``step_model``; ``tpot_ms`` / ``itl_ms`` are the
  same step time (an engine's inter-token latency is its decode step).  ``batch`` is per
  GPU in validation_cases.yaml (a tp-wide group holds batch x tp) and per attention
  group (the engine instance's running sequences) in the posed files, whose headers
  define it so; a posed decode row without a batch is posed as "the largest batch the
  KV cache holds at isl + osl" (``memory.max_decode_batch``, and at most what the engine
  runs, ``memory.engine_batch_cap``).
* ``static`` mode: ``batch`` prompts prefilled in one pass, then ``osl`` decode steps
  (``prefill_pass_time`` + ``StepModel.request_time``): ``static_e2e_latency_s`` is that
  sum (vLLM ``benchmark_latency``), ``output_tok_s_*`` is batch x osl over it.
* ``aggregated`` mode: in-flight batching with chunked prefill
  (``aggregated.aggregated_point``).  Without a load figure the engine runs the largest
  batch the KV cache holds (max-throughput benchmarks, ``trtllm-bench``).  A closed-loop
  client with ``concurrency`` requests in flight keeps at most ``concurrency / dp``
  sequences per attention group; ``max_num_seqs`` / ``batch`` (the engine's cap per
  instance) and ``num_prompts / dp`` (an offline run cannot hold more than it was
  given) cap it the same way: ``aggregated_point(..., batch=min(caps))``, which also
  stops at what memory allows.  An ``slo`` (MLPerf Server's p99 TTFT / TPOT limits) is
  passed as the TTFT and TPOT ceilings of the operating point -- mean against p99, the
  nearest the model has.  Rates: output ``rps x osl``, input ``rps x isl``, total
  ``rps x (isl + osl)``; ``tpot_ms`` / ``itl_ms`` and ``ttft_ms`` / ``ttft_mean_ms`` are
  the point's TPOT and TTFT (a benchmark's mean over requests at that load is what the
  point's steady state stands for; queueing in the client is not modelled).  Why the
  caps divide by ``dp``: each data-parallel attention group runs its own batch, and a
  client's requests spread over them.  A row that ran a variable-length dataset
  (MLPerf) prices its running batch at the dataset's length-biased context, ``a isl +
  b osl / 2`` (:mod:`perfmodel.validation_lengths`), not ``isl + osl / 2``.  A rate
  row that states its client's ``num_prompts`` (an offline run, a burst, a closed loop
  of so many prompts) is read as that client's finite run, played out pass by pass on
  the same island -- the start, the steady middle and the drain, output lengths drawn
  as the client draws them (:mod:`perfmodel.validation_finite`,
  :mod:`perfmodel.aggregated_run`); the steady point above stays as its
  ``finite_run`` sensitivity.
* ``disaggregated`` mode (a posed row with ``prefill`` and ``decode`` sides: Dynamo's
  xPyD deployments): a closed-loop client of ``concurrency`` requests over a prefill
  station, the KV transfer and a decode station, each side its own workers, layout and
  engine limits (:mod:`perfmodel.validation_disagg`); rates count both sides' GPUs.
  A row that states its client's ``num_prompts`` is read as that client's finite run,
  played out request by request on the model's station times -- the start-up burst,
  the clumped returns to the prefill workers, the queue behind a long pass and the
  drain (:mod:`perfmodel.benchmark_run`), each side's requests routed as its frontend
  and engine route them (``validation_disagg.routing``); TTFT and TPOT rows, and rows
  without ``num_prompts``, keep the steady-state point.

Per-GPU, per-node (8 GPUs) and per-instance (the row's ``gpus``) scopes scale a per-GPU
rate.  **Error sign**: positive = the model promises more than was measured: ours /
published - 1 for rates, published / ours - 1 for every time
(``validation_units.optimism_error``).

**Rows that are not scored** are listed with a one-line reason, never dropped and never
given inputs their posing lacks: engine releases before :data:`SCORED_FROM`; ``isl``
null; ``pp`` > 1 (the model has no pipeline-parallel path); a GPU or model missing from
the catalog; a unit the mode has no reading for; a point the model finds infeasible.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np

from perfmodel import validation_finite as finite
from perfmodel import validation_units as units
from perfmodel.aggregated import aggregated_point
from perfmodel.calibration import Calibration
from perfmodel.data_yaml import load_yaml
from perfmodel.decode import mtp_yield, step_model
from perfmodel.errors import InputError
from perfmodel.hardware import get_gpu
from perfmodel.memory import engine_batch_cap, kv_per_sequence, max_decode_batch
from perfmodel.models import get_model
from perfmodel.prefill import prefill_pass_time, prefill_time
from perfmodel.serving_stack import era_of
from perfmodel.validation_disagg import (
    Side,
    benchmark_run,
    disaggregated_point,
    sides,
    ttft_gap_summary,
    wide_ep_decode_summary,
)
from perfmodel.validation_lengths import shape_for
from perfmodel.validation_units import NotPredictable

MODES = ("prefill", "ttft", "decode", "static", "aggregated", "disaggregated")
#: Sources older than this ran engine releases whose kernels the database does not hold;
#: their rows are reported but not scored.
SCORED_FROM = "2024-06"
#: Where the older cases live (``origin`` of their rows); posed rows carry ``posed/<file>``.
CASES_FILE = "validation_cases.yaml"

#: Sources whose posing says their prefill / decode rows come from a disaggregated
#: (prefill/decode-split) deployment, and where it says so.  Such rows count as
#: "disaggregated" in the mode counts; their error band phase stays prefill / decode.
DISAGGREGATED = {
    "LMSYS_EP": "source title: 'DeepSeek with PD disaggregation and large-scale EP'",
    "VLLM_GB200": "posed/vllm_sglang.yaml: 'vLLM wide-EP, DeepSeek-R1, disaggregated P/D'",
    "VLLM_WIDEEP": "posed/vllm_sglang.yaml: 'vLLM wide-EP, DeepSeek-R1, disaggregated P/D'",
    "LMSYS_GB300": "quote: 'a 1P/1D disaggregated setup with 8 GPUs'",
}


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
    osl: float = 0
    batch: int = 0
    budget: int = 0
    context: int = 0
    mtp_acceptance: float = 0.0
    mtp_draft: int = 1
    eplb: str = "auto"
    overlap: bool | None = None
    fp8_attention: bool = False
    # posed rows (perfmodel/data/posed/*.yaml): the load the figure was measured under
    concurrency: int = 0
    max_num_seqs: int = 0
    num_prompts: int = 0
    slo_ttft_ms: float = 0.0
    slo_tpot_ms: float = 0.0
    #: the deployment's engine limits where the source states them (0: the engine's
    #: default): memory fraction (SGLang --mem-fraction-static, vLLM
    #: --gpu-memory-utilization, TRT-LLM free_gpu_memory_fraction) and the largest
    #: CUDA-graph batch (SGLang --cuda-graph-max-bs, TRT-LLM cuda_graph_config).
    mem_fraction: float = 0.0
    graph_max: int = 0
    #: The engine ran without CUDA graphs (vLLM ``--enforce-eager``): every decode step
    #: runs eagerly, as a batch beyond ``graph_max`` does.
    eager: bool = False
    #: (prefill, decode) serving-stack factors to price with instead of the shipped ones
    #: (perfmodel.serving_stack.fit); None: the shipped factors.
    serving: tuple[float, float] | None = None
    #: The stack era of the row's source (``serving_stack.era_of`` its date): "legacy"
    #: prices the engine release of a source dated before ``serving_stack.FIT_FROM``
    #: (:mod:`perfmodel.serving_stack`, "Earlier stacks"); "current" today's.
    era: str = "current"
    #: (prefill, decode) legacy-era factors to price with instead of the shipped ones
    #: (perfmodel.serving_stack.fit with field "legacy"); None: the shipped factors.
    legacy: tuple[float, float] | None = None
    #: ``batch`` counts sequences per attention group (posed files) rather than per GPU
    #: (validation_cases.yaml, where a tp-wide group holds batch x tp).
    batch_per_group: bool = False
    #: The source names the GPU family only ("NVIDIA H100 GPUs"): the posing's form
    #: factor is an assumption (posed rows whose ``stated`` list lacks ``gpu``).
    gpu_assumed: bool = False
    #: Independent engine instances the row's ``gpus`` run (MLPerf systems: eight TP1
    #: Mixtral instances, nine DEP8 DeepSeek instances on 72 GPUs).  ``dp`` counts the
    #: attention groups of all of them; each instance is its own island of
    #: ``dp / replicas`` groups, whose MoE layers never exchange tokens with another's.
    replicas: int = 1
    #: The dataset the source ran (posed MLPerf rows): a variable-length one with a
    #: shipped length shape prices the running batch at its length-biased context
    #: (:mod:`perfmodel.validation_lengths`); "" or an unknown one: fixed lengths.
    dataset: str = ""
    #: The two sides of a ``disaggregated`` row (:mod:`perfmodel.validation_disagg`).
    prefill: Side | None = None
    decode: Side | None = None
    #: How a disaggregated row's client run routes requests to each side's groups
    #: (``perfmodel.validation_disagg.ROUTERS``): "" as the frontend and engine do,
    #: "pooled" to the least-loaded group of the side (the flipped assumption).
    router: str = ""
    #: How an aggregated rate row that states ``num_prompts`` is read
    #: (:mod:`perfmodel.validation_finite`): "" as its client's finite run, "steady" at
    #: the steady operating point (the flipped assumption).
    reading: str = ""
    #: The client's output-length law: "" by the rule of
    #: :func:`perfmodel.validation_finite.output_law`, "fixed" every answer at ``osl``
    #: (the flipped assumption).
    outputs: str = ""

    @property
    def dense(self) -> bool:
        return not get_model(self.model).is_moe

    def calibration(self) -> Calibration:
        return Calibration(engine=self.engine, mtp_acceptance=self.mtp_acceptance,
                           mtp_draft_tokens=self.mtp_draft, eplb=self.eplb,
                           micro_batch_overlap=self.overlap, fp8_attention=self.fp8_attention,
                           prefill_token_budget=self.budget or None,
                           memory_fraction=self.mem_fraction or None,
                           graph_max_batch=0 if self.eager else (self.graph_max or None),
                           serving_override=self.serving,
                           stack_era=self.era,
                           legacy_override=self.legacy)

    def spec(self):
        m = get_model(self.model)
        weights = {"fp8_block": ("fp8", True, "all"), "fp8": ("fp8", False, "all"),
                   "fp8_ffn": ("fp8", False, "ffn"), "fp4": ("fp4", False, "all"),
                   "bf16": ("bf16", False, "all")}[self.weights]
        return replace(m, weight_dtype=weights[0], weight_block_scaled=weights[1],
                       fp8_scope=weights[2], kv_dtype=self.kv)

    @property
    def instance_dp(self) -> int:
        """Attention groups of one instance (``dp / replicas``)."""
        return self.dp // max(self.replicas, 1)

    @property
    def instance_gpus(self) -> int:
        """GPUs of one instance (``gpus / replicas``)."""
        return self.gpus // max(self.replicas, 1)

    def group_batch(self) -> float:
        """Sequences per attention group that ``batch`` poses (module docstring)."""
        return float(self.batch if self.batch_per_group else self.batch * self.tp)


@lru_cache(maxsize=1)
def load_cases() -> tuple[tuple[Case, ...], dict[str, dict[str, str]]]:
    raw = load_yaml(resources.files("perfmodel").joinpath(
        "data/validation_cases.yaml").read_text())
    cases = []
    for row in raw["cases"]:
        row = dict(row)
        if row["mode"] not in MODES:
            raise ValueError(f"validation case {row['id']}: unknown mode {row['mode']}")
        date = str((raw["sources"].get(row["source"]) or {}).get("date", ""))
        cases.append(Case(**row, era=era_of(date)))
    return tuple(cases), raw["sources"]


_CASE_FIELDS = {f.name for f in fields(Case)}


def posed_case(row: dict[str, Any]) -> Case:
    """The :class:`Case` a posed row poses, or :class:`NotPredictable` with the reason.

    Only keys the posing gives are used (``dbo`` is the engines' micro-batch overlap,
    ``slo`` the TTFT / TPOT ceilings); a null is the key's default (the engine's)."""
    if row.get("unscorable"):  # the source's own figures rule out every posing of it
        raise NotPredictable(f"source: {row['unscorable']}")
    if row.get("isl") is None:
        raise NotPredictable("isl null: the posing gives no input length (dataset mean "
                             "prompt length not stated)")
    if int(row.get("pp") or 1) > 1:
        raise NotPredictable(f"pp > 1: pp {row['pp']}, and the model has no pipeline-parallel "
                             "path")
    if row["mode"] not in MODES:
        raise NotPredictable(f"no path: mode '{row['mode']}' is not one of the model's")
    for kind, name, look in (("GPU", row["gpu"], get_gpu), ("model", row["model"], get_model)):
        try:
            look(name)
        except InputError as exc:  # the catalog's own one-line error
            raise NotPredictable(f"catalog: {kind} '{name}' missing") from exc
    values = {k: v for k, v in row.items() if k in _CASE_FIELDS and v is not None}
    if row.get("dbo") is not None and "overlap" not in values:
        values["overlap"] = bool(row["dbo"])
    slo = row.get("slo") or {}
    values["slo_ttft_ms"] = float(slo.get("ttft_p99_ms") or 0.0)
    values["slo_tpot_ms"] = float(slo.get("tpot_p99_ms") or 0.0)
    values["gpu_assumed"] = "gpu" not in (row.get("stated") or [])
    for key in ("prefill", "decode"):
        if isinstance(values.get(key), dict):
            try:
                values[key] = Side.from_posing(values[key], f"{key} side")
            except (TypeError, ValueError) as exc:
                raise NotPredictable(f"posing: {exc}") from exc
    if isinstance(values.get("decode"), Side):  # a disaggregated row: the top-level
        for key in ("tp", "dp", "ep"):           # layout is the decode side's
            values.setdefault(key, getattr(values["decode"], key))
    values["era"] = era_of(str((row.get("source_info") or {}).get("date", "")))
    return Case(**values, batch_per_group=True)


def _col(x: float) -> np.ndarray:
    return np.array([[float(x)]])


def _no_path(case: Case) -> NotPredictable:
    return NotPredictable(f"no path: the model has no reading of {case.unit} in mode "
                          f"{case.mode}")


def aggregated_batch(case: Case) -> int | None:
    """The batch cap per attention group an aggregated row's load poses (None: the
    largest the KV cache holds): ``concurrency / dp``, ``max_num_seqs``, ``batch`` (as
    group sequences) and ``num_prompts / dp``, the smallest of those given."""
    caps = []
    if case.concurrency:
        caps.append(max(int(case.concurrency / case.dp), 1))
    if case.max_num_seqs:
        caps.append(int(case.max_num_seqs))
    if case.batch:
        caps.append(max(int(case.group_batch()), 1))
    if case.num_prompts:
        caps.append(max(int(case.num_prompts / case.dp), 1))
    return min(caps) if caps else None


def closed_loop_rps(case: Case, pt) -> float:
    """The request rate of an aggregated point under the row's closed-loop client.

    A client that keeps ``concurrency`` requests in flight counts a request from the
    moment it is sent, through its prefill, to its last token, so by Little's law it
    completes ``concurrency / (TTFT + (steps - 1) mean pass)`` requests/s, ``steps`` the
    decode steps of one request; the operating point's own rate counts only the
    sequences that are decoding (the engine's running batch).  The smaller of the two
    holds.  Rows without a client concurrency (offline, max-throughput) keep the
    point's rate."""
    if not case.concurrency:
        return pt.rps
    _, per_step = mtp_yield(case.calibration(), case.spec())
    steps = max(float(case.osl) / per_step, 1.0)
    lifetime = pt.ttft_s + (steps - 1.0) * pt.pass_s
    return min(pt.rps, case.concurrency / lifetime) if lifetime > 0 else pt.rps


def predict(case: Case) -> float:
    """Our figure for a case, in the case's unit (module docstring for each reading).
    Raises :class:`NotPredictable` for a unit the mode has no reading for, or an
    infeasible point."""
    q, _ = units.parse(case.unit)
    gpu, model, calib = get_gpu(case.gpu), case.spec(), case.calibration()
    if case.replicas < 1 or case.dp % case.replicas or case.gpus % case.replicas:
        raise NotPredictable(f"posing: replicas {case.replicas} must divide dp {case.dp} "
                             f"and gpus {case.gpus}")
    # one instance is modelled; its per-GPU rate is the system's (replicas are alike)
    tp, dp, ep = _col(case.tp), _col(case.instance_dp), _col(case.ep)
    isl, osl = float(case.isl), float(case.osl)
    per_gpu: float
    if case.mode == "disaggregated":
        return _disaggregated(case, q)
    if case.mode == "ttft":
        if not q.startswith("ttft"):
            raise _no_path(case)
        return float(np.ravel(prefill_time(gpu, model, isl, tp, dp, ep, 0.0, calib))[0]) * 1e3
    if case.mode == "prefill":
        if q not in ("input_tok_s", "total_tok_s"):
            raise _no_path(case)
        budget = float(calib.profile.prefill_token_budget)
        prompts = max(budget / case.isl, 1.0)
        if case.concurrency:
            prompts = min(prompts, max(case.concurrency / case.dp, 1.0))
        t = float(np.ravel(prefill_pass_time(gpu, model, isl, tp, dp, ep, 0.0, calib,
                                             prompts))[0])
        per_gpu = prompts * case.isl / t / case.tp
        if q == "total_tok_s":
            per_gpu *= (isl + osl) / isl
    elif case.mode == "decode":
        if q not in ("output_tok_s", "tpot_ms", "itl_ms"):
            raise _no_path(case)
        group = case.group_batch()
        if not group:
            group = min(float(np.ravel(max_decode_batch(gpu, model, tp, dp, ep,
                                                        _col(isl + osl), calib))[0]),
                        engine_batch_cap(gpu, model, calib))
        if group < 1:
            raise NotPredictable("infeasible: the model's KV cache holds no sequence of "
                                 "isl + osl tokens after the weights (the source ran it: "
                                 "a miss of the model, not a number to score)")
        sm = step_model(gpu, model, _col(group), tp, dp, ep, calib)
        context = case.context or isl + 0.5 * osl
        step = float(np.ravel(sm.step_time(context))[0])
        if q in ("tpot_ms", "itl_ms"):
            return step * 1e3
        per_gpu = group / step / case.tp
    elif case.mode == "static":
        if q not in ("output_tok_s", "static_e2e_latency_s"):
            raise _no_path(case)
        group = case.group_batch()
        pre = float(np.ravel(prefill_pass_time(gpu, model, isl, tp, dp, ep, 0.0,
                                               calib, group))[0])
        sm = step_model(gpu, model, _col(group), tp, dp, ep, calib)
        dec = float(np.ravel(sm.request_time(isl, osl))[0])
        if q == "static_e2e_latency_s":
            return pre + dec
        per_gpu = group * case.osl / (pre + dec) / case.tp
    else:
        if q == "static_e2e_latency_s":
            raise _no_path(case)
        held = finite.held_tokens(case)
        pt = aggregated_point(gpu, model, case.tp, case.instance_dp, case.ep, case.isl, osl,
                              0.0,
                              calib, batch=aggregated_batch(case),
                              ttft_ms=case.slo_ttft_ms or None,
                              tpot_ms=case.slo_tpot_ms or None, held=held)
        if not pt.feasible:
            sized = kv_per_sequence(calib, isl, osl,  # as aggregated_point
                                    0.5 * osl if held is None else held)
            fits = float(np.ravel(max_decode_batch(gpu, model, tp, dp, ep, _col(sized),
                                                   calib))[0])
            raise NotPredictable(
                "infeasible: " + (f"the model's KV cache holds no sequence of {sized:,.0f} "
                                  "tokens after the weights" if fits < 1 else
                                  "no batch meets the SLO ceilings")
                + " (the source ran it: a miss of the model, not a number to score)")
        if q in ("tpot_ms", "itl_ms"):
            return pt.tpot_s * 1e3
        if q.startswith("ttft"):
            return pt.ttft_s * 1e3
        if finite.reads_finite_run(case):  # the client's run, played out
            rps = finite.run_of(case, pt.batch, held).output_tokens_per_s / osl
        else:
            rps = closed_loop_rps(case, pt)
        per_gpu = rps * _tokens_per_request(case, q) / case.instance_gpus
    return per_gpu * units.scope_gpus(case.unit, case.gpus)


def _disaggregated(case: Case, q: str) -> float:
    """A disaggregated row's figure (:mod:`perfmodel.validation_disagg`): rates per GPU
    of both sides together -- of the client's run where the row states its
    ``num_prompts``, else of the steady-state point -- or the point's TTFT / TPOT."""
    pre, dec = sides(case)
    if pre.gpus + dec.gpus != case.gpus:
        raise NotPredictable(f"posing: gpus {case.gpus} is not prefill {pre.gpus} + "
                             f"decode {dec.gpus}")
    if not case.concurrency:
        raise NotPredictable("posing: a disaggregated row needs the client's concurrency")
    if q == "static_e2e_latency_s":
        raise _no_path(case)
    if q in ("tpot_ms", "itl_ms") or q.startswith("ttft"):
        pt = disaggregated_point(case, pre, dec)
        return (pt.tpot_s if q in ("tpot_ms", "itl_ms") else pt.ttft_s) * 1e3
    if _reads_run(case):  # the client's finite run, played out (perfmodel.benchmark_run)
        run = benchmark_run(case, pre, dec)
        rps = run.output_tokens_per_s / float(case.osl)
    else:
        rps = disaggregated_point(case, pre, dec).rps
    return rps * _tokens_per_request(case, q) / case.gpus * units.scope_gpus(case.unit,
                                                                            case.gpus)


def _tokens_per_request(case: Case, q: str) -> float:
    """Tokens of one request a rate quantity ``q`` counts (output, input or both)."""
    return {"output_tok_s": float(case.osl), "input_tok_s": float(case.isl),
            "total_tok_s": float(case.isl + case.osl)}[q]


def error(case: Case, ours: float) -> float:
    """Signed error in the optimism sense: ours / published - 1 for rates, published /
    ours - 1 for times, so a model that promises more than was measured reads positive
    everywhere (``validation_units.optimism_error``)."""
    return units.optimism_error(case.unit, case.value, ours)


#: The other form factor of a GPU family a source may name without saying which (an
#: SXM module and a PCIe card differ in clocks, power and memory bandwidth by 20-40 %).
GPU_VARIANTS = {"H100-SXM": "H100-PCIe", "H100-PCIe": "H100-SXM",
                "A100-80G": "A100-PCIe", "A100-PCIe": "A100-80G"}


def _other_variant(case: Case) -> Case | None:
    """``case`` on the GPU's other form factor, when the source left it unstated."""
    other = GPU_VARIANTS.get(case.gpu) if case.gpu_assumed else None
    return replace(case, gpu=other) if other else None


def _no_serving_stack(case: Case) -> Case | None:
    """``case`` priced without its GPU's fitted serving-stack factors (only GPUs priced
    from vendor priors carry them: :mod:`perfmodel.serving_stack`)."""
    from perfmodel.serving_stack import priced_from_priors

    return replace(case, serving=(1.0, 1.0)) if priced_from_priors(get_gpu(case.gpu)) \
        else None


#: Sources whose unqualified "Throughput (tokens/s)" column is read as generated tokens
#: only: AMD's ROCm performance-results page, whose own latency table for the same
#: models (ROCm/vllm docs/dev-docker/README.md @ 040de12d: Llama 3.1 70B FP8 TP8,
#: 2048/2048, batch 128 in 52.394 s = 5,003 output tok/s) rules out reading 7,560.9
#: tok/s for 1,500 such prompts as input + output (3,780 output tok/s).  Their rows were
#: posed as totals until 2026-12-06 and re-posed after their errors had been seen; the
#: ``throughput_unit`` flip shows each row the old way.
OUTPUT_ONLY_READ = frozenset({"AMD_PERF_2506", "AMD_PERF_2511"})

#: Assumptions whose sensitivity every row reports (issue 29): the error with the row's
#: KV-cache dtype flipped (bf16 <-> fp8), with FP8 attention flipped, where the source
#: names only the GPU family on the family's other form factor, and -- for a GPU priced
#: from vendor priors -- without the serving-stack factors fitted on calibration rows,
#: and -- for a row of a source dated before the fit's date -- with today's stack
#: instead of that era's (``serving_stack``, "Earlier stacks"),
#: and -- for a row that ran a variable-length dataset -- at its mean lengths instead of
#: the dataset's length shape, and -- for a disaggregated rate row read as its client's
#: run -- with every request routed to the least-loaded group of its side instead of the
#: frontend's and the engine's rules, and -- for a row on an FP8 checkpoint that
#: quantizes the feed-forward layers only (Meta's) -- with every linear layer FP8, and
#: -- for an aggregated rate row read as its client's finite run -- at the steady point
#: instead and with every answer at the mean length, and -- for a row of a source whose
#: throughput column is read as output tokens -- read as input + output tokens
#: (None: not an assumption of this row).
FLIPS: dict[str, Callable[[Case], Case | None]] = {
    "kv": lambda c: replace(c, kv="bf16" if c.kv == "fp8" else "fp8"),
    "fp8_attention": lambda c: replace(c, fp8_attention=not c.fp8_attention),
    "gpu_variant": _other_variant,
    "serving_stack": _no_serving_stack,
    "stack_era": lambda c: replace(c, era="current") if c.era == "legacy" else None,
    "lengths": lambda c: replace(c, dataset="") if shape_for(c.dataset) else None,
    "router": lambda c: replace(c, router="pooled") if _reads_run(c) else None,
    "fp8_scope": lambda c: replace(c, weights="fp8") if c.weights == "fp8_ffn" else None,
    "finite_run": lambda c: replace(c, reading="steady") if finite.reads_finite_run(c)
    else None,
    "output_law": lambda c: replace(c, outputs="fixed") if finite.reads_finite_run(c)
    and finite.output_law(c).kind != "fixed" else None,
    "throughput_unit": lambda c: replace(c, unit=c.unit.replace("output_tok_s",
                                                                "total_tok_s"))
    if c.source in OUTPUT_ONLY_READ else None}


def _reads_run(case: Case) -> bool:
    """Whether a row is read as its client's run (a disaggregated rate row that states
    ``num_prompts``; :func:`_disaggregated`)."""
    if case.mode != "disaggregated" or not case.num_prompts:
        return False
    return units.parse(case.unit)[0] in ("output_tok_s", "input_tok_s", "total_tok_s")


def sensitivity(case: Case) -> dict[str, float]:
    """The row's error with each assumption of :data:`FLIPS` flipped (nan where the
    flipped posing has no feasible point or the row does not assume it)."""
    out = {}
    for name, flip in FLIPS.items():
        flipped = flip(case)
        try:
            out[name] = error(case, predict(flipped)) if flipped else float("nan")
        except NotPredictable:
            out[name] = float("nan")
    return out


def fmt_value(x: float | None) -> str:
    """A published or predicted figure as docs/validation.md prints it (three significant
    digits below 100, whole numbers with thousands separators above)."""
    if x is None or not np.isfinite(x):
        return "--"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    return f"{x:.3g}" if abs(x) >= 1 else f"{x:.3f}"


def _describe(row: dict[str, Any], origin: str, src: dict[str, Any] | None) -> dict[str, Any]:
    from perfmodel.error_band import family, vendor
    from perfmodel.validation_split import held_out

    src = src or {}
    try:
        dense: bool | None = not get_model(row["model"]).is_moe
    except InputError:
        dense = None
    phase = units.phase(row["mode"], row["unit"])
    disagg = row["mode"] == "disaggregated" or (
        row["source"] in DISAGGREGATED and row["mode"] in ("prefill", "ttft", "decode"))
    return {"case": row["id"], "origin": origin, "gpu": row["gpu"], "model": row["model"],
            "mode": row["mode"], "phase": phase, "engine": row["engine"],
            "unit": row["unit"], "dense": dense, "vendor": vendor(row["gpu"]),
            "family": family(row["gpu"]),
            "deployment": "disaggregated" if disagg else "colocated",
            "published": float(row["value"]), "held_out": held_out(row["id"]),
            "date": str(src.get("date", "")), "source": src.get("title", row["source"]),
            "source_key": row["source"], "url": src.get("url", ""),
            "quote": row.get("quote", "")}


def _score(out: dict[str, Any], case: Case | None, reason: str | None) -> dict[str, Any]:
    ours = err = None
    flipped: dict[str, float] = {}
    if case is not None:
        try:
            ours = predict(case)
            err = error(case, ours)
            flipped = sensitivity(case)
        except NotPredictable as exc:
            reason = str(exc)
            ours = err = None
    if reason is None and out["date"] < SCORED_FROM:
        reason = (f"before {SCORED_FROM}: an engine release whose kernels the database "
                  "does not hold")
    return {**out, "ours": ours, "error": err, "flipped": flipped,
            "scored": reason is None, "reason": reason}


def table() -> list[dict[str, Any]]:
    """Every row of validation_cases.yaml and of the posed files, scored or with the
    one-line reason it is not (``reason``).  Each row carries its side of the split
    (``held_out``), its error with each :data:`FLIPS` assumption flipped (``flipped``),
    its band class fields (``phase``, ``family``, ``vendor``) and ``origin``.

    Scored once per process (minutes on two cores; everything it reads is package data
    fixed for the process's life): callers get their own copies of the rows."""
    return [dict(r, flipped=dict(r["flipped"])) for r in _table()]


@lru_cache(maxsize=1)
def _table() -> tuple[dict[str, Any], ...]:
    from perfmodel.validation_split import load_posed

    cases, sources = load_cases()
    rows = []
    for c in cases:
        raw = {f.name: getattr(c, f.name) for f in fields(c)}
        rows.append(_score(_describe(raw, CASES_FILE, sources[c.source]), c, None))
    for p in load_posed():
        case: Case | None = None
        reason: str | None = None
        try:
            case = posed_case(p)
        except NotPredictable as exc:
            reason = str(exc)
        rows.append(_score(_describe(p, f"posed/{p['file']}", p.get("source_info")), case,
                           reason))
    return tuple(rows)


def cases_by_id() -> dict[str, Case]:
    """Every row that poses a :class:`Case` (both files), by id."""
    from perfmodel.validation_split import load_posed

    out = {c.id: c for c in load_cases()[0]}
    for p in load_posed():
        try:
            out[p["id"]] = posed_case(p)
        except NotPredictable:
            continue
    return out


def sources() -> dict[str, dict[str, str]]:
    """Every source the rows cite (validation_cases.yaml first, then the posed files)."""
    from perfmodel.validation_split import load_posed

    out = dict(load_cases()[1])
    for p in load_posed():
        if p["source"] not in out and p.get("source_info"):
            out[p["source"]] = p["source_info"]
    return out


#: The scored rows' statistics as shipped (written by scripts/validation_table.py, kept
#: current by tests/perfmodel/test_perfmodel_validation.py): what a report quotes as
#: "how sure we are" without re-running the cases.
SUMMARY_FILE = "data/validation_summary.json"


@lru_cache(maxsize=1)
def shipped_summary() -> dict[str, Any]:
    """:func:`summary_document` as shipped (package data), read once per process (every
    report quotes it)."""
    import json

    return json.loads(resources.files("perfmodel").joinpath(SUMMARY_FILE).read_text())


def by_gpu(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per GPU type: scored rows and their median |error|."""
    out: dict[str, dict[str, float]] = {}
    for gpu in sorted({r["gpu"] for r in rows if r["scored"]}):
        e = np.array([r["error"] for r in rows if r["scored"] and r["gpu"] == gpu])
        out[gpu] = {"rows": int(e.size), "median_abs": float(np.median(np.abs(e)))}
    return out


#: Issue 29's goals for the scored held-out rows: (figure, comparison, limit).  The
#: vendor goal holds for every vendor with held-out rows; band coverage is leave-one-out
#: (perfmodel.error_band.leave_one_out).
HELD_OUT_GOALS = (("median_abs", "<=", 0.12), ("worst_abs", "<=", 0.40),
                  ("median_signed", "abs<=", 0.05), ("vendor_median_abs", "<=", 0.20),
                  ("band_coverage", ">=", 0.80))
#: Issue 29's breadth goal for the scored set: rows, GPU types, AMD among the vendors,
#: engines.
BREADTH_GOALS = {"rows": 80, "gpu_types": 12, "amd": True, "engines": 3}


def _met(value: float, op: str, limit: float) -> bool:
    if not np.isfinite(value):
        return False
    return {"<=": value <= limit, ">=": value >= limit, "abs<=": abs(value) <= limit}[op]


def held_out_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The scored held-out rows (perfmodel.validation_split) -- the figures no change to
    the model may be tuned on -- with each of :data:`HELD_OUT_GOALS` met or not."""
    from perfmodel.error_band import leave_one_out

    kept = [r for r in rows if r["scored"] and r["held_out"]]
    if not kept:
        return {"rows": 0}
    e = np.array([r["error"] for r in kept])
    vendors = {}
    for v in sorted({r["vendor"] for r in kept}):
        ev = np.array([r["error"] for r in kept if r["vendor"] == v])
        vendors[v] = {"rows": int(ev.size), "median_abs": float(np.median(np.abs(ev)))}
    loo = leave_one_out(kept)
    out: dict[str, Any] = {
        "rows": len(kept), "gpus": len({r["gpu"] for r in kept}),
        "median_abs": float(np.median(np.abs(e))), "worst_abs": float(np.abs(e).max()),
        "median_signed": float(np.median(e)), "by_vendor": vendors,
        "vendor_median_abs": max(v["median_abs"] for v in vendors.values()),
        "band_coverage": loo["coverage"], "band_coverage_rows": loo["rows"]}
    out["goals"] = {name: {"value": out[name], "goal": f"{op} {limit}",
                           "met": _met(out[name], op, limit)}
                    for name, op, limit in HELD_OUT_GOALS}
    return out


def counts(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Breadth of the set: for all rows, the posed rows and the scored rows -- rows, GPU
    types, engines, vendors, dense / MoE and modes (prefill, decode, aggregated, and
    disaggregated for prefill / decode rows whose posing says so, :data:`DISAGGREGATED`);
    the not-scored rows by reason; and :data:`BREADTH_GOALS` on the scored rows."""

    def breadth(rs: list[dict[str, Any]]) -> dict[str, Any]:
        modes: dict[str, int] = {}
        for r in rs:
            k = "disaggregated" if r["deployment"] == "disaggregated" else r["phase"]
            modes[k] = modes.get(k, 0) + 1
        return {"rows": len(rs), "gpu_types": sorted({r["gpu"] for r in rs}),
                "engines": sorted({r["engine"] for r in rs}),
                "vendors": sorted({r["vendor"] for r in rs}),
                "dense": sum(r["dense"] is True for r in rs),
                "moe": sum(r["dense"] is False for r in rs),
                "modes": dict(sorted(modes.items())),
                "held_out": sum(bool(r["held_out"]) for r in rs)}

    posed = [r for r in rows if r["origin"] != CASES_FILE]
    scored = [r for r in rows if r["scored"]]
    reasons: dict[str, int] = {}
    for r in rows:
        if not r["scored"]:
            key = str(r["reason"]).split(":")[0]
            reasons[key] = reasons.get(key, 0) + 1
    b = breadth(scored)
    goals = {"rows": b["rows"] >= BREADTH_GOALS["rows"],
             "gpu_types": len(b["gpu_types"]) >= BREADTH_GOALS["gpu_types"],
             "amd": "amd" in b["vendors"],
             "engines": len(b["engines"]) >= BREADTH_GOALS["engines"]}
    return {"all": breadth(rows), "posed": breadth(posed),
            "posed_scored": sum(r["scored"] for r in posed), "scored": b,
            "not_scored_by_reason": dict(sorted(reasons.items())),
            "breadth_goals": {"goal": BREADTH_GOALS, "met": goals}}


def summary(rows: list[dict[str, Any]]) -> dict[str, float]:
    """The scored rows' error statistics (issue 14's goals, for validation_cases.yaml:
    median |error| <= 15 %, worst <= 35 %, median signed error of dense and of MoE rows
    within +-10 %)."""
    scored = [r for r in rows if r["scored"]]
    e = np.array([r["error"] for r in scored])
    dense = np.array([bool(r["dense"]) for r in scored])
    return {"rows": len(scored), "gpus": len({r["gpu"] for r in scored}),
            "median_abs": float(np.median(np.abs(e))), "worst_abs": float(np.abs(e).max()),
            "median_signed_dense": float(np.median(e[dense])),
            "median_signed_moe": float(np.median(e[~dense]))}


def _decode_ep(case: Case, row: dict[str, Any]) -> int:
    """A row's decode expert parallelism: its decode side's, or a decode row's own (0:
    the row has no decode)."""
    if case.decode is not None:
        return int(case.decode.ep)
    return int(case.ep or 1) if row["phase"] == "decode" else 0


def summary_document(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """What :data:`SUMMARY_FILE` holds: :func:`summary` and :func:`by_gpu` of every
    scored row (both files), the held-out figures and goals (:func:`held_out_summary`),
    the breadth (:func:`counts`), how far the published TTFT of the held-out
    disaggregated rows read as a run lies above the model's
    (``validation_disagg.ttft_gap_summary``), the errors of the rows whose decode
    (a disaggregated row's decode side, or a decode row itself) spreads its experts over
    more than ``WIDE_EP`` GPUs (``validation_disagg.wide_ep_decode_summary``) and
    :func:`summary` of validation_cases.yaml alone."""
    cases = cases_by_id()
    gap_rows = [(cases[r["case"]], r["quote"]) for r in rows
                if r["scored"] and r["held_out"] and r["case"] in cases
                and _reads_run(cases[r["case"]])]
    decode_ep = [(_decode_ep(cases[r["case"]], r), r["error"], r["held_out"], r["engine"],
                  r["gpu"]) for r in rows if r["scored"] and r["case"] in cases]
    return {**summary(rows), "by_gpu": by_gpu(rows), "held_out": held_out_summary(rows),
            "counts": counts(rows),
            "disaggregated_ttft_gap": ttft_gap_summary(gap_rows),
            "wide_ep_decode": wide_ep_decode_summary([x for x in decode_ep if x[0]]),
            "validation_cases": summary([r for r in rows if r["origin"] == CASES_FILE]),
            "source": "docs/validation.md (c), scripts/validation_table.py"}
