"""Measured-kernel layer: grids and fits, shipped tables, transfer rule, fallbacks, and
the calibration script reproducing the committed tables."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from perfmodel import get_gpu, gpu_catalog
from perfmodel.kernels import ops
from perfmodel.kernels.grid import LogGrid, fit_grid
from perfmodel.kernels.library import kernels_for
from perfmodel.kernels.models import EfficiencyModel
from perfmodel.kernels.store import load_system, measured_systems
from perfmodel.kernels.transfer import comm_source, compute_source, interconnect_class

ROOT = Path(__file__).resolve().parents[2]


def test_grid_interpolates_multilinearly_and_clamps():
    g = LogGrid((0.0, 1.0), (1.0, 2.0), np.array([[0.0, 2.0], [4.0, 6.0]]))
    assert g(0.0, 1.0) == pytest.approx(0.0) and g(1.0, 3.0) == pytest.approx(6.0)
    assert g(0.5, 2.0) == pytest.approx(3.0)  # centre: mean of the four corners
    assert g(-5.0, 100.0) == pytest.approx(2.0)  # clamped to the edge node (0, 3)
    u = np.random.default_rng(1).uniform(-1, 3, size=(2, 50))
    ref = sum(g.values.ravel()[i] * w for i, w in g._corners(u))
    np.testing.assert_allclose(g(*u), ref, atol=1e-12)


def test_fit_grid_recovers_a_smooth_surface():
    rng = np.random.default_rng(0)
    x, y = rng.uniform(0, 8, 4000), rng.uniform(0, 6, 4000)
    z = 0.3 * x - 0.2 * y + 0.05 * x * y
    g = fit_grid([x, y], z, (0.0, 0.0), (1.0, 1.0), (9, 7), smooth=0.01)
    xt, yt = rng.uniform(0.5, 7.5, 200), rng.uniform(0.5, 5.5, 200)
    np.testing.assert_allclose(g(xt, yt), 0.3 * xt - 0.2 * yt + 0.05 * xt * yt, atol=0.03)


def test_every_measured_catalog_gpu_ships_tables_with_attribution():
    systems = measured_systems()
    for gpu in gpu_catalog().values():
        if gpu.kernel_system:
            assert gpu.kernel_system in systems, gpu.name
            t = load_system(gpu.kernel_system)
            assert t.gpu == gpu.name and "NVIDIA" in t.attribution
            assert t.get("trtllm" if "trtllm" in t.engines() else t.engines()[0], "gemm:bf16")


@pytest.mark.parametrize("target,family", [("H800", "hopper"), ("H20", "hopper"),
                                           ("H20-3E", "hopper"), ("A30", "ampere"),
                                           ("A100-40G", "ampere"), ("L4", "ada"),
                                           ("H100-PCIe", "hopper")])
def test_transfer_rule_prefers_the_same_architecture(target, family):
    src = compute_source(get_gpu(target), measured_systems())
    assert get_gpu(next(g.name for g in gpu_catalog().values()
                        if g.kernel_system == src)).arch == family


def test_transfer_keeps_the_interconnect_class_for_communication():
    for name in ("L4", "A100-PCIe", "H100-PCIe"):
        gpu = get_gpu(name)
        src = comm_source(gpu, measured_systems())
        assert interconnect_class(next(g for g in gpu_catalog().values()
                                       if g.kernel_system == src)) == "pcie"
    assert comm_source(get_gpu("H800"), measured_systems()) in ("h100_sxm", "h200_sxm")


def test_own_measurements_need_no_note_and_transfers_are_named():
    own = kernels_for(get_gpu("H200"), "trtllm")
    own.gemm(64.0, 7168.0, 7168.0, "fp8_block")
    assert not [n for n in own.notes if n.startswith("gemm")]
    h20 = kernels_for(get_gpu("H20"), "trtllm")
    h20.gemm(64.0, 7168.0, 7168.0, "fp8_block")
    assert any("gemm:fp8_block transferred from H" in n for n in h20.notes)


def test_a_gpu_without_fp8_runs_fp8_weights_as_weight_only_bf16():
    a100, h100 = kernels_for(get_gpu("A100-80G"), "trtllm"), kernels_for(get_gpu("H100-SXM"),
                                                                          "trtllm")
    # memory-bound decode GEMM: fp8 weights halve the bytes on both
    assert a100.gemm(8.0, 8192.0, 8192.0, "fp8") < a100.gemm(8.0, 8192.0, 8192.0, "bf16")
    # compute-bound prefill GEMM: no FP8 tensor cores on A100, so no 2x from fp8
    big_a = a100.gemm(8192.0, 8192.0, 8192.0, "fp8") / a100.gemm(8192.0, 8192.0, 8192.0, "bf16")
    big_h = h100.gemm(8192.0, 8192.0, 8192.0, "fp8") / h100.gemm(8192.0, 8192.0, 8192.0, "bf16")
    assert big_a > 0.8 and big_h < 0.75


def test_transferred_times_are_continuous_across_the_source_ridge():
    """The compute/memory attribution blends smoothly: no jump where an op crosses the
    measured GPU's ridge point (a step there once made H20 decode steps jump 4x)."""
    ks = kernels_for(get_gpu("H20"), "trtllm")
    tokens = np.geomspace(64, 65536, 400)
    t = np.asarray(ks.moe(tokens, 7168.0, 2048.0 / 8, 8, 256, 1.0, "fp8_block"))
    assert np.all(t[1:] / t[:-1] < 1.08) and np.all(np.diff(t) > -1e-9)


def test_efficiency_model_reproduces_itself_on_the_fitted_gpu():
    m = EfficiencyModel(1e-6, LogGrid((0.0,), (1.0,), np.log(np.array([0.5, 0.8]))),
                        1e15, 1e12)
    t = m.time_on(1e12, 1e9, 1e15, 1e12, np.array(0.0))
    assert t == pytest.approx(1e-6 + 1e-3 / 0.5)


def _model(eff: float) -> EfficiencyModel:
    """A fitted model with one efficiency everywhere, on a 1 PFLOP/s, 1 TB/s, 100-SM GPU."""
    return EfficiencyModel(0.0, LogGrid((0.0,), (1.0,), np.log(np.array([eff, eff]))),
                           1e15, 1e12, 100.0)


def test_transfer_keeps_the_excess_time_and_scales_it_by_the_sm_count():
    """Compute-bound at 50 %: 1 ms of MMAs + 1 ms of SM work on the fitted GPU.  A GPU
    with the same SMs and a quarter of the tensor rate pays 4 ms + 1 ms (80 % of its
    peak); with half the SMs as well, 4 ms + 2 ms."""
    m = _model(0.5)
    flops, nbytes = 1e12, 1e6  # C = 1 ms, M = 1 us
    x = np.array(0.0)
    assert m.time_on(flops, nbytes, 1e15, 1e12, x, sms=100.0) == pytest.approx(2e-3, rel=1e-3)
    assert m.time_on(flops, nbytes, 2.5e14, 1e12, x, sms=100.0) == pytest.approx(
        5e-3, rel=1e-3)
    assert m.time_on(flops, nbytes, 2.5e14, 1e12, x, sms=50.0) == pytest.approx(6e-3, rel=1e-3)


def test_transfer_adds_a_compute_time_the_fitted_gpu_hid():
    """Memory-bound at 80 % on the fitted GPU with compute a tenth of the memory time: the
    kernel hid part of its compute.  On a GPU with a tenth of the tensor rate the compute
    is as long as the memory time and the same share of it stays hidden, so the time is
    more than either alone -- not the max() an efficiency carried over would give."""
    m = _model(0.8)
    flops, nbytes = 1e11, 1e9  # C = 0.1 ms, M = 1 ms, fitted t = 1.25 ms: r = +0.15 ms
    x = np.array(0.0)
    t = float(m.time_on(flops, nbytes, 1e14, 1e12, x, sms=100.0))
    assert t == pytest.approx(1e-3 + 1e-3 + 0.15e-3, rel=1e-3)
    m2 = _model(0.95)  # fitted t = 1.0526 ms < C + M: hides 0.4737 of C
    t2 = float(m2.time_on(flops, nbytes, 1e14, 1e12, x, sms=100.0))
    hidden = (1.1e-3 - 1e-3 / 0.95) / 1e-4
    assert t2 == pytest.approx(2e-3 - hidden * 1e-3, rel=1e-3)
    assert t2 > 1e-3


def test_h20_transfer_matches_published_deepgemm_benchmarks():
    """Published DeepGEMM masked grouped GEMMs: the H100 rows check the proxy on a
    measured GPU, the H20 rows the transfer rule (the blended rule it replaced was 33 %
    too fast at the median; the fitted efficiency on the H20's roofline is 42 % too fast
    where the H100 was memory-bound)."""
    from perfmodel.kernel_benchmarks import summary, table

    s = summary(table())
    assert s["H100-SXM"]["median_abs"] < 0.08
    assert s["H20"]["median_abs"] < 0.2 and s["H20"]["worst_abs"] < 0.35


def test_sglang_tensor_parallel_moe_runs_the_faster_of_its_two_backends():
    """Narrow tensor-parallel expert shards run SGLang's own Triton MoE (faster than the
    grouped GEMM there); expert-parallel layouts the grouped GEMM (DeepGEMM-class)."""
    h200 = get_gpu("H200")
    sgl, trt = kernels_for(h200, "sglang"), kernels_for(h200, "trtllm")
    tp8 = (np.array([16384.0]), 7168.0, 2048.0 / 8, 8, 256, 1.0, "fp8_block")
    ep8 = (np.array([16384.0]), 7168.0, 2048.0, 8, 256, 8.0, "fp8_block")
    assert float(sgl.moe(*tp8)[0]) < 0.6 * float(trt.moe(*tp8)[0])
    assert float(sgl.moe(*ep8)[0]) == pytest.approx(float(trt.moe(*ep8)[0]))
    assert "moe:fp8_block" not in " ".join(kernels_for(h200, "trtllm").notes)


def test_fp4_weights_beat_fp8_on_blackwell():
    ks = kernels_for(get_gpu("B200"), "trtllm")
    assert ks.gemm(4096.0, 7168.0, 7168.0, "fp4") < ks.gemm(4096.0, 7168.0, 7168.0, "fp8")


def test_roofline_set_is_the_thesis_model():
    from perfmodel.kernels.roofline_set import GEMM_EFF, HBM_EFF, RooflineKernels

    gpu = get_gpu("H800")
    rk = RooflineKernels(gpu)
    big = rk.gemm(4096.0, 8192.0, 8192.0, "fp8")
    assert big == pytest.approx(2 * 4096 * 8192 * 8192 / (gpu.fp8_tflops * 1e12 * GEMM_EFF))
    small = rk.gemm(1.0, 8192.0, 8192.0, "fp8")
    assert small == pytest.approx(8192 * 8192 / (gpu.hbm_gbps * 1e9 * HBM_EFF))
    assert kernels_for(gpu, "roofline").engine == "roofline"


def test_ops_count_flops_and_bytes():
    f, b = ops.gemm_work(2, 3, 4, "fp8")
    assert f == 2 * 2 * 3 * 4 and b == 2 * 2 * 4 + 1 * 3 * 4 + 2 * 2 * 3
    # balanced routing touches min(E, t k) experts; random routing fewer
    assert ops.moe_touched(4, 8, 256, 8, True) == pytest.approx(32 / 8)
    assert ops.moe_touched(4, 8, 256, 8, False) < 32 / 8


@pytest.mark.skipif(importlib.util.find_spec("aiconfigurator_core") is None,
                    reason="aiconfigurator-core not installed (pip install -e '.[calibrate]')")
@pytest.mark.slow
def test_calibration_script_reproduces_the_committed_tables():
    """Refitting one GPU from the installed database gives the shipped file byte for byte
    (the tables are current and the fit is deterministic)."""
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "calibrate_kernels.py"),
                          "--systems", "l40s", "--check", "--no-validation"],
                         capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert out.returncode == 0, out.stderr


def test_calibration_script_without_the_database_names_the_extra(tmp_path):
    """Without aiconfigurator-core: one line naming the extra, exit status 2."""
    shim = tmp_path / "aiconfigurator_core.py"
    shim.write_text("raise ImportError('absent')\n")
    env = {"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "calibrate_kernels.py")],
                         capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0 and "[calibrate]" in out.stderr


def test_blackwell_engines_share_their_moe_kernels():
    """On Blackwell a MoE layer runs the fastest measured kernel family whichever
    engine's table holds it (library.MOE_SHARED_ARCHS): TRT-LLM's FP8 block-scaled rows
    are DeepGEMM only, where SGLang's trtllm-gen rows are 3x faster at decode sizes;
    on Hopper TRT-LLM keeps its own CUTLASS kernels."""
    b200 = get_gpu("B200")
    tp8 = (np.array([4.0]), 7168.0, 2048.0 / 8, 8, 256, 1.0, "fp8_block")
    times = {e: float(kernels_for(b200, e).moe(*tp8)[0]) for e in ("trtllm", "sglang", "vllm")}
    assert len({round(t, 12) for t in times.values()}) == 1
    ks = kernels_for(b200, "trtllm")
    model, system, _ = ks.resolve("moe:fp8_block")
    from perfmodel.kernels import timing
    own = float(timing.moe_time(model, *tp8[:6], "fp8_block", ks.peak("fp8_block"),
                                ks.bandwidth, sms=b200.sms)[0])
    assert times["trtllm"] < 0.6 * own
    h200 = get_gpu("H200")
    trt = kernels_for(h200, "trtllm")
    m, _, _ = trt.resolve("moe:fp8_block")
    own_h = float(timing.moe_time(m, *tp8[:6], "fp8_block", trt.peak("fp8_block"),
                                  trt.bandwidth, sms=h200.sms)[0])
    assert float(trt.moe(*tp8)[0]) == pytest.approx(own_h)


def test_mla_fuses_the_q_a_and_kv_a_projections():
    """All three engines run q_a and kv_a as one GEMM over the hidden states."""
    from perfmodel import layers
    from perfmodel.models import get_model

    m = get_model("deepseek-r1").with_dtypes("fp8", "fp8")
    ks = kernels_for(get_gpu("H200"), "trtllm")
    rows = np.array([[16.0]])
    got = float(np.ravel(layers.attention_projections(ks, m, rows, np.array([[8.0]]),
                                                      absorbed=True))[0])
    heads = m.heads / 8
    fused = [(m.q_lora_rank + m.kv_lora_rank + m.qk_rope_dim, m.hidden),
             (heads * (m.qk_nope_dim + m.qk_rope_dim), m.q_lora_rank),
             (m.hidden, heads * m.v_head_dim)]
    want = float(np.ravel(ks.gemm_sum(rows, fused, m.gemm_kind)
                          + ks.gemm_sum(rows, [(heads * m.kv_lora_rank, m.qk_nope_dim),
                                               (heads * m.v_head_dim, m.kv_lora_rank)],
                                        "bf16"))[0])
    assert got == pytest.approx(want)


def test_launch_floor_comes_from_every_row_and_fixed_work_rows_are_fitted():
    """A cache-resident row whose HBM time is a small share of its latency (fixed work)
    is fitted; one a cache hit explains (faster than HBM allows) is not; the floor is
    FLOOR_SHARE of the whole table's fastest row, not of the streaming rows'."""
    from perfmodel.kernels import fit
    from perfmodel.kernels.observations import CACHE_BOUND_SHARE, Observations, streaming

    gpu = get_gpu("B200")
    batch = np.array([1.0, 1.0, 64.0, 512.0, 512.0])
    context = np.array([1024.0, 1024.0, 2048.0, 4096.0, 8192.0])
    heads = np.full(5, 16.0)
    _, nbytes = ops.mla_decode_work(batch, context, heads, "fp8")
    hbm_s = nbytes / ops.hbm(gpu)
    # rows 0-2 sit in L2; row 0 takes far longer than its HBM time, row 2 less than it
    latency = np.array([11e-6, 12e-6, 0.5 * hbm_s[2], 3.0 * hbm_s[3], 3.0 * hbm_s[4]])
    assert hbm_s[0] <= CACHE_BOUND_SHARE * latency[0]
    obs = Observations("mla_decode", "fp8", {"batch": batch, "context": context,
                                             "heads": heads}, latency, np.arange(5))
    kept = streaming(obs, gpu)
    assert kept.fastest == pytest.approx(float(latency.min()))
    assert list(kept.cols["batch"]) == [1.0, 1.0, 512.0, 512.0]  # the cache hit is gone
    model = fit.fit_mla_decode(kept.cols["batch"], kept.cols["context"], kept.cols["heads"],
                               kept.latency, "fp8", ops.peak_flops(gpu, "bf16"),
                               ops.hbm(gpu), kept.fastest)
    assert model.floor_s == pytest.approx(fit.FLOOR_SHARE * float(latency.min()))


def test_b200_mla_decode_at_batch_one_is_the_measured_kernel():
    """aiconfigurator-core 0.12.0, b200_sxm TRT-LLM 1.3.0rc20 generation_mla_perf: 16
    heads, batch 1, step 1023, FP8 KV: 11.26 us (2047: 11.05 us).  Taking the launch
    floor from the streaming rows alone priced it at 31.7 us."""
    ks = kernels_for(get_gpu("B200"), "trtllm")
    for context, measured in ((1024.0, 11.26e-6), (2048.0, 11.05e-6)):
        got = float(np.ravel(ks.mla_decode(1.0, context, 16.0, "fp8"))[0])
        assert got == pytest.approx(measured, rel=0.3)


@pytest.mark.parametrize("gpu", ["GB200-NVL72", "GB300-NVL72"])
def test_trtllm_wide_ep_all_to_all_on_nvl72_is_the_one_sided_kernel(gpu):
    """aiconfigurator-core 0.12.0, gb200 TRT-LLM trtllm_alltoall_perf, NVLinkOneSided,
    DeepSeek shape (hidden 7168, top-8 of 256), EP 32, 32 tokens per rank: dispatch
    (nvfp4) 22.3 us, combine (bf16) 37.8 us -- the kernel TRT-LLM's communication
    factory selects first on a multi-node-NVLink rack.  Fitted on DeepEP's rows the
    decode dispatch cost about 195 us.  The one-line form (t0 + bytes / link) cannot
    follow the combine's growth with the number of peers (28.9 us at EP 8, 37.8 us at
    EP 32 for nearly the same bytes): at EP 32 it prices the combine about a third low,
    13 us a layer -- a known optimistic residual, bounded here at 40 %."""
    from perfmodel.kernels.observations import alltoall_bytes

    ks = kernels_for(get_gpu(gpu), "trtllm")
    for phase, elem, measured, tol in (("dispatch", 0.5625, 22.3e-6, 0.3),
                                       ("combine", 2.0, 37.8e-6, 0.4)):
        sent = float(alltoall_bytes(32.0, 7168.0, 8.0, 32.0, "ll", elem))
        got = float(np.ravel(ks.alltoall(sent, 0.0, "ll", phase))[0])
        assert got == pytest.approx(measured, rel=tol), phase
    # SGLang on the same rack keeps its own DeepEP tables
    sgl = kernels_for(get_gpu(gpu), "sglang")
    assert sgl._need("alltoall:ll:dispatch") != ks._need("alltoall:ll:dispatch")
