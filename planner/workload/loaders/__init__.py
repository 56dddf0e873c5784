"""Trace loaders: ``iter_trace(path, fmt)`` streams validated :class:`TraceChunk` s.

Formats (``TRACE_FORMATS``): ``azure`` / ``azure2024`` (Azure LLM inference CSV, 2023
and 2024 layouts), ``mooncake`` (JSONL with block hashes), ``burstgpt`` (CSV),
``csv`` and ``jsonl`` (generic, with a column mapping).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from planner.core.errors import PlannerError
from planner.workload.loaders.common import (
    DEFAULT_CHUNK_ROWS,
    TIME_UNITS,
    TraceChunk,
    check_file,
)
from planner.workload.loaders.csv_formats import (
    azure_chunks,
    burstgpt_chunks,
    generic_csv_chunks,
)
from planner.workload.loaders.jsonl_formats import generic_jsonl_chunks, mooncake_chunks

_LOADERS: dict[str, tuple[Callable[..., Iterator[TraceChunk]], str]] = {
    "azure": (azure_chunks, "s"),
    "azure2024": (azure_chunks, "s"),
    "mooncake": (mooncake_chunks, "ms"),
    "burstgpt": (burstgpt_chunks, "s"),
    "csv": (generic_csv_chunks, "s"),
    "jsonl": (generic_jsonl_chunks, "s"),
}
TRACE_FORMATS = tuple(_LOADERS)
#: Formats that read nothing without a column (key) mapping.
MAPPED_FORMATS = ("csv", "jsonl")
COLUMN_ROLES = ("input", "output", "time", "hash_ids")


def iter_trace(path: str | Path, fmt: str, *, columns: Mapping[str, str] | None = None,
               time_unit: str | None = None, chunk_rows: int = DEFAULT_CHUNK_ROWS
               ) -> Iterator[TraceChunk]:
    """Stream the rows of a trace file in chunks of at most ``chunk_rows``.

    ``columns`` overrides/gives the column (key) of each role: ``input``, ``output``,
    ``time`` and, for JSONL, ``hash_ids``.  ``time_unit`` (``s``, ``ms``, ``us``,
    ``ns``) applies to numeric time columns; the default is the format's (ms for
    Mooncake, s otherwise).
    """
    path = Path(path)
    if fmt not in _LOADERS:
        raise PlannerError(f"{path}: unknown trace format {fmt!r}; "
                           f"known formats: {', '.join(TRACE_FORMATS)}")
    for role in columns or {}:
        if role not in COLUMN_ROLES:
            raise PlannerError(f"{path}: unknown column role {role!r}; "
                               f"expected one of {', '.join(COLUMN_ROLES)}")
    check_file(path)  # before the mapping: a missing file is the first thing to say
    loader, default_unit = _LOADERS[fmt]
    unit = time_unit or default_unit
    if unit not in TIME_UNITS:
        raise PlannerError(f"unknown time unit {unit!r}; use one of {', '.join(TIME_UNITS)}")
    if chunk_rows < 1:
        raise PlannerError("chunk_rows must be >= 1")
    return loader(path, columns, time_unit=unit, chunk_rows=chunk_rows)


__all__ = ["MAPPED_FORMATS", "TRACE_FORMATS", "TraceChunk", "iter_trace"]
