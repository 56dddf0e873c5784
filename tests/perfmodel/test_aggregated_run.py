"""A client's finite run against an aggregated island (perfmodel.aggregated_run) and the
validation rows read that way (perfmodel.validation_finite)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import perfmodel.aggregated_run as ar
from perfmodel import validation as val
from perfmodel import validation_finite as finite
from perfmodel.aggregated import aggregated_point, mixed_pass, pass_seconds
from perfmodel.calibration import Calibration
from perfmodel.hardware import get_gpu
from perfmodel.models import get_model


def _flat(slots: int, decode: float = 1.0, prefill: float = 0.5,
          budget: float = np.inf) -> ar.PassTable:
    grid = np.array([1.0, 1e6])
    return ar.PassTable(np.full(slots + 1, decode), np.array([0.0, float(slots)]), grid,
                        np.full((2, 2), prefill), budget, True)


def test_play_by_hand() -> None:
    # 4 requests of 3 tokens, 2 slots, a pass 1 s, a pass with prompts 0.5 s: each wave is
    # one prefill pass (its first token) and two decode passes
    assert ar.play(_flat(2), np.array([3, 3, 3, 3]), 100.0) == pytest.approx(5.0)
    # a budget of 150 tokens splits the wave's 200 prompt tokens into two passes of 0.5 s
    # before the two decode passes
    assert ar.play(_flat(2, budget=150.0), np.array([3, 3]), 100.0) == pytest.approx(3.0)
    # a running sequence advances in a later prompt's pass: the 5-token answer takes its
    # own prefill pass, one decode pass, the third request's prefill pass and two more
    assert ar.play(_flat(2), np.array([5, 2, 3]), 100.0) == pytest.approx(4.0)


def test_drain_costs_time() -> None:
    # same mean, one long answer: the run lasts as long as the long answer runs alone
    even = ar.play(_flat(4), np.full(8, 10), 10.0)
    skew = ar.play(_flat(4), np.array([3, 3, 3, 3, 3, 3, 3, 59]), 10.0)
    assert skew > 2 * even


def test_output_laws_keep_the_mean() -> None:
    for law in (ar.FIXED, ar.OutputLaw("uniform", ratio=0.8), ar.OutputLaw("uniform", 0.0),
                ar.OutputLaw("gamma", cv=1.2, cap=1800)):
        x = law.draw(201.0, 5000)
        assert abs(x.mean() / 201.0 - 1.0) < 0.01, law
        assert x.min() >= 1
    u = ar.OutputLaw("uniform", ratio=0.8).draw(900.0, 2000)
    assert u.max() / u.min() < 1.0 / 0.8 + 0.01
    g = ar.OutputLaw("gamma", cv=1.2, cap=1800).draw(201.0, 5000)
    assert g.max() <= 1800 and 1.0 < g.std() / g.mean() < 1.3
    assert np.array_equal(g, ar.OutputLaw("gamma", cv=1.2, cap=1800).draw(201.0, 5000))
    with pytest.raises(ValueError):
        ar.OutputLaw("lognormal")


def test_pass_seconds_matches_the_steady_passes() -> None:
    gpu, model = get_gpu("H200"), get_model("deepseek-r1")
    for engine in ("vllm", "sglang"):
        calib = Calibration(engine=engine)
        b = np.array([8.0, 64.0])
        comp = mixed_pass(gpu, model, b, 1000.0, 1000.0, 8.0, 1.0, 8.0, 0.0, calib)
        chunk = comp["_chunk"]
        both = pass_seconds(gpu, model, b, chunk, 1000.0, 1500.0, 8, 1, 8, 0.0, calib)
        alone = pass_seconds(gpu, model, b, 0.0, 1000.0, 1500.0, 8, 1, 8, 0.0, calib)
        assert np.allclose(both, comp["_mixed_s"]) and np.allclose(alone, comp["_decode_s"])


@pytest.mark.parametrize("gpu,model,engine,tp", [("H100-SXM", "llama-3.1-70b", "vllm", 4),
                                                 ("H200", "deepseek-r1", "trtllm", 8)])
def test_a_long_fixed_run_is_near_the_steady_point(gpu, model, engine, tp) -> None:
    # fixed lengths run in waves; over many waves the rate is the steady point's within
    # what batching whole waves' prompts together saves
    g, m, calib = get_gpu(gpu), get_model(model), Calibration(engine=engine)
    ep = tp if m.is_moe else 1
    pt = aggregated_point(g, m, tp, 1, ep, 1000, 500.0, 0.0, calib)
    table = ar.island_table(g, m, tp, 1, ep, 1000.0, 1250.0, calib, pt.batch)
    run = ar.finite_run(table, ar.FIXED.draw(500.0, 20 * pt.batch), 1, 1000.0)
    assert abs(run.rps / pt.rps - 1.0) < 0.08


def test_groups_end_with_the_slowest() -> None:
    table = _flat(2)
    one = ar.finite_run(table, np.array([3, 3, 3, 3]), 1, 100.0)
    two = ar.finite_run(table, np.array([3, 9, 3, 9]), 2, 100.0)  # group 1 gets both 9s
    assert one.wall_s == pytest.approx(5.0)
    assert two.wall_s == pytest.approx(ar.play(table, np.array([9, 9]), 100.0))
    with pytest.raises(ValueError):
        ar.finite_run(table, np.array([]), 1, 100.0)


def test_rows_take_their_clients_law() -> None:
    cases = val.cases_by_id()
    assert finite.output_law(cases["na-gpustack-h200-dsr1-vllm-tp8-sharegpt"]).kind == "gamma"
    ix = finite.output_law(cases["ix-h200-sglang-dsr1-fp8-1k1k-tp8-ep1-c8"])
    assert (ix.kind, ix.ratio) == ("uniform", 0.8)
    assert finite.output_law(cases["sglcb-b200-q3-235b-tp8-chat-c16"]).ratio == 0.0
    assert finite.output_law(cases["na-dstack-h100-l405b-tp8-2k2k-n64"]) is ar.FIXED
    assert finite.spread(ar.OutputLaw("uniform", ratio=0.0)) == pytest.approx(4.0 / 3.0)


def test_finite_reading_and_its_flips() -> None:
    case = val.cases_by_id()["na-gpustack-h200-dsr1-vllm-tp8-sharegpt"]
    assert finite.reads_finite_run(case)
    steady = replace(case, reading="steady")
    assert not finite.reads_finite_run(steady)
    run, fixed, point = (val.predict(c) for c in (case, replace(case, outputs="fixed"), steady))
    # the drain of a spread of answer lengths is what the run adds over fixed lengths
    assert run < fixed
    flips = val.sensitivity(case)
    assert flips["finite_run"] == pytest.approx(val.error(case, point))
    assert flips["output_law"] == pytest.approx(val.error(case, fixed))
    # TPOT rows keep the steady point
    tpot = val.cases_by_id()["na-gpustack-h200-dsr1-vllm-tp8-sharegpt-c4-tpot"]
    assert not finite.reads_finite_run(tpot)


def test_sharegpt_spread_is_the_azure_conversation_traces() -> None:
    # the assumed ShareGPT law borrows the committed conversation workload's output CV
    from pathlib import Path

    import yaml

    root = Path(__file__).resolve().parents[2]
    dist = yaml.safe_load((root / "workloads" / "azure-conv-2023.yaml").read_text())[
        "decode"]["dist"]
    v, w = np.asarray(dist["values"], float), np.asarray(dist["weights"], float)
    mean = (v * w).sum() / w.sum()
    cv = np.sqrt((w * (v - mean) ** 2).sum() / w.sum()) / mean
    assert finite.SHAREGPT.cv == pytest.approx(cv, abs=0.005)
    law = finite.output_law(val.cases_by_id()["na-gpustack-h200-dsr1-vllm-tp8-sharegpt"])
    assert law.cap == 2048 - 219  # the sampler's cap at the row's mean prompt
