"""Aggregated serving as mixed and decode-only passes (perfmodel.aggregated, issue 29)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from perfmodel.aggregated import _one_pass, aggregated_point, mixed_pass, pass_outcome
from perfmodel.calibration import Calibration
from perfmodel.hardware import get_gpu
from perfmodel.models import get_model

H200 = get_gpu("H200")
DSR1 = replace(get_model("deepseek-r1"), weight_dtype="fp8", weight_block_scaled=True,
               kv_dtype="fp8")
LLAMA70 = get_model("llama-3.1-70b").with_dtypes("fp8", "fp8")


def _total(comp):
    return float(np.ravel(sum(v for k, v in comp.items() if not k.startswith("_")))[0])


def _spread_pass(gpu, model, b, s, d, tp, dp, ep, calib):
    """The pass the model priced before: every step carries b n / d prompt tokens."""
    chunk = np.array(b * s / d)
    return _total(_one_pass(gpu, model, np.array(float(b)), chunk, np.array(float(s)),
                            np.array(s + d / 2.0), float(tp), float(dp), float(ep), 0.0,
                            calib, 0))


def test_a_moe_decode_step_does_not_pay_for_the_whole_expert_set():
    """Four DeepSeek sequences route to ~32 of 256 experts; spreading 32 prompt tokens
    over every step made each read nearly all of them.  With whole prompts in a few
    mixed passes the mean pass is close to a decode-only step."""
    calib = Calibration(engine="sglang", prefill_token_budget=32768)
    comp = mixed_pass(H200, DSR1, 4.0, 7373.0, 921.0, 8.0, 1.0, 1.0, 0.0, calib)
    share = float(np.ravel(comp["_share"])[0])
    assert share == pytest.approx(4.0 / 921.0, rel=1e-6)  # one prompt per 230 passes
    mean = _total(comp)
    spread = _spread_pass(H200, DSR1, 4, 7373.0, 921.0, 8, 1, 1, calib)
    assert mean < 0.8 * spread


def test_a_dense_model_costs_about_the_same_either_way():
    """Dense layers read their weights once per pass whatever the rows: the two forms
    agree within a few per cent."""
    calib = Calibration(engine="trtllm")
    comp = mixed_pass(H200, LLAMA70, 64.0, 2000.0, 500.0, 2.0, 1.0, 1.0, 0.0, calib)
    spread = _spread_pass(H200, LLAMA70, 64, 2000.0, 500.0, 2, 1, 1, calib)
    assert _total(comp) == pytest.approx(spread, rel=0.08)


def test_ttft_is_one_mixed_pass_when_the_prompt_fits_the_budget():
    calib = Calibration(engine="sglang", prefill_token_budget=32768)
    pt = aggregated_point(H200, DSR1, 8, 1, 1, 7373, 921.0, 0.0, calib, batch=4)
    comp = mixed_pass(H200, DSR1, 4.0, 7373.0, 921.0, 8.0, 1.0, 1.0, 0.0, calib)
    assert pt.ttft_s == pytest.approx(float(np.ravel(comp["_mixed_s"])[0]))
    assert pt.prefill_tokens_per_pass == pytest.approx(7373.0)
    # a prompt longer than the budget takes ceil(n / chunk) passes: SGLang runs them
    # alone (the whole 2,048), an engine that mixes them with the decodes has 2,044 left
    small = Calibration(engine="sglang", prefill_token_budget=2048)
    pt2 = aggregated_point(H200, DSR1, 8, 1, 1, 7373, 921.0, 0.0, small, batch=4)
    assert pt2.prefill_tokens_per_pass == pytest.approx(2048.0)
    assert pt2.ttft_s > 3.0 * pt2.pass_s
    mixing = Calibration(engine="vllm", prefill_token_budget=2048)
    pt3 = aggregated_point(H200, DSR1, 8, 1, 1, 7373, 921.0, 0.0, mixing, batch=4)
    assert pt3.prefill_tokens_per_pass == pytest.approx(2044.0)


def test_sglang_runs_prompts_in_passes_of_their_own():
    """SGLang's scheduler (``mixed_prefill`` off) prefills in a pass without the decode
    rows while the decodes wait: its "mixed" pass is the decode step plus that prefill
    pass, which costs more than the same prompt tokens riding in the decode step (the
    weights and the experts are read twice), so at the same batch the island is
    slower."""
    sgl = Calibration(engine="sglang", prefill_token_budget=8192)
    assert sgl.profile.mixed_prefill is False
    comp = mixed_pass(H200, DSR1, 64.0, 1000.0, 1000.0, 8.0, 1.0, 8.0, 0.0, sgl)
    chunk = np.ravel(comp["_chunk"])
    args = (np.array(1000.0), np.array(1500.0), 8.0, 1.0, 8.0, 0.0, sgl, 0)
    plain = _total(_one_pass(H200, DSR1, np.array(64.0), 0.0 * chunk, *args))
    alone = _one_pass(H200, DSR1, np.array(0.0), chunk, *args)
    alone_s = _total(alone) - float(np.ravel(alone["attention_decode"])[0])
    assert float(np.ravel(comp["_mixed_s"])[0]) == pytest.approx(plain + alone_s, rel=1e-9)
    together = _total(_one_pass(H200, DSR1, np.array(64.0), chunk, *args))
    assert plain + alone_s > together


def test_a_budget_that_cannot_keep_up_limits_the_rate_to_what_it_prefills():
    """512 sequences of 10 tokens each need 512 x 2000 / 10 prompt tokens per step; 88
    tokens of budget are left after the decodes, so the island completes requests at
    the rate it prefills them, not at B / d per step."""
    calib = Calibration(engine="trtllm", prefill_token_budget=600)
    b, s, d = 512.0, 2000.0, 10.0
    comp = mixed_pass(H200, LLAMA70, b, s, d, 2.0, 1.0, 1.0, 0.0, calib)
    out = pass_outcome(dict(comp), b, s, d, 1, 0.0)
    t, rps, chunk = out.pass_s, out.rps, out.chunk
    assert float(np.ravel(chunk)[0]) == pytest.approx(88.0)
    assert float(np.ravel(rps)[0]) == pytest.approx(88.0 / s / float(np.ravel(t)[0]))
    assert float(np.ravel(rps)[0]) < b / d / float(np.ravel(t)[0])
