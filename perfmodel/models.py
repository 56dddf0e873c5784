"""Model catalog: transformer architectures described by Hugging Face config.json fields.

:class:`ModelSpec` keeps only what the analytic model needs and derives the per-layer
quantities used everywhere else (parameter counts, FLOPs per token and per attention
pair, KV bytes per token).  Built-in configs live in ``perfmodel/data/models/``; a user
passes a path to any config.json with the same fields.

Field aliases across families: routed experts are ``n_routed_experts`` (DeepSeek),
``num_experts`` (Qwen-MoE) or ``num_local_experts`` (Mixtral); DeepSeek's shared-expert
width is ``n_shared_experts * moe_intermediate_size``; MLA is recognised by
``kv_lora_rank``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Any

from perfmodel.errors import InputError, at, check_number
from perfmodel.reading import read_json

DTYPE_BYTES = {"fp4": 0.5, "fp8": 1.0, "bf16": 2.0, "fp16": 2.0, "fp32": 4.0}
#: Weight precisions a run may name: the dtypes, and ``fp8_ffn`` -- Meta's own FP8
#: checkpoints (FBGEMM row-wise FP8), which quantize the feed-forward layers only
#: (:attr:`ModelSpec.fp8_scope`).
WEIGHT_DTYPES = (*DTYPE_BYTES, "fp8_ffn")
#: KV-cache precisions the attention kernels price (measured tables hold BF16 and FP8 KV
#: caches only); an FP4 or FP32 cache would be a guess, so it is refused by name.
KV_DTYPES = ("bf16", "fp8")
#: Layers whose MLP an ``ffn``-scoped FP8 checkpoint keeps in BF16: the first and the
#: last (Llama 3 paper, arXiv 2407.21783, section 6.2).
FFN_SCOPE_BF16_LAYERS = 2


@dataclass(frozen=True)
class ModelSpec:
    name: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int  # dense MLP width
    vocab: int
    # Mixture of experts (0 experts = dense model)
    routed_experts: int = 0
    experts_per_token: int = 0
    moe_intermediate: int = 0
    shared_intermediate: int = 0  # total width of always-on shared expert(s)
    dense_layers: int = 0  # leading dense layers of a MoE model (DeepSeek: 3)
    route_groups: int = 0  # DeepSeek n_group: experts are split into this many groups
    route_groups_limit: int = 0  # DeepSeek topk_group: a token reaches at most this many groups
    mtp_layers: int = 0  # multi-token-prediction modules (DeepSeek num_nextn_predict_layers)
    # Multi-head latent attention (DeepSeek); 0 = GQA/MHA
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_nope_dim: int = 0
    qk_rope_dim: int = 0
    v_head_dim: int = 0
    weight_dtype: str = "bf16"
    kv_dtype: str = "bf16"
    weight_block_scaled: bool = False  # fp8 weights with 128x128 block scales (DeepSeek)
    #: Which linear layers an FP8 checkpoint quantizes: "all" (the transformer blocks'
    #: linear layers: ModelOpt, Quark, compressed-tensors, DeepSeek's block FP8) or "ffn"
    #: (Meta's FBGEMM checkpoints, e.g. meta-llama/Llama-3.1-405B-FP8: "we quantize most
    #: parameters and activations in the feedforward network layers ... We do not
    #: quantize parameters in the self-attention layers ... we do not perform
    #: quantization in the first and last Transformer layers", Llama 3 paper section
    #: 6.2; the checkpoint's ``modules_to_not_convert`` lists every ``self_attn``
    #: projection).  With "ffn" the attention projections hold and run in BF16.
    fp8_scope: str = "all"

    # ------------------------------------------------------------------ structure
    @property
    def is_moe(self) -> bool:
        return self.routed_experts > 0

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def moe_layers(self) -> int:
        return self.layers - self.dense_layers if self.is_moe else 0

    @property
    def weight_bytes(self) -> float:
        return DTYPE_BYTES[self.weight_dtype]

    @property
    def ffn_scoped(self) -> bool:
        """FP8 weights in the feed-forward layers only (:attr:`fp8_scope`)."""
        return self.weight_dtype == "fp8" and self.fp8_scope == "ffn"

    @property
    def attn_weight_bytes(self) -> float:
        """Bytes per attention-projection weight (BF16 in an ``ffn``-scoped checkpoint)."""
        return DTYPE_BYTES["bf16"] if self.ffn_scoped else self.weight_bytes

    @property
    def attn_gemm_kind(self) -> str:
        """Precision kind of the attention projections' GEMMs."""
        return "bf16" if self.ffn_scoped else self.gemm_kind

    @property
    def bf16_mlp_layers(self) -> int:
        """Dense MLP layers held in BF16 although the rest of the MLPs are FP8.

        Their memory is counted; their time is priced as FP8 like the other layers -- two
        of Llama-3.1-405B's 126 layers, under 1 % of its MLP time."""
        return FFN_SCOPE_BF16_LAYERS if self.ffn_scoped and not self.is_moe else 0

    @property
    def kv_bytes(self) -> float:
        return DTYPE_BYTES[self.kv_dtype]

    @property
    def gemm_kind(self) -> str:
        """Precision kind of the weight GEMMs (``perfmodel.kernels.ops``)."""
        if self.weight_dtype == "fp8":
            return "fp8_block" if self.weight_block_scaled else "fp8"
        if self.weight_dtype == "fp4":
            return "fp4"
        return "bf16"

    @property
    def group_limited_routing(self) -> bool:
        """A token's experts come from at most ``route_groups_limit`` of ``route_groups``
        groups -- a real limit only when it is below the number of groups (a model with
        one group and topk_group 1 is not limited)."""
        return 0 < self.route_groups_limit < self.route_groups

    # ------------------------------------------------------------------ attention
    @cached_property
    def attn_params(self) -> float:
        """Projection parameters of one attention layer."""
        h, nh = self.hidden, self.heads
        if self.is_mla:
            qk = self.qk_nope_dim + self.qk_rope_dim
            q = (h * self.q_lora_rank + self.q_lora_rank * nh * qk
                 if self.q_lora_rank else h * nh * qk)
            kv = (h * (self.kv_lora_rank + self.qk_rope_dim)
                  + self.kv_lora_rank * nh * (self.qk_nope_dim + self.v_head_dim))
            return float(q + kv + nh * self.v_head_dim * h)
        hd = self.head_dim
        return float(h * nh * hd + 2 * h * self.kv_heads * hd + nh * hd * h)

    @cached_property
    def attn_replicated_params(self) -> float:
        """Attention parameters every tensor-parallel rank holds in full.

        MLA's down-projections (q_a, kv_a) are not split across heads; with GQA the
        K/V projections are replicated once tp exceeds the number of KV heads.
        """
        if self.is_mla:
            return float(self.hidden * (self.q_lora_rank + self.kv_lora_rank + self.qk_rope_dim))
        return 0.0

    def attn_pair_flops(self, absorbed: bool) -> float:
        """FLOPs per (query token, key token) pair in one layer (QK^T plus PV).

        GQA/MHA: 2*nh*hd for scores + 2*nh*hd for values.  MLA non-absorbed (prefill)
        attends in the decompressed head space (nope+rope for QK, v for PV); absorbed
        MLA (decode) attends in the latent space: (kv_lora+rope) for QK and kv_lora for PV
        (DeepSeek-V2 paper §2.1.3; FlashMLA).
        """
        nh = self.heads
        if not self.is_mla:
            return 4.0 * nh * self.head_dim
        if absorbed:
            return 2.0 * nh * (self.kv_lora_rank + self.qk_rope_dim) + 2.0 * nh * self.kv_lora_rank
        return 2.0 * nh * (self.qk_nope_dim + self.qk_rope_dim) + 2.0 * nh * self.v_head_dim

    @cached_property
    def kv_bytes_per_token_layer(self) -> float:
        """KV-cache bytes of one token in one layer (MLA caches the latent + rope key)."""
        if self.is_mla:
            return (self.kv_lora_rank + self.qk_rope_dim) * self.kv_bytes
        return 2.0 * self.kv_heads * self.head_dim * self.kv_bytes

    def kv_shards(self, tp: Any) -> Any:
        """How many ways tensor parallelism splits the KV cache (MLA: not at all)."""
        import numpy as np

        if self.is_mla:
            return np.ones_like(np.asarray(tp, dtype=float))
        return np.minimum(np.asarray(tp, dtype=float), self.kv_heads)

    # ------------------------------------------------------------------ MLP / experts
    @property
    def dense_mlp_params(self) -> float:
        return 3.0 * self.hidden * self.intermediate

    @property
    def expert_params(self) -> float:
        return 3.0 * self.hidden * self.moe_intermediate

    @property
    def shared_params(self) -> float:
        return 3.0 * self.hidden * self.shared_intermediate

    @property
    def embed_params(self) -> float:
        return float(self.vocab * self.hidden)

    @cached_property
    def total_params(self) -> float:
        mlp = self.dense_mlp_params * (self.dense_layers if self.is_moe else self.layers)
        moe = self.moe_layers * (self.routed_experts * self.expert_params + self.shared_params)
        return self.layers * self.attn_params + mlp + moe + 2 * self.embed_params

    @cached_property
    def active_params(self) -> float:
        """Parameters touched per token (routed experts: top-k only)."""
        mlp = self.dense_mlp_params * (self.dense_layers if self.is_moe else self.layers)
        moe = self.moe_layers * (self.experts_per_token * self.expert_params + self.shared_params)
        return self.layers * self.attn_params + mlp + moe + self.embed_params

    def with_dtypes(self, weight_dtype: str | None = None, kv_dtype: str | None = None
                    ) -> ModelSpec:
        """This model with its weight and KV dtypes overridden (None keeps the config's);
        a weight dtype also sets the FP8 scope (``fp8_ffn``: :attr:`fp8_scope` "ffn")."""
        for label, value, known in (("weight dtype", weight_dtype, WEIGHT_DTYPES),
                                    ("kv dtype", kv_dtype, KV_DTYPES)):
            if value is not None and value not in known:
                raise InputError(f"unknown {label} '{value}'; known: {', '.join(known)}")
        scope = self.fp8_scope
        if weight_dtype is not None:
            scope = "ffn" if weight_dtype == "fp8_ffn" else "all"
            weight_dtype = "fp8" if weight_dtype == "fp8_ffn" else weight_dtype
        return replace(self, weight_dtype=weight_dtype or self.weight_dtype,
                       kv_dtype=kv_dtype or self.kv_dtype, fp8_scope=scope)


# ---------------------------------------------------------------------- loading
#: No config field of a real model comes near this (hidden sizes are ~10^4, vocabularies
#: ~10^5-10^6); a larger value is a corrupt file, and would size arrays by it.
MAX_FIELD = 1 << 24


def _need(cfg: dict[str, Any], key: str, where: str) -> int:
    """A required positive whole-number field."""
    if key not in cfg or cfg[key] is None:
        raise InputError(f"{where}: field '{key}' is missing")
    return _int(cfg, key, where, minimum=1)


def _int(cfg: dict[str, Any], key: str, where: str, minimum: int = 0) -> int:
    """An optional whole-number field (0 when absent or null), within bounds."""
    value = cfg.get(key)
    if value is None:
        return 0
    return int(check_number(value, at(f"{where}: field '{key}'"), integer=True,
                            ge=minimum, le=MAX_FIELD))


def model_from_hf_config(cfg: dict[str, Any], name: str, where: str = "config.json"
                         ) -> ModelSpec:
    """Build a :class:`ModelSpec` from the fields of a Hugging Face ``config.json``."""
    hidden = _need(cfg, "hidden_size", where)
    layers = _need(cfg, "num_hidden_layers", where)
    heads = _need(cfg, "num_attention_heads", where)
    kv_heads = _int(cfg, "num_key_value_heads", where) or heads
    head_dim = _int(cfg, "head_dim", where) or hidden // heads
    experts = (_int(cfg, "n_routed_experts", where) or _int(cfg, "num_experts", where)
               or _int(cfg, "num_local_experts", where))
    moe_inter = _int(cfg, "moe_intermediate_size", where) or (
        _int(cfg, "intermediate_size", where) if experts else 0)
    shared = (_int(cfg, "shared_expert_intermediate_size", where)
              or _int(cfg, "n_shared_experts", where) * moe_inter)
    qcfg = cfg.get("quantization_config") or {}
    if not isinstance(qcfg, dict):
        raise InputError(f"{where}: field 'quantization_config' must be an object, "
                           f"got {qcfg!r}")
    quant = str(qcfg.get("quant_method", "")).lower() + " " + str(
        qcfg.get("quant_algo", "")).lower()
    weight_dtype = "fp8" if "fp8" in quant else ("fp4" if "fp4" in quant else "bf16")
    block_scaled = weight_dtype == "fp8" and bool(qcfg.get("weight_block_size"))
    # FBGEMM checkpoints name the modules they leave unquantized; Meta's leave every
    # attention projection in BF16 (ModelSpec.fp8_scope)
    skipped = qcfg.get("modules_to_not_convert") or []
    ffn_only = (weight_dtype == "fp8" and isinstance(skipped, list)
                and any("self_attn" in str(m) for m in skipped))
    spec = ModelSpec(
        name=name,
        hidden=hidden,
        layers=layers,
        heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        intermediate=_int(cfg, "intermediate_size", where),
        vocab=_need(cfg, "vocab_size", where),
        routed_experts=experts,
        experts_per_token=_int(cfg, "num_experts_per_tok", where) if experts else 0,
        moe_intermediate=moe_inter if experts else 0,
        shared_intermediate=shared if experts else 0,
        dense_layers=_int(cfg, "first_k_dense_replace", where) if experts else 0,
        route_groups=_int(cfg, "n_group", where),
        route_groups_limit=_int(cfg, "topk_group", where),
        mtp_layers=_int(cfg, "num_nextn_predict_layers", where),
        q_lora_rank=_int(cfg, "q_lora_rank", where),
        kv_lora_rank=_int(cfg, "kv_lora_rank", where),
        qk_nope_dim=_int(cfg, "qk_nope_head_dim", where),
        qk_rope_dim=_int(cfg, "qk_rope_head_dim", where),
        v_head_dim=_int(cfg, "v_head_dim", where),
        weight_dtype=weight_dtype,
        kv_dtype="bf16",
        weight_block_scaled=block_scaled,
        fp8_scope="ffn" if ffn_only else "all",
    )
    if experts and spec.experts_per_token <= 0:
        raise InputError(f"{where}: MoE model needs a positive 'num_experts_per_tok'")
    if experts and spec.moe_intermediate <= 0:
        raise InputError(f"{where}: MoE model needs 'moe_intermediate_size'")
    if not experts and spec.intermediate <= 0:
        raise InputError(f"{where}: field 'intermediate_size' is missing")
    _consistent(spec, where)
    return spec


def _consistent(m: ModelSpec, where: str) -> None:
    """A config whose fields contradict each other is refused (one line naming the
    fields): attention groups query heads over KV heads, so KV heads divide the heads;
    a token's experts are among the experts; dense layers are among the layers; a head
    has at least one dimension; routing groups divide the experts and the groups a token
    may use are among them."""
    def fail(text: str) -> InputError:
        return InputError(f"{where}: {text}")

    if m.kv_heads > m.heads or m.heads % m.kv_heads:
        raise fail(f"fields 'num_key_value_heads' ({m.kv_heads}) and 'num_attention_heads' "
                   f"({m.heads}) contradict each other: KV heads must divide the heads")
    if m.head_dim < 1 and not m.kv_lora_rank:
        raise fail(f"field 'head_dim' (or hidden_size / num_attention_heads = "
                   f"{m.hidden} / {m.heads}) is {m.head_dim}: a head needs >= 1 dimension")
    if m.routed_experts and m.experts_per_token > m.routed_experts:
        raise fail(f"field 'num_experts_per_tok' ({m.experts_per_token}) is more than the "
                   f"{m.routed_experts} experts")
    if m.dense_layers > m.layers:
        raise fail(f"field 'first_k_dense_replace' ({m.dense_layers}) is more than the "
                   f"{m.layers} layers ('num_hidden_layers')")
    if m.route_groups and m.routed_experts and m.routed_experts % m.route_groups:
        raise fail(f"field 'n_group' ({m.route_groups}) does not divide the "
                   f"{m.routed_experts} experts")
    if m.route_groups_limit > max(m.route_groups, 0) and m.route_groups:
        raise fail(f"field 'topk_group' ({m.route_groups_limit}) is more than 'n_group' "
                   f"({m.route_groups})")


def _builtin_dir():
    return resources.files("perfmodel").joinpath("data/models")


def list_models() -> list[str]:
    return sorted(p.name[:-5] for p in _builtin_dir().iterdir() if p.name.endswith(".json"))


def get_model(name_or_path: str) -> ModelSpec:
    """A built-in model by name (case-insensitive), a path to a config.json, or a
    checkpoint folder holding one (named after the folder)."""
    path = Path(name_or_path)
    name = path.stem
    if path.is_dir():  # a Hugging Face checkpoint folder
        if not (path / "config.json").is_file():
            raise InputError(f"model config '{name_or_path}' is a folder with no config.json")
        path, name = path / "config.json", path.resolve().name
    if path.suffix == ".json" or path.exists():
        if not path.is_file():
            raise InputError(f"model config '{name_or_path}' does not exist")
        cfg = read_json(path, "model config")
        if not isinstance(cfg, dict):
            raise InputError(f"{path}: expected a JSON object of config fields")
        return model_from_hf_config(cfg, name, str(path))
    key = name_or_path.lower()
    if key not in list_models():
        raise InputError(f"unknown model '{name_or_path}'; known models: "
                           f"{', '.join(list_models())} (or pass a path to a config.json)")
    cfg = json.loads(_builtin_dir().joinpath(f"{key}.json").read_text())
    return model_from_hf_config(cfg, key, f"perfmodel/data/models/{key}.json")
