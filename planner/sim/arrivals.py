"""Request streams for the simulator: arrival times and (input, output) lengths.

Arrival processes (all seeded, vectorised):

* Poisson at rate ``λ``: i.i.d. exponential gaps of mean ``1/λ``;
* gamma renewal at rate ``λ`` with inter-arrival coefficient of variation ``CV``: gaps
  ``Gamma(k = 1/CV², θ = 1/(λ k))`` (mean ``1/λ``, CV as given; CV = 1 is Poisson, CV > 1
  bursty) -- the usual burstiness knob of serving studies (e.g. BurstGPT);
* trace replay: the trace's own timestamps, shifted to start at 0 and multiplied by one
  factor ``r_trace / r_target`` so the replay reaches the target rate while keeping the
  trace's burstiness (its CV is scale-free).

Lengths are sampled from a :class:`planner.workload.Workload`: the input from ``p(s|w)``;
the output from the joint (input, output) histogram's conditional row ``p(d | s)`` when
the workload has one (uniform inside the output bin), else from ``decode_pmf``, else a
geometric law of mean ``decode_mean`` (the maximum-entropy law on ``{1, 2, ...}`` with
that mean); always clipped to ``[1, decode_max]`` (seed 002 §4.3.2's maximum decode
length, which every decode island must support).

Rate specifications (:func:`parse_rate`): ``"300"`` is 300 req/s; ``"0.8x"`` is 0.8 times
a reference rate the caller gives (the CLI passes the plan's analytic capacity).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from planner.core.errors import PlannerError
from planner.sim.protocol import SimRequest
from planner.workload.loaders import iter_trace
from planner.workload.model import Workload

#: Requests/s a simulation accepts: one a week at least (slower would put the arrivals
#: past any horizon the clock can resolve), and beyond any fleet a budget buys at most.
MIN_RATE, MAX_RATE = 1e-6, 1e9


def _check_rate(rate: float, what: str = "rate") -> float:
    rate = float(rate)
    if not math.isfinite(rate) or rate <= 0:
        raise PlannerError(f"{what} must be a positive number of requests/s, got {rate!r}")
    if not MIN_RATE <= rate <= MAX_RATE:
        raise PlannerError(f"{what} must be between {MIN_RATE:g} and {MAX_RATE:g} "
                           f"requests/s, got {rate:g}")
    return rate


def parse_rate(spec: str | float, reference: float | None = None) -> float:
    """``"300"`` -> 300.0 req/s; ``"0.8x"`` -> 0.8 x ``reference`` (error without one)."""
    if isinstance(spec, int | float) and not isinstance(spec, bool):
        return _check_rate(spec)
    text = str(spec).strip().lower()
    factor = text.endswith("x")
    try:
        value = float(text[:-1] if factor else text)
    except ValueError:
        raise PlannerError(f"rate {spec!r}: expected requests/s (e.g. 300) or a multiple of "
                           "the plan's capacity (e.g. 0.8x)") from None
    if not factor:
        return _check_rate(value, f"rate {spec!r}")
    if reference is None or not math.isfinite(reference) or reference <= 0:
        raise PlannerError(f"rate {spec!r} is relative, but there is no reference capacity "
                           "to multiply")
    return _check_rate(value * reference, f"rate {spec!r}")


def poisson_arrivals(n: int, rate: float, seed: int = 0) -> np.ndarray:
    """``n`` sorted arrival times (s) of a Poisson process of ``rate`` req/s from t = 0."""
    rate = _check_rate(rate)
    gaps = np.random.default_rng(seed).exponential(1.0 / rate, size=int(n))
    return np.cumsum(gaps)


def gamma_arrivals(n: int, rate: float, cv: float, seed: int = 0) -> np.ndarray:
    """``n`` arrival times of a gamma renewal process: mean gap ``1/rate``, gap CV ``cv``."""
    rate = _check_rate(rate)
    cv = float(cv)
    if not math.isfinite(cv) or cv <= 0:
        raise PlannerError(f"arrival CV must be a positive number, got {cv!r}")
    k = 1.0 / (cv * cv)
    gaps = np.random.default_rng(seed).gamma(k, 1.0 / (rate * k), size=int(n))
    return np.cumsum(gaps)


def scale_times(times: np.ndarray, rate: float | None) -> np.ndarray:
    """Trace timestamps (s) shifted to start at 0 and, if ``rate`` is given, multiplied by
    the one factor that makes their mean rate ``(n - 1) / span`` equal to ``rate``."""
    t = np.sort(np.asarray(times, dtype=np.float64))
    if t.size == 0:
        return t
    t = t - t[0]
    if rate is None:
        return t
    rate = _check_rate(rate)
    span = float(t[-1])
    if t.size < 2 or span <= 0:
        raise PlannerError("trace has fewer than two distinct timestamps: cannot scale it to "
                           "a rate (use Poisson arrivals instead)")
    observed = (t.size - 1) / span
    return t * (observed / rate)


def sample_lengths(workload: Workload, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(input, output) lengths of ``n`` requests drawn from ``workload`` (module doc)."""
    rng = np.random.default_rng(seed)
    n = int(n)
    inputs = np.searchsorted(workload.cdf, rng.random(n), side="right")
    inputs = np.clip(inputs, 1, workload.max_len).astype(np.int64)
    outputs = _sample_outputs(workload, inputs, rng)
    return inputs, np.clip(outputs, 1, workload.decode_max).astype(np.int64)


def _sample_outputs(w: Workload, inputs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    n = inputs.size
    out = np.zeros(n, dtype=np.int64)
    todo = np.ones(n, dtype=bool)
    u = rng.random(n)
    if w.joint is not None:
        j = w.joint
        b = j.input_bin(inputs)
        rows = j.counts.sum(axis=1)
        ok = (b >= 0) & (rows[np.maximum(b, 0)] > 0)
        if ok.any():
            cdf = np.cumsum(j.counts, axis=1)
            cdf /= np.where(cdf[:, -1:] > 0, cdf[:, -1:], 1.0)
            bins = b[ok]
            # inverse CDF per row: count the entries of the row's CDF below u
            c = (cdf[bins] < u[ok, None]).sum(axis=1)
            c = np.minimum(c, cdf.shape[1] - 1)
            lo, hi = j.output_edges[c], j.output_edges[c + 1]
            out[ok] = lo + np.floor(rng.random(int(ok.sum())) * (hi - lo)).astype(np.int64)
            todo &= ~ok
    if todo.any():
        m = int(todo.sum())
        if w.decode_pmf is not None:
            cdf = np.cumsum(w.decode_pmf)
            out[todo] = np.searchsorted(cdf, rng.random(m) * cdf[-1], side="right")
        else:
            out[todo] = rng.geometric(1.0 / max(w.decode_mean, 1.0), size=m)
    return out


def make_requests(arrivals: np.ndarray, inputs: np.ndarray, outputs: np.ndarray,
                  hashes: Sequence[Sequence[int]] | None = None) -> list[SimRequest]:
    """SimRequests ``rid = 0..n-1`` in arrival order."""
    t = np.asarray(arrivals, dtype=np.float64)
    if not (len(t) == len(inputs) == len(outputs)):
        raise PlannerError("arrivals, inputs and outputs must have the same length")
    order = np.argsort(t, kind="stable")
    t, ins, outs = t[order].tolist(), np.asarray(inputs)[order].tolist(), \
        np.asarray(outputs)[order].tolist()
    if hashes is None:
        return [SimRequest(i, a, s, d) for i, (a, s, d) in enumerate(zip(t, ins, outs,
                                                                         strict=True))]
    hs = [tuple(hashes[k]) for k in order.tolist()]
    return [SimRequest(i, a, s, d, h)
            for i, (a, s, d, h) in enumerate(zip(t, ins, outs, hs, strict=True))]


def requests_from_workload(workload: Workload, n: int, rate: float, *, seed: int = 0,
                           cv: float | None = None) -> list[SimRequest]:
    """``n`` requests of ``workload`` arriving at ``rate`` req/s: Poisson, or gamma when
    ``cv`` is given (``cv = None`` and a workload CV do not mix implicitly: pass
    ``cv=workload.cv`` to reproduce the trace's burstiness)."""
    ss = np.random.SeedSequence(seed).spawn(2)
    arr_seed, len_seed = (int(s.generate_state(1)[0]) for s in ss)
    t = (poisson_arrivals(n, rate, arr_seed) if cv is None
         else gamma_arrivals(n, rate, cv, arr_seed))
    inputs, outputs = sample_lengths(workload, n, len_seed)
    return make_requests(t, inputs, outputs)


def requests_from_trace(path: str | Path, fmt: str, *, rate: float | None = None,
                        n: int | None = None, seed: int = 0,
                        columns: Mapping[str, str] | None = None,
                        time_unit: str | None = None, max_input: int | None = None,
                        max_output: int | None = None) -> list[SimRequest]:
    """Requests of a trace file (``planner.workload.loaders`` formats), the first ``n`` rows.

    With timestamps: replayed, scaled to ``rate`` if given (keeps burstiness).  Without:
    Poisson arrivals at ``rate`` (required then).  Inputs are clipped to ``[1, max_input]``
    and outputs to ``[1, max_output]`` when given; Mooncake block hashes become
    ``prefix_hashes``.
    """
    ins, outs, times = [], [], []
    hashes: list[tuple[int, ...]] = []
    have_time, have_hash, count = True, False, 0
    for chunk in iter_trace(path, fmt, columns=columns, time_unit=time_unit):
        take = len(chunk) if n is None else min(len(chunk), int(n) - count)
        ins.append(chunk.input[:take])
        outs.append(chunk.output[:take])
        if chunk.time_ns is None:
            have_time = False
        else:
            times.append(chunk.time_ns[:take])
        if chunk.hash_ids is not None:
            have_hash = True
            hashes.extend(tuple(int(x) for x in h) for h in chunk.hash_ids[:take])
        count += take
        if n is not None and count >= n:
            break
    if count == 0:
        raise PlannerError(f"{path}: trace has no requests")
    inputs = np.concatenate(ins).astype(np.int64)
    outputs = np.concatenate(outs).astype(np.int64)
    inputs = np.clip(inputs, 1, max_input if max_input else None)
    outputs = np.clip(outputs, 1, max_output if max_output else None)
    if have_time and times:
        t = scale_times(np.concatenate(times).astype(np.float64) / 1e9, rate)
        order = np.argsort(np.concatenate(times), kind="stable")
        t = t[np.argsort(order, kind="stable")]  # back to row order; make_requests sorts
    else:
        if rate is None:
            raise PlannerError(f"{path}: trace has no timestamps; give a rate for Poisson "
                               "arrivals")
        t = poisson_arrivals(count, rate, seed)
    return make_requests(t, inputs, outputs, hashes if have_hash else None)


__all__ = ["gamma_arrivals", "make_requests", "parse_rate", "poisson_arrivals",
           "requests_from_trace", "requests_from_workload", "sample_lengths", "scale_times"]
