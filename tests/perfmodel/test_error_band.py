"""perfmodel.error_band: prediction bands per GPU family x engine x phase with coarser
fallbacks, capacities from a band, widening, and the leave-one-out coverage check."""

from __future__ import annotations

import numpy as np
import pytest

from perfmodel import error_band as eb


def rec(error: float, family: str = "hopper", vendor: str = "nvidia",
        engine: str = "trtllm", phase: str = "aggregated", gpu: str = "H100-SXM") -> dict:
    return {"error": error, "family": family, "vendor": vendor, "engine": engine,
            "phase": phase, "gpu": gpu, "scored": True, "held_out": True}


def test_a_full_class_has_its_own_prediction_band():
    errs = [-0.1, 0.0, 0.05, 0.1, 0.3, 0.32, 0.4, 0.41, 0.5, 0.6]  # n = 10: k = 1
    bands = eb.fit([rec(e) for e in errs])
    b = bands["family=hopper engine=trtllm phase=aggregated"]
    assert (b.lo_error, b.hi_error, b.rows) == (-0.1, 0.6, 10)
    assert eb.choose(bands, {"family": "hopper", "vendor": "nvidia", "engine": "trtllm",
                             "phase": "aggregated"}) is b


def test_prediction_bounds_cover_a_new_row_at_least_80_percent():
    assert eb.prediction_bounds([0.1] * 8) is None  # k = 0 below 9 rows
    for n in (9, 10, 19, 20, 24, 29, 60):
        e = list(np.linspace(-1.0, 1.0, n))
        lo, hi = eb.prediction_bounds(e)
        k = int(np.floor(0.1 * (n + 1)))
        assert (lo, hi) == (e[k - 1], e[n - k])
        assert (n + 1 - 2 * k) / (n + 1) >= 0.8  # the exchangeability guarantee


def test_fallback_goes_family_phase_then_vendor_phase_then_phase_then_all():
    rows = ([rec(e, engine="vllm") for e in np.linspace(0, 0.4, 5)]
            + [rec(e, engine="sglang") for e in np.linspace(0.3, 0.5, 4)]   # hopper x agg: 9
            + [rec(e, family="blackwell", gpu="B200") for e in np.linspace(0.5, 0.9, 9)]
            + [rec(-0.5, family="cdna3", vendor="amd", gpu="MI300X")]
            + [rec(e, phase="decode", family="ada", gpu="L40S") for e in range(1, 10)])
    bands = eb.fit(rows)

    def cls(**kw):
        values = {"family": "hopper", "vendor": "nvidia", "engine": "vllm",
                  "phase": "aggregated", **kw}
        return eb.choose(bands, values).cls

    assert cls() == "family=hopper phase=aggregated"  # hopper x vllm has only 5 rows
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
    rows = [rec(e) for e in np.linspace(0.0, 0.4, 9)]
    bands = eb.fit(rows)
    plain = eb.band("MI300X", "vllm", "throughput", cross_vendor=False, bands=bands)
    wide = eb.band("MI300X", "vllm", "static", cross_vendor=True, bands=bands)
    assert plain.cls == wide.cls == "phase=aggregated" and wide.widened == eb.CROSS_VENDOR_WIDEN
    own = eb.band("H100-SXM", "trtllm", "aggregated", cross_vendor=True, bands=bands)
    assert own.widened == 1.0 and own.cls.startswith("family=")


def test_leave_one_out_scores_each_row_against_the_others():
    """Eleven rows of one class: each is scored against the prediction band of the
    other ten (k = 1: their minimum and maximum).  The two extreme rows fall outside
    (no other row reaches them), the nine inner rows inside."""
    errs = [round(0.1 * i, 1) for i in range(11)]
    rows = [rec(e) for e in errs]
    loo = eb.leave_one_out(rows)
    assert (loo["rows"], loo["inside"]) == (11, 9)
    assert loo["coverage"] == pytest.approx(9 / 11)
    # a row alone in its class is scored against the fallback the others give
    lone = rows[:10] + [rec(0.25, family="ampere", gpu="A100-80G")]
    assert eb.leave_one_out(lone)["rows"] == 11


def test_families_come_from_the_catalog_arch():
    assert eb.family("H200") == "hopper"
    assert eb.family("GB300-NVL72") == eb.family("B200") == "blackwell"
    assert eb.family("MI300X") == "cdna3" and eb.vendor("MI300X") == "amd"
    assert eb.family("no-such-gpu") == "unknown"


def test_shipped_bands_answer_any_gpu_engine_and_phase():
    for gpu in ("H100-SXM", "MI300X", "L40S", "Arc-Pro-B60"):
        for phase in ("ttft", "decode", "aggregated"):
            b = eb.band(gpu, "vllm", phase)
            assert b.lo_error <= b.hi_error and b.rows >= eb.MIN_ROWS
            p10, p90 = b.capacity(100.0)
            assert p10 <= p90


def test_wilson_interval_brackets_the_share_and_narrows_with_rows():
    from perfmodel.error_band import wilson_interval

    lo, hi = wilson_interval(77, 99)
    assert lo < 77 / 99 < hi and 0.68 < lo < 0.70 and 0.84 < hi < 0.85
    lo2, hi2 = wilson_interval(770, 990)
    assert lo < lo2 < 77 / 99 < hi2 < hi
    assert wilson_interval(0, 10)[0] == 0.0 and wilson_interval(10, 10)[1] == 1.0
