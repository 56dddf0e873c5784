"""Metrics of a run, on hand-built results with known answers."""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest

from planner.fleet.network import DEFAULT_NETWORK, Location
from planner.sim.metrics import CSV_FIELDS, latency_table, summarise, to_csv_rows, write_csv
from planner.sim.protocol import SimCluster, SimIsland, SimRequest, SimResult


def island(i: int, name: str, role: str) -> SimIsland:
    return SimIsland(index=i, name=name, gpu="H100", size=4, role=role, tp=4, dp=1, ep=1,
                     max_batch=8, kv_capacity_tokens=10_000, kv_bytes_per_token=1.0,
                     location=Location(0, 0, i), prefill_s=np.zeros(1),
                     step_coeffs=np.zeros((9, 9)))


def req(rid, arrival, ttft, e2e, out, *, tier=-1, kv=(math.nan, math.nan), pre=0):
    done = arrival + e2e if e2e is not None else math.nan
    return SimRequest(rid=rid, arrival=arrival, input_len=100, output_len=out,
                      prefill_island=0, decode_island=1,
                      t_first_token=arrival + ttft if ttft is not None else math.nan,
                      t_done=done, tokens_out=out if e2e is not None else 0,
                      kv_tier=tier, t_kv_start=kv[0], t_kv_end=kv[1], preemptions=pre)


def result(reqs, *, warmup=0.0, t_end=10.0, timeline=None, decisions=None) -> SimResult:
    cluster = SimCluster((island(0, "p0", "prefill"), island(1, "d0", "decode")),
                         DEFAULT_NETWORK, "m")
    tl = np.zeros((2, 0)) if timeline is None else np.asarray(timeline, dtype=float)
    return SimResult(cluster=cluster, requests=list(reqs), router="rr", seed=3, t_end=t_end,
                     warmup_s=warmup, busy_s=np.array([5.0, 2.5]), util_bin_s=1.0,
                     util_timeline=tl,
                     decision_times_s=np.asarray(decisions if decisions is not None else []),
                     wall_s=0.1, events=7)


def test_percentiles_and_means():
    # 100 requests: TTFT 0.01 .. 1.00 s, 11 output tokens, 0.1 s per token after the first
    reqs = [req(k, 0.05 * k, 0.01 * (k + 1), 0.01 * (k + 1) + 1.0, 11) for k in range(100)]
    m = summarise(result(reqs))
    ttft = 0.01 * np.arange(1, 101)
    assert m.ttft.n == 100 and m.ttft.mean == pytest.approx(ttft.mean())
    assert m.ttft.p50 == pytest.approx(np.percentile(ttft, 50))
    assert m.ttft.p95 == pytest.approx(0.9505) and m.ttft.p99 == pytest.approx(0.9901)
    assert m.tpot.mean == pytest.approx(0.1) and m.tpot.p99 == pytest.approx(0.1)
    assert m.e2e.p50 == pytest.approx(np.percentile(ttft + 1.0, 50))
    assert m.completed == 100 and m.unfinished == 0
    # the window is [0, last arrival 4.95 s); completions at 1.01 + 0.06 k fall in it for
    # k = 0..65: 66 of them, not 100 requests over the 10 s of t_end
    assert (m.window_start_s, m.window_end_s) == (0.0, pytest.approx(4.95))
    assert m.throughput_rps == pytest.approx(66 / 4.95)
    assert m.output_tokens_per_s == pytest.approx(11 * 66 / 4.95)
    rows = latency_table(m)
    assert rows[0][0] == "metric" and rows[1][0] == "TTFT"
    assert rows[1][2] == pytest.approx(1e3 * ttft.mean())


def test_slo_attainment_goodput_and_unfinished():
    reqs = [req(0, 1.0, 0.1, 1.1, 11),   # ok: TTFT 0.1, TPOT 0.1
            req(1, 1.0, 0.5, 1.5, 11),   # TTFT miss
            req(2, 1.0, 0.1, 3.1, 11),   # TPOT 0.3: miss
            req(3, 1.0, 0.1, 0.1, 1),    # one token: no TPOT to violate -> ok
            req(4, 1.0, 0.1, None, 11),  # unfinished, counts as a miss
            req(5, 1.0, None, None, 11)]  # never started
    m = summarise(result(reqs, warmup=1.0, t_end=5.0), ttft_slo_s=0.2, tpot_slo_s=0.2)
    assert m.measured == 6 and m.completed == 4 and m.unfinished == 2
    assert m.slo_attainment == pytest.approx(2 / 6)
    # one arrival instant, no window: measured completions per second of the rest
    assert m.throughput_rps == pytest.approx(4 / 4.0)
    assert math.isnan(m.throughput_ci95_rps) and m.throughput_batches_rps == ()
    assert m.goodput_rps == pytest.approx(2 / 4.0)
    assert m.ttft.n == 5  # the started-but-unfinished one has a TTFT
    assert m.tpot.n == 3  # completed with more than one token
    loose = summarise(result(reqs, warmup=1.0, t_end=5.0))  # no SLO: attainment =
    assert loose.slo_attainment == pytest.approx(4 / 6)  # the completed fraction
    assert loose.goodput_rps == pytest.approx(loose.throughput_rps)
    only_ttft = summarise(result(reqs, warmup=1.0, t_end=5.0), ttft_slo_s=0.2)
    assert only_ttft.slo_attainment == pytest.approx(3 / 6)


def test_warmup_excludes_early_arrivals():
    reqs = [req(0, 0.5, 5.0, 6.0, 2), req(1, 2.5, 0.2, 0.4, 2), req(2, 3.0, 0.4, 0.8, 2)]
    m = summarise(result(reqs, warmup=2.0, t_end=6.0))
    # the window runs from the warm-up to the last arrival: [2.0, 3.0)
    assert m.measured == 2 and m.window_s == pytest.approx(1.0)
    assert m.ttft.mean == pytest.approx(0.3)  # the 5 s warm-up outlier is out
    assert m.throughput_rps == pytest.approx(1 / 1.0)  # request 1 done at 2.9 s


def _steady(seconds: float, rate: float = 100.0, latency: float = 2.0):
    """Arrivals every 1/rate s for ``seconds``, each done ``latency`` s later."""
    n = int(round(seconds * rate))
    return [req(k, k / rate, 0.5, latency, 5) for k in range(n)]


def test_completed_rate_is_the_window_rate_whatever_the_run_length():
    # 100 req/s, 2 s latency, 10 s warm-up: the window [10 s, last arrival) is steady,
    # completions in it run at 100 req/s whether the run lasts 30 s or 60 s; the drain
    # after the last arrival (t_end) is not serving time.  Counting only the window's
    # own arrivals that completed inside it would read 100 * (1 - 2 / 19.99) = 90 req/s
    # on the short run and 96 on the long one.
    for seconds in (30.0, 60.0):
        m = summarise(result(_steady(seconds), warmup=10.0, t_end=seconds + 2.0))
        assert m.window_start_s == 10.0 and m.window_end_s == pytest.approx(seconds - 0.01)
        assert m.throughput_rps == pytest.approx(100.0, rel=2e-3)
        assert m.goodput_rps == pytest.approx(m.throughput_rps)  # no SLO: every one
        assert m.throughput_ci95_rps < 1.0  # evenly spaced: the batches agree
    strict = summarise(result(_steady(30.0), warmup=10.0, t_end=32.0), ttft_slo_s=0.4)
    assert strict.goodput_rps == 0.0 and strict.throughput_rps == pytest.approx(100, rel=2e-3)


def test_completed_rate_counts_completions_of_warm_up_arrivals():
    # 20 s latency, 30 s warm-up: the requests completing in the window arrived 20 s
    # earlier, most during the warm-up; they are the cluster's work in the window
    m = summarise(result(_steady(60.0, latency=20.0), warmup=30.0, t_end=80.0))
    assert m.throughput_rps == pytest.approx(100.0, rel=2e-3)
    assert m.measured == 3000  # latencies: only requests arriving in the window


def test_confidence_interval_is_batch_means():
    # 10 sub-windows of 1 s completing 20, 30, 20, 30 ... requests
    reqs, k = [], 0
    for b in range(10):
        count = 20 if b % 2 == 0 else 30
        for j in range(count):
            reqs.append(req(k, 0.0, 0.1, 10.0 + b + (j + 0.5) / count, 2))
            k += 1
    reqs.append(req(k, 20.0, 0.1, 0.2, 2))  # the last arrival closes the window at 20 s
    m = summarise(result(reqs, warmup=10.0, t_end=21.0))
    assert m.throughput_batches_rps == (20.0, 30.0) * 5
    assert m.throughput_rps == pytest.approx(25.0)
    sd = np.std([20, 30] * 5, ddof=1)
    assert m.throughput_ci95_rps == pytest.approx(2.2621571627 * sd / math.sqrt(10))
    d = m.to_dict()
    assert d["throughput_ci95_rps"] == pytest.approx(m.throughput_ci95_rps)
    assert d["throughput_batches_rps"] == [20.0, 30.0] * 5 and d["window_end_s"] == 20.0


def test_kv_time_per_tier_and_preemptions():
    reqs = [req(0, 1.0, 0.1, 1.0, 3, tier=2, kv=(1.0, 1.2), pre=1),
            req(1, 1.0, 0.1, 1.0, 3, tier=2, kv=(1.0, 1.4)),
            req(2, 1.0, 0.1, 1.0, 3, tier=3, kv=(1.0, 2.0), pre=2),
            req(3, 1.0, 0.1, 1.0, 3, tier=3, kv=(1.0, math.nan)),  # transfer not ended
            req(4, 1.0, 0.1, 1.0, 3)]  # colocated: no transfer
    m = summarise(result(reqs))
    assert m.kv_count == (0, 0, 2, 1)
    assert m.kv_mean_s[2] == pytest.approx(0.3) and m.kv_mean_s[3] == pytest.approx(1.0)
    assert math.isnan(m.kv_mean_s[0])
    assert m.preemptions == 3
    assert m.kv_transfer_mean_s == pytest.approx((0.2 + 0.4 + 1.0) / 3)
    d = m.to_dict()
    assert d["kv_mean_s"][0] is None and d["kv_count"] == [0, 0, 2, 1]
    assert d["ttft_mean_s"] == pytest.approx(0.1) and d["e2e_n"] == 5
    assert d["tpot_p99_s"] == pytest.approx(0.45) and "ttft" not in d
    json.dumps(d, allow_nan=False)  # JSON-clean


def test_utilisation_over_the_window_and_decision_times():
    tl = [[1.0, 1.0, 0.5, 0.5], [0.0, 0.0, 0.2, 0.6]]  # 4 bins of 1 s
    m = summarise(result([req(0, 2.0, 0.1, 0.2, 2)], warmup=2.0, t_end=4.0, timeline=tl,
                         decisions=[1e-6] * 99 + [1e-3]))
    assert m.island_names == ("p0", "d0")
    assert m.island_util == pytest.approx((0.5, 0.4))
    half = summarise(result([req(0, 1.5, 0.1, 0.2, 2)], warmup=1.5, t_end=4.0, timeline=tl))
    assert half.island_util[0] == pytest.approx((0.5 * 1.0 + 0.5 + 0.5) / 2.5)
    assert m.decision_mean_s == pytest.approx((99e-6 + 1e-3) / 100)
    assert m.decision_p99_s == pytest.approx(np.percentile([1e-6] * 99 + [1e-3], 99))
    no_tl = summarise(result([req(0, 2.0, 0.1, 0.2, 2)], t_end=10.0))
    assert no_tl.island_util == pytest.approx((0.5, 0.25))  # busy_s / t_end


def test_empty_run_is_nan_not_an_error():
    m = summarise(result([]))
    assert m.measured == 0 and math.isnan(m.ttft.mean) and math.isnan(m.slo_attainment)


def test_csv_rows_and_file(tmp_path):
    reqs = [req(0, 1.0, 0.1, 1.1, 11, tier=3, kv=(1.05, 1.08), pre=1), req(1, 2.0, None, None, 5)]
    rows = to_csv_rows(result(reqs))
    assert list(rows[0]) == list(CSV_FIELDS)
    assert rows[0]["ttft"] == pytest.approx(0.1) and rows[0]["tpot"] == pytest.approx(0.1)
    assert rows[0]["kv_time"] == pytest.approx(0.03) and rows[0]["kv_tier"] == 3
    assert math.isnan(rows[1]["e2e"]) and rows[1]["output_len"] == 5
    path = tmp_path / "sub" / "requests.csv"
    write_csv(result(reqs), path)
    got = list(csv.DictReader(path.read_text().splitlines()))
    assert len(got) == 2 and float(got[0]["e2e"]) == pytest.approx(1.1)
    assert [p.name for p in path.parent.iterdir()] == ["requests.csv"]  # no temp left


def test_plots_are_written(tmp_path):
    from planner.sim.plots import plot_kv_tiers, plot_latency_cdfs, plot_utilisation, run_pngs

    rng = np.random.default_rng(0)
    reqs = [req(k, 0.1 * k, float(rng.uniform(0.05, 0.5)), float(rng.uniform(1, 3)), 20,
                tier=int(rng.integers(1, 4)), kv=(0.1 * k, 0.1 * k + 0.02)) for k in range(50)]
    a = result(reqs, warmup=1.0, timeline=rng.uniform(0, 1, (2, 10)))
    b = result(reqs[::2], warmup=1.0, timeline=rng.uniform(0, 1, (2, 10)))
    paths = [plot_latency_cdfs({"rr": a, "jsq": b}, tmp_path / "cdf.png"),
             plot_utilisation(a, tmp_path / "util.png"),
             plot_kv_tiers({"rr": summarise(a), "jsq": summarise(b)}, tmp_path / "kv.png")]
    for p in paths:
        data = p.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
    assert sorted(x.name for x in tmp_path.iterdir()) == ["cdf.png", "kv.png", "util.png"]
    pngs = run_pngs(a, summarise(a))
    assert set(pngs) == {"latency_cdf.png", "utilisation.png", "kv_tiers.png"}
    assert all(v[:4] == b"\x89PNG" for v in pngs.values())
    # an empty run still draws (blank axes), it does not raise
    plot_latency_cdfs({"none": result([])}, tmp_path / "empty.png")
    assert (tmp_path / "empty.png").stat().st_size > 0
