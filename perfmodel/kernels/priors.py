"""Per-op kernel priors for a vendor the measured database does not cover (issue 29).

The kernel database measures NVIDIA GPUs (and one Intel part).  A GPU without measured
kernels borrows the fitted efficiencies of the nearest measured architecture *of its own
vendor* (:mod:`perfmodel.kernels.transfer`); where its vendor has none -- AMD today -- an
NVIDIA part's fits would describe CUDA kernels on CDNA peaks, which nothing validates.
Such a GPU is priced instead from the vendor's priors, ``perfmodel/data/kernels/
priors_<vendor>.yaml``: the roofline shape of :mod:`perfmodel.kernels.roofline_set`
(``t = floor + max(C / eta_c, M / eta_m)``, C = F / P and M = B / W the op's ideal compute
and memory times on the GPU's datasheet), with every parameter computed here from a
published kernel-level figure the file quotes:

* **GEMM** -- ``eta_c`` = the vendor's max-achievable FLOPs (MAF) over the datasheet peak,
  at the shape the MAF was measured on, times the *fill* of the shape priced: output
  tiles (the library's best of a few tile sizes) over whole waves of the GPU's compute
  units, with split-K filling a grid of fewer tiles than units (``_gemm_fill``);
  ``eta_m`` = a streaming copy's bandwidth over the datasheet's; ``floor`` = the
  smallest published LLM GEMM less its weight traffic at that bandwidth;
* **prefill attention** -- ``eta_c`` from a published FlashAttention forward TFLOPS,
  the fill of its 128-row query tiles over the units;
* **decode attention** (GQA and MLA) -- memory-bound at ``eta_m``, over the workgroups
  the kernel launches (sequence x 256-token partition x KV head) when they are fewer
  than the units, and two kernels' floor (attention and reduce);
* **MoE** -- the GEMM efficiencies, each expert's tokens padded to the fused-MoE row
  block, three kernels' floor;
* **all-reduce** -- the published bus-bandwidth curve of a full server, with smaller
  groups on a fully connected mesh running over their share of the links;
* **expert all-to-all** -- ``t0`` and link efficiency fitted to a published dispatch
  bandwidth curve.

None of the serving rows (``perfmodel/data/posed``, ``validation_cases.yaml``) sets or
checks a prior.  :func:`validation_table` predicts the published figures the file lists
under ``validation`` -- figures no prior was set from -- with the priors.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache, lru_cache
from importlib import resources
from typing import Any

import numpy as np
import yaml

from perfmodel.hardware import GPU, get_gpu
from perfmodel.kernels import ops
from perfmodel.kernels.models import AllToAllModel, CurveModel

PRIOR_FILE = "data/kernels/priors_{vendor}.yaml"


def _fill(units, work):
    """Share of ``units`` busy over the waves ``work`` equal pieces take (1 when the
    pieces fill every wave)."""
    work = np.maximum(np.asarray(work, float), 1.0)
    return work / (np.ceil(work / units) * units)


# ----------------------------------------------------------------------------- models
@dataclass(frozen=True)
class RooflinePrior:
    """``t = floor + max(C / (eta_c fill_c), M / (eta_m fill_m))`` -- the shape of
    :class:`~perfmodel.kernels.roofline_set.RooflineKernels`, with the efficiencies of
    the vendor's published kernels; evaluated like a fitted
    :class:`~perfmodel.kernels.models.EfficiencyModel` (same ``time_on`` signature, so
    :mod:`perfmodel.kernels.timing` calls either).  ``units``: the GPU's compute units,
    used when the caller passes none."""

    floor_s: float
    compute_eff: float
    memory_eff: float
    units: float = 0.0

    def fills(self, coords, units: float):
        """(compute fill, memory fill) of the op at ``coords`` on ``units`` units."""
        return 1.0, 1.0

    def time_on(self, flops, nbytes, peak: float, bandwidth: float, *coords,
                sms: float = 0.0):
        units = float(sms) if sms and sms > 0 else self.units
        fc, fm = self.fills(coords, units) if units > 0 else (1.0, 1.0)
        c = np.asarray(flops, float) / (peak * self.compute_eff * fc)
        m = np.asarray(nbytes, float) / (bandwidth * self.memory_eff * fm)
        return self.floor_s + np.maximum(c, m)


@dataclass(frozen=True)
class GemmPrior(RooflinePrior):
    """A GEMM (coords log2 m, n, k): compute fill of the best tile (``_gemm_fill``)."""

    tile_rows: tuple[int, ...] = (128,)
    tile_cols: tuple[int, ...] = (128,)
    min_k_chunk: int = 256

    def fills(self, coords, units):
        m, n, k = (2.0 ** np.asarray(c, float) for c in coords[:3])
        return _gemm_fill(m, n, k, units, self.tile_rows, self.tile_cols,
                          self.min_k_chunk), 1.0


def _gemm_fill(m, n, k, units, rows, cols, min_k_chunk):
    """Useful share of the MFMA work a GEMM library schedules for ``m x n x k``: over the
    tile sizes it picks from, the best of (output area / tile area padded) x (tiles /
    waves of ``units``); a grid with fewer tiles than units is split along K (at most
    k / ``min_k_chunk`` ways) to fill them.  Row tiles under 128 (less operand reuse per
    MFMA) are skinny-GEMM tiles, taken only when they hold all ``m`` rows."""
    m, n, k = np.broadcast_arrays(*(np.maximum(np.asarray(v, float), 1.0) for v in (m, n, k)))
    best = np.zeros(m.shape)
    for tm in rows:
        usable = (tm >= 128) | (m <= tm)
        for tn in cols:
            tiles = np.ceil(m / tm) * np.ceil(n / tn)
            pad = m * n / (tiles * tm * tn)
            splits = np.clip(np.floor(units / tiles), 1.0, np.maximum(k // min_k_chunk, 1.0))
            occ = np.where(tiles >= units, _fill(units, tiles),
                           np.minimum(tiles * splits / units, 1.0))
            best = np.where(usable, np.maximum(best, pad * occ), best)
    return best


@dataclass(frozen=True)
class AttentionPrior(RooflinePrior):
    """Prefill attention (coords log2 sequence, sequences x heads[, head dim]): compute
    fill of ``q_tile``-row query tiles, one workgroup each."""

    q_tile: int = 128

    def fills(self, coords, units):
        seq = 2.0 ** np.asarray(coords[0], float)
        bh = 2.0 ** np.asarray(coords[1], float)
        tiles = np.ceil(seq / self.q_tile) * bh
        pad = seq / (np.ceil(seq / self.q_tile) * self.q_tile)
        return pad * _fill(units, tiles), 1.0


@dataclass(frozen=True)
class DecodePrior(RooflinePrior):
    """Decode attention (coords log2 parallel width, context, ...): the kernel runs one
    workgroup per width unit and ``partition``-token slice of the context; fewer
    workgroups than units leave the rest idle (both terms)."""

    partition: int = 256

    def fills(self, coords, units):
        width = 2.0 ** np.asarray(coords[0], float)
        ctx = 2.0 ** np.asarray(coords[1], float)
        groups = width * np.ceil(ctx / self.partition)
        f = np.minimum(groups / units, 1.0)
        return f, f


@dataclass(frozen=True)
class MoEPrior(RooflinePrior):
    """A MoE layer's grouped GEMMs (coords log2 tokens per expert, ...): each expert that
    receives tokens runs whole ``block_m``-row blocks (compute padded accordingly)."""

    block_m: int = 32

    def fills(self, coords, units):
        per_expert = 2.0 ** np.asarray(coords[0], float)  # mean tokens per expert
        touched = -np.expm1(-per_expert)                  # share of experts with a token
        rows = per_expert / np.maximum(touched, 1e-12)    # tokens per touched expert
        padded = touched * np.ceil(np.maximum(rows, 1.0) / self.block_m) * self.block_m
        return per_expert / np.maximum(padded, 1e-12), 1.0


# ----------------------------------------------------------------------------- tables
@dataclass(frozen=True)
class PriorTables:
    """The prior models of one GPU, by the op keys of :mod:`perfmodel.kernels.store`."""

    vendor: str
    file: str            # "priors_amd.yaml"
    label: str           # "AMD priors (priors_amd.yaml)"
    link_gbps: float     # scale-up link (GB/s) of the system the comm figures measured
    models: Mapping[str, Any] = field(default_factory=dict)

    def get(self, key: str):
        return self.models.get(key)


@cache
def load_doc(vendor: str) -> dict | None:
    """The parsed priors file of ``vendor``, or None if it ships none."""
    path = resources.files("perfmodel").joinpath(PRIOR_FILE.format(vendor=vendor))
    if not path.is_file():
        return None
    return yaml.safe_load(path.read_text())


def has_priors(vendor: str) -> bool:
    return load_doc(vendor) is not None


def prior_file(vendor: str) -> str:
    return PRIOR_FILE.format(vendor=vendor).rsplit("/", 1)[-1]


def prior_label(vendor: str) -> str:
    return f"{vendor.upper()} priors ({prior_file(vendor)})"


def _maf_gpu(inp: Mapping[str, Any], gpu: GPU) -> str:
    table = inp["tflops"]
    return gpu.name if gpu.name in table else str(inp["default"])


def derived(vendor: str, gpu: GPU) -> dict[str, Any]:
    """The parameters of ``gpu``'s priors, each computed from its published input (the
    numbers docs/perfmodel.md tabulates)."""
    doc = load_doc(vendor)
    if doc is None:
        raise LookupError(f"no kernel priors for vendor {vendor!r}")
    inp = doc["inputs"]
    units = float(gpu.sms)
    rows = tuple(int(r) for r in doc["gemm_tile_rows"])
    cols = tuple(int(c) for c in doc["gemm_tile_cols"])
    kchunk = int(doc["gemm_min_k_chunk"])
    s = inp["hbm_stream"]
    hbm_eff = float(s["gbps"]) / float(s["datasheet_gbps"])
    # GEMM compute efficiency at the MAF shape, whose fill the efficiency is divided by
    maf = inp["gemm_maf"]
    ref = get_gpu(_maf_gpu(maf, gpu))
    gemm_eff = {}
    for kind, tflops in maf["tflops"][ref.name].items():
        n = int(maf["fp8_n"]) if kind == "fp8" else int(maf["shape"]["n"])
        fill = float(_gemm_fill(maf["shape"]["m"], n, maf["shape"]["k"], float(ref.sms),
                                rows, cols, kchunk))
        gemm_eff[kind] = float(tflops) / (ref.tflops("fp8" if kind == "fp8" else "bf16")
                                          * fill)
    # kernel floor: the smallest published GEMM less its weight traffic
    fl = inp["gemm_floor"]
    ref_floor = get_gpu(str(maf["default"]))
    _, nbytes = ops.gemm_work(fl["m"], fl["n"], fl["k"], fl["kind"])
    floor = float(fl["us"]) * 1e-6 - float(nbytes) / (ref_floor.hbm_gbps * 1e9 * hbm_eff)
    # prefill attention efficiency at the published shape, over its fill
    at = inp["attention"]
    bh = float(at["batch"] * at["heads"])
    tiles = math.ceil(at["seq"] / at["q_tile_rows"]) * bh
    afill = float(_fill(float(ref_floor.sms), tiles))
    attn_eff = float(at["tflops"]) / (ref_floor.tflops("bf16") * afill)
    # all-to-all: t0 and link efficiency fitted to the dispatch curve
    a2a = inp["alltoall"]
    t0, a2a_eff = _fit_alltoall(a2a)
    return {"units": units, "hbm_eff": hbm_eff, "gemm_eff": gemm_eff, "floor_s": floor,
            "attention_eff": attn_eff, "alltoall_t0_s": t0, "alltoall_eff": a2a_eff,
            "maf_gpu": ref.name}


def alltoall_bytes(tokens, a2a: Mapping[str, Any]):
    """Bytes a MORI dispatch bandwidth counts for ``tokens`` tokens: every distinct
    destination GPU of a token once (priors_amd.yaml, inputs.alltoall)."""
    gpus, topk = float(a2a["gpus"]), float(a2a["topk"])
    copies = gpus * (1.0 - (1.0 - 1.0 / gpus) ** topk)
    return np.asarray(tokens, float) * copies * float(a2a["hidden"]) * 2.0


def _fit_alltoall(a2a: Mapping[str, Any]) -> tuple[float, float]:
    from scipy.optimize import least_squares

    tokens, gbps = np.asarray(a2a["dispatch_gbps"], float).T
    nbytes = alltoall_bytes(tokens, a2a)
    t = nbytes / (gbps * 1e9)
    link = float(a2a["link_gbps"]) * 1e9

    def resid(p):
        t0, eff = np.exp(p)
        return np.log(t0 + nbytes / (link * eff)) - np.log(t)

    sol = least_squares(resid, np.log([t.min(), 0.5]))
    t0, eff = np.exp(sol.x)
    return float(t0), float(eff)


def _allreduce_curves(doc: Mapping[str, Any]) -> dict[int, CurveModel]:
    """The measured curve at its GPU count, and for fewer GPUs the same floor with the
    bandwidth term stretched by the links the group loses and the ring factor."""
    ar = doc["inputs"]["allreduce"]
    nbytes, us = np.asarray(ar["curve"], float).T
    t = np.maximum.accumulate(us * 1e-6)
    floor = t[0]
    n0, links = int(ar["gpus"]), float(ar["links"])
    curves = {n0: CurveModel(np.log2(nbytes), np.log(t))}
    for n in (2, 4):
        if n >= n0:
            continue
        ring = (2.0 * (n - 1) / n) / (2.0 * (n0 - 1) / n0)
        tn = floor + (t - floor) * ring * links / (n - 1)
        curves[n] = CurveModel(np.log2(nbytes), np.log(tn))
    return curves


@lru_cache(maxsize=64)
def _tables(vendor: str, gpu: GPU) -> PriorTables | None:
    doc = load_doc(vendor)
    if doc is None:
        return None
    p = derived(vendor, gpu)
    inp = doc["inputs"]
    hbm, floor, units = p["hbm_eff"], p["floor_s"], p["units"]
    rows = tuple(int(r) for r in doc["gemm_tile_rows"])
    cols = tuple(int(c) for c in doc["gemm_tile_cols"])
    kchunk = int(doc["gemm_min_k_chunk"])
    models: dict[str, Any] = {}
    geff = p["gemm_eff"]
    kinds = [("bf16", geff["bf16"]), ("fp8", geff["fp8"]), ("fp8_block", geff["fp8"])]
    if gpu.fp4_tflops > 0:
        # MXFP4 (CDNA 4): no published FP4 MAF -- the FP8 MAF efficiency on the FP4 peak
        # (the same matrix cores at twice the rate per clock; an assumption, in
        # docs/perfmodel.md "AMD kernel priors")
        kinds.append(("fp4", geff["fp8"]))
    for kind, eff in kinds:
        models[f"gemm:{kind}"] = GemmPrior(floor, eff, hbm, units, rows, cols, kchunk)
        models[f"moe:{kind}"] = MoEPrior(floor * int(inp["moe"]["kernels"]), eff, hbm, units,
                                         int(inp["moe"]["block_m"]))
    q_tile = int(inp["attention"]["q_tile_rows"])
    dec = inp["decode_attention"]
    for kind in ("bf16", "bf16_kvfp8"):
        models[f"context_attention:{kind}"] = AttentionPrior(floor, p["attention_eff"], hbm,
                                                             units, q_tile)
    for kind in ("bf16", "fp8"):
        models[f"mla_context:{kind}"] = AttentionPrior(floor, p["attention_eff"], hbm, units,
                                                       q_tile)
        models[f"decode_attention:{kind}"] = DecodePrior(
            floor * int(dec["kernels"]), p["attention_eff"], hbm, units,
            int(dec["partition"]))
        models[f"mla_decode:{kind}"] = DecodePrior(
            floor * int(dec["kernels"]), p["attention_eff"], hbm, units,
            int(dec["partition"]))
    for n, curve in _allreduce_curves(doc).items():
        models[f"allreduce:{n}"] = curve
    link = float(inp["alltoall"]["link_gbps"]) * 1e9
    for mode in ("ll", "normal"):
        for phase in ("dispatch", "combine"):
            models[f"alltoall:{mode}:{phase}"] = AllToAllModel(p["alltoall_t0_s"],
                                                               p["alltoall_eff"], link)
    return PriorTables(vendor, prior_file(vendor), prior_label(vendor),
                       float(inp["allreduce"]["link_gbps"]), models)


def priors_for(gpu: GPU) -> PriorTables | None:
    """``gpu``'s prior tables (None when its vendor ships no priors file)."""
    from perfmodel.launch import gpu_vendor

    return _tables(gpu_vendor(gpu), gpu)


# ----------------------------------------------------------------------------- checks
def _source_text(doc: Mapping[str, Any], key: str) -> str:
    s = doc["sources"][key]
    return f"{s['title']} ({s['date']}) {s['url']}"


def validation_table(vendor: str = "amd") -> list[dict[str, Any]]:
    """Each published figure of the file's ``validation`` list, predicted with the
    priors: ``published``, ``predicted`` (same unit) and ``error`` (predicted /
    published - 1)."""
    from perfmodel.kernels import timing

    doc = load_doc(vendor)
    if doc is None:
        return []
    out = []
    for row in doc["validation"]:
        gpu = get_gpu(row["gpu"])
        tables = _tables(vendor, gpu)
        assert tables is not None
        pred = _predict(row, gpu, tables, doc, timing)
        out.append({**row, "predicted": round(pred, 4),
                    "error": round(pred / float(row["published"]) - 1.0, 4),
                    "source_text": _source_text(doc, row["source"])})
    return out


def _predict(row, gpu: GPU, tables: PriorTables, doc, timing) -> float:
    op = row["op"]
    bw = ops.hbm(gpu)
    if op == "hbm":
        return derived(tables.vendor, gpu)["hbm_eff"] * gpu.hbm_gbps / 1e3
    if op == "gemm":
        kind = row["kind"]
        t = float(np.ravel(timing.gemm_time(tables.get(f"gemm:{kind}"), row["m"], row["n"],
                                            row["k"], kind, ops.peak_flops(gpu, kind), bw,
                                            sms=gpu.sms))[0])
        if row["unit"] == "us":
            return t * 1e6
        return 2.0 * row["m"] * row["n"] * row["k"] / t / 1e12
    if op == "attention":
        b, s, h, d = row["batch"], row["seq"], row["heads"], row["head_dim"]
        pairs = float(s) * s  # non-causal: every query sees every key
        t = float(np.ravel(timing.context_attention_time(
            tables.get("context_attention:bf16"), b, s, pairs, s, h, h, d, "bf16",
            ops.peak_flops(gpu, "bf16"), bw, sms=gpu.sms))[0])
        return 4.0 * b * s * s * h * d / t / 1e12
    if op == "allreduce":
        n, nbytes = int(row["gpus"]), float(row["bytes"])
        curves = {k: v for k, v in ((int(key.split(":")[1]), m) for key, m in
                                    tables.models.items() if key.startswith("allreduce:"))}
        t = float(np.ravel(timing.allreduce_time(curves, nbytes, n))[0])
        return nbytes / t * 2.0 * (n - 1) / n / 1e9
    if op == "alltoall":
        a2a = doc["inputs"]["alltoall"]
        nbytes = float(alltoall_bytes(row["tokens"], a2a))
        model = tables.get(f"alltoall:normal:{row['phase']}")
        t = float(timing.alltoall_time(model, nbytes, float(a2a["link_gbps"]) * 1e9))
        return nbytes / t / 1e9
    raise ValueError(f"unknown validation op {op!r}")


def derivation_table(vendor: str = "amd", gpu: str = "MI300X") -> list[dict[str, Any]]:
    """The priors of ``gpu`` with the figure each was computed from (docs table)."""
    doc = load_doc(vendor)
    if doc is None:
        return []
    g = get_gpu(gpu)
    p = derived(vendor, g)
    inp = doc["inputs"]
    maf = inp["gemm_maf"]
    return [
        {"op": "GEMM, compute-bound (bf16)", "value": f"eta_c {p['gemm_eff']['bf16']:.3f}",
         "from": f"MAF {maf['tflops'][p['maf_gpu']]['bf16']} TFLOPS BF16 ({p['maf_gpu']})",
         "source": "maf"},
        {"op": "GEMM, compute-bound (fp8)", "value": f"eta_c {p['gemm_eff']['fp8']:.3f}",
         "from": f"MAF {maf['tflops'][p['maf_gpu']]['fp8']} TFLOPS FP8 ({p['maf_gpu']})",
         "source": "maf"},
        {"op": "every op, memory-bound", "value": f"eta_m {p['hbm_eff']:.3f}",
         "from": f"{inp['hbm_stream']['gbps']} GB/s copy of {inp['hbm_stream']['datasheet_gbps']}",
         "source": "stream"},
        {"op": "kernel floor (GEMM; x2 decode attention, x3 MoE)",
         "value": f"{p['floor_s'] * 1e6:.2f} us",
         "from": f"{inp['gemm_floor']['us']} us FP8 GEMM m=1 n=1280 k=8192",
         "source": "aiter1092"},
        {"op": "prefill attention, compute-bound", "value": f"eta_c {p['attention_eff']:.3f}",
         "from": f"{inp['attention']['tflops']} TFLOPS FA2 fwd hd128 s16384",
         "source": "fa142"},
        {"op": "all-reduce", "value": "RCCL curve (8 GPUs); 2, 4 GPUs over 1, 3 of 7 links",
         "from": "rccl-tests all_reduce_perf, graph mode", "source": "rccl"},
        {"op": "expert all-to-all", "value": f"t0 {p['alltoall_t0_s'] * 1e6:.1f} us, "
                                             f"eff {p['alltoall_eff']:.3f} of 448 GB/s",
         "from": "MORI EP8 bf16 dispatch curve, 64-4096 tokens", "source": "mori538"},
    ]


def docs_tables(vendor: str = "amd") -> str:
    """The two markdown tables of docs/perfmodel.md ("AMD kernel priors"): the priors
    with the figure each was set from, and the published figures they predict."""
    doc = load_doc(vendor)
    if doc is None:
        return ""
    src = doc["sources"]
    lines = ["| op | prior (MI300X) | set from | source |", "|---|---|---|---|"]
    for r in derivation_table(vendor):
        s = src[r["source"]]
        lines.append(f"| {r['op']} | {r['value']} | {r['from']} | [{r['source']}]({s['url']}) "
                     f"({s['date']}) |")
    lines += ["", "| op | GPU | shape | published | prior | error | source |",
              "|---|---|---|---|---|---|---|"]
    for r in validation_table(vendor):
        shape = ", ".join(f"{k} {r[k]}" for k in ("kind", "m", "n", "k", "batch", "seq",
                                                   "phase", "tokens", "gpus", "bytes",
                                                   "what") if k in r)
        s = src[r["source"]]
        lines.append(f"| {r['op']} | {r['gpu']} | {shape} | {r['published']:g} {r['unit']} "
                     f"| {r['predicted']:.4g} | {r['error'] * 100:+.1f} % | "
                     f"[{r['source']}]({s['url']}) |")
    return "\n".join(lines)
