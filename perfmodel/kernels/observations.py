"""Measured kernel rows, normalised: from aiconfigurator-core's parquet tables to the
arrays the fits take, and back to predictions for the held-out validation.

One :class:`Observations` holds the rows of one operation and precision on one GPU
under one engine.  ``group`` labels the shape each row belongs to (a GEMM's (n, k), an
attention's head layout, a MoE model's expert shape, ...): the validation holds out
whole groups, so it measures how well a fit predicts *shapes it has not seen*, not
other token counts of shapes it has.

The conversion of each table (column names, units, which rows an engine would really
run) is documented on its reader; the file layout is described in
``docs/perfmodel.md`` (section "Kernel database").
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import pandas as pd

from perfmodel.hardware import GPU
from perfmodel.kernels import fit, ops, timing
from perfmodel.kernels.models import EfficiencyModel

# Kernel sources that are not what a server runs for a standard gated transformer.
_EXCLUDED_SOURCES = ("eager", "nongated", "situ_as_silu", "marlin", "mxfp4", "gptoss",
                     "wna16")


@dataclass(frozen=True)
class Observations:
    op: str  # "gemm", "moe", "context_attention", ...
    kind: str  # precision kind / KV dtype / GPU count / "<mode>:<phase>"
    cols: dict[str, np.ndarray]
    latency: np.ndarray  # seconds
    group: np.ndarray  # shape label for held-out splits
    #: The fastest row of the whole measured table (s), cache-resident rows included
    #: (:func:`streaming` sets it): the launch floor's reference.  0: not yet known.
    fastest: float = 0.0

    @property
    def key(self) -> str:
        return f"{self.op}:{self.kind}" if self.kind else self.op

    def take(self, mask: np.ndarray) -> Observations:
        return Observations(self.op, self.kind, {k: v[mask] for k, v in self.cols.items()},
                            self.latency[mask], self.group[mask], self.fastest)

    def __len__(self) -> int:
        return len(self.latency)


def usable(df: pd.DataFrame) -> pd.DataFrame:
    """Drop kernels a standard server would not run (eager-mode variants, non-gated
    or MXFP4-specific MoE kernels)."""
    if "kernel_source" not in df:
        return df
    ks = df["kernel_source"].astype(str).str.lower()
    bad = np.zeros(len(df), dtype=bool)
    for word in _EXCLUDED_SOURCES:
        bad |= ks.str.contains(word, regex=False).to_numpy()
    return df[~bad]


def _fastest(df: pd.DataFrame, keys: list[str], value: str = "latency") -> pd.DataFrame:
    """One row per key: the fastest kernel an engine offers for the shape (engines pick
    per shape among their kernels; duplicate collections collapse)."""
    return df.groupby(keys, as_index=False)[value].min()


def _group(*cols) -> np.ndarray:
    out = np.zeros(len(cols[0]), dtype=np.int64)
    for c in cols:
        out = out * 1_000_003 + np.asarray(c, dtype=np.int64)
    return out


# ------------------------------------------------------------------------ readers
def gemm_rows(df: pd.DataFrame) -> list[Observations]:
    """``gemm_perf``: m tokens, n output and k input features, latency in ms."""
    df = _fastest(usable(df), ["gemm_dtype", "m", "n", "k"])
    out = []
    for kind, db in ops.DB_DTYPE.items():
        d = df[df.gemm_dtype == db]
        if len(d) < 50:
            continue
        m, n, k = (d[c].to_numpy(float) for c in "mnk")
        out.append(Observations("gemm", kind, {"m": m, "n": n, "k": k},
                                d.latency.to_numpy() * 1e-3, _group(n, k)))
    return out


MOE_KEYS = ["moe_dtype", "num_tokens", "hidden_size", "inter_size", "topk", "num_experts",
            "moe_tp_size", "moe_ep_size"]


def _moe_cols(d: pd.DataFrame) -> dict[str, np.ndarray]:
    return {"tokens": d.num_tokens.to_numpy(float), "hidden": d.hidden_size.to_numpy(float),
            "inter": (d.inter_size / d.moe_tp_size).to_numpy(float),
            "topk": d.topk.to_numpy(float), "experts": d.num_experts.to_numpy(float),
            "ep": d.moe_ep_size.to_numpy(float)}


def moe_rows(df: pd.DataFrame) -> list[Observations]:
    """``moe_perf`` balanced rows: ``num_tokens`` enter the MoE group of moe_ep x moe_tp
    GPUs; the measured GPU runs its num_experts/ep local experts, each inter/moe_tp wide
    (``inter_size`` is the unsharded width), on the assignments routed to them."""
    df = usable(df)
    # Width shards below 128 (e.g. a 768-wide expert split 8 ways) are not layouts a
    # deployment runs, and their tiny GEMMs follow other kernel paths.
    df = df[df.inter_size / df.moe_tp_size >= 128]
    df = _fastest(df[df.distribution == "balanced"], MOE_KEYS)
    out = []
    for kind, db in ops.DB_DTYPE.items():
        d = df[df.moe_dtype == db]
        if len(d) < 50:
            continue
        cols = _moe_cols(d)
        out.append(Observations("moe", kind, cols, d.latency.to_numpy() * 1e-3,
                                _group(d.hidden_size, d.inter_size, d.topk, d.num_experts,
                                       d.moe_tp_size, d.moe_ep_size)))
    return out


def imbalance_rows(df: pd.DataFrame, skew: str = "power_law_1.01") -> Observations | None:
    """Latency ratio of skewed (``power_law_1.01``: the busiest rank, as the database
    measures it) to balanced routing, same shape and kernel."""
    df = usable(df)
    df = df[df.moe_tp_size == 1]
    keys = MOE_KEYS
    bal = _fastest(df[df.distribution == "balanced"], keys)
    sk = _fastest(df[df.distribution == skew], keys)
    j = bal.merge(sk, on=keys, suffixes=("_b", "_s"))
    j = j[j.moe_ep_size > 1]
    if len(j) < 20:
        return None
    tpe = (j.num_tokens * j.topk / j.num_experts).to_numpy(float)
    return Observations("moe_imbalance", "", {"tokens_per_expert": tpe,
                                              "ep": j.moe_ep_size.to_numpy(float)},
                        (j.latency_s / j.latency_b).to_numpy(float),
                        _group(j.hidden_size, j.inter_size, j.topk, j.num_experts))


def _attention_filter(df: pd.DataFrame) -> pd.DataFrame:
    df = usable(df)
    if "window_size" in df:
        df = df[df.window_size == 0]
    if "beam_width" in df:
        df = df[df.beam_width == 1]
    return df


ATTN_KINDS = {("bfloat16", "bfloat16"): "bf16", ("bfloat16", "fp8"): "bf16_kvfp8",
              ("fp8", "fp8"): "fp8"}


def context_attention_rows(df: pd.DataFrame) -> list[Observations]:
    """``context_attention_perf``: prefill of ``batch_size`` sequences of ``isl`` tokens
    (no cached prefix), per-GPU query / KV heads, latency in ms."""
    keys = ["attn_dtype", "kv_cache_dtype", "batch_size", "isl", "num_heads",
            "num_key_value_heads", "head_dim"]
    df = _fastest(_attention_filter(df), keys)
    out = []
    for (attn, kv), kind in ATTN_KINDS.items():
        d = df[(df.attn_dtype == attn) & (df.kv_cache_dtype == kv)]
        if len(d) < 50:
            continue
        cols = {"batch": d.batch_size.to_numpy(float), "seq": d.isl.to_numpy(float),
                "heads": d.num_heads.to_numpy(float),
                "kv_heads": d.num_key_value_heads.to_numpy(float),
                "head_dim": d.head_dim.to_numpy(float)}
        out.append(Observations("context_attention", kind, cols, d.latency.to_numpy() * 1e-3,
                                _group(d.num_heads, d.num_key_value_heads, d.head_dim,
                                       d.batch_size)))
    return out


def decode_attention_rows(df: pd.DataFrame) -> list[Observations]:
    """``generation_attention_perf``: one new token for each of ``batch_size`` sequences
    holding ``step + 1`` cached tokens (isl = 1)."""
    keys = ["kv_cache_dtype", "batch_size", "step", "num_heads", "num_key_value_heads",
            "head_dim"]
    df = _fastest(_attention_filter(df), keys)
    out = []
    for kv in ("bf16", "fp8"):
        d = df[df.kv_cache_dtype == ops.DB_DTYPE.get(kv, kv)]
        if len(d) < 50:
            continue
        cols = {"batch": d.batch_size.to_numpy(float), "context": d.step.to_numpy(float) + 1,
                "heads": d.num_heads.to_numpy(float),
                "kv_heads": d.num_key_value_heads.to_numpy(float),
                "head_dim": d.head_dim.to_numpy(float)}
        out.append(Observations("decode_attention", kv, cols, d.latency.to_numpy() * 1e-3,
                                _group(d.num_heads, d.num_key_value_heads, d.head_dim)))
    return out


def _mla_rows(df: pd.DataFrame, op: str, db_col: str, coord: str, offset: float
              ) -> list[Observations]:
    """MLA rows per KV dtype: batch, the length column ``db_col`` (+ ``offset``) as
    ``coord``, and per-GPU heads."""
    df = usable(df)
    df = _fastest(df[df.mla_dtype == "bfloat16"], ["kv_cache_dtype", "batch_size", db_col,
                                                   "num_heads"])
    out = []
    for kv in ("bf16", "fp8"):
        d = df[df.kv_cache_dtype == ops.DB_DTYPE.get(kv, kv)]
        if len(d) < 30:
            continue
        cols = {"batch": d.batch_size.to_numpy(float),
                coord: d[db_col].to_numpy(float) + offset,
                "heads": d.num_heads.to_numpy(float)}
        out.append(Observations(op, kv, cols, d.latency.to_numpy() * 1e-3,
                                _group(d.num_heads, d.batch_size)))
    return out


def mla_context_rows(df: pd.DataFrame) -> list[Observations]:
    """``context_mla_perf``: DeepSeek MLA prefill kernel, per-GPU heads, no projections."""
    return _mla_rows(df, "mla_context", "isl", "seq", 0.0)


def mla_decode_rows(df: pd.DataFrame) -> list[Observations]:
    """``generation_mla_perf``: absorbed-MLA decode kernel at ``step + 1`` cached tokens."""
    return _mla_rows(df, "mla_decode", "step", "context", 1.0)


def allreduce_rows(df: pd.DataFrame) -> list[Observations]:
    """``custom_allreduce_perf``: ``message_size`` counts bf16 elements; CUDA-graph
    kernels only (eager variants add a host-launch cost the engines avoid in decode)."""
    df = _fastest(usable(df), ["num_gpus", "message_size"])
    out = []
    for n, d in df.groupby("num_gpus"):
        nbytes = d.message_size.to_numpy(float) * 2.0
        out.append(Observations("allreduce", str(int(n)), {"bytes": nbytes},
                                d.latency.to_numpy() * 1e-3, np.arange(len(d))))
    return out


def alltoall_bytes(tokens, hidden, topk, ep, mode: str, elem_bytes: float):
    """Bytes one GPU sends in a dispatch (or receives back in a combine).

    ``normal`` (DeepEP high-throughput, prefill): a token is sent once to each remote
    rank holding one of its top-k experts, E[ranks] = (ep-1)(1-(1-1/ep)^k);
    ``ll`` (low-latency, decode): once per remote expert, k (1 - 1/ep).
    """
    tokens, ep = np.asarray(tokens, float), np.asarray(ep, float)
    if mode == "normal":
        copies = (ep - 1.0) * (1.0 - (1.0 - 1.0 / ep) ** topk)
    else:
        copies = topk * (1.0 - 1.0 / ep)
    return tokens * copies * hidden * elem_bytes


#: TensorRT-LLM's MoE communication on a multi-node-NVLink system (GB200 / GB300 NVL72):
#: ``CommunicationFactory.create_strategy`` tries ``NVLinkOneSided`` first and keeps it
#: wherever it initialises (tensorrt_llm/_torch/modules/fused_moe/communication/
#: communication_factory.py, "Priority: NVLinkOneSided > NVLinkTwoSided > NcclEP > DeepEP
#: > DeepEPLowLatency > AllGather"), so the kernel a deployment runs there is the one
#: ``trtllm_alltoall_perf`` measures, not the DeepEP kernels of ``moe_a2a_perf``.
ONE_SIDED = "NVLinkOneSided"
_A2A_ELEM = {"nvfp4": 0.5625, "fp8": 1.0, "bfloat16": 2.0}


def _one_sided_rows(d: pd.DataFrame) -> list[tuple]:
    """Rows of TRT-LLM's NVLinkOneSided dispatch and combine (latency in ms), for both
    modes: the same kernel serves prefill and decode.  The dispatch moves the table's
    ``moe_dtype`` elements; the combine returns bf16 outputs (``alltoall_combine``; the
    low-precision combine is an option deployments turn on, not the default)."""
    d = d[d.kernel_source == ONE_SIDED]
    rows = []
    for _, r in d.iterrows():
        phase = {"alltoall_dispatch": "dispatch", "alltoall_combine": "combine"}.get(
            str(r.op_name))
        if phase is None:
            continue
        elem = _A2A_ELEM.get(str(r.moe_dtype), 2.0) if phase == "dispatch" else 2.0
        for mode in ("ll", "normal"):
            rows.append((mode, phase, r.num_tokens, r.hidden_size, r.topk, r.moe_ep_size,
                         elem, r.latency * 1e-3))
    return rows


def alltoall_rows(frames: dict[str, pd.DataFrame]) -> list[Observations]:
    """MoE dispatch/combine (``num_tokens`` per rank).

    Sources: TRT-LLM's ``trtllm_alltoall_perf`` (NVLinkOneSided, up to EP 64 on an NVL72
    rack: :data:`ONE_SIDED`; where it exists it replaces the table below for TRT-LLM),
    ``moe_a2a_perf`` (DeepEP within one 8-GPU node, TRT-LLM and vLLM; latency in us;
    bytes counted at each row's ``comm_dtype``) and SGLang's ``wideep_deepep_normal`` /
    ``wideep_deepep_ll`` (per-phase microseconds; the normal kernel at its most SMs).
    Elements whose dtype the table does not state are counted as bf16.
    """
    rows = []
    if "trtllm_alltoall" in frames:
        rows += _one_sided_rows(frames["trtllm_alltoall"])
    # the one-sided table spans EP 2-64 at one model shape: its held-out groups are EP
    # sizes (scripts/calibrate_kernels.py scores unseen ones), the others' model shapes
    by_ep = bool(rows)
    if "moe_a2a" in frames and not rows:
        d = frames["moe_a2a"]
        for _, r in d.iterrows():
            mode = "ll" if str(r.comm_backend).endswith("_ll") else "normal"
            elem = {"fp8": 1.0, "nvfp4": 0.5625, "w4afp8": 1.0}.get(str(r.comm_dtype), 2.0)
            rows.append((mode, r.phase, r.num_tokens, r.hidden_size, r.topk, r.ep_size, elem,
                         r.latency * 1e-6))
    if "deepep_normal" in frames:
        d = frames["deepep_normal"]
        d = d[d.dispatch_sms == d.dispatch_sms.max()]
        for _, r in d.iterrows():
            for phase in ("dispatch", "combine"):
                rows.append(("normal", phase, r.num_token, r.hidden_size, r.num_topk,
                             8 * r.node_num, 2.0, getattr(r, f"{phase}_transmit_us") * 1e-6))
    if "deepep_ll" in frames:
        for _, r in frames["deepep_ll"].iterrows():
            for phase in ("dispatch", "combine"):
                rows.append(("ll", phase, r.num_token, r.hidden_size, r.num_topk,
                             8 * r.node_num, 2.0, getattr(r, f"{phase}_avg_t_us") * 1e-6))
    if not rows:
        return []
    t = pd.DataFrame(rows, columns=["mode", "phase", "tokens", "hidden", "topk", "ep", "elem",
                                    "latency"])
    out = []
    keys = ("hidden", "topk", "ep") if by_ep else ("hidden", "topk")
    for (mode, phase), d in t.groupby(["mode", "phase"]):
        nbytes = alltoall_bytes(d.tokens.to_numpy(float), d.hidden.to_numpy(float),
                                d.topk.to_numpy(float), d.ep.to_numpy(float), mode,
                                d.elem.to_numpy(float))
        out.append(Observations("alltoall", f"{mode}:{phase}", {"bytes": nbytes},
                                d.latency.to_numpy(float),
                                _group(*(d[k] for k in keys))))
    return out


def working_set(obs: Observations) -> np.ndarray | None:
    """Bytes an op streams from memory that could instead stay in the on-chip cache
    between repetitions of the benchmark: a GEMM's weights (the collector rotates at
    most five copies), a MoE layer's touched experts, a decode step's KV cache (one
    cache is reused).  None for ops that are not memory-bound."""
    c = obs.cols
    if obs.op == "gemm":
        return ops.WEIGHT_BYTES[obs.kind] * c["n"] * c["k"] * 5.0
    if obs.op == "moe":
        touched = ops.moe_touched(c["tokens"], c["topk"], c["experts"], c["ep"], True)
        return ops.WEIGHT_BYTES[obs.kind] * 3.0 * c["hidden"] * c["inter"] * touched
    if obs.op == "decode_attention":
        return ops.decode_attention_work(c["batch"], c["context"], c["heads"], c["kv_heads"],
                                         c["head_dim"], obs.kind)[1]
    if obs.op == "mla_decode":
        return ops.mla_decode_work(c["batch"], c["context"], c["heads"], obs.kind)[1]
    return None


#: A cache-resident row is kept when streaming its working set from HBM would take at
#: most this share of its measured time: its time is then the kernel's fixed work
#: (launch, synchronisation, split reductions), which the cache does not shorten.
CACHE_BOUND_SHARE = 0.25


def streaming(obs: Observations, gpu: GPU) -> Observations:
    """The rows whose time the GPU's last-level cache cannot have shortened.

    In serving, a layer's weights and a batch's KV cache are evicted by the other layers
    before they are used again, so they stream from HBM; a benchmark that repeats one
    small op keeps them on chip (the database's L40S and RTX PRO 6000 rows reach up to
    2.8x the HBM bandwidth that way).  A row is kept when its working set exceeds the
    cache, or when streaming that working set from HBM would take at most
    :data:`CACHE_BOUND_SHARE` of its measured time -- a small kernel whose time is
    fixed work, not memory traffic (B200's absorbed-MLA decode at batch 1: 0.9 MB of
    KV, 0.1 us of HBM time, 9-13 us measured).  Dropping those too would leave small
    shapes to the grid's continuation from large ones.  The launch floor is taken from
    every row (the returned rows carry the table's fastest time as
    :attr:`Observations.fastest`).
    """
    ws = working_set(obs)
    if ws is None or gpu.l2_mb <= 0:
        return obs
    if not obs.fastest and len(obs):
        obs = dataclasses.replace(obs, fastest=float(obs.latency.min()))
    fixed = ws / ops.hbm(gpu) <= CACHE_BOUND_SHARE * obs.latency
    return obs.take((ws > gpu.l2_mb * 1e6) | fixed)


def roofline_times(obs: Observations, gpu: GPU) -> np.ndarray | None:
    """The roofline time of every row on ``gpu`` (None for communication ops)."""
    c = obs.cols
    bw = ops.hbm(gpu)
    if obs.op == "gemm":
        return ops.roofline(*ops.gemm_work(c["m"], c["n"], c["k"], obs.kind),
                            ops.peak_flops(gpu, obs.kind), bw)
    if obs.op == "moe":
        return ops.roofline(*ops.moe_work(c["tokens"], c["hidden"], c["inter"], c["topk"],
                                          c["experts"], c["ep"], obs.kind, balanced=True),
                            ops.peak_flops(gpu, obs.kind), bw)
    if obs.op == "decode_attention":
        return ops.roofline(*ops.decode_attention_work(c["batch"], c["context"], c["heads"],
                                                       c["kv_heads"], c["head_dim"],
                                                       obs.kind),
                            ops.peak_flops(gpu, "bf16"), bw)
    if obs.op == "mla_decode":
        return ops.roofline(*ops.mla_decode_work(c["batch"], c["context"], c["heads"],
                                                 obs.kind), ops.peak_flops(gpu, "bf16"), bw)
    return None


def physical(obs: Observations, gpu: GPU) -> Observations:
    """The rows no faster than the GPU's datasheet allows.

    A measurement below its roofline time moved fewer bytes or did less arithmetic than
    the op requires -- a benchmark artefact (the database's A100 TRT-LLM decode-attention
    table implies 3.2 TB/s on a 2.0 TB/s part).  Such rows are dropped; a table that
    loses most of its rows is dropped whole and the op falls back to another engine's.
    """
    t_roof = roofline_times(obs, gpu)
    if t_roof is None:
        return obs
    return obs.take(obs.latency >= t_roof)


# ------------------------------------------------------------------------ fit / predict
def fit_observations(obs: Observations, gpu: GPU):
    """Fit the model of ``obs`` with ``gpu``'s datasheet as the roofline reference (and
    its SM count, for the transfer of :meth:`EfficiencyModel.time_on`)."""
    model = _fit(obs, gpu)
    return model.with_sms(gpu.sms) if isinstance(model, EfficiencyModel) else model


def _fit(obs: Observations, gpu: GPU):
    c = obs.cols
    bw = ops.hbm(gpu)
    f = obs.fastest or None
    if obs.op == "gemm":
        return fit.fit_gemm(c["m"], c["n"], c["k"], obs.latency, obs.kind,
                            ops.peak_flops(gpu, obs.kind), bw, f)
    if obs.op == "moe":
        return fit.fit_moe(c["tokens"], c["hidden"], c["inter"], c["topk"], c["experts"],
                           c["ep"], obs.latency, obs.kind, ops.peak_flops(gpu, obs.kind), bw, f)
    if obs.op == "moe_imbalance":
        return fit.fit_imbalance(c["tokens_per_expert"], c["ep"], obs.latency)
    if obs.op == "context_attention":
        return fit.fit_context_attention(c["batch"], c["seq"], c["heads"], c["kv_heads"],
                                         c["head_dim"], obs.latency, obs.kind,
                                         _attention_peak(gpu, obs.kind), bw, f)
    if obs.op == "mla_context":
        return fit.fit_mla_context(c["batch"], c["seq"], c["heads"], obs.latency,
                                   ops.peak_flops(gpu, "bf16"), bw, f)
    if obs.op == "decode_attention":
        return fit.fit_decode_attention(c["batch"], c["context"], c["heads"], c["kv_heads"],
                                        c["head_dim"], obs.latency, obs.kind,
                                        ops.peak_flops(gpu, "bf16"), bw, f)
    if obs.op == "mla_decode":
        return fit.fit_mla_decode(c["batch"], c["context"], c["heads"], obs.latency, obs.kind,
                                  ops.peak_flops(gpu, "bf16"), bw, f)
    if obs.op == "allreduce":
        return fit.fit_curve(c["bytes"], obs.latency)
    if obs.op == "alltoall":
        return fit.fit_alltoall(c["bytes"], obs.latency, gpu.scaleup_gbps * 1e9)
    raise ValueError(f"unknown op {obs.op}")


def _attention_peak(gpu: GPU, kind: str) -> float:
    return ops.peak_flops(gpu, "fp8" if kind == "fp8" else "bf16")


def predict(obs: Observations, model, gpu: GPU, fitted_on: GPU | None = None) -> np.ndarray:
    """Seconds the model gives for ``obs``'s shapes on ``gpu`` (``fitted_on``: the GPU
    whose links the model was fitted on, for communication transfer)."""
    c = obs.cols
    bw = ops.hbm(gpu)
    if obs.op == "gemm":
        return timing.gemm_time(model, c["m"], c["n"], c["k"], obs.kind,
                                ops.peak_flops(gpu, obs.kind), bw, sms=gpu.sms)
    if obs.op == "moe":
        return timing.moe_time(model, c["tokens"], c["hidden"], c["inter"], c["topk"],
                               c["experts"], c["ep"], obs.kind, ops.peak_flops(gpu, obs.kind),
                               bw, balanced=True, sms=gpu.sms)
    if obs.op == "moe_imbalance":
        return timing.imbalance(model, c["tokens_per_expert"], c["ep"])
    if obs.op == "context_attention":
        s = c["seq"]
        return timing.context_attention_time(model, c["batch"], s, 0.5 * s * (s + 1.0), s,
                                             c["heads"], c["kv_heads"], c["head_dim"],
                                             obs.kind, _attention_peak(gpu, obs.kind), bw,
                                             sms=gpu.sms)
    if obs.op == "mla_context":
        s = c["seq"]
        return timing.mla_context_time(model, c["batch"], s, 0.5 * s * (s + 1.0), s,
                                       c["heads"], ops.peak_flops(gpu, "bf16"), bw,
                                       sms=gpu.sms)
    if obs.op == "decode_attention":
        return timing.decode_attention_time(model, c["batch"], c["context"], c["heads"],
                                            c["kv_heads"], c["head_dim"], obs.kind,
                                            ops.peak_flops(gpu, "bf16"), bw, sms=gpu.sms)
    if obs.op == "mla_decode":
        return timing.mla_decode_time(model, c["batch"], c["context"], c["heads"], obs.kind,
                                      ops.peak_flops(gpu, "bf16"), bw, sms=gpu.sms)
    if obs.op == "allreduce":
        scale = 1.0 if fitted_on is None else fitted_on.scaleup_gbps / gpu.scaleup_gbps
        return timing.allreduce_time({int(obs.kind): model}, c["bytes"], int(obs.kind), scale)
    if obs.op == "alltoall":
        return timing.alltoall_time(model, c["bytes"], gpu.scaleup_gbps * 1e9)
    raise ValueError(f"unknown op {obs.op}")
