"""Engine limits (issue 29, item 1): request caps, token budgets, CUDA-graph sizes and
memory rules of each engine, their overrides, and where the planner applies them."""

from __future__ import annotations

import json

import numpy as np
import pytest

from perfmodel.aggregated import aggregated_point
from perfmodel.calibration import Calibration
from perfmodel.decode import decode_components, step_from_components, step_model
from perfmodel.engines import EAGER_LAYER_S, EngineLimits, get_engine
from perfmodel.errors import InputError
from perfmodel.hardware import get_gpu
from perfmodel.memory import (
    activation_bytes,
    engine_batch_cap,
    kv_capacity_tokens,
    usable_bytes,
    weight_bytes_per_gpu,
)
from perfmodel.models import get_model
from perfmodel.timing import IslandTiming

H100, A100, L40S, B200 = (get_gpu(g) for g in ("H100-SXM", "A100-80G", "L40S", "B200"))
LLAMA70, LLAMA8 = get_model("llama-3.1-70b"), get_model("llama-3.1-8b")


def col(x):
    return np.array([[float(x)]])


def one(x) -> float:
    return float(np.ravel(x)[0])


def test_vllm_request_cap_follows_its_gpu_rule():
    # vLLM _set_default_args: 1024 on >= 70 GiB GPUs other than A100, else 256
    vllm = Calibration(engine="vllm")
    assert engine_batch_cap(H100, LLAMA70, vllm) == 1024
    assert engine_batch_cap(B200, LLAMA70, vllm) == 1024
    assert engine_batch_cap(A100, LLAMA70, vllm) == 256
    assert engine_batch_cap(L40S, LLAMA70, vllm) == 256
    assert engine_batch_cap(H100, LLAMA70, Calibration(engine="trtllm")) == 2048
    # an override replaces the GPU rule, and the token budget bounds it too
    assert engine_batch_cap(A100, LLAMA70, vllm.with_limits(EngineLimits(max_running=700))) \
        == 700
    assert engine_batch_cap(H100, LLAMA70, vllm.with_limits(EngineLimits(max_tokens=300))) \
        == 300


def test_sglang_memory_fraction_is_its_reserve_rule():
    sgl = get_engine("sglang")
    for gpu, tp in ((H100, 8), (H100, 1), (B200, 4), (L40S, 2)):
        mib = gpu.visible_bytes / 2**20
        graph = float(sgl.graph_max_on(gpu, tp))
        reserve = 512 + 1.5 * 8192 + 2 * graph + 1024 * tp / 8
        if mib > 60 * 1024:
            reserve = max(reserve, 10 * 1024)
        assert sgl.memory_fraction_on(gpu, tp) == pytest.approx((mib - reserve) / mib, abs=6e-4)
    # SGLang's graph tiers: 256 / 512 on H100-class memory by tp, 512 beyond 160 GiB
    assert float(sgl.graph_max_on(H100, 2)) == 256 and float(sgl.graph_max_on(H100, 8)) == 512
    assert float(sgl.graph_max_on(B200, 1)) == 512
    assert sgl.with_limits(EngineLimits(mem_fraction=0.7)).memory_fraction_on(H100, 8) == 0.7


@pytest.mark.parametrize("engine", ["vllm", "trtllm"])
def test_activations_and_overheads_come_out_of_the_kv_cache(engine):
    calib = Calibration(engine=engine)
    act = float(np.ravel(activation_bytes(H100, LLAMA8, 1, calib))[0])
    # 8192 tokens of residual stream and MLP tensors, 1024-2048 rows of fp32 logits
    assert 1e9 < act < 6e9
    more = calib.with_limits(EngineLimits(max_tokens=32768))
    per_token = 2.0 * (2 * LLAMA8.hidden + 3 * LLAMA8.intermediate)  # bf16, the MLP's peak
    assert one(activation_bytes(H100, LLAMA8, 1, more)) - act == pytest.approx(
        (32768 - 8192) * per_token, rel=1e-12)
    kv = kv_capacity_tokens(H100, LLAMA8, col(1), col(1), col(1), calib)
    kv_more = kv_capacity_tokens(H100, LLAMA8, col(1), col(1), col(1), more)
    assert one(kv_more) < one(kv)
    # nothing beyond the weights, the activations and the overheads is lost
    w = float(weight_bytes_per_gpu(LLAMA8, 1, 1, 1))
    hbm = H100.visible_bytes
    over = get_engine(engine).overhead_bytes(1.0)
    pool = one(kv) * LLAMA8.layers * LLAMA8.kv_bytes_per_token_layer
    want = (0.9 * hbm - w - act - over if engine == "vllm" else 0.9 * (hbm - act - over - w))
    assert pool == pytest.approx(want, rel=1e-9)


def test_memory_fraction_override_moves_the_kv_cache():
    base = Calibration(engine="vllm")
    low = base.with_limits(EngineLimits(mem_fraction=0.6))
    a = one(kv_capacity_tokens(H100, LLAMA70, col(8), col(1), col(1), base))
    b = one(kv_capacity_tokens(H100, LLAMA70, col(8), col(1), col(1), low))
    per_token = LLAMA70.layers * LLAMA70.kv_bytes_per_token_layer / 8
    assert (a - b) * per_token == pytest.approx(0.3 * H100.visible_bytes, rel=1e-9)
    assert float(np.ravel(usable_bytes(H100, low, LLAMA70, 8))[0]) < \
        float(np.ravel(usable_bytes(H100, base, LLAMA70, 8))[0])


def test_batches_beyond_the_largest_cuda_graph_run_eagerly():
    calib = Calibration(engine="trtllm")  # captures up to 128 by default
    batch = np.array([[128.0, 129.0]])
    raw = step_from_components(decode_components(H100, LLAMA8, batch, col(1), col(1), col(1),
                                                 calib), LLAMA8, 1.0)
    sm = step_model(H100, LLAMA8, batch, col(1), col(1), col(1), calib)
    assert sm.d_floor[0, 0] == raw.d_floor[0, 0]  # captured: the GPU time alone
    assert sm.d_floor[0, 1] == max(raw.d_floor[0, 1], EAGER_LAYER_S)  # eager: launch floor
    assert sm.step_time(600.0)[0, 1] >= LLAMA8.layers * EAGER_LAYER_S
    # a small batch run eagerly is launch-bound; captured, it is not
    small = step_model(H100, LLAMA8, np.array([[8.0]]), col(1), col(1), col(1), calib)
    assert one(small.step_time(600.0)) < LLAMA8.layers * EAGER_LAYER_S
    # roofline (the thesis) has no host time at all
    assert float(get_engine("roofline").graph_max_on(H100, 1)) == np.inf


def test_every_mode_respects_the_request_cap():
    calib = Calibration(engine="vllm").with_limits(EngineLimits(max_running=48))
    pt = aggregated_point(H100, LLAMA8, 1, 1, 1, 512, 256.0, 0.0, calib)
    assert 0 < pt.batch <= 48
    timing = IslandTiming(H100, LLAMA8, col(1), col(1), col(1), calib)
    assert one(timing.decode_batch(col(1000.0))) <= 48
    free = IslandTiming(H100, LLAMA8, col(1), col(1), col(1), Calibration(engine="vllm"))
    assert one(free.decode_batch(col(1000.0))) > 48


@pytest.mark.parametrize(("limits", "flag"), [
    (EngineLimits(mem_fraction=1.5), "--mem-fraction"),
    (EngineLimits(mem_fraction=0.0), "--mem-fraction"),
    (EngineLimits(max_running=0), "--max-running"),
    (EngineLimits(max_tokens=-8), "--max-tokens"),
    (EngineLimits(max_running=2.5), "--max-running"),  # type: ignore[arg-type]
])
def test_limits_outside_what_the_engine_accepts_are_refused(limits, flag):
    with pytest.raises(InputError, match=flag) as err:
        limits.checked()
    assert "\n" not in str(err.value) and err.value.exit_code == 2


@pytest.mark.parametrize(("argv", "flag"), [
    (["--mem-fraction", "1.5"], "--mem-fraction"),
    (["--max-running", "0"], "--max-running"),
    (["--max-tokens", "0"], "--max-tokens"),
])
def test_plan_refuses_bad_limits_in_one_line(run_cli, small_inventory, tmp_path, argv, flag):
    rc, out, err = run_cli("plan", "--inventory", str(small_inventory), "--out",
                           str(tmp_path / "run"), "-q", *argv)
    assert rc == 2 and flag in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "run").exists()


def test_plan_records_and_applies_the_limits(run_cli, small_inventory, tmp_path):
    from planner.run.deployment import plan_calibration

    run = tmp_path / "run"
    rc, _, err = run_cli("plan", "--inventory", str(small_inventory), "--engine", "vllm",
                         "--model", "llama-3.1-70b", "--max-running", "40",
                         "--mem-fraction", "0.8", "--no-sim-check", "--ranges", "8",
                         "--out", str(run), "-q")
    assert rc == 0, err
    plan = json.loads((run / "plan.json").read_text())
    assert plan["request"]["engine_limits"] == {"max_running": 40, "max_tokens": None,
                                                "mem_fraction": 0.8}
    calib = plan_calibration(plan)
    assert calib.profile.max_running == 40 and calib.profile.memory_fraction == 0.8
    batches = [isl["batch"] for isl in plan["islands"] if isl.get("batch")]
    assert batches and max(batches) <= 40
    rc, _, err = run_cli("export", str(run), "--out", str(tmp_path / "ex"), "-q")
    assert rc == 0, err
    text = "\n".join(p.read_text() for p in (tmp_path / "ex").rglob("*.sh"))
    assert "--gpu-memory-utilization 0.8" in text


def test_perf_takes_and_reports_the_limits(run_cli):
    rc, out, err = run_cli("perf", "--gpu", "H100-SXM", "--gpus", "8", "--model",
                           "llama-3.1-70b", "--mode", "agg", "--engine", "vllm",
                           "--max-running", "64", "--json")
    assert rc == 0, err
    limits = json.loads(out)["engine_limits"]
    assert limits["max_running"] == 64 and limits["memory_rule"] == "total"
    rc, _, err = run_cli("perf", "--gpu", "H100-SXM", "--mem-fraction", "1.5")
    assert rc == 2 and "--mem-fraction" in err and len(err.strip().splitlines()) == 1


def test_engines_size_pools_from_the_memory_the_driver_reports():
    # nvidia-smi: 81,559 MiB on an "80 GB" H100; 46,068 MiB on a 48 GB L40S (ECC on)
    assert H100.visible_bytes / 2**20 == pytest.approx(81559, rel=0.01)
    assert L40S.visible_bytes / 2**20 == pytest.approx(46068, rel=0.01)
    # the thesis's rule keeps its decimal reading (seed 002 reproduction)
    thesis = Calibration(engine="roofline")
    assert one(usable_bytes(H100, thesis, LLAMA8, 1)) == pytest.approx(0.9 * 80e9)


def test_tensor_parallel_attention_needs_no_expert_all_to_all():
    """With attention TP over the whole island every GPU holds every token: experts are
    computed in place and the layer's second all-reduce sums them (no dispatch or
    combine); with attention DP the tokens must travel."""
    from perfmodel import layers
    from perfmodel.kernels.library import kernels_for

    moe, gpu = get_model("deepseek-v3"), get_gpu("H200")
    ks = kernels_for(gpu, "trtllm")
    tp_only = layers.moe_comm(ks, moe, 256.0, 8.0, 8.0, 8, "ll", 1.0)
    dp_attn = layers.moe_comm(ks, moe, 256.0, 1.0, 8.0, 8, "ll", 8.0)
    assert all(float(np.ravel(t)[0]) == 0.0 for t in tp_only)
    assert all(float(np.ravel(t)[0]) > 0.0 for t in dp_attn)


def test_trtllm_reserves_each_requests_whole_output_at_admission():
    """GUARANTEED_NO_EVICT (TRT-LLM's default capacity scheduler) admits a request only
    with KV for its prompt and all its output; vLLM and SGLang size by what is held."""
    from perfmodel.memory import kv_per_sequence

    trt, vllm = Calibration(engine="trtllm"), Calibration(engine="vllm")
    assert kv_per_sequence(trt, 1000.0, 400.0, 200.0) == 1400.0
    assert kv_per_sequence(vllm, 1000.0, 400.0, 200.0) == 1200.0
    # an aggregated island's memory-bound batch follows: fewer sequences under TRT-LLM
    cap = {e: aggregated_point(L40S, LLAMA8, 1, 1, 1, 4000, 4000.0, 0.0,
                               Calibration(engine=e)).batch for e in ("trtllm", "vllm")}
    per_seq = {e: one(kv_capacity_tokens(L40S, LLAMA8, col(1), col(1), col(1),
                                         Calibration(engine=e))) for e in cap}
    assert cap["trtllm"] <= per_seq["trtllm"] // 8000 + 1
    assert cap["vllm"] > per_seq["vllm"] // 8000
