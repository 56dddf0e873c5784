"""The closed loop on a sample: which scenarios close it, the correction the others get,
and that correction's measured error.

A study too large to take every scenario through ``planner plan``'s closed loop plans
every scenario (the analytic figure, :func:`planner.plan.make_plan`) and closes the
loop for a sample.  The closed loop's headline differs from the analytic figure by a
ratio that depends mostly on the workload (its burstiness and lengths decide how far
below the perf model's capacity the SLO holds), so the sample and the correction are
per workload:

* **Sample** (:func:`choose_sample`) -- for each workload, its first distinct problem
  (for the base workload: the base scenario) and ``n - 1`` more spread evenly over the
  range of the analytic figures (smallest and largest included); a workload with at
  most ``n`` distinct problems has its loop closed for all of them.  Problems nothing
  serves are left out: their capacity is 0 either way.
* **Correction** -- each other scenario's capacity is its analytic figure times the
  median ratio headline / analytic of its workload's sample.  The median, because a
  sample holds the odd scenario far off the others (a small single-type fleet that
  holds the SLO at half its analytic capacity, on the example study), which would drag
  a mean -- or an interpolation in the analytic figure -- away from every other
  scenario: benchmarks/whatif_correction.py measures the three rules against a study
  closed in full (docs/whatif.md).
* **Error** -- measured on the sample by leave-one-out: each sampled scenario's
  figure corrected from the *other* sampled scenarios, against its closed-loop
  headline; the study states the largest ``|corrected - closed| / closed`` (per
  workload, and overall), and the median beside it.  An odd scenario in the sample
  makes the largest error large -- it is what that scenario would have been off by had
  it not been sampled -- so the statement errs on the side of caution.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from planner.whatif.solve import CORRECTED, Outcome


@dataclass(frozen=True)
class SampledPoint:
    """One scenario of a sample: its analytic figure, its closed-loop headline and the
    headline leave-one-out predicts for it."""

    label: str
    analytic: float
    closed: float
    predicted: float = math.nan  # analytic x the others' mean ratio (nan: no others)

    @property
    def ratio(self) -> float:
        return self.closed / self.analytic

    @property
    def error(self) -> float:
        """``|predicted - closed| / closed`` (inf when it holds nothing but is
        predicted to; nan without a prediction)."""
        if math.isnan(self.predicted):
            return math.nan
        if self.closed > 0:
            return abs(self.predicted - self.closed) / self.closed
        return 0.0 if self.predicted == 0 else math.inf

    def to_dict(self) -> dict[str, Any]:
        return {"scenario": self.label, "analytic_requests_per_s": self.analytic,
                "closed_loop_requests_per_s": self.closed, "ratio": self.ratio,
                "leave_one_out_requests_per_s": _finite(self.predicted),
                "leave_one_out_error": _finite(self.error)}


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def interpolate(points: Sequence[tuple[float, float]], x: float) -> float:
    """The ratio at analytic figure ``x`` from ``(analytic, ratio)`` points: linear in
    ``log(analytic)`` between the two around ``x``, the nearest one's beyond them (a
    rule benchmarks/whatif_correction.py measures :func:`median_ratio` against)."""
    pts = sorted(points)
    if x <= pts[0][0]:
        return pts[0][1]
    if x >= pts[-1][0]:
        return pts[-1][1]
    for (x0, r0), (x1, r1) in zip(pts, pts[1:], strict=False):
        if x0 <= x <= x1:
            if x1 <= x0:
                return (r0 + r1) / 2
            t = (math.log(x) - math.log(x0)) / (math.log(x1) - math.log(x0))
            return r0 + t * (r1 - r0)
    return pts[-1][1]  # unreachable: x is within the points' range


def mean_ratio(points: Sequence[tuple[float, float]], x: float) -> float:
    """The mean ratio of ``(analytic, ratio)`` points, whatever ``x`` (a rule
    benchmarks/whatif_correction.py measures :func:`median_ratio` against)."""
    return sum(r for _, r in points) / len(points)


def median_ratio(points: Sequence[tuple[float, float]], x: float) -> float:
    """The median ratio of ``(analytic, ratio)`` points, whatever ``x``: the planner's
    correction, robust to a sampled scenario far off the others (module docstring)."""
    r = sorted(ratio for _, ratio in points)
    mid = len(r) // 2
    return r[mid] if len(r) % 2 else (r[mid - 1] + r[mid]) / 2


Predict = Callable[[Sequence[tuple[float, float]], float], float]


@dataclass
class WorkloadCorrection:
    """The correction of one workload's scenarios (module docstring)."""

    workload: str
    components: tuple[tuple[str, float], ...]
    points: tuple[SampledPoint, ...]
    corrected: int = 0  # scenarios whose capacity is corrected with it
    predict: Predict = median_ratio

    def factor(self, analytic: float) -> float:
        """The correction at ``analytic`` requests/s (module docstring)."""
        return self.predict([(p.analytic, p.ratio) for p in self.points], analytic)

    @property
    def median_error(self) -> float:
        """Median leave-one-out error (nan: not measured)."""
        errors = sorted(p.error for p in self.points if not math.isnan(p.error))
        if not errors:
            return math.nan
        mid = len(errors) // 2
        return errors[mid] if len(errors) % 2 else (errors[mid - 1] + errors[mid]) / 2

    @property
    def ratios(self) -> tuple[float, float]:
        """The smallest and largest measured ratio."""
        r = [p.ratio for p in self.points]
        return min(r), max(r)

    @property
    def max_error(self) -> float:
        """Largest leave-one-out error (nan: a sample of one, not measured)."""
        errors = [p.error for p in self.points if not math.isnan(p.error)]
        return max(errors) if errors else math.nan

    def apply(self, out: Outcome) -> Outcome:
        """``out`` (a planned outcome) with its capacity corrected."""
        self.corrected += 1
        f = self.factor(out.analytic_requests_per_s)
        return replace(out, requests_per_s=out.analytic_requests_per_s * f,
                       capacity=CORRECTED, correction=f, correction_error=self.max_error)

    def to_dict(self) -> dict[str, Any]:
        lo, hi = self.ratios
        return {"workload": self.workload, "ratio_min": lo, "ratio_max": hi,
                "max_leave_one_out_error": _finite(self.max_error),
                "median_leave_one_out_error": _finite(self.median_error),
                "sampled": [p.to_dict() for p in self.points],
                "corrected_scenarios": self.corrected}


def measure(workload: str, components: tuple[tuple[str, float], ...],
            sample: Sequence[tuple[str, float, float]], predict: Predict = median_ratio
            ) -> WorkloadCorrection:
    """The correction of a workload from its sample of (label, analytic, closed), with
    each sampled scenario's leave-one-out prediction."""
    pts = [(analytic, closed / analytic) for _, analytic, closed in sample]
    points = []
    for k, (label, analytic, closed) in enumerate(sample):
        others = pts[:k] + pts[k + 1:]
        predicted = analytic * predict(others, analytic) if others else math.nan
        points.append(SampledPoint(label, analytic, closed, predicted))
    return WorkloadCorrection(workload, components, tuple(points), predict=predict)


def choose_sample(planned: Sequence[Outcome], n: int) -> list[int]:
    """Indices into ``planned`` (one outcome per scenario, planned only) of the distinct
    problems whose loop a sample of ``n`` per workload closes (module docstring), in
    their order in ``planned``."""
    groups: dict[tuple, list[int]] = {}
    seen: set[tuple] = set()
    for i, o in enumerate(planned):
        key = o.scenario.key()
        if key in seen or not o.analytic_requests_per_s > 0:
            continue
        seen.add(key)
        groups.setdefault(o.scenario.components, []).append(i)
    chosen: list[int] = []
    for members in groups.values():
        if len(members) <= n:
            chosen += members
            continue
        rest = sorted(members[1:], key=lambda i: (planned[i].analytic_requests_per_s, i))
        m, k = len(rest), n - 1
        spots = [m // 2] if k == 1 else [round(j * (m - 1) / (k - 1)) for j in range(k)]
        chosen += [members[0], *(rest[j] for j in spots)]
    return sorted(set(chosen))


@dataclass
class Correction:
    """The corrections of a sampled study, by workload (components)."""

    sample: int  # scenarios per workload closed (the spec's)
    workloads: dict[tuple, WorkloadCorrection] = field(default_factory=dict)

    @classmethod
    def from_closed(cls, sample: int, closed: Sequence[Outcome]) -> Correction:
        """Measured from the sample's closed outcomes (with their analytic figures)."""
        by: dict[tuple, list[Outcome]] = {}
        for o in closed:
            if o.analytic_requests_per_s > 0:
                by.setdefault(o.scenario.components, []).append(o)
        out = cls(sample)
        for comps, outs in by.items():
            out.workloads[comps] = measure(
                outs[0].scenario.workload, comps,
                [(_label(o), o.analytic_requests_per_s, o.requests_per_s) for o in outs])
        return out

    def for_outcome(self, out: Outcome) -> WorkloadCorrection | None:
        return self.workloads.get(out.scenario.components)

    @property
    def used(self) -> list[WorkloadCorrection]:
        """The workloads whose correction some scenario received."""
        return [w for w in self.workloads.values() if w.corrected]

    @property
    def max_error(self) -> float:
        """The largest leave-one-out error of a correction that was applied (nan: none
        applied, or not measured)."""
        errors = [w.max_error for w in self.used if not math.isnan(w.max_error)]
        return max(errors) if errors else math.nan

    @property
    def corrected(self) -> int:
        return sum(w.corrected for w in self.workloads.values())

    @property
    def closed(self) -> int:
        return sum(len(w.points) for w in self.workloads.values())

    def to_dict(self) -> dict[str, Any]:
        return {"sample_per_workload": self.sample, "closed_scenarios": self.closed,
                "corrected_scenarios": self.corrected,
                "max_leave_one_out_error": _finite(self.max_error),
                "workloads": [w.to_dict() for w in self.workloads.values()],
                "rule": "corrected = analytic x the median closed / analytic ratio of "
                        "the workload's sample; error: leave-one-out on the sample, "
                        "|corrected - closed| / closed"}


def _label(o: Outcome) -> str:
    s = o.scenario
    return s.name if s.option == "mix" else f"{s.name}, {s.option}"


__all__ = ["Correction", "Predict", "SampledPoint", "WorkloadCorrection", "choose_sample",
           "interpolate", "mean_ratio", "measure", "median_ratio"]
