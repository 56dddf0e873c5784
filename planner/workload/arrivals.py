"""Arrival-process statistics of a trace, computed in one streaming pass.

For arrival times ``t_1 <= ... <= t_n`` with inter-arrival gaps ``g_i = t_{i+1} - t_i``:

* rate ``lambda = (n - 1) / (t_n - t_1)`` requests/s, i.e. ``1 / mean(g)`` -- the
  estimator consistent with the CV below (``n / duration`` would count one more
  request than there are gaps);
* burstiness ``CV = std(g) / mean(g)`` (population std), 1 for a Poisson process,
  above 1 for bursty traffic;
* ``IDC``, the index of dispersion of the arrival counts in one-second bins
  (variance / mean over every second from the first to the last arrival), 1 for a
  Poisson process.  Unlike the CV it is unchanged when independent copies of the trace
  are superposed -- what a fleet serving many tenants at a hundred times the trace's
  rate sees -- and it measures burstiness at the time scale of a prefill pass, so the
  simulator's arrivals use it (planner.sim.arrivals).

Gaps are accumulated with Chan et al.'s pairwise update of (count, mean, M2) per
chunk, so memory is constant and the result does not depend on the chunking.  Times
are int64 nanoseconds, so gaps are exact before conversion to seconds.  The CV needs
arrivals in time order; a trace whose timestamps go backwards gets no CV (a warning
says so) and its rate uses the span between the earliest and latest time.
"""

from __future__ import annotations

import numpy as np


class ArrivalAccumulator:
    def __init__(self) -> None:
        self.n = 0
        self.first: int | None = None
        self.last: int | None = None
        self.t_min: int | None = None
        self.t_max: int | None = None
        self.backwards = 0
        self._gap_n = 0
        self._gap_mean = 0.0
        self._gap_m2 = 0.0
        self._per_second: dict[int, int] = {}

    def add(self, time_ns: np.ndarray) -> None:
        if time_ns.size == 0:
            return
        t = time_ns.astype(np.int64, copy=False)
        if self.last is not None:
            gaps = np.diff(np.concatenate(([self.last], t)))
        else:
            gaps = np.diff(t)
            self.first = int(t[0])
        self.backwards += int(np.count_nonzero(gaps < 0))
        sec, cnt = np.unique(t // 1_000_000_000, return_counts=True)
        for k, c in zip(sec.tolist(), cnt.tolist(), strict=True):
            self._per_second[k] = self._per_second.get(k, 0) + c
        self._merge_gaps(gaps.astype(np.float64) / 1e9)
        self.last = int(t[-1])
        lo, hi = int(t.min()), int(t.max())
        self.t_min = lo if self.t_min is None else min(self.t_min, lo)
        self.t_max = hi if self.t_max is None else max(self.t_max, hi)
        self.n += int(t.size)

    def _merge_gaps(self, g: np.ndarray) -> None:
        if g.size == 0:
            return
        n_b = g.size
        mean_b = float(g.mean())
        m2_b = float(((g - mean_b) ** 2).sum())
        n_a = self._gap_n
        n = n_a + n_b
        delta = mean_b - self._gap_mean
        self._gap_mean += delta * n_b / n
        self._gap_m2 += m2_b + delta * delta * n_a * n_b / n
        self._gap_n = n

    @property
    def duration_s(self) -> float | None:
        if self.t_min is None or self.t_max is None:
            return None
        return (self.t_max - self.t_min) / 1e9

    def idc(self) -> float | None:
        """Index of dispersion of the counts per second (module docstring)."""
        if not self._per_second or self.n < 2:
            return None
        bins = max(self._per_second) - min(self._per_second) + 1
        if bins < 2:
            return None
        c = np.fromiter(self._per_second.values(), dtype=float)
        mean = c.sum() / bins
        var = (c ** 2).sum() / bins - mean ** 2
        return float(var / mean) if mean > 0 else None

    def result(self) -> tuple[float | None, float | None, list[str]]:
        """``(rate_rps, cv, warnings)``; ``None`` where the trace cannot tell."""
        warnings: list[str] = []
        if self.n == 0:
            return None, None, ["no timestamps: arrival rate and CV unknown"]
        span = self.duration_s or 0.0
        if self.n < 2 or span <= 0:
            return None, None, ["fewer than two distinct arrival times: rate and CV unknown"]
        rate = (self.n - 1) / span
        if self.backwards:
            warnings.append(f"timestamps go backwards {self.backwards} time(s): "
                            "CV of inter-arrival times not computed")
            return rate, None, warnings
        mean = self._gap_mean
        cv = float(np.sqrt(self._gap_m2 / self._gap_n) / mean) if mean > 0 else None
        return rate, cv, warnings
