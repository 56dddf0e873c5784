"""Typed access to user-supplied mappings with one-line errors naming file and field.

Every workload YAML value goes through :class:`Loc` so a mistake produces
``<file>: field '<dotted.path>': <what is wrong>`` (a :class:`PlannerError`, exit 2)
instead of a ``KeyError`` traceback.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, overload

import numpy as np

from perfmodel.errors import check_number
from planner.core.errors import PlannerError


@dataclass(frozen=True)
class Loc:
    """A position in a user document: the file (or other source) and a dotted path."""

    source: str
    path: str = ""

    def child(self, key: str | int) -> Loc:
        if isinstance(key, int):
            return Loc(self.source, f"{self.path}[{key}]")
        return Loc(self.source, f"{self.path}.{key}" if self.path else key)

    def error(self, message: str) -> PlannerError:
        where = f"{self.source}: field '{self.path}'" if self.path else self.source
        return PlannerError(f"{where}: {message}")

    # ---------------------------------------------------------------- containers
    def mapping(self, value: Any) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise self.error(f"expected a mapping, got {type(value).__name__}")
        return value

    def only_keys(self, data: Mapping[str, Any], allowed: Iterable[str]) -> None:
        """Reject unknown keys, which are nearly always typos (``sigam: 3``)."""
        allowed = set(allowed)
        unknown = sorted(str(k) for k in data if k not in allowed)
        if unknown:
            raise self.error(
                f"unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}"
            )

    def items(self, value: Any, cap: int, what: str) -> list[Any]:
        """``value`` as a list of at most ``cap`` items (one line naming the field when
        it is not a list, or longer: every list a file holds has a stated cap)."""
        if not isinstance(value, list):
            raise self.error(f"expected a list of {what}, got {type(value).__name__}")
        if len(value) > cap:
            raise self.error(f"lists {len(value):,} {what}; at most {cap:,}")
        return value

    def require(self, data: Mapping[str, Any], key: str) -> Any:
        if key not in data or data[key] is None:
            raise self.child(key).error("is required")
        return data[key]

    # ---------------------------------------------------------------- scalars
    # The result is None only when the field is absent and ``default=None``.
    @overload
    def number(self, data: Mapping[str, Any], key: str, *, default: float = ...,
               gt: float | None = None, ge: float | None = None,
               le: float | None = None) -> float: ...

    @overload
    def number(self, data: Mapping[str, Any], key: str, *, default: None,
               gt: float | None = None, ge: float | None = None,
               le: float | None = None) -> float | None: ...

    def number(self, data: Mapping[str, Any], key: str, *, default: Any = ...,
               gt: float | None = None, ge: float | None = None,
               le: float | None = None) -> float | None:
        loc = self.child(key)
        if key not in data or data[key] is None:
            if default is ...:
                raise loc.error("is required")
            return default
        return float(check_number(data[key], loc.error, gt=gt, ge=ge, le=le))

    @overload
    def integer(self, data: Mapping[str, Any], key: str, *, default: int = ...,
                ge: int | None = None, le: int | None = None) -> int: ...

    @overload
    def integer(self, data: Mapping[str, Any], key: str, *, default: None,
                ge: int | None = None, le: int | None = None) -> int | None: ...

    def integer(self, data: Mapping[str, Any], key: str, *, default: Any = ...,
                ge: int | None = None, le: int | None = None) -> int | None:
        value = self.number(data, key, default=default, ge=ge, le=le)
        if value is None or value is default:
            return value
        if value != int(value):
            raise self.child(key).error(f"expected an integer, got {data[key]!r}")
        return int(value)

    def text(self, data: Mapping[str, Any], key: str, default: str = "") -> str:
        value = data.get(key, default)
        if value is None:
            return default
        if not isinstance(value, str):
            raise self.child(key).error(f"expected text, got {type(value).__name__}")
        return value

    # ---------------------------------------------------------------- arrays
    def array(self, data: Mapping[str, Any], key: str, *, integer: bool = False,
              ge: float | None = None, min_size: int = 1, allow_null: bool = False) -> np.ndarray:
        """A list of numbers as a float64 (or int64 with ``integer``) array."""
        loc = self.child(key)
        raw = self.require(data, key)
        if not isinstance(raw, Sequence) or isinstance(raw, str):
            raise loc.error("expected a list of numbers")
        if len(raw) < min_size:
            raise loc.error(f"needs at least {min_size} entries, got {len(raw)}")
        for i, v in enumerate(raw):
            ok = (v is None and allow_null) or (
                not isinstance(v, bool) and isinstance(v, int | float)
            )
            if not ok:
                raise loc.child(i).error(f"expected a number, got {v!r}")
        arr = np.array([np.nan if v is None else v for v in raw], dtype=np.float64)
        finite = np.isfinite(arr)
        bad = ~finite & ~(np.isnan(arr) if allow_null else False)
        if np.any(bad):
            raise loc.child(int(np.argmax(bad))).error("must be finite")
        if ge is not None:
            below = finite & (np.where(finite, arr, 0.0) < ge)
            if np.any(below):
                i = int(np.argmax(below))
                raise loc.child(i).error(f"must be >= {ge:g}, got {arr[i]:g}")
        if integer:
            fractional = finite & (np.where(finite, arr, 0.0) != np.round(np.where(finite, arr, 0)))
            if np.any(fractional):
                i = int(np.argmax(fractional))
                raise loc.child(i).error(f"expected an integer, got {raw[i]!r}")
            huge = finite & (np.abs(np.where(finite, arr, 0.0)) > 2.0**62)
            if np.any(huge):
                raise loc.child(int(np.argmax(huge))).error("is too large")
            return arr.astype(np.int64)
        return arr
