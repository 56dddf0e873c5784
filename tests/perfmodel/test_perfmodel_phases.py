"""Phase models: monotonicity, closed forms against brute force, memory and batch rules."""

from __future__ import annotations

import numpy as np
import pytest

from perfmodel import (
    DEFAULT_CALIBRATION as CAL,
)
from perfmodel import (
    ParallelConfig,
    enumerate_configs,
    get_gpu,
    get_model,
    max_decode_batch,
    prefill_time,
    step_model,
    thesis_batch_rule,
)
from perfmodel.decode import _sum_max_linear
from perfmodel.parallel import validate_config
from planner.core.errors import PlannerError

DS, LLAMA = get_model("deepseek-v3"), get_model("llama-3.1-70b")
H200 = get_gpu("H200")
col = lambda x: np.array([[float(x)]])  # noqa: E731


def test_enumeration_covers_tp_dp_products_and_ep_divisors():
    configs = enumerate_configs(16, DS)
    assert all(c.tp * c.dp == 16 and 16 % c.ep == 0 for c in configs)
    assert {c.tp for c in configs} == {1, 2, 4, 8, 16}
    assert {c.ep for c in configs} == {1, 2, 4, 8, 16}
    assert {c.ep for c in enumerate_configs(8, LLAMA)} == {1}
    # tp must divide the 64 heads of Llama-3-70B: an island of 128 has no tp=128
    assert max(c.tp for c in enumerate_configs(128, LLAMA)) == 64


@pytest.mark.parametrize("cfg,message", [
    (ParallelConfig(3, 5, 1), "must equal the island size 16"),
    (ParallelConfig(4, 4, 3), "'ep' \\(3\\) must divide 16"),
    (ParallelConfig(0, 16, 1), "'tp' must be >= 1"),
])
def test_validate_config_names_field(cfg, message):
    with pytest.raises(PlannerError, match=message):
        validate_config(cfg, 16, DS)


def test_prefill_time_grows_with_length_and_shrinks_with_cache_hits():
    s = np.array([[128.0, 1024.0, 4096.0, 8192.0]])
    t = prefill_time(H200, DS, s, col(1), col(16), col(16), 0.0, CAL)[0]
    assert np.all(np.diff(t) > 0)
    # quadratic attention makes time per token grow with length
    assert t[3] / 8192 > t[2] / 4096
    cached = prefill_time(H200, DS, s, col(1), col(16), col(16), 0.5, CAL)[0]
    assert np.all(cached < t)


def test_prefill_tensor_parallel_speeds_up_one_request():
    s = np.array([[4096.0]])
    t1 = prefill_time(H200, LLAMA, s, col(1), col(8), col(1), 0.0, CAL)[0, 0]
    t8 = prefill_time(H200, LLAMA, s, col(8), col(1), col(1), 0.0, CAL)[0, 0]
    assert t8 < t1 / 4  # the all-reduce costs something, but not most of the gain


def test_decode_step_grows_with_batch_and_context():
    batches = np.array([[1.0, 8.0, 64.0, 256.0]])
    steps = step_model(H200, DS, batches, col(1), col(16), col(16), CAL)
    t_short, t_long = steps.step_time(1000.0)[0], steps.step_time(8000.0)[0]
    assert np.all(np.diff(t_short) > 0) and np.all(t_long > t_short)
    # batching amortises weight reads: time per token falls with the batch
    assert np.all(np.diff(t_short / batches[0]) < 0)


@pytest.mark.parametrize("u,slope,floor,d", [
    (1.0, 0.5, 10.0, 40), (20.0, 0.1, 5.0, 7), (0.0, 1.0, 100.0, 50), (3.0, 0.0, 4.0, 9),
])
def test_closed_form_sum_matches_loop(u, slope, floor, d):
    brute = sum(max(u + slope * i, floor) for i in range(1, d + 1))
    assert _sum_max_linear(np.float64(u), np.float64(slope), np.float64(floor), d) == (
        pytest.approx(brute))


def test_request_time_is_sum_of_step_times():
    steps = step_model(H200, DS, np.array([[32.0]]), col(2), col(8), col(16), CAL)
    s, d = 3000.0, 150
    brute = sum(steps.step_time(s + i)[0, 0] for i in range(1, d + 1))
    assert steps.request_time(s, d)[0, 0] == pytest.approx(brute, rel=1e-9)


def test_thesis_batch_rule():
    got = thesis_batch_rule(np.array([0.0, 5.0, 8.0, 13.0, 100.0, 5000.0]))
    assert got.tolist() == [0, 5, 8, 8, 96, 1024]


def test_max_batch_falls_with_context_and_is_zero_when_weights_do_not_fit():
    ctx = np.array([[1000.0, 4000.0, 16000.0]])
    b = max_decode_batch(H200, DS, col(1), col(16), col(16), ctx, CAL)[0]
    assert np.all(np.diff(b) < 0) and b[0] > 0
    assert max_decode_batch(get_gpu("H800"), DS, col(8), col(1), col(8), ctx, CAL).max() == 0


def test_mla_kv_is_replicated_across_tensor_parallel_ranks():
    # MLA caches one latent per token shared by all heads: tp does not shrink it, so the
    # batch per attention group cannot grow with tp the way GQA's does.
    ctx = np.array([[4000.0]])
    ds1 = max_decode_batch(H200, DS, col(1), col(16), col(16), ctx, CAL)[0, 0]
    ds8 = max_decode_batch(H200, DS, col(8), col(2), col(16), ctx, CAL)[0, 0]
    ll1 = max_decode_batch(H200, LLAMA, col(1), col(1), col(1), ctx, CAL)[0, 0]
    ll8 = max_decode_batch(H200, LLAMA, col(8), col(1), col(1), ctx, CAL)[0, 0]
    assert ds8 < 2 * ds1
    assert ll8 > 8 * ll1
