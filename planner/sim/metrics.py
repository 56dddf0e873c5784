"""Figures of a simulation run: latency percentiles, SLO attainment, goodput, utilisation,
KV transfer times per tier, router decision time.  Pure computation on a
:class:`~planner.sim.protocol.SimResult`; only :func:`write_csv` touches a file.

Definitions (the serving literature's; DistServe / seed 003 §4.4 / seed 004 §6):

* the *measured* requests are those arriving at or after ``warmup_s`` (seed 003 §4.1:
  5 s warm-up, then measure); the *window* is ``[warmup_s, last arrival)``, the span in
  which the cluster is fed at the offered rate (``planner.sim.run`` sets ``warmup_s``:
  by default 30 simulated seconds after the first arrival, so the window does not
  depend on how many requests are simulated);
* TTFT ``= t_first_token − arrival``; TPOT ``= (t_done − t_first_token) / (tokens_out − 1)``
  (the mean time between output tokens, i.e. TBT averaged per request; undefined for a
  one-token answer); E2E ``= t_done − arrival``.  Percentiles are over the measured
  requests that reached the event (TTFT: a first token; TPOT/E2E: completion);
* a request *attains* the SLO when it completed with TTFT ≤ ``ttft_slo_s`` and TPOT ≤
  ``tpot_slo_s`` (a one-token answer has no TPOT to violate).  Unfinished measured
  requests count as misses -- leaving them out would reward a router that starves
  requests.  Attainment is over all measured requests.  With no SLO given attainment is
  the completed fraction;
* *throughput* (the completed rate) is the number of completions -- of any request --
  inside the window, per second of it: the rate at which the cluster finishes work
  while arrivals still come at the offered rate.  When the plan keeps up it equals the
  arrival rate, when it is overloaded its capacity.  Two other readings fail: counting
  only the completions of requests that *arrived* in the window loses the ones still in
  flight at its end (about rate x mean E2E requests, whatever the window's length, so
  the figure grows with ``-n``); dividing completions by ``t_end − warmup_s`` counts the
  drain after the last arrival as serving time.  The window's one bias is the cluster
  filling up from empty: a request completes one E2E latency after it arrives, so
  ``t`` seconds after the first arrival completions run at ``rate · P(E2E ≤ t)`` (the
  M/G/∞ fill) -- hence a warm-up of the order of the E2E tail, in seconds, before the
  window opens.  With no window (one arrival instant) it falls back to completions
  of measured requests per second of ``[warmup_s, t_end]``;
* its 95 % confidence interval comes from *batch means*: the window is cut into
  :data:`BATCHES` equal sub-windows, each gives a completion rate, and the interval is
  ``mean ± t(0.975, B−1) · sd / √B`` (``throughput_ci95_rps`` is the half-width;
  ``throughput_batches_rps`` the sub-window rates).  Sub-windows a second or more long
  are several times the gap between arrivals of a busy plan, so their rates are close to
  independent (measured: the interval is on the safe side, docs/simulation.md); it
  covers the noise of the arrivals and the service, not a warm-up that is too short
  (``planner.sim.run.steady_warning`` checks that instead).  Under
  :data:`MIN_COMPLETIONS_FOR_CI` completions in the window it is NaN;
* *goodput* is throughput times the fraction of measured completions that attained the
  SLO; output tokens per second is throughput times the mean output length of the
  measured completions;
* per-island utilisation is the busy fraction over the window (``[warmup_s, t_end]``
  when the window is empty), from the engine's per-bin timeline (a bin straddling an
  edge counts pro rata);
* KV transfer time ``= t_kv_end − t_kv_start`` per locality tier, over measured requests
  whose transfer ended.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from planner.core.atomic import write_text_atomic
from planner.run.schema import json_safe
from planner.sim.protocol import SimResult


@dataclass(frozen=True)
class LatencyStats:
    """Mean and percentiles (seconds) of one latency over ``n`` requests (NaN if none)."""

    n: int
    mean: float
    p50: float
    p95: float
    p99: float

    @classmethod
    def of(cls, x: np.ndarray) -> LatencyStats:
        x = x[np.isfinite(x)]
        if x.size == 0:
            return cls(0, math.nan, math.nan, math.nan, math.nan)
        p50, p95, p99 = np.percentile(x, [50, 95, 99]).tolist()
        return cls(int(x.size), float(x.mean()), p50, p95, p99)


@dataclass(frozen=True)
class SimMetrics:
    """What :func:`summarise` computes (module docstring for the definitions)."""

    router: str
    seed: int
    window_s: float  # length of the window [window_start_s, window_end_s)
    measured: int
    completed: int
    unfinished: int
    ttft: LatencyStats
    tpot: LatencyStats
    e2e: LatencyStats
    ttft_slo_s: float | None
    tpot_slo_s: float | None
    slo_attainment: float
    goodput_rps: float
    throughput_rps: float
    throughput_ci95_rps: float  # half-width of the 95 % confidence interval (batch means)
    throughput_batches_rps: tuple[float, ...]  # completion rate of each sub-window
    output_tokens_per_s: float
    offered_rps: float
    island_names: tuple[str, ...]
    island_util: tuple[float, ...]
    kv_mean_s: tuple[float, ...]  # per tier (4,), NaN where no transfer
    kv_count: tuple[int, ...]  # per tier (4,)
    kv_transfer_mean_s: float  # over all tiers
    decision_mean_s: float
    decision_p99_s: float
    preemptions: int
    wall_s: float
    events: int
    window_start_s: float = math.nan
    window_end_s: float = math.nan
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Flat and JSON-ready: latencies as ``ttft_mean_s``, ``ttft_p99_s``, ``ttft_n`` …,
        per-tier KV figures as 4-lists, ``kv_transfer_mean_s`` over all tiers; NaN becomes
        ``None``."""
        d = asdict(self)
        for name in ("ttft", "tpot", "e2e"):
            stats = d.pop(name)
            d[f"{name}_n"] = stats.pop("n")
            d.update({f"{name}_{k}_s": v for k, v in stats.items()})
        return json_safe(d)


def _columns(result: SimResult) -> dict[str, np.ndarray]:
    """The request fields as arrays, built once."""
    reqs = result.requests
    f = np.array([(r.arrival, r.t_first_token, r.t_done, r.t_kv_start, r.t_kv_end)
                  for r in reqs], dtype=float).reshape(len(reqs), 5)
    i = np.array([(r.rid, r.input_len, r.output_len, r.tokens_out, r.kv_tier, r.preemptions,
                   r.prefill_island, r.decode_island) for r in reqs],
                 dtype=np.int64).reshape(len(reqs), 8)
    arrival, first, done, kv0, kv1 = f.T
    rid, inp, outl, tok, tier, pre, pf, dec = i.T
    with np.errstate(invalid="ignore", divide="ignore"):
        tpot = np.where(tok > 1, (done - first) / (tok - 1), np.nan)
    return {"arrival": arrival, "ttft": first - arrival, "tpot": tpot, "e2e": done - arrival,
            "done": done, "kv_time": kv1 - kv0, "rid": rid, "input_len": inp,
            "output_len": outl, "tokens_out": tok, "kv_tier": tier, "preemptions": pre,
            "prefill_island": pf, "decode_island": dec}


request_columns = _columns  # public name: the per-request arrays of a result


def _window_util(result: SimResult, lo: float, hi: float) -> np.ndarray:
    tl = np.asarray(result.util_timeline, dtype=float)
    if tl.ndim == 2 and tl.shape[1] > 0 and result.util_bin_s > 0 and hi > lo:
        edges = np.arange(tl.shape[1] + 1) * float(result.util_bin_s)
        cover = np.clip(np.minimum(edges[1:], hi) - np.maximum(edges[:-1], lo), 0.0, None)
        if cover.sum() > 0:
            return tl @ cover / cover.sum()
    busy = np.asarray(result.busy_s, dtype=float)  # no timeline: whole-run average
    return busy / result.t_end if result.t_end > 0 else np.full(busy.shape, math.nan)


#: Sub-windows of the batch-means confidence interval of the completed rate.
BATCHES = 10
#: Completions in the window needed for a confidence interval.
MIN_COMPLETIONS_FOR_CI = 2 * BATCHES


def measurement_window(result: SimResult) -> tuple[float, float]:
    """``(start, end)`` of the window (module docstring): from ``warmup_s`` to the last
    arrival; ``end <= start`` when there is none."""
    arrivals = [r.arrival for r in result.requests]
    return float(result.warmup_s), (max(arrivals) if arrivals else float(result.warmup_s))


def window_rate(done_times: np.ndarray, lo: float, hi: float,
                batches: int = BATCHES) -> tuple[float, float, tuple[float, ...]]:
    """Completions per second in ``[lo, hi)`` with the half-width of its 95 % confidence
    interval from ``batches`` batch means, and the batch rates (module docstring)."""
    t = np.asarray(done_times, dtype=float)
    t = t[np.isfinite(t) & (t >= lo) & (t < hi)]
    if not hi > lo:
        return math.nan, math.nan, ()
    rate = t.size / (hi - lo)
    edges = np.linspace(lo, hi, batches + 1)
    rates = np.histogram(t, bins=edges)[0] / np.diff(edges)
    half = math.nan
    if t.size >= MIN_COMPLETIONS_FOR_CI and batches >= 2:
        from scipy.stats import t as student

        half = float(student.ppf(0.975, batches - 1) * rates.std(ddof=1) / math.sqrt(batches))
    return float(rate), half, tuple(float(x) for x in rates)


def summarise(result: SimResult, *, ttft_slo_s: float | None = None,
              tpot_slo_s: float | None = None) -> SimMetrics:
    """Figures of ``result`` (module docstring), vectorised over the requests."""
    c = _columns(result)
    m = c["arrival"] >= result.warmup_s
    lo, hi = measurement_window(result)
    done = m & np.isfinite(c["done"])
    ok = done.copy()
    if ttft_slo_s is not None:
        ok &= c["ttft"] <= ttft_slo_s
    if tpot_slo_s is not None:
        ok &= ~(c["tpot"] > tpot_slo_s)  # NaN TPOT (one token) cannot violate
    n_meas, n_done, n_ok = int(m.sum()), int(done.sum()), int(ok.sum())
    thr, ci, batch_rates = window_rate(c["done"], lo, hi)
    if not hi > lo:  # no window: measured completions over the rest of the run
        hi = max(float(result.t_end), lo)
        thr = n_done / (hi - lo) if hi > lo else math.nan
    per_done = (lambda n: thr * n / n_done) if n_done else (lambda n: 0.0 * thr)
    kv_mean, kv_count = [], []
    kv_ok = m & (c["kv_tier"] >= 0) & np.isfinite(c["kv_time"])
    for k in range(4):
        sel = kv_ok & (c["kv_tier"] == k)
        kv_count.append(int(sel.sum()))
        kv_mean.append(float(c["kv_time"][sel].mean()) if sel.any() else math.nan)
    dt = np.asarray(result.decision_times_s, dtype=float)
    islands = result.cluster.islands
    return SimMetrics(
        router=result.router, seed=result.seed, window_s=hi - lo, measured=n_meas,
        completed=n_done, unfinished=n_meas - n_done,
        ttft=LatencyStats.of(c["ttft"][m]), tpot=LatencyStats.of(c["tpot"][done]),
        e2e=LatencyStats.of(c["e2e"][done]), ttft_slo_s=ttft_slo_s, tpot_slo_s=tpot_slo_s,
        slo_attainment=n_ok / n_meas if n_meas else math.nan,
        goodput_rps=per_done(n_ok), throughput_rps=thr, throughput_ci95_rps=ci,
        throughput_batches_rps=batch_rates,
        output_tokens_per_s=per_done(int(c["tokens_out"][done].sum())),
        offered_rps=float(result.offered_rps),
        island_names=tuple(isl.name for isl in islands),
        island_util=tuple(float(u) for u in _window_util(result, lo, hi)),
        kv_mean_s=tuple(kv_mean), kv_count=tuple(kv_count),
        kv_transfer_mean_s=float(c["kv_time"][kv_ok].mean()) if kv_ok.any() else math.nan,
        decision_mean_s=float(dt.mean()) if dt.size else math.nan,
        decision_p99_s=float(np.percentile(dt, 99)) if dt.size else math.nan,
        preemptions=int(c["preemptions"][m].sum()), wall_s=float(result.wall_s),
        events=int(result.events), window_start_s=lo, window_end_s=hi)


def latency_table(metrics: SimMetrics) -> list[list[Any]]:
    """Rows for a report: a header, then TTFT / TPOT / E2E as ``[name, n, mean, p50, p95,
    p99]`` in milliseconds."""
    rows: list[list[Any]] = [["metric", "n", "mean_ms", "p50_ms", "p95_ms", "p99_ms"]]
    for name, s in (("TTFT", metrics.ttft), ("TPOT", metrics.tpot), ("E2E", metrics.e2e)):
        rows.append([name, s.n] + [1e3 * v for v in (s.mean, s.p50, s.p95, s.p99)])
    return rows


CSV_FIELDS = ("rid", "arrival", "input_len", "output_len", "prefill_island",
              "decode_island", "ttft", "tpot", "e2e", "kv_tier", "kv_time", "preemptions")


def to_csv_rows(result: SimResult) -> list[dict[str, Any]]:
    """One row per request (all of them, warm-up included: ``arrival`` tells) with the
    :data:`CSV_FIELDS`; times in seconds, NaN where the event did not happen."""
    c = _columns(result)
    cols = [c[k].tolist() for k in CSV_FIELDS]
    return [dict(zip(CSV_FIELDS, vals, strict=True)) for vals in zip(*cols, strict=True)]


def write_csv(result: SimResult, path: str | Path) -> None:
    """:func:`to_csv_rows` as a CSV file, written atomically."""

    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=CSV_FIELDS, lineterminator="\n")
    w.writeheader()
    w.writerows(to_csv_rows(result))
    write_text_atomic(Path(path), buf.getvalue())


__all__ = ["BATCHES", "CSV_FIELDS", "LatencyStats", "SimMetrics", "latency_table",
           "measurement_window", "summarise", "to_csv_rows", "window_rate", "write_csv"]
