"""The kernel models of one GPU under one engine, with the fallbacks that make every
catalog or datasheet GPU answerable.

For each operation the model comes from, in order (the rule of
:mod:`perfmodel.kernels.transfer`):

1. the GPU's own measured system (``GPU.kernel_system``) under the requested engine;
2. the same system under another engine (trtllm, sglang, vllm in that order) -- the
   database does not hold every op for every engine (vLLM has no kernel-only MLA
   tables, for instance);
3. the measured system of the GPU's own vendor the transfer rule picks, requested
   engine first, then any other measured system of that vendor;
4. the vendor's kernel priors (:mod:`perfmodel.kernels.priors`), when it ships them --
   an op they do not price falls back to the op's other forms (bf16 tables), never to
   another vendor's measurements; only ``moe_imbalance`` (the routing skew of the
   busiest expert-parallel rank, a property of routing, not of the GPU) comes from the
   measured GPUs;
5. only for a vendor with neither measured kernels nor priors: the nearest measured
   GPU of any vendor, then any measured system that has the op (cross-vendor).

Every op's source and rule is recorded in :attr:`KernelSet.sources` (``planner perf
--json`` lists them) and every fallback in :attr:`KernelSet.notes`, which ``planner
perf`` and the plan report print, so a figure resting on another GPU's kernels says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from perfmodel.hardware import GPU
from perfmodel.kernels import ops, timing
from perfmodel.kernels.models import CurveModel
from perfmodel.kernels.priors import PriorTables, priors_for
from perfmodel.kernels.store import ENGINES, load_system, measured_systems
from perfmodel.kernels.transfer import (
    comm_source,
    compute_source,
    interconnect_class,
    same_vendor,
    system_gpu,
)
from perfmodel.launch import gpu_vendor

if TYPE_CHECKING:
    from perfmodel.kernels.roofline_set import RooflineKernels

_COMM_OPS = ("allreduce", "alltoall")
#: Ops whose measured kernels come from one engine whatever the engine asked for:
#: * MoE: the database's SGLang and vLLM ``moe_perf`` rows time their Triton fused-MoE
#:   path, up to 12x slower than the CUTLASS / DeepGEMM grouped GEMMs those engines run
#:   under expert parallelism (DeepEP + DeepGEMM); TRT-LLM's rows are that grouped GEMM.
#:   Both backends ship with SGLang and vLLM, and the Triton one is the faster for
#:   narrow tensor-parallel expert shards (H200, DeepSeek experts split 8 ways, 16k
#:   tokens: 3.7 ms against 9.7 ms), so under those engines a MoE layer takes the
#:   faster of the two per shape (:meth:`KernelSet.moe`);
#: * MLA: vLLM has no kernel-only MLA tables, and SGLang's FP8-KV rows run a
#:   dequantising FlashAttention path 4x slower than its bf16 one, where SGLang deploys
#:   FlashMLA for DeepSeek; TRT-LLM's rows are its FlashMLA-class kernels.
#: Architectures on which every engine runs the same MoE kernel families: on Blackwell,
#: TRT-LLM's trtllm-gen fused-MoE kernels (its ``TRTLLM`` MoE backend) are FlashInfer's
#: ``trtllm_*_moe``, which SGLang (``--moe-runner-backend flashinfer_trtllm``) and vLLM
#: (``VLLM_USE_FLASHINFER_MOE_FP8/FP4``) run, beside DeepGEMM and CUTLASS in all three.
#: The database times each family under the engine that collected it (B200, DeepSeek
#: experts split 8 ways, FP8 block-scaled, 4 tokens: TRT-LLM's rows are DeepGEMM only,
#: 135 us; SGLang's trtllm-gen rows 42 us), so there a MoE layer takes the fastest
#: engine's table for the shape -- what InferenceX's B200 launch scripts deploy
#: (TRT-LLM ``moe_config.backend: TRTLLM``, SGLang ``flashinfer_trtllm``).  Elsewhere
#: TRT-LLM keeps its own (CUTLASS / DeepGEMM) kernels, and SGLang and vLLM the faster of
#: theirs and TRT-LLM's (below).
MOE_SHARED_ARCHS = ("blackwell", "blackwell-ultra")
#: Weight precisions the shared Blackwell family (FlashInfer's trtllm-gen MoE) runs.
MOE_SHARED_KINDS = ("fp8", "fp8_block", "fp4")


def runs_shared_moe(gpu: GPU, gemm_kind: str) -> bool:
    """Whether a MoE layer on ``gpu`` with ``gemm_kind`` weights is priced at the shared
    Blackwell kernel family, so a launch must select it (``planner.export.engines``:
    SGLang / vLLM ``flashinfer_trtllm``, TRT-LLM ``moe_config.backend: TRTLLM``)."""
    return gpu.arch in MOE_SHARED_ARCHS and gemm_kind in MOE_SHARED_KINDS
_PREFERRED_ENGINE = {"moe": "trtllm", "moe_imbalance": "trtllm", "mla_decode": "trtllm",
                     "mla_context": "trtllm"}
#: Ops that describe routing rather than a GPU's kernels: a vendor priced from priors
#: takes them from the measured GPUs (rule 4 of the module docstring).
_VENDOR_NEUTRAL = ("moe_imbalance",)
#: The pseudo-system of a vendor's priors in a resolution chain.
PRIOR = "prior"


@dataclass
class KernelSet:
    gpu: GPU
    engine: str
    notes: list[str] = field(default_factory=list)
    #: op key -> {"source", "rule", "engine"} of every op resolved (module docstring)
    sources: dict[str, dict[str, str]] = field(default_factory=dict)
    _cache: dict = field(default_factory=dict, repr=False)

    # ------------------------------------------------------------------ resolution
    def _order(self, op: str, first: str) -> list[tuple[str, str, str]]:
        """(system, engine, rule) in the order the rule consults them (module
        docstring); system :data:`PRIOR` stands for the vendor's priors."""
        systems = measured_systems()
        engines = [first] + [e for e in ENGINES if e != first]
        own = self.gpu.kernel_system if self.gpu.kernel_system in systems else ""
        chain: list[tuple[str, str, str]] = []
        if own:
            chain += [(own, e, "measured") for e in engines]
        others = [s for s in systems if s != own]
        pick = comm_source if op in _COMM_OPS else compute_source
        src = pick(self.gpu, others)
        kin = [s for s in same_vendor(self.gpu, others) if s != src]
        chain += [(s, e, "transfer") for s in ([src] if src else []) + kin for e in engines]
        if not own and src is None and self._priors() is not None:
            chain.append((PRIOR, self.engine, "vendor prior"))
            if op not in _VENDOR_NEUTRAL:
                return chain
            rule = "vendor-neutral transfer"
        else:
            rule = "cross-vendor transfer"
        far = pick(self.gpu, others, any_vendor=True)
        seen = {own, src, *kin}
        rest = ([far] if far and far not in seen else []) + [
            s for s in systems if s not in seen and s != far]
        chain += [(s, e, rule) for s in rest for e in engines]
        return chain

    def _priors(self) -> PriorTables | None:
        if "_priors" not in self._cache:
            self._cache["_priors"] = priors_for(self.gpu)
        return self._cache["_priors"]

    def _lookup(self, system: str, engine: str, key: str):
        """The model of ``key`` in one link of the chain (None if it has none)."""
        if system == PRIOR:
            priors = self._priors()
            return priors.get(key) if priors else None
        tables = load_system(system)
        return tables.get(engine, key) if tables else None

    def _source_text(self, system: str, engine: str, rule: str) -> str:
        if system == PRIOR:
            priors = self._priors()
            return priors.label if priors else PRIOR
        g = system_gpu(system)
        name = g.name if g else system
        if rule == "measured":
            return f"measured {name}"
        vendor = gpu_vendor(g) if g else "?"
        arch = (g.arch if g else "") or "?"
        if rule == "transfer":
            return f"{name} (same vendor, {arch})"
        return f"{name} ({vendor}, {arch})"

    def describe(self, key: str) -> dict[str, str] | None:
        """{"source", "rule", "engine"} of op ``key`` -- where :meth:`resolve` would take
        it from -- without resolving it (no note, no cache); None if nothing has it."""
        if key in self.sources:
            return dict(self.sources[key])
        op = key.split(":")[0]
        first = _PREFERRED_ENGINE.get(op, self.engine)
        for system, engine, rule in self._order(op, first):
            if self._lookup(system, engine, key) is not None:
                if rule == "measured" and engine != first:
                    rule = "measured, other engine"
                return {"source": self._source_text(system, engine, rule), "rule": rule,
                        "engine": engine}
        return None

    def model(self, key: str):
        """The fitted model for op ``key`` (``store`` keys), or None if no system has it."""
        return self.resolve(key)[0]

    def resolve(self, key: str, own: bool = False):
        """(model, measured system, engine) of op ``key``; (None, "", "") if none.  The
        system of a vendor prior is :data:`PRIOR`.  ``own``: the engine's own kernel,
        even where another engine's is preferred."""
        cache_key = (key, own)
        if cache_key in self._cache:
            return self._cache[cache_key]
        op = key.split(":")[0]
        first = self.engine if own else _PREFERRED_ENGINE.get(op, self.engine)
        found = (None, "", "")
        for system, engine, rule in self._order(op, first):
            m = self._lookup(system, engine, key)
            if m is None:
                continue
            found = (m, system, engine)
            if rule == "measured" and engine != first:
                rule = "measured, other engine"
            if not own:
                self.sources[key] = {"source": self._source_text(system, engine, rule),
                                     "rule": rule, "engine": engine}
            if system == PRIOR:
                note = f"{key} from {self._source_text(system, engine, rule)}"
                if note not in self.notes:
                    self.notes.append(note)
            elif system != self.gpu.kernel_system or engine != first:
                tables = load_system(system)
                src = tables.gpu if tables and system != self.gpu.kernel_system \
                    else self.gpu.name
                why = "transferred from" if system != self.gpu.kernel_system else "from"
                note = f"{key} {why} {src} under {engine}"
                if note not in self.notes:
                    self.notes.append(note)
            break
        self._cache[cache_key] = found
        return found

    def _need(self, key: str):
        m = self.model(key)
        if m is None:
            raise LookupError(f"no measured kernel table for {key} on any system")
        return m

    # ------------------------------------------------------------------ rates
    @property
    def bandwidth(self) -> float:
        return ops.hbm(self.gpu)

    def peak(self, kind: str) -> float:
        return ops.peak_flops(self.gpu, kind)

    def _gemm_kind(self, kind: str) -> str:
        """The table an op of precision ``kind`` runs from: its own if the GPU has those
        tensor cores, else bf16 (weight-only quantisation: smaller weights, bf16 math)."""
        return kind if ops.native(self.gpu, kind) and self.model(f"gemm:{kind}") else "bf16"

    # ------------------------------------------------------------------ ops
    def gemm(self, m, n, k, kind: str):
        table = self._gemm_kind(kind)
        return timing.gemm_time(self._need(f"gemm:{table}"), m, n, k, kind, self.peak(table),
                                self.bandwidth, sms=self.gpu.sms)

    def gemm_sum(self, m, shapes, kind: str):
        """Total time of several GEMMs over the same ``m`` rows: ``shapes`` is a list of
        (n, k) (scalars or arrays broadcasting with m), evaluated in one call."""
        if not shapes:
            return 0.0 * np.asarray(m, float)
        m = np.asarray(m, float)
        full = np.broadcast_shapes(m.shape, *(np.shape(n) for n, _ in shapes),
                                   *(np.shape(k) for _, k in shapes))
        # one (len(shapes), *full) array per operand, filled row by row (broadcasting
        # assignment: cheaper than stacking broadcast views)
        n = np.empty((len(shapes),) + full)
        k = np.empty((len(shapes),) + full)
        for i, (n_i, k_i) in enumerate(shapes):
            n[i] = n_i
            k[i] = k_i
        return self.gemm(m, n, k, kind).sum(axis=0)

    def moe(self, tokens, hidden, inter, topk, experts, ep, kind: str):
        """One MoE layer on one GPU: the preferred (TRT-LLM) table, or the fastest of the
        tables of the engines that ship the kernel families (:data:`MOE_SHARED_ARCHS`)."""
        table = kind if ops.native(self.gpu, kind) and self.model(f"moe:{kind}") else "bf16"
        key = f"moe:{table}"
        model, system, _ = self.resolve(key)
        if model is None:
            raise LookupError(f"no measured kernel table for {key} on any system")
        candidates = [model]
        if system != PRIOR:
            if self.gpu.arch in MOE_SHARED_ARCHS:
                candidates += [self._lookup(system, e, key) for e in ENGINES]
            elif self.engine != _PREFERRED_ENGINE["moe"]:
                own, _, engine = self.resolve(key, own=True)
                if own is not None and engine == self.engine:
                    candidates.append(own)
        t = None
        for m in candidates:
            if m is None:
                continue
            tm = timing.moe_time(m, tokens, hidden, inter, topk, experts, ep, kind,
                                 self.peak(table), self.bandwidth, sms=self.gpu.sms)
            t = tm if t is None else np.minimum(t, tm)
        return t

    def moe_imbalance(self, tokens_per_expert, ep):
        return timing.imbalance(self.model("moe_imbalance"), tokens_per_expert, ep)

    def _attention_kind(self, kv: str, fp8_attention: bool) -> str:
        if kv == "fp8" and ops.native(self.gpu, "fp8"):
            if fp8_attention and self.model("context_attention:fp8"):
                return "fp8"
            if self.model("context_attention:bf16_kvfp8"):
                return "bf16_kvfp8"
        return "bf16"

    def context_attention(self, batch, seq, pairs, new_tokens, heads, kv_heads, head_dim,
                          kv: str = "bf16", fp8_attention: bool = False):
        kind = self._attention_kind(kv, fp8_attention)
        peak = self.peak("fp8" if kind == "fp8" else "bf16")
        return timing.context_attention_time(self._need(f"context_attention:{kind}"), batch,
                                             seq, pairs, new_tokens, heads, kv_heads,
                                             head_dim, kind, peak, self.bandwidth,
                                             sms=self.gpu.sms)

    def mla_context(self, batch, seq, pairs, new_tokens, heads, kv: str = "bf16"):
        kind = kv if self.model(f"mla_context:{kv}") else "bf16"
        return timing.mla_context_time(self._need(f"mla_context:{kind}"), batch, seq, pairs,
                                       new_tokens, heads, self.peak("bf16"), self.bandwidth,
                                       sms=self.gpu.sms)

    def _decode_peak(self, kv: str, fp8_attention: bool) -> float:
        """FP8 attention (FP8 KV cache read by FP8 tensor-core math) runs at the FP8 rate;
        the database measures decode attention in bf16 math only, so the efficiency is
        the bf16 kernel's at the same roofline position."""
        fp8 = fp8_attention and kv == "fp8" and ops.native(self.gpu, "fp8")
        return self.peak("fp8" if fp8 else "bf16")

    def decode_attention(self, batch, context, heads, kv_heads, head_dim, kv: str = "bf16",
                         fp8_attention: bool = False):
        kind = kv if ops.native(self.gpu, "fp8") and self.model(f"decode_attention:{kv}") \
            else "bf16"
        return timing.decode_attention_time(self._need(f"decode_attention:{kind}"), batch,
                                            context, heads, kv_heads, head_dim, kv,
                                            self._decode_peak(kv, fp8_attention),
                                            self.bandwidth, sms=self.gpu.sms)

    def mla_decode(self, batch, context, heads, kv: str = "bf16",
                   fp8_attention: bool = False):
        kind = kv if ops.native(self.gpu, "fp8") and self.model(f"mla_decode:{kv}") else "bf16"
        return timing.mla_decode_time(self._need(f"mla_decode:{kind}"), batch, context, heads,
                                      kv, self._decode_peak(kv, fp8_attention),
                                      self.bandwidth, sms=self.gpu.sms)

    @property
    def kernel_floor(self) -> float:
        """The shortest kernel the GPU runs (launch and synchronisation): the bf16 GEMM
        table's floor."""
        return float(self._need("gemm:bf16").floor_s)

    # ------------------------------------------------------------------ communication
    def _curves(self) -> tuple[dict[int, CurveModel], float]:
        """All-reduce curves by GPU count, and the scale-up GB/s of the GPU they were
        measured on (all counts from the same system as the 2-GPU curve)."""
        if "_curves" not in self._cache:
            _, system, engine = self.resolve("allreduce:2")
            curves = {}
            # PCIe-class systems: the database measured 4 and 8 GPUs across CPU sockets
            # without peer-to-peer (L40S 20 -> 5 -> 1.5 GB/s bus bandwidth); a server whose
            # GPUs share PCIe switches -- what the catalog's per-GPU link describes --
            # scales as a ring from the 2-GPU measurement (timing.allreduce_time).
            counts = (2,) if interconnect_class(self.gpu) == "pcie" else (2, 4, 8, 16)
            if system:
                for n in counts:
                    m = self._lookup(system, engine, f"allreduce:{n}")
                    if m is not None:
                        curves[n] = m
            priors = self._priors() if system == PRIOR else None
            link = (priors.link_gbps if priors else _system_link(system)) \
                or self.gpu.scaleup_gbps
            self._cache["_curves"] = (curves, link)
        return self._cache["_curves"]

    def allreduce(self, nbytes, gpus, nodes: int = 1):
        """Tensor-parallel all-reduce of ``nbytes`` across ``gpus`` GPUs on ``nodes``
        scale-up domains; a group wider than one domain runs at the scale-out bandwidth
        (its bandwidth term stretched by scale-up / scale-out) and pays NCCL's network
        latency (:func:`perfmodel.kernels.timing.network_allreduce_floor`)."""
        curves, fitted_link = self._curves()
        link = self.gpu.scaleout_gbps if nodes > 1 else self.gpu.scaleup_gbps
        scale = fitted_link / link
        return timing.allreduce_time(curves, nbytes, int(gpus), scale, int(nodes))

    def alltoall(self, bytes_intra, bytes_inter, mode: str, phase: str):
        """Dispatch or combine: bytes sent within the scale-up domain and across it run
        concurrently, the slower sets the time (DeepEP forwards inter-domain traffic
        through one GPU per domain)."""
        m = self._need(f"alltoall:{mode}:{phase}")
        intra = timing.alltoall_time(m, bytes_intra, self.gpu.scaleup_gbps * 1e9)
        inter = timing.alltoall_time(m, bytes_inter, self.gpu.scaleout_gbps * 1e9)
        return np.where(np.asarray(bytes_inter) > 0, np.maximum(intra, inter), intra)


def _system_link(system: str) -> float | None:
    g = system_gpu(system) if system else None
    return g.scaleup_gbps if g else None


_SETS: dict[tuple, KernelSet | RooflineKernels] = {}


def kernels_for(gpu: GPU, engine: str):
    """The (cached) kernel set of a GPU under an engine -- measured kernels, or the
    thesis's rooflines for ``engine="roofline"`` -- keyed by the GPU's physical figures
    and name, so a price change shares it."""
    key = (gpu.name, gpu.spec_key(), engine)
    hit = _SETS.get(key)
    if hit is None:
        if engine == "roofline":
            from perfmodel.kernels.roofline_set import RooflineKernels

            hit = RooflineKernels(gpu)
        else:
            hit = KernelSet(gpu, engine)
        _SETS[key] = hit
    return hit
