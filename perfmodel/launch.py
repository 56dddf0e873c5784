"""Parallel layouts a serving engine launches (issue 27, item 2).

The perf model can price any (tp, dp, ep) with tp x dp = G; an engine launches fewer.
Each :class:`EngineRules` states, for the engine version the perf model prices
(``perfmodel.engines``), which layouts it starts, as a few data fields; one function,
:func:`layout_violation`, checks a layout against them and names the broken rule in one
line.  ``perfmodel.parallel.enumerate_configs(..., engine=...)`` proposes only layouts
that pass, so the planner never prints one the engine refuses.

Terms: an island of G GPUs runs attention as ``dp`` groups of ``tp`` GPUs (SGLang's
``--tp-size`` is G and ``--dp-size`` is dp with ``--enable-dp-attention``; vLLM's
``--tensor-parallel-size`` tp and ``--data-parallel-size`` dp; TRT-LLM's ``tp_size`` G
with ``enable_attention_dp``).  Routed experts are held ``ep`` ways by expert and
W = G / ep ways by width (expert tensor parallelism: TRT-LLM ``moe_tp_size``, SGLang
``moe_tp_size = tp_size / ep_size``).

Rules, with their sources (also tabulated in ``docs/perfmodel.md``, "Launchable
layouts"):

* **TP divides the attention heads** -- all engines.  vLLM
  ``ModelConfig.verify_with_parallel_config`` ("Total number of attention heads must be
  divisible by tensor parallel size"); SGLang and TRT-LLM split heads evenly per rank
  (``num_heads // tp_size`` in their attention layers).
* **KV heads**: split when tp <= kv_heads (kv_heads % tp == 0), replicated when
  tp > kv_heads (tp % kv_heads == 0) -- vLLM ``QKVParallelLinear`` (``assert
  tp_size % total_num_kv_heads == 0`` / ``total_num_kv_heads % tp_size == 0``); SGLang's
  ``QKVParallelLinear`` is the same code; TRT-LLM replicates KV heads when
  ``num_kv_heads < tp_size`` (``Attention.__init__``: ``num_key_value_heads`` rounded
  up to tp).  Not applicable to MLA (one latent shared by every head).
* **EP divides the routed experts, or redundant slots**: with E experts over ep ranks an
  engine needs ep x ceil(E / ep) expert slots (:func:`expert_slots`), the extra being
  *redundant experts* (replicas of hot experts) -- SGLang ``--ep-num-redundant-experts``
  (the MoE layer is built with ``num_experts + ep_num_redundant_experts`` and asserts
  ``num_experts % moe_ep_size == 0``), TRT-LLM's MoE load balancer ``num_slots``
  (``MoeLoadBalancerConfig.setup``: ``num_slots >= num_experts``, ``num_slots %
  ep_size == 0``; without it ``_init_load_balancer`` asserts ``num_experts % ep_size ==
  0``).  vLLM needs no slots: ``determine_expert_map`` gives the first E mod ep ranks one
  expert more (its ``--num-redundant-experts`` exists only for EPLB, which "only
  supports even distribution of experts across ranks"), so an uneven split launches and
  the busiest rank holds ceil(E / ep) experts, as the perf model prices.  Cap: at
  most E / 8 redundant slots -- DeepSeek-V3 serves 256 experts with 32 redundant
  (DeepSeek-V3 report §3.4.1: prefill EP32 with 32 redundant experts), the TRT-LLM
  wide-EP examples use 288 slots for 256 experts, and SGLang's large-scale EP deployment
  (LMSYS, 96 H100: 32-GPU prefill and 72-GPU decode) runs
  ``--ep-num-redundant-experts 32``.  More replication than that is a layout no one
  documents (ep 112 on 256 experts would need 80).
* **EP sizes**: vLLM's expert parallelism spans the whole DP x TP group
  (``FusedMoEParallelConfig.make``: with ``--enable-expert-parallel`` ep = tp x dp and
  expert TP 1, without it ep = 1 and the experts are split by width over tp x dp); SGLang
  and TRT-LLM take any ep dividing G (``--ep-size``; TRT-LLM ``moe_ep_size x
  moe_tp_size = tp_size``).
* **Expert-TP width**: W = G / ep divides the expert's intermediate size (the engines
  shard gate/up and down by ``intermediate_size // moe_tp_size``, asserting
  divisibility); with block-FP8 weights (128 x 128 scales, DeepSeek) the shard is a
  multiple of the 128 block (SGLang ``check_quantized_moe_compatibility``:
  "moe_intermediate_size ... must be divisible by moe_tp_size" and "(moe_intermediate_size
  / moe_tp_size) % weight_block_size_n == 0"; vLLM ``Fp8MoEMethod``: "is not divisible by
  weight quantization block_n"; TRT-LLM's DeepGEMM / CUTLASS FP8 block-scale MoE need
  128-aligned per-shard intermediate sizes).
* **Attention DP**: SGLang ``--enable-dp-attention`` needs dp | tp_size (always true
  here, tp x dp = G); TRT-LLM ``enable_attention_dp`` sets the attention DP size to
  ``tensor_parallel_size`` (attention TP 1; NVIDIA Dynamo's TRT-LLM guide, "DP rank
  routing"), so dp is 1 or G; vLLM takes any ``--data-parallel-size``.
* **Multi-server**: a group wider than one server is whole servers (G a multiple of
  ``gpus_per_node``: SGLang ``--nnodes`` splits tp_size evenly, vLLM and TRT-LLM place
  the same number of ranks on every node).  Tensor-parallel attention across servers
  is launched by all three (SGLang's DeepSeek-V3 recipe ``--tp 16 --nnodes 2``; vLLM
  multi-node serving with ``--tensor-parallel-size`` over all GPUs of the Ray cluster;
  TRT-LLM multi-node ``tp_size`` via MPI), so it is allowed, and priced at the
  scale-out bandwidth (``perfmodel.layers``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from perfmodel.models import ModelSpec

#: Weight quantisation block of block-scaled FP8 checkpoints (DeepSeek-V3
#: ``weight_block_size: [128, 128]``).
FP8_BLOCK = 128


@dataclass(frozen=True)
class EngineRules:
    """What layouts one engine version launches (module docstring for the sources)."""

    engine: str
    label: str
    #: KV heads must split or replicate evenly (kv % tp == 0 or tp % kv == 0).
    kv_heads_even: bool = True
    #: ep values: "divisor" (any divisor of G) or "all_or_none" (1 or G: vLLM).
    ep_sizes: str = "divisor"
    #: The engine adds redundant expert slots when ep does not divide E.
    redundant_experts: bool = True
    #: Redundant slots allowed, as a share of the routed experts.
    max_redundant_share: float = 1.0 / 8.0
    #: The engine spreads E experts unevenly over ep ranks instead (vLLM's expert map).
    uneven_experts: bool = False
    #: Expert-TP width must divide the expert's intermediate size (and the FP8 block).
    expert_width_even: bool = True
    #: dp values: "any" (dp | G) or "all_or_none" (1 or G: TRT-LLM attention DP).
    dp_sizes: str = "any"
    #: A group wider than one server must be whole servers.
    whole_servers: bool = True
    #: Today's rules only (the thesis's roofline model): tp | heads, ep | G, ep <= E.
    thesis_only: bool = False
    #: GPU vendors the engine runs on (:func:`gpu_vendor`).
    vendors: tuple[str, ...] = ("nvidia", "amd", "intel")


RULES: dict[str, EngineRules] = {
    # Vendors: TensorRT-LLM is CUDA-only (NVIDIA's support matrix); SGLang ships ROCm
    # builds for AMD Instinct (its "AMD GPUs" install guide; MI300X/MI325X); vLLM runs
    # on ROCm and on Intel XPUs (its installation guide: "GPU: NVIDIA CUDA, AMD ROCm,
    # Intel XPU").
    "trtllm": EngineRules("trtllm", "TensorRT-LLM 1.3", dp_sizes="all_or_none",
                          vendors=("nvidia",)),
    "sglang": EngineRules("sglang", "SGLang 0.5", vendors=("nvidia", "amd")),
    "vllm": EngineRules("vllm", "vLLM 0.24", ep_sizes="all_or_none", redundant_experts=False,
                        max_redundant_share=0.0, uneven_experts=True),
    "roofline": EngineRules("roofline", "roofline (thesis)", kv_heads_even=False,
                            redundant_experts=False, max_redundant_share=0.0,
                            expert_width_even=False, whole_servers=False, thesis_only=True),
}


def gpu_vendor(gpu) -> str:
    """``"nvidia"``, ``"amd"`` or ``"intel"`` from a GPU's architecture (and name)."""
    arch = str(getattr(gpu, "arch", "")).lower()
    name = str(getattr(gpu, "name", "")).lower()
    if arch.startswith("cdna") or name.startswith("mi"):
        return "amd"
    if arch.startswith("xe") or name.startswith("arc"):
        return "intel"
    return "nvidia"


#: The engine a GPU is priced with when none is named: TensorRT-LLM (the database's
#: reference, measured on every NVIDIA system) on NVIDIA GPUs; vLLM elsewhere -- it runs
#: on AMD (ROCm; AMD's own MI300X inference guides and performance pages use the
#: rocm/vllm images) and on Intel XPUs, where SGLang and TensorRT-LLM do not.
VENDOR_ENGINE = {"nvidia": "trtllm", "amd": "vllm", "intel": "vllm"}


def default_engine(gpu) -> str:
    """The engine ``gpu`` is priced with when none is named (:data:`VENDOR_ENGINE`)."""
    return VENDOR_ENGINE.get(gpu_vendor(gpu), "trtllm")


def fleet_engine(gpus) -> str:
    """The engine a fleet of ``gpus`` is priced with when none is named: the vendor's
    (:func:`default_engine`) when they share one, else vLLM, the one engine that runs on
    every vendor the catalog holds (one engine per plan: its islands share a router and
    hand KV caches to each other)."""
    choices = {default_engine(g) for g in gpus}
    return choices.pop() if len(choices) == 1 else "vllm"


def engines_for(gpu) -> tuple[str, ...]:
    """The serving engines (not the thesis's roofline) that run on ``gpu``'s vendor."""
    vendor = gpu_vendor(gpu)
    return tuple(name for name, r in RULES.items() if not r.thesis_only and vendor in r.vendors)


def vendor_violation(engine: str | None, gpu) -> str | None:
    """One line when ``engine`` does not run on ``gpu``'s vendor (None when it does)."""
    rules = rules_for(engine)
    vendor = gpu_vendor(gpu)
    if rules is None or rules.thesis_only or vendor in rules.vendors:
        return None
    return (f"{rules.label} does not run on {vendor.upper()} GPUs ({gpu.name}); it runs on "
            + ", ".join(v.upper() for v in rules.vendors) + " GPUs")


def engine_flag_error(engine: str | None, gpus) -> str | None:
    """One line for a CLI that was given ``--engine engine`` for ``gpus`` (GPUs or one
    GPU) some of which it does not run on -- naming the flag, the reason and the engines
    that run on all of them -- or None when it runs on every one.  ``planner perf``
    raises it as a usage error (exit 2)."""
    gpus = list(gpus) if isinstance(gpus, list | tuple) else [gpus]
    for g in gpus:
        wrong = vendor_violation(engine, g)
        if wrong:
            usable = [e for e in RULES if not RULES[e].thesis_only
                      and all(e in engines_for(x) for x in gpus)]
            usable.sort(key=lambda e: e != default_engine(g))
            hint = ("; use --engine " + " or ".join(usable)) if usable else ""
            return f"--engine {str(engine).strip().lower()}: {wrong}{hint}"
    return None


def rules_for(engine: str | None) -> EngineRules | None:
    """The rules of engine ``engine`` (case and blanks ignored); None for None.  An
    engine without rules of its own (a plug-in registered later) gets the thesis's."""
    if engine is None:
        return None
    key = str(engine).strip().lower()
    return RULES.get(key, EngineRules(key, key, kv_heads_even=False, redundant_experts=False,
                                      max_redundant_share=0.0, expert_width_even=False,
                                      whole_servers=False, thesis_only=True))


def expert_slots(model: ModelSpec, ep: int) -> int:
    """Routed-expert slots an EP group of ``ep`` GPUs holds: ep x ceil(E / ep) (every
    rank the same number of slots); 0 for a dense model."""
    e = model.routed_experts
    if e <= 0:
        return 0
    ep = max(int(ep), 1)
    return ep * math.ceil(e / ep)


def redundant_experts(model: ModelSpec, ep: int) -> int:
    """Slots beyond the routed experts (replicas the engine must add)."""
    return expert_slots(model, ep) - model.routed_experts


def max_redundant(rules: EngineRules, model: ModelSpec) -> int:
    """Most redundant expert slots the engine is allowed (module docstring: E / 8)."""
    if not rules.redundant_experts:
        return 0
    return int(model.routed_experts * rules.max_redundant_share)


def engine_slots(engine: str | None, model: ModelSpec, ep: int) -> tuple[int, int]:
    """(expert slots, redundant experts) engine ``engine`` deploys at ``ep``: the padded
    slots of :func:`expert_slots`, or E and 0 where the engine spreads the experts
    unevenly instead (vLLM)."""
    rules = rules_for(engine)
    if not model.is_moe:
        return 0, 0
    if rules is not None and rules.uneven_experts:
        return model.routed_experts, 0
    return expert_slots(model, ep), redundant_experts(model, ep)


def slots_text(model: ModelSpec, ep: int, engine: str | None = None) -> str | None:
    """"ep 12: 256 experts in 264 slots (8 redundant)" where the engine needs more slots
    than experts ("... unevenly, 21-22 per rank" where it spreads them); None when ep
    divides the experts."""
    if not model.is_moe or ep <= 1 or model.routed_experts % ep == 0:
        return None
    slots, extra = engine_slots(engine, model, ep)
    e = model.routed_experts
    if extra <= 0:
        return (f"ep {ep}: {e} experts spread unevenly, {e // ep}-{-(-e // ep)} per rank "
                "(no redundant slots)")
    return f"ep {ep}: {e} experts in {slots} slots ({extra} redundant)"


def layout_violations(engine: str | None, model: ModelSpec, cfg, gpus: int,
                      gpus_per_node: int | None = None) -> list[tuple[str, str]]:
    """Every rule of ``engine`` that layout ``cfg`` (tp, dp, ep) on ``gpus`` GPUs
    breaks, as (rule key, one-line reason), in the order the rules are listed in the
    module docstring; empty when the engine launches it."""
    tp, dp, ep = int(cfg.tp), int(cfg.dp), int(cfg.ep)
    name = model.name
    if tp < 1 or dp < 1 or ep < 1:
        return [("degrees", "parallel degrees must be >= 1")]
    if tp * dp != gpus:
        return [("size", f"tp x dp = {tp * dp} must equal the island's {gpus} GPUs")]
    if gpus % ep:
        return [("ep_divides_gpus", f"ep {ep} must divide the island's {gpus} GPUs")]
    out: list[tuple[str, str]] = []
    if model.heads % tp:
        out.append(("heads", f"tp {tp} must divide the {model.heads} attention heads of "
                             f"{name}"))
    if not model.is_moe and ep != 1:
        out.append(("dense_ep", f"ep must be 1 for dense model {name}"))
    if model.is_moe and ep > model.routed_experts:
        out.append(("ep_experts", f"ep {ep} exceeds the {model.routed_experts} routed "
                                  f"experts of {name}"))
    rules = rules_for(engine)
    if out or rules is None or rules.thesis_only:
        return out
    who = rules.label
    kv = model.kv_heads
    if rules.kv_heads_even and not model.is_mla and kv > 0:
        if tp <= kv and kv % tp:
            out.append(("kv_heads", f"{who}: tp {tp} must divide the {kv} KV heads of "
                                    f"{name} (KV heads split evenly)"))
        if tp > kv and tp % kv:
            out.append(("kv_heads", f"{who}: tp {tp} must be a multiple of the {kv} KV "
                                    f"heads of {name} (KV heads replicated evenly)"))
    if rules.dp_sizes == "all_or_none" and dp not in (1, gpus):
        out.append(("attention_dp", f"{who}: attention DP runs on every rank "
                                    f"(enable_attention_dp), so dp must be 1 or {gpus}, "
                                    f"not {dp}"))
    if model.is_moe:
        if rules.ep_sizes == "all_or_none" and ep not in (1, gpus):
            out.append(("ep_sizes", f"{who}: expert parallelism spans the whole tp x dp "
                                    f"group (--enable-expert-parallel), so ep must be 1 or "
                                    f"{gpus}, not {ep}"))
        extra = engine_slots(engine, model, ep)[1]
        if extra > 0 and not rules.redundant_experts:
            out.append(("redundant", f"{who}: ep {ep} must divide the "
                                     f"{model.routed_experts} routed experts of {name} "
                                     "(no redundant expert slots)"))
        elif extra > max_redundant(rules, model):
            out.append(("redundant", f"{who}: ep {ep} needs {extra} redundant expert slots "
                                     f"({model.routed_experts} experts in "
                                     f"{expert_slots(model, ep)} slots), above the cap of "
                                     f"{max_redundant(rules, model)} (E/8)"))
        width = gpus // ep
        inter = model.moe_intermediate
        if rules.expert_width_even and width > 1:
            if inter % width:
                out.append(("expert_width", f"{who}: expert width split {width} (= {gpus} "
                                            f"GPUs / ep {ep}) must divide the {inter}-wide "
                                            f"expert of {name}"))
            elif model.gemm_kind == "fp8_block" and (inter // width) % FP8_BLOCK:
                out.append(("expert_width", f"{who}: expert width split {width} leaves "
                                            f"{inter // width}-wide shards of {name}'s "
                                            "block-FP8 experts, not a multiple of the "
                                            f"{FP8_BLOCK} quantisation block"))
    if rules.whole_servers and gpus_per_node and gpus > gpus_per_node \
            and gpus % gpus_per_node:
        out.append(("whole_servers", f"{who}: a group of {gpus} GPUs spans servers of "
                                     f"{gpus_per_node}, so it must be whole servers (the "
                                     "same ranks on every node)"))
    return out


def layout_violation(engine: str | None, model: ModelSpec, cfg, gpus: int,
                     gpus_per_node: int | None = None) -> str | None:
    """One line naming the (first) rule of ``engine`` that layout ``cfg`` (tp, dp, ep)
    on ``gpus`` GPUs breaks, or None when the engine launches it.  ``gpus_per_node``:
    GPUs per server (None: no multi-server rule)."""
    broken = layout_violations(engine, model, cfg, gpus, gpus_per_node)
    return broken[0][1] if broken else None


def binding_rule(engine: str | None, model: ModelSpec, configs, gpus: int,
                 gpus_per_node: int | None = None) -> str | None:
    """Why none of ``configs`` launches, in one line: the rule that alone stops the most
    layouts (lifting it would launch them), else the rule the most layouts break."""
    alone: dict[str, list[str]] = {}
    every: dict[str, list[str]] = {}
    for c in configs:
        broken = layout_violations(engine, model, c, gpus, gpus_per_node)
        keys = {k for k, _ in broken}
        for k, msg in broken:
            every.setdefault(k, []).append(msg)
            if len(keys) == 1:
                alone.setdefault(k, []).append(msg)
    pool = alone or every
    if not pool:
        return None
    key = max(pool, key=lambda k: len(pool[k]))
    return pool[key][0]


__all__ = ["EngineRules", "FP8_BLOCK", "RULES", "VENDOR_ENGINE", "binding_rule",
           "default_engine", "engine_flag_error", "engine_slots", "engines_for",
           "fleet_engine",
           "expert_slots", "gpu_vendor", "layout_violation", "layout_violations",
           "max_redundant", "redundant_experts", "rules_for", "slots_text",
           "vendor_violation"]
