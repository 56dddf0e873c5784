"""CSV trace layouts: Azure LLM inference (2023, 2024), BurstGPT and generic CSV.

* Azure 2023 (``AzureLLMInferenceTrace_{code,conv}.csv``, Patel et al., Splitwise,
  ISCA'24) and Azure 2024 (``..._1week.csv``, Stojkovic et al., DynamoLLM, HPCA'25):
  ``TIMESTAMP,ContextTokens,GeneratedTokens``.  The layouts differ only in the
  timestamp text (2023: naive, 7 fractional digits; 2024: ``+00:00`` offset, up to 6
  digits, sometimes none), both of which the ISO-8601 parser reads; naive times are
  taken as UTC.
* BurstGPT (Wang et al., 2024): ``Timestamp`` (seconds from the trace start),
  ``Model``, ``Request tokens``, ``Response tokens``, ``Total tokens``, ``Log Type``.
  Failed requests have ``Response tokens`` = 0; they are dropped and counted like any
  zero-length request.
* Generic CSV: any header, with a column mapping ``input=..,output=..[,time=..]``;
  numeric times are in ``time_unit`` (default seconds), otherwise ISO-8601.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

from planner.core.errors import PlannerError
from planner.workload.loaders.common import DEFAULT_CHUNK_ROWS, TraceChunk, csv_chunks

AZURE_COLUMNS = {"time": "TIMESTAMP", "input": "ContextTokens", "output": "GeneratedTokens"}
BURSTGPT_COLUMNS = {"time": "Timestamp", "input": "Request tokens", "output": "Response tokens"}


def _merge(defaults: Mapping[str, str], override: Mapping[str, str] | None) -> dict[str, str]:
    cols = dict(defaults)
    cols.update(override or {})
    return cols


def azure_chunks(path: Path, columns: Mapping[str, str] | None = None, *,
                 time_unit: str = "s", chunk_rows: int = DEFAULT_CHUNK_ROWS
                 ) -> Iterator[TraceChunk]:
    return csv_chunks(path, _merge(AZURE_COLUMNS, columns), time_unit=time_unit,
                      chunk_rows=chunk_rows)


def burstgpt_chunks(path: Path, columns: Mapping[str, str] | None = None, *,
                    time_unit: str = "s", chunk_rows: int = DEFAULT_CHUNK_ROWS
                    ) -> Iterator[TraceChunk]:
    return csv_chunks(path, _merge(BURSTGPT_COLUMNS, columns), time_unit=time_unit,
                      chunk_rows=chunk_rows)


def generic_csv_chunks(path: Path, columns: Mapping[str, str] | None = None, *,
                       time_unit: str = "s", chunk_rows: int = DEFAULT_CHUNK_ROWS
                       ) -> Iterator[TraceChunk]:
    cols = dict(columns or {})
    missing = [role for role in ("input", "output") if not cols.get(role)]
    if missing:
        raise PlannerError(
            f"{path}: format 'csv' needs a column mapping for {', '.join(missing)} "
            "(e.g. --columns input=prompt_tokens,output=completion_tokens,time=timestamp)")
    return csv_chunks(path, cols, time_unit=time_unit, chunk_rows=chunk_rows)
