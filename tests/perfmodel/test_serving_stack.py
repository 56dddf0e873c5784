"""Serving-stack factors of GPUs priced from vendor priors (perfmodel.serving_stack)."""

from __future__ import annotations

import numpy as np
import pytest
from script_module import load_script

from perfmodel import serving_stack as st
from perfmodel import validation as val
from perfmodel.aggregated import aggregated_point
from perfmodel.calibration import Calibration
from perfmodel.hardware import get_gpu
from perfmodel.models import get_model
from perfmodel.validation_split import held_out


def _script():
    return load_script("fit_serving_stack")


def test_the_fit_read_calibration_rows_of_current_stacks_only():
    rows = {r["case"]: r for r in val.table()}
    entries = st.shipped()["factors"]
    assert entries, "no factors shipped"
    for vendor, archs in entries.items():
        for arch, engines in archs.items():
            for engine, e in engines.items():
                assert e["fitted_on"] and len(e["fitted_on"]) == e["rows"]
                for cid in e["fitted_on"]:
                    r = rows[cid]
                    assert not held_out(cid) and not r["held_out"]
                    assert (r["vendor"], get_gpu(r["gpu"]).arch, r["engine"]) == (
                        vendor, arch, engine)
                    assert str(r["date"]) >= st.FIT_FROM and r["scored"]
                # the fit is least squares on log errors: its objective is no worse than
                # without the factors (the median may be -- calibration rows that disagree
                # pull it both ways, as cdna3 vLLM's do since the Nov 2025 AMD rows)
                after = np.log1p([rows[cid]["error"] for cid in e["fitted_on"]])
                before = np.log1p([rows[cid]["flipped"]["serving_stack"]
                                   for cid in e["fitted_on"]])
                assert np.all(np.isfinite(before))
                assert float(np.sum(after ** 2)) <= float(np.sum(before ** 2)) + 1e-9


def test_the_shipped_factors_are_the_fit_of_todays_rows():
    """Re-running the fit reproduces the shipped file (scripts/fit_serving_stack.py)."""
    assert _script().main(["--check"]) == 0


def test_factors_apply_only_to_gpus_priced_from_priors():
    f = st.shipped()["factors"]["amd"]["cdna3"]["sglang"]
    mi300 = get_gpu("MI300X")
    assert st.priced_from_priors(mi300) and not st.priced_from_priors(get_gpu("H200"))
    assert Calibration(engine="sglang").serving_factor(mi300, "prefill") == f["prefill"]
    assert Calibration(engine="sglang").serving_factor(mi300, "decode") == f["decode"]
    assert Calibration(engine="sglang").serving_factor(get_gpu("H200"), "decode") == 1.0
    over = Calibration(engine="sglang", serving_override=(2.0, 3.0))
    assert over.serving_factor(mi300, "prefill") == 2.0
    assert over.serving_factor(mi300, "decode") == 3.0
    assert over.serving_factor(get_gpu("B200"), "decode") == 1.0


def test_the_factors_are_named_in_the_breakdown_and_scale_their_phase():
    from dataclasses import replace

    m = replace(get_model("deepseek-r1"), weight_dtype="fp8", weight_block_scaled=True,
                kv_dtype="fp8")
    g = get_gpu("MI300X")
    plain = Calibration(engine="sglang", serving_override=(1.0, 1.0))
    slow = Calibration(engine="sglang", serving_override=(1.0, 2.0))
    a = aggregated_point(g, m, 8, 1, 1, 1000, 1000.0, 0.0, plain, batch=16)
    b = aggregated_point(g, m, 8, 1, 1, 1000, 1000.0, 0.0, slow, batch=16)
    assert "serving_stack" not in a.breakdown and b.breakdown["serving_stack"] > 0
    # the decode work doubles: the mean pass is nearly 2x (its prefill share is small)
    assert b.pass_s == pytest.approx(2.0 * a.pass_s, rel=0.05)
    assert b.pass_s == pytest.approx(sum(b.breakdown.values()), rel=1e-9)
    pre = Calibration(engine="sglang", serving_override=(3.0, 1.0))
    c = aggregated_point(g, m, 8, 1, 1, 1000, 1000.0, 0.0, pre, batch=16)
    # the prompt increment of a mixed pass triples: TTFT more than doubles
    assert c.ttft_s > 2.0 * a.ttft_s and c.pass_s < 1.1 * a.pass_s
    assert np.isfinite(c.rps) and c.rps < a.rps


# --------------------------------------------------------------- earlier stacks (legacy era)
def test_a_sources_date_sets_its_era():
    assert st.era_of("2024-12") == "legacy" and st.era_of(st.FIT_FROM) == "current"
    assert st.era_of("2026-02") == "current" and st.era_of("") == "current"
    cases = val.cases_by_id()
    assert cases["na-dstack-h100-l405b-tp8-2k2k-n4"].era == "legacy"  # dstack, 2024-12
    assert cases["sglcb-b200-q3-235b-tp8-chat-c16"].era == "current"  # SGLang cookbook
    assert cases["na-dstack-h100-l405b-tp8-2k2k-n4"].calibration().stack_era == "legacy"


def test_the_legacy_fit_read_calibration_rows_of_earlier_stacks_only():
    rows = {r["case"]: r for r in val.table()}
    legacy = st.shipped().get("legacy") or {}
    assert legacy, "no legacy factors shipped"
    for vendor, engines in legacy.items():
        for engine, e in engines.items():
            assert len(e["fitted_on"]) == e["rows"] >= st.LEGACY_MIN_ROWS
            for cid in e["fitted_on"]:
                r = rows[cid]
                assert not held_out(cid) and r["scored"]
                assert (r["vendor"], r["engine"]) == (vendor, engine)
                assert st.era_of(str(r["date"])) == "legacy"
            # least squares on log errors: no worse than pricing them as today's stack
            after = np.log1p([rows[cid]["error"] for cid in e["fitted_on"]])
            before = np.log1p([rows[cid]["flipped"]["stack_era"] for cid in e["fitted_on"]])
            assert float(np.sum(after ** 2)) <= float(np.sum(before ** 2)) + 1e-9


def test_legacy_factors_apply_to_every_gpu_of_the_vendor_only_in_the_legacy_era():
    e = st.shipped()["legacy"]["nvidia"]["vllm"]
    h100 = get_gpu("H100-SXM")
    today = Calibration(engine="vllm")
    then = Calibration(engine="vllm", stack_era="legacy")
    assert today.serving_factor(h100, "prefill") == 1.0  # measured kernels: no factor
    assert then.serving_factor(h100, "prefill") == e["prefill"]
    assert then.serving_factor(h100, "decode") == e["decode"]
    # on a priors-priced GPU the era multiplies today's factors
    mi300, amd = get_gpu("MI300X"), st.shipped()["legacy"]["amd"]["vllm"]
    cur = st.shipped()["factors"]["amd"]["cdna3"]["vllm"]
    assert Calibration(engine="vllm", stack_era="legacy").serving_factor(mi300, "decode") \
        == pytest.approx(cur["decode"] * amd["decode"])
    over = Calibration(engine="vllm", stack_era="legacy", legacy_override=(2.0, 3.0))
    assert over.serving_factor(h100, "decode") == 3.0
    assert Calibration(engine="vllm", legacy_override=(2.0, 3.0)).serving_factor(
        h100, "decode") == 1.0  # an override does nothing in today's era


def test_an_unknown_era_is_refused():
    from perfmodel.errors import InputError

    with pytest.raises(InputError, match="stack era"):
        Calibration(engine="vllm", stack_era="1999")


def test_a_legacy_row_priced_as_todays_stack_is_its_sensitivity_column():
    case = val.cases_by_id()["na-dstack-h100-l405b-tp8-2k2k-n64"]
    then, now = val.predict(case), val.predict(val.FLIPS["stack_era"](case))
    assert now > then  # the era's stack was slower (its fitted factors exceed 1)
    assert val.FLIPS["stack_era"](val.cases_by_id()["sglcb-b200-q3-235b-tp8-chat-c16"]) is None
