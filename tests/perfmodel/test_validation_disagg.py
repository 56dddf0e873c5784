"""The end-to-end reading of disaggregated (xPyD) rows: a closed-loop client over a
prefill station, a KV transfer and a decode station (perfmodel.validation_disagg)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from perfmodel import validation as val
from perfmodel.validation_disagg import Side, benchmark_run, disaggregated_point

PRE = Side(workers=1, tp=8, dp=1, ep=8, budget=16384)
DEC = Side(workers=1, tp=8, dp=1, ep=8)
ROW = dict(id="t-disagg", source="T", gpu="H200", gpus=16, model="deepseek-r1",
           weights="fp8_block", kv="fp8", engine="sglang", tp=8, dp=1, ep=8,
           mode="disaggregated", isl=922, osl=921.5, unit="output_tok_s_per_gpu", value=1.0,
           quote="", batch_per_group=True, prefill=PRE, decode=DEC)


def _case(**kw) -> val.Case:
    return val.Case(**{**ROW, **kw})


def test_littles_law_holds_below_saturation():
    case = _case(concurrency=64)
    pt = disaggregated_point(case, PRE, DEC)
    assert not pt.saturated
    assert pt.rps * (pt.ttft_s + case.osl * pt.tpot_s) == pytest.approx(64, rel=1e-3)
    assert val.predict(case) == pytest.approx(pt.rps * case.osl / 16)


def test_rate_rises_with_clients_then_a_side_binds():
    rates = [disaggregated_point(_case(concurrency=c), PRE, DEC).rps
             for c in (1, 8, 64, 512, 4096, 8192)]
    assert all(a < b for a, b in zip(rates[:4], rates[1:5], strict=True))
    top = disaggregated_point(_case(concurrency=8192), PRE, DEC)
    assert top.saturated == "decode" and rates[-1] == rates[-2]  # the surplus queues
    # a second decode worker lifts the decode-bound rate; the TPOT at one client is
    # the decode step of one sequence
    two = replace(DEC, workers=2)
    more = disaggregated_point(_case(concurrency=8192, gpus=24, decode=two), PRE, two)
    assert more.rps > 1.5 * top.rps
    one = disaggregated_point(_case(concurrency=1), PRE, DEC)
    assert one.decode_batch == 1 and one.prompts_per_pass == 1


def test_the_engine_limit_caps_the_decode_batch():
    capped = replace(DEC, max_num_seqs=32)
    pt = disaggregated_point(_case(concurrency=4096, decode=capped), PRE, capped)
    assert pt.decode_batch == 32 and pt.saturated == "decode"


def test_posed_sides_are_checked():
    row = {**{k: v for k, v in ROW.items() if k not in ("prefill", "decode",
                                                        "batch_per_group")},
           "concurrency": 8, "stated": ["gpu"],
           "prefill": {"workers": 1, "tp": 8, "dp": 1, "ep": 8, "gpus_per_worker": 8},
           "decode": {"workers": 1, "tp": 8, "dp": 1, "ep": 8, "budget": None}}
    case = val.posed_case(row)
    assert case.prefill == Side(1, 8, 1, 8) and case.decode == Side(1, 8, 1, 8)
    with pytest.raises(val.NotPredictable, match="gpus_per_worker 4 is not tp x dp"):
        val.posed_case({**row, "prefill": {**row["prefill"], "gpus_per_worker": 4}})
    with pytest.raises(val.NotPredictable, match="unknown keys"):
        val.posed_case({**row, "decode": {**row["decode"], "wokers": 2}})
    with pytest.raises(val.NotPredictable, match="gpus 24 is not prefill 8"):
        val.predict(replace(case, gpus=24))
    with pytest.raises(val.NotPredictable, match="needs the client's concurrency"):
        val.predict(replace(case, concurrency=0))
    with pytest.raises(val.NotPredictable, match="needs both"):
        val.predict(replace(case, decode=None))


def test_every_posed_disaggregated_row_poses_a_case():
    """The posed xPyD rows (posed/inferencex_disagg.yaml) read as cases whose two sides
    add up to the row's GPUs, and carry no recipe key the reading does not account for."""
    from perfmodel.validation_disagg import NOT_PRICED
    from perfmodel.validation_split import load_posed

    rows = [r for r in load_posed() if r["mode"] == "disaggregated"]
    assert len(rows) == 108
    for row in rows:
        case = val.posed_case(row)
        assert case.prefill is not None and case.decode is not None
        assert case.prefill.gpus + case.decode.gpus == case.gpus, row["id"]
        for side in ("prefill", "decode"):
            keys = set(row[side]) - {"gpus_per_worker"}
            assert keys <= set(Side.__dataclass_fields__) | set(NOT_PRICED), row["id"]


def test_sglang_pass_tokens_take_the_tighter_cap():
    assert Side(1, 1, 8, 8, budget=-1, max_prefill_tokens=8192).pass_tokens == 8192
    assert Side(1, 1, 8, 8, budget=16384, max_prefill_tokens=32768).pass_tokens == 16384
    assert Side(1, 1, 8, 8).pass_tokens == 0


@pytest.mark.parametrize("clients", [1, 16, 256, 4096])
def test_the_run_never_beats_the_steady_state(clients):
    """Start-up, clumping and drain only cost: the played-out rate stays at or below
    the steady state's, and within reach of it."""
    case = _case(concurrency=clients, num_prompts=10 * clients)
    run = benchmark_run(case, PRE, DEC)
    steady = disaggregated_point(case, PRE, DEC).rps
    rate = run.output_tokens_per_s / case.osl
    assert rate <= steady * 1.01
    assert rate >= 0.5 * steady


def test_rate_rows_with_num_prompts_are_read_as_the_run():
    case = _case(concurrency=64, num_prompts=640)
    run = benchmark_run(case, PRE, DEC)
    assert val.predict(case) == pytest.approx(run.output_tokens_per_s / case.gpus)
    # a TTFT row keeps the steady-state point; so does a rate row without num_prompts
    ttft = replace(case, unit="ttft_ms")
    assert val.predict(ttft) == pytest.approx(
        disaggregated_point(case, PRE, DEC).ttft_s * 1e3)
    steady = replace(case, num_prompts=0)
    assert val.predict(steady) == pytest.approx(
        disaggregated_point(case, PRE, DEC).rps * case.osl / case.gpus)


def test_each_side_routes_as_its_frontend_and_engine_do():
    """Dynamo's frontend deals the workers in turn; within a worker SGLang deals its
    attention-DP groups in turn and TensorRT-LLM takes the least loaded; the flipped
    posing pools the side's routing and keeps its workers; an MoE model's groups run in
    lockstep, a dense model's alone; an unknown rule is a posing error."""
    from perfmodel.validation_disagg import routing

    side = Side(workers=3, tp=1, dp=4, ep=4)
    sgl = routing(_case(), side)
    assert (sgl.workers, sgl.dp, sgl.within) == (3, 4, "round_robin")
    assert routing(_case(engine="trtllm"), side).within == "least_loaded"
    pooled = routing(_case(router="pooled"), side)
    assert (pooled.workers, pooled.groups, pooled.pooled) == (3, 12, True)
    assert sgl.lockstep and not sgl.pooled
    assert not routing(_case(model="llama-3.1-70b"), side).lockstep
    with pytest.raises(val.NotPredictable, match="router"):
        routing(_case(router="random"), side)


def test_the_router_flip_is_reported_exactly_for_rows_read_as_a_run():
    run_row = _case(concurrency=64, num_prompts=640, prefill=replace(PRE, workers=2),
                    decode=replace(DEC, workers=2), gpus=32)
    flipped = val.sensitivity(run_row)["router"]
    pooled = replace(run_row, router="pooled")
    assert flipped == pytest.approx(val.error(run_row, val.predict(pooled)))
    for other in (replace(run_row, num_prompts=0), replace(run_row, unit="ttft_ms")):
        assert np.isnan(val.sensitivity(other)["router"])


def test_the_published_ttft_gap_is_the_quoted_mean_ttft_above_the_runs_own():
    """The quote's mean TTFT parsed; the gap summary is that minus the run's mean TTFT,
    rows without a stated TTFT skipped."""
    from perfmodel.validation_disagg import published_mean_ttft, ttft_gap_summary

    assert published_mean_ttft("mean_tpot 0.0074 s, mean_ttft 4.963 s, mean_itl") == 4.963
    assert published_mean_ttft("no latency quoted") is None
    case = _case(concurrency=16, num_prompts=160)
    ours = benchmark_run(case, PRE, DEC).mean_ttft_s
    doc = ttft_gap_summary([(case, f"mean_ttft {ours + 2.0} s"), (case, "none"),
                            (case, f"mean_ttft {ours + 1.0} s")])
    assert doc["rows"] == 2 and doc["median_s"] == pytest.approx(1.5)
    assert doc["q1_s"] == pytest.approx(1.25) and doc["q3_s"] == pytest.approx(1.75)
    assert ttft_gap_summary([(case, "none")]) == {"rows": 0}


def test_the_wide_decode_summary_counts_only_decodes_beyond_the_threshold():
    from perfmodel.validation_disagg import WIDE_EP, wide_ep_decode_summary

    rows = [(48, 0.30, True, "sglang", "GB300-NVL72"), (72, -0.05, False, "vllm", "H100-SXM"),
            (64, 0.10, False, "sglang", "GB200-NVL72"), (WIDE_EP, 0.90, False, "x", "y"),
            (24, -0.20, True, "x", "y"), (8, 5.0, False, "x", "y")]
    s = wide_ep_decode_summary(rows)
    assert s["rows"] == 3 and s["held_out_rows"] == 1
    assert s["median_signed"] == 0.10 and s["min_signed"] == -0.05
    assert s["max_signed"] == 0.30
    assert s["engines"] == ["sglang", "vllm"]
    assert s["gpus"] == ["GB200-NVL72", "GB300-NVL72", "H100-SXM"]
    # the comparison set is 17-32 GPUs: the 8-GPU row's +500 % is not in it
    assert s["narrower_rows"] == 2 and abs(s["narrower_median_signed"] - 0.35) < 1e-12
    assert wide_ep_decode_summary(rows[3:]) == {"rows": 0, "threshold_ep": WIDE_EP}
