"""The units and modes of the posed rows (perfmodel.validation, perfmodel.validation_units):
each reading is checked against the model's own lower-level calls on a hand-built case,
and the error's sign is the optimism sense for rates and times alike."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from perfmodel import validation as val
from perfmodel import validation_units as units
from perfmodel.aggregated import aggregated_point
from perfmodel.decode import step_model
from perfmodel.hardware import get_gpu
from perfmodel.memory import engine_batch_cap, max_decode_batch
from perfmodel.prefill import prefill_pass_time, prefill_time


def col(x: float) -> np.ndarray:
    return np.array([[float(x)]])


def case(**kw) -> val.Case:
    base = dict(id="t", source="T", gpu="H100-SXM", gpus=2, model="llama-3.1-8b",
                weights="fp8", kv="fp8", engine="vllm", tp=1, dp=2, ep=1,
                mode="aggregated", isl=2000, osl=500, unit="output_tok_s_per_instance",
                value=1.0, quote="", batch_per_group=True)
    return val.Case(**{**base, **kw})


def parts(c: val.Case):
    return get_gpu(c.gpu), c.spec(), c.calibration()


def test_concurrency_bounds_the_aggregated_batch_per_attention_group():
    c = case(concurrency=16)
    gpu, m, cal = parts(c)
    pt = aggregated_point(gpu, m, 1, 2, 1, 2000, 500.0, 0.0, cal, batch=8)  # 16 over dp 2
    assert pt.batch == 8
    rps = val.closed_loop_rps(c, pt)  # the client's 16 in flight include those prefilling
    assert rps <= pt.rps
    assert val.predict(c) == pytest.approx(rps * 500.0)  # the whole instance
    assert val.predict(replace(c, unit="output_tok_s_per_gpu")) == pytest.approx(
        rps * 500.0 / 2)
    assert val.predict(replace(c, unit="total_tok_s_per_gpu")) == pytest.approx(
        rps * 2500.0 / 2)
    assert val.predict(replace(c, unit="tpot_ms")) == pytest.approx(pt.tpot_s * 1e3)
    assert val.predict(replace(c, unit="itl_ms")) == pytest.approx(pt.tpot_s * 1e3)
    assert val.predict(replace(c, unit="ttft_mean_ms")) == pytest.approx(pt.ttft_s * 1e3)
    # the engine's own cap and an offline run's prompt count bound it the same way
    assert val.aggregated_batch(replace(c, max_num_seqs=5)) == 5
    assert val.aggregated_batch(replace(c, concurrency=0, num_prompts=6)) == 3
    assert val.aggregated_batch(replace(c, concurrency=0)) is None
    free = aggregated_point(gpu, m, 1, 2, 1, 2000, 500.0, 0.0, cal)
    assert val.predict(replace(c, concurrency=0)) == pytest.approx(free.rps * 500.0)
    assert free.rps > pt.rps


def test_slo_ceilings_go_to_the_aggregated_point():
    c = case(slo_ttft_ms=2000.0, slo_tpot_ms=20.0)
    gpu, m, cal = parts(c)
    pt = aggregated_point(gpu, m, 1, 2, 1, 2000, 500.0, 0.0, cal, ttft_ms=2000.0,
                          tpot_ms=20.0)
    assert val.predict(c) == pytest.approx(pt.rps * 500.0)


def test_decode_itl_is_the_step_time_and_batch_counts_per_group_when_posed():
    c = case(mode="decode", tp=2, dp=1, batch=8, context=3000, unit="itl_ms")
    gpu, m, cal = parts(c)
    for per_group, group in ((True, 8.0), (False, 16.0)):  # posed / validation_cases
        sm = step_model(gpu, m, col(group), col(2), col(1), col(1), cal)
        step = float(sm.step_time(3000.0)[0, 0])
        cc = replace(c, batch_per_group=per_group)
        assert val.predict(cc) == pytest.approx(step * 1e3)
        assert val.predict(replace(cc, unit="tpot_ms")) == pytest.approx(step * 1e3)
        assert val.predict(replace(cc, unit="output_tok_s_per_gpu")) == pytest.approx(
            group / step / 2)


def test_decode_without_a_batch_runs_the_largest_the_kv_cache_holds():
    c = case(mode="decode", tp=1, dp=1, gpus=1, batch=0, unit="output_tok_s_per_gpu")
    gpu, m, cal = parts(c)
    group = min(float(max_decode_batch(gpu, m, col(1), col(1), col(1), col(2500.0),
                                       cal)[0, 0]), engine_batch_cap(gpu, m, cal))
    sm = step_model(gpu, m, col(group), col(1), col(1), col(1), cal)
    step = float(sm.step_time(2000 + 250.0)[0, 0])
    assert group > 1 and val.predict(c) == pytest.approx(group / step)


def test_static_latency_is_one_batch_prefilled_then_decoded():
    c = case(mode="static", gpu="H200", gpus=2, tp=2, dp=1, batch=4, isl=128, osl=256,
             unit="static_e2e_latency_s")
    gpu, m, cal = parts(c)
    pre = float(prefill_pass_time(gpu, m, 128.0, col(2), col(1), col(1), 0.0, cal, 4.0)[0, 0])
    sm = step_model(gpu, m, col(4.0), col(2), col(1), col(1), cal)
    dec = float(sm.request_time(128.0, 256.0)[0, 0])
    assert val.predict(c) == pytest.approx(pre + dec)
    assert val.predict(replace(c, unit="output_tok_s_per_instance")) == pytest.approx(
        4 * 256 / (pre + dec))


def test_prefill_total_tokens_and_concurrency():
    c = case(mode="prefill", isl=2048, osl=1, concurrency=4, budget=16384,
             unit="total_tok_s_per_gpu")
    gpu, m, cal = parts(c)
    prompts = 2.0  # min(16384 / 2048 = 8, 4 requests over dp 2)
    t = float(prefill_pass_time(gpu, m, 2048.0, col(1), col(2), col(1), 0.0, cal,
                                prompts)[0, 0])
    assert val.predict(c) == pytest.approx(prompts * 2049 / t)
    assert val.predict(replace(c, unit="input_tok_s_per_gpu")) == pytest.approx(
        prompts * 2048 / t)


def test_ttft_units_in_ttft_mode_are_one_prompt_alone():
    c = case(mode="ttft", gpus=1, dp=1, isl=4096, unit="ttft_mean_ms")
    gpu, m, cal = parts(c)
    t = float(prefill_time(gpu, m, 4096.0, col(1), col(1), col(1), 0.0, cal)[0, 0])
    assert val.predict(c) == pytest.approx(t * 1e3)
    assert val.predict(replace(c, unit="ttft_ms")) == pytest.approx(t * 1e3)


def test_a_unit_without_a_reading_is_not_predictable():
    for mode, unit in (("decode", "ttft_ms"), ("ttft", "output_tok_s_per_gpu"),
                       ("aggregated", "static_e2e_latency_s"),
                       ("prefill", "output_tok_s_per_gpu")):
        with pytest.raises(val.NotPredictable, match="no path"):
            val.predict(case(mode=mode, unit=unit, batch=1))
    with pytest.raises(ValueError, match="unknown unit"):
        units.parse("tok_s_per_rack")


def test_latency_errors_read_in_the_optimism_sense():
    """Positive = the model promises more than was measured: a TPOT we predict shorter
    than measured, or a throughput we predict higher, both read positive; +20 % means the
    measured capacity is our figure / 1.2."""
    assert units.optimism_error("tpot_ms", 12.0, 10.0) == pytest.approx(0.2)
    assert units.optimism_error("static_e2e_latency_s", 12.0, 10.0) == pytest.approx(0.2)
    assert units.optimism_error("ttft_mean_ms", 8.0, 10.0) == pytest.approx(-0.2)
    assert units.optimism_error("output_tok_s_per_gpu", 10.0, 12.0) == pytest.approx(0.2)
    for unit in units.TIMES:
        assert units.is_time(unit)
        c = case(unit=unit, value=10.0)
        assert val.error(c, 8.0) > 0 > val.error(c, 12.0)
    for q in units.RATES:
        c = case(unit=f"{q}_per_gpu", value=10.0)
        assert val.error(c, 12.0) > 0 > val.error(c, 8.0)


def test_phase_of_each_unit_and_mode():
    assert units.phase("aggregated", "ttft_mean_ms") == "prefill"
    assert units.phase("aggregated", "tpot_ms") == "decode"
    assert units.phase("decode", "itl_ms") == "decode"
    assert units.phase("decode", "output_tok_s_per_gpu") == "decode"
    assert units.phase("prefill", "total_tok_s_per_gpu") == "prefill"
    assert units.phase("static", "static_e2e_latency_s") == "aggregated"
    assert units.phase("aggregated", "output_tok_s_per_node") == "aggregated"
    assert [units.normalise_phase(p) for p in ("ttft", "itl", "throughput")] == [
        "prefill", "decode", "aggregated"]


def posed(**kw):
    base = dict(id="p", source="S", gpu="H100-SXM", gpus=1, model="llama-3.1-8b",
                weights="bf16", kv="bf16", engine="vllm", tp=1, dp=1, ep=1,
                mode="aggregated", isl=1000, osl=100, unit="output_tok_s_per_instance",
                value=1.0, quote="q", stated=[], assumed={}, file="x.yaml",
                source_info=None)
    return {**base, **kw}


def test_posed_rows_become_cases_or_say_why_not():
    c = val.posed_case(posed(concurrency=8, dbo=True, budget=None, batch=None,
                             slo={"ttft_p99_ms": 2000, "tpot_p99_ms": 200}))
    assert (c.concurrency, c.overlap, c.budget, c.batch) == (8, True, 0, 0)
    assert (c.slo_ttft_ms, c.slo_tpot_ms, c.batch_per_group) == (2000.0, 200.0, True)
    for row, tag in ((posed(isl=None), "isl null"), (posed(pp=4), "pp > 1"),
                     (posed(model="no-such-model"), "catalog"),
                     (posed(gpu="no-such-gpu"), "catalog"),
                     (posed(mode="colocated"), "no path")):
        with pytest.raises(val.NotPredictable, match=tag):
            val.posed_case(row)
