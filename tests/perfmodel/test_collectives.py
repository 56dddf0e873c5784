"""Every split priced (issue 27 item 3): the collectives of a prefill pass and a decode
step, their tiers, and no collective over more than one GPU at 0 s."""

from __future__ import annotations

import json

import numpy as np
import pytest

from perfmodel import get_gpu, get_model, layers
from perfmodel.calibration import Calibration
from perfmodel.collectives import decode_collectives, prefill_collectives
from perfmodel.decode import decode_components
from perfmodel.kernels.library import kernels_for
from perfmodel.parallel import enumerate_configs
from perfmodel.prefill import prefill_components

DS = get_model("deepseek-v3")
QWEN = get_model("qwen3-235b-a22b")
LLAMA = get_model("llama-3.1-70b")
MIXTRAL = get_model("mixtral-8x7b")


def _col(x):
    return np.array([[float(x)]])


def _check(items, cfg, model, where):
    names = {c["name"] for c in items}
    for c in items:
        assert c["group"] > 1, (where, c)
        assert c["seconds"] > 0 and c["bytes_per_gpu"] > 0, (where, c)
        assert c["tier"] in ("node", "scale-out")
    if cfg.tp > 1:
        assert "tp_allreduce" in names, where
    if model.is_moe and cfg.ep > 1 and cfg.dp > 1:
        assert {"alltoall_dispatch", "alltoall_combine"} <= names, where
    if model.is_moe and cfg.ep > 1 and cfg.dp == 1:
        # attention TP over the island: experts in place, summed by the TP all-reduce
        assert "tp_allreduce" in names and not names & {"alltoall_dispatch",
                                                        "alltoall_combine"}, where
    if model.is_moe and cfg.dp > 1 and cfg.ep == 1:
        assert {"dp_allgather", "expert_reduce"} <= names, where


@pytest.mark.parametrize("model", [DS, QWEN, LLAMA, MIXTRAL], ids=lambda m: m.name)
@pytest.mark.parametrize("gpu", ["H200", "L40S"])
def test_no_collective_over_several_gpus_is_free(model, gpu):
    """Every layout of 1..32 GPUs the perf model can price (no rules, TRT-LLM kernels)
    and every layout each engine launches (priced under that engine)."""
    g = get_gpu(gpu)
    sweeps = [(None, Calibration(engine="trtllm"))] + [
        (e, Calibration(engine=e)) for e in ("sglang", "vllm", "roofline")]
    seen = 0
    for rules, calib in sweeps:
        for size in range(1, 33):
            for cfg in enumerate_configs(size, model, rules, g.gpus_per_domain):
                where = (rules, size, cfg.label())
                _check(prefill_collectives(g, model, cfg.tp, cfg.dp, cfg.ep, calib, 2000.0,
                                           0.0, 4.0), cfg, model, where)
                _check(decode_collectives(g, model, cfg.tp, cfg.dp, cfg.ep, calib, 64.0),
                       cfg, model, where)
                seen += 1
    assert seen > 100


def test_attention_dp_with_a_width_split_pays_its_gather_and_reduce():
    """The issue's case: 17 L40S, qwen3-235b at tp1-dp17-ep1 priced 0 s of communication."""
    g = get_gpu("L40S")
    calib = Calibration(engine="roofline")  # the only engine that launches it
    comp = prefill_components(g, QWEN, 2000.0, _col(1), _col(17), _col(1), 0.0, calib)
    assert float(comp["dp_allgather+expert_reduce"].ravel()[0]) > 0.1
    items = {c["name"]: c for c in prefill_collectives(g, QWEN, 1, 17, 1, calib, 2000.0)}
    assert items["dp_allgather"]["tier"] == "scale-out" and items["dp_allgather"]["group"] == 17
    assert items["expert_reduce"]["kind"] == "reducescatter"
    np.testing.assert_allclose(
        items["dp_allgather"]["total_seconds"] + items["expert_reduce"]["total_seconds"],
        float(comp["dp_allgather+expert_reduce"].ravel()[0]), rtol=1e-6)
    # SGLang reduces with an all-reduce: twice the reduce-scatter's bytes
    sg = {c["name"]: c for c in prefill_collectives(g, QWEN, 1, 16, 1,
                                                    Calibration(engine="sglang"), 2000.0)}
    assert sg["expert_reduce"]["kind"] == "allreduce"
    assert sg["expert_reduce"]["bytes_per_gpu"] == pytest.approx(
        2 * sg["dp_allgather"]["bytes_per_gpu"])


def test_decode_listing_matches_the_step_components():
    g = get_gpu("H200")
    calib = Calibration(engine="sglang")
    comp = decode_components(g, QWEN, _col(64), _col(2), _col(8), _col(1), calib,
                             context=_col(2100))
    items = {c["name"]: c for c in decode_collectives(g, QWEN, 2, 8, 1, calib, 64.0)}
    for name in ("dp_allgather", "expert_reduce"):
        assert items[name]["seconds"] == pytest.approx(float(comp[name].ravel()[0]))
    assert items["tp_allreduce"]["count"] == 2 * QWEN.layers


def test_expert_width_inside_ep_multiplies_the_alltoall_copies():
    ks = kernels_for(get_gpu("H200"), "trtllm")
    rows = _col(256)
    plain = layers._a2a(ks, DS, rows, _col(1), _col(4), 8, "ll")
    wide = layers._a2a(ks, DS, rows, _col(1), _col(4), 8, "ll", dp=_col(8))  # W = 2
    for (t0, b0, _), (t1, b1, _) in zip(plain, wide, strict=True):
        np.testing.assert_allclose(b1, 2.0 * b0)
        assert float(t1.ravel()[0]) > float(t0.ravel()[0])


def test_tiers_follow_the_group_span():
    calib = Calibration(engine="trtllm")
    h200, l40s = get_gpu("H200"), get_gpu("L40S")
    inside = {c["name"]: c for c in decode_collectives(h200, LLAMA, 8, 1, 1, calib, 64.0)}
    across = {c["name"]: c for c in decode_collectives(h200, LLAMA, 16, 1, 1, calib, 64.0)}
    assert inside["tp_allreduce"]["tier"] == "node"
    assert across["tp_allreduce"]["tier"] == "scale-out"
    assert across["tp_allreduce"]["seconds"] > inside["tp_allreduce"]["seconds"]
    # a PCIe server pays its PCIe figure inside the server
    pcie = {c["name"]: c for c in decode_collectives(l40s, LLAMA, 4, 1, 1, calib, 64.0)}
    nvl = {c["name"]: c for c in decode_collectives(h200, LLAMA, 4, 1, 1, calib, 64.0)}
    assert pcie["tp_allreduce"]["tier"] == "node"
    assert pcie["tp_allreduce"]["seconds"] > nvl["tp_allreduce"]["seconds"]


def test_perf_json_lists_every_collective(run_cli):
    rc, out, err = run_cli("perf", "--gpu", "L40S", "--gpus", "17", "--model",
                           "qwen3-235b-a22b", "--tp", "1", "--dp", "17", "--ep", "1",
                           "--engine", "roofline", "--json")
    assert rc == 0, err
    doc = json.loads(out)
    for phase in ("prefill_pass", "decode_step"):
        items = doc["breakdown"][phase]["collectives"]
        assert {c["name"] for c in items} == {"dp_allgather", "expert_reduce"}
        for c in items:
            assert set(c) >= {"name", "bytes_per_gpu", "group", "tier", "seconds"}
            assert c["seconds"] > 0 and c["tier"] == "scale-out" and c["group"] == 17


def test_aggregated_json_lists_the_mixed_pass_collectives_it_prices(run_cli):
    """``planner perf --mode agg --json`` lists the mixed pass's collectives, and their
    totals are the breakdown's communication entries."""
    import json

    rc, out, err = run_cli("perf", "--gpu", "H100-SXM", "--gpus", "8", "--model",
                           "llama-3.1-70b", "--mode", "agg", "--json")
    assert rc == 0, err
    mixed = json.loads(out)["breakdown"]["mixed_pass"]
    listed = {c["name"]: c for c in mixed["collectives"]}
    assert listed["tp_allreduce"]["group"] == 8 and listed["tp_allreduce"]["tier"] == "node"
    assert all(c["seconds"] > 0 for c in mixed["collectives"] if c["group"] > 1)
    assert listed["tp_allreduce"]["total_seconds"] == pytest.approx(
        mixed["seconds"]["tp_allreduce"], rel=1e-6)


def test_nccl_network_floor_follows_its_tuner_model():
    from perfmodel.kernels.timing import network_allreduce_floor

    assert network_allreduce_floor(8, 1) == 0.0
    # 6.8 + 2 (7 x 0.6 + 1 x 5.0) us: 16 GPUs on two 8-GPU servers
    assert network_allreduce_floor(16, 2) == pytest.approx(25.2e-6)
    # four servers: two network hops each way (floor(log2 4) = 2)
    assert network_allreduce_floor(32, 4) == pytest.approx((6.8 + 2 * (7 * 0.6 + 2 * 5.0)) * 1e-6)


def test_a_small_allreduce_across_servers_pays_the_network_latency():
    """One decode token's all-reduce (14 kB) across two H100 servers: the measured
    curve's NVLink floor (a one-shot kernel of about 3 us) cannot span servers; NCCL's
    network floor does, so the across-server time is at least that floor and well above
    the inside-server time."""
    from perfmodel.kernels.timing import network_allreduce_floor

    ks = kernels_for(get_gpu("H100-SXM"), "trtllm")
    small = np.array([7168.0 * 2])
    inside = float(ks.allreduce(small, 8, nodes=1)[0])
    across = float(ks.allreduce(small, 16, nodes=2)[0])
    assert inside < 10e-6
    assert across >= network_allreduce_floor(16, 2)
    assert across > 3 * inside
    # a large message is bandwidth-bound: the floor adds under a tenth of its time
    big = np.array([2.0 ** 28])
    t_big = float(ks.allreduce(big, 16, nodes=2)[0])
    assert network_allreduce_floor(16, 2) < 0.1 * t_big
