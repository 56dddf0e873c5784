"""perfmodel.error_band: p10/p90 bands per GPU family x engine x phase with coarser
fallbacks, capacities from a band, widening, and the leave-one-out coverage check."""

from __future__ import annotations

import numpy as np
import pytest

from perfmodel import error_band as eb


def rec(error: float, family: str = "hopper", vendor: str = "nvidia",
        engine: str = "trtllm", phase: str = "aggregated", gpu: str = "H100-SXM") -> dict:
    return {"error": error, "family": family, "vendor": vendor, "engine": engine,
            "phase": phase, "gpu": gpu, "scored": True, "held_out": True}


def test_a_full_class_has_its_own_p10_p90():
    errs = [-0.1, 0.0, 0.05, 0.1, 0.3]
    bands = eb.fit([rec(e) for e in errs], min_rows=5)
    b = bands["family=hopper engine=trtllm phase=aggregated"]
    lo, hi = np.percentile(errs, [10, 90])
    assert (b.lo_error, b.hi_error, b.rows) == (pytest.approx(lo), pytest.approx(hi), 5)
    assert eb.choose(bands, {"family": "hopper", "vendor": "nvidia", "engine": "trtllm",
                             "phase": "aggregated"}) is b


def test_fallback_goes_family_phase_then_vendor_phase_then_phase_then_all():
    rows = ([rec(e, engine="vllm") for e in (0.0, 0.1, 0.2)]
            + [rec(e, engine="sglang") for e in (0.3, 0.4)]              # hopper x agg: 5
            + [rec(e, family="blackwell", gpu="B200") for e in (0.5, 0.6, 0.7, 0.8, 0.9)]
            + [rec(-0.5, family="cdna3", vendor="amd", gpu="MI300X")]
            + [rec(e, phase="decode", family="ada", gpu="L40S") for e in (1, 2, 3, 4, 5)])
    bands = eb.fit(rows, min_rows=5)

    def cls(**kw):
        values = {"family": "hopper", "vendor": "nvidia", "engine": "vllm",
                  "phase": "aggregated", **kw}
        return eb.choose(bands, values).cls

    assert cls() == "family=hopper phase=aggregated"  # hopper x vllm has only 3 rows
    assert cls(family="ampere") == "vendor=nvidia phase=aggregated"
    assert cls(family="cdna3", vendor="amd") == "phase=aggregated"
    assert cls(phase="prefill") == "all"
    assert bands["all"].rows == len(rows)
    assert "family=cdna3 phase=aggregated" not in bands


def test_capacities_and_widening():
    b = eb.Band(-0.1, 0.2, "x", 9)
    p10, p90 = b.capacity(120.0)
    assert p10 == pytest.approx(100.0) and p90 == pytest.approx(120.0 / 0.9)
    w = b.widen(2.0)
    assert (w.lo_error, w.hi_error, w.widened) == (pytest.approx(-0.25), pytest.approx(0.35),
                                                   2.0)
    assert eb.Band(-1.2, 0.1, "x", 9).capacity(1.0)[1] == float("inf")


def test_cross_vendor_gpus_without_a_validated_class_are_widened():
    rows = [rec(e) for e in (0.0, 0.1, 0.2, 0.3, 0.4)]
    bands = eb.fit(rows, min_rows=5)
    plain = eb.band("MI300X", "vllm", "throughput", cross_vendor=False, bands=bands)
    wide = eb.band("MI300X", "vllm", "static", cross_vendor=True, bands=bands)
    assert plain.cls == wide.cls == "phase=aggregated" and wide.widened == eb.CROSS_VENDOR_WIDEN
    own = eb.band("H100-SXM", "trtllm", "aggregated", cross_vendor=True, bands=bands)
    assert own.widened == 1.0 and own.cls.startswith("family=")


def test_leave_one_out_scores_each_row_against_the_others():
    """Six rows of one class, MIN_ROWS 5: each is scored against the p10-p90 of the other
    five.  The two extreme rows fall outside (no other row reaches them), the four inner
    rows inside."""
    errs = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5]
    rows = [rec(e) for e in errs]
    loo = eb.leave_one_out(rows, min_rows=5)
    expected = []
    for i, e in enumerate(errs):
        lo, hi = np.percentile(errs[:i] + errs[i + 1:], [10, 90])
        expected.append(lo <= e <= hi)
    assert expected == [False, True, True, True, True, False]
    assert (loo["rows"], loo["inside"]) == (6, 4)
    assert loo["coverage"] == pytest.approx(4 / 6)
    # a row alone in its class is scored against the fallback the others give
    lone = rows[:5] + [rec(0.25, family="ampere", gpu="A100-80G")]
    assert eb.leave_one_out(lone, min_rows=5)["rows"] == 6


def test_families_come_from_the_catalog_arch():
    assert eb.family("H200") == "hopper"
    assert eb.family("GB300-NVL72") == eb.family("B200") == "blackwell"
    assert eb.family("MI300X") == "cdna3" and eb.vendor("MI300X") == "amd"
    assert eb.family("no-such-gpu") == "unknown"


def test_shipped_bands_answer_any_gpu_engine_and_phase():
    for gpu in ("H100-SXM", "MI300X", "L40S", "Arc-Pro-B60"):
        for phase in ("ttft", "decode", "aggregated"):
            b = eb.band(gpu, "vllm", phase)
            assert b.lo_error <= b.hi_error and b.rows >= 2
            p10, p90 = b.capacity(100.0)
            assert p10 <= p90
