"""The measurement window of `planner simulate` (planner.sim.run): a warm-up in simulated
seconds, a window that does not move with -n, warnings when a run cannot be steady."""

from __future__ import annotations

import math

import numpy as np
import pytest

from planner.core.errors import PlannerError
from planner.sim.run import (
    MAX_AUTO_REQUESTS,
    MEASURE_S,
    MIN_AUTO_REQUESTS,
    SimSettings,
    auto_requests,
    choose_window,
    fill_shortfall,
    parse_warmup,
    steady_warning,
)


@pytest.mark.parametrize("spec, expected", [
    ("30s", (30.0, None)), ("0s", (0.0, None)), (" 12.5S ", (12.5, None)),
    ("0.1", (None, 0.1)), ("0", (None, 0.0)),
])
def test_parse_warmup(spec, expected):
    assert parse_warmup(spec) == expected


@pytest.mark.parametrize("spec", ["30", "1.5", "-1s", "soon", "", "nans", "-0.1"])
def test_parse_warmup_rejects_with_the_flag(spec):
    with pytest.raises(PlannerError, match="--warmup"):
        parse_warmup(spec)


def test_auto_requests_cover_the_warm_up_and_the_window():
    s = SimSettings(requests=None, warmup_s=30.0)
    assert auto_requests(100.0, s) == math.ceil(100.0 * (30.0 + MEASURE_S))
    assert auto_requests(0.5, s) == MIN_AUTO_REQUESTS
    assert auto_requests(1e6, s) == MAX_AUTO_REQUESTS
    frac = SimSettings(requests=None, warmup_fraction=0.25)  # the window is 75 % of it
    assert auto_requests(100.0, frac) == math.ceil(100.0 * MEASURE_S / 0.75)


def test_window_starts_after_the_warm_up_whatever_the_run_length():
    s = SimSettings(warmup_s=30.0)
    for n in (5_000, 50_000):
        t = 7.0 + np.arange(n) / 100.0  # 100 req/s from t = 7 s
        start, record, warning = choose_window(t, s, 100.0)
        assert start == pytest.approx(37.0) and warning is None
        assert record == {"rule": "seconds", "warmup_s": 30.0, "steady_state": True}


def test_fraction_rule_moves_with_the_run_and_is_not_checked():
    s = SimSettings(warmup_s=None, warmup_fraction=0.1)
    starts = [choose_window(np.arange(n) / 100.0, s, 100.0)[0] for n in (5_000, 50_000)]
    assert starts == [pytest.approx(4.999), pytest.approx(49.999)]
    assert choose_window(np.arange(10.0), s, 1.0)[1]["steady_state"] is None


def test_a_run_too_short_for_the_warm_up_says_how_many_requests_it_needs():
    s = SimSettings(warmup_s=30.0, warmup_fraction=0.1)
    t = np.arange(2_000) / 100.0  # 20 s of arrivals: less than 30 s + a 10 s window
    start, record, warning = choose_window(t, s, 100.0)
    assert start == pytest.approx(0.1 * t[-1]) and record["steady_state"] is False
    assert "too short for the 30 s warm-up" in warning and "-n >= 4,001" in warning
    assert "\n" not in warning


def test_fill_shortfall_is_the_mean_tail_of_e2e_over_the_window():
    # every request takes 10 s: after a 30 s warm-up nothing is still filling
    assert fill_shortfall(np.full(100, 10.0), 30.0, 90.0) == 0.0
    # every request takes 60 s: completions start at 60 s, so [30, 90) misses half
    assert fill_shortfall(np.full(100, 60.0), 30.0, 90.0) == pytest.approx(0.5)
    assert math.isnan(fill_shortfall(np.array([np.nan]), 30.0, 90.0))


def _arrivals(rate=100.0, seconds=120.0):
    return np.arange(int(rate * seconds)) / rate


def test_steady_window_gives_no_warning():
    t = _arrivals()
    assert steady_warning(t, np.full(t.size, 5.0), 0.0, 30.0, t[-1]) is None


def test_growing_latencies_are_named_overload():
    t = _arrivals()
    e2e = 5.0 + 0.5 * t  # the queue grows: each request waits longer than the last
    e2e[-10:] = np.nan  # unfinished at the end count as endless
    w = steady_warning(t, e2e, 0.0, 30.0, t[-1])
    assert w is not None and "overloaded" in w and "\n" not in w


def test_a_warm_up_shorter_than_the_e2e_tail_is_named():
    t = _arrivals()
    e2e = np.where(np.arange(t.size) % 10 == 0, 50.0, 5.0)  # one in ten takes 50 s
    w = steady_warning(t, e2e, 0.0, 2.0, t[-1])
    assert w is not None and "raise --warmup" in w and "50 s (E2E p99)" in w
    assert steady_warning(t, e2e, 0.0, 60.0, t[-1]) is None  # a long enough warm-up


def test_settings_check_names_the_flags():
    with pytest.raises(PlannerError, match="--warmup must be >= 0 s"):
        SimSettings(warmup_s=-1.0).check()
    with pytest.raises(PlannerError, match="--requests must be >= 1"):
        SimSettings(requests=0).check()
    SimSettings(requests=None, warmup_s=0.0).check()  # auto and no warm-up are fine


def test_a_rate_no_capped_run_can_warm_up_at_points_to_the_fraction_rule():
    """At 10^9 requests/s the warm-up and window need more requests than -n may give; the
    warning used to ask for -n beyond the cap."""
    from planner.core.defaults import MAX_SIM_REQUESTS

    s = SimSettings(warmup_s=30.0)
    t = np.arange(1000) / 1e9
    warning = choose_window(t, s, 1e9)[2]
    assert warning is not None and "use -n" not in warning
    assert f"more than the {MAX_SIM_REQUESTS:,} requests a run may have" in warning
    # at 40 requests/s it is 40 x (30 s warm-up + the 10 s window) + 1
    assert "use -n >= 1,601" in choose_window(np.arange(1000) / 40.0, s, 40.0)[2]
