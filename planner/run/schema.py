"""Reading, checking and writing ``plan.json`` (docs/plan-schema.md).

The report renders only from the plan dict, so that ``planner report RUN_DIR`` can
redraw a run without re-solving.  :func:`check_plan` verifies what the renderers rely
on — the schema version, the sections, and that every per-range array has ``J``
entries and every per-length array ``S`` — so that a hand-edited or truncated
``plan.json`` fails with one line naming the file and the field, never a traceback
from deep inside a plot.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from planner.errors import PlannerError

SCHEMA_VERSION = 1
SUPPORTED_VERSIONS = (1,)

_SECTIONS = ("request", "summary", "islands", "ranges", "per_range", "per_length",
             "search", "baselines")
_RANGE_KEYS = ("start", "end", "mid", "prob")
_PER_RANGE_KEYS = ("prefill_rps", "decode_rps")
_PER_LENGTH_KEYS = ("length", "pmf", "model_prefill", "eval_prefill", "model_decode",
                    "eval_decode")
_ISLAND_KEYS = ("gpu", "size", "role", "config", "batch", "shares")
_ROLES = ("prefill", "decode", "both", "idle")


def _fail(source: str, field: str, problem: str) -> PlannerError:
    return PlannerError(f"{source}: field '{field}' {problem}")


def _array(d: Mapping[str, Any], key: str, where: str, source: str) -> list:
    if key not in d:
        raise _fail(source, f"{where}.{key}", "is missing")
    value = d[key]
    if not isinstance(value, list):
        raise _fail(source, f"{where}.{key}", f"must be a list, got {type(value).__name__}")
    for k, x in enumerate(value):
        if x is not None and (isinstance(x, bool) or not isinstance(x, int | float)):
            raise _fail(source, f"{where}.{key}[{k}]", f"must be a number, got {x!r}")
    return value


def _section(plan: Mapping[str, Any], key: str, source: str) -> Mapping[str, Any]:
    value = plan.get(key)
    if not isinstance(value, Mapping):
        raise _fail(source, key, "is missing" if value is None else "must be an object")
    return value


def check_plan(plan: Any, source: str = "plan.json") -> None:
    """Raise :class:`PlannerError` naming ``source`` and the field if ``plan`` does not
    follow schema version 1 closely enough to render."""
    if not isinstance(plan, Mapping):
        raise PlannerError(f"{source}: must hold a JSON object, got {type(plan).__name__}")
    if "schema_version" not in plan:
        raise _fail(source, "schema_version", "is missing (not a planner plan.json?)")
    version = plan["schema_version"]
    if isinstance(version, bool) or version not in SUPPORTED_VERSIONS:
        raise _fail(source, "schema_version",
                    f"is {version!r}; this planner reads version "
                    f"{', '.join(map(str, SUPPORTED_VERSIONS))}")
    for key in _SECTIONS:
        if key == "islands":
            if not isinstance(plan.get(key), list):
                raise _fail(source, key, "must be a list")
        else:
            _section(plan, key, source)
    ranges = plan["ranges"]
    J = len(_array(ranges, "start", "ranges", source))
    for key in _RANGE_KEYS:
        if len(_array(ranges, key, "ranges", source)) != J:
            raise _fail(source, f"ranges.{key}", f"must have {J} entries like ranges.start")
    for key in _PER_RANGE_KEYS:
        if len(_array(plan["per_range"], key, "per_range", source)) != J:
            raise _fail(source, f"per_range.{key}", f"must have {J} entries (one per range)")
    S = len(_array(plan["per_length"], "length", "per_length", source))
    for key in _PER_LENGTH_KEYS:
        if len(_array(plan["per_length"], key, "per_length", source)) != S:
            raise _fail(source, f"per_length.{key}",
                        f"must have {S} entries like per_length.length")
    for i, isl in enumerate(plan["islands"]):
        where = f"islands[{i}]"
        if not isinstance(isl, Mapping):
            raise _fail(source, where, "must be an object")
        for key in _ISLAND_KEYS:
            if key not in isl:
                raise _fail(source, f"{where}.{key}", "is missing")
        if isl["role"] not in _ROLES:
            raise _fail(source, f"{where}.role", f"must be one of {_ROLES}, got {isl['role']!r}")
        if len(_array(isl, "shares", where, source)) != J:
            raise _fail(source, f"{where}.shares", f"must have {J} entries (one per range)")
    summary = plan["summary"]
    for key in ("requests_per_s", "cost_per_hour", "gpus_used"):
        if key not in summary:
            raise _fail(source, f"summary.{key}", "is missing")
    history = plan["search"].get("history")
    if not isinstance(history, list):
        raise _fail(source, "search.history", "must be a list")
    for k, h in enumerate(history):
        if not isinstance(h, Mapping) or "index" not in h or "best" not in h:
            raise _fail(source, f"search.history[{k}]", "must have 'index' and 'best'")
    inv = _section(plan["request"], "inventory", source)
    if not isinstance(inv.get("gpus"), list):
        raise _fail(source, "request.inventory.gpus", "must be a list")


def json_safe(x: Any) -> Any:
    """NaN and infinities become null: strict JSON, readable by any tool."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, Mapping):
        return {str(k): json_safe(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [json_safe(v) for v in x]
    if hasattr(x, "tolist") and callable(x.tolist):  # numpy arrays and scalars
        return json_safe(x.tolist())
    return x


def dumps_plan(plan: Mapping[str, Any]) -> str:
    """Strict JSON text of the plan (non-finite numbers as null), newline-terminated."""
    return json.dumps(json_safe(plan), indent=1, allow_nan=False) + "\n"


def load_plan(path: Path) -> dict[str, Any]:
    """Read and check ``path``; every problem is a one-line :class:`PlannerError`."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PlannerError(f"{path}: not found (is this a run folder of `planner plan`?)"
                           ) from None
    except (OSError, UnicodeDecodeError) as err:
        raise PlannerError(f"{path}: cannot read: {err}") from None
    try:
        plan = json.loads(text)
    except json.JSONDecodeError as err:
        raise PlannerError(f"{path}: not valid JSON (line {err.lineno}, column {err.colno}: "
                           f"{err.msg})") from None
    check_plan(plan, str(path))
    return plan
