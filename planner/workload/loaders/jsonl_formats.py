"""JSON-lines traces: Mooncake and generic JSONL.

Mooncake (Qin et al., FAST'25) records one request per line::

    {"timestamp": 27482, "input_length": 6955, "output_length": 52, "hash_ids": [46, 47]}

with ``timestamp`` in milliseconds since the trace start and ``hash_ids`` the hashes
of the prompt's 512-token blocks (equal ids = equal prefix blocks), which
:mod:`planner.workload.prefix` turns into a prefix-cache hit-rate estimate.  Generic
JSONL takes a key mapping like generic CSV.  Lines are parsed one by one with the
standard library (each line is an independent document), in bounded-size chunks.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path

import numpy as np

from planner.core.errors import PlannerError
from planner.workload.loaders.common import (
    DEFAULT_CHUNK_ROWS,
    TraceChunk,
    check_file,
    open_text,
    parse_lengths,
    parse_times,
)

MOONCAKE_KEYS = {"time": "timestamp", "input": "input_length", "output": "output_length",
                 "hash_ids": "hash_ids"}


def mooncake_chunks(path: Path, columns: Mapping[str, str] | None = None, *,
                    time_unit: str = "ms", chunk_rows: int = DEFAULT_CHUNK_ROWS
                    ) -> Iterator[TraceChunk]:
    keys = dict(MOONCAKE_KEYS)
    keys.update(columns or {})
    return _jsonl_chunks(path, keys, time_unit, chunk_rows)


def generic_jsonl_chunks(path: Path, columns: Mapping[str, str] | None = None, *,
                         time_unit: str = "s", chunk_rows: int = DEFAULT_CHUNK_ROWS
                         ) -> Iterator[TraceChunk]:
    keys = dict(columns or {})
    missing = [role for role in ("input", "output") if not keys.get(role)]
    if missing:
        raise PlannerError(
            f"{path}: format 'jsonl' needs a key mapping for {', '.join(missing)} "
            "(e.g. --columns input=prompt_tokens,output=completion_tokens,time=ts)")
    return _jsonl_chunks(path, keys, time_unit, chunk_rows)


def _jsonl_chunks(path: Path, keys: Mapping[str, str], time_unit: str,
                  chunk_rows: int) -> Iterator[TraceChunk]:
    check_file(path)
    roles = [r for r in ("input", "output", "time") if keys.get(r)]
    hash_key = keys.get("hash_ids")
    buf: dict[str, list[object]] = {r: [] for r in roles}
    hashes: list[list[int]] = []
    lines: list[int] = []
    empty = 0
    with open_text(path) as fh:
        try:
            for lineno, text in enumerate(fh, start=1):
                if not text.strip():
                    empty += 1
                    continue
                record = _parse_line(text, path, lineno)
                for role in roles:
                    if keys[role] not in record:
                        raise PlannerError(f"{path}:{lineno}: missing field '{keys[role]}'")
                    buf[role].append(record[keys[role]])
                if hash_key is not None:
                    hashes.append(_hash_list(record.get(hash_key), path, lineno, hash_key))
                lines.append(lineno)
                if len(lines) >= chunk_rows:
                    yield _to_chunk(buf, hashes if hash_key else None, lines, keys, path,
                                    time_unit, empty)
                    buf = {r: [] for r in roles}
                    hashes, lines, empty = [], [], 0
        except UnicodeDecodeError as err:
            raise PlannerError(f"{path}: not UTF-8 text: {err}") from None
        except (OSError, EOFError) as err:  # e.g. a truncated .gz file
            raise PlannerError(f"{path}: cannot read: {err}") from None
    if lines or empty:
        yield _to_chunk(buf, hashes if hash_key else None, lines, keys, path, time_unit, empty)


def _parse_line(text: str, path: Path, lineno: int) -> Mapping[str, object]:
    try:
        record = json.loads(text)
    except json.JSONDecodeError as err:
        raise PlannerError(f"{path}:{lineno}: invalid JSON: {err.msg} (column {err.colno})"
                           ) from None
    if not isinstance(record, dict):
        raise PlannerError(f"{path}:{lineno}: expected a JSON object per line")
    return record


def _hash_list(value: object, path: Path, lineno: int, key: str) -> list[int]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(
            isinstance(h, int | str) and not isinstance(h, bool) for h in value):
        raise PlannerError(f"{path}:{lineno}: field '{key}': expected a list of block hashes")
    return value  # type: ignore[return-value]


def _to_chunk(buf: Mapping[str, list[object]], hashes: list[list[int]] | None,
              lines: list[int], keys: Mapping[str, str], path: Path, time_unit: str,
              empty: int) -> TraceChunk:
    line = np.asarray(lines, dtype=np.int64)
    raw_in = [_scalar(v) for v in buf["input"]]
    raw_out = [_scalar(v) for v in buf["output"]]
    inp = parse_lengths(np.asarray(raw_in, dtype=object), raw_in, line, path, keys["input"])
    out = parse_lengths(np.asarray(raw_out, dtype=object), raw_out, line, path, keys["output"])
    times = None
    if "time" in buf:
        import pandas as pd

        raw_t = [_scalar(v) for v in buf["time"]]
        times = parse_times(pd.Series(raw_t, dtype=object), line, path, keys["time"], time_unit)
    return TraceChunk(line=line, input=inp, output=out, time_ns=times, hash_ids=hashes,
                      empty_rows=empty)


def _scalar(v: object) -> object:
    # Booleans are ints to Python but never token counts; lists/dicts are not numbers.
    if isinstance(v, bool) or isinstance(v, list | dict):
        return repr(v)
    return v
