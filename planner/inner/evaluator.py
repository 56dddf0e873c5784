"""Re-evaluate an inner solution at full input-length resolution (seed 002 §5.2.2).

The solver sees each range ``j`` through its midpoint throughput ``b_ij`` and mass
``p_j``; the evaluator replays the same shares against the exact per-length tables of
:class:`~planner.inner.problem.FullResolution` and the true :math:`p(s\\mid w)`.

How a range's share reaches its lengths
---------------------------------------
Island ``i`` spends the fraction :math:`x_{ij}` of its time on range ``j``
(time-share reading of §4.8.1, where :math:`R_j = \\sum_i b_{ij} x_{ij}`).  Within the
range that time is split in proportion to the workload, :math:`w(s) = p(s)/P_j` with
:math:`P_j = \\sum_{s \\in j} p(s)` (uniform if :math:`P_j = 0`), so length ``s`` is
served at

.. math::

    \\text{model}(s) = w(s) \\sum_i b_{ij} x_{ij}, \\qquad
    \\text{evaluated}(s) = w(s) \\sum_i b_i(s)\\, x_{ij}

requests/s: the model assumes every length runs at the midpoint's speed, the
evaluator uses each length's own speed.  With ranges of width 1 the two coincide,
and summing ``model(s)`` over a range gives back the solver's :math:`R_j`.

§4.4.2 writes the expected throughput as :math:`\\sum_i\\sum_s x_i(s) R^{(i)}(s)
p(s\\mid w)`, which weights by ``p`` on top of shares that already follow the mix and
is not the quantity the MILP of §4.8.1 maximises; we use the time-share reading so
that "model" and "evaluated" differ only by resolution (the oscillation of Fig. 5.4).

Totals returned
---------------
* ``R_prefill``/``R_decode`` :math:`= \\sum_s \\text{evaluated}(s)` and ``R_total`` =
  their minimum: the thesis's weighted-sum figures (§4.4.1, §5.2.2).
* ``R_sustained`` :math:`= \\min_\\phi \\min_{s: p(s) > 0} \\text{evaluated}_\\phi(s) / p(s)`:
  the largest arrival rate ``T`` for which every length's demand :math:`p(s)T` is
  served in both phases.  It is at most ``R_total``; lengths shorter than a range's
  midpoint are over-served and longer ones under-served, and the worst one sets it.
* ``R_pooled``: the same bottleneck rate when each range's requests are pooled rather
  than time-split -- a router sends any request of range ``j`` to the range's islands,
  so island ``i`` serves the range's length mix at its harmonic-mean speed
  :math:`H_{ij} = 1/\\sum_{s \\in j} w(s)/b_i(s)` and
  :math:`R_{pooled} = \\min_{\\phi, j} \\sum_i x_{ij} H_{ij} / P_j`.  It is what a
  range-level router sustains; for a range served by one island (or islands with
  proportional speed curves) it is at least ``R_sustained``, since a fixed split
  cannot move time to the slow lengths.
* ``D_total`` at full resolution: :math:`\\sum_s |e_P(s) - p(s)R_P| + |e_D(s) - p(s)R_D|
  + |e_D(s) - e_P(s)|` (constraints 4-7 of §4.8.1 per length instead of per range).

Lengths outside every range carry no capacity; their probability is reported as
``uncovered_prob`` and they are left out of ``R_sustained`` (which would otherwise
be 0 whenever the ranges, cut at ``floor(|S|/W) * W`` in §4.6.3, drop a tail).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

import numpy as np

from planner.inner.problem import FullResolution, InnerProblem
from planner.inner.result import InnerResult


@dataclass(frozen=True)
class Evaluation:
    """Full-resolution figures of one inner result; per-length arrays have length S."""

    pmf: np.ndarray
    model_prefill: np.ndarray
    eval_prefill: np.ndarray
    model_decode: np.ndarray
    eval_decode: np.ndarray
    R_prefill: float
    R_decode: float
    R_total: float
    T_prefill: float
    T_decode: float
    R_sustained: float
    R_pooled: float
    model_R_total: float
    prefill_tokens_per_s: float
    decode_tokens_per_s: float
    total_tokens_per_s: float
    sustained_tokens_per_s: float
    D_total: float
    uncovered_prob: float

    def to_dict(self) -> dict:
        return {k: (v.tolist() if isinstance(v, np.ndarray) else v)
                for k, v in asdict(self).items()}

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    def plot_data(self) -> dict[str, np.ndarray]:
        """Series of a Fig. 5.4-style plot: model vs evaluated throughput per length,
        and the workload trace scaled to the thesis's ``R_total``."""
        return {
            "length": np.arange(self.pmf.shape[0]),
            "model_prefill": self.model_prefill,
            "eval_prefill": self.eval_prefill,
            "model_decode": self.model_decode,
            "eval_decode": self.eval_decode,
            "trace": self.pmf * self.R_total,
        }


def evaluate(result: InnerResult, problem: InnerProblem, full: FullResolution) -> Evaluation:
    """Replay ``result``'s shares at every length of ``full`` (module docstring)."""
    S = full.pmf.shape[0]
    I, J = problem.n_islands, problem.n_ranges
    if full.prefill_rps.shape[0] != I or len(result.islands) != I:
        raise ValueError("evaluate: result, problem and full tables disagree on islands")
    pmf = full.pmf
    s = np.arange(S)
    # Range index of every length (-1 outside all ranges).
    rng = np.full(S, -1)
    for j in range(J):
        a = max(int(problem.range_start[j]), 0)
        b = min(int(problem.range_end[j]), S)
        rng[a:b] = j
    covered = rng >= 0
    r = np.where(covered, rng, 0)
    mass = np.bincount(r[covered], weights=pmf[covered], minlength=J)
    width = np.bincount(r[covered], minlength=J).astype(float)
    w = np.where(mass[r] > 0, pmf / np.where(mass[r] > 0, mass[r], 1.0),
                 1.0 / np.maximum(width[r], 1.0))
    w = np.where(covered, w, 0.0)

    xp = result.shares("prefill")  # (I, J)
    xd = result.shares("decode")
    xa = result.shares("both")  # colocated islands count in both phases
    both = full.both_rps if full.both_rps is not None else np.zeros_like(full.prefill_rps)
    eval_a = w * np.einsum("is,is->s", both, xa[:, r])
    eval_p = w * np.einsum("is,is->s", full.prefill_rps, xp[:, r]) + eval_a
    eval_d = w * np.einsum("is,is->s", full.decode_rps, xd[:, r]) + eval_a
    model_p = w * np.asarray(result.prefill_rps)[r]
    model_d = w * np.asarray(result.decode_rps)[r]

    R_p, R_d = float(eval_p.sum()), float(eval_d.sum())
    need = covered & (pmf > 0)
    T_p = float(np.min(eval_p[need] / pmf[need])) if np.any(need) else 0.0
    T_d = float(np.min(eval_d[need] / pmf[need])) if np.any(need) else 0.0
    sustained = min(T_p, T_d)
    pooled = min(_pooled_rate(np.vstack([full.prefill_rps, both]), np.vstack([xp, xa]), w, r,
                              covered, mass),
                 _pooled_rate(np.vstack([full.decode_rps, both]), np.vstack([xd, xa]), w, r,
                              covered, mass))
    dev = np.abs(eval_p - pmf * R_p) + np.abs(eval_d - pmf * R_d) + np.abs(eval_d - eval_p)
    per_request = float(pmf @ s) + problem.decode_mean
    R_total = min(R_p, R_d)
    return Evaluation(
        pmf=pmf,
        model_prefill=model_p,
        eval_prefill=eval_p,
        model_decode=model_d,
        eval_decode=eval_d,
        R_prefill=R_p,
        R_decode=R_d,
        R_total=R_total,
        T_prefill=T_p,
        T_decode=T_d,
        R_sustained=sustained,
        R_pooled=pooled,
        model_R_total=result.R_total,
        prefill_tokens_per_s=float(eval_p @ s),
        decode_tokens_per_s=R_d * problem.decode_mean,
        total_tokens_per_s=R_total * per_request,
        sustained_tokens_per_s=sustained * per_request,
        D_total=float(dev.sum()),
        uncovered_prob=float(pmf[~covered].sum()),
    )


def pipeline_evaluation(result: InnerResult, problem: InnerProblem,
                        pmf: np.ndarray) -> Evaluation:
    """The full-resolution figures of a pipeline plan (seeds 000/001).

    A pipeline serves every request's prefill and decode on its chain at the plan's
    throughput ``T`` whatever the input length (the seeds' service model has one mean
    job time; it has no per-length tables to replay), so at every length the model and
    the "evaluated" rate are both ``p(s) T`` and the deviation is zero.  Stating it this
    way keeps plan.json and the report honest: they show the pipeline's own figure
    instead of replaying shares over tables the pipeline never used.
    """
    pmf = np.asarray(pmf, float)
    T = float(result.R_sustained)
    served = pmf * T
    s = np.arange(pmf.shape[0])
    per_request = float(pmf @ s) + problem.decode_mean
    return Evaluation(
        pmf=pmf, model_prefill=served, eval_prefill=served, model_decode=served,
        eval_decode=served, R_prefill=T, R_decode=T, R_total=T, T_prefill=T, T_decode=T,
        R_sustained=T, R_pooled=T, model_R_total=float(result.R_total),
        prefill_tokens_per_s=float(served @ s), decode_tokens_per_s=T * problem.decode_mean,
        total_tokens_per_s=T * per_request, sustained_tokens_per_s=T * per_request,
        D_total=0.0, uncovered_prob=0.0)


def _pooled_rate(b: np.ndarray, x: np.ndarray, w: np.ndarray, r: np.ndarray,
                 covered: np.ndarray, mass: np.ndarray) -> float:
    """min_j sum_i x_ij H_ij / P_j with H_ij the harmonic-mean speed of island i over
    range j's length mix (0 if it cannot serve some length of positive weight)."""
    I, J = x.shape
    cov = np.flatnonzero(covered & (w > 0))
    with np.errstate(divide="ignore"):
        inv = np.where(b[:, cov] > 0, w[cov] / np.where(b[:, cov] > 0, b[:, cov], 1.0),
                       np.inf)
    order = np.argsort(r[cov], kind="stable")
    rj = r[cov][order]
    starts = np.flatnonzero(np.r_[True, rj[1:] != rj[:-1]])
    time_per_req = np.full((I, J), np.inf)
    time_per_req[:, rj[starts]] = np.add.reduceat(inv[:, order], starts, axis=1)
    H = np.where(np.isfinite(time_per_req), 1.0 / time_per_req, 0.0)
    need = mass > 0
    if not np.any(need):
        return 0.0
    return float(np.min((x * H).sum(axis=0)[need] / mass[need]))
