"""Choice of the reservation parameter ``c`` (seed 001, §3.1.3 eq. 14 and §3.2.3).

Three criteria, all brute force over ``c ∈ [c_max]`` (or a caller-given candidate set):

* ``"surrogate"`` — eq. (14), ``argmin_c c·K(c)`` from GBP-CR alone.  Fig. 6 shows it
  picks too little cache.
* ``"lower"`` — §3.2.3: run GBP-CR(c) then GCA and minimise the Theorem 3.7 **lower**
  bound on the JFFC mean response time.  The paper's evaluation (Figs. 6–7) finds this
  the best predictor of the simulated optimum, so it is the default.
* ``"upper"`` — the same with the Theorem 3.7 upper bound (too much cache, Fig. 6).

The paper scores a candidate only by its bound; a candidate is admissible here when the
GCA chains are stable, ``λ < ν`` (the bound is ``∞`` otherwise).  GBP-CR is called with
the requirement ``λ/ρ̄`` so its early break still selects how many servers to use.
Ties go to the smallest ``c`` (less reserved cache, shorter search).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from planner.inner.chains.bounds import ResponseTimeBounds, jffc_bounds
from planner.inner.chains.gbp_cr import GBPCRResult, gbp_cr
from planner.inner.chains.gca import GCAResult, gca
from planner.inner.chains.placement import slots_after_placement
from planner.inner.chains.servers import ChainModel, Server, max_capacity

CRITERIA = ("lower", "upper", "surrogate")


@dataclass(frozen=True)
class Candidate:
    """Everything computed for one value of ``c``."""

    c: int
    placement: GBPCRResult
    allocation: GCAResult
    bounds: ResponseTimeBounds
    score: float


_Memo = dict[tuple[tuple[int, ...], tuple[int, ...]], tuple[GCAResult, ResponseTimeBounds]]


def evaluate_c(
    servers: Sequence[Server],
    model: ChainModel,
    c: int,
    arrival_rate: float,
    rho_bar: float,
    criterion: str = "lower",
    memo: _Memo | None = None,
) -> Candidate:
    """GBP-CR(c) → GCA → Theorem 3.7 bounds, scored by ``criterion``.

    GCA and the bounds depend on ``c`` only through the placement (``M̃_j`` is fixed by
    ``m_j``), and many consecutive ``c`` share one placement, so ``memo`` caches them.
    """
    placed = gbp_cr(servers, model, c, arrival_rate / rho_bar)
    key = (placed.placement.first_block, placed.placement.n_hosted)
    if memo is not None and key in memo:
        alloc, b = memo[key]
    else:
        slots = slots_after_placement(servers, model, placed.placement)
        alloc = gca(servers, placed.placement, slots)
        rates = [k.service_rate for k in alloc.chains]
        b = jffc_bounds(rates, alloc.capacities, arrival_rate)
        if memo is not None:
            memo[key] = (alloc, b)
    if criterion == "lower":
        score = b.lower
    elif criterion == "upper":
        score = b.upper
    elif criterion == "surrogate":
        score = placed.surrogate
    else:
        raise ValueError(f"criterion must be one of {CRITERIA}, got {criterion!r}")
    return Candidate(c, placed, alloc, b, score)


def choose_c(
    servers: Sequence[Server],
    model: ChainModel,
    arrival_rate: float,
    rho_bar: float,
    criterion: str = "lower",
    candidates: Iterable[int] | None = None,
) -> tuple[Candidate | None, dict[int, float]]:
    """Best candidate by ``criterion`` and the score of every ``c`` tried.

    Returns ``(None, scores)`` when no candidate has a finite score.
    """
    cs = list(candidates) if candidates is not None else range(1, max_capacity(servers, model) + 1)
    if criterion not in CRITERIA:
        raise ValueError(f"criterion must be one of {CRITERIA}, got {criterion!r}")
    scores: dict[int, float] = {}
    if criterion == "surrogate":  # GBP-CR alone scores c; GCA only for the winner
        for c in cs:
            scores[c] = gbp_cr(servers, model, c, arrival_rate / rho_bar).surrogate
        finite = [c for c in scores if math.isfinite(scores[c])]
        if not finite:
            return None, scores
        c_best = min(finite, key=lambda c: (scores[c], c))
        return evaluate_c(servers, model, c_best, arrival_rate, rho_bar, criterion), scores
    best: Candidate | None = None
    memo: _Memo = {}
    for c in cs:
        cand = evaluate_c(servers, model, c, arrival_rate, rho_bar, criterion, memo)
        scores[c] = cand.score
        if math.isfinite(cand.score) and (best is None or cand.score < best.score):
            best = cand
    return best, scores
