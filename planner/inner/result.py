"""The answer of an inner solve (seed 002 §4.8, step 6 "Results"), serialisable to JSON.

Whatever the formulation, a solution is an assignment ``x^P, x^D`` (shape ``(I, J)``)
of island time to (phase, range); every figure below is recomputed from it with the
same definitions, so results of different solvers are comparable:

* per range: :math:`R^P_j = \\sum_i b^P_{ij} x^P_{ij}`, :math:`R^D_j` likewise (§4.8.1);
* :math:`R_{prefill} = \\sum_j R^P_j`, :math:`R_{decode} = \\sum_j R^D_j` and the thesis's
  :math:`R_{total} = \\min(R_{prefill}, R_{decode})` (§4.4.1);
* ``R_sustained`` :math:`= \\min_{j: p_j>0} \\min(R^P_j, R^D_j)/p_j`: the largest
  arrival rate ``T`` whose every range demand :math:`p_j T` is met in both phases.  It
  is at most ``R_total`` and equals it only when the served mix matches ``p``;
* :math:`D_{total} = \\sum_j |R^P_j - p_j R_{prefill}| + |R^D_j - p_j R_{decode}| +
  |R^D_j - R^P_j|`, the thesis's deviation (constraints 4-7 taken at equality).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from planner.inner.problem import InnerProblem

STATUSES = ("optimal", "time_limit", "infeasible")
ROLES = ("prefill", "decode", "both", "idle")


@dataclass(frozen=True)
class IslandAssignment:
    """One island's role, its parallel configuration and batch size for that role, and
    ``shares[j]``: the fraction of its time given to range ``j`` (sums to 1 unless idle)."""

    gpu: str
    size: int
    role: str
    config: str
    batch: int
    shares: tuple[float, ...]


@dataclass(frozen=True)
class InnerResult:
    """Result of one inner solve; see the module docstring for the definitions.

    ``status``: ``"optimal"`` (proven within the solver's gap), ``"time_limit"`` (best
    feasible solution found before the limit, not proven optimal) or ``"infeasible"``
    (``reason`` says why; rates are then zero).  Rates are requests/s; token rates
    multiply by the mean input length (prefill) and ``decode_mean`` (decode).
    """

    solver: str
    status: str
    reason: str
    islands: tuple[IslandAssignment, ...]
    range_start: tuple[float, ...]
    range_end: tuple[float, ...]
    range_prob: tuple[float, ...]
    prefill_rps: tuple[float, ...]
    decode_rps: tuple[float, ...]
    R_prefill: float
    R_decode: float
    R_total: float
    R_sustained: float
    prefill_tokens_per_s: float
    decode_tokens_per_s: float
    total_tokens_per_s: float
    sustained_tokens_per_s: float
    D_total: float
    objective: float | None
    mip_gap: float
    solve_time_s: float
    wall_time_s: float
    note: str = ""
    extra: dict[str, float] = field(default_factory=dict)

    @property
    def feasible(self) -> bool:
        return self.status != "infeasible"

    def shares(self, phase: str) -> np.ndarray:
        """``(I, J)`` shares of islands whose role is ``phase`` (zero rows elsewhere)."""
        J = len(self.range_prob)
        out = np.zeros((len(self.islands), J))
        for i, isl in enumerate(self.islands):
            if isl.role == phase:
                out[i] = isl.shares
        return out

    def roles(self) -> list[str]:
        return [isl.role for isl in self.islands]

    # --- JSON ---------------------------------------------------------------------------

    def to_dict(self) -> dict:
        d = asdict(self)
        d["islands"] = [asdict(i) for i in self.islands]
        return _finite_or_none(d)

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    @classmethod
    def from_dict(cls, d: dict) -> InnerResult:
        d = dict(d)
        d["islands"] = tuple(
            IslandAssignment(**{**i, "shares": tuple(i["shares"])}) for i in d["islands"]
        )
        for k in ("range_start", "range_end", "range_prob", "prefill_rps", "decode_rps"):
            d[k] = tuple(d[k])
        if d.get("mip_gap") is None:
            d["mip_gap"] = math.inf
        return cls(**d)

    @classmethod
    def from_json(cls, text: str) -> InnerResult:
        return cls.from_dict(json.loads(text))


def _finite_or_none(obj):
    """JSON has no NaN/inf: write them as null (only ``objective``/``mip_gap`` can be)."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _finite_or_none(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_finite_or_none(v) for v in obj]
    return obj


def _ranges(problem: InnerProblem) -> dict:
    return {
        "range_start": tuple(map(float, problem.range_start)),
        "range_end": tuple(map(float, problem.range_end)),
        "range_prob": tuple(map(float, problem.range_prob)),
    }


def infeasible_result(
    problem: InnerProblem | None, solver: str, reason: str, *, wall_time_s: float = 0.0,
    solve_time_s: float = 0.0,
) -> InnerResult:
    """An ``"infeasible"`` result: every island idle, all rates zero, ``reason`` set."""
    if problem is None:
        islands: tuple[IslandAssignment, ...] = ()
        ranges: dict[str, Any] = {"range_start": (), "range_end": (), "range_prob": ()}
    else:
        J = problem.n_ranges
        islands = tuple(
            IslandAssignment(s.gpu, s.size, "idle", "", 0, (0.0,) * J) for s in problem.islands
        )
        ranges = _ranges(problem)
    J = len(ranges["range_prob"])
    return InnerResult(
        solver=solver, status="infeasible", reason=reason, islands=islands, **ranges,
        prefill_rps=(0.0,) * J, decode_rps=(0.0,) * J, R_prefill=0.0, R_decode=0.0,
        R_total=0.0, R_sustained=0.0, prefill_tokens_per_s=0.0, decode_tokens_per_s=0.0,
        total_tokens_per_s=0.0, sustained_tokens_per_s=0.0, D_total=0.0, objective=None,
        mip_gap=math.inf, solve_time_s=solve_time_s, wall_time_s=wall_time_s,
        note=problem.note if problem is not None else "",
    )


def range_metrics(
    problem: InnerProblem, x_prefill: np.ndarray, x_decode: np.ndarray,
    x_both: np.ndarray | None = None,
) -> dict[str, Any]:
    """Per-range rates and the totals of the module docstring for an assignment;
    colocated islands (``x_both``) count towards both phases."""
    p = problem.range_prob
    rp = np.einsum("ij,ij->j", problem.prefill_rps, x_prefill)
    rd = np.einsum("ij,ij->j", problem.decode_rps, x_decode)
    if x_both is not None and problem.both_rps is not None:
        ra = np.einsum("ij,ij->j", problem.both_rps, x_both)
        rp, rd = rp + ra, rd + ra
    R_p, R_d = float(rp.sum()), float(rd.sum())
    active = p > 0
    sustained = float(np.min(np.minimum(rp, rd)[active] / p[active]))
    dev = np.abs(rp - p * R_p) + np.abs(rd - p * R_d) + np.abs(rd - rp)
    m_in = problem.input_tokens()
    per_request = float(p @ m_in) + problem.decode_mean
    R_total = min(R_p, R_d)
    return {
        "prefill_rps": rp,
        "decode_rps": rd,
        "R_prefill": R_p,
        "R_decode": R_d,
        "R_total": R_total,
        "R_sustained": sustained,
        "prefill_tokens_per_s": float(rp @ m_in),
        "decode_tokens_per_s": R_d * problem.decode_mean,
        "total_tokens_per_s": R_total * per_request,
        "sustained_tokens_per_s": sustained * per_request,
        "D_total": float(dev.sum()),
    }


def assemble_result(
    problem: InnerProblem,
    *,
    solver: str,
    status: str,
    x_prefill: np.ndarray,
    x_decode: np.ndarray,
    roles: list[str],
    x_both: np.ndarray | None = None,
    objective: float | None,
    mip_gap: float,
    solve_time_s: float,
    wall_time_s: float,
    reason: str = "",
    note: str = "",
    extra: dict[str, float] | None = None,
) -> InnerResult:
    """Build the result of a solved assignment (shares are clipped to [0, 1] and the
    solver's round-off below 1e-9 is dropped so that JSON stays readable)."""
    if status not in STATUSES:
        raise ValueError(f"unknown status {status!r}")
    if len(roles) != problem.n_islands or any(r not in ROLES for r in roles):
        raise ValueError(f"roles must be one of {ROLES} per island")
    xp = np.where(np.abs(x_prefill) < 1e-9, 0.0, np.clip(x_prefill, 0.0, 1.0))
    xd = np.where(np.abs(x_decode) < 1e-9, 0.0, np.clip(x_decode, 0.0, 1.0))
    xa = None if x_both is None else np.where(np.abs(x_both) < 1e-9, 0.0,
                                              np.clip(x_both, 0.0, 1.0))
    m = range_metrics(problem, xp, xd, xa)
    islands = []
    for i, spec in enumerate(problem.islands):
        role = roles[i]
        if role == "prefill":
            isl = IslandAssignment(spec.gpu, spec.size, role, spec.prefill_config,
                                   spec.prefill_batch, tuple(map(float, xp[i])))
        elif role == "decode":
            isl = IslandAssignment(spec.gpu, spec.size, role, spec.decode_config,
                                   spec.decode_batch, tuple(map(float, xd[i])))
        elif role == "both" and xa is not None:
            isl = IslandAssignment(spec.gpu, spec.size, role, spec.both_config,
                                   spec.both_batch, tuple(map(float, xa[i])))
        else:
            isl = IslandAssignment(spec.gpu, spec.size, "idle", "", 0,
                                   (0.0,) * problem.n_ranges)
        islands.append(isl)
    notes = [n for n in (problem.note, note) if n]
    return InnerResult(
        solver=solver,
        status=status,
        reason=reason,
        islands=tuple(islands),
        **_ranges(problem),
        prefill_rps=tuple(map(float, m["prefill_rps"])),
        decode_rps=tuple(map(float, m["decode_rps"])),
        R_prefill=m["R_prefill"],
        R_decode=m["R_decode"],
        R_total=m["R_total"],
        R_sustained=m["R_sustained"],
        prefill_tokens_per_s=m["prefill_tokens_per_s"],
        decode_tokens_per_s=m["decode_tokens_per_s"],
        total_tokens_per_s=m["total_tokens_per_s"],
        sustained_tokens_per_s=m["sustained_tokens_per_s"],
        D_total=m["D_total"],
        objective=objective,
        mip_gap=mip_gap,
        solve_time_s=solve_time_s,
        wall_time_s=wall_time_s,
        note="; ".join(notes),
        extra=dict(extra or {}),
    )
