"""The perf model's one exception: a mistake in its input (a model config, a GPU
datasheet, an engine or parallelism name).

The perf model stands alone -- it imports nothing from :mod:`planner` -- so it owns
this error.  The planner does not wrap it: :class:`planner.core.errors.PlannerError` *is*
this class, so one ``except PlannerError`` at the CLI turns a bad ``config.json`` and a
bad inventory into the same one-line message and exit status.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np


class InputError(Exception):
    """A mistake in the user's input; ``exit_code`` 2 for usage errors."""

    exit_code: int = 2

    def __init__(self, message: str, *, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


#: The largest integer any field takes (every count, size and bound of the tools is far
#: below it); larger ones are refused before conversion to float.
MAX_INT = 10**18


def check_number(value: Any, fail: Callable[[str], Exception], *, integer: bool = False,
                 gt: float | None = None, ge: float | None = None, le: float | None = None,
                 parse_text: bool = False) -> Any:
    """The one number check at every input boundary (inventory, network, datasheet,
    workload and what-if fields, CLI flags): ``value`` must be a finite number (text
    parsed when ``parse_text``, as CSV cells and ``"0.8x"``-style flags arrive), whole
    when ``integer``, and within the bounds ``> gt``, ``>= ge``, ``<= le``.  Returns it
    as an ``int`` or a ``float``.

    ``fail(message)`` builds the error for the caller's location -- ``Loc.error`` for a
    YAML field (``file: field 'x': must be > 0, got -1``), or a prefix for a flag
    (:func:`at`) -- so every boundary words the same problem the same way.
    """
    if parse_text and isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise fail(f"must be a number, got {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise fail(f"must be a number, got {value!r}")
    if isinstance(value, int | np.integer) and abs(int(value)) > MAX_INT:
        # checked before any conversion: float(10**400) raises OverflowError
        raise fail(f"is too large (an integer of {len(str(abs(int(value))))} digits)")
    if not math.isfinite(value):
        raise fail(f"must be finite, got {value!r}")
    if integer and value != int(value):
        raise fail(f"must be a whole number, got {value!r}")
    if gt is not None and not value > gt:
        raise fail(f"must be > {gt:g}, got {value:g}")
    if ge is not None and not value >= ge:
        raise fail(f"must be >= {ge:g}, got {value:g}")
    if le is not None and not value <= le:
        raise fail(f"must be <= {le:g}, got {value:g}")
    return int(value) if integer else float(value)


def at(where: str) -> Callable[[str], InputError]:
    """``fail`` for :func:`check_number` that prefixes ``where`` (``--budget must be >
    0, got -1``; ``inventory.yaml: gpus[0] (H200): field 'count' must be ...``)."""
    return lambda message: InputError(f"{where} {message}")


__all__ = ["InputError", "at", "check_number"]
