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
* ``mixed_prefill``: whether a prompt's prefill shares the decodes' forward pass
  (TRT-LLM, vLLM) or runs as a pass of its own while they wait (SGLang's default
  scheduler, ``--enable-mixed-chunk`` off);
* ``micro_batch_overlap``: the expert all-to-all is hidden behind computation by running
  two half batches (SGLang two-batch overlap, vLLM dual-batch overlap; TRT-LLM has none).
  It pays off only with enough tokens per GPU (SGLang measured -27 % at 32 decode tokens
  per GPU, +25 % at 256, +27-35 % in prefill), so a deployment enables it from
  ``overlap_min_tokens`` tokens per GPU and step;
* ``memory_fraction`` / ``kv_free_fraction``: the HBM an engine uses, and the share of
  what remains after weights that becomes KV cache -- vLLM ``gpu_memory_utilization``
  0.9 of the total; SGLang ``mem_fraction_static`` about 0.85 of the total at TP8;
  TRT-LLM 0.9 of the memory left after weights and the profiled activations
  (``free_gpu_memory_fraction``);
* **engine limits** (issue 29): ``max_running`` requests per scheduler (one attention
  group: vLLM ``max_num_seqs`` per DP rank, SGLang ``max_running_requests`` divided by
  the DP size, TRT-LLM ``max_batch_size`` per rank), ``graph_max_batch`` (the largest
  CUDA-graph batch captured; larger decode batches run eagerly), ``memory_rule`` (how the
  engine turns ``memory_fraction`` into a KV pool, :func:`perfmodel.memory.kv_pool_bytes`)
  and ``overhead_gb`` (CUDA context, communication buffers, cuBLAS workspace and graph
  pools, outside the profiled activations).  :class:`EngineLimits` overrides them per
  run (``--max-running``, ``--max-tokens``, ``--mem-fraction``) within what the engine
  accepts.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from perfmodel.errors import InputError, check_number
from perfmodel.hardware import GIB
from perfmodel.registry import Registry

#: How an engine sizes its KV pool from its memory fraction (perfmodel.memory):
#: "total" (vLLM: fraction of all HBM for weights, activations, overheads and KV),
#: "static" (SGLang: fraction of all HBM for weights and KV; activations live in the
#: rest), "free" (TRT-LLM: fraction of what weights, activations and overheads leave),
#: "thesis" (seed 002: fraction of all HBM for weights and KV, nothing else modelled).
MEMORY_RULES = ("total", "static", "free", "thesis")
#: Host time per layer of a decode step run eagerly (beyond the largest captured CUDA
#: graph), the floor under that layer's GPU time: Llama-3-8B batch 1 on SGLang, 9.28 ms
#: eager vs 7.06 ms with graphs over 32 layers (sgl-project/sglang PR 1401: 290 us per
#: layer launch-bound); Llama-2-7B on vLLM 12 ms vs 10.5 ms (vllm PR 1440: 375 us).
EAGER_LAYER_S = 0.29e-3
_MIB = float(1 << 20)


@dataclass(frozen=True)
class EngineProfile:
    name: str
    label: str
    step_gap_s: float
    prefill_token_budget: int
    micro_batch_overlap: bool
    overlap_min_tokens: int
    #: vLLM gpu_memory_utilization, SGLang mem_fraction_static (None: SGLang's rule,
    #: :meth:`memory_fraction_on`), TRT-LLM free_gpu_memory_fraction.
    memory_fraction: float | None
    memory_rule: str = "thesis"
    max_running: int = 1024
    #: vLLM's default on GPUs under 70 GiB or A100s (None: ``max_running`` everywhere).
    max_running_small: int | None = None
    #: Largest CUDA-graph decode batch by GPU memory: ((below GiB, tp < 4, tp >= 4), ...);
    #: () captures every batch (the thesis's model has no host time).
    graph_tiers: tuple[tuple[float, int, int], ...] = ()
    #: Memory outside weights, KV and activations: CUDA context, cuBLAS workspace and
    #: CUDA-graph pools (GB), plus communication buffers per tensor-parallel peer.
    overhead_gb: float = 0.0
    overhead_per_peer_gb: float = 0.0
    #: Admission reserves KV for a request's prompt and *all* its output tokens
    #: (TRT-LLM's default capacity scheduler, GUARANTEED_NO_EVICT); False: the running
    #: batch holds what its sequences have generated so far and preempts when full
    #: (vLLM, SGLang).
    reserves_output: bool = False
    #: A waiting prompt's prefill rides in the running decodes' pass (TRT-LLM's in-flight
    #: batching of context and generation requests, vLLM's chunked prefill); False: the
    #: engine runs it as a pass of its own while the decodes wait (SGLang's scheduler
    #: unless ``--enable-mixed-chunk``, whose default is off: ``server_args.py``
    #: ``enable_mixed_chunk: bool = False``, 0.3-0.5).
    mixed_prefill: bool = True

    def with_limits(self, limits: EngineLimits) -> EngineProfile:
        """This profile with ``limits``' overrides (None keeps the default)."""
        if limits == EngineLimits():
            return self
        running = self.max_running if limits.max_running is None else limits.max_running
        return replace(
            self, max_running=running,
            max_running_small=self.max_running_small if limits.max_running is None
            else None,
            prefill_token_budget=self.prefill_token_budget if limits.max_tokens is None
            else limits.max_tokens,
            memory_fraction=self.memory_fraction if limits.mem_fraction is None
            else limits.mem_fraction)

    def max_running_on(self, gpu) -> int:
        """Requests one scheduler runs at once on ``gpu`` by default (vLLM 0.11-0.33
        ``_set_default_args``: 1024 on >= 70 GiB GPUs other than A100, else 256)."""
        small = gpu.visible_bytes < 70 * GIB or "A100" in gpu.name.upper()
        return self.max_running_small if (small and self.max_running_small) else self.max_running

    def graph_max_on(self, gpu, tp):
        """Largest decode batch per scheduler run from a captured CUDA graph (``tp`` a
        number or an array)."""
        if not self.graph_tiers:
            return np.inf + 0.0 * np.asarray(tp, float)
        gib = gpu.visible_bytes / GIB
        small, large = next(((s, b) for below, s, b in self.graph_tiers if gib < below),
                            self.graph_tiers[-1][1:])
        return np.where(np.asarray(tp, float) < 4, float(small), float(large))

    def memory_fraction_on(self, gpu, tp):
        """The memory fraction on ``gpu`` at attention TP ``tp`` (a number or an array):
        the profile's, or SGLang's rule (0.5.3 ``server_args``: reserve 512 MB + 1.5 x
        chunk + 2 x graph batch + 1024 x tp / 8 MB, at least 10 GiB on > 60 GB GPUs;
        fraction = 1 - reserve / memory, to 3 decimals)."""
        if self.memory_fraction is not None:
            return self.memory_fraction
        mib = gpu.visible_bytes / _MIB
        reserve = (512.0 + 1.5 * max(self.prefill_token_budget, 2048)
                   + 2.0 * self.graph_max_on(gpu, tp) + 1024.0 * np.asarray(tp, float) / 8.0)
        if mib > 60 * 1024:
            reserve = np.maximum(reserve, 10 * 1024.0)
        fraction = np.round((mib - reserve) / mib, 3)
        return float(fraction) if fraction.ndim == 0 else fraction

    def overhead_bytes(self, tp):
        return (self.overhead_gb + self.overhead_per_peer_gb * (tp - 1.0)) * 1e9


@dataclass(frozen=True)
class EngineLimits:
    """A run's overrides of the engine's limits (``None``: the engine's default)."""

    max_running: int | None = None
    max_tokens: int | None = None
    mem_fraction: float | None = None

    def checked(self, where: str = "") -> EngineLimits:
        """Itself, or one line naming the flag that the engine would refuse.

        Bounds are what the engines accept at start-up: a positive request count and
        token budget (vLLM, SGLang and TRT-LLM reject 0), a memory fraction in (0, 1]
        (vLLM ``gpu_memory_utilization`` must be in (0, 1]; SGLang's
        ``mem_fraction_static`` and TRT-LLM's ``free_gpu_memory_fraction`` likewise)."""
        prefix = f"{where}: " if where else ""

        def fail(flag: str):
            return lambda msg: InputError(f"{prefix}{flag} {msg}")
        vals: dict[str, int | float] = {}
        for name, flag, hi in (("max_running", "--max-running", 1 << 20),
                               ("max_tokens", "--max-tokens", 1 << 22)):
            v = getattr(self, name)
            if v is not None:
                vals[name] = check_number(v, fail(flag), integer=True, ge=1, le=hi)
        if self.mem_fraction is not None:
            vals["mem_fraction"] = check_number(self.mem_fraction, fail("--mem-fraction"),
                                                gt=0.0, le=1.0)
        return EngineLimits(int(vals["max_running"]) if "max_running" in vals else None,
                            int(vals["max_tokens"]) if "max_tokens" in vals else None,
                            vals.get("mem_fraction"))

    def to_dict(self) -> dict[str, int | float | None]:
        return {"max_running": self.max_running, "max_tokens": self.max_tokens,
                "mem_fraction": self.mem_fraction}

    @classmethod
    def from_dict(cls, d: object, where: str) -> EngineLimits:
        if d is None:
            return cls()
        if not isinstance(d, dict) or set(d) - {"max_running", "max_tokens", "mem_fraction"}:
            raise InputError(f"{where}: must map max_running, max_tokens, mem_fraction")
        return cls(**d).checked(where)


#: Memory outside weights, KV and activations (vLLM PR 10511, Llama-3-8B on H100:
#: non-torch 1.79 GiB at TP1, 3.58 at TP2; vllm issue 10702, 70B at TP8: 5.68 GiB) and
#: CUDA-graph pools (0.2-1 GiB in vLLM's capture logs): 2.9 GB + 0.55 GB per TP peer.
_OVERHEAD_GB, _PER_PEER_GB = 2.9, 0.55

ENGINES: Registry[EngineProfile] = Registry("engine")
# TRT-LLM (llmapi/llm_args.py): max_batch_size 2048, max_num_tokens 8192, the capacity
# scheduler GUARANTEED_NO_EVICT (SchedulerConfig default),
# KvCacheConfig.free_gpu_memory_fraction 0.9 of what weights and the profiled
# activations leave (pyexecutor/_util.py), CudaGraphConfig max_batch_size 0 -> 128.
ENGINES.add("trtllm", EngineProfile(
    "trtllm", "TensorRT-LLM 1.3", step_gap_s=0.15e-3, prefill_token_budget=8192,
    micro_batch_overlap=False, overlap_min_tokens=0, memory_fraction=0.90,
    memory_rule="free", max_running=2048, graph_tiers=((float("inf"), 128, 128),),
    reserves_output=True,
    overhead_gb=_OVERHEAD_GB, overhead_per_peer_gb=_PER_PEER_GB), "TensorRT-LLM 1.3 (default)")
# SGLang (0.5.3 server_args / model_runner): max_running_requests from the request pool,
# min(max(tokens / context x 512, 2048), 4096); cuda_graph_max_bs by memory and tp;
# mem_fraction_static by its reserve rule (memory_fraction_on).
ENGINES.add("sglang", EngineProfile(
    "sglang", "SGLang 0.5", step_gap_s=0.15e-3, prefill_token_budget=8192,
    micro_batch_overlap=True, overlap_min_tokens=128, memory_fraction=None,
    memory_rule="static", max_running=4096, mixed_prefill=False,
    graph_tiers=((20, 8, 8), (35, 16, 80), (60, 32, 160), (160, 256, 512),
                 (float("inf"), 512, 512)), overhead_gb=_OVERHEAD_GB,
    overhead_per_peer_gb=_PER_PEER_GB), "SGLang 0.5")
# vLLM (0.11-0.33 arg_utils / config): max_num_seqs 1024 (256 under 70 GiB or on A100),
# gpu_memory_utilization 0.9 of all HBM for weights, profiled activations, non-torch
# memory and CUDA graphs; capture sizes up to min(2 x max_num_seqs, 512).
ENGINES.add("vllm", EngineProfile(
    "vllm", "vLLM 0.24", step_gap_s=0.15e-3, prefill_token_budget=8192,
    micro_batch_overlap=True, overlap_min_tokens=128, memory_fraction=0.90,
    memory_rule="total", max_running=1024, max_running_small=256,
    graph_tiers=((float("inf"), 512, 512),), overhead_gb=_OVERHEAD_GB,
    overhead_per_peer_gb=_PER_PEER_GB), "vLLM 0.24")
# Seed 002's Shallowsim-style model: rooflines at constant efficiencies
# (perfmodel.kernels.roofline_set), every prompt prefilled alone, the all-to-all
# overlapped as DeepSeek's two micro-batches do, 90 % of HBM for weights and KV, the
# batch clamped at 1024 (§4.6.2).  For reproducing the thesis.
ENGINES.add("roofline", EngineProfile(
    "roofline", "roofline (seed 002 §4.2, Shallowsim-style)", step_gap_s=0.0,
    prefill_token_budget=0, micro_batch_overlap=True, overlap_min_tokens=0,
    memory_fraction=0.90),
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
