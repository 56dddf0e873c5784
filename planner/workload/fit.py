"""Build a workload from a request trace, streaming (``planner workload fit``).

One pass over the trace accumulates, with memory bounded by the largest length
rather than the number of rows:

* exact counts per input length and per output length (dense, grown on demand);
* a fine joint table: input lengths in cells of :data:`JOINT_GRAIN` tokens x output
  lengths in power-of-two bins, plus the exact output sum per input cell;
* the arrival statistics (:mod:`planner.workload.arrivals`) and, for traces with
  block hashes, the prefix-cache replay (:mod:`planner.workload.prefix`).

Rows are dropped -- and counted per reason in the report and the YAML ``stats`` --
when the input length is 0 (no prefill: not a request), the output length is 0
(failed requests in BurstGPT), or the input exceeds an explicit ``max_len``.  In the
last case ``p(s|w)`` is conditioned on ``s <= max_len`` and the dropped share is the
workload's ``clipped_mass``.  Without ``max_len`` the workload covers the whole trace.

The input pmf is stored as an exact sparse histogram while the trace has at most
:data:`MAX_EXACT_ENTRIES` distinct lengths, else as power-of-two-wide bins
(uniform within a bin) -- see :func:`histogram_spec`.  The ``stats`` section always
holds exact trace statistics.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from planner.core.errors import PlannerError
from planner.workload.arrivals import ArrivalAccumulator
from planner.workload.families import MAX_SUPPORTED_LEN
from planner.workload.loaders import iter_trace
from planner.workload.loaders.common import DEFAULT_CHUNK_ROWS, TraceChunk
from planner.workload.model import Workload
from planner.workload.prefix import PrefixCacheEstimator
from planner.workload.schema import workload_from_dict
from planner.workload.stats import counts_summary

MAX_EXACT_ENTRIES = 4096
JOINT_GRAIN = 16
JOINT_INPUT_BINS = 32
_OUT_OCTAVES = 24  # power-of-two output bins [2^c, 2^(c+1)): covers MAX_SUPPORTED_LEN


@dataclass
class FitReport:
    """What happened to the rows of a trace during a fit."""

    source: str
    fmt: str
    rows_read: int = 0
    rows_kept: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    warnings: list[str] = field(default_factory=list)
    clipped_mass: float = 0.0

    def lines(self) -> list[str]:
        out = [f"{self.source}: read {self.rows_read} rows, kept {self.rows_kept}"]
        if self.dropped:
            parts = ", ".join(f"{reason}: {n}" for reason, n in sorted(self.dropped.items()))
            out.append(f"dropped {sum(self.dropped.values())} rows ({parts})")
        if self.clipped_mass:
            out.append(f"clipped mass above max_len: {self.clipped_mass:.4%}")
        out.extend(f"warning: {w}" for w in self.warnings)
        return out


class _Grow:
    """A dense int64 histogram over 0..k that grows (doubling) as larger values arrive."""

    def __init__(self, cols: int | None = None) -> None:
        self.cols = cols
        self.data = np.zeros((256, cols) if cols else 256, dtype=np.int64)

    def ensure(self, top: int) -> None:
        if top < self.data.shape[0]:
            return
        size = max(top + 1, 2 * self.data.shape[0])
        grown = np.zeros((size, self.cols) if self.cols else size, dtype=np.int64)
        grown[: self.data.shape[0]] = self.data
        self.data = grown


class TraceAccumulator:
    """Streaming sufficient statistics of a trace (see module docstring)."""

    def __init__(self, source: str, fmt: str, max_len: int | None = None,
                 block_size: int = 512, cache_blocks: int = 1_000_000) -> None:
        self.report = FitReport(source=source, fmt=fmt)
        self.max_len = max_len
        self.inputs = _Grow()
        self.outputs = _Grow()
        self.joint = _Grow(_OUT_OCTAVES)
        self.joint_out_sum = _Grow()
        self.arrivals = ArrivalAccumulator()
        self.prefix = PrefixCacheEstimator(block_size, cache_blocks)
        self.saw_hashes = False
        self.saw_times = False

    def add(self, chunk: TraceChunk) -> None:
        rep = self.report
        rep.rows_read += len(chunk) + chunk.empty_rows
        if chunk.empty_rows:
            rep.dropped["empty row"] += chunk.empty_rows
        inp, out = chunk.input, chunk.output
        reasons = [("input length 0", inp == 0), ("output length 0", out == 0)]
        if self.max_len is not None:
            reasons.append((f"input length > max_len {self.max_len}", inp > self.max_len))
        drop = np.zeros(inp.shape, dtype=bool)
        for reason, mask in reasons:
            new = mask & ~drop
            if new.any():
                rep.dropped[reason] += int(new.sum())
            drop |= new
        keep = ~drop
        for values, label in ((inp, "input"), (out, "output")):
            too_long = keep & (values > MAX_SUPPORTED_LEN)
            if too_long.any():
                i: Any = int(np.argmax(too_long))  # also the numpy loop index below
                raise PlannerError(f"{rep.source}:{int(chunk.line[i])}: {label} length "
                                   f"{int(values[i])} exceeds the supported {MAX_SUPPORTED_LEN}")
        inp, out = inp[keep], out[keep]
        if inp.size == 0:
            return
        rep.rows_kept += int(inp.size)
        self.inputs.ensure(int(inp.max()))
        self.inputs.data += np.bincount(inp, minlength=self.inputs.data.size)
        self.outputs.ensure(int(out.max()))
        self.outputs.data += np.bincount(out, minlength=self.outputs.data.size)
        cell = inp // JOINT_GRAIN
        octave = np.frexp(out.astype(np.float64))[1] - 1  # floor(log2(out)), exact
        self.joint.ensure(int(cell.max()))
        self.joint_out_sum.ensure(int(cell.max()))
        rows = self.joint.data.shape[0]
        flat = np.bincount(cell * _OUT_OCTAVES + octave, minlength=rows * _OUT_OCTAVES)
        self.joint.data += flat.reshape(rows, _OUT_OCTAVES)
        sums = np.bincount(cell, weights=out, minlength=self.joint_out_sum.data.size)
        self.joint_out_sum.data += sums.astype(np.int64)
        if chunk.time_ns is not None:
            self.saw_times = True
            self.arrivals.add(chunk.time_ns[keep])
        if chunk.hash_ids is not None:
            kept_idx = np.flatnonzero(keep)
            for i, length in zip(kept_idx, inp, strict=True):
                hashes = chunk.hash_ids[i]
                self.saw_hashes = self.saw_hashes or bool(hashes)
                self.prefix.observe(int(length), hashes)

    # ------------------------------------------------------------------ finish
    def to_dict(self, name: str, description: str = "", provenance: str = "",
                bin_width: int | None = None) -> dict[str, Any]:
        """The workload document (docs/workloads.md) of everything accumulated."""
        rep = self.report
        if rep.rows_kept == 0:
            why = "; ".join(rep.lines()[1:]) or "the file has no data rows"
            raise PlannerError(f"{rep.source}: no usable requests ({why})")
        in_counts = self.inputs.data
        out_counts = self.outputs.data
        in_stats = counts_summary(in_counts)
        out_stats = counts_summary(out_counts)
        rate, cv, warnings = self.arrivals.result() if self.saw_times else (
            None, None, ["no timestamps: arrival rate and CV unknown"])
        rep.warnings = warnings
        total_seen = rep.rows_kept + sum(n for r, n in rep.dropped.items() if "max_len" in r)
        rep.clipped_mass = 1.0 - rep.rows_kept / total_seen
        max_len = self.max_len if self.max_len is not None else in_stats["max"]
        stats: dict[str, Any] = {
            "source": Path(rep.source).name, "format": rep.fmt,
            "rows_read": rep.rows_read, "requests": rep.rows_kept,
            "dropped": dict(sorted(rep.dropped.items())),
        }
        if self.arrivals.duration_s is not None:
            stats["duration_s"] = self.arrivals.duration_s
        stats["input"], stats["output"] = in_stats, out_stats
        if warnings:
            stats["warnings"] = list(warnings)
        doc: dict[str, Any] = {"format_version": 1, "name": name}
        if description:
            doc["description"] = description
        doc["provenance"] = provenance or f"fitted from {Path(rep.source).name} ({rep.fmt})"
        doc["max_len"] = int(max_len)
        doc["input"] = histogram_spec(in_counts, bin_width)
        if rep.clipped_mass > 0:
            doc["clipped_mass"] = rep.clipped_mass
        doc["decode"] = {"mean": out_stats["mean"], "max": out_stats["max"],
                         "dist": histogram_spec(out_counts, bin_width)}
        idc = self.arrivals.idc() if self.saw_times and cv is not None else None
        arrival = {k: v for k, v in (("rate_rps", rate), ("cv", cv), ("idc", idc))
                   if v is not None}
        if arrival:
            doc["arrival"] = arrival
        doc["prefix_hit_rate"] = self.prefix.hit_rate if self.saw_hashes else 0.0
        if self.saw_hashes:
            stats["prefix_cache"] = {"block_size": self.prefix.block_size,
                                     "capacity_blocks": self.prefix.capacity,
                                     "hit_tokens": self.prefix.hit_tokens,
                                     "input_tokens": self.prefix.input_tokens}
        doc["joint"] = self._joint(in_stats["max"], out_stats["max"])
        doc["stats"] = stats
        return doc

    def _joint(self, max_in: int, max_out: int) -> dict[str, Any]:
        cells = math.ceil((max_in + 1) / JOINT_GRAIN)
        per_bin = math.ceil(cells / JOINT_INPUT_BINS)  # fine cells per coarse input bin
        n_bins = math.ceil(cells / per_bin)
        octaves = max_out.bit_length()  # output bins [2^c, 2^(c+1)), c < octaves
        fine = np.zeros((n_bins * per_bin, _OUT_OCTAVES), dtype=np.int64)
        take = min(fine.shape[0], self.joint.data.shape[0])
        fine[:take] = self.joint.data[:take]
        sums = np.zeros(n_bins * per_bin, dtype=np.int64)
        sums[:take] = self.joint_out_sum.data[:take]
        counts = fine.reshape(n_bins, per_bin, _OUT_OCTAVES).sum(axis=1)[:, :octaves]
        out_sum = sums.reshape(n_bins, per_bin).sum(axis=1)
        n = counts.sum(axis=1)
        width = per_bin * JOINT_GRAIN
        return {
            "input_edges": [int(width * b) for b in range(n_bins + 1)],
            "output_edges": [1 << c for c in range(octaves + 1)],
            "counts": counts.tolist(),
            "output_mean": [float(s / k) if k else None for s, k in zip(out_sum, n, strict=True)],
        }


def histogram_spec(counts: np.ndarray, bin_width: int | None = None) -> dict[str, Any]:
    """Counts per length as a compact spec: exact ``histogram`` or uniform-``binned``.

    ``bin_width`` 1 forces the exact form, > 1 fixed-width bins; ``None`` picks the exact
    form up to :data:`MAX_EXACT_ENTRIES` distinct lengths and otherwise the narrowest
    power-of-two width giving at most that many bins.
    """
    counts = np.asarray(counts, dtype=np.int64)
    nz = np.flatnonzero(counts)
    if bin_width is not None and bin_width < 1:
        raise PlannerError(f"bin width must be >= 1, got {bin_width}")
    if bin_width == 1 or (bin_width is None and nz.size <= MAX_EXACT_ENTRIES):
        return {"type": "histogram", "values": nz.tolist(), "weights": counts[nz].tolist()}
    top = int(nz[-1])
    w = bin_width or 2
    while bin_width is None and math.ceil((top + 1) / w) > MAX_EXACT_ENTRIES:
        w *= 2
    n_bins = math.ceil((top + 1) / w)
    padded = np.zeros(n_bins * w, dtype=np.int64)
    padded[: top + 1] = counts[: top + 1]
    weights = padded.reshape(n_bins, w).sum(axis=1)
    return {"type": "binned", "edges": [int(w * b) for b in range(n_bins + 1)],
            "weights": weights.tolist()}


def fit_trace(path: str | Path, fmt: str, *, name: str | None = None,
              max_len: int | None = None, columns: dict[str, str] | None = None,
              time_unit: str | None = None, bin_width: int | None = None,
              description: str = "", provenance: str = "", block_size: int = 512,
              cache_blocks: int = 1_000_000, chunk_rows: int = DEFAULT_CHUNK_ROWS,
              ) -> tuple[Workload, FitReport]:
    """Stream ``path`` (a trace in format ``fmt``) into a :class:`Workload` and a report."""
    path = Path(path)
    if max_len is not None and not 1 <= max_len <= MAX_SUPPORTED_LEN:
        raise PlannerError(f"max_len must be in 1..{MAX_SUPPORTED_LEN}, got {max_len}")
    if bin_width is not None and bin_width < 1:
        raise PlannerError(f"bin width must be >= 1, got {bin_width}")
    if block_size < 1 or cache_blocks < 1:
        raise PlannerError("block size and cache capacity must be >= 1")
    acc = TraceAccumulator(str(path), fmt, max_len, block_size, cache_blocks)
    for chunk in iter_trace(path, fmt, columns=columns, time_unit=time_unit,
                            chunk_rows=chunk_rows):
        acc.add(chunk)
    doc = acc.to_dict(name or path.stem, description, provenance, bin_width)
    return workload_from_dict(doc, source=str(path)), acc.report
