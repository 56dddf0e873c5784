"""JFFC: Join-the-Fastest-Free-Chain routing and a seeded simulation (seed 001, §3.2.1, Alg. 3).

Alg. 3, with one central FIFO queue at the orchestrator:

* on arrival: if some chain has ``Z_k < c_k``, send the job to
  ``argmax{μ_k : Z_k < c_k}``; otherwise append it to the queue;
* on a completion on chain ``k``: if the queue is non-empty, start its head job on ``k``.

The paper leaves ties in the argmax open; :class:`JFFCPolicy` breaks them by input
order (the same rule as the CTMC in :mod:`ctmc`), so runs are reproducible.

:func:`simulate_jffc` is the validation simulator of §4.1.1: Poisson(λ) arrivals,
i.i.d. Exp(1) job sizes ``r`` and service time ``r/μ_k`` on chain ``k``.  Every random
draw comes from ``numpy.random.default_rng(seed)``.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np


class RoutingPolicy(Protocol):
    """Central-queue dispatcher: pick a chain with a free slot for a new job, or ``None``."""

    def select(self, occupancy: Sequence[int]) -> int | None: ...


def fastest_first(rates: Sequence[float] | np.ndarray) -> np.ndarray:
    """Chain indices fastest first, ties in input order: the one ordering behind every
    JFFC here -- :class:`JFFCPolicy` (and through it the simulator's ``jffc`` router),
    the CTMC of :mod:`ctmc` and the bounds of :mod:`bounds`.  ``rates`` is anything
    that ranks chains as their ``μ_k`` does."""
    return np.argsort(-np.asarray(rates, dtype=np.float64), kind="stable")


class JFFCPolicy:
    """Alg. 3 arrival rule: the fastest chain with a free slot (ties: lowest index)."""

    def __init__(self, rates: Sequence[float] | np.ndarray, capacities: Sequence[int]) -> None:
        if len(rates) != len(capacities):
            raise ValueError("rates and capacities differ in length")
        self.rates = tuple(float(r) for r in rates)
        self.capacities = tuple(int(c) for c in capacities)
        # Fastest first, stable on ties, so select() is one linear scan.
        self._order = [int(k) for k in fastest_first(self.rates)]

    def select(self, occupancy: Sequence[int]) -> int | None:
        for k in self._order:
            if occupancy[k] < self.capacities[k]:
                return k
        return None


@dataclass(frozen=True)
class SimulationResult:
    """Means over the measured jobs (after warm-up) and per-chain job counts."""

    mean_response: float
    mean_wait: float
    mean_service: float
    jobs_per_chain: tuple[int, ...]
    n_measured: int
    seed: int


def simulate_jffc(
    rates: Sequence[float],
    capacities: Sequence[int],
    arrival_rate: float,
    *,
    n_jobs: int,
    seed: int,
    warmup: int | None = None,
    policy: RoutingPolicy | None = None,
) -> SimulationResult:
    """Discrete-event simulation of the central queue under ``policy`` (default JFFC).

    The first ``warmup`` jobs (default ``n_jobs // 10``) are simulated but not measured.
    """
    if n_jobs < 1:
        raise ValueError("n_jobs must be >= 1")
    warm = n_jobs // 10 if warmup is None else warmup
    if not 0 <= warm < n_jobs:
        raise ValueError("warmup must be in [0, n_jobs)")
    policy = policy or JFFCPolicy(rates, capacities)
    rng = np.random.default_rng(seed)
    arrivals = np.cumsum(rng.exponential(1.0 / arrival_rate, n_jobs)).tolist()
    sizes = rng.exponential(1.0, n_jobs).tolist()
    mu = [float(r) for r in rates]

    occupancy = [0] * len(mu)
    start = [0.0] * n_jobs
    finish = [0.0] * n_jobs
    chain_of = [-1] * n_jobs
    events: list[tuple[float, int]] = []  # (completion time, job)
    queue: deque[int] = deque()

    def begin(job: int, k: int, t: float) -> None:
        chain_of[job], start[job] = k, t
        finish[job] = t + sizes[job] / mu[k]
        heapq.heappush(events, (finish[job], job))

    def complete_until(t: float) -> None:
        while events and events[0][0] <= t:
            t_done, job = heapq.heappop(events)
            k = chain_of[job]
            if queue:  # Alg. 3 line 8: head of queue takes the freed slot on k
                begin(queue.popleft(), k, t_done)
            else:
                occupancy[k] -= 1

    for job, t in enumerate(arrivals):
        complete_until(t)
        k = policy.select(occupancy)
        if k is None:
            queue.append(job)
        else:
            occupancy[k] += 1
            begin(job, k, t)
    complete_until(float("inf"))

    arr = np.asarray(arrivals[warm:])
    st = np.asarray(start[warm:])
    fin = np.asarray(finish[warm:])
    counts = np.bincount(np.asarray(chain_of[warm:]), minlength=len(mu))
    return SimulationResult(
        mean_response=float(np.mean(fin - arr)),
        mean_wait=float(np.mean(st - arr)),
        mean_service=float(np.mean(fin - st)),
        jobs_per_chain=tuple(int(x) for x in counts),
        n_measured=n_jobs - warm,
        seed=seed,
    )
