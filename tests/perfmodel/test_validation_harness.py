"""How posed rows are read off the model: independent instances, closed-loop clients and
engine limits the deployment states (perfmodel.validation, issue 29)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from perfmodel import validation as val
from perfmodel.aggregated import aggregated_point
from perfmodel.hardware import get_gpu

MIXTRAL = dict(id="t-mixtral", source="T", gpu="H100-SXM", gpus=8, model="mixtral-8x7b",
               weights="fp8", kv="fp8", engine="trtllm", tp=1, dp=8, ep=1,
               mode="aggregated", isl=427, unit="output_tok_s_per_instance", value=1.0,
               quote="", osl=146.0, batch=896, budget=8192, batch_per_group=True)


def test_replicas_are_independent_instances():
    """Eight TP1 Mixtral servers on eight GPUs are eight islands of one GPU, not one
    island whose experts are split eight ways by width; the row scales one of them."""
    eight = val.Case(**MIXTRAL, replicas=8)
    one = val.Case(**{**MIXTRAL, "gpus": 1, "dp": 1})
    assert val.predict(eight) == pytest.approx(8.0 * val.predict(one))
    # read as one island, the experts split eight ways cost far more
    assert val.predict(val.Case(**MIXTRAL)) < 0.8 * val.predict(eight)


def test_replicas_must_divide_the_layout():
    with pytest.raises(val.NotPredictable, match="replicas 3 must divide"):
        val.predict(val.Case(**MIXTRAL, replicas=3))


def test_a_closed_loop_client_counts_requests_in_prefill():
    """Little's law: C requests in flight, each alive TTFT + (steps - 1) passes."""
    case = val.Case(**{**MIXTRAL, "gpus": 1, "dp": 1, "batch": 0, "concurrency": 16,
                       "unit": "output_tok_s_per_gpu"})
    pt = aggregated_point(get_gpu(case.gpu), case.spec(), 1, 1, 1, case.isl, case.osl, 0.0,
                          case.calibration(), batch=val.aggregated_batch(case))
    want = min(pt.rps, 16 / (pt.ttft_s + (case.osl - 1.0) * pt.pass_s))
    assert val.closed_loop_rps(case, pt) == pytest.approx(want)
    assert val.closed_loop_rps(case, pt) < pt.rps
    assert val.predict(case) == pytest.approx(want * case.osl)
    # an offline row (no client concurrency) keeps the engine's rate
    offline = replace(case, concurrency=0, batch=16)
    assert val.closed_loop_rps(offline, pt) == pt.rps


def test_stated_engine_limits_reach_the_model():
    """A deployment's memory fraction and CUDA-graph ceiling are priced: less memory
    holds fewer sequences; a lower graph ceiling runs big batches eagerly."""
    base = val.Case(**{**MIXTRAL, "gpus": 1, "dp": 1, "batch": 0, "engine": "sglang"})
    assert base.calibration().memory_fraction is None
    tight = replace(base, mem_fraction=0.7)
    assert tight.calibration().memory_fraction == 0.7
    assert val.predict(tight) < val.predict(base)
    g = replace(base, graph_max=8)
    assert g.calibration().profile.graph_max_on(get_gpu("H100-SXM"), 1) == 8
