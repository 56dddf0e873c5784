"""Parallel layouts the engines launch (perfmodel.launch, issue 27 item 2)."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from perfmodel import WorkloadShape, benchmark_island, get_gpu, get_model
from perfmodel.calibration import Calibration
from perfmodel.colocated import colocated_table
from perfmodel.launch import (
    RULES,
    engine_slots,
    expert_slots,
    layout_violation,
    redundant_experts,
    rules_for,
    slots_text,
)
from perfmodel.parallel import ParallelConfig as P
from perfmodel.parallel import enumerate_configs, launch_reason

DS = get_model("deepseek-v3")
QWEN = get_model("qwen3-235b-a22b")
LLAMA = get_model("llama-3.1-70b")
MIXTRAL = get_model("mixtral-8x7b")
ENGINES = ("trtllm", "sglang", "vllm", "roofline")


def test_expert_slots_pad_every_rank_to_the_same_count():
    assert expert_slots(DS, 12) == 264 and redundant_experts(DS, 12) == 8
    assert expert_slots(DS, 16) == 256 and redundant_experts(DS, 16) == 0
    assert expert_slots(DS, 112) == 336 and redundant_experts(DS, 112) == 80
    assert expert_slots(LLAMA, 4) == 0 and redundant_experts(LLAMA, 4) == 0
    assert slots_text(DS, 12, "sglang") == "ep 12: 256 experts in 264 slots (8 redundant)"
    assert slots_text(DS, 16, "sglang") is None


def test_ep12_on_256_experts_takes_8_redundant_slots_where_the_engine_has_them():
    cfg = P(1, 16, 16)  # (ep 16 divides: no slots at all)
    assert layout_violation("sglang", DS, cfg, 16, 8) is None
    # ep 12 of a 24-GPU island (W = 2, 1,024-wide shards: block-FP8 aligned)
    cfg = P(1, 24, 12)
    assert engine_slots("sglang", DS, 12) == (264, 8)
    assert layout_violation("sglang", DS, cfg, 24, 8) is None
    assert layout_violation("trtllm", DS, P(1, 24, 12), 24, 8) is None
    # vLLM: expert parallelism is the whole tp x dp group, so ep 12 of 24 is refused ...
    why = layout_violation("vllm", DS, cfg, 24, 8)
    assert why is not None and "ep must be 1 or 24" in why
    # ... and at ep = G it spreads the experts unevenly, with no redundant slots
    assert layout_violation("vllm", DS, P(1, 24, 24), 24, 8) is None
    assert engine_slots("vllm", DS, 24) == (256, 0)
    assert "unevenly" in slots_text(DS, 24, "vllm")


def test_redundant_slots_are_capped_at_an_eighth_of_the_experts():
    why = layout_violation("sglang", DS, P(1, 112, 112), 112, 8)
    assert why is not None and "80 redundant" in why and "cap of 32" in why
    # 256 experts over 48 ranks: 288 slots, 32 redundant -- at the cap, allowed
    assert layout_violation("sglang", DS, P(1, 48, 48), 48, 8) is None
    assert layout_violation("trtllm", DS, P(1, 48, 48), 48, 8) is None


def test_a_17_way_width_split_of_a_1536_wide_expert_is_refused():
    for engine in ("trtllm", "sglang", "vllm"):
        why = layout_violation(engine, QWEN, P(1, 17, 1), 17, 8)
        assert why is not None and "expert width split 17" in why and "1536" in why
    assert layout_violation("roofline", QWEN, P(1, 17, 1), 17, 8) is None
    assert layout_violation(None, QWEN, P(1, 17, 1), 17, 8) is None


def test_block_fp8_expert_shards_stay_multiples_of_128():
    # DeepSeek's 2,048-wide experts split 32 ways: 64-wide shards
    why = layout_violation("sglang", DS, P(32, 1, 1), 32, 8)
    assert why is not None and "quantisation block" in why
    # 16 ways: 128-wide shards, aligned (the layout is refused for no other reason)
    assert layout_violation("sglang", DS, P(1, 16, 1), 16, 8) is None
    # a bf16 model is not held to the block
    assert layout_violation("sglang", QWEN, P(1, 16, 1), 16, 8) is None


def test_kv_heads_split_or_replicate_evenly():
    odd = replace(LLAMA, name="odd", heads=48, kv_heads=8)
    assert "KV heads" in (layout_violation("sglang", odd, P(6, 1, 1), 6, 8) or "")
    assert "KV heads" in (layout_violation("vllm", odd, P(12, 2, 1), 24, 8) or "")
    assert layout_violation("sglang", odd, P(4, 2, 1), 8, 8) is None
    assert layout_violation("sglang", odd, P(16, 1, 1), 16, 8) is None  # replicated x2
    assert layout_violation("roofline", odd, P(6, 1, 1), 6, 8) is None


def test_trtllm_attention_dp_is_every_rank_or_none():
    why = layout_violation("trtllm", DS, P(2, 4, 8), 8, 8)
    assert why is not None and "dp must be 1 or 8" in why
    assert layout_violation("sglang", DS, P(2, 4, 8), 8, 8) is None
    assert layout_violation("trtllm", DS, P(8, 1, 8), 8, 8) is None


def test_a_group_spanning_servers_is_whole_servers():
    why = layout_violation("sglang", LLAMA, P(4, 3, 1), 12, 8)
    assert why is not None and "whole servers" in why
    assert layout_violation("sglang", LLAMA, P(8, 2, 1), 16, 8) is None
    assert layout_violation("sglang", LLAMA, P(4, 1, 1), 4, 8) is None  # inside one server
    assert layout_violation("sglang", LLAMA, P(4, 3, 1), 12, None) is None  # no servers given


@pytest.mark.parametrize("model", [DS, QWEN, LLAMA, MIXTRAL], ids=lambda m: m.name)
def test_every_enumerated_config_passes_its_engines_rules(model):
    for engine in ENGINES:
        for g in range(1, 33):
            allowed = enumerate_configs(g, model, engine, 8)
            assert set(allowed) <= set(enumerate_configs(g, model))
            for c in allowed:
                assert layout_violation(engine, model, c, g, 8) is None, (engine, g, c)
            if not allowed and enumerate_configs(g, model):
                assert launch_reason(g, model, engine, 8)
    # no engine: today's enumeration, unchanged
    assert len(enumerate_configs(16, DS)) == len(enumerate_configs(16, DS, None))
    assert enumerate_configs(16, DS, "roofline", 8) == enumerate_configs(16, DS)


def test_rules_are_looked_up_by_engine_name():
    assert rules_for("SGLang ") is RULES["sglang"]
    assert rules_for(None) is None
    assert rules_for("someplugin").thesis_only


def _shape():
    pmf = np.zeros(513)
    pmf[512] = 1.0
    return WorkloadShape(pmf, 64, 128)


def test_an_island_size_no_layout_launches_is_infeasible_with_the_rule():
    calib = Calibration(engine="trtllm")
    t = benchmark_island(get_gpu("H200"), 12, DS, _shape(), calib=calib)
    for phase in (t.prefill, t.decode):
        assert not phase.feasible and phase.config is None
        assert "whole servers" in phase.reason and "TensorRT-LLM" in phase.reason
    both = colocated_table(get_gpu("H200"), 12, DS, _shape(), calib=calib)
    assert not both.feasible and "whole servers" in both.reason
    # the thesis's roofline keeps the free sizes
    free = benchmark_island(get_gpu("H200"), 12, DS, _shape(), calib=Calibration(
        engine="roofline"))
    assert free.decode.config is not None


def test_perf_refuses_a_pinned_layout_the_engine_does_not_launch(run_cli):
    rc, out, err = run_cli("perf", "--gpu", "L40S", "--gpus", "17", "--model",
                           "qwen3-235b-a22b", "--tp", "1", "--dp", "17", "--ep", "1",
                           "--engine", "sglang", "--json")
    assert rc == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "expert width split 17" in lines[0]
    rc, _, err = run_cli("perf", "--gpu", "H200", "--gpus", "8", "--model", "deepseek-v3",
                         "--tp", "2", "--dp", "4", "--ep", "8")
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "attention DP" in err


def test_perf_says_the_redundant_slots(run_cli):
    args = ("perf", "--gpu", "H200", "--gpus", "24", "--model", "deepseek-v3", "--tp", "1",
            "--dp", "24", "--ep", "12", "--engine", "sglang")
    rc, out, err = run_cli(*args)
    assert rc == 0, err
    assert "ep 12: 256 experts in 264 slots (8 redundant)" in out
    rc, out, err = run_cli(*args, "--json")
    assert rc == 0, err
    for row in json.loads(out)["phases"]:
        assert row["expert_slots"] == 264 and row["redundant_experts"] == 8


def test_every_published_layout_of_the_validation_rows_launches():
    """The layouts real deployments ran (perfmodel/data/validation_cases.yaml: SGLang's
    72-GPU DeepSeek decode with 32 redundant experts, Ant Group's TP8 H20 prefill,
    TRT-LLM's DEP4/DEP8...) pass their engine's rules: the rules refuse nothing that was
    launched."""
    from perfmodel.validation import load_cases

    for c in load_cases()[0]:
        g = get_gpu(c.gpu)
        cfg = P(c.tp, c.dp, c.ep)
        assert layout_violation(c.engine, get_model(c.model), cfg, c.tp * c.dp,
                                g.gpus_per_domain) is None, c.id


def test_engines_run_only_on_their_vendors_gpus():
    """TensorRT-LLM is CUDA-only: an AMD island under it has no layout, with the reason;
    SGLang and vLLM run on ROCm (perfmodel.launch, vendors)."""
    from perfmodel import WorkloadShape, benchmark_island, get_gpu, get_model
    from perfmodel.calibration import Calibration
    from perfmodel.launch import gpu_vendor, vendor_violation

    mi300x, h200 = get_gpu("MI300X"), get_gpu("H200")
    assert gpu_vendor(mi300x) == "amd" and gpu_vendor(h200) == "nvidia"
    assert gpu_vendor(get_gpu("Arc-Pro-B60")) == "intel"
    assert "AMD" in vendor_violation("trtllm", mi300x)
    assert vendor_violation("sglang", mi300x) is None
    assert vendor_violation("vllm", mi300x) is None
    assert vendor_violation("trtllm", h200) is None
    assert vendor_violation("roofline", mi300x) is None  # the thesis's model: any GPU
    shape = WorkloadShape(pmf=np.full(64, 1 / 64), decode_mean=32.0, decode_max=64)
    table = benchmark_island(mi300x, 8, get_model("llama-3.1-70b"), shape,
                             calib=Calibration(engine="trtllm"))
    assert not table.prefill.feasible and not table.decode.feasible
    assert "does not run on AMD" in table.decode.reason
    ok = benchmark_island(mi300x, 8, get_model("llama-3.1-70b"), shape,
                          calib=Calibration(engine="sglang"))
    assert ok.decode.feasible
