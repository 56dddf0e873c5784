"""Finished what-if scenarios on disk, so that an interrupted study resumes.

Each solved problem (a :meth:`Scenario.key` and the kind of solve: closed loop or
planned only) is written, as soon as it is solved, to
``.<study>.cells/<hash>.json`` beside the study folder, atomically; ``index.json`` in
the same folder records the spec it belongs to (planner.core.execution.DoneStore).
``planner whatif ... --resume`` loads the cells whose key it needs and solves only the
rest; a spec that differs from
the saved one is refused (one line naming the first differing field).  The folder is
removed when the study's files are published, and when the study fails; Ctrl-C and
SIGTERM keep it and say how to resume.

An outcome round-trips exactly (JSON keeps every float), so a resumed study's tables
are the uninterrupted study's (timings aside).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from planner.core.errors import PlannerError
from planner.core.execution import DoneStore
from planner.whatif.scenarios import Scenario
from planner.whatif.solve import Outcome

FORMAT = "hetero-planner/whatif-cells"
VERSION = 2  # 2: closed-loop capacities beside the analytic figures


def cells_folder(study: Path) -> Path:
    return study.parent / f".{study.name}.cells"


def _nan(x: Any) -> float:
    return math.nan if x is None else float(x)


def outcome_cell(out: Outcome) -> dict[str, Any]:
    """What a resumed study needs of an outcome (its scenario is rebuilt from the spec)."""
    return {"status": out.status,
            "requests_per_s": out.requests_per_s, "cost_per_hour": out.cost_per_hour,
            "layout": [[g, n] for g, n in out.layout], "roles": list(out.roles),
            "bound": None if not math.isfinite(out.bound) else out.bound,
            "gap": None if not math.isfinite(out.gap) else out.gap,
            "seconds": out.seconds, "decode_mean": out.decode_mean,
            "analytic_requests_per_s": None if not math.isfinite(out.analytic_requests_per_s)
            else out.analytic_requests_per_s,
            "capacity": out.capacity, "answer_from": out.answer_from, "why": out.why,
            "band": [None if not math.isfinite(x) else x
                     for x in (out.band_p10_factor, out.band_p90_factor)],
            "configs": list(out.configs)}


def outcome_from_cell(scenario: Scenario, d: dict[str, Any], source: str) -> Outcome:
    try:
        layout = tuple((str(g), int(n)) for g, n in d["layout"])
        roles = tuple(str(r) for r in d["roles"])
        if len(roles) != len(layout):
            raise ValueError("layout and roles differ in length")
        return Outcome(scenario, str(d["status"]), float(d["requests_per_s"]),
                       float(d["cost_per_hour"]), layout, roles, _nan(d["bound"]),
                       _nan(d["gap"]), float(d["seconds"]), float(d["decode_mean"]),
                       analytic_requests_per_s=_nan(d["analytic_requests_per_s"]),
                       capacity=str(d["capacity"]), answer_from=str(d["answer_from"]),
                       why=str(d["why"]), band_p10_factor=_nan((d.get("band") or [None])[0]),
                       band_p90_factor=_nan((d.get("band") or [None, None])[1]),
                       configs=tuple(str(c) for c in d.get("configs") or ()))
    except (KeyError, TypeError, ValueError) as err:
        raise PlannerError(f"{source}: not a what-if cell ({err}); delete the folder "
                           "to start afresh") from None


class CellStore:
    """The cells folder of one study (module docstring), on the execution layer's
    :class:`~planner.core.execution.DoneStore`."""

    def __init__(self, study: Path, spec_dict: dict[str, Any], *, resume: bool) -> None:
        self.folder = cells_folder(study)
        self._store = DoneStore(self.folder, {"format": FORMAT, "version": VERSION,
                                              "spec": spec_dict}, resume=resume)

    @property
    def resumed(self) -> int:
        return self._store.loaded

    @property
    def saved(self) -> int:
        return self._store.saved

    def load(self, scenario: Scenario, solve: str) -> Outcome | None:
        d = self._store.get((scenario.key(), solve))
        return None if d is None else outcome_from_cell(scenario, d, str(self.folder))

    def save(self, out: Outcome, solve: str) -> None:
        self._store.put((out.scenario.key(), solve), outcome_cell(out))

    def discard(self) -> None:
        self._store.discard()


__all__ = ["CellStore", "cells_folder", "outcome_cell", "outcome_from_cell"]
