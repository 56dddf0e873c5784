"""Issue 29, item 2: vendor-aware kernel transfer.

A GPU without measured kernels takes the nearest measured architecture of its own
vendor; a vendor with none (AMD) is priced from priors derived from its published
kernel figures (perfmodel/data/kernels/priors_amd.yaml), each checked against the figure
it came from and against published figures not used to set it."""

from __future__ import annotations

import numpy as np
import pytest

from perfmodel.hardware import get_gpu, gpu_catalog, gpu_from_datasheet
from perfmodel.kernels import ops, timing
from perfmodel.kernels.library import PRIOR, KernelSet
from perfmodel.kernels.priors import (
    alltoall_bytes,
    derived,
    load_doc,
    priors_for,
    validation_table,
)
from perfmodel.kernels.store import measured_systems
from perfmodel.kernels.transfer import compute_source, provenance, system_gpu
from perfmodel.launch import gpu_vendor

DATASHEET = {"fp16_tflops": 1000, "fp8_tflops": 2000, "hbm_gb": 128, "hbm_gbps": 4000,
             "scaleup_gbps": 400, "scaleout_gbps": 50, "gpus_per_domain": 8, "sms": 200,
             "comm_sms": 16}


# ----------------------------------------------------------------------------- the rule
def test_the_rule_picks_a_measured_gpu_of_the_same_vendor_when_one_exists():
    # an Intel part the catalog lacks: the measured Intel B60, not a nearer NVIDIA ridge
    xe = gpu_from_datasheet({"name": "Xe-X", "arch": "xe2", **DATASHEET})
    p = provenance(xe)
    assert p.rule == "transfer" and p.compute_from == "Arc-Pro-B60"
    assert p.compute_vendor == "intel" and not p.cross_vendor
    # every NVIDIA part without measurements transfers from an NVIDIA part
    systems = measured_systems()
    for name, g in gpu_catalog().items():
        if g.kernel_system in systems or gpu_vendor(g) == "amd":
            continue
        src = compute_source(g, [s for s in systems if s != g.kernel_system])
        assert src and gpu_vendor(system_gpu(src)) == gpu_vendor(g), name
    assert provenance(get_gpu("H20")).compute_from == "H200"


def test_amd_gpus_use_the_amd_priors_for_every_kernel():
    for name in ("MI300X", "MI325X"):
        ks = KernelSet(get_gpu(name), "vllm")
        for key in ("gemm:bf16", "gemm:fp8", "gemm:fp8_block", "moe:fp8_block",
                    "context_attention:bf16", "decode_attention:bf16", "mla_context:bf16",
                    "mla_decode:bf16", "allreduce:2", "alltoall:normal:dispatch",
                    "alltoall:ll:combine"):
            model, system, _ = ks.resolve(key)
            assert model is not None and system == PRIOR, (name, key)
            assert ks.sources[key]["rule"] == "vendor prior"
        # an op the priors do not price is absent, never another vendor's measurement
        assert ks.resolve("context_attention:fp8")[0] is None
        assert ks.resolve("gemm:fp4")[0] is None
        # routing skew is a property of routing: the one op taken from measured GPUs
        assert ks.describe("moe_imbalance")["rule"] == "vendor-neutral transfer"
    # an AMD part defined from its datasheet takes the same priors
    amd = gpu_from_datasheet({"name": "MI3XX", "arch": "cdna3", **DATASHEET})
    assert provenance(amd).rule == "vendor prior"
    assert KernelSet(amd, "sglang").resolve("gemm:bf16")[1] == PRIOR


def test_without_priors_an_amd_gpu_falls_back_across_vendors_and_is_labelled(monkeypatch):
    from perfmodel.kernels import library

    monkeypatch.setattr(library, "priors_for", lambda gpu: None)
    ks = KernelSet(get_gpu("MI300X"), "vllm")
    _, system, _ = ks.resolve("gemm:bf16")
    assert gpu_vendor(system_gpu(system)) == "nvidia"
    assert ks.sources["gemm:bf16"]["rule"] == "cross-vendor transfer"


def test_mi325x_takes_its_own_max_achievable_flops():
    mi300x, mi325x = derived("amd", get_gpu("MI300X")), derived("amd", get_gpu("MI325X"))
    assert mi300x["maf_gpu"] == "MI300X" and mi325x["maf_gpu"] == "MI325X"
    assert mi325x["gemm_eff"]["bf16"] > mi300x["gemm_eff"]["bf16"]
    assert mi300x["hbm_eff"] == pytest.approx(4017 / 5300)


# ----------------------------------------------------------------------------- sources
def _gemm_tflops(gpu, kind, m, n, k):
    t = priors_for(gpu).get(f"gemm:{kind}")
    sec = float(np.ravel(timing.gemm_time(t, m, n, k, kind, ops.peak_flops(gpu, kind),
                                          ops.hbm(gpu), sms=gpu.sms))[0])
    return 2.0 * m * n * k / sec / 1e12, sec


def test_each_prior_reproduces_the_figure_it_was_set_from():
    doc = load_doc("amd")
    inp = doc["inputs"]
    mi300x, mi325x = get_gpu("MI300X"), get_gpu("MI325X")
    # MAF at the MAF shapes (less the 8 us floor: 1 % of the 0.8 ms FP8 GEMM)
    maf = inp["gemm_maf"]
    for gpu in (mi300x, mi325x):
        for kind, n in (("bf16", maf["shape"]["n"]), ("fp8", maf["fp8_n"])):
            tflops, _ = _gemm_tflops(gpu, kind, maf["shape"]["m"], n, maf["shape"]["k"])
            assert tflops == pytest.approx(maf["tflops"][gpu.name][kind], rel=0.015)
    # the floor's GEMM
    fl = inp["gemm_floor"]
    _, sec = _gemm_tflops(mi300x, fl["kind"], fl["m"], fl["n"], fl["k"])
    assert sec * 1e6 == pytest.approx(fl["us"], rel=1e-3)
    # the attention figure
    at = inp["attention"]
    b, s, h, d = at["batch"], at["seq"], at["heads"], at["head_dim"]
    sec = float(np.ravel(timing.context_attention_time(
        priors_for(mi300x).get("context_attention:bf16"), b, s, float(s) * s, s, h, h, d,
        "bf16", ops.peak_flops(mi300x, "bf16"), ops.hbm(mi300x), sms=mi300x.sms))[0])
    assert 4.0 * b * s * s * h * d / sec / 1e12 == pytest.approx(at["tflops"], rel=0.01)
    # the RCCL curve at its own points, 8 GPUs
    curves = {int(k.split(":")[1]): m for k, m in priors_for(mi300x).models.items()
              if k.startswith("allreduce:")}
    for nbytes, us in inp["allreduce"]["curve"][4:]:
        assert float(timing.allreduce_time(curves, nbytes, 8)) * 1e6 == pytest.approx(
            us, rel=0.01)
    # the dispatch curve the all-to-all was fitted to
    a2a = inp["alltoall"]
    model = priors_for(mi300x).get("alltoall:normal:dispatch")
    for tokens, gbps in a2a["dispatch_gbps"]:
        nbytes = float(alltoall_bytes(tokens, a2a))
        t = float(timing.alltoall_time(model, nbytes, a2a["link_gbps"] * 1e9))
        assert nbytes / t / 1e9 == pytest.approx(gbps, rel=0.03)


def test_smaller_allreduce_groups_run_over_their_share_of_the_xgmi_mesh():
    gpu = get_gpu("MI300X")
    curves = {int(k.split(":")[1]): m for k, m in priors_for(gpu).models.items()
              if k.startswith("allreduce:")}
    big = 4 * 2 ** 30
    bus = {n: big * 2 * (n - 1) / n / float(timing.allreduce_time(curves, big, n)) / 1e9
           for n in (2, 4, 8)}
    # one, three and seven xGMI links: the RCCL blog's 45-48 GB/s per link
    assert 44 < bus[2] < 48 and 3 * 44 < bus[4] < 3 * 48 and 7 * 44 < bus[8] < 7 * 48


# ----------------------------------------------------------------------------- checks
#: (op, source) of the published figures each prior is checked against -- none set any
#: prior -- and the largest |predicted / published - 1| the test accepts.
SECOND_FIGURES = {
    ("hbm", "azure"): 0.05,            # BabelStream copy, ND MI300X v5
    ("gemm", "azure"): 0.10,           # FP8 GEMM 4096^3 and 8192^3, ND MI300X v5
    ("gemm", "hk325"): 0.15,           # hipBLASLt BF16 on an MI325X (16384^3: +12 %)
    ("gemm", "skinny12329"): 0.12,     # hipBLASLt M = 1 on an MI300X
    ("attention", "azure"): 0.10,      # FlashAttention-2 fwd, ND MI300X v5
    ("attention", "fa142"): 0.20,      # the same issue's other batch sizes
    ("allreduce", "azure"): 0.02,      # RCCL all-reduce 8 GB bus bandwidth
    ("alltoall", "mori538"): 0.25,     # MORI combine, priced with the dispatch prior
}


def test_priors_predict_published_figures_they_were_not_set_from():
    rows = validation_table("amd")
    assert {(r["op"], r["source"]) for r in rows} >= set(SECOND_FIGURES)
    for r in rows:
        tol = SECOND_FIGURES.get((r["op"], r["source"]))
        if r["source"] == "aiter1092":
            continue  # below
        assert tol is not None and abs(r["error"]) <= tol, r
    # the aiter table's other rows: within 10 % while the GEMM is memory-bound (m <= 128);
    # from m = 192 the published CK kernels run 1.3-3.8x slower than the prior prices --
    # the prior's known gap (docs/perfmodel.md, "AMD kernel priors")
    aiter = [r for r in rows if r["source"] == "aiter1092"]
    assert all(abs(r["error"]) < 0.10 for r in aiter if r["m"] <= 128)
    assert all(r["error"] < -0.2 for r in aiter if r["m"] >= 192)


def test_every_source_is_cited_with_url_date_and_quote():
    doc = load_doc("amd")
    for key, s in doc["sources"].items():
        assert s["url"].startswith("https://") and s["quote"] and s["date"], key
    used = {v["source"] for v in doc["inputs"].values()} | {r["source"] for r in
                                                           doc["validation"]}
    assert used <= set(doc["sources"])


def test_the_docs_table_matches_the_priors():
    from pathlib import Path

    from perfmodel.kernels.priors import docs_tables

    doc = (Path(__file__).resolve().parents[2] / "docs" / "perfmodel.md").read_text()
    assert docs_tables() in doc, "docs/perfmodel.md is stale: paste priors.docs_tables()"


def test_engine_vendor_errors_name_the_flag_and_the_engines_that_run_everywhere():
    from perfmodel.launch import default_engine, engine_flag_error

    mi300x, h100, b60 = get_gpu("MI300X"), get_gpu("H100-SXM"), get_gpu("Arc-Pro-B60")
    msg = engine_flag_error("trtllm", [h100, mi300x])
    assert msg == ("--engine trtllm: TensorRT-LLM 1.3 does not run on AMD GPUs (MI300X); "
                   "it runs on NVIDIA GPUs; use --engine vllm or sglang")
    assert engine_flag_error("sglang", [b60, mi300x]).endswith("use --engine vllm")
    assert engine_flag_error("vllm", [h100, mi300x, b60]) is None
    assert engine_flag_error("roofline", mi300x) is None  # the thesis's model: any GPU
    assert (default_engine(mi300x), default_engine(h100), default_engine(b60)) == (
        "vllm", "trtllm", "vllm")
