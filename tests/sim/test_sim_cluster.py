"""Simulator cluster tables (planner.sim.cluster) and request streams (planner.sim.arrivals)."""

from __future__ import annotations

import numpy as np
import pytest

from perfmodel import DEFAULT_CALIBRATION, get_gpu, get_model, step_model
from perfmodel.memory import kv_bytes_per_token_per_gpu, usable_bytes, weight_bytes_per_gpu
from perfmodel.prefill import prefill_time
from perfmodel.timing import STEP_COLUMNS
from planner.core.errors import PlannerError
from planner.sim.arrivals import (
    gamma_arrivals,
    parse_rate,
    poisson_arrivals,
    requests_from_workload,
    sample_lengths,
    scale_times,
)
from planner.sim.cluster import (
    cluster_from_plan,
    make_island,
    prefill_split,
    step_time,
    steps_time,
    steps_until,
)
from planner.workload import load_workload
from planner.workload.model import Workload

MOE = get_model("deepseek-v3")


def test_island_tables_match_the_perf_model():
    gpu = get_gpu("H200")
    isl = make_island(0, "d", "H200", 16, "decode", 2, 8, 16, MOE, batch=32, max_input=2048)
    assert isl.max_batch == 32 * 8 and isl.step_coeffs.shape == (33, len(STEP_COLUMNS))
    col = lambda x: np.array([[float(x)]])  # noqa: E731
    for b in (1, 7, 32):
        sm = step_model(gpu, MOE, col(b), col(2), col(8), col(16), DEFAULT_CALIBRATION)
        for ctx in (10.0, 1500.0, 9000.0):
            assert step_time(isl.step_coeffs[b], ctx) == pytest.approx(
                float(sm.step_time(ctx)[0, 0]), rel=1e-12)
    ref = prefill_time(gpu, MOE, np.array([[1.0, 700.0, 2048.0]]), col(2), col(8), col(16),
                       0.0, DEFAULT_CALIBRATION)[0]
    assert isl.prefill_s[[1, 700, 2048]] == pytest.approx(ref, rel=1e-12)
    kv = kv_bytes_per_token_per_gpu(MOE, 2)
    free = float(usable_bytes(gpu, DEFAULT_CALIBRATION, MOE, 2)) - weight_bytes_per_gpu(MOE, 2,
                                                                                   8, 16)
    assert isl.kv_bytes_per_token == kv
    assert isl.kv_capacity_tokens == int(free * 0.9 / kv) * 8  # TRT-LLM: 90 % of free HBM


def test_steps_time_is_the_sum_of_step_times():
    isl = make_island(0, "d", "H200", 8, "decode", 1, 8, 8, MOE, batch=64, max_input=1024)
    for b, ctx, k in ((1, 100.0, 1), (17, 3000.5, 250), (64, 0.0, 40)):
        row = isl.step_coeffs[b]
        direct = sum(step_time(row, ctx + i) for i in range(1, k + 1))
        assert steps_time(row, ctx, k) == pytest.approx(direct, rel=1e-10)
        t_half = steps_time(row, ctx, k) * 0.5
        j = steps_until(row, ctx, k, t_half)
        assert steps_time(row, ctx, j) >= t_half
        assert j == 1 or steps_time(row, ctx, j - 1) < t_half


def test_prefill_split_reproduces_single_prompts():
    isl = make_island(0, "p", "H200", 8, "prefill", 1, 8, 8, MOE, max_input=4096)
    lin, a, _ = prefill_split(isl.prefill_s)
    assert a > 0
    for s in (1, 64, 1000, 4096):
        assert lin[s] + a * 0.5 * s * (s + 1) == pytest.approx(isl.prefill_s[s], rel=1e-9)
    # two prompts batched cost less than back to back (shared weight reads), more than one
    both = lin[200] + a * (0.5 * 100 * 101) * 2
    assert isl.prefill_s[100] < both < 2 * isl.prefill_s[100]


def _plan():
    def isl(role, config, batch, shares, gpu="H200", size=8):
        return {"gpu": gpu, "size": size, "role": role, "config": config, "batch": batch,
                "shares": shares}
    return {"request": {"model": "deepseek-v3", "workload": "w"},
            "summary": {"requests_per_s": 10.0},
            "islands": [isl("prefill", "tp1-dp8-ep8", 1, [0.5, 0.5]),
                        isl("idle", "", 0, [0.0, 0.0]),
                        isl("decode", "tp2-dp4-ep8", 64, [1.0, 1.0])],
            "ranges": {"start": [1, 1000], "end": [1000, 4000], "mid": [500, 2500],
                       "prob": [0.6, 0.4]}}


def test_cluster_from_plan_drops_idle_and_reads_ranges():
    c = cluster_from_plan(_plan())
    assert [x.role for x in c.islands] == ["prefill", "decode"]
    assert [x.index for x in c.islands] == [0, 1]
    assert c.islands[1].max_batch == 64 * 4 and c.islands[1].tp == 2
    assert list(c.range_edges) == [1, 1000, 4000]
    assert len(c.islands[0].prefill_s) == 4001
    assert c.islands[0].range_shares == (0.5, 0.5)
    assert c.islands[0].location != c.islands[1].location or c.islands[0].location.node == 0


@pytest.mark.parametrize("path,value,needle", [
    (("islands", 0, "gpu"), "NoSuchGPU", "plan.islands[0].gpu"),
    (("islands", 0, "config"), "tp3-dp8-ep8", "plan.islands[0].config"),
    (("islands", 2, "config"), "bogus", "plan.islands[2].config"),
    (("islands", 2, "shares"), [1.0], "plan.islands[2].shares"),
    (("islands", 0, "role"), "chef", "plan.islands[0].role"),
    (("islands", 0, "size"), -8, "plan.islands[0].size"),
    (("request", "model"), "no-such-model", "plan.request.model"),
])
def test_bad_plans_name_the_field(path, value, needle):
    plan = _plan()
    node = plan
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    with pytest.raises(PlannerError, match=needle.replace("[", r"\[").replace("]", r"\]")):
        cluster_from_plan(plan)


def test_plan_without_islands_is_an_error():
    with pytest.raises(PlannerError, match="plan.islands"):
        cluster_from_plan({"request": {"model": "deepseek-v3"}, "islands": []})


def test_poisson_and_gamma_arrivals():
    t = poisson_arrivals(50_000, 200.0, seed=3)
    gaps = np.diff(t)
    assert np.all(gaps >= 0)
    assert 1 / gaps.mean() == pytest.approx(200.0, rel=0.03)
    assert gaps.std() / gaps.mean() == pytest.approx(1.0, rel=0.05)
    g = np.diff(gamma_arrivals(50_000, 50.0, 3.0, seed=3))
    assert 1 / g.mean() == pytest.approx(50.0, rel=0.05)
    assert g.std() / g.mean() == pytest.approx(3.0, rel=0.1)
    assert np.array_equal(poisson_arrivals(100, 5.0, seed=1), poisson_arrivals(100, 5.0, seed=1))


def test_scaling_a_trace_keeps_its_burstiness():
    raw = gamma_arrivals(20_000, 3.0, 2.0, seed=5) + 1234.0
    scaled = scale_times(raw, 300.0)
    gaps, raw_gaps = np.diff(scaled), np.diff(raw)
    assert scaled[0] == 0.0
    assert (len(scaled) - 1) / scaled[-1] == pytest.approx(300.0, rel=1e-9)
    assert gaps.std() / gaps.mean() == pytest.approx(raw_gaps.std() / raw_gaps.mean(), rel=1e-9)


def test_parse_rate():
    assert parse_rate("300") == 300.0
    assert parse_rate("0.8x", reference=50.0) == pytest.approx(40.0)
    assert parse_rate(12) == 12.0
    for bad in ("fast", "-3", "0x"):
        with pytest.raises(PlannerError):
            parse_rate(bad, reference=10.0)
    with pytest.raises(PlannerError, match="reference"):
        parse_rate("2x")


def test_sampled_lengths_follow_the_workload():
    pmf = np.zeros(101)
    pmf[[10, 50, 100]] = [0.2, 0.5, 0.3]
    w = Workload("t", pmf, decode_mean=40.0, decode_max=120)
    s, d = sample_lengths(w, 40_000, seed=2)
    assert set(np.unique(s)) == {10, 50, 100}
    assert np.mean(s == 50) == pytest.approx(0.5, abs=0.01)
    assert d.min() >= 1 and d.max() <= 120
    assert d.mean() == pytest.approx(40.0, rel=0.05)  # geometric, clipping removes ~1%
    real = load_workload("azure-conv-2023")
    if real.joint is not None:  # conditional outputs: E[d | s] follows the joint's means
        s2, d2 = sample_lengths(real, 40_000, seed=4)
        assert d2.mean() == pytest.approx(real.decode_mean, rel=0.15)
    reqs = requests_from_workload(w, 1000, 10.0, seed=1)
    assert [r.rid for r in reqs] == list(range(1000))
    assert all(a.arrival <= b.arrival for a, b in zip(reqs, reqs[1:], strict=False))


def test_requests_from_trace_scales_times_and_clips(tmp_path):
    from planner.sim.arrivals import requests_from_trace

    rng = np.random.default_rng(0)
    t = np.cumsum(rng.exponential(2.0, size=500))
    rows = ["ts,inp,out"] + [f"{x:.6f},{rng.integers(1, 9000)},{rng.integers(0, 50)}"
                             for x in t]
    path = tmp_path / "t.csv"
    path.write_text("\n".join(rows) + "\n")
    cols = {"input": "inp", "output": "out", "time": "ts"}
    reqs = requests_from_trace(path, "csv", rate=100.0, columns=cols, max_input=8000)
    arr = np.array([r.arrival for r in reqs])
    assert len(reqs) == 500 and arr[0] == 0.0
    assert (len(arr) - 1) / arr[-1] == pytest.approx(100.0)
    assert max(r.input_len for r in reqs) <= 8000 and min(r.output_len for r in reqs) >= 1
    few = requests_from_trace(path, "csv", columns=cols, n=50)
    assert len(few) == 50
    assert few[-1].arrival == pytest.approx(t[49] - t[0], abs=1e-5)
