"""Summary statistics of length distributions (count, mean, quantiles, max).

Quantiles use the inverted CDF -- the smallest length ``s`` with ``P(S <= s) >= q`` --
which for a histogram of raw counts equals ``numpy.percentile(x, 100 q,
method="inverted_cdf")`` on the raw lengths, so statistics of a fitted workload can
be checked exactly against its trace.
"""

from __future__ import annotations

from typing import Any, SupportsInt, cast

import numpy as np

QUANTILES = {"p50": 0.50, "p90": 0.90, "p99": 0.99}


def counts_summary(counts: np.ndarray) -> dict[str, Any]:
    """Exact statistics of integer counts per length (``counts[s]`` = #requests of length s)."""
    counts = np.asarray(counts, dtype=np.int64)
    total = int(counts.sum())
    if total == 0:
        return {"count": 0}
    lengths = np.arange(counts.size)
    cum = np.cumsum(counts)
    nz = np.flatnonzero(counts)
    out: dict[str, Any] = {"count": total,
                           "mean": float(np.dot(lengths, counts) / total)}
    for label, q in QUANTILES.items():
        # Integer comparison with q * N, like numpy's inverted_cdf.
        out[label] = int(np.searchsorted(cum, q * total, side="left"))
    out["min"] = int(nz[0])
    out["max"] = int(nz[-1])
    return out


def pmf_summary(pmf: np.ndarray) -> dict[str, Any]:
    """Mean, p50/p90/p99, min and max (of the support) of a pmf over lengths 0..n."""
    pmf = np.asarray(pmf, dtype=np.float64)
    cdf = np.cumsum(pmf)
    cdf[-1] = 1.0
    nz = np.flatnonzero(pmf)
    out: dict[str, Any] = {"mean": float(np.arange(pmf.size) @ pmf)}
    for label, q in QUANTILES.items():
        # min of a numpy index and an int: mypy cannot join the two
        idx = cast(SupportsInt, min(np.searchsorted(cdf, q - 1e-12, side="left"), pmf.size - 1))
        out[label] = int(idx)
    out["min"] = int(nz[0])
    out["max"] = int(nz[-1])
    return out


def workload_summary(workload: Any) -> dict[str, Any]:
    """What ``planner workload show`` prints, as a JSON-ready mapping."""
    w = workload
    stats = dict(w.trace_stats or {})
    out: dict[str, Any] = {
        "name": w.name,
        "count": stats.get("requests"),
        "max_len": w.max_len,
        "clipped_mass": w.clipped_mass,
        "input": pmf_summary(w.pmf),
    }
    if w.decode_pmf is not None:
        out["output"] = pmf_summary(w.decode_pmf)
        out["output"]["mean"] = w.decode_mean  # the authoritative mean the planner uses
    else:
        out["output"] = {"mean": w.decode_mean, "max": w.decode_max}
    out["decode_max"] = w.decode_max
    out["rate_rps"] = w.rate_rps
    out["cv"] = w.cv
    out["idc"] = w.idc
    out["prefix_hit_rate"] = w.prefix_hit_rate
    if "duration_s" in stats:
        out["duration_s"] = stats["duration_s"]
    if stats.get("dropped"):
        out["dropped"] = stats["dropped"]
    out["provenance"] = w.provenance
    return out
