"""Serving-engine profiles: what separates a sum of measured kernels from a served step.

Kernel times come from the engine's own measured kernels (``perfmodel.kernels``); a
profile states, for one engine, the behaviour around them that the kernel database
does not measure.  Every item appears in the per-operation breakdown of ``planner perf
--json``.  The figures and their sources (engine code, docs and blogs) are tabulated in
``docs/perfmodel.md`` ("Engine profiles"):

* ``step_gap_s``: host time per forward pass the engine's overlap scheduler does not
  hide.  All three schedule one step ahead by default (SGLang's overlap scheduler,
  TRT-LLM's overlap scheduler, vLLM's async scheduling); vLLM measured the remaining gap
  at 150-170 us (PR 11133), against 5-6 ms between decode steps before it;
* ``prefill_token_budget``: tokens per forward pass (vLLM ``max_num_batched_tokens``
  8192 on >= 70 GB GPUs, SGLang ``chunked_prefill_size`` 8192 on H100/H200-class GPUs,
  TRT-LLM ``max_num_tokens`` 8192): prompts shorter than it are batched up to it, longer
  ones are chunked (0: every prompt is prefilled alone -- the thesis's model);
* ``micro_batch_overlap``: the expert all-to-all is hidden behind computation by running
  two half batches (SGLang two-batch overlap, vLLM dual-batch overlap; TRT-LLM has none).
  It pays off only with enough tokens per GPU (SGLang measured -27 % at 32 decode tokens
  per GPU, +25 % at 256, +27-35 % in prefill), so a deployment enables it from
  ``overlap_min_tokens`` tokens per GPU and step;
* ``memory_fraction`` / ``kv_free_fraction``: the HBM an engine uses, and the share of
  what remains after weights that becomes KV cache -- vLLM ``gpu_memory_utilization``
  0.9 of the total; SGLang ``mem_fraction_static`` about 0.85 of the total at TP8;
  TRT-LLM 0.9 of the memory left after weights (``free_gpu_memory_fraction``), with ~3 %
  kept for the CUDA context and activations.
"""

from __future__ import annotations

from dataclasses import dataclass

from perfmodel.registry import Registry


@dataclass(frozen=True)
class EngineProfile:
    name: str
    label: str
    step_gap_s: float
    prefill_token_budget: int
    micro_batch_overlap: bool
    overlap_min_tokens: int
    memory_fraction: float
    kv_free_fraction: float


ENGINES: Registry[EngineProfile] = Registry("engine")
ENGINES.add("trtllm", EngineProfile(
    "trtllm", "TensorRT-LLM 1.3", step_gap_s=0.15e-3, prefill_token_budget=8192,
    micro_batch_overlap=False, overlap_min_tokens=0, memory_fraction=0.97,
    kv_free_fraction=0.90), "TensorRT-LLM 1.3 (default)")
ENGINES.add("sglang", EngineProfile(
    "sglang", "SGLang 0.5", step_gap_s=0.15e-3, prefill_token_budget=8192,
    micro_batch_overlap=True, overlap_min_tokens=128, memory_fraction=0.85,
    kv_free_fraction=1.0), "SGLang 0.5")
ENGINES.add("vllm", EngineProfile(
    "vllm", "vLLM 0.24", step_gap_s=0.15e-3, prefill_token_budget=8192,
    micro_batch_overlap=True, overlap_min_tokens=128, memory_fraction=0.90,
    kv_free_fraction=1.0), "vLLM 0.24")
# Seed 002's Shallowsim-style model: rooflines at constant efficiencies
# (perfmodel.kernels.roofline_set), every prompt prefilled alone, the all-to-all
# overlapped as DeepSeek's two micro-batches do.  For reproducing the thesis.
ENGINES.add("roofline", EngineProfile(
    "roofline", "roofline (seed 002 §4.2, Shallowsim-style)", step_gap_s=0.0,
    prefill_token_budget=0, micro_batch_overlap=True, overlap_min_tokens=0,
    memory_fraction=0.90, kv_free_fraction=1.0),
    "seed 002's roofline at constant efficiencies (reproducing the thesis)")

#: The default engine: TensorRT-LLM, whose kernels the database measures on every GPU it
#: covers and whose MoE kernels are the grouped GEMMs all three engines run under expert
#: parallelism (docs/perfmodel.md, "Engine profiles").
DEFAULT_ENGINE = "trtllm"


def get_engine(name: str) -> EngineProfile:
    """The engine profile ``name`` (case and surrounding blanks ignored)."""
    key = str(name).strip().lower()
    if key not in ENGINES:
        ENGINES.lookup(str(name))  # the registry's one-line error
    return ENGINES[key]
