"""Shared pieces of the trace loaders: the chunk type, validation and CSV streaming.

Every loader yields :class:`TraceChunk` s of at most ``chunk_rows`` rows, so memory is
bounded by the chunk size whatever the file size (the 2024 week-long Azure traces
have tens of millions of rows).  Values are validated per chunk with vectorised
checks; the first bad value raises one :class:`PlannerError` naming the file, line
and column.  Line numbers assume one record per physical line (no quoted newlines),
which holds for every supported trace format.
"""

from __future__ import annotations

import csv
import gzip
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import numpy as np
import pandas as pd

from planner.core.errors import PlannerError

DEFAULT_CHUNK_ROWS = 1 << 18

#: Factors from a numeric time column's unit to nanoseconds.
TIME_UNITS = {"s": 1e9, "ms": 1e6, "us": 1e3, "ns": 1.0}


@dataclass(frozen=True)
class TraceChunk:
    """Validated rows of a trace: lengths are int64 >= 0, times int64 nanoseconds."""

    line: np.ndarray
    input: np.ndarray
    output: np.ndarray
    time_ns: np.ndarray | None = None
    hash_ids: Sequence[Sequence[int]] | None = None
    empty_rows: int = 0

    def __len__(self) -> int:
        return int(self.input.size)


def check_file(path: Path) -> None:
    if not path.exists():
        raise PlannerError(f"{path}: no such file")
    if not path.is_file():
        raise PlannerError(f"{path}: not a regular file")
    if path.stat().st_size == 0:
        raise PlannerError(f"{path}: empty file")


def bad_value(path: Path, line: int, column: str, value: object, problem: str) -> PlannerError:
    return PlannerError(f"{path}:{line}: column '{column}': {value!r} {problem}")


def parse_lengths(values: pd.Series | np.ndarray, raw: Sequence[object] | pd.Series,
                  lines: np.ndarray, path: Path, column: str) -> np.ndarray:
    """Token counts as int64, or a PlannerError at the first (in file order) value that is
    missing, non-numeric, negative or fractional."""
    series = pd.Series(values, copy=False)
    if pd.api.types.is_integer_dtype(series.dtype):
        num = series.to_numpy(dtype=np.int64)  # fast path: the CSV parser made ints
        if not (num < 0).any():
            return num
        i = int(np.argmax(num < 0))
        raise PlannerError(f"{path}:{int(lines[i])}: column '{column}': {int(num[i])} is negative")
    num = pd.to_numeric(series, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    finite = np.isfinite(num)
    safe = np.where(finite, num, 0.0)
    # Beyond 2**53 a float is no longer a whole count, and beyond 2**63 the int64 cast
    # wraps negative: far past any supported length, which the fit reports by name.
    bad = ~finite | (safe < 0) | (safe != np.floor(safe)) | (safe > 2.0**53)
    if not bad.any():
        return num.astype(np.int64)
    i = int(np.argmax(bad))
    where = f"{path}:{int(lines[i])}: column '{column}'"
    if not finite[i]:
        raw_i = raw.iloc[i] if isinstance(raw, pd.Series) else raw[i]
        if raw_i is None or raw_i == "" or (isinstance(raw_i, float) and np.isnan(raw_i)):
            raise PlannerError(f"{where}: value is missing")
        raise PlannerError(f"{where}: {str(raw_i)!r} is not a number")
    problem = ("is negative" if num[i] < 0 else "is too large" if num[i] > 2.0**53
               else "is not an integer")
    raise PlannerError(f"{where}: {_shown(num[i])!r} {problem}")


def _shown(x: float) -> int | float:
    return int(x) if float(x).is_integer() and abs(x) <= 2.0**53 else float(x)


def parse_times(values: pd.Series, lines: np.ndarray, path: Path, column: str,
                unit: str) -> np.ndarray:
    """Timestamps as int64 ns: numbers in ``unit``, or ISO-8601 date-times (UTC if naive).

    The kind is decided by the column's dtype or, for text, by its first value; a value
    of the other kind later on is then reported as bad (a trace mixing both is broken).
    """
    series = pd.Series(values, copy=False)
    if series.size == 0:
        return np.zeros(0, dtype=np.int64)
    numeric = pd.api.types.is_numeric_dtype(series.dtype) and not pd.api.types.is_bool_dtype(
        series.dtype)
    if not numeric:
        try:
            float(series.iloc[0])
            numeric = True
        except (TypeError, ValueError):
            numeric = False
    if numeric:
        arr = pd.to_numeric(series, errors="coerce").to_numpy(dtype=np.float64,
                                                             na_value=np.nan)
        bad = ~np.isfinite(arr)
        if bad.any():
            i = int(np.argmax(bad))
            raise bad_value(path, int(lines[i]), column, series.iloc[i], "is not a number")
        return np.round(arr * TIME_UNITS[unit]).astype(np.int64)
    parsed = pd.to_datetime(series.astype(str), format="ISO8601", utc=True, errors="coerce")
    bad = parsed.isna().to_numpy()
    if bad.any():
        i = int(np.argmax(bad))
        raise bad_value(path, int(lines[i]), column, series.iloc[i],
                        "is not an ISO-8601 date-time")
    return parsed.dt.as_unit("ns").array.asi8.astype(np.int64)


def open_text(path: Path) -> IO[str]:
    """Open a trace as text, transparently decompressing ``.gz`` files."""
    if path.suffix == ".gz":
        return gzip.open(path, "rt", newline="", encoding="utf-8-sig")
    return path.open(newline="", encoding="utf-8-sig")


def read_header(path: Path) -> list[str]:
    """The header fields; also rejects a first data row with more fields than the header
    (pandas would silently turn the extra leading field into an index)."""
    with open_text(path) as fh:
        reader = csv.reader(fh)
        try:
            header = next(reader, None)
            first = next(reader, None)
        except (csv.Error, UnicodeDecodeError, OSError, EOFError) as err:
            raise PlannerError(f"{path}: cannot read CSV header: {err}") from None
    if not header or all(not h.strip() for h in header):
        raise PlannerError(f"{path}:1: missing CSV header")
    if first is not None and len(first) > len(header):
        raise PlannerError(f"{path}:2: row has {len(first)} fields but the header has "
                           f"{len(header)}")
    return [h.strip() for h in header]


def csv_chunks(path: Path, columns: Mapping[str, str], *, time_unit: str = "s",
               chunk_rows: int = DEFAULT_CHUNK_ROWS) -> Iterator[TraceChunk]:
    """Stream a CSV with a header. ``columns`` maps role (``input``, ``output``, optional
    ``time``) to the header name; missing columns are reported with the header found."""
    if columns.get("hash_ids"):
        raise PlannerError(f"{path}: a hash_ids column is only supported for JSONL traces")
    check_file(path)
    header = read_header(path)
    for role in ("input", "output", "time"):
        col = columns.get(role)
        if col and col not in header:
            raise PlannerError(
                f"{path}:1: missing column '{col}' (the {role} column); "
                f"header has: {', '.join(header)}")
    wanted = {role: col for role, col in columns.items() if col and role != "hash_ids"}
    # No usecols: with it pandas silently ignores rows with too many fields; without it
    # (and index_col=False) such a row is a ParserError that names its line.  Rows with
    # too few fields are padded with "" and fail as "value is missing" if that matters.
    reader = pd.read_csv(path, chunksize=chunk_rows, index_col=False,
                         skip_blank_lines=False, keep_default_na=False, na_filter=False,
                         encoding="utf-8-sig", skipinitialspace=True)
    first_line = 2  # line 1 is the header
    try:
        for frame in reader:
            yield _frame_to_chunk(frame, wanted, first_line, path, time_unit)
            first_line += len(frame)
    except pd.errors.ParserError as err:
        raise PlannerError(f"{path}: malformed CSV: {str(err).strip()}") from None
    except UnicodeDecodeError as err:
        raise PlannerError(f"{path}: not UTF-8 text: {err}") from None
    except (OSError, EOFError) as err:  # e.g. a truncated .gz file
        raise PlannerError(f"{path}: cannot read: {err}") from None


def _frame_to_chunk(frame: pd.DataFrame, wanted: Mapping[str, str], first_line: int,
                    path: Path, time_unit: str) -> TraceChunk:
    lines = np.arange(first_line, first_line + len(frame), dtype=np.int64)
    frame.columns = [str(c).strip() for c in frame.columns]
    cells = {col: _cells(frame[col]) for col in set(wanted.values())}
    # Rows whose every used field is empty are blank lines (or ",,"): counted, not parsed.
    # A column the parser read as numbers has no empty field.
    empty = np.logical_and.reduce([
        np.zeros(len(frame), dtype=bool) if pd.api.types.is_numeric_dtype(v.dtype)
        else (v == "").to_numpy() for v in cells.values()])
    n_empty = int(empty.sum())
    if n_empty:
        keep = ~empty
        lines = lines[keep]
        cells = {c: v[keep] for c, v in cells.items()}
    inp = parse_lengths(cells[wanted["input"]], cells[wanted["input"]], lines, path,
                        wanted["input"])
    out = parse_lengths(cells[wanted["output"]], cells[wanted["output"]], lines, path,
                        wanted["output"])
    times = None
    if "time" in wanted:
        times = parse_times(cells[wanted["time"]], lines, path, wanted["time"], time_unit)
    return TraceChunk(line=lines, input=inp, output=out, time_ns=times, empty_rows=n_empty)


def _cells(column: pd.Series) -> pd.Series:
    """Numbers as parsed by the C parser (fast path); anything else as stripped text."""
    if pd.api.types.is_numeric_dtype(column.dtype) and not pd.api.types.is_bool_dtype(
            column.dtype):
        return column
    return column.astype(str).str.strip()
