"""A router configuration file (``router.json``, written by ``planner export``) as the
range router's weights: the simulated routing is the exported one.

The file lists, per input-length range, the prefill islands with their weights and the
decode islands with theirs, by plan island index (planner.export.router).  The range
router (:class:`planner.sim.routers.range_router.RangeRouter`) then follows those
weights instead of recomputing them from the plan -- so a hand-edited file (an island
drained, a range moved) is simulated as it will run.

Every problem is one ``PlannerError`` naming the file and the field: not JSON, another
schema, a range count or bounds that differ from the plan's, an island that is not a
serving island of the role, a weight that is not a finite number >= 0, a range with no
weight left for a phase the plan has.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from perfmodel.reading import read_json
from planner.core.errors import PlannerError

#: The schema line the export writes (planner.export.router.SCHEMA).
SCHEMA = "hetero-planner router config 1"


def _fail(path: str, field: str, problem: str) -> PlannerError:
    return PlannerError(f"{path}: field '{field}' {problem}")


def load_router_weights(path: str | Path, plan: Mapping[str, Any]
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(range edges, prefill weights, decode weights) of ``path`` for ``plan``: weights
    are (serving islands of the role, ranges) in the simulator's island order (the
    plan's serving islands; prefill side: prefill and colocated islands)."""
    where = str(path)
    data = read_json(Path(path), "router configuration")
    if not isinstance(data, Mapping):
        raise PlannerError(f"{where}: expected a JSON object")
    if data.get("schema") != SCHEMA:
        raise _fail(where, "schema", f"must be {SCHEMA!r} (a router.json of planner export), "
                    f"got {data.get('schema')!r}")
    ranges = data.get("ranges")
    start = list(plan["ranges"]["start"])
    end = list(plan["ranges"]["end"])
    if not isinstance(ranges, list) or len(ranges) != len(start):
        raise _fail(where, "ranges", f"must list the plan's {len(start)} ranges")
    serving = [i for i, isl in enumerate(plan["islands"]) if isl["role"] != "idle"]
    role = {i: plan["islands"][i]["role"] for i in serving}
    front = [i for i in serving if role[i] in ("prefill", "both")]
    back = [i for i in serving if role[i] == "decode"]
    pre = np.zeros((len(front), len(start)))
    dec = np.zeros((len(back), len(start))) if back else None
    for j, r in enumerate(ranges):
        at = f"ranges[{j}]"
        if not isinstance(r, Mapping):
            raise _fail(where, at, "must be an object")
        for key, want in (("start", start[j]), ("end", end[j])):
            if r.get(key) != want:
                raise _fail(where, f"{at}.{key}", f"is {r.get(key)!r}; the plan's range "
                            f"{j} has {key} {want!r}")
        _fill(pre, j, r.get("prefill"), front, f"{at}.prefill", where)
        if dec is not None:
            _fill(dec, j, r.get("decode"), back, f"{at}.decode", where)
    edges = np.array([*start, end[-1]], dtype=float)
    return edges, pre, dec


def _fill(out: np.ndarray, j: int, entries: Any, islands: Sequence[int], at: str,
          where: str) -> None:
    if not isinstance(entries, list):
        raise _fail(where, at, "must be a list of {island, weight}")
    if len(entries) > len(islands):  # one entry per island of the phase at most
        raise _fail(where, at, f"lists {len(entries):,} entries for the {len(islands)} "
                    "islands of this phase")
    row = {i: k for k, i in enumerate(islands)}
    for n, e in enumerate(entries):
        if not isinstance(e, Mapping) or e.get("island") not in row:
            raise _fail(where, f"{at}[{n}].island", f"must be one of the plan's islands of "
                        f"this phase {list(islands)}, got "
                        f"{e.get('island') if isinstance(e, Mapping) else e!r}")
        w = e.get("weight")
        if isinstance(w, bool) or not isinstance(w, int | float) or not math.isfinite(w) \
                or w < 0:
            raise _fail(where, f"{at}[{n}].weight", f"must be a number >= 0, got {w!r}")
        out[row[e["island"]], j] += float(w)
    if islands and out[:, j].sum() <= 0:
        raise _fail(where, at, "gives no island any weight: the range could not be served")


__all__ = ["SCHEMA", "load_router_weights"]
